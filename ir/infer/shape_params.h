// ONNX index arithmetic of the data-movement ops, shared by the shape rules
// (ir/infer/shape.cc, resize_pad.cc) and the CPU kernels, so that the dims a
// rule infers and the elements a kernel writes cannot disagree.
//
// Dims are int64 with -1 for "unknown" (a symbolic dim); results are -1 where
// they depend on an unknown dim.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/attribute.h"
#include "ir/status.h"

namespace amptrain::ir {

// ---- Slice ------------------------------------------------------------------
// One axis of a slice: output element k reads input index start + k * step.
struct SliceAxis {
  int64_t start = 0, step = 1, count = -1;  // count -1: unknown
  bool identity = false;  // the whole dim in order (kept even when unknown)
};
// Resolves starts/ends/axes/steps (axes, steps may be empty = defaults) for an
// input of `dims`: negative indices count from the end, out-of-range values
// clamp (INT64_MAX ends mean "to the end"), steps may be negative, zero is an
// error, repeated axes are an error. Returns one SliceAxis per input dim.
StatusOr<std::vector<SliceAxis>> ResolveSlice(const std::vector<int64_t>& dims, const std::vector<int64_t>& starts,
                                              const std::vector<int64_t>& ends, const std::vector<int64_t>& axes,
                                              const std::vector<int64_t>& steps);

// ---- Split ------------------------------------------------------------------
// Sizes of `n` outputs splitting `dim` without a split input: ceil(dim / n)
// each, the last one takes the remainder (opset 18 rule; equal for opset < 18
// whenever dim divides). Fails when the last part would be negative.
StatusOr<std::vector<int64_t>> EqualSplitSizes(int64_t dim, int64_t n);

// ---- Pad ----------------------------------------------------------------------
enum class PadMode { kConstant, kReflect, kEdge, kWrap };
StatusOr<PadMode> ParsePadMode(const std::string& mode);
// pads = [x1_begin, x2_begin, ..., x1_end, x2_end, ...] over `axes` (all dims
// when empty, negatives allowed). Fills begin/end per dim of a rank-`rank`
// input. Negative pads crop.
Status ResolvePads(int64_t rank, const std::vector<int64_t>& pads, const std::vector<int64_t>& axes,
                   std::vector<int64_t>* begin, std::vector<int64_t>* end);

// ---- Resize -------------------------------------------------------------------
enum class ResizeMode { kNearest, kLinear, kCubic };
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
enum class CoordMode { kHalfPixel, kHalfPixelSymmetric, kAsymmetric, kAlignCorners, kPytorchHalfPixel, kTfCropAndResize };
enum class AspectPolicy { kStretch, kNotLarger, kNotSmaller };

struct ResizeAttrs {
  ResizeMode mode = ResizeMode::kNearest;
  NearestMode nearest = NearestMode::kRoundPreferFloor;
  CoordMode coord = CoordMode::kHalfPixel;
  AspectPolicy aspect = AspectPolicy::kStretch;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  // antialias=1: linear and cubic down-sampling (scale < 1) widen the filter
  // by 1/scale (kernels/resize_taps.h); nearest and up-sampling ignore it.
  bool antialias = false;
  double extrapolation_value = 0.0;
  std::vector<int64_t> axes;  // empty: all
};
// Decodes and validates the attributes.
StatusOr<ResizeAttrs> ParseResizeAttrs(const Attributes& attrs);

// Per-dim geometry: output size, the scale used for coordinate mapping, and
// the roi (start, end) used by tf_crop_and_resize.
struct ResizeGeometry {
  std::vector<int64_t> out_dims;
  std::vector<double> scales;
  std::vector<double> roi_start, roi_end;
};
// From exactly one of `scales` / `sizes` (the other empty); `roi` may be empty.
// Sizes give scale = size / in (then keep_aspect_ratio_policy); scales give
// out = floor(in * scale).
StatusOr<ResizeGeometry> ResolveResize(const ResizeAttrs& a, const std::vector<int64_t>& in_dims,
                                       const std::vector<double>& roi, const std::vector<double>& scales,
                                       const std::vector<int64_t>& sizes);
// Source coordinate of output index x along one dim (before clamping).
double ResizeSourceCoord(const ResizeAttrs& a, double x, int64_t in, int64_t out, double scale, double roi_start,
                         double roi_end);

}  // namespace amptrain::ir
