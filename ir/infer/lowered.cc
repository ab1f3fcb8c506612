// Shape/dtype rules of the ops the importer lowers right after shape
// inference (importer/lowerings.cc): only that first inference sees them.
//   InstanceNormalization(x [N, C, D...], scale [C], bias [C]), attr epsilon: x's type.
//   DepthToSpace(x [N, C, H, W]), attrs blocksize b, mode DCR|CRD: [N, C / b^2, H b, W b].
//   SpaceToDepth(x [N, C, H, W]), attrs blocksize b, mode DCR|CRD (opset 24): [N, C b^2, H / b, W / b].
#include "ir/einsum_equation.h"
#include "ir/infer/infer_util.h"

namespace amptrain::ir {

Status InferInstanceNormalization(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  AMP_RETURN_IF_ERROR(ExpectSameDType(ctx, 0, 1));
  AMP_RETURN_IF_ERROR(ExpectSameDType(ctx, 0, 2));
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  AMP_RETURN_IF_ERROR(ctx.attrs->GetFloat("epsilon", 1e-5f).status());
  const Shape& x = ctx.inputs[0].shape;
  if (x.rank() < 3) return ctx.Error("input has shape ", x.ToString(), ", expected [N, C, D1, ...]");
  for (size_t i = 1; i < 3; ++i) {
    const TensorType& t = ctx.inputs[i];
    if (t.has_shape && (t.shape.rank() != 1 || (t.shape[0].is_static() && x[1].is_static() && t.shape[0].value != x[1].value)))
      return ctx.Error(i == 1 ? "scale" : "bias", " has shape ", t.shape.ToString(), ", expected [C] = [",
                       x[1].is_static() ? StrCat(x[1].value) : std::string("C"), "]");
  }
  SameAs(ctx, 0, 0);
  return Status::Ok();
}

namespace {

// DepthToSpace (to_space) and SpaceToDepth: 4-D x with static C, H, W.
Status InferBlockRearrange(InferContext& ctx, bool to_space) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  const Shape& x = ctx.inputs[0].shape;
  if (x.rank() != 4) return ctx.Error("input has shape ", x.ToString(), ", expected [N, C, H, W]");
  AMP_ASSIGN_OR_RETURN(int64_t b, ctx.attrs->GetInt("blocksize", 0));
  if (b < 1) return ctx.Error("attribute blocksize is ", b, ", expected >= 1");
  AMP_ASSIGN_OR_RETURN(std::string mode, ctx.attrs->GetString("mode", "DCR"));
  if (mode != "DCR" && mode != "CRD") return ctx.Error("attribute mode is '", mode, "', expected DCR or CRD");
  std::vector<Dim> out = x.dims();
  if (to_space) {
    if (x[1].is_static() && x[1].value % (b * b) != 0)
      return ctx.Error(x[1].value, " channels do not split into blocks of ", b, "x", b);
    out[1] = x[1].is_static() ? Dim::Static(x[1].value / (b * b)) : UnknownDim();
    for (size_t d = 2; d < 4; ++d) out[d] = x[d].is_static() ? Dim::Static(x[d].value * b) : UnknownDim();
  } else {
    for (size_t d = 2; d < 4; ++d) {
      if (x[d].is_static() && x[d].value % b != 0)
        return ctx.Error("spatial dim ", d, " (", x[d].value, ") is not a multiple of blocksize ", b);
      out[d] = x[d].is_static() ? Dim::Static(x[d].value / b) : UnknownDim();
    }
    out[1] = x[1].is_static() ? Dim::Static(x[1].value * b * b) : UnknownDim();
  }
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::move(out)));
  return Status::Ok();
}

}  // namespace

Status InferDepthToSpace(InferContext& ctx) { return InferBlockRearrange(ctx, true); }
Status InferSpaceToDepth(InferContext& ctx) { return InferBlockRearrange(ctx, false); }

}  // namespace amptrain::ir

namespace amptrain::ir {

// Einsum: each output label takes its dim from an input that has it (a dim
// of 1 broadcasts against the other's); the inputs' dtype.
Status InferEinsum(InferContext& ctx) {
  AMP_ASSIGN_OR_RETURN(std::string equation, ctx.attrs->GetString("equation", ""));
  std::vector<size_t> ranks;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    AMP_RETURN_IF_ERROR(RequireShape(ctx, i));
    AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, i, IsNumeric(ctx.inputs[i].dtype), "a numeric type"));
    if (i > 0) AMP_RETURN_IF_ERROR(ExpectSameDType(ctx, 0, i));
    ranks.push_back(ctx.inputs[i].shape.rank());
  }
  auto eq = ParseEinsum(equation, ranks);
  if (!eq.ok()) return ctx.Error(eq.status().message());
  std::vector<Dim> dims;
  for (char c : eq->output) {
    Dim d = Dim::Static(1);
    for (size_t i = 0; i < eq->inputs.size(); ++i) {
      size_t at = eq->inputs[i].find(c);
      if (at == std::string::npos) continue;
      const Dim& di = ctx.inputs[i].shape[at];
      if (!(di.is_static() && di.value == 1)) d = di;
    }
    dims.push_back(d);
  }
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::move(dims)));
  return Status::Ok();
}

}  // namespace amptrain::ir
