// CUDA kernels of the ops that also take integers and bools (Not, Mod, the
// integer compares and arithmetic, Cast beyond fp32/fp16/bf16) and of the
// plan-time values (fills, Range), with kernels/cpu/unary.cc's, binary.cc's,
// cast.cc's and shape.cc's arithmetic: floats in float (fmodf is exact, so
// Mod gives the CPU's bits), integers in their own type.
#include <cuda/std/limits>
#include <type_traits>

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

// kernels/cpu/binary.cc's integer Add/Sub/Mul (Wrapping), Div (Divide), Max, Min.
template <class A>
__device__ __forceinline__ A IntArith(BinaryOp op, A a, A b) {
  using U = std::make_unsigned_t<A>;
  const U ua = static_cast<U>(a), ub = static_cast<U>(b);
  switch (op) {
    case BinaryOp::kAdd: return static_cast<A>(ua + ub);
    case BinaryOp::kSub: return static_cast<A>(ua - ub);
    case BinaryOp::kMul: return static_cast<A>(ua * ub);
    case BinaryOp::kDiv:
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<A>) {
        if (b == A(-1)) return static_cast<A>(0 - ua);  // elementwise.h's Negate: INT_MIN / -1 is UB
      }
      return static_cast<A>(a / b);
    case BinaryOp::kMax: return a > b ? a : b;
    case BinaryOp::kMin: return a < b ? a : b;
    default: return a;  // not reached: LaunchIntBinary takes the six above
  }
}

template <class T>
__global__ void IntBinaryKernel(BinaryOp op, const T* a, const T* b, T* y, int64_t n, Broadcast bc) {
  AMP_GRID_STRIDE(i, n) {
    int64_t ia, ib;
    BroadcastOffsets(bc, i, &ia, &ib);
    y[i] = IntArith<T>(op, a[ia], b[ib]);
  }
}

// ---- Cast (kernels/cpu/cast.cc): Load widens the source to its CPU Acc
// (float, double, the integer, a bool's 0/1), Store converts to the
// destination. The NaN payload rules are the CPU's: ir/dtype.h's fp16/bf16
// conversions and x86's cvtss2sd/cvtsd2ss (payload kept, quiet bit set).

struct BoolByte {  // bool storage read as a byte, so any nonzero byte is true
  uint8_t v;
};

__device__ __forceinline__ float HalfToFloat(__half x) {
  const unsigned h = __half_as_ushort(x);
  if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu))  // NaN: ir::HalfToFloat's bits
    return __uint_as_float(((h & 0x8000u) << 16) | 0x7f800000u | ((h & 0x3ffu) << 13));
  return __half2float(x);
}

__device__ __forceinline__ __half FloatToHalf(float f) {
  if (f != f) {  // ir::FloatToHalf: quiet, the top payload bits kept
    const unsigned x = __float_as_uint(f);
    return __ushort_as_half(static_cast<unsigned short>(((x >> 16) & 0x8000u) | 0x7e00u | ((x >> 13) & 0x3ffu)));
  }
  return __float2half_rn(f);  // nearest even, beyond 65520 -> +-inf, as ir::FloatToHalf
}

__device__ __forceinline__ __nv_bfloat16 FloatToBFloat16(float f) {
  if (f != f) return __ushort_as_bfloat16(static_cast<unsigned short>((__float_as_uint(f) >> 16) | 0x40u));
  return __float2bfloat16_rn(f);
}

__device__ __forceinline__ double FloatToDouble(float f) {
  if (f != f) {
    const unsigned long long x = __float_as_uint(f);
    return __longlong_as_double(static_cast<long long>(((x & 0x80000000ull) << 32) | 0x7ff8000000000000ull |
                                                       ((x & 0x7fffffull) << 29)));
  }
  return static_cast<double>(f);
}

__device__ __forceinline__ float DoubleToFloat(double d) {
  if (d != d) {
    const unsigned long long x = static_cast<unsigned long long>(__double_as_longlong(d));
    return __uint_as_float(static_cast<unsigned>(((x >> 32) & 0x80000000ull) | 0x7fc00000ull |
                                                 ((x >> 29) & 0x7fffffull)));
  }
  return __double2float_rn(d);
}

template <class S>
__device__ __forceinline__ auto CastLoad(S x) {
  if constexpr (std::is_same_v<S, BoolByte>) return static_cast<uint8_t>(x.v != 0);
  else if constexpr (std::is_same_v<S, __half>) return HalfToFloat(x);
  else if constexpr (std::is_same_v<S, __nv_bfloat16>) return ToF(x);  // exact, NaN bits kept
  else return x;
}

// v (a CastLoad result) as float: integers rounded to nearest even.
template <class V>
__device__ __forceinline__ float AsFloat(V v) {
  if constexpr (std::is_same_v<V, double>) return DoubleToFloat(v);
  else return static_cast<float>(v);
}

template <class I, class F>
__device__ __forceinline__ I TruncSaturate(F v) {
  using L = ::cuda::std::numeric_limits<I>;
  if (v != v) return 0;
  if (v <= static_cast<F>(L::lowest())) return L::lowest();
  if (v >= static_cast<F>(L::max())) return L::max();
  return static_cast<I>(v);
}

template <class D, class V>
__device__ __forceinline__ D CastStore(V v) {
  if constexpr (std::is_same_v<D, BoolByte>) return BoolByte{static_cast<uint8_t>(v != V(0))};
  else if constexpr (std::is_integral_v<D> && std::is_floating_point_v<V>) return TruncSaturate<D>(v);
  else if constexpr (std::is_same_v<D, __half>) return FloatToHalf(AsFloat(v));
  else if constexpr (std::is_same_v<D, __nv_bfloat16>) return FloatToBFloat16(AsFloat(v));
  else if constexpr (std::is_same_v<D, float>) return AsFloat(v);
  else if constexpr (std::is_same_v<D, double> && std::is_same_v<V, float>) return FloatToDouble(v);
  else return static_cast<D>(v);  // integer -> integer wraps; integer -> double to nearest even
}

template <class S, class D>
__global__ void CastAnyKernel(const S* x, D* y, int64_t n) {
  AMP_GRID_STRIDE(i, n) y[i] = CastStore<D>(CastLoad(x[i]));
}

// fn(Tag<storage type>{}) for `t`.
template <class Fn>
cudaError_t DispatchCastType(CastType t, Fn&& fn) {
  switch (t) {
    case CastType::kF32: return fn(Tag<float>{});
    case CastType::kF16: return fn(Tag<__half>{});
    case CastType::kBF16: return fn(Tag<__nv_bfloat16>{});
    case CastType::kF64: return fn(Tag<double>{});
    case CastType::kI64: return fn(Tag<int64_t>{});
    case CastType::kI32: return fn(Tag<int32_t>{});
    case CastType::kI8: return fn(Tag<int8_t>{});
    case CastType::kU8: return fn(Tag<uint8_t>{});
    case CastType::kBool: return fn(Tag<BoolByte>{});
  }
  return cudaErrorInvalidValue;
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

cudaError_t LaunchIntBinary(BinaryOp op, Num t, const void* a, const void* b, void* y, int64_t n,
                            const Broadcast* bc, cudaStream_t stream) {
  if (op != BinaryOp::kAdd && op != BinaryOp::kSub && op != BinaryOp::kMul && op != BinaryOp::kDiv &&
      op != BinaryOp::kMax && op != BinaryOp::kMin)
    return cudaErrorInvalidValue;
  if (n <= 0) return cudaSuccess;
  const Broadcast walk = bc ? *bc : Flat(n);
  auto launch = [&](auto tag) {
    using T = typename decltype(tag)::type;
    IntBinaryKernel<T><<<Blocks(n), kThreads, 0, stream>>>(op, static_cast<const T*>(a), static_cast<const T*>(b),
                                                           static_cast<T*>(y), n, walk);
    return cudaGetLastError();
  };
  switch (t) {
    case Num::kI64: return launch(Tag<int64_t>{});
    case Num::kI32: return launch(Tag<int32_t>{});
    case Num::kI8: return launch(Tag<int8_t>{});
    case Num::kU8: return launch(Tag<uint8_t>{});
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t LaunchCastAny(CastType from, CastType to, const void* x, void* y, int64_t n, cudaStream_t stream) {
  if (from == to) return cudaErrorInvalidValue;
  if (n <= 0) return cudaSuccess;
  return DispatchCastType(from, [&](auto src) {
    return DispatchCastType(to, [&](auto dst) {
      using S = typename decltype(src)::type;
      using D = typename decltype(dst)::type;
      if constexpr (std::is_same_v<S, D>) {
        return cudaErrorInvalidValue;
      } else {
        CastAnyKernel<S, D><<<Blocks(n), kThreads, 0, stream>>>(static_cast<const S*>(x), static_cast<D*>(y), n);
        return cudaGetLastError();
      }
    });
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
