#include "kernels/cuda/device.h"

#include <cuda_runtime.h>

#include "kernels/kernel.h"

namespace amptrain::kernels {

namespace cuda {

StatusOr<DeviceInfo> QueryDevices() {
  DeviceInfo info;
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver) {
    cudaGetLastError();  // clear the sticky error
    return info;
  }
  if (err != cudaSuccess) return Internal("cudaGetDeviceCount failed: ", cudaGetErrorString(err));
  info.count = count;
  if (count > 0) {
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    info.name = prop.name;
    info.major = prop.major;
    info.minor = prop.minor;
    info.memory_bytes = prop.totalGlobalMem;
  }
  return info;
}

}  // namespace cuda

// The CUDA kernel set (cuDNN convolution, cuBLAS GEMM, elementwise .cu files)
// is the subject of a later issue; until then the registry has no CUDA entries
// and asking for DeviceKind::kCuda fails with "no cuda kernel for op ...".
void RegisterCudaKernels(Registry&) {}

}  // namespace amptrain::kernels
