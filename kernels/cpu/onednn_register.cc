// The oneDNN kernel set (impl "onednn", priority 10): Conv 2-D and FusedConv, MatMul, Gemm,
// MaxPool/AveragePool 2-D in fp32 and bf16, BatchNormalization inference in
// fp32, Softmax. Configurations a kernel does
// not take fall back to the reference.
#include "kernels/cpu/onednn_common.h"
#include "kernels/cpu/register.h"

namespace amptrain::kernels::cpu {

void RegisterOneDnn(Registry& r) {
  onednn::RegisterOneDnnConv(r);
  onednn::RegisterOneDnnMatMul(r);
  onednn::RegisterOneDnnPool(r);
  onednn::RegisterOneDnnBatchNorm(r);
  onednn::RegisterOneDnnSoftmax(r);
}

}  // namespace amptrain::kernels::cpu
