#include "kernels/cpu/float_convert.h"

#include <algorithm>

#ifdef __F16C__
#include <immintrin.h>
#endif

namespace amptrain::kernels::cpu {

namespace {

// Below this many elements a conversion stays on one thread.
constexpr int64_t kParallelMin = 1 << 15;

template <class Fn>
void Chunked(int64_t n, int threads, Fn&& fn) {
  const int t = n >= kParallelMin ? std::max(threads, 1) : 1;
  const int64_t step = ((n + t - 1) / t + 15) / 16 * 16;
#pragma omp parallel for num_threads(t) schedule(static) if (t > 1)
  for (int64_t b = 0; b < n; b += step) fn(b, std::min(n, b + step));
}

void WidenBf16(const uint16_t* in, float* out, int64_t b, int64_t e) {
  for (int64_t i = b; i < e; ++i) out[i] = ir::BFloat16ToFloat(in[i]);
}

// ir::FloatToBFloat16 without the branch, so that the loop vectorizes.
void NarrowBf16(const float* in, uint16_t* out, int64_t b, int64_t e) {
  for (int64_t i = b; i < e; ++i) {
    const uint32_t x = ir::FloatBits(in[i]);
    const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    out[i] = static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? (x >> 16) | 0x40u : rounded);
  }
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

}  // namespace amptrain::kernels::cpu
