// Pad, PadGrad, Resize and ResizeGrad on CUDA, as kernels/cpu/pad_resize.cc
// defines them. Pad moves bytes; PadGrad gathers each input position's
// sources in the CPU's order, in double. Resize runs the CPU's separable passes in double
// with the taps the host computed at plan time (pad_resize_kernels.cc), each
// output summing its taps in the CPU's order; ResizeGrad runs the adjoint
// passes as gathers: each source position sums its (output position, tap)
// entries in the CPU's accumulation order, so the double results are the
// CPU's bits (no atomics, --fmad=false).
#include <type_traits>

#include "kernels/cuda/elem.cuh"

namespace amptrain::kernels::cuda {

namespace {

// kernels/cpu/pad_resize.cc's PadSource: the source index along one dim, or
// -1 for the pad value.
__device__ __forceinline__ int64_t PadSource(PadKind mode, int64_t o, int64_t begin, int64_t n) {
  const int64_t i = o - begin;
  if (i >= 0 && i < n) return i;
  auto mod = [](int64_t a, int64_t m) { return ((a % m) + m) % m; };
  switch (mode) {
    case PadKind::kConstant: return -1;
    case PadKind::kEdge: return i < 0 ? 0 : n - 1;
    case PadKind::kWrap: return mod(i, n);
    case PadKind::kReflect: {
      if (n == 1) return 0;
      const int64_t m = mod(i, 2 * (n - 1));
      return m < n ? m : 2 * (n - 1) - m;
    }
  }
  return -1;
}

template <class U>
__global__ void PadKernel(const U* x, const U* value, U* y, int64_t n, PadShape s) {
  const U v = value ? value[0] : U(0);
  AMP_GRID_STRIDE(i, n) {
    int64_t rem = i, off = 0;
    bool pad = false;
    for (int d = s.rank - 1; d >= 0; --d) {
      const int64_t m = PadSource(s.mode, rem % s.out_dims[d], s.begin[d], s.in_dims[d]);
      rem /= s.out_dims[d];
      if (m < 0) pad = true;
      off += m * s.in_strides[d];
    }
    y[i] = pad ? v : x[off];
  }
}

// The first position o > after along one dim whose PadSource is i, or -1.
// Pads are short: the pad regions are scanned, the interior is one step.
__device__ __forceinline__ int64_t NextSource(PadKind mode, int64_t i, int64_t after, int64_t begin, int64_t n,
                                              int64_t out_n) {
  const int64_t lead = begin < out_n ? begin : out_n;
  for (int64_t o = after + 1; o < lead; ++o)
    if (PadSource(mode, o, begin, n) == i) return o;
  const int64_t direct = i + begin;
  if (direct > after && direct >= 0 && direct < out_n) return direct;
  const int64_t tail = begin + n > after + 1 ? begin + n : after + 1;
  for (int64_t o = tail > 0 ? tail : 0; o < out_n; ++o)
    if (PadSource(mode, o, begin, n) == i) return o;
  return -1;
}

template <class T>
__global__ void PadGradKernel(const T* dy, T* dx, int64_t n, PadShape s) {
  AMP_GRID_STRIDE(e, n) {
    int64_t idx[kMaxRank], at[kMaxRank], stride[kMaxRank];
    int64_t rem = e, st = 1;
    bool empty = false;
    for (int d = s.rank - 1; d >= 0; --d) {
      idx[d] = rem % s.in_dims[d];
      rem /= s.in_dims[d];
      stride[d] = st;
      st *= s.out_dims[d];
      at[d] = NextSource(s.mode, idx[d], -1, s.begin[d], s.in_dims[d], s.out_dims[d]);
      empty = empty || at[d] < 0;
    }
    double acc = 0.0;
    // Every combination of source positions, last dim fastest: dy in increasing order.
    while (!empty) {
      int64_t off = 0;
      for (int d = 0; d < s.rank; ++d) off += at[d] * stride[d];
      acc += static_cast<double>(ToF(dy[off]));
      int d = s.rank - 1;
      for (; d >= 0; --d) {
        const int64_t next = NextSource(s.mode, idx[d], at[d], s.begin[d], s.in_dims[d], s.out_dims[d]);
        if (next >= 0) { at[d] = next; break; }
        at[d] = NextSource(s.mode, idx[d], -1, s.begin[d], s.in_dims[d], s.out_dims[d]);
      }
      if (d < 0) break;
    }
    dx[e] = FromF<T>(static_cast<float>(acc));
  }
}

__global__ void ResampleKernel(ResamplePass p, const double* src, double* dst) {
  const int64_t n = p.outer * p.out * p.inner;
  AMP_GRID_STRIDE(e, n) {
    const int64_t i = e % p.inner, k = e / p.inner;
    const int64_t o = k / p.out, x = k % p.out;
    const int32_t c = p.count[x];
    double acc = c < 0 ? p.extrapolation : 0.0;
    for (int32_t j = 0; j < c; ++j)
      acc += p.weight[x * p.width + j] * src[(o * p.in + p.index[x * p.width + j]) * p.inner + i];
    dst[e] = acc;
  }
}

__global__ void ResampleAdjointKernel(ResampleAdjoint p, const double* dst, double* src) {
  const int64_t n = p.outer * p.in * p.inner;
  AMP_GRID_STRIDE(e, n) {
    const int64_t i = e % p.inner, k = e / p.inner;
    const int64_t o = k / p.in, s = k % p.in;
    double acc = 0.0;
    for (int64_t q = p.offsets[s]; q < p.offsets[s + 1]; ++q)
      acc += p.weight[q] * dst[(o * p.out + p.position[q]) * p.inner + i];
    src[e] = acc;
  }
}

template <class T>
__global__ void ToDoubleKernel(const T* x, double* y, int64_t n) {
  AMP_GRID_STRIDE(i, n) y[i] = static_cast<double>(ToF(x[i]));
}

template <class T>
__global__ void FromDoubleKernel(const double* x, T* y, int64_t n) {
  AMP_GRID_STRIDE(i, n) y[i] = FromF<T>(static_cast<float>(x[i]));
}

}  // namespace

cudaError_t LaunchPad(size_t elem_bytes, const void* x, const void* value, void* y, int64_t n, const PadShape& s,
                      cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  auto go = [&](auto tag) {
    using U = typename decltype(tag)::type;
    PadKernel<U><<<Blocks(n), kThreads, 0, stream>>>(static_cast<const U*>(x), static_cast<const U*>(value),
                                                     static_cast<U*>(y), n, s);
    return cudaGetLastError();
  };
  return DispatchBytes(elem_bytes, go);
}

cudaError_t LaunchPadGrad(Elem t, const void* dy, void* dx, int64_t n, const PadShape& s, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  return DispatchElem(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    PadGradKernel<T><<<Blocks(n), kThreads, 0, stream>>>(static_cast<const T*>(dy), static_cast<T*>(dx), n, s);
    return cudaGetLastError();
  });
}

cudaError_t LaunchResample(const ResamplePass& p, const double* src, double* dst, cudaStream_t stream) {
  const int64_t n = p.outer * p.out * p.inner;
  if (n <= 0) return cudaSuccess;
  ResampleKernel<<<Blocks(n), kThreads, 0, stream>>>(p, src, dst);
  return cudaGetLastError();
}

cudaError_t LaunchResampleAdjoint(const ResampleAdjoint& p, const double* dst, double* src, cudaStream_t stream) {
  const int64_t n = p.outer * p.in * p.inner;
  if (n <= 0) return cudaSuccess;
  ResampleAdjointKernel<<<Blocks(n), kThreads, 0, stream>>>(p, dst, src);
  return cudaGetLastError();
}

cudaError_t LaunchToDouble(Elem t, const void* x, double* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  return DispatchElem(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    ToDoubleKernel<T><<<Blocks(n), kThreads, 0, stream>>>(static_cast<const T*>(x), y, n);
    return cudaGetLastError();
  });
}

cudaError_t LaunchFromDouble(Elem t, const double* x, void* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  return DispatchElem(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    FromDoubleKernel<T><<<Blocks(n), kThreads, 0, stream>>>(x, static_cast<T*>(y), n);
    return cudaGetLastError();
  });
}

}  // namespace amptrain::kernels::cuda
