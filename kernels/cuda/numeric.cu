// CUDA kernels of the ops that also take integers and bools (Not, Mod, the
// integer compares) and of the plan-time values (fills, Range), with
// kernels/cpu/unary.cc's, binary.cc's and shape.cc's arithmetic: floats in
// float (fmodf is exact, so Mod gives the CPU's bits), integers in their own
// type.
#include "kernels/cuda/elem.cuh"

namespace amptrain::kernels::cuda {

namespace {

__global__ void NotKernel(const uint8_t* x, uint8_t* y, int64_t n) {
  AMP_GRID_STRIDE(i, n) y[i] = x[i] ? 0 : 1;
}

// kernels/cpu/binary.cc's Remainder.
template <class A>
__device__ __forceinline__ A Remainder(A a, A b, bool floor_mod) {
  if constexpr (std::is_same_v<A, float>) {
    const float r = fmodf(a, b);
    if (!floor_mod) return r;
    if (r == 0.0f) return copysignf(0.0f, b);  // ir::FloorMod
    return (r < 0.0f) != (b < 0.0f) ? r + b : r;
  } else if constexpr (std::is_signed_v<A>) {
    if (b == 0) return 0;
    if (b == A(-1)) return 0;
    const A r = static_cast<A>(a % b);
    return floor_mod && r != 0 && (r < 0) != (b < 0) ? static_cast<A>(r + b) : r;
  } else {
    if (b == 0) return 0;
    return static_cast<A>(a % b);
  }
}

template <class T>
__global__ void ModKernel(bool floor_mod, const T* a, const T* b, T* y, int64_t n, Broadcast bc) {
  AMP_GRID_STRIDE(i, n) {
    int64_t ia, ib;
    BroadcastOffsets(bc, i, &ia, &ib);
    y[i] = Narrow<T>(Remainder(Widen(a[ia]), Widen(b[ib]), floor_mod));
  }
}

template <class T>
__global__ void CompareKernel(CompareOp op, const T* a, const T* b, bool* y, int64_t n, Broadcast bc) {
  AMP_GRID_STRIDE(i, n) {
    int64_t ia, ib;
    BroadcastOffsets(bc, i, &ia, &ib);
    const auto x = Widen(a[ia]), z = Widen(b[ib]);
    y[i] = op == CompareOp::kEqual ? x == z : op == CompareOp::kLess ? x < z : x > z;
  }
}

template <class U>
__global__ void FillKernel(U v, U* y, int64_t n) {
  AMP_GRID_STRIDE(i, n) y[i] = v;
}

// shape.cc's RangeKernel: T(start + A(i) * delta).
template <class T>
__global__ void RangeKernel(const T* start, const T* delta, T* y, int64_t n) {
  using A = typename AccOf<T>::type;
  const A s = Widen(start[0]), d = Widen(delta[0]);
  AMP_GRID_STRIDE(i, n) y[i] = Narrow<T>(static_cast<A>(s + static_cast<A>(i) * d));
}

}  // namespace

cudaError_t LaunchNot(const uint8_t* x, uint8_t* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  NotKernel<<<Blocks(n), kThreads, 0, stream>>>(x, y, n);
  return cudaGetLastError();
}

cudaError_t LaunchMod(Num t, bool fmod, const void* a, const void* b, void* y, int64_t n, const Broadcast* bc,
                      cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const Broadcast walk = bc ? *bc : Flat(n);
  return DispatchNum(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    ModKernel<T><<<Blocks(n), kThreads, 0, stream>>>(!fmod, static_cast<const T*>(a), static_cast<const T*>(b),
                                                     static_cast<T*>(y), n, walk);
    return cudaGetLastError();
  });
}

cudaError_t LaunchCompare(CompareOp op, Num t, const void* a, const void* b, bool* y, int64_t n,
                          const Broadcast* bc, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const Broadcast walk = bc ? *bc : Flat(n);
  return DispatchNum(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    CompareKernel<T><<<Blocks(n), kThreads, 0, stream>>>(op, static_cast<const T*>(a), static_cast<const T*>(b), y,
                                                            n, walk);
    return cudaGetLastError();
  });
}

cudaError_t LaunchFill(size_t elem_bytes, uint64_t bits, void* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  return DispatchBytes(elem_bytes, [&](auto tag) {
    using U = typename decltype(tag)::type;
    FillKernel<U><<<Blocks(n), kThreads, 0, stream>>>(static_cast<U>(bits), static_cast<U*>(y), n);
    return cudaGetLastError();
  });
}

cudaError_t LaunchRange(Num t, const void* start, const void* delta, void* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  return DispatchNum(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    RangeKernel<T><<<Blocks(n), kThreads, 0, stream>>>(static_cast<const T*>(start), static_cast<const T*>(delta),
                                                       static_cast<T*>(y), n);
    return cudaGetLastError();
  });
}

}  // namespace amptrain::kernels::cuda
