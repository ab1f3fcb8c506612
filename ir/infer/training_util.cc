#include "ir/infer/training_util.h"

namespace amptrain::ir {

StatusOr<LossAttrs> ParseLossAttrs(const Attributes& attrs) {
  LossAttrs a;
  AMP_ASSIGN_OR_RETURN(std::string reduction, attrs.GetString("reduction", "mean"));
  if (reduction == "mean") a.reduction = LossReduction::kMean;
  else if (reduction == "sum") a.reduction = LossReduction::kSum;
  else if (reduction == "none") a.reduction = LossReduction::kNone;
  else return InvalidArgument("reduction '", reduction, "' is not one of mean, sum, none");
  if (attrs.Has("ignore_index")) {
    AMP_ASSIGN_OR_RETURN(int64_t ignore, attrs.GetInt("ignore_index", 0));
    a.ignore_index = ignore;
  }
  AMP_ASSIGN_OR_RETURN(float smoothing, attrs.GetFloat("label_smoothing", 0.0f));
  if (!(smoothing >= 0.0f && smoothing <= 1.0f)) return InvalidArgument("label_smoothing ", smoothing, " is outside [0, 1]");
  a.label_smoothing = smoothing;
  return a;
}

StatusOr<Shape> MergeShapes(const InferContext& ctx, const Shape& a, const Shape& b, const char* what) {
  bool ok = a.rank() == b.rank();
  std::vector<Dim> dims;
  for (size_t i = 0; ok && i < a.rank(); ++i) {
    if (a[i].is_static() && b[i].is_static()) ok = a[i].value == b[i].value;
    if (a[i].is_static() || (!b[i].is_static() && !a[i].symbol.empty())) dims.push_back(a[i]);
    else dims.push_back(b[i]);
  }
  if (!ok) return ctx.Error(what, " has shape ", b.ToString(), ", expected ", a.ToString());
  return Shape(std::move(dims));
}

}  // namespace amptrain::ir
