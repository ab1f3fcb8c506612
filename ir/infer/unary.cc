// Shape/dtype rules of the unary elementwise ops: the output has the input's
// type (Cast: the `to` dtype; CastLike: the dtype of its input 1). Cast,
// CastLike, Neg, Not, Identity, Floor, Ceil, Sqrt and Clip propagate values.
#include <cmath>

#include "ir/infer/infer_util.h"
#include "ir/infer/value_util.h"
#include "ir/onnx_dtype.h"

namespace amptrain::ir {

Status InferFloatUnary(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  SameAs(ctx, 0, 0);
  return Status::Ok();
}

namespace {

bool IsSignedNumeric(DType t) { return IsNumeric(t) && t != DType::kUInt8; }

// Output 0 = input 0 converted to `target` (values propagated).
Status CastOutput(InferContext& ctx, DType target) {
  if (ctx.inputs[0].dtype == DType::kUndefined) return ctx.Error("input 0 has no dtype");
  ctx.outputs[0] = ctx.inputs[0];
  ctx.outputs[0].dtype = target;
  if (IsFloat(ctx.inputs[0].dtype))
    PropagateElementwise<double>(ctx, {0}, 0, [](const double* a) { return a[0]; });
  else
    PropagateElementwise<int64_t>(ctx, {0}, 0, [](const int64_t* a) { return a[0]; });
  if (IsInteger(ctx.inputs[0].dtype) && target == DType::kInt64) PropagateSyms(ctx, 0, 0);
  return Status::Ok();
}

}  // namespace

Status InferSigmoid(InferContext& ctx) { return InferFloatUnary(ctx); }
Status InferSilu(InferContext& ctx) { return InferFloatUnary(ctx); }
Status InferTanh(InferContext& ctx) { return InferFloatUnary(ctx); }
Status InferErf(InferContext& ctx) { return InferFloatUnary(ctx); }
// Sqrt propagates values (traced sizes: int(math.sqrt(num_patches))).
Status InferSqrt(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(InferFloatUnary(ctx));
  PropagateElementwise<double>(ctx, {0}, 0, [](const double* a) { return std::sqrt(a[0]); });
  return Status::Ok();
}
// Floor and Ceil propagate values: exporters use them in index arithmetic
// (adaptive pooling's window bounds), which must fold to constants.
Status InferFloor(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(InferFloatUnary(ctx));
  PropagateElementwise<double>(ctx, {0}, 0, [](const double* a) { return std::floor(a[0]); });
  return Status::Ok();
}
// Sign: -1, 0 or 1 in the input's type (NaN stays NaN), values propagated.
Status InferSign(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsNumeric(ctx.inputs[0].dtype), "a numeric type"));
  SameAs(ctx, 0, 0);
  if (IsFloat(ctx.inputs[0].dtype))
    PropagateElementwise<double>(ctx, {0}, 0, [](const double* a) { return a[0] > 0 ? 1.0 : a[0] < 0 ? -1.0 : a[0]; });
  else
    PropagateElementwise<int64_t>(ctx, {0}, 0, [](const int64_t* a) { return int64_t{a[0] > 0} - int64_t{a[0] < 0}; });
  return Status::Ok();
}
Status InferCeil(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(InferFloatUnary(ctx));
  PropagateElementwise<double>(ctx, {0}, 0, [](const double* a) { return std::ceil(a[0]); });
  return Status::Ok();
}
Status InferExp(InferContext& ctx) { return InferFloatUnary(ctx); }
Status InferLog(InferContext& ctx) { return InferFloatUnary(ctx); }
Status InferReciprocal(InferContext& ctx) { return InferFloatUnary(ctx); }
Status InferLeakyRelu(InferContext& ctx) { return InferFloatUnary(ctx); }
Status InferHardSwish(InferContext& ctx) { return InferFloatUnary(ctx); }
Status InferSin(InferContext& ctx) { return InferFloatUnary(ctx); }
Status InferCos(InferContext& ctx) { return InferFloatUnary(ctx); }
Status InferTan(InferContext& ctx) { return InferFloatUnary(ctx); }
Status InferAsin(InferContext& ctx) { return InferFloatUnary(ctx); }
Status InferAcos(InferContext& ctx) { return InferFloatUnary(ctx); }
Status InferAtan(InferContext& ctx) { return InferFloatUnary(ctx); }
Status InferSinh(InferContext& ctx) { return InferFloatUnary(ctx); }
Status InferCosh(InferContext& ctx) { return InferFloatUnary(ctx); }
Status InferAsinh(InferContext& ctx) { return InferFloatUnary(ctx); }
Status InferAcosh(InferContext& ctx) { return InferFloatUnary(ctx); }
Status InferAtanh(InferContext& ctx) { return InferFloatUnary(ctx); }
Status InferRound(InferContext& ctx) { return InferFloatUnary(ctx); }
Status InferSoftplus(InferContext& ctx) { return InferFloatUnary(ctx); }
Status InferMish(InferContext& ctx) { return InferFloatUnary(ctx); }

// Elu and Celu (alpha = 1), Selu (alpha = 1.67326..., gamma = 1.05070...): float attributes.
Status InferElu(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ctx.attrs->GetFloat("alpha", 1.0f).status());
  return InferFloatUnary(ctx);
}
Status InferCelu(InferContext& ctx) {
  AMP_ASSIGN_OR_RETURN(float alpha, ctx.attrs->GetFloat("alpha", 1.0f));
  if (alpha == 0.0f) return ctx.Error("attribute alpha is 0 (Celu divides by it)");
  return InferFloatUnary(ctx);
}
Status InferSelu(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ctx.attrs->GetFloat("alpha", 1.67326319217681884765625f).status());
  AMP_RETURN_IF_ERROR(ctx.attrs->GetFloat("gamma", 1.05070102214813232421875f).status());
  return InferFloatUnary(ctx);
}

// HardSigmoid(alpha = 0.2, beta = 0.5): float attributes.
Status InferHardSigmoid(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ctx.attrs->GetFloat("alpha", 0.2f).status());
  AMP_RETURN_IF_ERROR(ctx.attrs->GetFloat("beta", 0.5f).status());
  return InferFloatUnary(ctx);
}

Status InferGelu(InferContext& ctx) {
  AMP_ASSIGN_OR_RETURN(std::string approximate, ctx.attrs->GetString("approximate", "none"));
  if (approximate != "none" && approximate != "tanh")
    return ctx.Error("attribute approximate is '", approximate, "', expected 'none' or 'tanh'");
  return InferFloatUnary(ctx);
}

Status InferRelu(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsSignedNumeric(ctx.inputs[0].dtype), "a float or signed integer type"));
  SameAs(ctx, 0, 0);
  return Status::Ok();
}

Status InferNeg(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsSignedNumeric(ctx.inputs[0].dtype), "a float or signed integer type"));
  SameAs(ctx, 0, 0);
  if (IsFloat(ctx.inputs[0].dtype))
    PropagateElementwise<double>(ctx, {0}, 0, [](const double* a) { return -a[0]; });
  else
    PropagateElementwise<int64_t>(ctx, {0}, 0, [](const int64_t* a) { return -a[0]; });
  return Status::Ok();
}

Status InferAbs(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsNumeric(ctx.inputs[0].dtype), "a numeric type"));
  SameAs(ctx, 0, 0);
  return Status::Ok();
}

// Clip(input, min?, max?): min and max are scalars of the input's dtype.
Status InferClip(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsNumeric(ctx.inputs[0].dtype), "a numeric type"));
  for (size_t i = 1; i < 3; ++i) {
    if (!ctx.has_input(i)) continue;
    AMP_RETURN_IF_ERROR(ExpectSameDType(ctx, 0, i));
    const TensorType& t = ctx.inputs[i];
    if (t.has_shape && (t.shape.rank() > 1 || (t.shape.rank() == 1 && !(t.shape[0].is_static() && t.shape[0].value == 1))))
      return ctx.Error("input ", i, " (", i == 1 ? "min" : "max", ") must be a scalar, got shape ", t.shape.ToString());
  }
  SameAs(ctx, 0, 0);
  // Values propagate (TensorFlow-style "same" padding computes its pads as
  // max(total, 0) through Clip): min(max(x, lo), hi) with absent bounds skipped.
  const bool lo = ctx.has_input(1), hi = ctx.has_input(2);
  std::vector<size_t> ins{0};
  if (lo) ins.push_back(1);
  if (hi) ins.push_back(2);
  auto clip = [lo, hi](const auto* a) {
    auto v = a[0];
    if (lo && a[1] > v) v = a[1];
    if (hi && a[lo ? 2 : 1] < v) v = a[lo ? 2 : 1];
    return v;
  };
  if (IsFloat(ctx.inputs[0].dtype)) PropagateElementwise<double>(ctx, ins, 0, clip);
  else PropagateElementwise<int64_t>(ctx, ins, 0, clip);
  return Status::Ok();
}

Status InferNot(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, ctx.inputs[0].dtype == DType::kBool, "bool"));
  SameAs(ctx, 0, 0);
  PropagateElementwise<int64_t>(ctx, {0}, 0, [](const int64_t* a) -> int64_t { return a[0] == 0; });
  return Status::Ok();
}

// IsNaN, IsInf: float x -> bool of x's shape.
Status InferIsNaN(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  ctx.outputs[0] = ctx.inputs[0];
  ctx.outputs[0].dtype = DType::kBool;
  return Status::Ok();
}

Status InferIsInf(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ctx.attrs->GetInt("detect_negative", 1).status());
  AMP_RETURN_IF_ERROR(ctx.attrs->GetInt("detect_positive", 1).status());
  return InferIsNaN(ctx);
}

Status InferIdentity(InferContext& ctx) {
  SameAs(ctx, 0, 0);
  if (const Tensor* v = ctx.value(0)) ctx.output_values[0] = *v;
  PropagateSyms(ctx, 0, 0);
  return Status::Ok();
}

// Cast(to): float -> integer truncates toward zero; -> bool is x != 0.
Status InferCast(InferContext& ctx) {
  if (!ctx.attrs->Has("to")) return ctx.Error("attribute 'to' is required");
  AMP_ASSIGN_OR_RETURN(int64_t to, ctx.attrs->GetInt("to", 0));
  DType target = DTypeFromOnnx(to);
  if (target == DType::kUndefined)
    return Unimplemented(ctx.node ? ctx.node->Describe() : std::string("Cast node"), ": cast to ONNX data type ", OnnxTypeName(to),
                         " is not supported");
  return CastOutput(ctx, target);
}

// CastLike(x, like): Cast(x, to = like's dtype); like's shape and values do
// not matter. The importer replaces it with that Cast after inference.
Status InferCastLike(InferContext& ctx) {
  if (ctx.inputs[1].dtype == DType::kUndefined) return ctx.Error("input 1 (like) has no dtype");
  return CastOutput(ctx, ctx.inputs[1].dtype);
}

}  // namespace amptrain::ir
