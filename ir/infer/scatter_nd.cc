// Shape/dtype rules of ScatterND (ONNX) and of its backward op ScatterNDGrad.
//   ScatterND(data [r dims], indices int64 [q-1 dims..., k], updates), attr
//     reduction none|add|mul|max|min: updates has shape indices[:-1] + data[k:]
//     (k <= r); the output is data's type.
//   ScatterNDGrad(dY, indices), attr reduction: ddata = dY's type,
//     dupdates = indices[:-1] + dY[k:] (dY's dtype).
#include "ir/infer/infer_util.h"

namespace amptrain::ir {

namespace {

Status CheckReduction(const InferContext& ctx, bool backward) {
  AMP_ASSIGN_OR_RETURN(std::string reduction, ctx.attrs->GetString("reduction", "none"));
  if (reduction == "none" || reduction == "add") return Status::Ok();
  if (!backward && (reduction == "mul" || reduction == "max" || reduction == "min")) return Status::Ok();
  return ctx.Error("reduction '", reduction, "' is not one of none, add", backward ? "" : ", mul, max, min");
}

// indices[:-1] + of[k:], where k = indices[-1] (unknown dims where not static).
StatusOr<TensorType> UpdatesType(const InferContext& ctx, const TensorType& of, const TensorType& indices) {
  if (indices.dtype != DType::kInt64) return ctx.Error("indices must be int64, got ", DTypeName(indices.dtype));
  if (!of.has_shape || !indices.has_shape) return TensorType{of.dtype, Shape(), false};
  const Shape& is = indices.shape;
  if (is.rank() < 1) return ctx.Error("indices must have rank >= 1");
  if (!is[is.rank() - 1].is_static()) return TensorType{of.dtype, Shape(), false};
  const int64_t k = is[is.rank() - 1].value;
  if (k < 1 || k > static_cast<int64_t>(of.shape.rank()))
    return ctx.Error("indices' last dim is ", k, ", expected 1..", of.shape.rank(), " (the rank of data)");
  std::vector<Dim> dims(is.dims().begin(), is.dims().end() - 1);
  for (size_t d = static_cast<size_t>(k); d < of.shape.rank(); ++d) dims.push_back(of.shape[d]);
  return TensorType::Of(of.dtype, Shape(dims));
}

}  // namespace

Status InferScatterND(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(CheckReduction(ctx, false));
  if (ctx.inputs[2].dtype != ctx.inputs[0].dtype)
    return ctx.Error("updates has dtype ", DTypeName(ctx.inputs[2].dtype), ", expected data's ",
                     DTypeName(ctx.inputs[0].dtype));
  AMP_ASSIGN_OR_RETURN(TensorType want, UpdatesType(ctx, ctx.inputs[0], ctx.inputs[1]));
  const TensorType& updates = ctx.inputs[2];
  if (want.has_shape && updates.has_shape) {
    bool ok = want.shape.rank() == updates.shape.rank();
    for (size_t d = 0; ok && d < want.shape.rank(); ++d)
      ok = !want.shape[d].is_static() || !updates.shape[d].is_static() || want.shape[d].value == updates.shape[d].value;
    if (!ok) return ctx.Error("updates has shape ", updates.shape.ToString(), ", expected ", want.shape.ToString());
  }
  SameAs(ctx, 0, 0);
  return Status::Ok();
}

Status InferScatterNDGrad(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(CheckReduction(ctx, true));
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  SameAs(ctx, 0, 0);
  AMP_ASSIGN_OR_RETURN(ctx.outputs[1], UpdatesType(ctx, ctx.inputs[0], ctx.inputs[1]));
  return Status::Ok();
}

}  // namespace amptrain::ir
