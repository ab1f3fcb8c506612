// GatherND, ScatterND and their gradients (launch.h). GatherND reads by
// tuple. The others compute each tuple's target row, sort the tuples stably
// by row in one block (sort.cuh's counting sort, as gather.cu's GatherGrad),
// then run one thread per output element that visits its row's tuples in
// tuple order: kernels/cpu/scatter_nd.cc's order of writes and sums,
// without atomics, the same bits on every run.
#include "kernels/cuda/sort.cuh"

namespace amptrain::kernels::cuda {

namespace {

__device__ __forceinline__ int64_t Key(const int64_t* idx, int64_t j, const NDShape& s) {
  int64_t row = j / s.per_batch * s.slab_rows;
  for (int d = 0; d < s.k; ++d) {
    int64_t i = idx[j * s.k + d];
    if (i < -s.in[d] || i >= s.in[d]) return s.rows;
    if (i < 0) i += s.in[d];
    row += i * s.stride[d];
  }
  return row;
}

using Sorted = SortedKeys;  // by target row, the tuples whose index is bad last

__global__ void KeysKernel(const int64_t* idx, NDShape s, int32_t* keys) {
  AMP_GRID_STRIDE(j, s.count) keys[j] = static_cast<int32_t>(Key(idx, j, s));
}

__global__ void SortKeysKernel(NDShape g, Sorted s) { SortKeys(g.count, g.rows, s); }

template <class U>
__global__ void GatherNDKernel(const U* x, const int64_t* idx, U* y, NDShape s, U bad) {
  const int64_t n = s.count * s.size;
  AMP_GRID_STRIDE(e, n) {
    const int64_t j = e / s.size, off = e % s.size;
    const int64_t row = Key(idx, j, s);
    y[e] = row == s.rows ? bad : x[row * s.size + off];
  }
}

template <class T>
__global__ void GatherNDGradKernel(const T* dy, T* dx, NDShape g, Sorted s) {
  const int64_t n = g.rows * g.size;
  const bool bad = AnyBad(g.rows, s);
  AMP_GRID_STRIDE(e, n) {
    const int64_t r = e / g.size, off = e % g.size;
    float acc = 0.0f;
    for (int32_t b = s.start[r]; b < s.start[r + 1]; ++b) acc += ToF(dy[static_cast<int64_t>(s.order[b]) * g.size + off]);
    dx[e] = FromF<T>(bad ? NAN : acc);
  }
}

// U: the storage type (bytes for kNone); T: the arithmetic type otherwise.
template <class T, ScatterOp kOp>
__global__ void ScatterNDKernel(const T* x, const T* updates, T* y, NDShape g, Sorted s, T bad) {
  const int64_t n = g.rows * g.size;
  const bool any_bad = AnyBad(g.rows, s);
  AMP_GRID_STRIDE(e, n) {
    if (any_bad) {
      y[e] = bad;
      continue;
    }
    const int64_t r = e / g.size, off = e % g.size;
    const int32_t b0 = s.start[r], b1 = s.start[r + 1];
    if (b0 == b1) {
      if (y != x) y[e] = x[e];
      continue;
    }
    if constexpr (kOp == ScatterOp::kNone) {
      y[e] = updates[static_cast<int64_t>(s.order[b1 - 1]) * g.size + off];
    } else {
      T v = x[e];
      for (int32_t b = b0; b < b1; ++b) {
        const auto a = Widen(v), u = Widen(updates[static_cast<int64_t>(s.order[b]) * g.size + off]);
        if constexpr (kOp == ScatterOp::kAdd) v = Narrow<T>(a + u);
        else if constexpr (kOp == ScatterOp::kMul) v = Narrow<T>(a * u);
        else if constexpr (kOp == ScatterOp::kMax) v = Narrow<T>(a != a || a > u ? a : u);
        else v = Narrow<T>(a != a || a < u ? a : u);
      }
      y[e] = v;
    }
  }
}

template <class U>
__global__ void ScatterNDGradData(const U* dy, U* ddata, NDShape g, Sorted s, bool zero_targets, U bad) {
  const int64_t n = g.rows * g.size;
  const bool any_bad = AnyBad(g.rows, s);
  AMP_GRID_STRIDE(e, n) {
    const int64_t r = e / g.size;
    ddata[e] = any_bad ? bad : zero_targets && s.start[r + 1] > s.start[r] ? U(0) : dy[e];
  }
}

template <class U>
__global__ void ScatterNDGradUpdates(const U* dy, U* du, NDShape g, Sorted s, U bad) {
  const int64_t n = g.count * g.size;
  const bool any_bad = AnyBad(g.rows, s);
  AMP_GRID_STRIDE(e, n) {
    const int64_t j = e / g.size, off = e % g.size;
    const int32_t row = s.keys[j];
    du[e] = any_bad ? bad : dy[static_cast<int64_t>(row) * g.size + off];
  }
}

// The scratch carved into *s, then the keys (count > 0) and the sort.
cudaError_t Sort(const int64_t* idx, const NDShape& g, void* scratch, cudaStream_t stream, Sorted* s) {
  *s = CarveSortedKeys(scratch, g.count, g.rows);
  if (g.count > 0) {
    KeysKernel<<<Blocks(g.count), kThreads, 0, stream>>>(idx, g, s->keys);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
  }
  SortKeysKernel<<<1, kSortThreads, 0, stream>>>(g, *s);
  return cudaGetLastError();
}

}  // namespace

size_t NDScratchBytes(const NDShape& s) { return SortedKeysBytes(s.count, s.rows); }

cudaError_t LaunchGatherND(size_t elem_bytes, const void* x, const int64_t* idx, void* y, const NDShape& s,
                           uint64_t bad, cudaStream_t stream) {
  const int64_t n = s.count * s.size;
  if (n <= 0) return cudaSuccess;
  return DispatchBytes(elem_bytes, [&](auto tag) {
    using U = typename decltype(tag)::type;
    GatherNDKernel<U><<<Blocks(n), kThreads, 0, stream>>>(static_cast<const U*>(x), idx, static_cast<U*>(y), s,
                                                          static_cast<U>(bad));
    return cudaGetLastError();
  });
}

cudaError_t LaunchGatherNDGrad(Elem t, const void* dy, const int64_t* idx, void* dx, const NDShape& g, void* scratch,
                               cudaStream_t stream) {
  const int64_t n = g.rows * g.size;
  if (n <= 0) return cudaSuccess;
  Sorted s;
  if (const cudaError_t err = Sort(idx, g, scratch, stream, &s); err != cudaSuccess) return err;
  return DispatchElem(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    GatherNDGradKernel<T><<<Blocks(n), kThreads, 0, stream>>>(static_cast<const T*>(dy), static_cast<T*>(dx), g, s);
    return cudaGetLastError();
  });
}

cudaError_t LaunchScatterND(ScatterOp op, Num t, size_t elem_bytes, const void* x, const int64_t* idx,
                            const void* updates, void* y, const NDShape& g, uint64_t bad, void* scratch,
                            cudaStream_t stream) {
  const int64_t n = g.rows * g.size;
  if (n <= 0) return cudaSuccess;
  Sorted s;
  if (const cudaError_t err = Sort(idx, g, scratch, stream, &s); err != cudaSuccess) return err;
  return DispatchScatter(op, t, elem_bytes, bad, [&](auto tag, auto kop, auto bad_value) {
    using T = typename decltype(tag)::type;
    ScatterNDKernel<T, decltype(kop)::value><<<Blocks(n), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(updates), static_cast<T*>(y), g, s, bad_value);
    return cudaGetLastError();
  });
}

cudaError_t LaunchScatterNDGrad(size_t elem_bytes, const void* dy, const int64_t* idx, void* ddata, void* dupdates,
                                bool zero_targets, const NDShape& g, uint64_t bad, void* scratch, cudaStream_t stream) {
  Sorted s;
  if (const cudaError_t err = Sort(idx, g, scratch, stream, &s); err != cudaSuccess) return err;
  return DispatchBytes(elem_bytes, [&](auto tag) {
    using U = typename decltype(tag)::type;
    const int64_t nd = g.rows * g.size, nu = g.count * g.size;
    if (ddata && nd > 0)
      ScatterNDGradData<U><<<Blocks(nd), kThreads, 0, stream>>>(static_cast<const U*>(dy), static_cast<U*>(ddata), g,
                                                                s, zero_targets, static_cast<U>(bad));
    if (dupdates && nu > 0)
      ScatterNDGradUpdates<U><<<Blocks(nu), kThreads, 0, stream>>>(static_cast<const U*>(dy),
                                                                   static_cast<U*>(dupdates), g, s, static_cast<U>(bad));
    return cudaGetLastError();
  });
}

}  // namespace amptrain::kernels::cuda
