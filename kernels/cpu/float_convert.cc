#include "kernels/cpu/float_convert.h"

#include <algorithm>

#include "kernels/cpu/cpu_info.h"
#include "kernels/cpu/lanes16.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace amptrain::kernels::cpu {

namespace {

// Below this many elements a conversion stays on one thread.
constexpr int64_t kParallelMin = 1 << 15;

template <class Fn>
void Chunked(int64_t n, int threads, Fn&& fn) {
  if (n <= 0) return;  // an empty tensor (the loop's step would be 0)
  const int t = n >= kParallelMin ? std::max(threads, 1) : 1;
  if (t == 1) {  // no parallel region: libgomp makes (allocates) a team even for one thread
    fn(0, n);
    return;
  }
  const int64_t step = ((n + t - 1) / t + 15) / 16 * 16;
#pragma omp parallel for num_threads(t) schedule(static)
  for (int64_t b = 0; b < n; b += step) fn(b, std::min(n, b + step));
}

// ir::FloatToBFloat16 without the branch, so that the loop vectorizes.
inline uint16_t NarrowBf16One(float f) {
  const uint32_t x = ir::FloatBits(f);
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? (x >> 16) | 0x40u : rounded);
}

#if defined(__x86_64__)
// 256-bit versions for AVX2 CPUs (chosen at run time: the build targets only
// F16C). The same integer formulas as the scalar loops, 8 values at a time
// (Lanes16Avx2's widening and narrowing).
__attribute__((target("avx2,f16c"))) int64_t WidenBf16Avx2(const uint16_t* in, float* out, int64_t b, int64_t e) {
  int64_t i = b;
  for (; i + 8 <= e; i += 8)
    _mm256_storeu_ps(out + i, Lanes16Avx2::Widen8<BFloat16>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  return i;
}

__attribute__((target("avx2,f16c"))) int64_t NarrowBf16Avx2(const float* in, uint16_t* out, int64_t b, int64_t e) {
  int64_t i = b;
  for (; i + 8 <= e; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), Lanes16Avx2::Narrow8<BFloat16>(_mm256_loadu_ps(in + i)));
  return i;
}

// NarrowBf16Avx2 then the widening shift, in registers: the rounded (or, for
// a NaN, quieted) upper 16 bits over zeros.
__attribute__((target("avx2"))) int64_t RoundBf16Avx2(const float* in, float* out, int64_t n) {
  const __m256i bias = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1), abs_mask = _mm256_set1_epi32(0x7fffffff),
                inf = _mm256_set1_epi32(0x7f800000), quiet = _mm256_set1_epi32(0x400000),
                high = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), one);
    const __m256i rounded = _mm256_and_si256(_mm256_add_epi32(x, _mm256_add_epi32(bias, lsb)), high);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, abs_mask), inf);
    const __m256i quieted = _mm256_and_si256(_mm256_or_si256(x, quiet), high);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_blendv_epi8(rounded, quieted, nan));
  }
  return i;
}
#endif

void WidenBf16(const uint16_t* in, float* out, int64_t b, int64_t e) {
  int64_t i = b;
#if defined(__x86_64__)
  if (Cpu().avx2) i = WidenBf16Avx2(in, out, b, e);
#endif
  for (; i < e; ++i) out[i] = ir::BFloat16ToFloat(in[i]);
}

void NarrowBf16(const float* in, uint16_t* out, int64_t b, int64_t e) {
  int64_t i = b;
#if defined(__x86_64__)
  if (Cpu().avx2) i = NarrowBf16Avx2(in, out, b, e);
#endif
  for (; i < e; ++i) out[i] = NarrowBf16One(in[i]);
}

// F16C quiets a signaling NaN, ir::HalfToFloat keeps it: a block of 8 that
// holds one converts in software, so every value has ir::HalfToFloat's bits.
void WidenHalf(const uint16_t* in, float* out, int64_t b, int64_t e) {
  int64_t i = b;
#ifdef __F16C__
  const __m128i exp_quiet = _mm_set1_epi16(0x7e00), inf = _mm_set1_epi16(0x7c00), payload = _mm_set1_epi16(0x01ff);
  for (; i + 8 <= e; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    const __m128i signaling = _mm_andnot_si128(_mm_cmpeq_epi16(_mm_and_si128(h, payload), _mm_setzero_si128()),
                                               _mm_cmpeq_epi16(_mm_and_si128(h, exp_quiet), inf));
    if (_mm_movemask_epi8(signaling)) {
      for (int64_t j = i; j < i + 8; ++j) out[j] = ir::HalfToFloat(in[j]);
      continue;
    }
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < e; ++i) out[i] = ir::HalfToFloat(in[i]);
}

void NarrowHalf(const float* in, uint16_t* out, int64_t b, int64_t e) {
  int64_t i = b;
#ifdef __F16C__
  for (; i + 8 <= e; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
  for (; i < e; ++i) out[i] = ir::FloatToHalf(in[i]);
}

}  // namespace

void WidenToFloat(ir::DType src, const void* in, float* out, int64_t n, int threads) {
  const auto* p = static_cast<const uint16_t*>(in);
  if (src == ir::DType::kBFloat16)
    Chunked(n, threads, [&](int64_t b, int64_t e) { WidenBf16(p, out, b, e); });
  else
    Chunked(n, threads, [&](int64_t b, int64_t e) { WidenHalf(p, out, b, e); });
}

void NarrowFromFloat(ir::DType dst, const float* in, void* out, int64_t n, int threads) {
  auto* p = static_cast<uint16_t*>(out);
  if (dst == ir::DType::kBFloat16)
    Chunked(n, threads, [&](int64_t b, int64_t e) { NarrowBf16(in, p, b, e); });
  else
    Chunked(n, threads, [&](int64_t b, int64_t e) { NarrowHalf(in, p, b, e); });
}

void WidenSpan(ir::DType src, const void* in, float* out, int64_t n) {
  const auto* p = static_cast<const uint16_t*>(in);
  if (src == ir::DType::kBFloat16) WidenBf16(p, out, 0, n);
  else WidenHalf(p, out, 0, n);
}

void NarrowSpan(ir::DType dst, const float* in, void* out, int64_t n) {
  auto* p = static_cast<uint16_t*>(out);
  if (dst == ir::DType::kBFloat16) NarrowBf16(in, p, 0, n);
  else NarrowHalf(in, p, 0, n);
}

void RoundSpan(ir::DType dst, const float* in, float* out, int64_t n) {
  int64_t i = 0;
#if defined(__x86_64__)
  if (dst == ir::DType::kBFloat16 && Cpu().avx2) i = RoundBf16Avx2(in, out, n);
#endif
#ifdef __F16C__
  // F16C both ways in registers: the bits of NarrowHalf then WidenHalf (the
  // narrowed NaNs are quiet, so WidenHalf's software path never applies).
  if (dst == ir::DType::kFloat16)
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(in + i),
                                                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
#endif
  // The rest through a block small enough to stay in L1: narrow, then widen back.
  constexpr int64_t kBlock = 512;
  uint16_t low[kBlock];
  for (; i < n; i += kBlock) {
    const int64_t m = std::min(kBlock, n - i);
    NarrowSpan(dst, in + i, low, m);
    WidenSpan(dst, low, out + i, m);
  }
}

void RoundToFloat(ir::DType dst, const float* in, float* out, int64_t n, int threads) {
  Chunked(n, threads, [&](int64_t b, int64_t e) { RoundSpan(dst, in + b, out + b, e - b); });
}

}  // namespace amptrain::kernels::cpu
