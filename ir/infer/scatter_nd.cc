// Shape/dtype rules of ScatterND and GatherND (ONNX) and of their backward
// ops ScatterNDGrad and GatherNDGrad.
//   ScatterND(data [r dims], indices int64 [q-1 dims..., k], updates), attr
//     reduction none|add|mul|max|min: updates has shape indices[:-1] + data[k:]
//     (k <= r); the output is data's type.
//   ScatterNDGrad(dY, indices), attr reduction: ddata = dY's type,
//     dupdates = indices[:-1] + dY[k:] (dY's dtype).
//   GatherND(data [r dims], indices int64 [q dims, the last k]), attr
//     batch_dims b (0 <= b < min(q, r), the first b dims of both equal):
//     indices[:-1] + data[b+k:] (k <= r - b), data's type.
//   ScatterElements(data, indices int32|int64, updates), attrs axis,
//     reduction: indices and updates of one shape, all three of one rank;
//     data's type.
//   ScatterElementsGrad(dY, indices), attrs axis, reduction none|add:
//     ddata = dY's type, dupdates = indices' shape in dY's dtype.
//   (GatherNDGrad's rule is with the other backward ops, ir/infer/grad.cc.)
#include <algorithm>

#include "ir/infer/infer_util.h"
#include "ir/infer/training_util.h"

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

Status InferScatterElements(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(CheckReduction(ctx, false));
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 1, IsIndexType(ctx.inputs[1].dtype), "int32 or int64"));
  if (ctx.inputs[2].dtype != ctx.inputs[0].dtype)
    return ctx.Error("updates has dtype ", DTypeName(ctx.inputs[2].dtype), ", expected data's ",
                     DTypeName(ctx.inputs[0].dtype));
  const TensorType &data = ctx.inputs[0], &indices = ctx.inputs[1], &updates = ctx.inputs[2];
  if (data.has_shape) {
    AMP_ASSIGN_OR_RETURN(int64_t axis, ctx.attrs->GetInt("axis", 0));
    AMP_RETURN_IF_ERROR(NormalizeAxis(axis, static_cast<int64_t>(data.shape.rank())).status());
  }
  if (indices.has_shape && updates.has_shape) {
    bool ok = indices.shape.rank() == updates.shape.rank() && (!data.has_shape || data.shape.rank() == indices.shape.rank());
    for (size_t d = 0; ok && d < indices.shape.rank(); ++d)
      ok = !indices.shape[d].is_static() || !updates.shape[d].is_static() ||
           indices.shape[d].value == updates.shape[d].value;
    if (!ok)
      return ctx.Error("indices ", indices.shape.ToString(), " and updates ", updates.shape.ToString(),
                       " must have one shape, of data's rank");
  }
  SameAs(ctx, 0, 0);
  return Status::Ok();
}

Status InferScatterElementsGrad(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(CheckReduction(ctx, true));
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  SameAs(ctx, 0, 0);
  ctx.outputs[1] = ctx.inputs[1];
  ctx.outputs[1].dtype = ctx.inputs[0].dtype;
  return Status::Ok();
}

Status InferGatherND(InferContext& ctx) {
  const TensorType &data = ctx.inputs[0], &indices = ctx.inputs[1];
  if (indices.dtype != DType::kInt64) return ctx.Error("indices must be int64, got ", DTypeName(indices.dtype));
  AMP_ASSIGN_OR_RETURN(int64_t b, ctx.attrs->GetInt("batch_dims", 0));
  ctx.outputs[0] = TensorType{data.dtype, Shape(), false};
  if (!data.has_shape || !indices.has_shape) return Status::Ok();
  const Shape &ds = data.shape, &is = indices.shape;
  const int64_t r = static_cast<int64_t>(ds.rank()), q = static_cast<int64_t>(is.rank());
  if (q < 1 || r < 1) return ctx.Error("data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(q, r)) return ctx.Error("batch_dims ", b, " is outside [0, ", std::min(q, r), ")");
  for (int64_t d = 0; d < b; ++d)
    if (ds[d].is_static() && is[d].is_static() && ds[d].value != is[d].value)
      return ctx.Error("batch dim ", d, " is ", ds[d].value, " in data but ", is[d].value, " in indices");
  if (!is[q - 1].is_static()) return Status::Ok();
  const int64_t k = is[q - 1].value;
  if (k < 1 || k > r - b) return ctx.Error("indices' last dim is ", k, ", expected 1..", r - b, " (data's rank less batch_dims)");
  std::vector<Dim> dims(is.dims().begin(), is.dims().end() - 1);
  for (int64_t d = b + k; d < r; ++d) dims.push_back(ds[d]);
  ctx.outputs[0] = TensorType::Of(data.dtype, Shape(dims));
  return Status::Ok();
}

}  // namespace amptrain::ir
