// Shape/dtype rules of the fused inference ops (ir/ops.def, "Fused inference
// ops"): the rule of the op they stand for, plus checks of what was fused in.
#include "ir/infer/infer_util.h"

namespace amptrain::ir {

// Conv's rule on X, W, B; then Z (when present) must match Y exactly.
Status InferFusedConv(InferContext& ctx) {
  AMP_ASSIGN_OR_RETURN(std::string act, ctx.attrs->GetString("activation", ""));
  if (act != "" && act != "Relu") return ctx.Error("activation '", act, "' is not supported (\"\" or \"Relu\")");
  InferContext conv = ctx;
  conv.inputs.resize(std::min<size_t>(ctx.inputs.size(), 3));
  conv.values.resize(conv.inputs.size());
  AMP_RETURN_IF_ERROR(InferConv(conv));
  ctx.outputs[0] = conv.outputs[0];
  if (!ctx.has_input(3)) return Status::Ok();
  const TensorType& z = ctx.inputs[3];
  const TensorType& y = ctx.outputs[0];
  if (z.dtype != y.dtype) return ctx.Error("residual Z has dtype ", DTypeName(z.dtype), ", Y has ", DTypeName(y.dtype));
  if (z.has_shape && y.has_shape && !(z.shape == y.shape))
    return ctx.Error("residual Z has shape ", z.shape.ToString(), ", Y has ", y.shape.ToString());
  return Status::Ok();
}

}  // namespace amptrain::ir
