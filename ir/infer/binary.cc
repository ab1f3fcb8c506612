// Shape/dtype rules of the broadcasting binary and variadic ops (numpy
// broadcasting over all inputs). Arithmetic, Max/Min, compares and Where
// propagate values; integer math wraps like the int64 kernels, and integer
// division truncates toward zero (division by zero gives 0; so does Mod).
#include <algorithm>
#include <cmath>

#include "ir/float_mod.h"
#include "ir/infer/infer_util.h"
#include "ir/infer/value_util.h"

namespace amptrain::ir {

namespace {

// outputs[0] = broadcast of the inputs' shapes with dtype `dtype`; no shape
// when any input's shape is unknown.
Status BroadcastOutput(InferContext& ctx, DType dtype) {
  TensorType out;
  out.dtype = dtype;
  out.has_shape = true;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (!ctx.inputs[i].has_shape) {
      out.has_shape = false;
      out.shape = Shape();
      break;
    }
    StatusOr<Shape> s = BroadcastShapes(out.shape, ctx.inputs[i].shape);
    if (!s.ok()) return ctx.Error(s.status().message());
    out.shape = std::move(s).value();
  }
  ctx.outputs[0] = std::move(out);
  return Status::Ok();
}

Status SameNumericInputs(InferContext& ctx) {
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, i, IsNumeric(ctx.inputs[i].dtype), "a numeric type"));
    AMP_RETURN_IF_ERROR(ExpectSameDType(ctx, 0, i));
  }
  return Status::Ok();
}

int64_t Wrap(uint64_t v) { return static_cast<int64_t>(v); }

int64_t IntDiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return Wrap(0 - static_cast<uint64_t>(a));
  return a / b;
}

// a mod b: the sign of b (Python's %, Mod fmod=0) or of a (C's %, fmod=1).
int64_t IntMod(int64_t a, int64_t b, bool floor_mod) {
  if (b == 0 || b == -1) return 0;
  int64_t r = a % b;
  return floor_mod && r != 0 && (r < 0) != (b < 0) ? r + b : r;
}

// Propagates fi (integer inputs) or ff (float inputs) over every input.
template <class FI, class FF>
void Propagate(InferContext& ctx, DType math, FI fi, FF ff) {
  std::vector<size_t> ins(ctx.inputs.size());
  for (size_t i = 0; i < ins.size(); ++i) ins[i] = i;
  if (IsFloat(math)) PropagateElementwise<double>(ctx, ins, 0, ff);
  else PropagateElementwise<int64_t>(ctx, ins, 0, fi);
}

// Shape arithmetic on tracked dims (batch * heads, embed / heads): output
// element k = a[k] op b[k], a one-element side broadcast, for integer
// operands of rank <= 1 whose elements are known as SymInts.
void PropagateSymArith(InferContext& ctx, char op) {
  if (!IsInteger(ctx.inputs[0].dtype) || ctx.inputs.size() != 2 || (ctx.value(0) && ctx.value(1))) return;
  auto a = KnownSyms(ctx, 0), b = KnownSyms(ctx, 1);
  const TensorType& out = ctx.outputs[0];
  if (!a || !b || !out.has_shape || out.shape.rank() > 1) return;
  const size_t n = std::max(a->size(), b->size());
  if ((a->size() != n && a->size() != 1) || (b->size() != n && b->size() != 1)) return;
  std::vector<SymInt> r;
  for (size_t k = 0; k < n; ++k) r.push_back(SymArith(op, (*a)[a->size() == 1 ? 0 : k], (*b)[b->size() == 1 ? 0 : k]));
  SetSyms(ctx, 0, std::move(r));
}

template <class FI, class FF>
Status Arithmetic(InferContext& ctx, FI fi, FF ff, char op = 0) {
  AMP_RETURN_IF_ERROR(SameNumericInputs(ctx));
  AMP_RETURN_IF_ERROR(BroadcastOutput(ctx, ctx.inputs[0].dtype));
  Propagate(ctx, ctx.inputs[0].dtype, fi, ff);
  if (op) PropagateSymArith(ctx, op);
  return Status::Ok();
}

template <class FI, class FF>
Status Compare(InferContext& ctx, bool numeric_only, FI fi, FF ff) {
  if (numeric_only) AMP_RETURN_IF_ERROR(SameNumericInputs(ctx));
  else AMP_RETURN_IF_ERROR(ExpectSameDType(ctx, 0, 1));
  AMP_RETURN_IF_ERROR(BroadcastOutput(ctx, DType::kBool));
  Propagate(ctx, ctx.inputs[0].dtype, fi, ff);
  return Status::Ok();
}

}  // namespace

Status InferAdd(InferContext& ctx) {
  return Arithmetic(
      ctx, [](const int64_t* a) { return Wrap(static_cast<uint64_t>(a[0]) + static_cast<uint64_t>(a[1])); },
      [](const double* a) { return a[0] + a[1]; }, '+');
}

Status InferSub(InferContext& ctx) {
  return Arithmetic(
      ctx, [](const int64_t* a) { return Wrap(static_cast<uint64_t>(a[0]) - static_cast<uint64_t>(a[1])); },
      [](const double* a) { return a[0] - a[1]; }, '-');
}

Status InferMul(InferContext& ctx) {
  return Arithmetic(
      ctx, [](const int64_t* a) { return Wrap(static_cast<uint64_t>(a[0]) * static_cast<uint64_t>(a[1])); },
      [](const double* a) { return a[0] * a[1]; }, '*');
}

Status InferDiv(InferContext& ctx) {
  return Arithmetic(ctx, [](const int64_t* a) { return IntDiv(a[0], a[1]); },
                    [](const double* a) { return a[0] / a[1]; }, '/');
}

// Mod(A, B), attr fmod: 0 (default) = A - floor(A / B) * B, the divisor's
// sign (Python's %), integers, and from opset 28 floats too (a zero result
// takes B's sign); 1 = C fmod, the dividend's sign, floats and integers.
Status InferMod(InferContext& ctx) {
  AMP_ASSIGN_OR_RETURN(int64_t fmod, ctx.attrs->GetInt("fmod", 0));
  if (fmod != 0 && fmod != 1) return ctx.Error("attribute fmod is ", fmod, ", expected 0 or 1");
  AMP_RETURN_IF_ERROR(SameNumericInputs(ctx));
  if (fmod == 0 && IsFloat(ctx.inputs[0].dtype) && ctx.opset < 28)
    return ctx.Error("fmod=0 takes integer inputs before opset 28 (this model's opset is ", ctx.opset, "); ",
                     DTypeName(ctx.inputs[0].dtype), " inputs need fmod=1");
  const bool floor_mod = fmod == 0;
  return Arithmetic(ctx, [floor_mod](const int64_t* a) { return IntMod(a[0], a[1], floor_mod); },
                    [floor_mod](const double* a) { return floor_mod ? FloorMod(a[0], a[1]) : std::fmod(a[0], a[1]); });
}

// Pow(base, exponent): any numeric pair; the output has the base's dtype.
Status InferPow(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsNumeric(ctx.inputs[0].dtype), "a numeric type"));
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 1, IsNumeric(ctx.inputs[1].dtype), "a numeric type"));
  AMP_RETURN_IF_ERROR(BroadcastOutput(ctx, ctx.inputs[0].dtype));
  // Values propagate: traced sizes such as int(N ** 0.5), the side of a
  // square position table (Hugging Face DINOv2's interpolation). Integer
  // bases multiply (wrapping, as the kernels); a negative integer exponent
  // gives the truncated 1 / x^n.
  if (IsFloat(ctx.inputs[0].dtype)) {
    PropagateElementwise<double>(ctx, {0, 1}, 0, [](const double* a) { return std::pow(a[0], a[1]); });
  } else if (IsInteger(ctx.inputs[1].dtype)) {
    PropagateElementwise<int64_t>(ctx, {0, 1}, 0, [](const int64_t* a) -> int64_t {
      if (a[1] < 0) return a[0] == 1 ? 1 : a[0] == -1 ? (a[1] % 2 == 0 ? 1 : -1) : 0;
      uint64_t r = 1, base = static_cast<uint64_t>(a[0]);
      for (uint64_t e = static_cast<uint64_t>(a[1]); e; e >>= 1, base *= base)
        if (e & 1) r *= base;
      return Wrap(r);
    });
  }
  return Status::Ok();
}

Status InferMax(InferContext& ctx) {
  return Arithmetic(
      ctx,
      [n = ctx.inputs.size()](const int64_t* a) {
        int64_t m = a[0];
        for (size_t i = 1; i < n; ++i) m = std::max(m, a[i]);
        return m;
      },
      [n = ctx.inputs.size()](const double* a) {
        double m = a[0];
        for (size_t i = 1; i < n; ++i) m = std::isnan(a[i]) || a[i] > m ? a[i] : m;
        return m;
      });
}

Status InferMin(InferContext& ctx) {
  return Arithmetic(
      ctx,
      [n = ctx.inputs.size()](const int64_t* a) {
        int64_t m = a[0];
        for (size_t i = 1; i < n; ++i) m = std::min(m, a[i]);
        return m;
      },
      [n = ctx.inputs.size()](const double* a) {
        double m = a[0];
        for (size_t i = 1; i < n; ++i) m = std::isnan(a[i]) || a[i] < m ? a[i] : m;
        return m;
      });
}

Status InferEqual(InferContext& ctx) {
  return Compare(
      ctx, false, [](const int64_t* a) -> int64_t { return a[0] == a[1]; },
      [](const double* a) -> double { return a[0] == a[1]; });
}

Status InferLess(InferContext& ctx) {
  return Compare(
      ctx, true, [](const int64_t* a) -> int64_t { return a[0] < a[1]; },
      [](const double* a) -> double { return a[0] < a[1]; });
}

Status InferGreater(InferContext& ctx) {
  return Compare(
      ctx, true, [](const int64_t* a) -> int64_t { return a[0] > a[1]; },
      [](const double* a) -> double { return a[0] > a[1]; });
}

Status InferLessOrEqual(InferContext& ctx) {
  return Compare(
      ctx, true, [](const int64_t* a) -> int64_t { return a[0] <= a[1]; },
      [](const double* a) -> double { return a[0] <= a[1]; });
}

Status InferGreaterOrEqual(InferContext& ctx) {
  return Compare(
      ctx, true, [](const int64_t* a) -> int64_t { return a[0] >= a[1]; },
      [](const double* a) -> double { return a[0] >= a[1]; });
}

namespace {

// And, Or, Xor: bool inputs, bool output, values propagated.
template <class F>
Status Logical(InferContext& ctx, F f) {
  for (size_t i = 0; i < 2; ++i)
    AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, i, ctx.inputs[i].dtype == DType::kBool, "bool"));
  AMP_RETURN_IF_ERROR(BroadcastOutput(ctx, DType::kBool));
  PropagateElementwise<int64_t>(ctx, {0, 1}, 0, [f](const int64_t* a) -> int64_t { return f(a[0] != 0, a[1] != 0); });
  return Status::Ok();
}

}  // namespace

Status InferAnd(InferContext& ctx) { return Logical(ctx, [](bool a, bool b) { return a && b; }); }
Status InferOr(InferContext& ctx) { return Logical(ctx, [](bool a, bool b) { return a || b; }); }
Status InferXor(InferContext& ctx) { return Logical(ctx, [](bool a, bool b) { return a != b; }); }

// PRelu(X, slope): X's type; slope has X's dtype and broadcasts to X
// (unidirectionally: the output has X's shape).
Status InferPRelu(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  AMP_RETURN_IF_ERROR(ExpectSameDType(ctx, 0, 1));
  AMP_RETURN_IF_ERROR(BroadcastOutput(ctx, ctx.inputs[0].dtype));
  const TensorType& x = ctx.inputs[0];
  const TensorType& y = ctx.outputs[0];
  bool grows = x.has_shape && y.has_shape && y.shape.rank() != x.shape.rank();
  for (size_t d = 0; !grows && x.has_shape && y.has_shape && d < x.shape.rank(); ++d)
    grows = y.shape[d].is_static() && x.shape[d].is_static() && y.shape[d].value != x.shape[d].value;
  if (grows)
    return ctx.Error("slope of shape ", ctx.inputs[1].shape.ToString(), " does not broadcast to X's shape ",
                     x.shape.ToString());
  if (x.has_shape) ctx.outputs[0].shape = x.shape;
  return Status::Ok();
}

// Where(condition: bool, X, Y): X's dtype, broadcast of all three shapes.
Status InferWhere(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, ctx.inputs[0].dtype == DType::kBool, "bool"));
  AMP_RETURN_IF_ERROR(ExpectSameDType(ctx, 1, 2));
  AMP_RETURN_IF_ERROR(BroadcastOutput(ctx, ctx.inputs[1].dtype));
  Propagate(
      ctx, ctx.inputs[1].dtype, [](const int64_t* a) { return a[0] ? a[1] : a[2]; },
      [](const double* a) { return a[0] != 0.0 ? a[1] : a[2]; });
  return Status::Ok();
}

}  // namespace amptrain::ir
