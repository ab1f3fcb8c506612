// Shape/dtype rules of ReduceMean, ReduceSum, ReduceMax and ReduceL2 in the canonical
// form: input 1 is the optional int64 axes tensor; attributes keepdims
// (default 1) and noop_with_empty_axes (default 0). Absent or empty axes
// reduce every dim, or pass the input through when noop_with_empty_axes=1.
#include <set>

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

}  // namespace amptrain::ir
