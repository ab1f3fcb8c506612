// cuBLAS and cuDNN handles: one per host thread and GPU, created on first
// use, bound to the run's stream at every call, kept until the process exits.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "ir/status.h"

namespace amptrain::kernels::cuda {

// The calling thread's cuBLAS handle for the current GPU, on `stream`, with
// the default math mode (no TF32: fp32 GEMMs stay fp32).
StatusOr<cublasHandle_t> CublasHandle(cudaStream_t stream);
// The calling thread's cuDNN handle for the current GPU, on `stream`.
StatusOr<cudnnHandle_t> CudnnHandle(cudaStream_t stream);

}  // namespace amptrain::kernels::cuda
