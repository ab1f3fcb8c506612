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

Status InferFloatReduce(InferContext& ctx) { return InferReduce(ctx, false); }
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

namespace {

// The axis attribute of ArgMax/ArgMin/TopK, in [0, rank).
StatusOr<size_t> OneAxis(const InferContext& ctx, int64_t fallback) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  const int64_t rank = static_cast<int64_t>(ctx.inputs[0].shape.rank());
  AMP_ASSIGN_OR_RETURN(int64_t axis, ctx.attrs->GetInt("axis", fallback));
  if (rank < 1) return ctx.Error("input must have rank >= 1");
  if (axis < -rank || axis >= rank) return NodeOutOfRange(ctx, StrCat("axis ", axis, " is out of range for rank ", rank));
  return static_cast<size_t>(axis < 0 ? axis + rank : axis);
}

Status InferArgExtremum(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsNumeric(ctx.inputs[0].dtype), "a numeric type"));
  AMP_ASSIGN_OR_RETURN(size_t axis, OneAxis(ctx, 0));
  AMP_ASSIGN_OR_RETURN(int64_t keepdims, ctx.attrs->GetInt("keepdims", 1));
  AMP_RETURN_IF_ERROR(ctx.attrs->GetInt("select_last_index", 0).status());
  std::vector<Dim> dims;
  const Shape& in = ctx.inputs[0].shape;
  for (size_t d = 0; d < in.rank(); ++d) {
    if (d != axis) dims.push_back(in[d]);
    else if (keepdims) dims.push_back(Dim::Static(1));
  }
  ctx.outputs[0] = TensorType::Of(DType::kInt64, Shape(std::move(dims)));
  return Status::Ok();
}

}  // namespace

Status InferArgMax(InferContext& ctx) { return InferArgExtremum(ctx); }
Status InferArgMin(InferContext& ctx) { return InferArgExtremum(ctx); }

// TopK(x, k): values (x's dtype) and int64 indices, x's shape with k along the axis.
Status InferTopK(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsNumeric(ctx.inputs[0].dtype), "a numeric type"));
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 1, ctx.inputs[1].dtype == DType::kInt64, "int64 (k)"));
  AMP_ASSIGN_OR_RETURN(size_t axis, OneAxis(ctx, -1));
  AMP_RETURN_IF_ERROR(ctx.attrs->GetInt("largest", 1).status());
  AMP_RETURN_IF_ERROR(ctx.attrs->GetInt("sorted", 1).status());
  Shape out = ctx.inputs[0].shape;
  out[axis] = UnknownDim();
  if (const Tensor* k = ctx.value(1)) {
    if (k->num_elements() != 1) return ctx.Error("k must hold one value, got ", k->num_elements());
    const int64_t kv = k->GetAsInt64(0);
    const Dim& n = ctx.inputs[0].shape[axis];
    if (kv < 0 || (n.is_static() && kv > n.value))
      return ctx.Error("k = ", kv, " is outside [0, ", n.is_static() ? StrCat(n.value) : std::string("dim"), "]");
    out[axis] = Dim::Static(kv);
  }
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, out);
  ctx.outputs[1] = TensorType::Of(DType::kInt64, out);
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
