// Sixteen fp32 lanes on three instruction sets, for loops that must give the
// same bits on every CPU. A loop is written once over a lane type V and
// compiled per ISA (kernels/cpu/batchnorm_lanes.inc shows how); every V
// offers the same operations with the same IEEE result in each lane:
//
//   V::F                      sixteen fp32 values
//   V::Zero(), V::Set1(f)
//   V::Add, V::Sub, V::Mul    one IEEE operation per lane (no fused multiply-add)
//   V::Load<T>(p)             16 values of T (float, Half, BFloat16) widened exactly
//   V::Store<T>(p, v)         16 values rounded to T, to nearest even, as
//                             NarrowSpan and the Half/BFloat16 constructors
//   V::Spill(v, out)          the lanes into float out[16], lane 0 first
//
// The vector types also widen and narrow registers of 2-byte values
// (Lanes16Avx512::Widen/Narrow, Lanes16Avx2::Widen8/Narrow8), for loops with
// masked or shuffled memory access of their own (direct_pool.cc), and
// Lanes16Avx2 loads and stores 8 lanes (Load8/Store8, step_math.cc).
//
//   Lanes16Avx512   one 512-bit register (AVX-512F)
//   Lanes16Avx2     two 256-bit registers (AVX2, F16C)
//   Lanes16Scalar   float[16], for CPUs with neither
//
// One exception to "the same bits": a signaling-NaN Half loads quieted on
// the vector types (F16C) and unquieted on the scalar one. NaN stays NaN.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/element.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace amptrain::kernels::cpu {

struct Lanes16Scalar {
  struct F {
    float v[16];
  };
  static F Zero() { return Set1(0.0f); }
  static F Set1(float f) {
    F r;
    for (float& x : r.v) x = f;
    return r;
  }
  static F Add(F a, F b) {
    for (int j = 0; j < 16; ++j) a.v[j] = a.v[j] + b.v[j];
    return a;
  }
  static F Sub(F a, F b) {
    for (int j = 0; j < 16; ++j) a.v[j] = a.v[j] - b.v[j];
    return a;
  }
  static F Mul(F a, F b) {
    for (int j = 0; j < 16; ++j) a.v[j] = a.v[j] * b.v[j];
    return a;
  }
  template <class T>
  static F Load(const T* p) {
    F r;
    for (int j = 0; j < 16; ++j) r.v[j] = static_cast<float>(p[j]);
    return r;
  }
  template <class T>
  static void Store(T* p, F v) {
    for (int j = 0; j < 16; ++j) p[j] = T(v.v[j]);
  }
  static void Spill(F v, float* out) { std::memcpy(out, v.v, sizeof(v.v)); }
};

#if defined(__x86_64__)
#define AMP_LANES_AVX2 __attribute__((target("avx2,f16c"), always_inline)) static inline
struct Lanes16Avx2 {
  struct F {
    __m256 lo, hi;
  };
  AMP_LANES_AVX2 F Zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  AMP_LANES_AVX2 F Set1(float f) { return {_mm256_set1_ps(f), _mm256_set1_ps(f)}; }
  AMP_LANES_AVX2 F Add(F a, F b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
  AMP_LANES_AVX2 F Sub(F a, F b) { return {_mm256_sub_ps(a.lo, b.lo), _mm256_sub_ps(a.hi, b.hi)}; }
  AMP_LANES_AVX2 F Mul(F a, F b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
  template <class T>
  AMP_LANES_AVX2 F Load(const T* p) {
    return {Load8(p), Load8(p + 8)};
  }
  template <class T>
  AMP_LANES_AVX2 void Store(T* p, F v) {
    Store8(p, v.lo);
    Store8(p + 8, v.hi);
  }
  AMP_LANES_AVX2 void Spill(F v, float* out) {
    _mm256_storeu_ps(out, v.lo);
    _mm256_storeu_ps(out + 8, v.hi);
  }

  // 8 values of a 2-byte T in 128 bits, widened; 8 lanes rounded to T.
  template <class T>
  AMP_LANES_AVX2 __m256 Widen8(__m128i h) {
    if constexpr (std::is_same_v<T, Half>) return _mm256_cvtph_ps(h);
    else return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  template <class T>
  AMP_LANES_AVX2 __m128i Narrow8(__m256 v) {
    if constexpr (std::is_same_v<T, Half>) {
      return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    } else {
      // ir::FloatToBFloat16: x + 0x7fff + lsb, upper half; a NaN quieted.
      const __m256i x = _mm256_castps_si256(v);
      const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
      const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb)), 16);
      const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
      const __m256i quieted = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
      const __m256i r = _mm256_blendv_epi8(rounded, quieted, nan);
      return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0b1000));
    }
  }

  // 8 values of T at p, widened exactly; 8 lanes stored as T, rounded.
  template <class T>
  AMP_LANES_AVX2 __m256 Load8(const T* p) {
    if constexpr (std::is_same_v<T, float>) return _mm256_loadu_ps(p);
    else return Widen8<T>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  template <class T>
  AMP_LANES_AVX2 void Store8(T* p, __m256 v) {
    if constexpr (std::is_same_v<T, float>) _mm256_storeu_ps(p, v);
    else _mm_storeu_si128(reinterpret_cast<__m128i*>(p), Narrow8<T>(v));
  }
};
#undef AMP_LANES_AVX2

// The integer conversions and shifts take their masked-to-zero forms under an
// all-ones mask: the same instructions, without GCC 12's false
// "may be used uninitialized" on the unmasked forms' undefined pass-through.
#define AMP_LANES_AVX512 __attribute__((target("avx512f"), always_inline)) static inline
struct Lanes16Avx512 {
  using F = __m512;
  static constexpr __mmask16 kAll = 0xffff;
  AMP_LANES_AVX512 F Zero() { return _mm512_setzero_ps(); }
  AMP_LANES_AVX512 F Set1(float f) { return _mm512_set1_ps(f); }
  AMP_LANES_AVX512 F Add(F a, F b) { return _mm512_add_ps(a, b); }
  AMP_LANES_AVX512 F Sub(F a, F b) { return _mm512_sub_ps(a, b); }
  AMP_LANES_AVX512 F Mul(F a, F b) { return _mm512_mul_ps(a, b); }
  template <class T>
  AMP_LANES_AVX512 F Load(const T* p) {
    if constexpr (std::is_same_v<T, float>) return _mm512_loadu_ps(p);
    else return Widen<T>(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  template <class T>
  AMP_LANES_AVX512 void Store(T* p, F v) {
    if constexpr (std::is_same_v<T, float>) _mm512_storeu_ps(p, v);
    else _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), Narrow<T>(v));
  }
  // 16 values of a 2-byte T in 256 bits, widened; 16 lanes rounded to T.
  template <class T>
  AMP_LANES_AVX512 F Widen(__m256i h) {
    if constexpr (std::is_same_v<T, Half>) return _mm512_maskz_cvtph_ps(kAll, h);
    else return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll, _mm512_maskz_cvtepu16_epi32(kAll, h), 16));
  }
  template <class T>
  AMP_LANES_AVX512 __m256i Narrow(F v) {
    if constexpr (std::is_same_v<T, Half>) {
      return _mm512_maskz_cvtps_ph(kAll, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    } else {
      const __m512i x = _mm512_castps_si512(v);
      const __m512i high = _mm512_maskz_srli_epi32(kAll, x, 16);
      const __m512i lsb = _mm512_and_si512(high, _mm512_set1_epi32(1));
      const __m512i rounded = _mm512_maskz_srli_epi32(kAll, _mm512_add_epi32(x, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb)), 16);
      const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
      const __m512i quieted = _mm512_or_si512(high, _mm512_set1_epi32(0x40));
      return _mm512_maskz_cvtepi32_epi16(kAll, _mm512_mask_blend_epi32(nan, rounded, quieted));
    }
  }
  AMP_LANES_AVX512 void Spill(F v, float* out) { _mm512_storeu_ps(out, v); }
};
#undef AMP_LANES_AVX512
#endif

}  // namespace amptrain::kernels::cpu
