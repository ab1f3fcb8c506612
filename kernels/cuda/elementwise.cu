// Elementwise CUDA kernels: unary maps, broadcasting binary ops, compares,
// Pow, Where,
// the pointwise backward ops, Cast and the strided copy (Gemm's C, Expand,
// Transpose, Slice). The math is kernels/cpu/unary.cc's, binary.cc's and
// grad_misc.cc's in float (device libm: expf, tanhf and erff are within 2 ulp
// of the CPU's, so results agree to rounding, not bitwise; Sin and Cos go
// through double).
#include "kernels/cuda/elem.cuh"

namespace amptrain::kernels::cuda {

namespace {

// max(0, min(1, t)); NaN stays NaN.
__device__ __forceinline__ float Clamp01(float t) {
  t = t < 0.0f ? 0.0f : t;
  return t > 1.0f ? 1.0f : t;
}

// 1/(1 + e^-x) without overflow for either sign.
__device__ __forceinline__ float SigmoidF(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
  const float e = expf(x);
  return e / (1.0f + e);
}

__device__ __forceinline__ float Unary(UnaryOp op, float x, float alpha, float beta) {
  switch (op) {
    case UnaryOp::kRelu: return x < 0.0f ? 0.0f : x;  // NaN stays NaN
    case UnaryOp::kLeakyRelu: return x < 0.0f ? alpha * x : x;
    case UnaryOp::kSigmoid: return SigmoidF(x);
    case UnaryOp::kSilu: return x * SigmoidF(x);
    case UnaryOp::kTanh: return tanhf(x);
    case UnaryOp::kExp: return expf(x);
    case UnaryOp::kLog: return logf(x);
    case UnaryOp::kSqrt: return sqrtf(x);
    case UnaryOp::kNeg: return -x;
    case UnaryOp::kAbs: return x < 0.0f ? -x : x;
    case UnaryOp::kReciprocal: return 1.0f / x;
    case UnaryOp::kErf: return erff(x);
    case UnaryOp::kGelu: return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
    case UnaryOp::kGeluTanh: {
      const float k = 0.7978845608028654f;  // sqrt(2 / pi)
      return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
    }
    case UnaryOp::kHardSigmoid: return Clamp01(alpha * x + beta);
    case UnaryOp::kHardSwish: return x * Clamp01(x * static_cast<float>(1.0 / 6.0) + 0.5f);
    case UnaryOp::kFloor: return floorf(x);
    case UnaryOp::kCeil: return ceilf(x);
    case UnaryOp::kSign: return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x;  // keeps -0 and NaN
    case UnaryOp::kClip: {  // min > max gives max; NaN stays NaN
      const float v = x < alpha ? alpha : x;
      return v > beta ? beta : v;
    }
    case UnaryOp::kSin:
    case UnaryOp::kCos: break;  // TrigKernel
  }
  return x;
}

template <class T>
__global__ void UnaryKernel(UnaryOp op, const T* x, T* y, int64_t n, float alpha, float beta) {
  AMP_GRID_STRIDE(i, n) y[i] = FromF<T>(Unary(op, ToF(x[i]), alpha, beta));
}

// Sin and Cos in double: the correctly rounded float but for a double
// rounding, as close to glibc's sinf/cosf (the CPU's) as the device gets
// (sinf is 2 ulp). A kernel of their own: double sin/cos in Unary's switch
// took every unary op from 22 registers to 32 and a 40-byte stack frame.
template <class T>
__global__ void TrigKernel(bool cosine, const T* x, T* y, int64_t n) {
  AMP_GRID_STRIDE(i, n) {
    const double v = static_cast<double>(ToF(x[i]));
    y[i] = FromF<T>(static_cast<float>(cosine ? cos(v) : sin(v)));
  }
}

__device__ __forceinline__ float Binary(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd: return a + b;
    case BinaryOp::kSub: return a - b;
    case BinaryOp::kMul: return a * b;
    case BinaryOp::kDiv: return a / b;
    case BinaryOp::kMax: return a != a || a > b ? a : b;  // NaN propagates
    case BinaryOp::kMin: return a != a || a < b ? a : b;
    case BinaryOp::kReluGrad: return b > 0.0f ? a : 0.0f;
    case BinaryOp::kTanhGrad: return a * ((1.0f - b) * (1.0f + b));
    case BinaryOp::kSigmoidGrad: return a * (b * (1.0f - b));
    case BinaryOp::kGeluGrad: {
      const float cdf = 0.5f * (1.0f + erff(b * 0.7071067811865476f));
      const float pdf = expf(-0.5f * b * b) * 0.3989422804014327f;  // 1 / sqrt(2 pi)
      return a * (cdf + b * pdf);
    }
    case BinaryOp::kGeluTanhGrad: {
      const float k = 0.7978845608028654f, c = 0.044715f;
      const float t = tanhf(k * (b + c * b * b * b));
      const float d = 0.5f * (1.0f + t) + 0.5f * b * (1.0f - t * t) * k * (1.0f + 3.0f * c * b * b);
      return a * d;
    }
    case BinaryOp::kErfGrad: return a * (1.1283791670955126f * expf(-(b * b)));
    case BinaryOp::kHardSwishGrad: return b <= -3.0f ? 0.0f : b < 3.0f ? a * (b / 3.0f + 0.5f) : a;
    case BinaryOp::kSiluGrad: {
      const float s = SigmoidF(b);
      return a * (s + b * (s * (1.0f - s)));
    }
  }
  return a;
}

template <class T>
__global__ void BinarySameShape(BinaryOp op, const T* a, const T* b, T* y, int64_t n) {
  AMP_GRID_STRIDE(i, n) y[i] = FromF<T>(Binary(op, ToF(a[i]), ToF(b[i])));
}

template <class T>
__global__ void BinaryBroadcast(BinaryOp op, const T* a, const T* b, T* y, int64_t n, Broadcast bc) {
  AMP_GRID_STRIDE(i, n) {
    int64_t ia, ib;
    BroadcastOffsets(bc, i, &ia, &ib);
    y[i] = FromF<T>(Binary(op, ToF(a[ia]), ToF(b[ib])));
  }
}

__device__ __forceinline__ float Pow(float a, float b) { return b == 2.0f ? a * a : powf(a, b); }

template <class T, class E>
__global__ void PowKernel(const T* a, const E* b, T* y, int64_t n, Broadcast bc) {
  AMP_GRID_STRIDE(i, n) {
    int64_t ia, ib;
    BroadcastOffsets(bc, i, &ia, &ib);
    y[i] = FromF<T>(Pow(ToF(a[ia]), ToF(b[ib])));
  }
}

template <class U>
__global__ void WhereKernel(const bool* c, const U* a, const U* b, U* y, int64_t n, Broadcast bc) {
  AMP_GRID_STRIDE(i, n) {
    int64_t ia, ib, ic;
    BroadcastOffsets(bc, i, &ia, &ib, &ic);
    y[i] = c[ic] ? a[ia] : b[ib];
  }
}

template <class T>
__global__ void BroadcastCopyKernel(const T* x, T* y, int64_t n, Broadcast bc) {
  AMP_GRID_STRIDE(i, n) {
    int64_t ix, unused;
    BroadcastOffsets(bc, i, &ix, &unused);
    y[i] = x[ix];
  }
}

template <class S, class D>
__global__ void CastKernel(const S* x, D* y, int64_t n) {
  AMP_GRID_STRIDE(i, n) y[i] = FromF<D>(ToF(x[i]));
}

}  // namespace

cudaError_t LaunchUnary(UnaryOp op, Elem t, const void* x, void* y, int64_t n, float alpha, float beta,
                        cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  return DispatchElem(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (op == UnaryOp::kSin || op == UnaryOp::kCos)
      TrigKernel<T><<<Blocks(n), kThreads, 0, stream>>>(op == UnaryOp::kCos, static_cast<const T*>(x),
                                                        static_cast<T*>(y), n);
    else
      UnaryKernel<T><<<Blocks(n), kThreads, 0, stream>>>(op, static_cast<const T*>(x), static_cast<T*>(y), n, alpha,
                                                         beta);
    return cudaGetLastError();
  });
}

cudaError_t LaunchBinary(BinaryOp op, Elem t, const void* a, const void* b, void* y, int64_t n, const Broadcast* bc,
                         cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  return DispatchElem(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pa = static_cast<const T*>(a);
    const T* pb = static_cast<const T*>(b);
    if (bc) BinaryBroadcast<T><<<Blocks(n), kThreads, 0, stream>>>(op, pa, pb, static_cast<T*>(y), n, *bc);
    else BinarySameShape<T><<<Blocks(n), kThreads, 0, stream>>>(op, pa, pb, static_cast<T*>(y), n);
    return cudaGetLastError();
  });
}

cudaError_t LaunchPow(Elem t, Elem te, const void* a, const void* b, void* y, int64_t n, const Broadcast* bc,
                      cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const Broadcast walk = bc ? *bc : Flat(n);
  return DispatchElem(t, [&](auto base) {
    return DispatchElem(te, [&](auto exponent) {
      using T = typename decltype(base)::type;
      using E = typename decltype(exponent)::type;
      PowKernel<T, E><<<Blocks(n), kThreads, 0, stream>>>(static_cast<const T*>(a), static_cast<const E*>(b),
                                                          static_cast<T*>(y), n, walk);
      return cudaGetLastError();
    });
  });
}

cudaError_t LaunchWhere(size_t elem_bytes, const bool* cond, const void* a, const void* b, void* y, int64_t n,
                        const Broadcast* bc, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const Broadcast walk = bc ? *bc : Flat(n);
  return DispatchBytes(elem_bytes, [&](auto tag) {
    using U = typename decltype(tag)::type;
    WhereKernel<U><<<Blocks(n), kThreads, 0, stream>>>(cond, static_cast<const U*>(a), static_cast<const U*>(b),
                                                       static_cast<U*>(y), n, walk);
    return cudaGetLastError();
  });
}

cudaError_t LaunchBroadcastCopy(size_t elem_bytes, const void* x, void* y, int64_t n, const Broadcast& bc,
                                cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  return DispatchBytes(elem_bytes, [&](auto tag) {
    using T = typename decltype(tag)::type;
    BroadcastCopyKernel<T><<<Blocks(n), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), n, bc);
    return cudaGetLastError();
  });
}

cudaError_t LaunchCast(Elem from, Elem to, const void* x, void* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  return DispatchElem(from, [&](auto src) {
    return DispatchElem(to, [&](auto dst) {
      using S = typename decltype(src)::type;
      using D = typename decltype(dst)::type;
      CastKernel<S, D><<<Blocks(n), kThreads, 0, stream>>>(static_cast<const S*>(x), static_cast<D*>(y), n);
      return cudaGetLastError();
    });
  });
}

}  // namespace amptrain::kernels::cuda
