#include "ir/infer/infer_util.h"

namespace amptrain::ir {

StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  size_t r = std::max(a.rank(), b.rank());
  std::vector<Dim> out(r);
  for (size_t i = 0; i < r; ++i) {
    const Dim* da = i < r - a.rank() ? nullptr : &a[i - (r - a.rank())];
    const Dim* db = i < r - b.rank() ? nullptr : &b[i - (r - b.rank())];
    if (!da) { out[i] = *db; continue; }
    if (!db) { out[i] = *da; continue; }
    if (da->is_static() && da->value == 1) out[i] = *db;
    else if (db->is_static() && db->value == 1) out[i] = *da;
    else if (*da == *db) out[i] = *da;
    else if (da->is_static() && db->is_static())
      return InvalidArgument("shapes ", a.ToString(), " and ", b.ToString(), " do not broadcast");
    else out[i] = da->is_static() ? *da : *db;  // a symbol must equal the static size
  }
  return Shape(std::move(out));
}

StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return OutOfRange("axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

Status RequireShape(const InferContext& ctx, size_t i) {
  if (i >= ctx.inputs.size() || !ctx.inputs[i].has_shape) return ctx.Error("input ", i, " has no known shape");
  return Status::Ok();
}

}  // namespace amptrain::ir

// ---- Value propagation of elementwise ops ----

#include <cmath>
#include <limits>

namespace amptrain::ir {

Tensor NewPropagatedValue(const TensorType& type) {
  if (!type.has_shape || !type.shape.is_static() || type.dtype == DType::kUndefined) return Tensor();
  int64_t n = 0;
  std::vector<int64_t> dims = type.shape.static_dims();
  if (!CheckedNumElements(dims, &n) || n > kMaxPropagatedElements) return Tensor();
  StatusOr<Tensor> t = Tensor::Zeros(type.dtype, std::move(dims));
  return t.ok() ? std::move(t).value() : Tensor();
}

namespace {
template <class I>
I ClampToInt(double v) {
  if (std::isnan(v)) return 0;
  double t = std::trunc(v);
  if (t <= static_cast<double>(std::numeric_limits<I>::lowest())) return std::numeric_limits<I>::lowest();
  if (t >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(t);
}
}  // namespace

void SetElementFromDouble(Tensor& t, int64_t i, double v) {
  switch (t.dtype()) {
    case DType::kFloat32: t.data<float>()[i] = static_cast<float>(v); break;
    case DType::kFloat16: t.data<uint16_t>()[i] = FloatToHalf(static_cast<float>(v)); break;
    case DType::kBFloat16: t.data<uint16_t>()[i] = FloatToBFloat16(static_cast<float>(v)); break;
    case DType::kFloat64: t.data<double>()[i] = v; break;
    case DType::kInt64: t.data<int64_t>()[i] = ClampToInt<int64_t>(v); break;
    case DType::kInt32: t.data<int32_t>()[i] = ClampToInt<int32_t>(v); break;
    case DType::kInt8: t.data<int8_t>()[i] = ClampToInt<int8_t>(v); break;
    case DType::kUInt8: t.data<uint8_t>()[i] = ClampToInt<uint8_t>(v); break;
    case DType::kBool: t.data<uint8_t>()[i] = v != 0.0 ? 1 : 0; break;
    case DType::kUndefined: break;
  }
}

void SetElementFromInt64(Tensor& t, int64_t i, int64_t v) {
  switch (t.dtype()) {
    case DType::kInt64: t.data<int64_t>()[i] = v; break;
    case DType::kInt32: t.data<int32_t>()[i] = static_cast<int32_t>(v); break;
    case DType::kInt8: t.data<int8_t>()[i] = static_cast<int8_t>(v); break;
    case DType::kUInt8: t.data<uint8_t>()[i] = static_cast<uint8_t>(v); break;
    case DType::kBool: t.data<uint8_t>()[i] = v != 0 ? 1 : 0; break;
    default: SetElementFromDouble(t, i, static_cast<double>(v)); break;
  }
}

BroadcastIndex::BroadcastIndex(const std::vector<int64_t>& in_dims, const std::vector<int64_t>& out_dims)
    : out_dims_(out_dims), in_strides_(out_dims.size(), 0) {
  int64_t stride = 1;
  for (size_t k = 0; k < in_dims.size() && k < out_dims.size(); ++k) {
    size_t in_axis = in_dims.size() - 1 - k, out_axis = out_dims.size() - 1 - k;
    if (in_dims[in_axis] != 1) in_strides_[out_axis] = stride;
    stride *= in_dims[in_axis];
  }
}

int64_t BroadcastIndex::operator()(int64_t out_index) const {
  int64_t in = 0;
  for (size_t a = out_dims_.size(); a-- > 0;) {
    int64_t d = out_dims_[a];
    if (d > 0) {
      in += (out_index % d) * in_strides_[a];
      out_index /= d;
    }
  }
  return in;
}

}  // namespace amptrain::ir

// ---- dtype checks and errors shared by the elementwise/reduce/norm rules ----

namespace amptrain::ir {

Status ExpectInputDType(const InferContext& ctx, size_t i, bool ok, const char* expected) {
  if (ok) return Status::Ok();
  return ctx.Error("input ", i, " has dtype ", DTypeName(ctx.inputs[i].dtype), ", expected ", expected);
}

Status ExpectSameDType(const InferContext& ctx, size_t a, size_t b) {
  if (ctx.inputs[a].dtype == ctx.inputs[b].dtype) return Status::Ok();
  return ctx.Error("inputs ", a, " and ", b, " have different dtypes (", DTypeName(ctx.inputs[a].dtype), " vs ",
                   DTypeName(ctx.inputs[b].dtype), ")");
}

Status NodeOutOfRange(const InferContext& ctx, const std::string& message) {
  return Status(StatusCode::kOutOfRange, StrCat(ctx.node ? ctx.node->Describe() : std::string("node"), ": ", message));
}

}  // namespace amptrain::ir
