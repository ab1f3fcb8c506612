// Dropout and DropoutGrad on CUDA, operation for operation as the CPU
// kernels (kernels/cpu/dropout.cc, grad_misc.cc): the mask from the shared
// counter-based stream (kernels/dropout_stream.h, 64-bit integer math and
// an exact conversion to double), the forward product in double rounded to
// float and then to the storage type, the gradient's product in float
// rounded once. With --fmad=false and IEEE double/float multiplication the
// mask and the values are the CPU's bits.
#include "kernels/cuda/elem.cuh"
#include "kernels/dropout_stream.h"

namespace amptrain::kernels::cuda {

namespace {

template <class T>
__global__ void DropoutKernel(const T* x, T* y, bool* mask, int64_t n, uint64_t seed, double ratio, double scale) {
  AMP_GRID_STRIDE(i, n) {
    const bool keep = DropoutUniform(seed, static_cast<uint64_t>(i)) >= ratio;
    y[i] = FromF<T>(static_cast<float>(keep ? static_cast<double>(ToF(x[i])) * scale : 0.0));
    if (mask) mask[i] = keep;
  }
}

template <class T>
__global__ void DropoutGradKernel(const T* dy, const bool* mask, T* dx, int64_t n, float scale) {
  AMP_GRID_STRIDE(i, n) dx[i] = FromF<T>(mask[i] ? ToF(dy[i]) * scale : 0.0f);
}

}  // namespace

cudaError_t LaunchDropout(Elem t, const void* x, void* y, bool* mask, int64_t n, uint64_t seed, double ratio,
                          double scale, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  return DispatchElem(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    DropoutKernel<T><<<Blocks(n), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), mask, n, seed,
                                                        ratio, scale);
    return cudaGetLastError();
  });
}

cudaError_t LaunchDropoutGrad(Elem t, const void* dy, const bool* mask, void* dx, int64_t n, float scale,
                              cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  return DispatchElem(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    DropoutGradKernel<T><<<Blocks(n), kThreads, 0, stream>>>(static_cast<const T*>(dy), mask, static_cast<T*>(dx), n,
                                                            scale);
    return cudaGetLastError();
  });
}

}  // namespace amptrain::kernels::cuda
