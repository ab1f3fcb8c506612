// CUDA device discovery and error translation. CUDA_CHECK / CUBLAS_CHECK /
// CUDNN_CHECK turn a failing call into a Status naming the call, file:line.
#pragma once

#include <string>

#include "ir/status.h"

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

}  // namespace amptrain::kernels::cuda

#define CUDA_CHECK(expr)                                                                          \
  do {                                                                                            \
    cudaError_t amp_err_ = (expr);                                                                \
    if (amp_err_ != cudaSuccess)                                                                  \
      return ::amptrain::Internal(#expr, " failed: ", cudaGetErrorString(amp_err_), " at ", __FILE__, ":", __LINE__); \
  } while (0)
