#include "ir/infer/conv_geometry.h"

#include <algorithm>

#include "ir/tensor.h"

namespace amptrain::ir {

namespace {

int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

StatusOr<std::vector<int64_t>> SpatialInts(const Attributes& attrs, const std::string& name, size_t n, int64_t def,
                                           int64_t min) {
  AMP_ASSIGN_OR_RETURN(std::vector<int64_t> v, attrs.GetInts(name, std::vector<int64_t>(n, def)));
  if (v.size() != n) return InvalidArgument("attribute '", name, "' has ", v.size(), " values, expected ", n);
  for (int64_t x : v)
    if (x < min) return InvalidArgument("attribute '", name, "' has value ", x, " (minimum ", min, ")");
  return v;
}

}  // namespace

StatusOr<WindowGeometry> DecodeWindow(const Attributes& attrs, size_t rank, const std::vector<int64_t>& kernel,
                                      bool transposed) {
  WindowGeometry g;
  AMP_ASSIGN_OR_RETURN(std::string ap, attrs.GetString("auto_pad", "NOTSET"));
  if (ap == "NOTSET")
    g.auto_pad = AutoPad::kNotSet;
  else if (ap == "SAME_UPPER")
    g.auto_pad = AutoPad::kSameUpper;
  else if (ap == "SAME_LOWER")
    g.auto_pad = AutoPad::kSameLower;
  else if (ap == "VALID")
    g.auto_pad = AutoPad::kValid;
  else
    return InvalidArgument("unknown auto_pad '", ap, "'");
  AMP_ASSIGN_OR_RETURN(int64_t ceil_mode, attrs.GetInt("ceil_mode", 0));
  g.ceil_mode = ceil_mode != 0;

  if (attrs.Has("kernel_shape")) {
    AMP_ASSIGN_OR_RETURN(g.kernel, SpatialInts(attrs, "kernel_shape", rank, 1, 1));
    if (!kernel.empty() && g.kernel != kernel)
      return InvalidArgument("kernel_shape attribute does not match the weight's spatial dims");
  } else if (kernel.empty()) {
    return InvalidArgument("missing required attribute 'kernel_shape'");
  } else {
    g.kernel = kernel;
  }
  if (g.kernel.size() != rank) return InvalidArgument("kernel rank ", g.kernel.size(), " != spatial rank ", rank);
  for (int64_t k : g.kernel)
    if (k < 1) return InvalidArgument("kernel size ", k, " must be positive");
  AMP_ASSIGN_OR_RETURN(g.strides, SpatialInts(attrs, "strides", rank, 1, 1));
  AMP_ASSIGN_OR_RETURN(g.dilations, SpatialInts(attrs, "dilations", rank, 1, 1));
  g.explicit_pads = attrs.Has("pads");
  AMP_ASSIGN_OR_RETURN(std::vector<int64_t> pads, SpatialInts(attrs, "pads", 2 * rank, 0, 0));
  g.pads_begin.assign(pads.begin(), pads.begin() + rank);
  g.pads_end.assign(pads.begin() + rank, pads.end());
  if (transposed) {
    AMP_ASSIGN_OR_RETURN(g.output_padding, SpatialInts(attrs, "output_padding", rank, 0, 0));
    if (attrs.Has("output_shape")) {
      AMP_ASSIGN_OR_RETURN(g.output_shape, attrs.GetInts("output_shape"));
      // output_shape may include N and C; keep the spatial part.
      if (g.output_shape.size() == rank + 2) g.output_shape.erase(g.output_shape.begin(), g.output_shape.begin() + 2);
      if (g.output_shape.size() != rank)
        return InvalidArgument("attribute 'output_shape' has ", g.output_shape.size(), " values, expected ", rank);
    }
  }
  return g;
}

StatusOr<std::vector<int64_t>> WindowGeometry::Resolve(const std::vector<int64_t>& in) {
  if (in.size() != rank()) return InvalidArgument("input has ", in.size(), " spatial dims, kernel has ", rank());
  std::vector<int64_t> out(rank());
  for (size_t d = 0; d < rank(); ++d) {
    int64_t s = strides[d], dk = extent(d);
    if (auto_pad == AutoPad::kSameUpper || auto_pad == AutoPad::kSameLower) {
      out[d] = (in[d] + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (out[d] - 1) * s + dk - in[d]);
      int64_t small = total / 2;
      pads_begin[d] = auto_pad == AutoPad::kSameUpper ? small : total - small;
      pads_end[d] = total - pads_begin[d];
      continue;
    }
    if (auto_pad == AutoPad::kValid) pads_begin[d] = pads_end[d] = 0;
    int64_t span = in[d] + pads_begin[d] + pads_end[d] - dk;
    // ceil_mode takes a window that overhangs the end, even one wider than
    // the whole padded input (one output: ceil(span / s) = 0 for -s < span <
    // 0). PyTorch's AvgPool2d(k, ceil_mode=True) over a smaller map does so
    // (Hugging Face EfficientNet's pooler, k = 1280).
    if (span < 0 && !(ceil_mode && span > -s))
      return InvalidArgument("window of extent ", dk, " does not fit spatial dim ", d, " of size ", in[d],
                             " with pads ", pads_begin[d], "+", pads_end[d]);
    out[d] = (ceil_mode ? (span >= 0 ? (span + s - 1) / s : 0) : span / s) + 1;
    if (ceil_mode && (out[d] - 1) * s >= in[d] + pads_begin[d]) --out[d];
  }
  return out;
}

StatusOr<std::vector<int64_t>> WindowGeometry::ResolveTransposed(const std::vector<int64_t>& in) {
  if (in.size() != rank()) return InvalidArgument("input has ", in.size(), " spatial dims, kernel has ", rank());
  std::vector<int64_t> out(rank());
  bool same = auto_pad == AutoPad::kSameUpper || auto_pad == AutoPad::kSameLower;
  for (size_t d = 0; d < rank(); ++d) {
    int64_t full = strides[d] * (in[d] - 1) + output_padding[d] + extent(d);
    if (auto_pad == AutoPad::kValid) pads_begin[d] = pads_end[d] = 0;
    if (!output_shape.empty() || same) {
      out[d] = output_shape.empty() ? in[d] * strides[d] : output_shape[d];
      if (!explicit_pads || same) {
        int64_t total = full - out[d];
        int64_t half = FloorDiv(total, 2);
        pads_begin[d] = auto_pad == AutoPad::kSameUpper ? half : total - half;
        pads_end[d] = total - pads_begin[d];
      }
    } else {
      out[d] = full - pads_begin[d] - pads_end[d];
    }
    if (out[d] < 1) return InvalidArgument("ConvTranspose output spatial dim ", d, " would be ", out[d]);
  }
  return out;
}

StatusOr<Col2ImGeometry> DecodeCol2Im(const Attributes& attrs, const Tensor* image_shape, const Tensor* block_shape) {
  if (!image_shape || !block_shape)
    return InvalidArgument("image_shape and block_shape must be constants (their values decide the output shape)");
  if (image_shape->dims().size() != 1 || block_shape->dims().size() != 1 ||
      image_shape->num_elements() != block_shape->num_elements() || image_shape->num_elements() < 1)
    return InvalidArgument("image_shape (", image_shape->num_elements(), " values) and block_shape (",
                           block_shape->num_elements(), ") must be 1-D of one length, the spatial rank");
  Col2ImGeometry g;
  g.image = image_shape->ToInt64Vector();
  std::vector<int64_t> block = block_shape->ToInt64Vector();
  for (int64_t v : g.image)
    if (v < 1) return InvalidArgument("image_shape has a size ", v, ", expected >= 1");
  for (int64_t v : block) {
    if (v < 1) return InvalidArgument("block_shape has a size ", v, ", expected >= 1");
    if (__builtin_mul_overflow(g.block_elements, v, &g.block_elements))
      return InvalidArgument("block_shape's product overflows");
  }
  if (attrs.Has("auto_pad") || attrs.Has("kernel_shape") || attrs.Has("ceil_mode"))
    return InvalidArgument("Col2Im takes only dilations, pads and strides as attributes");
  AMP_ASSIGN_OR_RETURN(g.window, DecodeWindow(attrs, block.size(), block));
  AMP_ASSIGN_OR_RETURN(g.counts, g.window.Resolve(g.image));
  for (int64_t c : g.counts)
    if (__builtin_mul_overflow(g.positions, c, &g.positions)) return InvalidArgument("the block count overflows");
  return g;
}

}  // namespace amptrain::ir
