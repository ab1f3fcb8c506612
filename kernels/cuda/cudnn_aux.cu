// Epilogues of the cuDNN kernels (launch.h): Conv's bias with FusedConv's
// residual and Relu, and BatchNormalization's running statistics in the CPU
// kernels' convention (biased variance). Computed in float, rounded once.
#include "kernels/cuda/elem.cuh"

namespace amptrain::kernels::cuda {

namespace {

template <class T>
__global__ void BiasAct(T* y, const T* bias, const T* z, int64_t n, int64_t channels, int64_t plane, bool relu) {
  AMP_GRID_STRIDE(i, n) {
    float v = ToF(y[i]);
    if (bias) v += ToF(bias[i / plane % channels]);
    if (z) v += ToF(z[i]);
    if (relu && v < 0.0f) v = 0.0f;  // NaN stays NaN, as the Relu kernel
    y[i] = FromF<T>(v);
  }
}

__global__ void BnRunningUpdate(int64_t c, const float* in_mean, const float* in_var, const float* batch_mean,
                                const float* batch_var, float* out_mean, float* out_var, float momentum, float unbias) {
  AMP_GRID_STRIDE(i, c) {
    const float keep = 1.0f - momentum;
    const float m = in_mean[i] * momentum + batch_mean[i] * keep;
    const float v = in_var[i] * momentum + batch_var[i] * unbias * keep;
    out_mean[i] = m;
    out_var[i] = v;
  }
}

}  // namespace

cudaError_t LaunchBiasAct(Elem t, void* y, const void* bias, const void* z, int64_t outer, int64_t channels,
                          int64_t plane, bool relu, cudaStream_t stream) {
  const int64_t n = outer * channels * plane;
  if (n <= 0 || (!bias && !z && !relu)) return cudaSuccess;
  return DispatchElem(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    BiasAct<T><<<Blocks(n), kThreads, 0, stream>>>(static_cast<T*>(y), static_cast<const T*>(bias),
                                                   static_cast<const T*>(z), n, channels, plane, relu);
    return cudaGetLastError();
  });
}

cudaError_t LaunchBnRunningUpdate(int64_t c, const float* in_mean, const float* in_var, const float* batch_mean,
                                  const float* batch_var_unbiased, float* out_mean, float* out_var, float momentum,
                                  float unbias, cudaStream_t stream) {
  if (c <= 0) return cudaSuccess;
  BnRunningUpdate<<<Blocks(c), kThreads, 0, stream>>>(c, in_mean, in_var, batch_mean, batch_var_unbiased, out_mean,
                                                      out_var, momentum, unbias);
  return cudaGetLastError();
}

}  // namespace amptrain::kernels::cuda
