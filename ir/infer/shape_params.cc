#include "ir/infer/shape_params.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/infer/infer_util.h"

namespace amptrain::ir {

namespace {

StatusOr<std::vector<int64_t>> NormalizeAxes(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    AMP_ASSIGN_OR_RETURN(int64_t n, NormalizeAxis(a, rank));
    if (seen[static_cast<size_t>(n)]) return InvalidArgument("axis ", a, " is repeated");
    seen[static_cast<size_t>(n)] = true;
    out.push_back(n);
  }
  return out;
}

std::vector<int64_t> AllAxes(int64_t rank) {
  std::vector<int64_t> a(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) a[static_cast<size_t>(i)] = i;
  return a;
}

// An output dim computed in double (already floored or rounded): an error
// where it does not fit an int64 (a scale of 1e38, inf).
StatusOr<int64_t> ResizedDim(double v) {
  if (!(v >= 0.0 && v < 4.6e18)) return InvalidArgument("Resize gives an output dim of ", v, ", out of range");
  return static_cast<int64_t>(v);
}

}  // namespace

StatusOr<std::vector<SliceAxis>> ResolveSlice(const std::vector<int64_t>& dims, const std::vector<int64_t>& starts,
                                              const std::vector<int64_t>& ends, const std::vector<int64_t>& axes_in,
                                              const std::vector<int64_t>& steps) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (starts.size() != ends.size()) return InvalidArgument("starts has ", starts.size(), " values, ends ", ends.size());
  if (!axes_in.empty() && axes_in.size() != starts.size())
    return InvalidArgument("axes has ", axes_in.size(), " values, starts ", starts.size());
  if (!steps.empty() && steps.size() != starts.size())
    return InvalidArgument("steps has ", steps.size(), " values, starts ", starts.size());
  if (axes_in.empty() && static_cast<int64_t>(starts.size()) > rank)
    return InvalidArgument("starts has ", starts.size(), " values for rank ", rank);
  AMP_ASSIGN_OR_RETURN(std::vector<int64_t> axes, NormalizeAxes(axes_in.empty() ? AllAxes(static_cast<int64_t>(starts.size())) : axes_in, rank));
  std::vector<SliceAxis> out(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) out[i] = SliceAxis{0, 1, dims[i], true};
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t step = steps.empty() ? 1 : steps[k];
    if (step == 0) return InvalidArgument("slice step is 0");
    step = std::max(step, -kMax);
    SliceAxis& s = out[static_cast<size_t>(axes[k])];
    const int64_t dim = dims[static_cast<size_t>(axes[k])];
    s.step = step;
    s.identity = false;
    if (dim < 0) {
      s.identity = step == 1 && starts[k] == 0 && ends[k] >= kMax / 2;
      s.count = -1;
      continue;
    }
    int64_t b = starts[k] < 0 ? starts[k] + dim : starts[k];
    int64_t e = ends[k] < 0 ? ends[k] + dim : ends[k];
    if (dim == 0) {
      s.start = 0;
      s.count = 0;
    } else if (step > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      s.start = b;
      s.count = e > b ? (e - b - 1) / step + 1 : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      s.start = b;
      s.count = b > e ? (b - e - 1) / -step + 1 : 0;
    }
  }
  return out;
}

StatusOr<std::vector<int64_t>> EqualSplitSizes(int64_t dim, int64_t n) {
  if (n <= 0) return InvalidArgument("cannot split into ", n, " outputs");
  int64_t chunk = (dim + n - 1) / n;
  int64_t last = dim - chunk * (n - 1);
  if (last < 0) return InvalidArgument("dim ", dim, " cannot be split into ", n, " parts");
  std::vector<int64_t> sizes(static_cast<size_t>(n), chunk);
  sizes.back() = last;
  return sizes;
}

StatusOr<PadMode> ParsePadMode(const std::string& mode) {
  if (mode == "constant") return PadMode::kConstant;
  if (mode == "reflect") return PadMode::kReflect;
  if (mode == "edge") return PadMode::kEdge;
  if (mode == "wrap") return PadMode::kWrap;
  return Unimplemented("pad mode '", mode, "' is not supported (constant, reflect, edge, wrap)");
}

Status ResolvePads(int64_t rank, const std::vector<int64_t>& pads, const std::vector<int64_t>& axes_in,
                   std::vector<int64_t>* begin, std::vector<int64_t>* end) {
  AMP_ASSIGN_OR_RETURN(std::vector<int64_t> axes, NormalizeAxes(axes_in.empty() ? AllAxes(rank) : axes_in, rank));
  if (pads.size() != 2 * axes.size())
    return InvalidArgument("pads has ", pads.size(), " values, expected 2 * ", axes.size());
  begin->assign(static_cast<size_t>(rank), 0);
  end->assign(static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    (*begin)[static_cast<size_t>(axes[i])] = pads[i];
    (*end)[static_cast<size_t>(axes[i])] = pads[i + axes.size()];
  }
  return Status::Ok();
}

StatusOr<ResizeAttrs> ParseResizeAttrs(const Attributes& attrs) {
  ResizeAttrs a;
  AMP_ASSIGN_OR_RETURN(int64_t antialias, attrs.GetInt("antialias", 0));
  if (antialias != 0 && antialias != 1) return InvalidArgument("Resize antialias must be 0 or 1, got ", antialias);
  a.antialias = antialias == 1;
  AMP_ASSIGN_OR_RETURN(std::string mode, attrs.GetString("mode", "nearest"));
  if (mode == "nearest") a.mode = ResizeMode::kNearest;
  else if (mode == "linear") a.mode = ResizeMode::kLinear;
  else if (mode == "cubic") a.mode = ResizeMode::kCubic;
  else return Unimplemented("Resize mode '", mode, "' is not supported");
  AMP_ASSIGN_OR_RETURN(std::string nm, attrs.GetString("nearest_mode", "round_prefer_floor"));
  if (nm == "round_prefer_floor") a.nearest = NearestMode::kRoundPreferFloor;
  else if (nm == "round_prefer_ceil") a.nearest = NearestMode::kRoundPreferCeil;
  else if (nm == "floor") a.nearest = NearestMode::kFloor;
  else if (nm == "ceil") a.nearest = NearestMode::kCeil;
  else return Unimplemented("Resize nearest_mode '", nm, "' is not supported");
  AMP_ASSIGN_OR_RETURN(std::string cm, attrs.GetString("coordinate_transformation_mode", "half_pixel"));
  if (cm == "half_pixel") a.coord = CoordMode::kHalfPixel;
  else if (cm == "half_pixel_symmetric") a.coord = CoordMode::kHalfPixelSymmetric;
  else if (cm == "asymmetric") a.coord = CoordMode::kAsymmetric;
  else if (cm == "align_corners") a.coord = CoordMode::kAlignCorners;
  else if (cm == "pytorch_half_pixel") a.coord = CoordMode::kPytorchHalfPixel;
  else if (cm == "tf_crop_and_resize") a.coord = CoordMode::kTfCropAndResize;
  else return Unimplemented("Resize coordinate_transformation_mode '", cm, "' is not supported");
  AMP_ASSIGN_OR_RETURN(std::string kp, attrs.GetString("keep_aspect_ratio_policy", "stretch"));
  if (kp == "stretch") a.aspect = AspectPolicy::kStretch;
  else if (kp == "not_larger") a.aspect = AspectPolicy::kNotLarger;
  else if (kp == "not_smaller") a.aspect = AspectPolicy::kNotSmaller;
  else return Unimplemented("Resize keep_aspect_ratio_policy '", kp, "' is not supported");
  AMP_ASSIGN_OR_RETURN(float ca, attrs.GetFloat("cubic_coeff_a", -0.75f));
  AMP_ASSIGN_OR_RETURN(int64_t ex, attrs.GetInt("exclude_outside", 0));
  AMP_ASSIGN_OR_RETURN(float ev, attrs.GetFloat("extrapolation_value", 0.0f));
  AMP_ASSIGN_OR_RETURN(a.axes, attrs.GetInts("axes", {}));
  a.cubic_a = ca;
  a.exclude_outside = ex != 0;
  a.extrapolation_value = ev;
  return a;
}

StatusOr<ResizeGeometry> ResolveResize(const ResizeAttrs& a, const std::vector<int64_t>& in_dims,
                                       const std::vector<double>& roi, const std::vector<double>& scales,
                                       const std::vector<int64_t>& sizes) {
  const int64_t rank = static_cast<int64_t>(in_dims.size());
  AMP_ASSIGN_OR_RETURN(std::vector<int64_t> axes, NormalizeAxes(a.axes.empty() ? AllAxes(rank) : a.axes, rank));
  const size_t n = axes.size();
  ResizeGeometry g{in_dims, std::vector<double>(in_dims.size(), 1.0), std::vector<double>(in_dims.size(), 0.0),
                   std::vector<double>(in_dims.size(), 1.0)};
  if (!sizes.empty() && !scales.empty()) return InvalidArgument("Resize takes scales or sizes, not both");
  if (!sizes.empty()) {
    if (sizes.size() != n) return InvalidArgument("sizes has ", sizes.size(), " values, expected ", n);
    for (size_t i = 0; i < n; ++i) {
      size_t d = static_cast<size_t>(axes[i]);
      if (sizes[i] < 0) return InvalidArgument("sizes has a negative value ", sizes[i]);
      g.out_dims[d] = sizes[i];
      g.scales[d] = in_dims[d] > 0 ? static_cast<double>(sizes[i]) / static_cast<double>(in_dims[d]) : 1.0;
    }
    if (a.aspect != AspectPolicy::kStretch) {
      double s = g.scales[static_cast<size_t>(axes[0])];
      for (int64_t d : axes)
        s = a.aspect == AspectPolicy::kNotLarger ? std::min(s, g.scales[static_cast<size_t>(d)])
                                                 : std::max(s, g.scales[static_cast<size_t>(d)]);
      for (int64_t d : axes) {
        size_t u = static_cast<size_t>(d);
        g.scales[u] = s;
        if (in_dims[u] < 0) {
          g.out_dims[u] = -1;
        } else {
          AMP_ASSIGN_OR_RETURN(g.out_dims[u], ResizedDim(s * static_cast<double>(in_dims[u]) + 0.5));
        }
      }
    }
  } else if (!scales.empty()) {
    if (scales.size() != n) return InvalidArgument("scales has ", scales.size(), " values, expected ", n);
    for (size_t i = 0; i < n; ++i) {
      size_t d = static_cast<size_t>(axes[i]);
      if (!(scales[i] > 0)) return InvalidArgument("scales has a non-positive value ", scales[i]);
      g.scales[d] = scales[i];
      if (in_dims[d] < 0) {
        g.out_dims[d] = -1;
      } else {
        AMP_ASSIGN_OR_RETURN(g.out_dims[d], ResizedDim(std::floor(static_cast<double>(in_dims[d]) * scales[i])));
      }
    }
  } else {
    return InvalidArgument("Resize needs a scales or a sizes input");
  }
  if (a.coord == CoordMode::kTfCropAndResize) {
    if (roi.size() != 2 * n) return InvalidArgument("roi has ", roi.size(), " values, expected ", 2 * n);
    for (size_t i = 0; i < n; ++i) {
      g.roi_start[static_cast<size_t>(axes[i])] = roi[i];
      g.roi_end[static_cast<size_t>(axes[i])] = roi[i + n];
    }
  }
  return g;
}

double ResizeSourceCoord(const ResizeAttrs& a, double x, int64_t in, int64_t out, double scale, double roi_start,
                         double roi_end) {
  const double in_w = static_cast<double>(in);
  const double out_w = scale * in_w;  // the ONNX reference uses the unrounded width
  switch (a.coord) {
    case CoordMode::kAlignCorners: return out_w == 1.0 ? 0.0 : x * (in_w - 1) / (out_w - 1);
    case CoordMode::kAsymmetric: return x / scale;
    case CoordMode::kTfCropAndResize: {
      double span = (roi_end - roi_start) * (in_w - 1);
      return (out_w == 1.0 ? span / 2 : x * span / (out_w - 1)) + roi_start * (in_w - 1);
    }
    case CoordMode::kPytorchHalfPixel: return out_w == 1.0 ? -0.5 : (x + 0.5) / scale - 0.5;
    case CoordMode::kHalfPixel: return (x + 0.5) / scale - 0.5;
    case CoordMode::kHalfPixelSymmetric: {
      double adjustment = static_cast<double>(out) / out_w;
      double offset = in_w / 2 * (1 - adjustment);
      return offset + (x + 0.5) / scale - 0.5;
    }
  }
  return 0.0;
}

}  // namespace amptrain::ir
