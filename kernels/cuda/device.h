// CUDA device discovery, the CUDA Device (kernels/device.h) and error
// translation. CUDA_CHECK / CUBLAS_CHECK / CUDNN_CHECK turn a failing call
// into a Status naming the call, the library's error string and file:line;
// use them in any function that returns Status or StatusOr<T>. The cuBLAS and
// cuDNN macros need <cublas_v2.h> / <cudnn.h> where they are used.
#pragma once

#include <string>

#include "ir/status.h"
#include "kernels/cuda/cublas_api.h"

namespace amptrain::kernels::cuda {

struct DeviceInfo {
  int count = 0;
  std::string name;          // device 0
  int major = 0, minor = 0;  // compute capability of device 0
  size_t memory_bytes = 0;
};

// Number and kind of visible devices; count 0 (and an OK status) when the
// driver or device is absent, as on CI.
StatusOr<DeviceInfo> QueryDevices();

// Why this process cannot use a GPU, as one line starting "no CUDA device: ",
// or an empty string when at least one device is visible.
std::string NoDeviceReason();

}  // namespace amptrain::kernels::cuda

#define AMP_CUDA_FAIL_(expr, what) \
  ::amptrain::Internal(#expr, " failed: ", what, " at ", __FILE__, ":", __LINE__)

#define CUDA_CHECK(expr)                                                                    \
  do {                                                                                      \
    cudaError_t amp_err_ = (expr);                                                          \
    if (amp_err_ != cudaSuccess) {                                                          \
      cudaGetLastError(); /* clear a non-sticky error so that later calls see their own */ \
      return AMP_CUDA_FAIL_(expr, cudaGetErrorString(amp_err_));                            \
    }                                                                                       \
  } while (0)

#define CUBLAS_CHECK(expr)                                                                           \
  do {                                                                                               \
    cublasStatus_t amp_err_ = (expr);                                                                \
    if (amp_err_ != CUBLAS_STATUS_SUCCESS)                                                           \
      return AMP_CUDA_FAIL_(expr, ::amptrain::kernels::cuda::CublasStatusText(amp_err_));             \
  } while (0)

#define CUDNN_CHECK(expr)                                                  \
  do {                                                                     \
    cudnnStatus_t amp_err_ = (expr);                                       \
    if (amp_err_ != CUDNN_STATUS_SUCCESS)                                  \
      return AMP_CUDA_FAIL_(expr, cudnnGetErrorString(amp_err_));          \
  } while (0)
