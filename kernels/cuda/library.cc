#include "kernels/cuda/library.h"

#include <map>

#include "kernels/cuda/cublas_api.h"
#include "kernels/cuda/device.h"

namespace amptrain::kernels::cuda {

StatusOr<cublasHandle_t> CublasHandle(cudaStream_t stream) {
  thread_local std::map<int, cublasHandle_t> handles;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  AMP_ASSIGN_OR_RETURN(const CublasApi* blas, Cublas());
  cublasHandle_t& h = handles[device];
  if (!h) {
    CUBLAS_CHECK(blas->Create(&h));
    CUBLAS_CHECK(blas->SetMathMode(h, CUBLAS_DEFAULT_MATH));
  }
  CUBLAS_CHECK(blas->SetStream(h, stream));
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
