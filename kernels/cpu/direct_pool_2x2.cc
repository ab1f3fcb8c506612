// The 2x2 stride-2 max-pooling path of the direct pools (kernels/cpu/
// direct_pool.h): 16 (AVX-512) or 8 (AVX2) windows, or channels, at a time,
// the same taps in the same order as the general loops of direct_pool.cc, so
// the same bits.
#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/cpu/cpu_info.h"
#include "kernels/cpu/direct_pool.h"
#include "kernels/cpu/element.h"
#include "kernels/cpu/lanes16.h"

namespace amptrain::kernels::cpu::direct::pool {

namespace {

// The common 2x2 window at stride 2, without padding or dilation, every
// window inside the plane (ResNet's and VGG-style downsampling): the same
// taps in the same order as MaxPlane, with no per-tap bookkeeping.
bool IsPlain2x2(const Geometry2d& p) {
  return p.kh == 2 && p.kw == 2 && p.sh == 2 && p.sw == 2 && p.dh == 1 && p.dw == 1 && p.ph == 0 && p.pw == 0 &&
         2 * p.oh <= p.h && 2 * p.ow <= p.w;
}

#if defined(__x86_64__)
// Loads of up to 16 (8) values of T as fp32 lanes, the rest zeros, and stores
// of the first n lanes rounded to T. The 2x2 paths store only values they
// loaded (maxima, a gradient or +0), so the rounding is exact; NaNs take
// the reference's quieting (NarrowSpan's formulas).
#define AMP_POOL512 __attribute__((target("avx512f,avx512bw,avx512vl")))
#define AMP_POOL256 __attribute__((target("avx2,f16c")))

AMP_POOL512 inline __mmask16 FirstLanes(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xffff) : n <= 0 ? 0 : static_cast<__mmask16>((1u << n) - 1);
}

// A full mask takes the plain load or store: on Zen 5 the masked forms ran
// these loops at about half speed even with every lane set (SimpleCNN bf16
// b32, per step: MaxPool 0.72 -> 0.32 ms, MaxPoolGrad 0.96 -> 0.61 ms from the
// taps' loads alone).
AMP_POOL512 inline __m256i LoadBits16(const void* p, __mmask16 m) {
  return m == 0xffff ? _mm256_loadu_si256(static_cast<const __m256i*>(p)) : _mm256_maskz_loadu_epi16(m, p);
}

AMP_POOL512 inline void StoreBits16(void* p, __mmask16 m, __m256i v) {
  if (m == 0xffff) _mm256_storeu_si256(static_cast<__m256i*>(p), v);
  else _mm256_mask_storeu_epi16(p, m, v);
}

template <class T>
AMP_POOL512 inline __m512 Load16(const T* p, __mmask16 m) {
  if constexpr (std::is_same_v<T, float>) {
    return m == 0xffff ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
  } else {
    return Lanes16Avx512::Widen<T>(LoadBits16(p, m));
  }
}

template <class T>
AMP_POOL512 inline void Store16(T* p, __mmask16 m, __m512 v) {
  if constexpr (std::is_same_v<T, float>) {
    if (m == 0xffff) _mm512_storeu_ps(p, v);
    else _mm512_mask_storeu_ps(p, m, v);
  } else {
    StoreBits16(p, m, Lanes16Avx512::Narrow<T>(v));
  }
}

// Wins(v, m) for 16 lanes: v > m (ordered), or v is NaN and m is not.
AMP_POOL512 inline __mmask16 Wins16(__m512 v, __m512 m) {
  return _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ) |
         (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) & _mm512_cmp_ps_mask(m, m, _CMP_ORD_Q));
}

// Up to 16 windows (n) of an output row from 2n columns of input rows r0 and
// r1 (de-interleaved into even and odd columns): their maxima and winning
// taps. Lanes past n hold zeros' results and must not be stored.
struct Windows16 {
  __m512 max;
  __m512i tap;
};

template <class T>
AMP_POOL512 inline Windows16 Max2x2x16(const T* r0, const T* r1, int64_t n) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const __mmask16 m0 = FirstLanes(2 * n), m1 = FirstLanes(2 * n - 16);
  const __m512 a0 = Load16(r0, m0), a1 = Load16(r0 + 16, m1);
  const __m512 b0 = Load16(r1, m0), b1 = Load16(r1 + 16, m1);
  const __m512 taps[4] = {_mm512_permutex2var_ps(a0, even, a1), _mm512_permutex2var_ps(a0, odd, a1),
                          _mm512_permutex2var_ps(b0, even, b1), _mm512_permutex2var_ps(b0, odd, b1)};
  Windows16 w{taps[0], _mm512_setzero_si512()};
  for (int k = 1; k < 4; ++k) {
    const __mmask16 win = Wins16(taps[k], w.max);
    w.max = _mm512_mask_mov_ps(w.max, win, taps[k]);
    w.tap = _mm512_mask_mov_epi32(w.tap, win, _mm512_set1_epi32(k));
  }
  return w;
}

// The maxima of a plane, 16 windows at a time (the same comparisons and
// selects per lane as MaxPlane; masked loads and stores at row ends).
template <class T>
AMP_POOL512 void Max2x2Plane(const Geometry2d& p, const T* x, T* y) {
  for (int64_t r = 0; r < p.oh; ++r)
    for (int64_t c = 0; c < p.ow; c += 16) {
      const int64_t n = std::min<int64_t>(16, p.ow - c);
      const Windows16 w = Max2x2x16(x + 2 * r * p.w + 2 * c, x + (2 * r + 1) * p.w + 2 * c, n);
      Store16(y + r * p.ow + c, FirstLanes(n), w.max);
    }
}

// dX of a plane: 0 + dY[o] at the first maximum of window o (the sum
// ScatterPlane forms from +0: a -0 gradient lands as +0), +0 at the other
// taps of each window.
template <class T>
AMP_POOL512 void Max2x2GradPlane(const Geometry2d& p, const T* x, const T* dy, T* dx) {
  // Lanes of the even and odd column vectors, interleaved back.
  const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  for (int64_t r = 0; r < p.oh; ++r) {
    for (int64_t c = 0; c < p.ow; c += 16) {
      const int64_t n = std::min<int64_t>(16, p.ow - c);
      const Windows16 w = Max2x2x16(x + 2 * r * p.w + 2 * c, x + (2 * r + 1) * p.w + 2 * c, n);
      const __m512 v = _mm512_add_ps(_mm512_setzero_ps(), Load16(dy + r * p.ow + c, FirstLanes(n)));
      for (int row = 0; row < 2; ++row) {
        const __m512 even = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(w.tap, _mm512_set1_epi32(2 * row)), v);
        const __m512 odd = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(w.tap, _mm512_set1_epi32(2 * row + 1)), v);
        T* d = dx + (2 * r + row) * p.w + 2 * c;
        Store16(d, FirstLanes(2 * n), _mm512_permutex2var_ps(even, lo, odd));
        Store16(d + 16, FirstLanes(2 * n - 16), _mm512_permutex2var_ps(even, hi, odd));
      }
    }
  }
}

// The same 8 windows at a time for AVX2 CPUs: de-interleaving by shuffles,
// masks as all-ones lanes, maskload/maskstore at row ends (through a
// 16-byte copy for 2-byte types, which AVX2 cannot mask).
AMP_POOL256 inline __m256i FirstLanes8(int64_t n) {
  const int k = static_cast<int>(std::clamp<int64_t>(n, 0, 8));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

template <class T>
AMP_POOL256 inline __m256 Load8(const T* p, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, FirstLanes8(n));
  } else {
    __m128i h;
    if (n >= 8) {
      h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    } else {
      alignas(16) uint16_t part[8] = {};
      if (n > 0) std::memcpy(part, p, static_cast<size_t>(n) * 2);
      h = _mm_load_si128(reinterpret_cast<const __m128i*>(part));
    }
    return Lanes16Avx2::Widen8<T>(h);
  }
}

template <class T>
AMP_POOL256 inline void Store8(T* p, int64_t n, __m256 v) {
  if constexpr (std::is_same_v<T, float>) {
    if (n >= 8) _mm256_storeu_ps(p, v);
    else _mm256_maskstore_ps(p, FirstLanes8(n), v);
  } else if (n >= 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), Lanes16Avx2::Narrow8<T>(v));
  } else if (n > 0) {
    alignas(16) uint16_t part[8];
    _mm_store_si128(reinterpret_cast<__m128i*>(part), Lanes16Avx2::Narrow8<T>(v));
    std::memcpy(p, part, static_cast<size_t>(n) * 2);
  }
}

// The even (or odd) columns of 16 consecutive floats, in order: shuffle_ps
// picks columns (0 2 8 10 | 4 6 12 14) or the odd ones, and the 64-bit
// permute orders them.
AMP_POOL256 inline __m256 Columns8(__m256 lo, __m256 hi, bool odd) {
  const __m256 sh = odd ? _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)) : _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(sh), _MM_SHUFFLE(3, 1, 2, 0)));
}

struct Windows8 {
  __m256 max;
  __m256i tap;
};

template <class T>
AMP_POOL256 inline Windows8 Max2x2x8(const T* r0, const T* r1, int64_t n) {
  const __m256 a0 = Load8(r0, 2 * n), a1 = Load8(r0 + 8, 2 * n - 8);
  const __m256 b0 = Load8(r1, 2 * n), b1 = Load8(r1 + 8, 2 * n - 8);
  const __m256 taps[4] = {Columns8(a0, a1, false), Columns8(a0, a1, true), Columns8(b0, b1, false),
                          Columns8(b0, b1, true)};
  Windows8 w{taps[0], _mm256_setzero_si256()};
  for (int k = 1; k < 4; ++k) {
    const __m256 v = taps[k];
    const __m256 win = _mm256_or_ps(_mm256_cmp_ps(v, w.max, _CMP_GT_OQ),
                                    _mm256_and_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q), _mm256_cmp_ps(w.max, w.max, _CMP_ORD_Q)));
    w.max = _mm256_blendv_ps(w.max, v, win);
    w.tap = _mm256_castps_si256(
        _mm256_blendv_ps(_mm256_castsi256_ps(w.tap), _mm256_castsi256_ps(_mm256_set1_epi32(k)), win));
  }
  return w;
}

template <class T>
AMP_POOL256 void Max2x2Plane8(const Geometry2d& p, const T* x, T* y) {
  for (int64_t r = 0; r < p.oh; ++r)
    for (int64_t c = 0; c < p.ow; c += 8) {
      const int64_t n = std::min<int64_t>(8, p.ow - c);
      const Windows8 w = Max2x2x8(x + 2 * r * p.w + 2 * c, x + (2 * r + 1) * p.w + 2 * c, n);
      Store8(y + r * p.ow + c, n, w.max);
    }
}

template <class T>
AMP_POOL256 void Max2x2GradPlane8(const Geometry2d& p, const T* x, const T* dy, T* dx) {
  for (int64_t r = 0; r < p.oh; ++r) {
    for (int64_t c = 0; c < p.ow; c += 8) {
      const int64_t n = std::min<int64_t>(8, p.ow - c);
      const Windows8 w = Max2x2x8(x + 2 * r * p.w + 2 * c, x + (2 * r + 1) * p.w + 2 * c, n);
      const __m256 v = _mm256_add_ps(_mm256_setzero_ps(), Load8(dy + r * p.ow + c, n));
      for (int row = 0; row < 2; ++row) {
        const __m256 even = _mm256_and_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(w.tap, _mm256_set1_epi32(2 * row))), v);
        const __m256 odd =
            _mm256_and_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(w.tap, _mm256_set1_epi32(2 * row + 1))), v);
        // Interleaved back: (e0 o0 e1 o1 | e4 o4 e5 o5) and (e2 o2 e3 o3 | e6 o6 e7 o7), then their halves.
        const __m256 ul = _mm256_unpacklo_ps(even, odd), uh = _mm256_unpackhi_ps(even, odd);
        T* d = dx + (2 * r + row) * p.w + 2 * c;
        Store8(d, 2 * n, _mm256_permute2f128_ps(ul, uh, 0x20));
        Store8(d + 8, 2 * n - 8, _mm256_permute2f128_ps(ul, uh, 0x31));
      }
    }
  }
}
// Channels-last images ([H, W, C]) with the 2x2 stride-2 geometry: per output
// pixel the four taps are four C-vectors, scanned in MaxPlane's order for 16
// (8) channels at a time, so each channel has the bits of the plain path.
// The gradient: 0 + dY at the winning tap, +0 at the other three (one term
// per input element: the double sum of MaxGradImageNhwc, rounded, is this).
//
// 16 channels of one output pixel: `taps` at the channel, `out` its Y (or,
// for the gradient, `dst` its four dX taps and `g` its dY).
//
// bf16 keeps the values it moves in 16 bits: the taps are widened only to be
// compared, and Y and dX are blends of the loaded bits, with what rounding
// would have done to them done directly (a NaN quieted; the gradient's
// 0 + dY turns -0 into +0): the widening path's bits at about half the
// instructions.
AMP_POOL512 inline __m256i QuietNan16(__m256i h, __m512 wide) {
  return _mm256_mask_blend_epi16(_mm512_cmp_ps_mask(wide, wide, _CMP_UNORD_Q), h,
                                 _mm256_or_si256(h, _mm256_set1_epi16(0x40)));
}

template <class T, bool kGrad>
AMP_POOL512 inline void Max2x2Channels16(const T* const taps[4], __mmask16 lanes, const T* g, T* out, T* const dst[4]) {
  constexpr bool kBits16 = std::is_same_v<T, BFloat16>;
  __m256i mh = _mm256_setzero_si256();  // kBits16: the maxima's loaded bits
  __m512 m = _mm512_setzero_ps();
  __m512i tap = _mm512_setzero_si512();
  for (int t = 0; t < 4; ++t) {
    __m256i vh = _mm256_setzero_si256();
    __m512 v;
    if constexpr (kBits16) {
      vh = LoadBits16(taps[t], lanes);
      v = Lanes16Avx512::Widen<BFloat16>(vh);
    } else {
      v = Load16(taps[t], lanes);
    }
    if (t == 0) {
      m = v, mh = vh;
      continue;
    }
    const __mmask16 win = Wins16(v, m);
    m = _mm512_mask_mov_ps(m, win, v);
    if constexpr (kBits16) mh = _mm256_mask_mov_epi16(mh, win, vh);
    if constexpr (kGrad) tap = _mm512_mask_mov_epi32(tap, win, _mm512_set1_epi32(t));
  }
  if constexpr (!kGrad) {
    if constexpr (kBits16) StoreBits16(out, lanes, QuietNan16(mh, m));
    else Store16(out, lanes, m);
  } else if constexpr (kBits16) {
    const __m256i gh = LoadBits16(g, lanes);
    __m256i gq = QuietNan16(gh, Lanes16Avx512::Widen<BFloat16>(gh));
    gq = _mm256_mask_mov_epi16(gq, _mm256_cmpeq_epi16_mask(gh, _mm256_set1_epi16(static_cast<int16_t>(0x8000))),
                               _mm256_setzero_si256());
    for (int t = 0; t < 4; ++t)
      StoreBits16(dst[t], lanes, _mm256_maskz_mov_epi16(_mm512_cmpeq_epi32_mask(tap, _mm512_set1_epi32(t)), gq));
  } else {
    const __m512 gv = _mm512_add_ps(_mm512_setzero_ps(), Load16(g, lanes));
    for (int t = 0; t < 4; ++t)
      Store16(dst[t], lanes, _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(tap, _mm512_set1_epi32(t)), gv));
  }
}

template <class T, bool kGrad>
AMP_POOL512 void Max2x2ImageNhwc(const Geometry2d& p, int64_t channels, const T* x, const T* dy, T* y_or_dx) {
  const int64_t row = p.w * channels;
  for (int64_t r = 0; r < p.oh; ++r)
    for (int64_t oc = 0; oc < p.ow; ++oc)
      for (int64_t k = 0; k < channels; k += 16) {
        const T* t0 = x + 2 * r * row + 2 * oc * channels + k;
        const T* const taps[4] = {t0, t0 + channels, t0 + row, t0 + row + channels};
        const int64_t at = (r * p.ow + oc) * channels + k;  // Y and dY
        T* dst[4] = {};
        if constexpr (kGrad) {
          T* d0 = y_or_dx + 2 * r * row + 2 * oc * channels + k;
          dst[0] = d0, dst[1] = d0 + channels, dst[2] = d0 + row, dst[3] = d0 + row + channels;
        }
        const __mmask16 lanes = FirstLanes(channels - k);
        Max2x2Channels16<T, kGrad>(taps, lanes, kGrad ? dy + at : nullptr, y_or_dx + at, dst);
      }
}

template <class T, bool kGrad>
AMP_POOL256 void Max2x2ImageNhwc8(const Geometry2d& p, int64_t channels, const T* x, const T* dy, T* y_or_dx) {
  const int64_t row = p.w * channels;
  for (int64_t r = 0; r < p.oh; ++r)
    for (int64_t oc = 0; oc < p.ow; ++oc) {
      const T* t0 = x + 2 * r * row + 2 * oc * channels;
      const T* taps[4] = {t0, t0 + channels, t0 + row, t0 + row + channels};
      for (int64_t k = 0; k < channels; k += 8) {
        const int64_t n = std::min<int64_t>(8, channels - k);
        __m256 m = Load8(taps[0] + k, n);
        __m256i tap = _mm256_setzero_si256();
        for (int t = 1; t < 4; ++t) {
          const __m256 v = Load8(taps[t] + k, n);
          const __m256 win = _mm256_or_ps(_mm256_cmp_ps(v, m, _CMP_GT_OQ),
                                          _mm256_and_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q), _mm256_cmp_ps(m, m, _CMP_ORD_Q)));
          m = _mm256_blendv_ps(m, v, win);
          if constexpr (kGrad)
            tap = _mm256_castps_si256(
                _mm256_blendv_ps(_mm256_castsi256_ps(tap), _mm256_castsi256_ps(_mm256_set1_epi32(t)), win));
        }
        if constexpr (!kGrad) {
          Store8(y_or_dx + (r * p.ow + oc) * channels + k, n, m);
          continue;
        }
        const __m256 g = _mm256_add_ps(_mm256_setzero_ps(), Load8(dy + (r * p.ow + oc) * channels + k, n));
        T* d0 = y_or_dx + 2 * r * row + 2 * oc * channels + k;
        T* dst[4] = {d0, d0 + channels, d0 + row, d0 + row + channels};
        for (int t = 0; t < 4; ++t)
          Store8(dst[t], n, _mm256_and_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(tap, _mm256_set1_epi32(t))), g));
      }
    }
}
#undef AMP_POOL512
#undef AMP_POOL256

// dX of one such plane where no window covers: the last row or column of
// an odd size, +0 (what ScatterPlane leaves there).
template <class T>
void ZeroUncovered(const Geometry2d& p, T* dx) {
  if (2 * p.ow < p.w)
    for (int64_t r = 0; r < 2 * p.oh; ++r) std::fill(dx + r * p.w + 2 * p.ow, dx + (r + 1) * p.w, T(0.0f));
  std::fill(dx + 2 * p.oh * p.w, dx + p.h * p.w, T(0.0f));
}
#endif

#if defined(__x86_64__)
bool Use512() { return Cpu().vector512() && Cpu().avx512bw && Cpu().avx512vl; }
#endif

}  // namespace

// The 2x2 path is AVX-512 or AVX2 code; other CPUs take MaxPlane's passes,
// which beat one window at a time (whose branches mispredict on random data).
bool Has2x2Path(const Geometry2d& p) {
#if defined(__x86_64__)
  return IsPlain2x2(p) && Cpu().vector256();
#else
  return false;
#endif
}


template <class T>
void Max2x2(const Geometry2d& p, const T* x, T* y) {
#if defined(__x86_64__)
  if (Use512()) Max2x2Plane(p, x, y);
  else Max2x2Plane8(p, x, y);
#endif
}

template <class T>
void Max2x2Grad(const Geometry2d& p, const T* x, const T* dy, T* dx) {
#if defined(__x86_64__)
  if (Use512()) Max2x2GradPlane(p, x, dy, dx);
  else Max2x2GradPlane8(p, x, dy, dx);
  ZeroUncovered(p, dx);
#endif
}

// One channels-last image: MaxPool (dy == nullptr: y_or_dx is Y) or its
// gradient (y_or_dx is dX, the uncovered last row and column +0).
template <class T>
void Max2x2Nhwc(const Geometry2d& p, int64_t channels, const T* x, const T* dy, T* y_or_dx) {
#if defined(__x86_64__)
  if (!dy) {
    if (Use512()) Max2x2ImageNhwc<T, false>(p, channels, x, dy, y_or_dx);
    else Max2x2ImageNhwc8<T, false>(p, channels, x, dy, y_or_dx);
    return;
  }
  if (Use512()) Max2x2ImageNhwc<T, true>(p, channels, x, dy, y_or_dx);
  else Max2x2ImageNhwc8<T, true>(p, channels, x, dy, y_or_dx);
  const int64_t row = p.w * channels;
  if (2 * p.ow < p.w)
    for (int64_t r = 0; r < 2 * p.oh; ++r)
      std::fill(y_or_dx + r * row + 2 * p.ow * channels, y_or_dx + (r + 1) * row, T(0.0f));
  std::fill(y_or_dx + 2 * p.oh * row, y_or_dx + p.h * row, T(0.0f));
#endif
}


#define AMP_POOL_INSTANTIATE(T)                                                  \
  template void Max2x2<T>(const Geometry2d&, const T*, T*);                      \
  template void Max2x2Grad<T>(const Geometry2d&, const T*, const T*, T*);        \
  template void Max2x2Nhwc<T>(const Geometry2d&, int64_t, const T*, const T*, T*);
AMP_POOL_INSTANTIATE(float)
AMP_POOL_INSTANTIATE(Half)
AMP_POOL_INSTANTIATE(BFloat16)
#undef AMP_POOL_INSTANTIATE

}  // namespace amptrain::kernels::cpu::direct::pool
