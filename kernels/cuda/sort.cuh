// The one-block stable counting sort of gather.cu's GatherGrad and
// scatter_nd.cu's GatherND/ScatterND family: integer counts, a scan, then the
// positions placed tile by tile in position order, so equal keys keep their
// order and the result is the same on every run (no float atomics).
#pragma once

#include <cstring>
#include <type_traits>

#include "kernels/cuda/elem.cuh"

namespace amptrain::kernels::cuda {

// The block size SortByKey runs with.
constexpr int kSortThreads = 256;

// One block of kSortThreads threads: order[] = 0..n-1 sorted stably by
// key(j) in [0, buckets), start[b] = the first position of bucket b and
// start[buckets] = n; fill holds `buckets` ints of scratch.
template <class KeyFn>
__device__ void SortByKey(int64_t n, int64_t buckets, KeyFn key, int32_t* start, int32_t* fill, int32_t* order) {
  __shared__ int32_t keys[kSortThreads];
  __shared__ int32_t chunk[kSortThreads];
  for (int64_t r = threadIdx.x; r < buckets; r += blockDim.x) fill[r] = 0;
  __syncthreads();
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) atomicAdd(&fill[key(j)], 1);
  __syncthreads();
  // Exclusive scan of the counts: a contiguous chunk per thread, then the chunk totals.
  const int64_t per = (buckets + blockDim.x - 1) / blockDim.x;
  const int64_t lo = threadIdx.x * per, hi = lo + per < buckets ? lo + per : buckets;
  int32_t total = 0;
  for (int64_t r = lo; r < hi; ++r) total += fill[r];
  chunk[threadIdx.x] = total;
  __syncthreads();
  if (threadIdx.x == 0) {
    int32_t acc = 0;
    for (int k = 0; k < kSortThreads; ++k) {
      const int32_t c = chunk[k];
      chunk[k] = acc;
      acc += c;
    }
  }
  __syncthreads();
  int32_t acc = chunk[threadIdx.x];
  for (int64_t r = lo; r < hi; ++r) {
    const int32_t c = fill[r];
    start[r] = acc;
    fill[r] = acc;
    acc += c;
  }
  if (threadIdx.x == 0) start[buckets] = static_cast<int32_t>(n);
  __syncthreads();
  // Place tile by tile: a position goes after the equal keys before it in its tile.
  for (int64_t t0 = 0; t0 < n; t0 += blockDim.x) {
    const int64_t j = t0 + threadIdx.x;
    const int32_t k0 = j < n ? static_cast<int32_t>(key(j)) : -1;
    keys[threadIdx.x] = k0;
    __syncthreads();
    int32_t before = 0;
    bool last = true;
    if (k0 >= 0) {
      for (int k = 0; k < kSortThreads; ++k) {
        if (keys[k] != k0) continue;
        if (k < static_cast<int>(threadIdx.x)) ++before;
        if (k > static_cast<int>(threadIdx.x)) last = false;
      }
      order[fill[k0] + before] = static_cast<int32_t>(j);
    }
    __syncthreads();  // every fill[key] is read before the last of its key moves it
    if (k0 >= 0 && last) fill[k0] += before + 1;
    __syncthreads();
  }
}

// The scatter family's sort (scatter_nd.cu, elements.cu): each of `count`
// index entries has a precomputed key, its target in [0, rows) or rows for
// a bad index. Scratch, int32: keys [count], start [rows + 2] (start[rows + 1]
// - start[rows] = the bad entries), fill [rows + 1], order [count].
struct SortedKeys {
  int32_t *keys, *start, *fill, *order;
};

inline size_t SortedKeysBytes(int64_t count, int64_t rows) {
  return sizeof(int32_t) * static_cast<size_t>(2 * count + 2 * rows + 3);
}

inline SortedKeys CarveSortedKeys(void* scratch, int64_t count, int64_t rows) {
  SortedKeys r;
  r.keys = static_cast<int32_t*>(scratch);
  r.start = r.keys + count;
  r.fill = r.start + rows + 2;
  r.order = r.fill + rows + 1;
  return r;
}

// SortByKey over the keys, the bad bucket last (a kernel of one block of
// kSortThreads calls it).
__device__ __forceinline__ void SortKeys(int64_t count, int64_t rows, const SortedKeys& s) {
  SortByKey(count, rows + 1, [&](int64_t j) { return s.keys[j]; }, s.start, s.fill, s.order);
}

__device__ __forceinline__ bool AnyBad(int64_t rows, const SortedKeys& s) { return s.start[rows + 1] > s.start[rows]; }

// fn(Tag<T>{}, std::integral_constant<ScatterOp, op>{}, T bad) for a scatter
// with reduction `op`: T is the unsigned integer of elem_bytes for kNone (any
// dtype, moved as bytes), else the storage type of `t` (fp32/fp16/bf16,
// int32, int64; others are cudaErrorInvalidValue). `bad` is the dtype's
// BadBits, narrowed to T.
template <class Fn>
cudaError_t DispatchScatter(ScatterOp op, Num t, size_t elem_bytes, uint64_t bad, Fn&& fn) {
  if (op == ScatterOp::kNone) {
    return DispatchBytes(elem_bytes, [&](auto tag) {
      using U = typename decltype(tag)::type;
      return fn(tag, std::integral_constant<ScatterOp, ScatterOp::kNone>{}, static_cast<U>(bad));
    });
  }
  return DispatchNum(t, [&](auto tag) -> cudaError_t {
    using T = typename decltype(tag)::type;
    if constexpr (sizeof(T) == 1) {
      return cudaErrorInvalidValue;
    } else {
      T b;
      static_assert(sizeof(T) <= sizeof(uint64_t));
      std::memcpy(static_cast<void*>(&b), &bad, sizeof(T));  // little-endian: the low bytes
      switch (op) {
        case ScatterOp::kAdd: return fn(tag, std::integral_constant<ScatterOp, ScatterOp::kAdd>{}, b);
        case ScatterOp::kMul: return fn(tag, std::integral_constant<ScatterOp, ScatterOp::kMul>{}, b);
        case ScatterOp::kMax: return fn(tag, std::integral_constant<ScatterOp, ScatterOp::kMax>{}, b);
        case ScatterOp::kMin: return fn(tag, std::integral_constant<ScatterOp, ScatterOp::kMin>{}, b);
        default: return cudaErrorInvalidValue;
      }
    }
  });
}

}  // namespace amptrain::kernels::cuda
