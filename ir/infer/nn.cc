// Shape/dtype rules of convolution, pooling, batch normalization and Dropout.
// Layout is always channels-first: X [N, C, D1, ..., Dk]. Window geometry
// (pads, auto_pad, ceil_mode, dilations) lives in ir/infer/conv_geometry.h.
// Symbolic N propagates; a symbolic spatial dim stays the same symbol where
// the window keeps sizes (stride 1 with SAME padding or a 1-extent window
// without pads) and becomes unknown otherwise.
#include "ir/infer/conv_geometry.h"
#include "ir/infer/infer_util.h"

namespace amptrain::ir {

namespace {

Status RequireFloat(const InferContext& ctx, size_t i) {
  if (!IsFloat(ctx.inputs[i].dtype))
    return ctx.Error("input ", i, " has dtype ", DTypeName(ctx.inputs[i].dtype), ", expected a float type");
  return Status::Ok();
}

Status RequireSameDType(const InferContext& ctx, size_t a, size_t b) {
  if (ctx.inputs[a].dtype != ctx.inputs[b].dtype)
    return ctx.Error("inputs ", a, " and ", b, " have different dtypes (", DTypeName(ctx.inputs[a].dtype), " vs ",
                     DTypeName(ctx.inputs[b].dtype), ")");
  return Status::Ok();
}

// X must be [N, C, spatial...] with at least one spatial dim.
Status RequireImage(const InferContext& ctx, size_t i) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, i));
  if (ctx.inputs[i].shape.rank() < 3)
    return ctx.Error("input ", i, " has shape ", ctx.inputs[i].shape.ToString(), ", expected [N, C, spatial...]");
  return Status::Ok();
}

// A 1-D input of length `channels` (when both are known).
Status RequireVector(const InferContext& ctx, size_t i, const Dim& channels, const char* what) {
  if (!ctx.has_input(i) || !ctx.inputs[i].has_shape) return Status::Ok();
  const Shape& s = ctx.inputs[i].shape;
  if (s.rank() != 1) return ctx.Error(what, " has shape ", s.ToString(), ", expected [", channels.value, "]");
  if (s[0].is_static() && channels.is_static() && s[0].value != channels.value)
    return ctx.Error(what, " has ", s[0].value, " elements, expected ", channels.value);
  return Status::Ok();
}

// Output spatial dims of a window op over input X's spatial dims.
StatusOr<std::vector<Dim>> WindowOutput(const InferContext& ctx, WindowGeometry& g, const Shape& x, bool transposed) {
  std::vector<int64_t> in;
  for (size_t d = 2; d < x.rank(); ++d) in.push_back(x[d].is_static() ? x[d].value : g.extent(d - 2));
  auto out = transposed ? g.ResolveTransposed(in) : g.Resolve(in);
  if (!out.ok()) return ctx.Error(out.status().message());
  std::vector<Dim> dims;
  for (size_t d = 0; d < in.size(); ++d) {
    const Dim& xd = x[d + 2];
    if (xd.is_static() || (transposed && !g.output_shape.empty())) {
      dims.push_back(Dim::Static((*out)[d]));
      continue;
    }
    bool same = g.auto_pad == AutoPad::kSameUpper || g.auto_pad == AutoPad::kSameLower;
    bool keeps = !transposed && g.strides[d] == 1 &&
                 (same || (g.extent(d) - 1 == g.pads_begin[d] + g.pads_end[d] && g.auto_pad == AutoPad::kNotSet));
    dims.push_back(keeps ? xd : UnknownDim());
  }
  return dims;
}

StatusOr<WindowGeometry> Decode(const InferContext& ctx, size_t rank, const std::vector<int64_t>& kernel,
                                bool transposed) {
  auto g = DecodeWindow(*ctx.attrs, rank, kernel, transposed);
  if (!g.ok()) return ctx.Error(g.status().message());
  return g;
}

// Conv and ConvTranspose. W is [M, C/group, k...] (Conv) or [C, M/group, k...]
// (ConvTranspose); output [N, M, out...].
Status InferConvLike(InferContext& ctx, bool transposed) {
  AMP_RETURN_IF_ERROR(RequireImage(ctx, 0));
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 1));
  AMP_RETURN_IF_ERROR(RequireFloat(ctx, 0));
  AMP_RETURN_IF_ERROR(RequireSameDType(ctx, 0, 1));
  const Shape& x = ctx.inputs[0].shape;
  const Shape& w = ctx.inputs[1].shape;
  if (w.rank() != x.rank())
    return ctx.Error("weight shape ", w.ToString(), " has rank ", w.rank(), ", input ", x.ToString(), " has rank ",
                     x.rank());
  AMP_ASSIGN_OR_RETURN(int64_t group, ctx.attrs->GetInt("group", 1));
  if (group < 1) return ctx.Error("group ", group, " must be positive");
  std::vector<int64_t> kernel;
  for (size_t d = 2; d < w.rank(); ++d) {
    if (!w[d].is_static()) return ctx.Error("weight shape ", w.ToString(), " has a symbolic kernel dim");
    kernel.push_back(w[d].value);
  }
  const Dim& c = x[1];
  Dim m = UnknownDim();
  if (!transposed) {
    m = w[0];
    if (m.is_static() && m.value % group != 0)
      return ctx.Error("weight has ", m.value, " output channels, not divisible by group ", group);
    if (c.is_static() && w[1].is_static() && c.value != w[1].value * group)
      return ctx.Error("input has ", c.value, " channels but weight ", w.ToString(), " with group ", group, " expects ",
                       w[1].value * group);
  } else {
    if (w[1].is_static()) m = Dim::Static(w[1].value * group);
    if (c.is_static() && w[0].is_static() && c.value != w[0].value)
      return ctx.Error("input has ", c.value, " channels but weight ", w.ToString(), " expects ", w[0].value);
    if (c.is_static() && c.value % group != 0)
      return ctx.Error("input channels ", c.value, " not divisible by group ", group);
  }
  if (ctx.has_input(2)) {
    AMP_RETURN_IF_ERROR(RequireSameDType(ctx, 0, 2));
    AMP_RETURN_IF_ERROR(RequireVector(ctx, 2, m, "bias"));
  }
  AMP_ASSIGN_OR_RETURN(WindowGeometry g, Decode(ctx, x.rank() - 2, kernel, transposed));
  AMP_ASSIGN_OR_RETURN(std::vector<Dim> spatial, WindowOutput(ctx, g, x, transposed));
  std::vector<Dim> out{x[0], m};
  out.insert(out.end(), spatial.begin(), spatial.end());
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::move(out)));
  return Status::Ok();
}

// MaxPool also takes int8/uint8 (opset 12+).
Status InferPool(InferContext& ctx, bool allow_int8) {
  AMP_RETURN_IF_ERROR(RequireImage(ctx, 0));
  DType t = ctx.inputs[0].dtype;
  if (!(allow_int8 && (t == DType::kInt8 || t == DType::kUInt8))) AMP_RETURN_IF_ERROR(RequireFloat(ctx, 0));
  const Shape& x = ctx.inputs[0].shape;
  AMP_ASSIGN_OR_RETURN(WindowGeometry g, Decode(ctx, x.rank() - 2, {}, false));
  AMP_ASSIGN_OR_RETURN(std::vector<Dim> spatial, WindowOutput(ctx, g, x, false));
  std::vector<Dim> out{x[0], x[1]};
  out.insert(out.end(), spatial.begin(), spatial.end());
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(out));
  if (ctx.outputs.size() > 1) ctx.outputs[1] = TensorType::Of(DType::kInt64, Shape(out));
  return Status::Ok();
}

}  // namespace

Status InferConv(InferContext& ctx) { return InferConvLike(ctx, false); }
Status InferConvTranspose(InferContext& ctx) { return InferConvLike(ctx, true); }

Status InferMaxPool(InferContext& ctx) {
  AMP_ASSIGN_OR_RETURN(int64_t order, ctx.attrs->GetInt("storage_order", 0));
  if (order != 0 && order != 1) return ctx.Error("storage_order ", order, " must be 0 or 1");
  return InferPool(ctx, true);
}

Status InferAveragePool(InferContext& ctx) { return InferPool(ctx, false); }

// LpPool (lowered at import, importer/lower_nn.cc): the pool's window
// geometry and output, and p >= 1.
Status InferLpPool(InferContext& ctx) {
  AMP_ASSIGN_OR_RETURN(int64_t p, ctx.attrs->GetInt("p", 2));
  if (p < 1) return ctx.Error("p is ", p, ", expected >= 1");
  return InferPool(ctx, false);
}

Status InferGlobalAveragePool(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireImage(ctx, 0));
  AMP_RETURN_IF_ERROR(RequireFloat(ctx, 0));
  Shape out = ctx.inputs[0].shape;
  for (size_t d = 2; d < out.rank(); ++d) out[d] = Dim::Static(1);
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, out);
  return Status::Ok();
}

// Inputs X [N, C, ...], scale, B, input_mean, input_var (all [C]). Outputs Y
// like X and, in training mode, running_mean/running_var like input_mean.
Status InferBatchNormalization(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  AMP_RETURN_IF_ERROR(RequireFloat(ctx, 0));
  const Shape& x = ctx.inputs[0].shape;
  if (x.rank() < 2) return ctx.Error("input shape ", x.ToString(), " has rank < 2, expected [N, C, ...]");
  if (ctx.outputs.size() > 3)
    return ctx.Error(ctx.outputs.size(), " outputs; the canonical form has Y and optionally running_mean, running_var");
  if (ctx.outputs.size() == 2) return ctx.Error("2 outputs; training mode has 3 (Y, running_mean, running_var)");
  const char* names[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i < 5; ++i) {
    if (!ctx.has_input(i)) return ctx.Error("missing input ", names[i]);
    AMP_RETURN_IF_ERROR(RequireFloat(ctx, i));
    AMP_RETURN_IF_ERROR(RequireVector(ctx, i, x[1], names[i]));
  }
  AMP_RETURN_IF_ERROR(RequireSameDType(ctx, 1, 2));
  AMP_RETURN_IF_ERROR(RequireSameDType(ctx, 3, 4));
  SameAs(ctx, 0, 0);
  for (size_t i = 1; i < ctx.outputs.size(); ++i) ctx.outputs[i] = TensorType::Of(ctx.inputs[3].dtype, Shape({x[1]}));
  return Status::Ok();
}

// Inputs data, optional ratio (float scalar), optional training_mode (bool
// scalar); outputs output like data and optional mask (bool, data's shape).
Status InferDropout(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireFloat(ctx, 0));
  for (size_t i = 1; i < 3; ++i) {
    if (!ctx.has_input(i) || !ctx.inputs[i].has_shape) continue;
    int64_t n = ctx.inputs[i].shape.num_elements();
    if (n != 1 && n != -1)
      return ctx.Error("input ", i, " has shape ", ctx.inputs[i].shape.ToString(), ", expected a scalar");
  }
  if (ctx.has_input(1)) AMP_RETURN_IF_ERROR(RequireFloat(ctx, 1));
  if (ctx.has_input(2) && ctx.inputs[2].dtype != DType::kBool)
    return ctx.Error("training_mode has dtype ", DTypeName(ctx.inputs[2].dtype), ", expected bool");
  if (const Tensor* r = ctx.value(1)) {
    double ratio = r->GetAsDouble(0);
    if (!(ratio >= 0.0 && ratio < 1.0)) return ctx.Error("ratio ", ratio, " is outside [0, 1)");
  }
  SameAs(ctx, 0, 0);
  if (ctx.outputs.size() > 1) {
    ctx.outputs[1] = ctx.inputs[0];
    ctx.outputs[1].dtype = DType::kBool;
  }
  return Status::Ok();
}

}  // namespace amptrain::ir

namespace amptrain::ir {

namespace {

// GridSample's attributes.
Status CheckGridSampleAttrs(const InferContext& ctx) {
  AMP_ASSIGN_OR_RETURN(std::string mode, ctx.attrs->GetString("mode", ctx.opset >= 20 ? "linear" : "bilinear"));
  AMP_ASSIGN_OR_RETURN(std::string padding, ctx.attrs->GetString("padding_mode", "zeros"));
  AMP_RETURN_IF_ERROR(ctx.attrs->GetInt("align_corners", 0).status());
  if (mode != "bilinear" && mode != "linear" && mode != "nearest" && mode != "bicubic" && mode != "cubic")
    return ctx.Error("attribute mode is '", mode, "', expected bilinear, linear, nearest, bicubic or cubic");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    return ctx.Error("attribute padding_mode is '", padding, "', expected zeros, border or reflection");
  return Status::Ok();
}

}  // namespace

// GridSample(X [N, C, H, W], grid [N, Ho, Wo, 2]) -> [N, C, Ho, Wo]. Only two
// spatial dims (opset 20's volumetric form is refused by name).
Status InferGridSample(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(CheckGridSampleAttrs(ctx));
  AMP_RETURN_IF_ERROR(RequireFloat(ctx, 0));
  AMP_RETURN_IF_ERROR(RequireSameDType(ctx, 0, 1));
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 1));
  const Shape &x = ctx.inputs[0].shape, &grid = ctx.inputs[1].shape;
  if (x.rank() != 4)
    return Unimplemented(ctx.node ? ctx.node->Describe() : std::string("GridSample"), ": input of rank ", x.rank(),
                         "; only 4-D input (two spatial dims) is implemented");
  if (grid.rank() != 4 || (grid[3].is_static() && grid[3].value != 2))
    return ctx.Error("grid has shape ", grid.ToString(), ", expected [N, H_out, W_out, 2]");
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::vector<Dim>{x[0], x[1], grid[1], grid[2]}));
  return Status::Ok();
}

// AffineGrid(theta [N, 2, 3], size = [N, C, H, W]) -> grid [N, H, W, 2].
Status InferAffineGrid(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireFloat(ctx, 0));
  AMP_RETURN_IF_ERROR(ctx.attrs->GetInt("align_corners", 0).status());
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  const Shape& theta = ctx.inputs[0].shape;
  if (theta.rank() == 3 && theta[1].is_static() && theta[1].value == 3)
    return Unimplemented(ctx.node ? ctx.node->Describe() : std::string("AffineGrid"),
                         ": 3-D grids (theta [N, 3, 4]) are not implemented");
  if (theta.rank() != 3 || (theta[1].is_static() && theta[1].value != 2) || (theta[2].is_static() && theta[2].value != 3))
    return ctx.Error("theta has shape ", theta.ToString(), ", expected [N, 2, 3]");
  if (ctx.inputs[1].dtype != DType::kInt64) return ctx.Error("size must be int64, got ", DTypeName(ctx.inputs[1].dtype));
  Dim h = UnknownDim(), w = UnknownDim();
  if (const Tensor* v = ctx.value(1)) {
    std::vector<int64_t> size = v->ToInt64Vector();
    if (size.size() != 4) return ctx.Error("size has ", size.size(), " values, expected 4 (N, C, H, W)");
    if (size[2] <= 0 || size[3] <= 0) return ctx.Error("size has a non-positive H or W");
    h = Dim::Static(size[2]);
    w = Dim::Static(size[3]);
  }
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::vector<Dim>{theta[0], h, w, Dim::Static(2)}));
  return Status::Ok();
}

}  // namespace amptrain::ir
