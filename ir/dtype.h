// Element types and the 2-byte float formats.
//
// float16 and bfloat16 are stored as real 2-byte elements (uint16_t bit
// patterns). Conversions round to nearest even, keep NaN a NaN and saturate
// nothing: fp32 values beyond the fp16 range become +-inf, exactly as a GPU
// cast does. Kernels compute in fp32 where the CPU has no native instruction.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace amptrain::ir {

enum class DType : uint8_t {
  kUndefined = 0,
  kFloat32,
  kFloat16,
  kBFloat16,
  kFloat64,
  kInt64,
  kInt32,
  kInt8,
  kUInt8,
  kBool,
};

size_t DTypeSize(DType t);               // bytes per element; 0 for kUndefined
std::string_view DTypeName(DType t);     // "float32", "float16", ...
bool IsFloat(DType t);                   // float32/16, bfloat16, float64
bool IsLowPrecision(DType t);            // float16, bfloat16
bool IsInteger(DType t);                 // int8..int64, uint8 (not bool)
// Parses "float32"/"fp32"/"float16"/"fp16"/"bfloat16"/"bf16"/...; kUndefined if unknown.
DType ParseDType(std::string_view name);

template <class T> constexpr DType DTypeOf();
template <> constexpr DType DTypeOf<float>() { return DType::kFloat32; }
template <> constexpr DType DTypeOf<double>() { return DType::kFloat64; }
template <> constexpr DType DTypeOf<int64_t>() { return DType::kInt64; }
template <> constexpr DType DTypeOf<int32_t>() { return DType::kInt32; }
template <> constexpr DType DTypeOf<int8_t>() { return DType::kInt8; }
template <> constexpr DType DTypeOf<uint8_t>() { return DType::kUInt8; }
template <> constexpr DType DTypeOf<bool>() { return DType::kBool; }

// ---- IEEE binary16 ---------------------------------------------------------

inline uint32_t FloatBits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float BitsFloat(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

inline uint16_t FloatToHalf(float f) {
  uint32_t x = FloatBits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {                       // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u | ((abs >> 13) & 0x3ffu) : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {                        // result is subnormal or zero
    // Add 0.5 (as a float) so the FPU aligns the mantissa and rounds to nearest even.
    float r = BitsFloat(abs) + 0.5f;
    return static_cast<uint16_t>(sign | (FloatBits(r) - 0x3f000000u));
  }
  uint32_t mant_odd = (abs >> 13) & 1u;
  abs += 0xc8000fffu + mant_odd;                  // rebias exponent (-112 << 23) and round
  return static_cast<uint16_t>(sign | (abs >> 13));
}

inline float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return BitsFloat(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0) return BitsFloat(sign);
    float r = static_cast<float>(mant) * 5.9604644775390625e-8f;  // mant * 2^-24
    return sign ? -r : r;
  }
  return BitsFloat(sign | ((exp + 112u) << 23) | (mant << 13));
}

// ---- bfloat16 --------------------------------------------------------------

inline uint16_t FloatToBFloat16(float f) {
  uint32_t x = FloatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

inline float BFloat16ToFloat(uint16_t b) { return BitsFloat(static_cast<uint32_t>(b) << 16); }

// Largest finite fp16 value and the smallest positive subnormal.
inline constexpr float kHalfMax = 65504.0f;
inline constexpr float kHalfMinSubnormal = 5.9604644775390625e-8f;

}  // namespace amptrain::ir
