#include "kernels/cuda/library.h"

#include <map>

#include "kernels/cuda/device.h"

namespace amptrain::kernels::cuda {

StatusOr<cublasHandle_t> CublasHandle(cudaStream_t stream) {
  thread_local std::map<int, cublasHandle_t> handles;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  cublasHandle_t& h = handles[device];
  if (!h) {
    CUBLAS_CHECK(cublasCreate(&h));
    CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
  }
  CUBLAS_CHECK(cublasSetStream(h, stream));
  return h;
}

StatusOr<cudnnHandle_t> CudnnHandle(cudaStream_t stream) {
  thread_local std::map<int, cudnnHandle_t> handles;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  cudnnHandle_t& h = handles[device];
  if (!h) CUDNN_CHECK(cudnnCreate(&h));
  CUDNN_CHECK(cudnnSetStream(h, stream));
  return h;
}

}  // namespace amptrain::kernels::cuda
