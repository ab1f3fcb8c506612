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

void NarrowBf16(const float* in, uint16_t* out, int64_t b, int64_t e) {
  for (int64_t i = b; i < e; ++i) out[i] = ir::FloatToBFloat16(in[i]);
}

void WidenHalf(const uint16_t* in, float* out, int64_t b, int64_t e) {
  int64_t i = b;
#ifdef __F16C__
  for (; i + 8 <= e; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
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

}  // namespace amptrain::kernels::cpu
