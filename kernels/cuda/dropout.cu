// Dropout and DropoutGrad on CUDA, operation for operation as the CPU
// kernels (kernels/cpu/dropout.cc, grad_misc.cc), and the random ops as
// kernels/cpu/random.cc draws them: the mask and the draws from the shared
// counter-based stream (kernels/dropout_stream.h, 64-bit integer math and
// an exact conversion to double), the forward product in double rounded to
// float and then to the storage type, the gradient's product in float
// rounded once. With --fmad=false and IEEE double/float multiplication the
// mask and the values are the CPU's bits (the normal draws' log1p and cos
// are CUDA's double functions, within an ulp or two of glibc's, so a float
// result may differ from the CPU's in its last bit).
#include <type_traits>

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

// A double in storage type T, as the CPU's FromDouble: to float, then to T;
// integers (and bool as uint8) by conversion.
template <class T> __device__ __forceinline__ T NarrowDouble(double v) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(v);
  else return FromF<T>(static_cast<float>(v));
}

constexpr double kTwoPi = 6.283185307179586;  // 2.0 * M_PI, exactly as the CPU forms it

template <class T>
__global__ void UniformNormalKernel(T* y, int64_t n, uint64_t seed, bool normal, double a, double b) {
  AMP_GRID_STRIDE(i, n) {
    const uint64_t k = static_cast<uint64_t>(i);
    double v;
    if (normal) {
      const double r = sqrt(-2.0 * log1p(-DropoutUniform(seed, 2 * k)));
      v = a + b * r * cos(kTwoPi * DropoutUniform(seed, 2 * k + 1));
    } else {
      v = a + b * DropoutUniform(seed, k);
    }
    y[i] = NarrowDouble<T>(v);
  }
}

template <class T, class P>
__global__ void BernoulliKernel(const P* p, T* y, int64_t n, uint64_t seed) {
  AMP_GRID_STRIDE(i, n) {
    const double pi = static_cast<double>(ToF(p[i]));
    y[i] = NarrowDouble<T>(DropoutUniform(seed, static_cast<uint64_t>(i)) < pi ? 1.0 : 0.0);
  }
}

}  // namespace

cudaError_t LaunchRandom(RandomDraw draw, Num t, void* y, int64_t n, uint64_t seed, double a, double b, Elem p_t,
                         const void* p, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  return DispatchNum(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (draw != RandomDraw::kBernoulli) {
      UniformNormalKernel<T><<<Blocks(n), kThreads, 0, stream>>>(static_cast<T*>(y), n, seed,
                                                                 draw == RandomDraw::kNormal, a, b);
      return cudaGetLastError();
    }
    return DispatchElem(p_t, [&](auto ptag) {
      using P = typename decltype(ptag)::type;
      BernoulliKernel<T, P><<<Blocks(n), kThreads, 0, stream>>>(static_cast<const P*>(p), static_cast<T*>(y), n, seed);
      return cudaGetLastError();
    });
  });
}

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
