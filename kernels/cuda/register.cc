// The CUDA kernel set, one registration call per family (kernels/cuda/common.h).
#include "kernels/cuda/common.h"

namespace amptrain::kernels {

void RegisterCudaKernels(Registry& r) {
  cuda::RegisterElementwise(r);
  cuda::RegisterShape(r);
  cuda::RegisterMovement(r);
  cuda::RegisterPadResize(r);
  cuda::RegisterScatterND(r);
  cuda::RegisterElements(r);
  cuda::RegisterNorm(r);
  cuda::RegisterDropout(r);
  cuda::RegisterReduce(r);
  cuda::RegisterSteps(r);
  cuda::RegisterLoss(r);
  cuda::RegisterBlas(r);
  cuda::RegisterCudnn(r);
}

}  // namespace amptrain::kernels
