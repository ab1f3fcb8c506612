// The direct pooling kernels' shared pieces (kernels/cpu/direct_pool.cc):
// the resolved 2-D window, the max rule, and the 2x2 stride-2 vector path
// (kernels/cpu/direct_pool_2x2.cc), compiled for AVX-512 and AVX2 from one
// source with the reference's bits.
#pragma once

#include <cstdint>
#include <vector>

namespace amptrain::kernels::cpu::direct::pool {

// A 2-D pooling window resolved against X [N, C, H, W] (planes = N * C).
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

// A later value v replaces the running maximum m (the reference's rule).
// Bitwise operators, not || and &&: no branches, so the loops vectorize.
inline bool Wins(float v, float m) { return (v > m) | ((v != v) & (m == m)); }

// The 2x2 window at stride 2 without padding or dilation, every window inside
// the plane, on a CPU with AVX2 or AVX-512 (the vector path below); other
// geometries and CPUs take the general loops.
bool Has2x2Path(const Geometry2d& p);

// Where Has2x2Path: MaxPool of one plain plane, its gradient (the uncovered
// last row and column of an odd size +0), and one channels-last image's
// MaxPool (dy == nullptr: y_or_dx is Y) or gradient. T: float, Half,
// BFloat16 (instantiated in direct_pool_2x2.cc).
template <class T>
void Max2x2(const Geometry2d& p, const T* x, T* y);
template <class T>
void Max2x2Grad(const Geometry2d& p, const T* x, const T* dy, T* dx);
template <class T>
void Max2x2Nhwc(const Geometry2d& p, int64_t channels, const T* x, const T* dy, T* y_or_dx);

}  // namespace amptrain::kernels::cpu::direct::pool
