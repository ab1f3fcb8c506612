// ReduceSum/ReduceMean (and ReduceSumTo, which is a ReduceSum) over any set
// of axes: one block per output element when each sums many inputs, else one
// thread per output. Float accumulation; a block's threads combine their
// partial sums in a fixed tree, so the bits repeat from run to run.
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

template <class T>
__global__ void ReducePerThread(const T* x, T* y, Reduction r, float scale) {
  AMP_GRID_STRIDE(o, r.outputs) {
    const int64_t base = Offset(r.kept_rank, r.kept_dims, r.kept_strides, o);
    float acc = 0.0f;
    for (int64_t k = 0; k < r.count; ++k) acc += ToF(x[base + Offset(r.red_rank, r.red_dims, r.red_strides, k)]);
    y[o] = FromF<T>(acc * scale);
  }
}

template <class T>
__global__ void ReducePerBlock(const T* x, T* y, Reduction r, float scale) {
  __shared__ float part[kThreads];
  for (int64_t o = blockIdx.x; o < r.outputs; o += gridDim.x) {
    const int64_t base = Offset(r.kept_rank, r.kept_dims, r.kept_strides, o);
    float acc = 0.0f;
    for (int64_t k = threadIdx.x; k < r.count; k += blockDim.x)
      acc += ToF(x[base + Offset(r.red_rank, r.red_dims, r.red_strides, k)]);
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
      __syncthreads();
    }
    if (threadIdx.x == 0) y[o] = FromF<T>(part[0] * scale);
    __syncthreads();  // part[0] is read before the next output overwrites it
  }
}

}  // namespace

cudaError_t LaunchReduceSum(Elem t, const void* x, void* y, const Reduction& r, float scale, cudaStream_t stream) {
  if (r.outputs <= 0) return cudaSuccess;
  return DispatchElem(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = static_cast<const T*>(x);
    T* py = static_cast<T*>(y);
    if (r.count >= 256 && r.outputs < (int64_t{1} << 16)) {
      const int64_t blocks = r.outputs < 65535 ? r.outputs : 65535;
      ReducePerBlock<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(px, py, r, scale);
    } else {
      ReducePerThread<T><<<Blocks(r.outputs), kThreads, 0, stream>>>(px, py, r, scale);
    }
    return cudaGetLastError();
  });
}

}  // namespace amptrain::kernels::cuda
