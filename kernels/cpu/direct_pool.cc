// Direct 2-D pooling over NCHW planes, impl "direct", priority 20 (above
// oneDNN 2.6, whose plain-layout pooling is its slow simple_nchw): MaxPool,
// AveragePool, GlobalAveragePool and MaxPoolGrad in fp32, fp16 and bf16;
// the forward pools and MaxPoolGrad also over channels-last X and Y (dY, X
// and dX) (TensorSpec::channels_last), per pixel across the channels with the
// same taps in the same order. One plane (n, c) per
// work item on OpenMP; a 2-byte plane is widened to fp32 in a thread-local
// buffer (a few KiB) and the result narrowed once, except on the 2x2 path
// below, which widens and narrows in registers.
//
// Every result has the bits of the reference kernels (pool.cc, grad_pool.cc):
//   max:     kernel offsets scanned row-major, a later value wins only when
//            greater, a NaN wins over a number (so the first NaN, quieted by
//            the 2-byte store); a window entirely in the padding gives -inf.
//            Comparing in fp32 is exact for fp16/bf16 values.
//   average: the taps summed in double in the same order, divided by the
//            reference's divisor (in-input taps, or with count_include_pad
//            those inside the explicit pads; never the ceil_mode overhang).
//   MaxPoolGrad: dY[o] goes to the first maximum of window o, summed per input
//            element in output order, in double where windows overlap (as the
//            reference) and in fp32 where they cannot (one term: exact).
// On AVX-512 and AVX2 CPUs, 2x2 windows at stride 2 without padding (the
// usual downsampling) take a path with the same taps in the same order, 16
// or 8 windows (channels-last: channels) at a time, and none of the general
// per-tap bookkeeping. The Indices output of MaxPool and other ranks go to
// the reference kernel.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/cpu/conv_geometry.h"
#include "kernels/cpu/cpu_info.h"
#include "kernels/cpu/direct_kernels.h"
#include "kernels/cpu/float_convert.h"
#include "kernels/cpu/lanes16.h"

namespace amptrain::kernels::cpu::direct {

namespace {

struct Geometry2d {
  int64_t planes = 0, h = 0, w = 0, oh = 0, ow = 0;
  int64_t kh = 0, kw = 0, sh = 0, sw = 0, dh = 0, dw = 0, ph = 0, pw = 0;
  // Per output column and kernel column: the valid output range [lo, hi) of
  // ow for kernel column k (input column ow * sw - pw + k * dw inside [0, w)).
  std::vector<int64_t> lo, hi;
  std::vector<double> div_h, div_w;  // AveragePool divisor factors per output row / column

  int64_t in_size() const { return h * w; }
  int64_t out_size() const { return oh * ow; }
  int64_t Row(int64_t o, int64_t k) const { return o * sh - ph + k * dh; }
  bool overlapping() const { return sh < (kh - 1) * dh + 1 || sw < (kw - 1) * dw + 1; }
};

StatusOr<Geometry2d> Resolve(const KernelInit& init, const std::vector<int64_t>& x, const std::vector<int64_t>& y,
                             bool include_pad) {
  if (x.size() != 4 || y.size() != 4) return init.Error("the direct pools take 2-D pools only");
  AMP_ASSIGN_OR_RETURN(ir::WindowGeometry g, ResolveWindow(init, {}, false));
  Geometry2d p{x[0] * x[1], x[2], x[3], y[2], y[3], g.kernel[0], g.kernel[1], g.strides[0], g.strides[1],
               g.dilations[0], g.dilations[1], g.pads_begin[0], g.pads_begin[1]};
  for (int64_t k = 0; k < p.kw; ++k) {
    const int64_t off = k * p.dw - p.pw;
    int64_t lo = off < 0 ? (-off + p.sw - 1) / p.sw : 0;
    int64_t hi = off >= p.w ? 0 : std::min(p.ow, (p.w - 1 - off) / p.sw + 1);
    p.lo.push_back(std::min(lo, p.ow));
    p.hi.push_back(std::max(hi, p.lo.back()));
  }
  // Taps per output position and dim: inside [0, in), or with
  // count_include_pad inside [-pads_begin, in + pads_end).
  auto taps = [&](int64_t out, int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe) {
    std::vector<double> count(out);
    const int64_t begin = include_pad ? -pb : 0, end = include_pad ? in + pe : in;
    for (int64_t o = 0; o < out; ++o) {
      int64_t n = 0;
      for (int64_t t = 0; t < k; ++t) n += o * s - pb + t * d >= begin && o * s - pb + t * d < end;
      count[o] = static_cast<double>(n);
    }
    return count;
  };
  p.div_h = taps(p.oh, p.h, p.kh, p.sh, p.dh, p.ph, g.pads_end[0]);
  p.div_w = taps(p.ow, p.w, p.kw, p.sw, p.dw, p.pw, g.pads_end[1]);
  return p;
}

// A later value v replaces the running maximum m (the reference's rule).
// Bitwise operators, not || and &&: no branches, so the loops vectorize.
inline bool Wins(float v, float m) { return (v > m) | ((v != v) & (m == m)); }

// Thread-local fp32 copy of one plane of T (the plane itself for float).
template <class T>
const float* Widened(const T* plane, int64_t n, std::vector<float>& buf) {
  if constexpr (std::is_same_v<T, float>) {
    return plane;
  } else {
    buf.resize(static_cast<size_t>(n));
    WidenSpan(StorageDType<T>(), plane, buf.data(), n);
    return buf.data();
  }
}

// Stores an fp32 plane into T (a copy for float).
template <class T>
void Store(const float* f, T* out, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    if (f != out) std::memcpy(out, f, static_cast<size_t>(n) * sizeof(float));
  } else {
    NarrowSpan(StorageDType<T>(), f, out, n);
  }
}

// Calls fn(row, ih, j, off) for each tap (i, j) of output row r whose input
// row ih lies in the plane, in the reference's scan order (row-major over the
// kernel); the tap reads row[c * sw + off] for output columns [lo[j], hi[j]).
template <class Fn>
void ForEachTap(const Geometry2d& p, const float* x, int64_t r, Fn&& fn) {
  for (int64_t i = 0; i < p.kh; ++i) {
    const int64_t ih = p.Row(r, i);
    if (ih < 0 || ih >= p.h) continue;
    for (int64_t j = 0; j < p.kw; ++j) fn(x + ih * p.w, ih, j, j * p.dw - p.pw);
  }
}

// Max of each window of plane x into y (fp32), with the argmax (row-major
// input offset, -1 for an all-padding window) when `arg` is set.
void MaxPlane(const Geometry2d& p, const float* x, float* y, int32_t* arg) {
  for (int64_t r = 0; r < p.oh; ++r) {
    float* m = y + r * p.ow;
    int32_t* a = arg ? arg + r * p.ow : nullptr;
    std::fill(m, m + p.ow, -std::numeric_limits<float>::infinity());
    if (a) std::fill(a, a + p.ow, -1);
    ForEachTap(p, x, r, [&](const float* row, int64_t ih, int64_t j, int64_t off) {
      if (a) {
        const int32_t base = static_cast<int32_t>(ih * p.w + off), step = static_cast<int32_t>(p.sw);
        for (int64_t c = p.lo[j]; c < p.hi[j]; ++c) {
          const float v = row[c * p.sw + off];
          const bool take = Wins(v, m[c]) | (a[c] < 0);
          m[c] = take ? v : m[c];
          a[c] = take ? base + static_cast<int32_t>(c) * step : a[c];
        }
      } else if (p.sw == 1) {
        const float* in = row + off;
        for (int64_t c = p.lo[j]; c < p.hi[j]; ++c) m[c] = Wins(in[c], m[c]) ? in[c] : m[c];
      } else {
        for (int64_t c = p.lo[j]; c < p.hi[j]; ++c) {
          const float v = row[c * p.sw + off];
          m[c] = Wins(v, m[c]) ? v : m[c];
        }
      }
    });
  }
}

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

template <class T>
AMP_POOL512 inline __m512 Load16(const T* p, __mmask16 m) {
  if constexpr (std::is_same_v<T, float>) {
    return _mm512_maskz_loadu_ps(m, p);
  } else {
    return Lanes16Avx512::Widen<T>(_mm256_maskz_loadu_epi16(m, p));
  }
}

template <class T>
AMP_POOL512 inline void Store16(T* p, __mmask16 m, __m512 v) {
  if constexpr (std::is_same_v<T, float>) {
    _mm512_mask_storeu_ps(p, m, v);
  } else {
    _mm256_mask_storeu_epi16(p, m, Lanes16Avx512::Narrow<T>(v));
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
    return _mm256_maskload_ps(p, FirstLanes8(n));
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
    _mm256_maskstore_ps(p, FirstLanes8(n), v);
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
template <class T, bool kGrad>
AMP_POOL512 void Max2x2ImageNhwc(const Geometry2d& p, int64_t channels, const T* x, const T* dy, T* y_or_dx) {
  const int64_t row = p.w * channels;
  for (int64_t r = 0; r < p.oh; ++r)
    for (int64_t oc = 0; oc < p.ow; ++oc) {
      const T* t0 = x + 2 * r * row + 2 * oc * channels;
      const T* taps[4] = {t0, t0 + channels, t0 + row, t0 + row + channels};
      for (int64_t k = 0; k < channels; k += 16) {
        const __mmask16 lanes = FirstLanes(channels - k);
        __m512 m = Load16(taps[0] + k, lanes);
        __m512i tap = _mm512_setzero_si512();
        for (int t = 1; t < 4; ++t) {
          const __m512 v = Load16(taps[t] + k, lanes);
          const __mmask16 win = Wins16(v, m);
          m = _mm512_mask_mov_ps(m, win, v);
          if constexpr (kGrad) tap = _mm512_mask_mov_epi32(tap, win, _mm512_set1_epi32(t));
        }
        if constexpr (!kGrad) {
          Store16(y_or_dx + (r * p.ow + oc) * channels + k, lanes, m);
          continue;
        }
        const __m512 g = _mm512_add_ps(_mm512_setzero_ps(), Load16(dy + (r * p.ow + oc) * channels + k, lanes));
        T* d0 = y_or_dx + 2 * r * row + 2 * oc * channels + k;
        T* dst[4] = {d0, d0 + channels, d0 + row, d0 + row + channels};
        for (int t = 0; t < 4; ++t)
          Store16(dst[t], lanes, _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(tap, _mm512_set1_epi32(t)), g));
      }
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

// The 2x2 path is AVX-512 or AVX2 code; other CPUs take MaxPlane's passes,
// which beat one window at a time (whose branches mispredict on random data).
bool Has2x2Path(const Geometry2d& p) {
#if defined(__x86_64__)
  return IsPlain2x2(p) && Cpu().vector256();
#else
  return false;
#endif
}

#if defined(__x86_64__)
bool Use512() { return Cpu().vector512() && Cpu().avx512bw && Cpu().avx512vl; }
#endif

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

void AveragePlane(const Geometry2d& p, const float* x, float* y, std::vector<double>& acc) {
  acc.resize(static_cast<size_t>(p.ow));
  for (int64_t r = 0; r < p.oh; ++r) {
    std::fill(acc.begin(), acc.end(), 0.0);
    ForEachTap(p, x, r, [&](const float* row, int64_t, int64_t j, int64_t off) {
      for (int64_t c = p.lo[j]; c < p.hi[j]; ++c) acc[c] += static_cast<double>(row[c * p.sw + off]);
    });
    for (int64_t c = 0; c < p.ow; ++c) y[r * p.ow + c] = static_cast<float>(acc[c] / (p.div_h[r] * p.div_w[c]));
  }
}

// MaxPool or AveragePool of image n of a channels-last X [N, H, W, C] into
// channels-last Y: per output pixel, the taps of MaxPlane/AveragePlane in
// their order for every channel at once, so each result has the bits of the
// plain kernel. `acc` holds C values; `in` a widened input pixel.
template <class T>
void PoolImageNhwc(const Geometry2d& p, int64_t channels, bool is_max, const T* x, T* y, std::vector<double>& acc,
                   std::vector<float>& in, std::vector<float>& out) {
  const auto c = static_cast<size_t>(channels);
  acc.resize(c);
  out.resize(c);
  for (int64_t r = 0; r < p.oh; ++r) {
    for (int64_t oc = 0; oc < p.ow; ++oc) {
      float* m = out.data();
      if (is_max) std::fill(m, m + c, -std::numeric_limits<float>::infinity());
      else std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t i = 0; i < p.kh; ++i) {
        const int64_t ih = p.Row(r, i);
        if (ih < 0 || ih >= p.h) continue;
        for (int64_t j = 0; j < p.kw; ++j) {
          if (oc < p.lo[j] || oc >= p.hi[j]) continue;
          const int64_t iw = oc * p.sw + j * p.dw - p.pw;
          const float* v = Widened(x + (ih * p.w + iw) * channels, channels, in);
          if (is_max) {
            for (size_t k = 0; k < c; ++k) m[k] = Wins(v[k], m[k]) ? v[k] : m[k];
          } else {
            for (size_t k = 0; k < c; ++k) acc[k] += static_cast<double>(v[k]);
          }
        }
      }
      if (!is_max)
        for (size_t k = 0; k < c; ++k) m[k] = static_cast<float>(acc[k] / (p.div_h[r] * p.div_w[oc]));
      Store(m, y + (r * p.ow + oc) * channels, channels);
    }
  }
}

template <class T>
class PoolKernel final : public Kernel {
 public:
  // channels > 0: X and Y are channels-last with that many channels.
  PoolKernel(Geometry2d p, bool is_max, int threads, int64_t channels = 0)
      : p_(std::move(p)), is_max_(is_max), threads_(threads), channels_(channels) {}

  Status Run(KernelContext& ctx) override {
    const T* x = ctx.inputs[0].as<const T>();
    T* y = ctx.outputs[0].as<T>();
    if (channels_ > 0) {
      const int64_t images = p_.planes / channels_;
      if (is_max_ && Has2x2Path(p_)) {
#pragma omp parallel for num_threads(threads_) schedule(static)
        for (int64_t n = 0; n < images; ++n)
          Max2x2Nhwc<T>(p_, channels_, x + n * p_.in_size() * channels_, nullptr, y + n * p_.out_size() * channels_);
        return Status::Ok();
      }
#pragma omp parallel num_threads(threads_)
      {
        std::vector<double> acc;
        std::vector<float> in, out;
#pragma omp for schedule(static)
        for (int64_t n = 0; n < images; ++n)
          PoolImageNhwc(p_, channels_, is_max_, x + n * p_.in_size() * channels_, y + n * p_.out_size() * channels_,
                        acc, in, out);
      }
      return Status::Ok();
    }
    const bool plain_2x2 = Has2x2Path(p_);
#pragma omp parallel num_threads(threads_)
    {
      std::vector<float> in, out(static_cast<size_t>(p_.out_size()));
      std::vector<double> acc;
#pragma omp for schedule(static)
      for (int64_t plane = 0; plane < p_.planes; ++plane) {
        if (is_max_ && plain_2x2) {
          Max2x2(p_, x + plane * p_.in_size(), y + plane * p_.out_size());
          continue;
        }
        const float* xp = Widened(x + plane * p_.in_size(), p_.in_size(), in);
        float* yp = std::is_same_v<T, float> ? reinterpret_cast<float*>(y + plane * p_.out_size()) : out.data();
        if (is_max_) MaxPlane(p_, xp, yp, nullptr);
        else AveragePlane(p_, xp, yp, acc);
        Store(yp, y + plane * p_.out_size(), p_.out_size());
      }
    }
    return Status::Ok();
  }

 private:
  Geometry2d p_;
  bool is_max_;
  int threads_;
  int64_t channels_;
};

// dX of one plane: dY[o] added at argmax[o], in output order, from +0.
template <class A>
void ScatterPlane(const Geometry2d& p, const float* dy, const int32_t* arg, A* acc) {
  std::fill(acc, acc + p.in_size(), A(0));
  for (int64_t o = 0; o < p.out_size(); ++o)
    if (arg[o] >= 0) acc[arg[o]] += static_cast<A>(dy[o]);
}

// MaxPoolGrad of image n of channels-last dY, X and dX ([N, H, W, C]): per
// output pixel in order, each channel's first maximum over the taps in
// MaxPlane's order, dY added there in double (`acc`, H * W * C), then every
// element rounded once: per channel, the additions and the rounding of
// ScatterPlane over a plane (which sums in double where windows overlap and
// adds one term to +0 where they cannot, the same value).
template <class T>
void MaxGradImageNhwc(const Geometry2d& p, int64_t channels, const T* x, const T* dy, T* dx, std::vector<double>& acc,
                      std::vector<float>& best, std::vector<int64_t>& arg, std::vector<float>& in) {
  const auto c = static_cast<size_t>(channels);
  acc.assign(static_cast<size_t>(p.in_size()) * c, 0.0);
  best.resize(c);
  arg.resize(c);
  for (int64_t r = 0; r < p.oh; ++r) {
    for (int64_t oc = 0; oc < p.ow; ++oc) {
      std::fill(best.begin(), best.end(), -std::numeric_limits<float>::infinity());
      std::fill(arg.begin(), arg.end(), int64_t{-1});
      for (int64_t i = 0; i < p.kh; ++i) {
        const int64_t ih = p.Row(r, i);
        if (ih < 0 || ih >= p.h) continue;
        for (int64_t j = 0; j < p.kw; ++j) {
          if (oc < p.lo[j] || oc >= p.hi[j]) continue;
          const int64_t pixel = ih * p.w + oc * p.sw + j * p.dw - p.pw;
          const float* v = Widened(x + pixel * channels, channels, in);
          for (size_t k = 0; k < c; ++k) {
            const bool take = Wins(v[k], best[k]) | (arg[k] < 0);
            best[k] = take ? v[k] : best[k];
            arg[k] = take ? pixel : arg[k];
          }
        }
      }
      const float* g = Widened(dy + (r * p.ow + oc) * channels, channels, in);
      for (size_t k = 0; k < c; ++k)
        if (arg[k] >= 0) acc[static_cast<size_t>(arg[k]) * c + k] += static_cast<double>(g[k]);
    }
  }
  in.resize(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) in[i] = static_cast<float>(acc[i]);
  Store(in.data(), dx, static_cast<int64_t>(acc.size()));
}

template <class T>
class MaxPoolGradKernel final : public Kernel {
 public:
  // channels > 0: dY, X and dX are channels-last with that many channels.
  MaxPoolGradKernel(Geometry2d p, int threads, int64_t channels = 0)
      : p_(std::move(p)), threads_(threads), channels_(channels), buffers_(static_cast<size_t>(std::max(threads, 1))) {}

  Status Run(KernelContext& ctx) override {
    if (!ctx.outputs[0].data) return Status::Ok();
    const T* dy = ctx.inputs[0].as<const T>();
    const T* x = ctx.inputs[1].as<const T>();
    T* dx = ctx.outputs[0].as<T>();
    const int64_t in_size = p_.in_size(), out_size = p_.out_size();
    if (channels_ > 0) {
      const int64_t images = p_.planes / channels_;
      if (Has2x2Path(p_)) {
#pragma omp parallel for num_threads(threads_) schedule(static)
        for (int64_t n = 0; n < images; ++n)
          Max2x2Nhwc<T>(p_, channels_, x + n * in_size * channels_, dy + n * out_size * channels_,
                        dx + n * in_size * channels_);
        return Status::Ok();
      }
#pragma omp parallel num_threads(threads_)
      {
        Buffers& b = buffers_[static_cast<size_t>(omp_get_thread_num())];
#pragma omp for schedule(static)
        for (int64_t n = 0; n < images; ++n)
          MaxGradImageNhwc(p_, channels_, x + n * in_size * channels_, dy + n * out_size * channels_,
                           dx + n * in_size * channels_, b.acc, b.best, b.arg64, b.in);
      }
      return Status::Ok();
    }
    const bool plain_2x2 = Has2x2Path(p_);
#pragma omp parallel num_threads(threads_)
    {
      Buffers& buf = buffers_[static_cast<size_t>(omp_get_thread_num())];
      std::vector<float>&xbuf = buf.in, &dybuf = buf.dy, &best = buf.best, &sum = buf.sum;
      std::vector<int32_t>& arg = buf.arg32;
      std::vector<double>& wide = buf.acc;
      best.resize(static_cast<size_t>(out_size));
      sum.resize(static_cast<size_t>(in_size));
      arg.resize(static_cast<size_t>(out_size));
      wide.resize(p_.overlapping() ? static_cast<size_t>(in_size) : 0);
#pragma omp for schedule(static)
      for (int64_t plane = 0; plane < p_.planes; ++plane) {
        T* out = dx + plane * in_size;
        if (plain_2x2) {
          Max2x2Grad(p_, x + plane * in_size, dy + plane * out_size, out);
          continue;
        }
        const float* xp = Widened(x + plane * in_size, in_size, xbuf);
        const float* g = Widened(dy + plane * out_size, out_size, dybuf);
        MaxPlane(p_, xp, best.data(), arg.data());
        if (!wide.empty()) {
          ScatterPlane(p_, g, arg.data(), wide.data());
          for (int64_t i = 0; i < in_size; ++i) sum[i] = static_cast<float>(wide[i]);
          Store(sum.data(), out, in_size);
        } else if constexpr (std::is_same_v<T, float>) {
          ScatterPlane(p_, g, arg.data(), out);
        } else {
          ScatterPlane(p_, g, arg.data(), sum.data());
          Store(sum.data(), out, in_size);
        }
      }
    }
    return Status::Ok();
  }

 private:
  // Per-thread work buffers, kept from call to call (a call allocates nothing
  // once they have their sizes).
  struct Buffers {
    std::vector<double> acc;
    std::vector<float> best, in, dy, sum;
    std::vector<int64_t> arg64;
    std::vector<int32_t> arg32;
  };
  Geometry2d p_;
  int threads_;
  int64_t channels_;
  std::vector<Buffers> buffers_;  // one per thread
};

StatusOr<std::unique_ptr<Kernel>> MakePool(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(kernels::CheckArity(init, 1, 1, 1, 1));
  if (init.outputs[0].dtype != init.inputs[0].dtype) return init.Error("Y must have X's dtype");
  const bool is_max = init.op == OpKind::kMaxPool;
  const bool include_pad = !is_max && init.attrs->Int("count_include_pad", 0) != 0;
  AMP_ASSIGN_OR_RETURN(Geometry2d p, Resolve(init, init.inputs[0].dims, init.outputs[0].dims, include_pad));
  // The executor gives X and Y one layout (KernelEntry::channels_last_together).
  const int64_t channels = init.inputs[0].channels_last ? init.inputs[0].dims[1] : 0;
  return ForDType<PoolKernel>(init.inputs[0].dtype, std::move(p), is_max, Threads(init), channels);
}

// GlobalAveragePool is the AveragePool whose window is the whole plane: its
// taps are the plane's elements in row-major order, summed in double and
// divided by H * W, the reference kernel's arithmetic (pool.cc). Y is
// [N, C, 1, 1], the same bytes in either layout.
StatusOr<std::unique_ptr<Kernel>> MakeGlobalAveragePool(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(kernels::CheckArity(init, 1, 1, 1, 1));
  const auto& x = init.inputs[0].dims;
  if (x.size() != 4) return init.Error("the direct GlobalAveragePool takes [N, C, H, W]");
  ir::Attributes window;
  window.Set("kernel_shape", std::vector<int64_t>{x[2], x[3]});
  KernelInit pool = init;  // keeps the op, so errors name the GlobalAveragePool node
  pool.attrs = &window;
  return MakePool(pool);
}

StatusOr<std::unique_ptr<Kernel>> MakeMaxPoolGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(kernels::CheckArity(init, 2, 2, 1, 1));
  const DType t = init.inputs[0].dtype;
  if (init.inputs[1].dtype != t || init.outputs[0].dtype != t) return init.Error("dY, X and dX must share a dtype");
  const auto &dy = init.inputs[0].dims, &x = init.inputs[1].dims;
  if (dy.size() != 4 || x.size() != 4 || dy[0] != x[0] || dy[1] != x[1])
    return init.Error("X must be [N, C, H, W] and dY [N, C, OH, OW]");
  KernelInit fwd = init;
  fwd.inputs = {init.inputs[1]};
  fwd.outputs = {init.inputs[0]};
  AMP_ASSIGN_OR_RETURN(Geometry2d p, Resolve(fwd, x, dy, false));
  // The executor gives dY, X and dX one layout (KernelEntry::channels_last_together).
  const bool nhwc = init.inputs[1].channels_last;
  if (init.inputs[0].channels_last != nhwc || init.outputs[0].channels_last != nhwc)
    return init.Error("dY, X and dX in different layouts");
  const int64_t channels = nhwc ? x[1] : 0;
  return ForDType<MaxPoolGradKernel>(t, std::move(p), Threads(init), channels);
}

}  // namespace

void RegisterDirectPool(Registry& r) {
  for (OpKind op : {OpKind::kMaxPool, OpKind::kAveragePool}) {
    KernelEntry e = DirectEntry(op, MakePool);
    e.channels_last_inputs = e.channels_last_outputs = 0b1;
    e.channels_last_together = true;
    r.Add(std::move(e));
  }
  KernelEntry grad = DirectEntry(OpKind::kMaxPoolGrad, MakeMaxPoolGrad);
  grad.channels_last_inputs = 0b11;  // dY, X
  grad.channels_last_outputs = 0b1;  // dX
  grad.channels_last_together = true;
  r.Add(std::move(grad));
  KernelEntry gap = DirectEntry(OpKind::kGlobalAveragePool, MakeGlobalAveragePool);
  gap.channels_last_inputs = 0b1;  // Y is [N, C, 1, 1]: the same bytes in either layout
  r.Add(std::move(gap));
}

}  // namespace amptrain::kernels::cpu::direct
