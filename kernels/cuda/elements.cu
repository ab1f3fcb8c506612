// GatherElements, ScatterElements and their gradients (launch.h).
// GatherElements reads by index element. The others compute each index
// element's target, sort the index elements stably by target in one block
// (sort.cuh's counting sort, as gather.cu's GatherGrad and scatter_nd.cu),
// then run one thread per data element that visits its index elements in
// increasing position: kernels/cpu/select.cc's and scatter_nd.cc's order of
// sums and writes, without atomics, the same bits on every run.
#include "kernels/cuda/sort.cuh"

namespace amptrain::kernels::cuda {

namespace {

// The data offset index element e targets, or s.rows for a bad index.
template <class I>
__device__ __forceinline__ int64_t Target(const I* idx, int64_t e, const ElementsShape& s) {
  int64_t k = static_cast<int64_t>(idx[e]);
  if (k < -s.dim || k >= s.dim) return s.rows;
  if (k < 0) k += s.dim;
  int64_t rem = e, off = 0;
  for (int d = s.rank - 1; d >= 0; --d) {
    const int64_t c = rem % s.idx_dims[d];
    rem /= s.idx_dims[d];
    off += (d == s.axis ? k : c) * s.data_strides[d];
  }
  return off;
}

using Sorted = SortedKeys;  // by target, the index elements that are bad last

template <class I>
__global__ void KeysKernel(const I* idx, ElementsShape s, int32_t* keys) {
  AMP_GRID_STRIDE(e, s.count) keys[e] = static_cast<int32_t>(Target(idx, e, s));
}

__global__ void SortKeysKernel(ElementsShape g, Sorted s) { SortKeys(g.count, g.rows, s); }

template <class U, class I>
__global__ void GatherElementsKernel(const U* x, const I* idx, U* y, ElementsShape s, U bad) {
  AMP_GRID_STRIDE(e, s.count) {
    const int64_t t = Target(idx, e, s);
    y[e] = t == s.rows ? bad : x[t];
  }
}

template <class T>
__global__ void GatherElementsGradKernel(const T* dy, T* dx, ElementsShape g, Sorted s) {
  const bool bad = AnyBad(g.rows, s);
  AMP_GRID_STRIDE(r, g.rows) {
    T v = FromF<T>(0.0f);
    for (int32_t b = s.start[r]; b < s.start[r + 1]; ++b) v = FromF<T>(ToF(v) + ToF(dy[s.order[b]]));
    dx[r] = bad ? FromF<T>(NAN) : v;
  }
}

// T: the storage type (bytes for kNone), else the arithmetic type's storage.
template <class T, ScatterOp kOp>
__global__ void ScatterElementsKernel(const T* x, const T* updates, T* y, ElementsShape g, Sorted s, T bad) {
  const bool any_bad = AnyBad(g.rows, s);
  AMP_GRID_STRIDE(r, g.rows) {
    if (any_bad) {
      y[r] = bad;
      continue;
    }
    const int32_t b0 = s.start[r], b1 = s.start[r + 1];
    if (b0 == b1) {
      if (y != x) y[r] = x[r];
      continue;
    }
    if constexpr (kOp == ScatterOp::kNone) {
      y[r] = updates[s.order[b1 - 1]];
    } else {
      T v = x[r];
      for (int32_t b = b0; b < b1; ++b) {
        const auto a = Widen(v), u = Widen(updates[s.order[b]]);
        if constexpr (kOp == ScatterOp::kAdd) v = Narrow<T>(a + u);
        else if constexpr (kOp == ScatterOp::kMul) v = Narrow<T>(a * u);
        else if constexpr (kOp == ScatterOp::kMax) v = Narrow<T>(a != a || a > u ? a : u);
        else v = Narrow<T>(a != a || a < u ? a : u);
      }
      y[r] = v;
    }
  }
}

template <class U>
__global__ void ScatterElementsGradData(const U* dy, U* ddata, ElementsShape g, Sorted s, bool zero_targets, U bad) {
  const bool any_bad = AnyBad(g.rows, s);
  AMP_GRID_STRIDE(r, g.rows) ddata[r] = any_bad ? bad : zero_targets && s.start[r + 1] > s.start[r] ? U(0) : dy[r];
}

template <class U>
__global__ void ScatterElementsGradUpdates(const U* dy, U* du, ElementsShape g, Sorted s, U bad) {
  const bool any_bad = AnyBad(g.rows, s);
  AMP_GRID_STRIDE(e, g.count) du[e] = any_bad ? bad : dy[s.keys[e]];
}

template <class Fn>
cudaError_t DispatchIndex(bool int64, Fn&& fn) {
  return int64 ? fn(Tag<int64_t>{}) : fn(Tag<int32_t>{});
}

// The scratch carved into *s, then the keys (count > 0) and the sort.
cudaError_t Sort(const void* idx, const ElementsShape& g, void* scratch, cudaStream_t stream, Sorted* s) {
  *s = CarveSortedKeys(scratch, g.count, g.rows);
  if (g.count > 0) {
    const cudaError_t err = DispatchIndex(g.idx_int64, [&](auto tag) {
      using I = typename decltype(tag)::type;
      KeysKernel<I><<<Blocks(g.count), kThreads, 0, stream>>>(static_cast<const I*>(idx), g, s->keys);
      return cudaGetLastError();
    });
    if (err != cudaSuccess) return err;
  }
  SortKeysKernel<<<1, kSortThreads, 0, stream>>>(g, *s);
  return cudaGetLastError();
}

}  // namespace

size_t ElementsScratchBytes(const ElementsShape& s) { return SortedKeysBytes(s.count, s.rows); }

cudaError_t LaunchGatherElements(size_t elem_bytes, const void* x, const void* idx, void* y, const ElementsShape& s,
                                 uint64_t bad, cudaStream_t stream) {
  if (s.count <= 0) return cudaSuccess;
  return DispatchIndex(s.idx_int64, [&](auto index_tag) {
    using I = typename decltype(index_tag)::type;
    return DispatchBytes(elem_bytes, [&](auto tag) {
      using U = typename decltype(tag)::type;
      GatherElementsKernel<U, I><<<Blocks(s.count), kThreads, 0, stream>>>(
          static_cast<const U*>(x), static_cast<const I*>(idx), static_cast<U*>(y), s, static_cast<U>(bad));
      return cudaGetLastError();
    });
  });
}

cudaError_t LaunchGatherElementsGrad(Elem t, const void* dy, const void* idx, void* dx, const ElementsShape& g,
                                     void* scratch, cudaStream_t stream) {
  if (g.rows <= 0) return cudaSuccess;
  Sorted s;
  if (const cudaError_t err = Sort(idx, g, scratch, stream, &s); err != cudaSuccess) return err;
  return DispatchElem(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    GatherElementsGradKernel<T><<<Blocks(g.rows), kThreads, 0, stream>>>(static_cast<const T*>(dy),
                                                                         static_cast<T*>(dx), g, s);
    return cudaGetLastError();
  });
}

cudaError_t LaunchScatterElements(ScatterOp op, Num t, size_t elem_bytes, const void* x, const void* idx,
                                  const void* updates, void* y, const ElementsShape& g, uint64_t bad, void* scratch,
                                  cudaStream_t stream) {
  const int64_t n = g.rows;
  if (n <= 0) return cudaSuccess;
  Sorted s;
  if (const cudaError_t err = Sort(idx, g, scratch, stream, &s); err != cudaSuccess) return err;
  return DispatchScatter(op, t, elem_bytes, bad, [&](auto tag, auto kop, auto bad_value) {
    using T = typename decltype(tag)::type;
    ScatterElementsKernel<T, decltype(kop)::value><<<Blocks(n), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(updates), static_cast<T*>(y), g, s, bad_value);
    return cudaGetLastError();
  });
}

cudaError_t LaunchScatterElementsGrad(size_t elem_bytes, const void* dy, const void* idx, void* ddata,
                                      void* dupdates, bool zero_targets, const ElementsShape& g, uint64_t bad,
                                      void* scratch, cudaStream_t stream) {
  Sorted s;
  if (const cudaError_t err = Sort(idx, g, scratch, stream, &s); err != cudaSuccess) return err;
  return DispatchBytes(elem_bytes, [&](auto tag) {
    using U = typename decltype(tag)::type;
    if (ddata && g.rows > 0)
      ScatterElementsGradData<U><<<Blocks(g.rows), kThreads, 0, stream>>>(
          static_cast<const U*>(dy), static_cast<U*>(ddata), g, s, zero_targets, static_cast<U>(bad));
    if (dupdates && g.count > 0)
      ScatterElementsGradUpdates<U><<<Blocks(g.count), kThreads, 0, stream>>>(
          static_cast<const U*>(dy), static_cast<U*>(dupdates), g, s, static_cast<U>(bad));
    return cudaGetLastError();
  });
}

}  // namespace amptrain::kernels::cuda
