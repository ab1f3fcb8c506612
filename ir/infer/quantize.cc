// Shape/dtype rules of QuantizeLinear, DequantizeLinear and FakeQuantize.
#include "ir/infer/quantize.h"

#include "ir/infer/infer_util.h"
#include "ir/onnx_dtype.h"

namespace amptrain::ir {

StatusOr<QuantLayout> DecodeQuantLayout(const Attributes& attrs, const std::vector<int64_t>& data_dims,
                                        const std::vector<int64_t>& scale_dims) {
  QuantLayout l;
  AMP_ASSIGN_OR_RETURN(int64_t axis, attrs.GetInt("axis", 1));
  AMP_ASSIGN_OR_RETURN(l.block_size, attrs.GetInt("block_size", 0));
  int64_t scale_elems = 1;
  for (int64_t d : scale_dims) scale_elems *= d;
  if (scale_dims.empty() || (scale_dims.size() == 1 && scale_elems == 1 && l.block_size == 0)) return l;  // per tensor
  const int64_t rank = static_cast<int64_t>(data_dims.size());
  AMP_ASSIGN_OR_RETURN(l.axis, NormalizeAxis(axis, rank));
  const int64_t n = data_dims[static_cast<size_t>(l.axis)];
  if (l.block_size == 0) {
    if (scale_dims.size() != 1 || scale_dims[0] != n)
      return InvalidArgument("a per-axis scale must be 1-D of the data's dim ", l.axis, " (", n, "), got ", scale_elems,
                             " values");
    l.kind = QuantLayout::kPerAxis;
    return l;
  }
  if (l.block_size < 0) return InvalidArgument("block_size must be >= 0, got ", l.block_size);
  if (static_cast<int64_t>(scale_dims.size()) != rank)
    return InvalidArgument("a blocked scale must have the data's rank ", rank);
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t want = d == l.axis ? (n + l.block_size - 1) / l.block_size : data_dims[static_cast<size_t>(d)];
    if (scale_dims[static_cast<size_t>(d)] != want)
      return InvalidArgument("a blocked scale has dim ", d, " of ", scale_dims[static_cast<size_t>(d)], ", expected ", want);
  }
  l.kind = QuantLayout::kBlocked;
  return l;
}

StatusOr<std::pair<int64_t, int64_t>> QuantRange(DType t) {
  switch (t) {
    case DType::kInt8: return std::pair<int64_t, int64_t>{-128, 127};
    case DType::kUInt8: return std::pair<int64_t, int64_t>{0, 255};
    case DType::kInt32: return std::pair<int64_t, int64_t>{INT32_MIN, INT32_MAX};
    default: return Unimplemented("quantized dtype ", DTypeName(t), " (int8, uint8 and int32 are supported)");
  }
}

StatusOr<DType> QuantizedDType(const Attributes& attrs, DType zero_point) {
  if (zero_point != DType::kUndefined) return zero_point;
  AMP_ASSIGN_OR_RETURN(int64_t code, attrs.GetInt("output_dtype", 0));
  if (code == 0) return DType::kUInt8;
  const DType t = DTypeFromOnnx(code);
  if (t != DType::kInt8 && t != DType::kUInt8)
    return Unimplemented("output_dtype ", OnnxTypeName(code), " (int8 and uint8 are supported)");
  return t;
}

namespace {

// Scale (and zero point) of a layout that fits the data, where both shapes are known.
Status CheckLayout(const InferContext& ctx, size_t data, size_t scale) {
  if (!ctx.inputs[data].has_shape || !ctx.inputs[scale].has_shape || !ctx.inputs[data].shape.is_static() ||
      !ctx.inputs[scale].shape.is_static())
    return Status::Ok();
  auto l = DecodeQuantLayout(*ctx.attrs, ctx.inputs[data].shape.static_dims(), ctx.inputs[scale].shape.static_dims());
  return l.ok() ? Status::Ok() : ctx.Error(l.status().message());
}

}  // namespace

// QuantizeLinear(x float, y_scale float, y_zero_point? int8/uint8) -> x's shape in the quantized dtype.
Status InferQuantizeLinear(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 1, IsFloat(ctx.inputs[1].dtype), "a float type (y_scale)"));
  const DType zp = ctx.has_input(2) ? ctx.inputs[2].dtype : DType::kUndefined;
  auto t = QuantizedDType(*ctx.attrs, zp);
  if (!t.ok()) return ctx.Error(t.status().message());
  if (!QuantRange(*t).ok() || *t == DType::kInt32) return ctx.Error("quantizes to ", DTypeName(*t), ": int8 and uint8 are supported");
  AMP_RETURN_IF_ERROR(CheckLayout(ctx, 0, 1));
  ctx.outputs[0] = TensorType{*t, ctx.inputs[0].shape, ctx.inputs[0].has_shape};
  return Status::Ok();
}

// DequantizeLinear(x int8/uint8/int32, x_scale float, x_zero_point? x's dtype) -> x's shape in the scale's dtype.
Status InferDequantizeLinear(InferContext& ctx) {
  if (!QuantRange(ctx.inputs[0].dtype).ok()) return ctx.Error("input has dtype ", DTypeName(ctx.inputs[0].dtype), ", expected int8, uint8 or int32");
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 1, IsFloat(ctx.inputs[1].dtype), "a float type (x_scale)"));
  if (ctx.has_input(2) && ctx.inputs[2].dtype != ctx.inputs[0].dtype)
    return ctx.Error("x_zero_point has dtype ", DTypeName(ctx.inputs[2].dtype), ", expected the input's ", DTypeName(ctx.inputs[0].dtype));
  AMP_RETURN_IF_ERROR(CheckLayout(ctx, 0, 1));
  DType out = ctx.inputs[1].dtype;
  AMP_ASSIGN_OR_RETURN(int64_t code, ctx.attrs->GetInt("output_dtype", 0));
  if (code != 0) {
    out = DTypeFromOnnx(code);
    if (!IsFloat(out)) return ctx.Error("output_dtype ", OnnxTypeName(code), " is not a float type");
  }
  ctx.outputs[0] = TensorType{out, ctx.inputs[0].shape, ctx.inputs[0].has_shape};
  return Status::Ok();
}

// FakeQuantize(x float, scale float, zero_point? int) , attrs axis, block_size, qmin, qmax -> (y x's type, mask bool).
Status InferFakeQuantize(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 1, IsFloat(ctx.inputs[1].dtype), "a float type (scale)"));
  AMP_RETURN_IF_ERROR(ctx.attrs->GetInt("qmin", 0).status());
  AMP_RETURN_IF_ERROR(ctx.attrs->GetInt("qmax", 255).status());
  AMP_RETURN_IF_ERROR(CheckLayout(ctx, 0, 1));
  ctx.outputs[0] = ctx.inputs[0];
  if (ctx.outputs.size() > 1) ctx.outputs[1] = TensorType{DType::kBool, ctx.inputs[0].shape, ctx.inputs[0].has_shape};
  return Status::Ok();
}

}  // namespace amptrain::ir
