// The Adam, SGD and gradient-check loops of step_math.h: one scalar version
// (the formulas as written) and 512- and 256-bit versions that apply the same
// operations to 16 or 8 elements at a time, with the scalar loop for tails.
// The vector versions are written with intrinsics: GCC 12 does not vectorize
// every option combination of the scalar loops on its own.
#include "kernels/cpu/step_math.h"

#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/cpu_info.h"
#include "kernels/cpu/element.h"
#include "kernels/cpu/lanes16.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace amptrain::kernels::cpu {

namespace {

// Gradients G (float, Half, BFloat16) are read widened; L is the type of
// the parameters' low copy (Half, BFloat16), void for none.
// The scalar formulas, for CPUs without AVX2 and for the tails.
template <class G, class L>
void AdamScalar(const AdamScalars& s, float* p, const G* g, float* m, float* v, L* low, int64_t b, int64_t e) {
  for (int64_t j = b; j < e; ++j) {
    float pj = p[j];
    if (s.apply_decay) pj = pj * s.decay;
    float gj = static_cast<float>(g[j]);
    if (s.inv_scale != 1.0f) gj = gj * s.inv_scale;
    if (s.clip != 1.0f) gj = gj * s.clip;
    if (s.l2 != 0.0f) gj = gj + s.l2 * pj;
    const float mj = m[j] * s.beta1 + s.omb1 * gj;
    const float vj = v[j] * s.beta2 + s.omb2 * gj * gj;
    m[j] = mj;
    v[j] = vj;
    const float denom = std::sqrt(vj) / s.bc2_sqrt + s.eps;
    p[j] = pj + s.neg_step * mj / denom;
    if constexpr (!std::is_void_v<L>) low[j] = L(p[j]);
  }
}

void SgdScalar(const SgdScalars& s, float* p, const float* g, float* buf, int64_t b, int64_t e) {
  for (int64_t j = b; j < e; ++j) {
    float gj = g[j];
    if (s.inv_scale != 1.0f) gj = gj * s.inv_scale;
    if (s.clip != 1.0f) gj = gj * s.clip;
    float d = s.weight_decay != 0.0f ? gj + s.weight_decay * p[j] : gj;
    if (s.momentum != 0.0f) {
      const float bj = s.first ? d : buf[j] * s.momentum + d;
      buf[j] = bj;
      d = s.nesterov ? d + s.momentum * bj : bj;
    }
    p[j] = p[j] + s.neg_lr * d;
  }
}

// Sums of squares go to 16 lanes by element index mod 16, summed in lane
// order at the end: the same additions in the same order on every path.
constexpr int kLanes = 16;

template <class G>
bool GradStatsScalar(const G* g, float inv, int64_t b, int64_t e, double* lanes) {
  bool bad = false;
  for (int64_t j = b; j < e; ++j) {
    const float x = static_cast<float>(g[j]);
    const float r = inv == 1.0f ? x : x * inv;
    bad = bad || !std::isfinite(x) || !std::isfinite(r);
    lanes[j % kLanes] += static_cast<double>(r) * static_cast<double>(r);
  }
  return bad;
}

#if defined(__x86_64__)
// Whether any lane of |bits| maxima is inf or NaN.
__attribute__((target("avx2"))) bool AnyNonFinite(__m256i worst) {
  uint32_t w[8];
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(w), worst);
  bool bad = false;
  for (uint32_t x : w) bad = bad || x >= 0x7f800000u;
  return bad;
}

// _mm512_sqrt_ps and _mm512_cvtps_pd through their zero-masked forms with
// every lane on: the same instructions, without GCC 12's false
// "may be used uninitialized" warnings about the unmasked forms.
__attribute__((target("avx512f"))) inline __m512 Sqrt512(__m512 x) {
  return _mm512_maskz_sqrt_ps(static_cast<__mmask16>(0xffff), x);
}
__attribute__((target("avx512f"))) inline __m512d Widen512(__m256 x) {
  return _mm512_maskz_cvtps_pd(static_cast<__mmask8>(0xff), x);
}

template <class G, class L>
__attribute__((target("avx512f"))) int64_t AdamAvx512(const AdamScalars& s, float* p, const G* g, float* m, float* v,
                                                      L* low, int64_t n) {
  const __m512 decay = _mm512_set1_ps(s.decay), inv = _mm512_set1_ps(s.inv_scale), clip = _mm512_set1_ps(s.clip),
               l2 = _mm512_set1_ps(s.l2), b1 = _mm512_set1_ps(s.beta1), b2 = _mm512_set1_ps(s.beta2),
               omb1 = _mm512_set1_ps(s.omb1), omb2 = _mm512_set1_ps(s.omb2), bc2 = _mm512_set1_ps(s.bc2_sqrt),
               eps = _mm512_set1_ps(s.eps), step = _mm512_set1_ps(s.neg_step);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    __m512 pj = _mm512_loadu_ps(p + j);
    if (s.apply_decay) pj = _mm512_mul_ps(pj, decay);
    __m512 gj = Lanes16Avx512::Load<G>(g + j);
    if (s.inv_scale != 1.0f) gj = _mm512_mul_ps(gj, inv);
    if (s.clip != 1.0f) gj = _mm512_mul_ps(gj, clip);
    if (s.l2 != 0.0f) gj = _mm512_add_ps(gj, _mm512_mul_ps(l2, pj));
    const __m512 mj = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(m + j), b1), _mm512_mul_ps(omb1, gj));
    const __m512 vj =
        _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(v + j), b2), _mm512_mul_ps(_mm512_mul_ps(omb2, gj), gj));
    _mm512_storeu_ps(m + j, mj);
    _mm512_storeu_ps(v + j, vj);
    const __m512 denom = _mm512_add_ps(_mm512_div_ps(Sqrt512(vj), bc2), eps);
    const __m512 updated = _mm512_add_ps(pj, _mm512_div_ps(_mm512_mul_ps(step, mj), denom));
    _mm512_storeu_ps(p + j, updated);
    if constexpr (!std::is_void_v<L>) Lanes16Avx512::Store<L>(low + j, updated);
  }
  return j;
}

template <class G, class L>
__attribute__((target("avx2,f16c"))) int64_t AdamAvx2(const AdamScalars& s, float* p, const G* g, float* m, float* v,
                                                      L* low, int64_t n) {
  const __m256 decay = _mm256_set1_ps(s.decay), inv = _mm256_set1_ps(s.inv_scale), clip = _mm256_set1_ps(s.clip),
               l2 = _mm256_set1_ps(s.l2), b1 = _mm256_set1_ps(s.beta1), b2 = _mm256_set1_ps(s.beta2),
               omb1 = _mm256_set1_ps(s.omb1), omb2 = _mm256_set1_ps(s.omb2), bc2 = _mm256_set1_ps(s.bc2_sqrt),
               eps = _mm256_set1_ps(s.eps), step = _mm256_set1_ps(s.neg_step);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 pj = _mm256_loadu_ps(p + j);
    if (s.apply_decay) pj = _mm256_mul_ps(pj, decay);
    __m256 gj = Lanes16Avx2::Load8(g + j);
    if (s.inv_scale != 1.0f) gj = _mm256_mul_ps(gj, inv);
    if (s.clip != 1.0f) gj = _mm256_mul_ps(gj, clip);
    if (s.l2 != 0.0f) gj = _mm256_add_ps(gj, _mm256_mul_ps(l2, pj));
    const __m256 mj = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(m + j), b1), _mm256_mul_ps(omb1, gj));
    const __m256 vj =
        _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(v + j), b2), _mm256_mul_ps(_mm256_mul_ps(omb2, gj), gj));
    _mm256_storeu_ps(m + j, mj);
    _mm256_storeu_ps(v + j, vj);
    const __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vj), bc2), eps);
    const __m256 updated = _mm256_add_ps(pj, _mm256_div_ps(_mm256_mul_ps(step, mj), denom));
    _mm256_storeu_ps(p + j, updated);
    if constexpr (!std::is_void_v<L>) Lanes16Avx2::Store8(low + j, updated);
  }
  return j;
}

__attribute__((target("avx512f"))) int64_t SgdAvx512(const SgdScalars& s, float* p, const float* g, float* buf,
                                                     int64_t n) {
  const __m512 inv = _mm512_set1_ps(s.inv_scale), clip = _mm512_set1_ps(s.clip), wd = _mm512_set1_ps(s.weight_decay),
               mom = _mm512_set1_ps(s.momentum), lr = _mm512_set1_ps(s.neg_lr);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512 pj = _mm512_loadu_ps(p + j);
    __m512 d = _mm512_loadu_ps(g + j);
    if (s.inv_scale != 1.0f) d = _mm512_mul_ps(d, inv);
    if (s.clip != 1.0f) d = _mm512_mul_ps(d, clip);
    if (s.weight_decay != 0.0f) d = _mm512_add_ps(d, _mm512_mul_ps(wd, pj));
    if (s.momentum != 0.0f) {
      const __m512 b = s.first ? d : _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(buf + j), mom), d);
      _mm512_storeu_ps(buf + j, b);
      d = s.nesterov ? _mm512_add_ps(d, _mm512_mul_ps(mom, b)) : b;
    }
    _mm512_storeu_ps(p + j, _mm512_add_ps(pj, _mm512_mul_ps(lr, d)));
  }
  return j;
}

__attribute__((target("avx2"))) int64_t SgdAvx2(const SgdScalars& s, float* p, const float* g, float* buf, int64_t n) {
  const __m256 inv = _mm256_set1_ps(s.inv_scale), clip = _mm256_set1_ps(s.clip), wd = _mm256_set1_ps(s.weight_decay),
               mom = _mm256_set1_ps(s.momentum), lr = _mm256_set1_ps(s.neg_lr);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 pj = _mm256_loadu_ps(p + j);
    __m256 d = _mm256_loadu_ps(g + j);
    if (s.inv_scale != 1.0f) d = _mm256_mul_ps(d, inv);
    if (s.clip != 1.0f) d = _mm256_mul_ps(d, clip);
    if (s.weight_decay != 0.0f) d = _mm256_add_ps(d, _mm256_mul_ps(wd, pj));
    if (s.momentum != 0.0f) {
      const __m256 b = s.first ? d : _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(buf + j), mom), d);
      _mm256_storeu_ps(buf + j, b);
      d = s.nesterov ? _mm256_add_ps(d, _mm256_mul_ps(mom, b)) : b;
    }
    _mm256_storeu_ps(p + j, _mm256_add_ps(pj, _mm256_mul_ps(lr, d)));
  }
  return j;
}

// Lanes 0-7 in acc0, 8-15 in acc1; the largest |bits| of g and g*inv (at or
// above 0x7f800000: inf or NaN) decides *bad. Each half of 8 floats widens
// to 8 doubles.
template <class G>
__attribute__((target("avx512f"))) int64_t GradStatsAvx512(const G* g, float inv, int64_t n, double* lanes,
                                                           bool* bad) {
  const __m256 vinv = _mm256_set1_ps(inv);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  __m256i worst = _mm256_setzero_si256();
  __m512d acc0 = _mm512_loadu_pd(lanes), acc1 = _mm512_loadu_pd(lanes + 8);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m256 x0 = Lanes16Avx2::Load8(g + j), x1 = Lanes16Avx2::Load8(g + j + 8);
    const __m256 r0 = inv == 1.0f ? x0 : _mm256_mul_ps(x0, vinv), r1 = inv == 1.0f ? x1 : _mm256_mul_ps(x1, vinv);
    worst = _mm256_max_epu32(worst, _mm256_and_si256(_mm256_castps_si256(x0), abs_mask));
    worst = _mm256_max_epu32(worst, _mm256_and_si256(_mm256_castps_si256(x1), abs_mask));
    worst = _mm256_max_epu32(worst, _mm256_and_si256(_mm256_castps_si256(r0), abs_mask));
    worst = _mm256_max_epu32(worst, _mm256_and_si256(_mm256_castps_si256(r1), abs_mask));
    const __m512d lo = Widen512(r0), hi = Widen512(r1);
    acc0 = _mm512_add_pd(acc0, _mm512_mul_pd(lo, lo));
    acc1 = _mm512_add_pd(acc1, _mm512_mul_pd(hi, hi));
  }
  _mm512_storeu_pd(lanes, acc0);
  _mm512_storeu_pd(lanes + 8, acc1);
  *bad = AnyNonFinite(worst);
  return j;
}

template <class G>
__attribute__((target("avx2,f16c"))) int64_t GradStatsAvx2(const G* g, float inv, int64_t n, double* lanes,
                                                          bool* bad) {
  const __m256 vinv = _mm256_set1_ps(inv);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  __m256i worst = _mm256_setzero_si256();
  __m256d acc[4];
  for (int k = 0; k < 4; ++k) acc[k] = _mm256_loadu_pd(lanes + 4 * k);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    for (int k = 0; k < 2; ++k) {
      const __m256 x = Lanes16Avx2::Load8(g + j + 8 * k);
      const __m256 r = inv == 1.0f ? x : _mm256_mul_ps(x, vinv);
      worst = _mm256_max_epu32(worst, _mm256_and_si256(_mm256_castps_si256(x), abs_mask));
      worst = _mm256_max_epu32(worst, _mm256_and_si256(_mm256_castps_si256(r), abs_mask));
      const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(r));
      const __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(r, 1));
      acc[2 * k] = _mm256_add_pd(acc[2 * k], _mm256_mul_pd(lo, lo));
      acc[2 * k + 1] = _mm256_add_pd(acc[2 * k + 1], _mm256_mul_pd(hi, hi));
    }
  }
  for (int k = 0; k < 4; ++k) _mm256_storeu_pd(lanes + 4 * k, acc[k]);
  *bad = AnyNonFinite(worst);
  return j;
}
#endif

template <class G, class L>
void AdamLoop(const AdamScalars& s, float* p, const G* g, float* m, float* v, L* low, int64_t n) {
  int64_t j = 0;
#if defined(__x86_64__)
  if (Cpu().vector512()) j = AdamAvx512(s, p, g, m, v, low, n);
  else if (Cpu().vector256()) j = AdamAvx2(s, p, g, m, v, low, n);
#endif
  AdamScalar(s, p, g, m, v, low, j, n);
}

template <class G>
GradStats GradStatsLoop(const G* g, float inv_scale, int64_t n) {
  double lanes[kLanes] = {};
  bool bad = false;
  int64_t j = 0;
#if defined(__x86_64__)
  if (Cpu().vector512()) j = GradStatsAvx512(g, inv_scale, n, lanes, &bad);
  else if (Cpu().vector256()) j = GradStatsAvx2(g, inv_scale, n, lanes, &bad);
#endif
  bad = GradStatsScalar(g, inv_scale, j, n, lanes) || bad;
  GradStats r;
  r.nonfinite = bad;
  for (double lane : lanes) r.sum_squares += lane;
  return r;
}

// Calls fn(Tag<T>) for T the kernel type of fp32, fp16 or bf16.
template <class Fn>
void WithFloatType(DType t, Fn&& fn) {
  switch (t) {
    case DType::kFloat16: return fn(Tag<Half>{});
    case DType::kBFloat16: return fn(Tag<BFloat16>{});
    default: return fn(Tag<float>{});
  }
}

}  // namespace

void AdamSpan(const AdamScalars& s, float* p, const float* g, float* m, float* v, int64_t n) {
  AdamLoop(s, p, g, m, v, static_cast<void*>(nullptr), n);
}

void AdamSpan(const AdamScalars& s, float* p, const void* g, DType g_dtype, float* m, float* v, void* low,
              DType low_dtype, int64_t n) {
  WithFloatType(g_dtype, [&](auto gt) {
    using G = typename decltype(gt)::type;
    const G* gp = static_cast<const G*>(g);
    if (!low) return AdamLoop(s, p, gp, m, v, static_cast<void*>(nullptr), n);
    WithFloatType(low_dtype, [&](auto lt) {
      using L = typename decltype(lt)::type;
      if constexpr (!std::is_same_v<L, float>) AdamLoop(s, p, gp, m, v, static_cast<L*>(low), n);
    });
  });
}

void SgdSpan(const SgdScalars& s, float* p, const float* g, float* buf, int64_t n) {
  int64_t j = 0;
#if defined(__x86_64__)
  if (Cpu().vector512()) j = SgdAvx512(s, p, g, buf, n);
  else if (Cpu().vector256()) j = SgdAvx2(s, p, g, buf, n);
#endif
  SgdScalar(s, p, g, buf, j, n);
}

GradStats GradStatsSpan(const float* g, float inv_scale, int64_t n) { return GradStatsLoop(g, inv_scale, n); }

GradStats GradStatsSpan(const void* g, DType dtype, float inv_scale, int64_t n) {
  GradStats r;
  WithFloatType(dtype, [&](auto t) { r = GradStatsLoop(static_cast<const typename decltype(t)::type*>(g), inv_scale, n); });
  return r;
}

}  // namespace amptrain::kernels::cpu
