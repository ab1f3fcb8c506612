// Shape/dtype rules of the optimizer-step ops (ir/ops.def, "Optimizer-step
// ops"). They never appear in a graph; the rules only check the layout, so
// that a misuse fails with the op's name instead of reaching a kernel.
#include "ir/infer/infer_util.h"

namespace amptrain::ir {

namespace {

// `per` inputs per parameter (p, g, `per` - 3 fp32 state slots, the
// optional low copy), then one hyper-parameter input. p and g share the key
// dtype, or g is fp16/bf16 for an fp32 p; a low copy is fp16/bf16 of an fp32 p.
Status CheckGroups(InferContext& ctx, size_t per) {
  if (ctx.inputs.size() < per + 1 || (ctx.inputs.size() - 1) % per != 0)
    return ctx.Error("expects ", per, " inputs per parameter and one hyper-parameter input, got ", ctx.inputs.size());
  auto low = [](DType d) { return d == DType::kFloat16 || d == DType::kBFloat16; };
  const DType t = ctx.inputs[0].dtype;
  for (size_t i = 0; i + 1 < ctx.inputs.size(); i += per) {
    const DType p = ctx.inputs[i].dtype, g = ctx.inputs[i + 1].dtype;
    if (p != t || (g != p && !(p == DType::kFloat32 && low(g))))
      return ctx.Error("parameter group mixes dtypes: parameter input ", i, " is ", DTypeName(p), " with a ",
                       DTypeName(g), " gradient; input 0 is ", DTypeName(t));
    for (size_t s = i + 2; s + 1 < i + per; ++s)
      if (ctx.has_input(s) && ctx.inputs[s].dtype != DType::kFloat32)
        return ctx.Error("optimizer state input ", s, " is ", DTypeName(ctx.inputs[s].dtype), ", expected float32");
    const size_t l = i + per - 1;
    if (ctx.has_input(l) && !(p == DType::kFloat32 && low(ctx.inputs[l].dtype)))
      return ctx.Error("low copy input ", l, " is ", DTypeName(ctx.inputs[l].dtype), " of a ", DTypeName(p),
                       " parameter; expected fp16/bf16 of float32");
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

Status InferSgdStep(InferContext& ctx) { return CheckGroups(ctx, 4); }
Status InferAdamStep(InferContext& ctx) { return CheckGroups(ctx, 5); }

}  // namespace amptrain::ir
