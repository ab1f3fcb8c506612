// The one-block stable counting sort of gather.cu's GatherGrad and
// scatter_nd.cu's GatherND/ScatterND family: integer counts, a scan, then the
// positions placed tile by tile in position order, so equal keys keep their
// order and the result is the same on every run (no float atomics).
#pragma once

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

}  // namespace amptrain::kernels::cuda
