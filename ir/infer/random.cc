// Shape/dtype rules of the random ops (ir/ops.def): RandomUniformLike and
// RandomNormalLike take X's shape, RandomUniform and RandomNormal their
// `shape` attribute, Bernoulli P's shape. The dtype is the `dtype`
// attribute, else X's (P's for Bernoulli), else float32 (RandomUniform,
// RandomNormal). None propagates a value: the output is not a constant.
#include "ir/infer/infer_util.h"
#include "ir/onnx_dtype.h"

namespace amptrain::ir {

namespace {

// The `dtype` attribute, or `fallback` when absent; `allowed` says which
// dtypes the op can produce.
StatusOr<DType> OutputDType(const InferContext& ctx, DType fallback, bool (*allowed)(DType)) {
  DType t = fallback;
  if (ctx.attrs->Has("dtype")) {
    AMP_ASSIGN_OR_RETURN(int64_t code, ctx.attrs->GetInt("dtype", 0));
    t = DTypeFromOnnx(code);
    if (t == DType::kUndefined) return ctx.Error("attribute dtype ", OnnxTypeName(code), " is not supported");
  }
  if (!allowed(t)) return ctx.Error("cannot produce ", DTypeName(t));
  return t;
}

bool FloatOnly(DType t) { return IsFloat(t); }
bool NumericOrBool(DType t) { return IsNumeric(t) || t == DType::kBool; }

// The like ops: X's shape.
Status InferLike(InferContext& ctx) {
  if (ctx.inputs[0].dtype == DType::kUndefined) return ctx.Error("input 0 has no dtype");
  DType fallback = ctx.inputs[0].dtype;
  AMP_ASSIGN_OR_RETURN(DType t, OutputDType(ctx, fallback, FloatOnly));
  ctx.outputs[0] = ctx.inputs[0];
  ctx.outputs[0].dtype = t;
  return Status::Ok();
}

// The sized ops: attribute `shape`.
Status InferSized(InferContext& ctx) {
  if (!ctx.attrs->Has("shape")) return ctx.Error("attribute 'shape' is required");
  AMP_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ctx.attrs->GetInts("shape"));
  int64_t n = 0;
  if (!CheckedNumElements(dims, &n)) return ctx.Error("shape has a negative dim or overflows");
  AMP_ASSIGN_OR_RETURN(DType t, OutputDType(ctx, DType::kFloat32, FloatOnly));
  ctx.outputs[0] = TensorType::Of(t, dims);
  return Status::Ok();
}

}  // namespace

Status InferRandomUniformLike(InferContext& ctx) { return InferLike(ctx); }
Status InferRandomNormalLike(InferContext& ctx) { return InferLike(ctx); }
Status InferRandomUniform(InferContext& ctx) { return InferSized(ctx); }
Status InferRandomNormal(InferContext& ctx) { return InferSized(ctx); }

Status InferBernoulli(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  AMP_ASSIGN_OR_RETURN(DType t, OutputDType(ctx, ctx.inputs[0].dtype, NumericOrBool));
  ctx.outputs[0] = ctx.inputs[0];
  ctx.outputs[0].dtype = t;
  return Status::Ok();
}

}  // namespace amptrain::ir
