// cuBLAS, loaded at its first use instead of linked: libcublas and
// libcublasLt register their ~140 MB of GPU code (fatbins) in static
// constructors, which costs every process that links them about 150 MB of
// resident memory at start, CPU-only runs included (measured here: `amptrain
// --version` 229 MB with cuBLAS linked, 12 MB without). The CUDA kernels call
// cuBLAS through this table; the first call dlopens libcublas.so.<major> (by
// the loader's search path, then /usr/local/cuda/lib64).
#pragma once

#include <cublas_v2.h>

#include <string>

#include "ir/status.h"

namespace amptrain::kernels::cuda {

struct CublasApi {
  cublasStatus_t (*Create)(cublasHandle_t*) = nullptr;
  cublasStatus_t (*SetStream)(cublasHandle_t, cudaStream_t) = nullptr;
  decltype(&cublasSetMathMode) SetMathMode = nullptr;
  // The computeType overloads (cublasComputeType_t), as the library exports them.
  cublasStatus_t (*GemmEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                           const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                           cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  cublasStatus_t (*GemmStridedBatchedEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                         const void*, const void*, cudaDataType, int, long long int, const void*,
                                         cudaDataType, int, long long int, const void*, void*, cudaDataType, int,
                                         long long int, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  decltype(&cublasGetStatusName) GetStatusName = nullptr;
  decltype(&cublasGetStatusString) GetStatusString = nullptr;
};

// The loaded table, or why cuBLAS could not be loaded (naming the library
// and dlerror's reason). Loaded once per process; thread-safe.
StatusOr<const CublasApi*> Cublas();

// "CUBLAS_STATUS_...: text" for an error status of a loaded cuBLAS.
std::string CublasStatusText(cublasStatus_t status);

}  // namespace amptrain::kernels::cuda
