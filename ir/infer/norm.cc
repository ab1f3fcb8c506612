// Shape/dtype rules of Softmax, LogSoftmax (opset-13 semantics: normalize
// along one `axis`, default -1) and LayerNormalization.
#include "ir/infer/infer_util.h"
#include "ir/onnx_dtype.h"

namespace amptrain::ir {

namespace {

// Normalized `axis` attribute (default -1) of input 0, or an OutOfRange error.
StatusOr<int64_t> AxisAttr(const InferContext& ctx) {
  AMP_ASSIGN_OR_RETURN(int64_t axis, ctx.attrs->GetInt("axis", -1));
  int64_t rank = static_cast<int64_t>(ctx.inputs[0].shape.rank());
  if (axis < -rank || axis >= rank)
    return NodeOutOfRange(ctx, StrCat("axis ", axis, " is out of range for input rank ", rank));
  return axis < 0 ? axis + rank : axis;
}

Status InferSoftmaxLike(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  if (ctx.inputs[0].has_shape) AMP_RETURN_IF_ERROR(AxisAttr(ctx).status());
  SameAs(ctx, 0, 0);
  return Status::Ok();
}

}  // namespace

Status InferSoftmax(InferContext& ctx) { return InferSoftmaxLike(ctx); }
Status InferLogSoftmax(InferContext& ctx) { return InferSoftmaxLike(ctx); }

// LayerNormalization(X, Scale, B?) -> Y, Mean?, InvStdDev?
//   Y: X's type. Mean, InvStdDev: dtype stash_type (default float32), shape
//   X[:axis] followed by rank - axis ones. Scale and B have X's dtype and
//   broadcast to X[axis:].
Status InferLayerNormalization(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  AMP_RETURN_IF_ERROR(ExpectSameDType(ctx, 0, 1));
  if (ctx.has_input(2)) AMP_RETURN_IF_ERROR(ExpectSameDType(ctx, 0, 2));
  AMP_ASSIGN_OR_RETURN(int64_t stash_code, ctx.attrs->GetInt("stash_type", 1));
  DType stash = DTypeFromOnnx(stash_code);
  if (!IsFloat(stash)) return ctx.Error("stash_type ", stash_code, " is not a float type");
  AMP_ASSIGN_OR_RETURN(float epsilon, ctx.attrs->GetFloat("epsilon", 1e-5f));
  if (!(epsilon >= 0.0f)) return ctx.Error("epsilon ", epsilon, " must be >= 0");

  SameAs(ctx, 0, 0);
  for (size_t o = 1; o < ctx.outputs.size(); ++o) {
    ctx.outputs[o].dtype = stash;
    ctx.outputs[o].has_shape = false;
    ctx.outputs[o].shape = Shape();
  }
  if (!ctx.inputs[0].has_shape) return Status::Ok();
  AMP_ASSIGN_OR_RETURN(int64_t axis, AxisAttr(ctx));
  const Shape& x = ctx.inputs[0].shape;
  Shape normalized(std::vector<Dim>(x.dims().begin() + axis, x.dims().end()));
  for (size_t i = 1; i < 3; ++i) {
    if (!ctx.has_input(i) || !ctx.inputs[i].has_shape) continue;
    StatusOr<Shape> b = BroadcastShapes(normalized, ctx.inputs[i].shape);
    if (!b.ok() || b->rank() != normalized.rank() || (normalized.is_static() && !(*b == normalized)))
      return ctx.Error("input ", i, " of shape ", ctx.inputs[i].shape.ToString(),
                       " does not broadcast to the normalized shape ", normalized.ToString());
  }
  std::vector<Dim> stats(x.dims().begin(), x.dims().begin() + axis);
  stats.resize(x.rank(), Dim::Static(1));
  for (size_t o = 1; o < ctx.outputs.size(); ++o) {
    ctx.outputs[o].shape = Shape(stats);
    ctx.outputs[o].has_shape = true;
  }
  return Status::Ok();
}

}  // namespace amptrain::ir
