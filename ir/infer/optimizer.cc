// Shape/dtype rules of the optimizer-step ops (ir/ops.def, "Optimizer-step
// ops"). They never appear in a graph; the rules only check the layout, so
// that a misuse fails with the op's name instead of reaching a kernel.
#include "ir/infer/infer_util.h"

namespace amptrain::ir {

namespace {

// `per` inputs per parameter, then one hyper-parameter input.
Status CheckGroups(InferContext& ctx, size_t per) {
  if (ctx.inputs.size() < per + 1 || (ctx.inputs.size() - 1) % per != 0)
    return ctx.Error("expects ", per, " inputs per parameter and one hyper-parameter input, got ", ctx.inputs.size());
  const DType t = ctx.inputs[0].dtype;
  for (size_t i = 0; i + 1 < ctx.inputs.size(); i += per) {
    if (ctx.inputs[i].dtype != t || ctx.inputs[i + 1].dtype != t)
      return ctx.Error("parameter group mixes dtypes: input ", i, " is ", DTypeName(ctx.inputs[i].dtype), ", input 0 is ",
                       DTypeName(t));
    for (size_t s = i + 2; s < i + per; ++s)
      if (ctx.has_input(s) && ctx.inputs[s].dtype != DType::kFloat32)
        return ctx.Error("optimizer state input ", s, " is ", DTypeName(ctx.inputs[s].dtype), ", expected float32");
  }
  if (ctx.inputs.back().dtype != DType::kFloat32) return ctx.Error("the hyper-parameter input must be float32");
  return Status::Ok();
}

}  // namespace

Status InferGradCheck(InferContext& ctx) {
  const size_t k = ctx.inputs.size() - 1;
  for (size_t i = 0; i < k; ++i)
    if (ctx.inputs[i].dtype != ctx.inputs[0].dtype) return ctx.Error("gradients of one check share a dtype");
  if (ctx.inputs[k].dtype != DType::kFloat32) return ctx.Error("the scale must be float32");
  ctx.outputs[0] = TensorType::Of(DType::kFloat64, std::vector<int64_t>{static_cast<int64_t>(k), 2});
  return Status::Ok();
}

Status InferSgdStep(InferContext& ctx) { return CheckGroups(ctx, 3); }
Status InferAdamStep(InferContext& ctx) { return CheckGroups(ctx, 4); }

}  // namespace amptrain::ir
