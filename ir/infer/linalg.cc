// Shape/dtype rules of Gemm and MatMul.
//   Gemm:   A [M, K] (transA: [K, M]), B [K, N] (transB: [N, K]), optional C
//           unidirectionally broadcastable to [M, N] -> Y [M, N].
//   MatMul: numpy matmul: 1-D operands are promoted ([K] -> [1, K] on the left,
//           [K, 1] on the right) and the added dim is removed from the result;
//           batch dims broadcast.
#include "ir/infer/infer_util.h"

namespace amptrain::ir {

namespace {

Status RequireFloatPair(const InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 1));
  if (!IsFloat(ctx.inputs[0].dtype))
    return ctx.Error("input 0 has dtype ", DTypeName(ctx.inputs[0].dtype), ", expected a float type");
  if (ctx.inputs[1].dtype != ctx.inputs[0].dtype)
    return ctx.Error("inputs have different dtypes (", DTypeName(ctx.inputs[0].dtype), " vs ",
                     DTypeName(ctx.inputs[1].dtype), ")");
  return Status::Ok();
}

// Contraction dims must agree when both are known.
Status CheckK(const InferContext& ctx, const Dim& ka, const Dim& kb) {
  if (ka.is_static() && kb.is_static() && ka.value != kb.value)
    return ctx.Error("inner dimensions differ: ", ctx.inputs[0].shape.ToString(), " x ",
                     ctx.inputs[1].shape.ToString());
  return Status::Ok();
}

}  // namespace

Status InferGemm(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireFloatPair(ctx));
  const Shape& a = ctx.inputs[0].shape;
  const Shape& b = ctx.inputs[1].shape;
  if (a.rank() != 2 || b.rank() != 2) return ctx.Error("inputs must be 2-D, got ", a.ToString(), " and ", b.ToString());
  AMP_ASSIGN_OR_RETURN(int64_t trans_a, ctx.attrs->GetInt("transA", 0));
  AMP_ASSIGN_OR_RETURN(int64_t trans_b, ctx.attrs->GetInt("transB", 0));
  const Dim& m = a[trans_a ? 1 : 0];
  const Dim& ka = a[trans_a ? 0 : 1];
  const Dim& kb = b[trans_b ? 1 : 0];
  const Dim& n = b[trans_b ? 0 : 1];
  AMP_RETURN_IF_ERROR(CheckK(ctx, ka, kb));
  Shape y({m, n});
  if (ctx.has_input(2)) {
    if (ctx.inputs[2].dtype != ctx.inputs[0].dtype)
      return ctx.Error("C has dtype ", DTypeName(ctx.inputs[2].dtype), ", expected ", DTypeName(ctx.inputs[0].dtype));
    if (ctx.inputs[2].has_shape) {
      auto s = BroadcastShapes(ctx.inputs[2].shape, y);
      if (!s.ok() || ctx.inputs[2].shape.rank() > 2)
        return ctx.Error("C of shape ", ctx.inputs[2].shape.ToString(), " does not broadcast to ", y.ToString());
    }
  }
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, y);
  return Status::Ok();
}

Status InferMatMul(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireFloatPair(ctx));
  Shape a = ctx.inputs[0].shape;
  Shape b = ctx.inputs[1].shape;
  if (a.rank() == 0 || b.rank() == 0) return ctx.Error("MatMul operands must have rank >= 1");
  bool vec_a = a.rank() == 1, vec_b = b.rank() == 1;
  if (vec_a) a.dims().insert(a.dims().begin(), Dim::Static(1));
  if (vec_b) b.dims().push_back(Dim::Static(1));
  AMP_RETURN_IF_ERROR(CheckK(ctx, a[a.rank() - 1], b[b.rank() - 2]));
  Shape batch_a(std::vector<Dim>(a.dims().begin(), a.dims().end() - 2));
  Shape batch_b(std::vector<Dim>(b.dims().begin(), b.dims().end() - 2));
  auto batch = BroadcastShapes(batch_a, batch_b);
  if (!batch.ok()) return ctx.Error("batch dims: ", batch.status().message());
  std::vector<Dim> out = batch->dims();
  if (!vec_a) out.push_back(a[a.rank() - 2]);
  if (!vec_b) out.push_back(b[b.rank() - 1]);
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::move(out)));
  return Status::Ok();
}

}  // namespace amptrain::ir
