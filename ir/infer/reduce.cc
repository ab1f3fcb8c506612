// Shape/dtype rules of ReduceMean, ReduceSum, ReduceMax and ReduceL2 in the canonical
// form: input 1 is the optional int64 axes tensor; attributes keepdims
// (default 1) and noop_with_empty_axes (default 0). Absent or empty axes
// reduce every dim, or pass the input through when noop_with_empty_axes=1.
#include <set>

#include "ir/infer/value_util.h"

#include "ir/infer/infer_util.h"

namespace amptrain::ir {

namespace {

Status InferReduce(InferContext& ctx, bool allow_bool) {
  DType t = ctx.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsNumeric(t) || (allow_bool && t == DType::kBool),
                                       allow_bool ? "a numeric type or bool" : "a numeric type"));
  AMP_ASSIGN_OR_RETURN(int64_t keepdims, ctx.attrs->GetInt("keepdims", 1));
  AMP_ASSIGN_OR_RETURN(int64_t noop, ctx.attrs->GetInt("noop_with_empty_axes", 0));

  // Axes: known values, known to be empty, or unknown until run time.
  bool axes_known = true;
  std::vector<int64_t> axes;
  if (ctx.has_input(1)) {
    const TensorType& at = ctx.inputs[1];
    AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 1, at.dtype == DType::kInt64, "int64 (axes)"));
    if (at.has_shape && at.shape.rank() > 1) return ctx.Error("axes must be 1-D, got shape ", at.shape.ToString());
    if (const Tensor* v = ctx.value(1)) axes = v->ToInt64Vector();
    else axes_known = at.has_shape && at.shape.num_elements() == 0;
  }

  TensorType& out = ctx.outputs[0];
  out.dtype = t;
  if (axes_known && axes.empty() && noop != 0) {
    SameAs(ctx, 0, 0);
    return Status::Ok();
  }
  if (!ctx.inputs[0].has_shape) {
    out.has_shape = false;
    out.shape = Shape();
    return Status::Ok();
  }
  const Shape& in = ctx.inputs[0].shape;
  int64_t rank = static_cast<int64_t>(in.rank());
  if (!axes_known) {  // which dims shrink is unknown until run time
    out.has_shape = keepdims != 0;
    out.shape = keepdims ? Shape(std::vector<Dim>(in.rank(), UnknownDim())) : Shape();
    return Status::Ok();
  }
  std::set<int64_t> reduced;
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      return NodeOutOfRange(ctx, StrCat("axis ", a, " is out of range for input rank ", rank));
    if (!reduced.insert(a < 0 ? a + rank : a).second) return ctx.Error("axis ", a, " is repeated");
  }
  std::vector<Dim> dims;
  for (int64_t d = 0; d < rank; ++d) {
    bool r = axes.empty() || reduced.count(d);
    if (!r) dims.push_back(in[static_cast<size_t>(d)]);
    else if (keepdims) dims.push_back(Dim::Static(1));
  }
  out.shape = Shape(std::move(dims));
  out.has_shape = true;
  return Status::Ok();
}

}  // namespace

Status InferReduceMean(InferContext& ctx) { return InferReduce(ctx, false); }
Status InferReduceSum(InferContext& ctx) { return InferReduce(ctx, false); }
Status InferReduceMax(InferContext& ctx) { return InferReduce(ctx, true); }
Status InferReduceL2(InferContext& ctx) { return InferReduce(ctx, false); }
Status InferReduceMin(InferContext& ctx) { return InferReduce(ctx, true); }
Status InferReduceLogSumExp(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  return InferReduce(ctx, false);
}

// ReduceProd also propagates integer values when it reduces every dim:
// exporters compute element counts as ReduceProd(Gather(Shape(x))).
Status InferReduceProd(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(InferReduce(ctx, false));
  const Tensor* v = ctx.value(0);
  const TensorType& out = ctx.outputs[0];
  if (!v || !IsInteger(v->dtype()) || !out.has_shape || !out.shape.is_static() || out.shape.num_elements() != 1)
    return Status::Ok();
  uint64_t p = 1;  // wraps like the kernel's int64 arithmetic
  for (int64_t i = 0; i < v->num_elements(); ++i) p *= static_cast<uint64_t>(v->GetAsInt64(i));
  auto t = Tensor::Zeros(v->dtype(), out.shape.static_dims());
  if (!t.ok()) return t.status();
  if (v->dtype() == DType::kInt64) t->data<int64_t>()[0] = static_cast<int64_t>(p);
  else if (v->dtype() == DType::kInt32) t->data<int32_t>()[0] = static_cast<int32_t>(p);
  else return Status::Ok();
  SetValue(ctx, 0, std::move(*t));
  return Status::Ok();
}

// CumSum(x, axis): x's type; axis is a scalar (or 1-element) int32/int64.
Status InferCumSum(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsNumeric(ctx.inputs[0].dtype), "a numeric type"));
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 1, IsInteger(ctx.inputs[1].dtype), "int32 or int64 (axis)"));
  const TensorType& a = ctx.inputs[1];
  if (a.has_shape && a.shape.num_elements() != 1 && a.shape.is_static())
    return ctx.Error("axis must hold one value, got shape ", a.shape.ToString());
  AMP_RETURN_IF_ERROR(ctx.attrs->GetInt("exclusive", 0).status());
  AMP_RETURN_IF_ERROR(ctx.attrs->GetInt("reverse", 0).status());
  if (const Tensor* v = ctx.value(1); v && ctx.inputs[0].has_shape) {
    const int64_t rank = static_cast<int64_t>(ctx.inputs[0].shape.rank()), axis = v->GetAsInt64(0);
    if (axis < -rank || axis >= rank) return NodeOutOfRange(ctx, StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  SameAs(ctx, 0, 0);
  return Status::Ok();
}

}  // namespace amptrain::ir
