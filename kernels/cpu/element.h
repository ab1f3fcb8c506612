// Element types for CPU kernels and the one dtype switch.
//
// Half and BFloat16 are 2-byte storage types that convert to and from float
// (round to nearest even). Half converts with F16C's scalar instructions
// where the build has them: the same bits as ir::FloatToHalf/HalfToFloat for
// every input (float -> half checked over all 2^32 floats; a signaling-NaN
// half, which F16C would quiet, takes the software path). Kernels are templates over the storage type T and
// compute in Acc<T>: float for float/Half/BFloat16, double for double, the
// integer itself for integer types. Reductions in the reference kernels
// accumulate in double (Wide<T>).
//
//   return DispatchFloat(init.inputs[0].dtype, [&](auto tag) {
//     using T = typename decltype(tag)::type;
//     ...
//   });
#pragma once

#include <cstdint>
#include <type_traits>
#ifdef __F16C__
#include <immintrin.h>
#endif

#include "ir/dtype.h"
#include "ir/status.h"

namespace amptrain::kernels::cpu {

using ir::DType;

struct Half {
  uint16_t bits = 0;
  Half() = default;
#ifdef __F16C__
  Half(float f) : bits(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT)) {}  // NOLINT: implicit like a float
  operator float() const { return (bits & 0x7c00u) == 0x7c00u ? ir::HalfToFloat(bits) : _cvtsh_ss(bits); }
#else
  Half(float f) : bits(ir::FloatToHalf(f)) {}  // NOLINT: implicit like a float
  operator float() const { return ir::HalfToFloat(bits); }
#endif
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float f) : bits(ir::FloatToBFloat16(f)) {}  // NOLINT
  operator float() const { return ir::BFloat16ToFloat(bits); }
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);

template <class T> struct AccType { using type = T; };
template <> struct AccType<Half> { using type = float; };
template <> struct AccType<BFloat16> { using type = float; };
template <class T> using Acc = typename AccType<T>::type;

template <class T> struct WideType { using type = double; };
template <> struct WideType<int64_t> { using type = int64_t; };
template <> struct WideType<int32_t> { using type = int64_t; };
template <class T> using Wide = typename WideType<T>::type;

template <class T> struct Tag { using type = T; };

// The ir dtype of a kernel storage type (float, Half, BFloat16).
template <class T> constexpr DType StorageDType() {
  if constexpr (std::is_same_v<T, Half>) return DType::kFloat16;
  else if constexpr (std::is_same_v<T, BFloat16>) return DType::kBFloat16;
  else return DType::kFloat32;
}

// Calls fn(Tag<T>{}) for the storage type of `t`; unsupported dtypes give
// Unimplemented naming the dtype.
template <class Fn>
Status DispatchFloat(DType t, Fn&& fn) {
  switch (t) {
    case DType::kFloat32: return fn(Tag<float>{});
    case DType::kFloat16: return fn(Tag<Half>{});
    case DType::kBFloat16: return fn(Tag<BFloat16>{});
    case DType::kFloat64: return fn(Tag<double>{});
    default: return Unimplemented("dtype ", ir::DTypeName(t), " is not a float type");
  }
}

// Floats plus int64/int32 (arithmetic on shapes and indices).
template <class Fn>
Status DispatchNumeric(DType t, Fn&& fn) {
  switch (t) {
    case DType::kInt64: return fn(Tag<int64_t>{});
    case DType::kInt32: return fn(Tag<int32_t>{});
    default: return DispatchFloat(t, std::forward<Fn>(fn));
  }
}

// Every dtype, bool as uint8_t storage (copies, gathers, compares).
template <class Fn>
Status DispatchAll(DType t, Fn&& fn) {
  switch (t) {
    case DType::kInt8: return fn(Tag<int8_t>{});
    case DType::kUInt8: return fn(Tag<uint8_t>{});
    case DType::kBool: return fn(Tag<bool>{});
    default: return DispatchNumeric(t, std::forward<Fn>(fn));
  }
}

// Calls fn(Tag<U>{}) with U an unsigned integer of `size` bytes: for data
// movement and selects, which copy elements by size whatever their dtype.
template <class Fn>
Status DispatchBySize(size_t size, Fn&& fn) {
  switch (size) {
    case 1: return fn(Tag<uint8_t>{});
    case 2: return fn(Tag<uint16_t>{});
    case 4: return fn(Tag<uint32_t>{});
    case 8: return fn(Tag<uint64_t>{});
    default: return Unimplemented("element size ", size, " is not supported");
  }
}

}  // namespace amptrain::kernels::cpu
