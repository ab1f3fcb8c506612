// Gather and GatherGrad (launch.h). Gather copies elements by size. The
// gradient is deterministic without float atomics: one block sorts the
// indices stably by target row (sort.cuh's counting sort: integer counts, a
// scan, then the indices placed tile by tile in index order), then one
// thread per element of dX sums its row's dY slices in that order, in float.
#include "kernels/cuda/sort.cuh"

namespace amptrain::kernels::cuda {

namespace {

// idx[j] in [0, dim), or dim for an index outside [-dim, dim).
template <class I>
__device__ __forceinline__ int64_t Row(const I* idx, int64_t j, int64_t dim) {
  int64_t i = static_cast<int64_t>(idx[j]);
  if (i < -dim || i >= dim) return dim;
  return i < 0 ? i + dim : i;
}

template <class U, class I>
__global__ void GatherKernel(const U* x, const I* idx, U* y, GatherShape g, U bad) {
  const int64_t n = g.outer * g.n_idx * g.inner;
  AMP_GRID_STRIDE(e, n) {
    const int64_t i = e % g.inner, j = e / g.inner % g.n_idx, o = e / (g.inner * g.n_idx);
    const int64_t r = Row(idx, j, g.dim);
    y[e] = r == g.dim ? bad : x[(o * g.dim + r) * g.inner + i];
  }
}

// Scratch of the sort, int32: start [dim + 2] (start[dim + 1] = the count of
// bad indices), fill [dim + 1], order [n_idx].
struct SortScratch {
  int32_t *start, *fill, *order;
};

SortScratch Carve(void* scratch, const GatherShape& g) {
  auto* p = static_cast<int32_t*>(scratch);
  return SortScratch{p, p + g.dim + 2, p + 2 * g.dim + 3};
}

// One block: order[] = 0..n_idx-1 sorted stably by Row (bad ones last),
// start[r] = the first position of row r, start[dim + 1] = n_idx.
template <class I>
__global__ void SortByRow(const I* idx, GatherShape g, SortScratch s) {
  SortByKey(g.n_idx, g.dim + 1, [&](int64_t j) { return Row(idx, j, g.dim); }, s.start, s.fill, s.order);
}

template <class T>
__global__ void SumRows(const T* dy, T* dx, GatherShape g, SortScratch s) {
  const int64_t n = g.outer * g.dim * g.inner;
  const bool any_bad = s.start[g.dim + 1] > s.start[g.dim];
  AMP_GRID_STRIDE(e, n) {
    const int64_t i = e % g.inner, r = e / g.inner % g.dim, o = e / (g.inner * g.dim);
    float acc = 0.0f;
    for (int32_t b = s.start[r]; b < s.start[r + 1]; ++b) acc += ToF(dy[(o * g.n_idx + s.order[b]) * g.inner + i]);
    dx[e] = FromF<T>(any_bad ? NAN : acc);
  }
}

template <class Fn>
cudaError_t DispatchIndex(bool int64, Fn&& fn) {
  return int64 ? fn(Tag<int64_t>{}) : fn(Tag<int32_t>{});
}

}  // namespace

cudaError_t LaunchGather(size_t elem_bytes, const void* x, const void* idx, void* y, const GatherShape& g,
                         uint64_t bad, cudaStream_t stream) {
  const int64_t n = g.outer * g.n_idx * g.inner;
  if (n <= 0) return cudaSuccess;
  return DispatchIndex(g.idx_int64, [&](auto index_tag) {
    using I = typename decltype(index_tag)::type;
    auto launch = [&](auto tag) {
      using U = typename decltype(tag)::type;
      GatherKernel<U, I><<<Blocks(n), kThreads, 0, stream>>>(static_cast<const U*>(x), static_cast<const I*>(idx),
                                                             static_cast<U*>(y), g, static_cast<U>(bad));
      return cudaGetLastError();
    };
    return DispatchBytes(elem_bytes, launch);
  });
}

size_t GatherGradScratchBytes(const GatherShape& g) {
  return sizeof(int32_t) * static_cast<size_t>(2 * g.dim + 3 + g.n_idx);
}

cudaError_t LaunchGatherGrad(Elem t, const void* dy, const void* idx, void* dx, const GatherShape& g, void* scratch,
                             cudaStream_t stream) {
  const int64_t n = g.outer * g.dim * g.inner;
  if (n <= 0) return cudaSuccess;
  const SortScratch s = Carve(scratch, g);
  return DispatchIndex(g.idx_int64, [&](auto index_tag) {
    using I = typename decltype(index_tag)::type;
    SortByRow<I><<<1, kSortThreads, 0, stream>>>(static_cast<const I*>(idx), g, s);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) return err;
    return DispatchElem(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      SumRows<T><<<Blocks(n), kThreads, 0, stream>>>(static_cast<const T*>(dy), static_cast<T*>(dx), g, s);
      return cudaGetLastError();
    });
  });
}

}  // namespace amptrain::kernels::cuda
