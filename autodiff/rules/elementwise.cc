// Gradient rules of the elementwise ops. y = op(x...) with numpy broadcasting;
// a broadcast input gets its gradient summed back to its shape (SumTo).
#include <cmath>

#include "autodiff/grad_context.h"
#include "ir/onnx_dtype.h"

namespace amptrain::autodiff {

namespace {

using ir::OpKind;
using ir::Value;

// Where(cond, dy, 0): dy where cond holds.
Value Masked(GradContext& c, Value cond, Value dy) {
  return c.Emit1(OpKind::kWhere, {cond, dy, c.Scalar(0.0, dy)});
}

Status AddGrad(GradContext& c) {
  Value dy = c.grad_output(0);
  if (c.needs_grad(0)) c.SetGrad(0, c.SumTo(dy, c.input(0)));
  if (c.needs_grad(1)) c.SetGrad(1, c.SumTo(dy, c.input(1)));
  return Status::Ok();
}

Status SubGrad(GradContext& c) {
  Value dy = c.grad_output(0);
  if (c.needs_grad(0)) c.SetGrad(0, c.SumTo(dy, c.input(0)));
  if (c.needs_grad(1)) c.SetGrad(1, c.SumTo(c.Neg(dy), c.input(1)));
  return Status::Ok();
}

Status MulGrad(GradContext& c) {
  Value dy = c.grad_output(0), a = c.input(0), b = c.input(1);
  if (c.needs_grad(0)) c.SetGrad(0, c.SumTo(c.Mul(dy, b), a));
  if (c.needs_grad(1)) c.SetGrad(1, c.SumTo(c.Mul(dy, a), b));
  return Status::Ok();
}

Status DivGrad(GradContext& c) {  // y = a / b: da = dy / b, db = -dy * y / b
  Value dy = c.grad_output(0), a = c.input(0), b = c.input(1);
  Value dy_b = c.Div(dy, b);
  if (c.needs_grad(0)) c.SetGrad(0, c.SumTo(dy_b, a));
  if (c.needs_grad(1)) c.SetGrad(1, c.SumTo(c.Neg(c.Mul(dy_b, c.output(0))), b));
  return Status::Ok();
}

// y = fmod(a, b) = a - trunc(a / b) b (fmod=1; fmod=0 is integer-only):
// da = dy, db = -dy trunc(a / b), with trunc(a / b) = (a - y) / b.
Status ModGrad(GradContext& c) {
  if (c.attrs().Int("fmod", 0) != 1) return c.Unsupported("fmod=0 takes integers, which have no gradient");
  Value dy = c.grad_output(0), a = c.input(0), b = c.input(1);
  if (c.needs_grad(0)) c.SetGrad(0, c.SumTo(dy, a));
  if (c.needs_grad(1)) {
    Value quotient = c.Div(c.Sub(a, c.output(0)), b);
    c.SetGrad(1, c.SumTo(c.Neg(c.Mul(dy, quotient)), b));
  }
  return Status::Ok();
}

// v cast to `like`'s dtype (itself when they agree).
Value CastLike(GradContext& c, Value v, Value like) {
  const ir::DType to = c.type(like).dtype;
  if (c.type(v).dtype == to) return v;
  ir::Attributes a;
  a.Set("to", static_cast<int64_t>(ir::OnnxFromDType(to)));
  return c.Emit1(OpKind::kCast, {v}, std::move(a));
}

// y = a^b: da = dy * b * a^(b-1), db = dy * y * ln a. The exponent keeps its
// own dtype under AMP (an fp32 constant next to a low base): the products run
// in the base's dtype, and db is cast back to the exponent's.
Status PowGrad(GradContext& c) {
  Value dy = c.grad_output(0), a = c.input(0), b = c.input(1);
  if (c.needs_grad(0)) {
    Value a_bm1 = c.Emit1(OpKind::kPow, {a, c.Sub(b, c.Scalar(1.0, b))});
    c.SetGrad(0, c.SumTo(c.Mul(dy, c.Mul(CastLike(c, b, a), a_bm1)), a));
  }
  if (c.needs_grad(1)) {
    Value ln_a = c.Emit1(OpKind::kLog, {a});
    c.SetGrad(1, c.SumTo(CastLike(c, c.Mul(dy, c.Mul(c.output(0), ln_a)), b), b));
  }
  return Status::Ok();
}

Status NegGrad(GradContext& c) {
  c.SetGrad(0, c.Neg(c.grad_output(0)));
  return Status::Ok();
}

Status IdentityGrad(GradContext& c) {
  c.SetGrad(0, c.grad_output(0));
  return Status::Ok();
}

Status SqrtGrad(GradContext& c) {  // dy / (2 y)
  Value y = c.output(0);
  c.SetGrad(0, c.Div(c.grad_output(0), c.Mul(y, c.Scalar(2.0, y))));
  return Status::Ok();
}

Status ExpGrad(GradContext& c) {
  c.SetGrad(0, c.Mul(c.grad_output(0), c.output(0)));
  return Status::Ok();
}

Status LogGrad(GradContext& c) {
  c.SetGrad(0, c.Div(c.grad_output(0), c.input(0)));
  return Status::Ok();
}

Status ReciprocalGrad(GradContext& c) {  // -dy * y^2
  Value y = c.output(0);
  c.SetGrad(0, c.Neg(c.Mul(c.grad_output(0), c.Mul(y, y))));
  return Status::Ok();
}

Status AbsGrad(GradContext& c) {
  Value dy = c.grad_output(0), x = c.input(0);
  Value negative = c.Emit1(OpKind::kLess, {x, c.Scalar(0.0, x)});
  c.SetGrad(0, c.Emit1(OpKind::kWhere, {negative, c.Neg(dy), dy}));
  return Status::Ok();
}

// Max/Min: each input gets dy where it equals the result (every tied input gets it).
Status ExtremumGrad(GradContext& c) {
  Value dy = c.grad_output(0), y = c.output(0);
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    if (!c.needs_grad(i)) continue;
    Value hit = c.Emit1(OpKind::kEqual, {c.input(i), y});
    c.SetGrad(i, c.SumTo(Masked(c, hit, dy), c.input(i)));
  }
  return Status::Ok();
}

Status WhereGrad(GradContext& c) {  // y = cond ? a : b
  Value dy = c.grad_output(0), cond = c.input(0), zero = c.Scalar(0.0, dy);
  if (c.needs_grad(1)) c.SetGrad(1, c.SumTo(c.Emit1(OpKind::kWhere, {cond, dy, zero}), c.input(1)));
  if (c.needs_grad(2)) c.SetGrad(2, c.SumTo(c.Emit1(OpKind::kWhere, {cond, zero, dy}), c.input(2)));
  return Status::Ok();
}

// dX: dy where the input was not clipped (y == x, so x at a bound keeps it,
// as torch.clamp's gradient does). A bound given as a tensor (torch.clamp(x,
// lo, hi), which the TorchScript exporter writes as Clip): d min = the sum of
// dy where x < min, d max = the sum where x > max.
Status ClipGrad(GradContext& c) {
  Value x = c.input(0), dy = c.grad_output(0);
  if (c.needs_grad(0)) c.SetGrad(0, Masked(c, c.Emit1(OpKind::kEqual, {x, c.output(0)}), dy));
  if (c.needs_grad(1)) c.SetGrad(1, c.SumTo(Masked(c, c.Emit1(OpKind::kLess, {x, c.input(1)}), dy), c.input(1)));
  if (c.needs_grad(2)) c.SetGrad(2, c.SumTo(Masked(c, c.Emit1(OpKind::kGreater, {x, c.input(2)}), dy), c.input(2)));
  return Status::Ok();
}

Status CastGrad(GradContext& c) {  // cast back to the source dtype
  ir::Attributes a;
  a.Set("to", static_cast<int64_t>(ir::OnnxFromDType(c.type(c.input(0)).dtype)));
  c.SetGrad(0, c.Emit1(OpKind::kCast, {c.grad_output(0)}, std::move(a)));
  return Status::Ok();
}

Status SigmoidGrad(GradContext& c) {  // dy * y * (1 - y), one kernel
  c.SetGrad(0, c.Emit1(OpKind::kSigmoidGrad, {c.grad_output(0), c.output(0)}));
  return Status::Ok();
}

Status TanhGrad(GradContext& c) {  // dy * (1 - y^2), one kernel
  c.SetGrad(0, c.Emit1(OpKind::kTanhGrad, {c.grad_output(0), c.output(0)}));
  return Status::Ok();
}

Status ReluGrad(GradContext& c) {
  c.SetGrad(0, c.Emit1(OpKind::kReluGrad, {c.grad_output(0), c.output(0)}));
  return Status::Ok();
}

Status LeakyReluGrad(GradContext& c) {  // dy for x > 0, alpha * dy otherwise
  Value dy = c.grad_output(0), x = c.input(0);
  double alpha = c.attrs().Float("alpha", 0.01f);
  Value positive = c.Emit1(OpKind::kGreater, {x, c.Scalar(0.0, x)});
  c.SetGrad(0, c.Emit1(OpKind::kWhere, {positive, dy, c.Mul(dy, c.Scalar(alpha, dy))}));
  return Status::Ok();
}

// y = max(0, min(1, alpha x + beta)): alpha dy where 0 < y < 1, else 0
// (PyTorch's hardsigmoid_backward: 0 at both kinks).
Status HardSigmoidGrad(GradContext& c) {
  Value dy = c.grad_output(0), y = c.output(0);
  double alpha = c.attrs().Float("alpha", 0.2f);
  Value zero = c.Scalar(0.0, dy);
  Value below_one = c.Emit1(OpKind::kLess, {y, c.Scalar(1.0, y)});
  Value inner = c.Emit1(OpKind::kWhere, {below_one, c.Mul(dy, c.Scalar(alpha, dy)), zero});
  c.SetGrad(0, c.Emit1(OpKind::kWhere, {c.Emit1(OpKind::kGreater, {y, c.Scalar(0.0, y)}), inner, zero}));
  return Status::Ok();
}

// dY * f'(X) in one fused kernel (UnaryGrad, kernels/cpu/grad_misc.cc:
// computed in float32 or wider and rounded once, the exponential units' unused
// branch never evaluated, the inverse functions in their factored forms) for
// the elementwise functions whose derivative would be a formula of several
// ops: one kernel and one buffer instead of 3-8 of each, and one rounding in
// fp16 / bf16 where such a graph rounds every step, as PyTorch's fused
// backward kernels (elu_backward, ...) do.
Status FusedUnaryGrad(GradContext& c) {
  ir::Attributes a = c.attrs();
  a.Set("op", std::string(c.node().schema().onnx_type));
  c.SetGrad(0, c.Emit1(OpKind::kUnaryGrad, {c.grad_output(0), c.input(0)}, std::move(a)));
  return Status::Ok();
}


// y = x > 0 ? x : slope x (slope broadcast to x): as PyTorch's prelu
// backward, x = 0 takes the slope branch. dslope sums dy x where x <= 0.
Status PReluGrad(GradContext& c) {
  Value dy = c.grad_output(0), x = c.input(0), slope = c.input(1);
  Value positive = c.Emit1(OpKind::kGreater, {x, c.Scalar(0.0, x)});
  if (c.needs_grad(0)) c.SetGrad(0, c.Emit1(OpKind::kWhere, {positive, dy, c.Mul(dy, slope)}));
  if (c.needs_grad(1))
    c.SetGrad(1, c.SumTo(c.Emit1(OpKind::kWhere, {positive, c.Scalar(0.0, dy), c.Mul(dy, x)}), slope));
  return Status::Ok();
}

Status GeluGrad(GradContext& c) {
  ir::Attributes a;
  a.Set("approximate", c.attrs().Str("approximate", "none"));
  c.SetGrad(0, c.Emit1(OpKind::kGeluGrad, {c.grad_output(0), c.input(0)}, std::move(a)));
  return Status::Ok();
}

// Silu (x Sigmoid(x), fused from the exporters' pair): one SiluGrad.
Status SiluGrad(GradContext& c) {
  c.SetGrad(0, c.Emit1(OpKind::kSiluGrad, {c.grad_output(0), c.input(0)}));
  return Status::Ok();
}

}  // namespace

void RegisterElementwiseRules(RuleTable& t) {
  SetRule(t, OpKind::kAdd, AddGrad);
  SetRule(t, OpKind::kSub, SubGrad);
  SetRule(t, OpKind::kMul, MulGrad);
  SetRule(t, OpKind::kDiv, DivGrad);
  SetRule(t, OpKind::kMod, ModGrad);
  SetRule(t, OpKind::kPow, PowGrad);
  SetRule(t, OpKind::kNeg, NegGrad);
  SetRule(t, OpKind::kIdentity, IdentityGrad);
  SetRule(t, OpKind::kSqrt, SqrtGrad);
  SetRule(t, OpKind::kExp, ExpGrad);
  SetRule(t, OpKind::kLog, LogGrad);
  SetRule(t, OpKind::kReciprocal, ReciprocalGrad);
  SetRule(t, OpKind::kAbs, AbsGrad);
  SetRule(t, OpKind::kMax, ExtremumGrad);
  SetRule(t, OpKind::kMin, ExtremumGrad);
  SetRule(t, OpKind::kWhere, WhereGrad);
  SetRule(t, OpKind::kClip, ClipGrad);
  SetRule(t, OpKind::kCast, CastGrad);
  SetRule(t, OpKind::kErf, FusedUnaryGrad);  // GELU's erf: 2/sqrt(pi) e^(-x^2), one pass instead of five
  SetRule(t, OpKind::kSigmoid, SigmoidGrad);
  SetRule(t, OpKind::kTanh, TanhGrad);
  SetRule(t, OpKind::kRelu, ReluGrad);
  SetRule(t, OpKind::kLeakyRelu, LeakyReluGrad);
  SetRule(t, OpKind::kHardSigmoid, HardSigmoidGrad);
  // x max(0, min(1, x / 6 + 1/2)): as PyTorch's hardswish_backward, 0 for x <= -3,
  // dy (x / 3 + 1/2) for -3 < x < 3, dy for x >= 3 (and NaN); one pass for seven ops.
  SetRule(t, OpKind::kHardSwish, FusedUnaryGrad);
  SetRule(t, OpKind::kGelu, GeluGrad);
  SetRule(t, OpKind::kSilu, SiluGrad);
  SetRule(t, OpKind::kSin, FusedUnaryGrad);
  SetRule(t, OpKind::kCos, FusedUnaryGrad);
  SetRule(t, OpKind::kTan, FusedUnaryGrad);
  SetRule(t, OpKind::kAsin, FusedUnaryGrad);
  SetRule(t, OpKind::kAcos, FusedUnaryGrad);
  SetRule(t, OpKind::kAtan, FusedUnaryGrad);
  SetRule(t, OpKind::kSinh, FusedUnaryGrad);
  SetRule(t, OpKind::kCosh, FusedUnaryGrad);
  SetRule(t, OpKind::kAsinh, FusedUnaryGrad);
  SetRule(t, OpKind::kAcosh, FusedUnaryGrad);
  SetRule(t, OpKind::kAtanh, FusedUnaryGrad);
  SetRule(t, OpKind::kSoftplus, FusedUnaryGrad);
  SetRule(t, OpKind::kElu, FusedUnaryGrad);
  SetRule(t, OpKind::kCelu, FusedUnaryGrad);
  SetRule(t, OpKind::kSelu, FusedUnaryGrad);
  SetRule(t, OpKind::kMish, FusedUnaryGrad);
  SetRule(t, OpKind::kPRelu, PReluGrad);
}

}  // namespace amptrain::autodiff
