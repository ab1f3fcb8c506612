// The oneDNN kernels of the backward ops (impl "onednn", priority 10):
// ConvGrad 2-D and MaxPoolGrad 2-D in fp32 and bf16, BatchNormalizationGrad
// in fp32. Configurations a kernel does not take fall back to the reference.
#include "kernels/cpu/onednn_grad.h"
#include "kernels/cpu/register.h"

namespace amptrain::kernels::cpu {

void RegisterOneDnnTraining(Registry& r) {
  onednn::RegisterOneDnnConvGrad(r);
  onednn::RegisterOneDnnConvTranspose(r);
  onednn::RegisterOneDnnPoolGrad(r);
  onednn::RegisterOneDnnBatchNormGrad(r);
}

}  // namespace amptrain::kernels::cpu
