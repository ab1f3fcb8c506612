#include "kernels/resize_taps.h"

#include <algorithm>
#include <cmath>

#include "kernels/cubic_convolution.h"

namespace amptrain::kernels {

namespace {

// antialias=1 down-sampling by `scale` < 1: the linear (triangle, half-width
// 1) or cubic (half-width 2) filter stretched by 1/scale, so that every
// source sample under it counts, as an image library shrinks an image
// (PyTorch's antialias=True, PIL). The taps are the sources j with
// |j - xo| * scale inside the half-width; weight filter((j - xo) * scale),
// normalized to sum 1 (the ONNX reference's antialias coefficients).
void AntialiasTaps(const ir::ResizeAttrs& a, double xo, double scale, ResizeTaps& t) {
  const double half = a.mode == ir::ResizeMode::kLinear ? 1.0 : 2.0;
  const int64_t first = static_cast<int64_t>(std::floor(xo - half / scale)) + 1;
  const int64_t last = static_cast<int64_t>(std::ceil(xo + half / scale)) - 1;
  double sum = 0;
  for (int64_t j = first; j <= last; ++j) {
    const double u = (static_cast<double>(j) - xo) * scale;
    const double w = a.mode == ir::ResizeMode::kLinear ? std::max(0.0, 1.0 - std::fabs(u)) : CubicConvolution(u, a.cubic_a);
    t.index.push_back(j);
    t.weight.push_back(w);
    sum += w;
  }
  if (sum != 0)
    for (double& w : t.weight) w /= sum;
}

}  // namespace

ResizeTaps ComputeResizeTaps(const ir::ResizeAttrs& a, int64_t x, int64_t in, int64_t out, double scale, double r0,
                             double r1) {
  ResizeTaps t;
  const double xo = ir::ResizeSourceCoord(a, static_cast<double>(x), in, out, scale, r0, r1);
  if (a.coord == ir::CoordMode::kTfCropAndResize && (xo < 0 || xo > static_cast<double>(in - 1))) {
    t.extrapolate = true;
    return t;
  }
  const double base = std::floor(xo);
  const double frac = xo - base;
  const int64_t b = static_cast<int64_t>(base);
  if (a.antialias && a.mode != ir::ResizeMode::kNearest && scale < 1.0) {
    AntialiasTaps(a, xo, scale, t);
  } else {
    switch (a.mode) {
    case ir::ResizeMode::kNearest: {
      bool up = false;
      if (frac > 0) {
        switch (a.nearest) {
          case ir::NearestMode::kRoundPreferFloor: up = frac > 0.5; break;
          case ir::NearestMode::kRoundPreferCeil: up = frac >= 0.5; break;
          case ir::NearestMode::kFloor: up = false; break;
          case ir::NearestMode::kCeil: up = true; break;
        }
      }
      t.index = {b + (up ? 1 : 0)};
      t.weight = {1.0};
      break;
    }
    case ir::ResizeMode::kLinear:
      t.index = {b, b + 1};
      t.weight = {1 - frac, frac};
      break;
    case ir::ResizeMode::kCubic:
      t.index = {b - 1, b, b + 1, b + 2};
      t.weight = {CubicConvolution(frac + 1, a.cubic_a), CubicConvolution(frac, a.cubic_a), CubicConvolution(1 - frac, a.cubic_a),
                  CubicConvolution(2 - frac, a.cubic_a)};
      break;
    }
  }
  if (a.exclude_outside) {
    double sum = 0;
    for (size_t i = 0; i < t.index.size(); ++i) {
      if (t.index[i] < 0 || t.index[i] >= in) t.weight[i] = 0;
      sum += t.weight[i];
    }
    if (sum != 0)
      for (double& w : t.weight) w /= sum;
  }
  for (int64_t& i : t.index) i = std::clamp<int64_t>(i, 0, in - 1);
  return t;
}

ResizeAxisTaps ResizeTapsOfAxis(const ir::ResizeAttrs& a, const ir::ResizeGeometry& g,
                                const std::vector<int64_t>& dims, size_t axis, int64_t in, int64_t out) {
  ResizeAxisTaps t;
  for (size_t d = 0; d < axis; ++d) t.outer *= dims[d];
  for (size_t d = axis + 1; d < dims.size(); ++d) t.inner *= dims[d];
  for (int64_t x = 0; x < out; ++x)
    t.taps.push_back(ComputeResizeTaps(a, x, in, out, g.scales[axis], g.roi_start[axis], g.roi_end[axis]));
  return t;
}

}  // namespace amptrain::kernels
