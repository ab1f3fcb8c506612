// ReduceSum/ReduceMean (and ReduceSumTo, which is a ReduceSum), ReduceMax and
// ReduceL2 over any set of axes: one block per output element when each
// reduces many inputs, else one thread per output. Float accumulation; a
// block's threads combine their partials in a fixed tree, so the bits
// repeat from run to run. Max propagates NaN (any NaN of the inputs).
// ArgMax/ArgMin: one thread per lane, any Num.
#include "kernels/cuda/elem.cuh"

namespace amptrain::kernels::cuda {

namespace {

__device__ __forceinline__ int64_t Offset(int rank, const int64_t* dims, const int64_t* strides, int64_t i) {
  int64_t off = 0;
  for (int d = rank - 1; d >= 0; --d) {
    off += i % dims[d] * strides[d];
    i /= dims[d];
  }
  return off;
}

template <ReduceOp kOp>
struct Reducer {
  static __device__ __forceinline__ float Init() { return kOp == ReduceOp::kMax ? -INFINITY : 0.0f; }
  static __device__ __forceinline__ float Add(float acc, float v) {
    if (kOp == ReduceOp::kSum) return acc + v;
    if (kOp == ReduceOp::kL2) return acc + v * v;
    return acc != acc || v != v ? (acc != acc ? acc : v) : (v > acc ? v : acc);
  }
  // Two partials (Add's value is one input, this one a partial).
  static __device__ __forceinline__ float Combine(float a, float b) {
    if (kOp == ReduceOp::kMax) return Add(a, b);
    return a + b;
  }
  static __device__ __forceinline__ float Finish(float acc, float scale) {
    if (kOp == ReduceOp::kSum) return acc * scale;
    if (kOp == ReduceOp::kL2) return sqrtf(acc);
    return acc;
  }
};

template <class T, ReduceOp kOp>
__global__ void ReducePerThread(const T* x, T* y, Reduction r, float scale) {
  using R = Reducer<kOp>;
  AMP_GRID_STRIDE(o, r.outputs) {
    const int64_t base = Offset(r.kept_rank, r.kept_dims, r.kept_strides, o);
    float acc = R::Init();
    for (int64_t k = 0; k < r.count; ++k) acc = R::Add(acc, ToF(x[base + Offset(r.red_rank, r.red_dims, r.red_strides, k)]));
    y[o] = FromF<T>(R::Finish(acc, scale));
  }
}

template <class T, ReduceOp kOp>
__global__ void ReducePerBlock(const T* x, T* y, Reduction r, float scale) {
  using R = Reducer<kOp>;
  __shared__ float part[kThreads];
  for (int64_t o = blockIdx.x; o < r.outputs; o += gridDim.x) {
    const int64_t base = Offset(r.kept_rank, r.kept_dims, r.kept_strides, o);
    float acc = R::Init();
    for (int64_t k = threadIdx.x; k < r.count; k += blockDim.x)
      acc = R::Add(acc, ToF(x[base + Offset(r.red_rank, r.red_dims, r.red_strides, k)]));
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) part[threadIdx.x] = R::Combine(part[threadIdx.x], part[threadIdx.x + s]);
      __syncthreads();
    }
    if (threadIdx.x == 0) y[o] = FromF<T>(R::Finish(part[0], scale));
    __syncthreads();  // part[0] is read before the next output overwrites it
  }
}

template <class T, ReduceOp kOp>
cudaError_t Launch(const T* x, T* y, const Reduction& r, float scale, cudaStream_t stream) {
  if (r.count >= 256 && r.outputs < (int64_t{1} << 16)) {
    const int64_t blocks = r.outputs < 65535 ? r.outputs : 65535;
    ReducePerBlock<T, kOp><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, y, r, scale);
  } else {
    ReducePerThread<T, kOp><<<Blocks(r.outputs), kThreads, 0, stream>>>(x, y, r, scale);
  }
  return cudaGetLastError();
}

// ArgMax/ArgMin: one thread per lane, kernels/cpu/select.cc's scan: a
// NaN (x != x, never for integers) ends it and wins; ties go to the first
// position, or to the last with select_last.
template <class T>
__global__ void ArgKernel(const T* x, int64_t* y, int64_t outer, int64_t n, int64_t inner, bool max, bool last) {
  AMP_GRID_STRIDE(lane, outer * inner) {
    const int64_t o = lane / inner, i = lane % inner;
    const T* p = x + o * n * inner + i;
    int64_t best = 0;
    if (n > 0) {
      auto bv = Widen(p[0]);
      for (int64_t j = 1; j < n && !(bv != bv); ++j) {
        const auto v = Widen(p[j * inner]);
        const bool better = v != v || (max ? (last ? v >= bv : v > bv) : (last ? v <= bv : v < bv));
        if (better) {
          best = j;
          bv = v;
        }
      }
    }
    y[lane] = best;
  }
}

}  // namespace

cudaError_t LaunchArgExtremum(Num t, bool max, bool select_last, const void* x, int64_t* y, int64_t outer,
                              int64_t n, int64_t inner, cudaStream_t stream) {
  const int64_t lanes = outer * inner;
  if (lanes <= 0) return cudaSuccess;
  return DispatchNum(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    ArgKernel<T><<<Blocks(lanes), kThreads, 0, stream>>>(static_cast<const T*>(x), y, outer, n, inner, max,
                                                         select_last);
    return cudaGetLastError();
  });
}

cudaError_t LaunchReduce(ReduceOp op, Elem t, const void* x, void* y, const Reduction& r, float scale,
                         cudaStream_t stream) {
  if (r.outputs <= 0) return cudaSuccess;
  return DispatchElem(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = static_cast<const T*>(x);
    T* py = static_cast<T*>(y);
    switch (op) {
      case ReduceOp::kSum: return Launch<T, ReduceOp::kSum>(px, py, r, scale, stream);
      case ReduceOp::kMax: return Launch<T, ReduceOp::kMax>(px, py, r, scale, stream);
      case ReduceOp::kL2: return Launch<T, ReduceOp::kL2>(px, py, r, scale, stream);
    }
    return cudaErrorInvalidValue;
  });
}

}  // namespace amptrain::kernels::cuda
