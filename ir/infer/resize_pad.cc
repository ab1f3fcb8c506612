// Shape/dtype rules of Pad and Resize. Their parameters (pads, scales,
// sizes) are inputs: with unknown values the rank is kept and dims are
// unknown. The index arithmetic is shared with the kernels (shape_params.h).
#include <algorithm>

#include "ir/graph.h"
#include "ir/infer/shape_params.h"
#include "ir/infer/value_util.h"

namespace amptrain::ir {

namespace {

// The output of PadGrad and ResizeGrad(dY, x_shape, ...): dY's float dtype,
// x_shape's value as dims (unknown dims of dY's rank while it is not known).
Status GradOfShapeInput(InferContext& ctx) {
  if (!IsFloat(ctx.inputs[0].dtype)) return ctx.Error("dY has dtype ", DTypeName(ctx.inputs[0].dtype), ", expected a float type");
  if (ctx.inputs[1].dtype != DType::kInt64) return ctx.Error("x_shape must be int64");
  if (const Tensor* shape = ctx.value(1)) {
    ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, shape->ToInt64Vector());
    return Status::Ok();
  }
  ctx.outputs[0] = TensorType{ctx.inputs[0].dtype, Shape(), false};
  if (ctx.inputs[0].has_shape)
    ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::vector<Dim>(ctx.inputs[0].shape.rank(), UnknownDim())));
  return Status::Ok();
}

}  // namespace

Status InferPad(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  AMP_ASSIGN_OR_RETURN(std::string mode, ctx.attrs->GetString("mode", "constant"));
  auto pm = ParsePadMode(mode);
  if (!pm.ok()) return Status(pm.status().code(), StrCat(ctx.node ? ctx.node->Describe() : "Pad", ": ", pm.status().message()));
  if (!ctx.has_input(1)) return ctx.Error("pads input is missing");
  const Shape& in = ctx.inputs[0].shape;
  Shape out = in;
  auto pads = KnownInts(ctx, 1);
  auto axes = ctx.has_input(3) ? KnownInts(ctx, 3) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
  if (!pads || !axes) {
    for (Dim& d : out.dims()) d = UnknownDim();
    ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, std::move(out));
    return Status::Ok();
  }
  std::vector<int64_t> begin, end;
  Status s = ResolvePads(static_cast<int64_t>(in.rank()), *pads, *axes, &begin, &end);
  if (!s.ok()) return ctx.Error(s.message());
  for (size_t d = 0; d < in.rank(); ++d) {
    int64_t grow = 0, padded = 0;
    if (!CheckedAdd(begin[d], end[d], &grow) || (in[d].is_static() && !CheckedAdd(in[d].value, grow, &padded)))
      return ctx.Error("pads ", begin[d], " and ", end[d], " on dim ", d, " overflow int64");
    if (in[d].is_static()) {
      if (padded < 0) return ctx.Error("pads shrink dim ", d, " of size ", in[d].value, " below 0");
      if (*pm != PadMode::kConstant && in[d].value == 0 && grow > 0)
        return ctx.Error("mode '", mode, "' cannot pad the empty dim ", d);
      out[d] = Dim::Static(padded);
    } else if (grow != 0) {
      out[d] = UnknownDim();
    }
  }
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, std::move(out));
  return Status::Ok();
}

// PadGrad(dY, x_shape, pads, axes?) -> dX (GradOfShapeInput).
Status InferPadGrad(InferContext& ctx) {
  AMP_ASSIGN_OR_RETURN(std::string mode, ctx.attrs->GetString("mode", "constant"));
  auto pm = ParsePadMode(mode);
  if (!pm.ok()) return Status(pm.status().code(), StrCat(ctx.node ? ctx.node->Describe() : "PadGrad", ": ", pm.status().message()));
  return GradOfShapeInput(ctx);
}

namespace {

// A Resize parameter input: absent, or present with zero elements (the
// opset 11-12 way of leaving it out), counts as not given.
bool Given(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return false;
  if (const Tensor* v = ctx.value(i)) return v->num_elements() > 0;
  const TensorType& t = ctx.inputs[i];
  return !(t.has_shape && t.shape.num_elements() == 0);
}

std::vector<double> Doubles(const Tensor* t) {
  std::vector<double> v;
  if (t)
    for (int64_t i = 0; i < t->num_elements(); ++i) v.push_back(t->GetAsDouble(i));
  return v;
}

}  // namespace

// ResizeGrad(dY, x_shape, roi?, scales?, sizes?) -> dX (GradOfShapeInput).
Status InferResizeGrad(InferContext& ctx) {
  auto attrs = ParseResizeAttrs(*ctx.attrs);
  if (!attrs.ok()) return ctx.Error(attrs.status().message());
  return GradOfShapeInput(ctx);
}

Status InferResize(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  auto attrs = ParseResizeAttrs(*ctx.attrs);
  if (!attrs.ok())
    return Status(attrs.status().code(), StrCat(ctx.node ? ctx.node->Describe() : "Resize", ": ", attrs.status().message()));
  if (!IsFloat(ctx.inputs[0].dtype)) return ctx.Error("dtype ", DTypeName(ctx.inputs[0].dtype), " is not supported (float types only)");
  const Shape& in = ctx.inputs[0].shape;
  const bool has_scales = Given(ctx, 2), has_sizes = Given(ctx, 3);
  if (has_scales == has_sizes) return ctx.Error("exactly one of scales and sizes must be given");
  const Tensor* param = ctx.value(has_scales ? 2 : 3);
  const bool roi_needed = attrs->coord == CoordMode::kTfCropAndResize;
  if (!param || (roi_needed && Given(ctx, 1) && !ctx.value(1))) {
    Shape out = in;
    for (size_t d = 0; d < out.rank(); ++d)
      if (attrs->axes.empty() ||
          std::find_if(attrs->axes.begin(), attrs->axes.end(), [&](int64_t a) {
            return a == static_cast<int64_t>(d) || a + static_cast<int64_t>(out.rank()) == static_cast<int64_t>(d);
          }) != attrs->axes.end())
        out[d] = UnknownDim();
    ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, std::move(out));
    return Status::Ok();
  }
  std::vector<double> roi = roi_needed ? Doubles(ctx.value(1)) : std::vector<double>{};
  auto g = has_scales ? ResolveResize(*attrs, DimsOrUnknown(in), roi, Doubles(param), {})
                      : ResolveResize(*attrs, DimsOrUnknown(in), roi, {}, param->ToInt64Vector());
  if (!g.ok()) return ctx.Error(g.status().message());
  Shape out = in;
  for (size_t d = 0; d < in.rank(); ++d) {
    if (g->out_dims[d] >= 0) out[d] = Dim::Static(g->out_dims[d]);
    else if (g->scales[d] != 1.0) out[d] = UnknownDim();
  }
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, std::move(out));
  return Status::Ok();
}

}  // namespace amptrain::ir
