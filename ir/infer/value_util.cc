#include "ir/infer/value_util.h"

#include <cstring>
#include <limits>

namespace amptrain::ir {

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

std::optional<std::vector<int64_t>> KnownInts(const InferContext& ctx, size_t i) {
  const Tensor* t = ctx.has_input(i) ? ctx.value(i) : nullptr;
  if (!t || t->empty()) return std::nullopt;
  return t->ToInt64Vector();
}

std::optional<std::vector<int64_t>> StaticDims(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i) || !ctx.inputs[i].has_shape || !ctx.inputs[i].shape.is_static()) return std::nullopt;
  return ctx.inputs[i].shape.static_dims();
}

std::vector<int64_t> DimsOrUnknown(const Shape& s) {
  std::vector<int64_t> d;
  d.reserve(s.rank());
  for (const Dim& x : s.dims()) d.push_back(x.is_static() ? x.value : -1);
  return d;
}

Shape ShapeFromDims(const std::vector<int64_t>& dims) {
  std::vector<Dim> d;
  d.reserve(dims.size());
  for (int64_t v : dims) d.push_back(v >= 0 ? Dim::Static(v) : UnknownDim());
  return Shape(std::move(d));
}

StatusOr<Tensor> MapElements(const std::vector<const Tensor*>& sources, const std::vector<int64_t>& out_dims,
                             const IndexMap& map) {
  int64_t n = 0;
  if (!CheckedNumElements(out_dims, &n) || !Propagatable(n))
    return OutOfRange("value of ", n, " elements is too large to propagate");
  DType dt = sources.front()->dtype();
  AMP_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(dt, out_dims));
  size_t es = DTypeSize(dt);
  std::vector<int64_t> idx(out_dims.size(), 0);
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t flat = 0; flat < n; ++flat) {
    auto [src, j] = map(idx);
    const Tensor* s = sources[src];
    if (j < 0 || j >= s->num_elements()) return Internal("value propagation index ", j, " out of range");
    std::memcpy(dst + flat * es, static_cast<const std::byte*>(s->raw()) + j * es, es);
    for (size_t d = out_dims.size(); d-- > 0;) {
      if (++idx[d] < out_dims[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

StatusOr<Tensor> MapElements(const Tensor& source, const std::vector<int64_t>& out_dims,
                             const std::function<int64_t(const std::vector<int64_t>&)>& map) {
  return MapElements({&source}, out_dims, [&](const std::vector<int64_t>& i) {
    return std::pair<size_t, int64_t>(0, map(i));
  });
}

void SetValue(InferContext& ctx, size_t out, Tensor t) {
  if (t.empty() || !Propagatable(t.num_elements())) return;
  if (ctx.output_values.size() < ctx.outputs.size()) ctx.output_values.resize(ctx.outputs.size());
  ctx.output_values[out] = std::move(t);
}

void PropagateReshaped(InferContext& ctx, size_t out, size_t in) {
  PropagateSyms(ctx, out, in);
  const Tensor* v = ctx.value(in);
  const TensorType& ot = ctx.outputs[out];
  if (!v || v->empty() || !ot.has_shape || !ot.shape.is_static()) return;
  auto r = v->Reshaped(ot.shape.static_dims());
  if (r.ok()) SetValue(ctx, out, *r);
}

StatusOr<Tensor> ConvertElements(const Tensor& t, DType to) {
  AMP_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(to, t.dims()));
  const bool from_float = IsFloat(t.dtype());
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    double f = t.GetAsDouble(i);
    int64_t n = from_float ? static_cast<int64_t>(f) : t.GetAsInt64(i);
    switch (to) {
      case DType::kFloat32: out.data<float>()[i] = static_cast<float>(f); break;
      case DType::kFloat16: out.data<uint16_t>()[i] = FloatToHalf(static_cast<float>(f)); break;
      case DType::kBFloat16: out.data<uint16_t>()[i] = FloatToBFloat16(static_cast<float>(f)); break;
      case DType::kFloat64: out.data<double>()[i] = f; break;
      case DType::kInt64: out.data<int64_t>()[i] = n; break;
      case DType::kInt32: out.data<int32_t>()[i] = static_cast<int32_t>(n); break;
      case DType::kInt8: out.data<int8_t>()[i] = static_cast<int8_t>(n); break;
      case DType::kUInt8: out.data<uint8_t>()[i] = static_cast<uint8_t>(n); break;
      case DType::kBool: out.data<uint8_t>()[i] = f != 0.0 ? 1 : 0; break;
      case DType::kUndefined: return InvalidArgument("cannot convert to an undefined dtype");
    }
  }
  return out;
}

Dim ProductDim(const std::vector<Dim>& dims) {
  Dim prod = Dim::Static(1);
  for (const Dim& d : dims) {
    std::optional<Dim> p = MulDims(prod, d);
    if (!p) return UnknownDim();
    prod = *p;
  }
  return prod;
}

std::optional<std::vector<SymInt>> KnownSyms(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i) || !IsInteger(ctx.inputs[i].dtype)) return std::nullopt;
  if (auto ints = KnownInts(ctx, i)) {
    std::vector<SymInt> out;
    for (int64_t v : *ints) out.push_back(SymInt::Int(v));
    return out;
  }
  if (const std::vector<SymInt>* s = ctx.sym_value(i)) return *s;
  return std::nullopt;
}

void SetSyms(InferContext& ctx, size_t out, std::vector<SymInt> syms) {
  bool any = false;
  for (const SymInt& s : syms) any = any || s.known || !s.symbol.empty();
  if ((!any && !syms.empty()) || syms.size() > static_cast<size_t>(kMaxPropagatedElements)) return;
  if (ctx.output_sym_values.size() < ctx.outputs.size()) ctx.output_sym_values.resize(ctx.outputs.size());
  ctx.output_sym_values[out] = std::move(syms);
}

void PropagateSyms(InferContext& ctx, size_t out, size_t in) {
  const TensorType& ot = ctx.outputs[out];
  if (!IsInteger(ot.dtype)) return;
  auto syms = KnownSyms(ctx, in);
  if (!syms || !ot.has_shape || ot.shape.num_elements() != static_cast<int64_t>(syms->size())) return;
  SetSyms(ctx, out, std::move(*syms));
}

SymInt SymArith(char op, const SymInt& a, const SymInt& b) {
  if (a.known && b.known) {
    int64_t r = 0;
    switch (op) {
      case '+': if (!CheckedAdd(a.value, b.value, &r)) return SymInt::Unknown(); break;
      case '-': if (__builtin_sub_overflow(a.value, b.value, &r)) return SymInt::Unknown(); break;
      case '*': if (!CheckedMul(a.value, b.value, &r)) return SymInt::Unknown(); break;
      case '/':
        if (b.value == 0 || (a.value == std::numeric_limits<int64_t>::min() && b.value == -1)) return SymInt::Unknown();
        r = a.value / b.value;
        break;
      default: return SymInt::Unknown();
    }
    return SymInt::Int(r);
  }
  if ((op == '+' || op == '-') && b.known && b.value == 0) return a;
  if (op == '+' && a.known && a.value == 0) return b;
  if (op != '*' && op != '/') return SymInt::Unknown();
  // Dims are >= 0: a negative known operand has no dim form.
  if ((a.known && a.value < 0) || (b.known && b.value < 0)) return SymInt::Unknown();
  std::optional<Dim> d = op == '*' ? MulDims(a.ToDim(), b.ToDim()) : DivDims(a.ToDim(), b.ToDim());
  return d ? SymInt::FromDim(*d) : SymInt::Unknown();
}

}  // namespace amptrain::ir
