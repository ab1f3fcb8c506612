// Device-side helpers of the .cu files: storage types, float conversion,
// launch geometry, the Elem, Num and byte-size switches, the arithmetic
// types of the storage types and the flat Broadcast.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cuda/launch.h"

namespace amptrain::kernels::cuda {

__device__ __forceinline__ float ToF(float x) { return x; }
__device__ __forceinline__ float ToF(__half x) { return __half2float(x); }
__device__ __forceinline__ float ToF(__nv_bfloat16 x) { return __bfloat162float(x); }

template <class T> __device__ __forceinline__ T FromF(float x);
template <> __device__ __forceinline__ float FromF<float>(float x) { return x; }
template <> __device__ __forceinline__ __half FromF<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 FromF<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

constexpr int kThreads = 256;

// Blocks of kThreads for a grid-stride loop over n elements (n > 0).
inline unsigned Blocks(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < (1 << 20) ? b : (1 << 20));
}

#define AMP_GRID_STRIDE(i, n)                                                              \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

template <class T> struct Tag { using type = T; };

// fn(Tag<storage type>{}) for `t`.
template <class Fn>
cudaError_t DispatchElem(Elem t, Fn&& fn) {
  switch (t) {
    case Elem::kF32: return fn(Tag<float>{});
    case Elem::kF16: return fn(Tag<__half>{});
    case Elem::kBF16: return fn(Tag<__nv_bfloat16>{});
  }
  return cudaErrorInvalidValue;
}

// fn(Tag<U>{}) with U the unsigned integer of elem_bytes bytes (1, 2, 4, 8).
template <class Fn>
cudaError_t DispatchBytes(size_t elem_bytes, Fn&& fn) {
  switch (elem_bytes) {
    case 1: return fn(Tag<uint8_t>{});
    case 2: return fn(Tag<uint16_t>{});
    case 4: return fn(Tag<uint32_t>{});
    case 8: return fn(Tag<uint64_t>{});
  }
  return cudaErrorInvalidValue;
}

// fn(Tag<storage type>{}) for `t` (launch.h's Num).
template <class Fn>
cudaError_t DispatchNum(Num t, Fn&& fn) {
  switch (t) {
    case Num::kF32: return fn(Tag<float>{});
    case Num::kF16: return fn(Tag<__half>{});
    case Num::kBF16: return fn(Tag<__nv_bfloat16>{});
    case Num::kI8: return fn(Tag<int8_t>{});
    case Num::kU8: return fn(Tag<uint8_t>{});
    case Num::kI32: return fn(Tag<int32_t>{});
    case Num::kI64: return fn(Tag<int64_t>{});
  }
  return cudaErrorInvalidValue;
}

// The arithmetic type of a storage type: float for fp16/bf16 (as the CPU's
// Acc), the type itself otherwise; Widen converts to it, Narrow back.
template <class T> struct AccOf { using type = T; };
template <> struct AccOf<__half> { using type = float; };
template <> struct AccOf<__nv_bfloat16> { using type = float; };

template <class T> __device__ __forceinline__ typename AccOf<T>::type Widen(T x) { return x; }
template <> __device__ __forceinline__ float Widen<__half>(__half x) { return ToF(x); }
template <> __device__ __forceinline__ float Widen<__nv_bfloat16>(__nv_bfloat16 x) { return ToF(x); }

template <class T> __device__ __forceinline__ T Narrow(typename AccOf<T>::type x) { return static_cast<T>(x); }
template <> __device__ __forceinline__ __half Narrow<__half>(float x) { return FromF<__half>(x); }
template <> __device__ __forceinline__ __nv_bfloat16 Narrow<__nv_bfloat16>(float x) { return FromF<__nv_bfloat16>(x); }

// A Broadcast for operands in y's layout (a rank-1 walk with unit strides).
inline Broadcast Flat(int64_t n) {
  Broadcast bc;
  bc.rank = 1;
  bc.out_dims[0] = n;
  bc.a_strides[0] = bc.b_strides[0] = bc.c_strides[0] = 1;
  return bc;
}

// The sum (kMax: the max, NaN skipped as by fmaxf) of v over a block of
// kBlock threads (a power of two), returned to every thread; `shared` holds
// kBlock floats. The tree order is fixed, so the result is deterministic.
template <int kBlock, bool kMax>
__device__ float BlockReduce(float v, float* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = kBlock / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      const float o = shared[threadIdx.x + s];
      shared[threadIdx.x] = kMax ? fmaxf(shared[threadIdx.x], o) : shared[threadIdx.x] + o;
    }
    __syncthreads();
  }
  const float r = shared[0];
  __syncthreads();
  return r;
}

// Offsets of output element i in the operands of `bc` (a, b and, when ic
// is given, Where's condition c). Dead offsets cost nothing once inlined.
__device__ __forceinline__ void BroadcastOffsets(const Broadcast& bc, int64_t i, int64_t* ia, int64_t* ib,
                                                 int64_t* ic = nullptr) {
  int64_t rem = i, a = 0, b = 0, c = 0;
  for (int d = bc.rank - 1; d >= 0; --d) {
    const int64_t idx = rem % bc.out_dims[d];
    rem /= bc.out_dims[d];
    a += idx * bc.a_strides[d];
    b += idx * bc.b_strides[d];
    if (ic) c += idx * bc.c_strides[d];
  }
  *ia = a;
  *ib = b;
  if (ic) *ic = c;
}

}  // namespace amptrain::kernels::cuda
