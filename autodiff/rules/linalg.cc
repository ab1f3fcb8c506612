// Gradient rules of Gemm and MatMul.
#include <numeric>

#include "autodiff/grad_context.h"

namespace amptrain::autodiff {

namespace {

using ir::OpKind;
using ir::Value;

Value Gemm(GradContext& c, Value a, Value b, int64_t trans_a, int64_t trans_b, float alpha) {
  ir::Attributes attrs;
  attrs.Set("transA", trans_a);
  attrs.Set("transB", trans_b);
  attrs.Set("alpha", alpha);
  return c.Emit1(OpKind::kGemm, {a, b}, std::move(attrs));
}

// Y = alpha * A' B' + beta * C with A' = transA ? A^T : A, B' likewise.
Status GemmGrad(GradContext& c) {
  Value dy = c.grad_output(0), a = c.input(0), b = c.input(1);
  int64_t ta = c.attrs().Int("transA", 0), tb = c.attrs().Int("transB", 0);
  float alpha = c.attrs().Float("alpha", 1.0f), beta = c.attrs().Float("beta", 1.0f);
  if (c.needs_grad(0))  // dA' = alpha dY B'^T
    c.SetGrad(0, ta ? Gemm(c, b, dy, tb, 1, alpha) : Gemm(c, dy, b, 0, tb ? 0 : 1, alpha));
  if (c.needs_grad(1))  // dB' = alpha A'^T dY
    c.SetGrad(1, tb ? Gemm(c, dy, a, 1, ta, alpha) : Gemm(c, a, dy, ta ? 0 : 1, 0, alpha));
  if (c.needs_grad(2)) {
    Value dc = beta == 1.0f ? dy : c.Mul(dy, c.Scalar(beta, dy));
    c.SetGrad(2, c.SumTo(dc, c.input(2)));
  }
  return Status::Ok();
}

// x with its last two axes swapped.
Value SwapLast(GradContext& c, Value x, size_t rank) {
  std::vector<int64_t> perm(rank);
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[rank - 1], perm[rank - 2]);
  ir::Attributes attrs;
  attrs.Set("perm", perm);
  return c.Emit1(OpKind::kTranspose, {x}, std::move(attrs));
}

ir::Attributes FlattenAt(size_t axis) {
  ir::Attributes attrs;
  attrs.Set("axis", static_cast<int64_t>(axis));
  return attrs;
}

Value Unsqueeze(GradContext& c, Value x, std::vector<int64_t> axes) {
  return c.Emit1(OpKind::kUnsqueeze, {x, c.Ints(axes)});
}

// numpy matmul: 1-D operands are promoted to matrices ([K] -> [1,K] for A,
// [K] -> [K,1] for B), batch dims broadcast. Gradients are computed on the
// promoted operands and summed / squeezed back.
Status MatMulGrad(GradContext& c) {
  Value dy = c.grad_output(0), a = c.input(0), b = c.input(1);
  size_t ra = c.rank(a), rb = c.rank(b);
  if (!c.type(a).has_shape || !c.type(b).has_shape) return c.Unsupported("operand ranks are unknown");
  Value a2 = ra == 1 ? Unsqueeze(c, a, {0}) : a;
  Value b2 = rb == 1 ? Unsqueeze(c, b, {1}) : b;
  if (ra >= 2 && rb == 2) {
    // B is a matrix (a Linear layer's weight, exported as MatMul + Add): the
    // product is one GEMM over A's rows, [prod(A.dims[:-1]), K] x [K, N], and
    // so are both gradients. dB = A2^T dY2 sums over every row of every batch
    // in one GEMM, instead of a batch of [K, N] products (and a transposed
    // copy of A) summed by ReduceSumTo afterwards.
    Value a_rows = ra == 2 ? a : c.Emit1(OpKind::kFlatten, {a}, FlattenAt(ra - 1));
    Value dy_rows = ra == 2 ? dy : c.Emit1(OpKind::kFlatten, {dy}, FlattenAt(ra - 1));
    if (c.needs_grad(0)) {  // dA = dY B^T, back in A's shape
      Value da = Gemm(c, dy_rows, b, 0, 1, 1.0f);
      c.SetGrad(0, ra == 2 ? da : c.ReshapeLike(da, a));
    }
    if (c.needs_grad(1)) c.SetGrad(1, Gemm(c, a_rows, dy_rows, 1, 0, 1.0f));
    return Status::Ok();
  }
  Value dy2 = dy;
  if (ra == 1 && rb == 1) dy2 = Unsqueeze(c, dy, {0, 1});
  else if (ra == 1) dy2 = Unsqueeze(c, dy, {-2});
  else if (rb == 1) dy2 = Unsqueeze(c, dy, {-1});
  if (c.needs_grad(0)) {  // dA = dY B^T, [.., M, K] summed to A's shape ([1, K] sums to [K])
    Value da = c.Emit1(OpKind::kMatMul, {dy2, SwapLast(c, b2, std::max<size_t>(rb, 2))});
    c.SetGrad(0, c.SumTo(da, a));
  }
  if (c.needs_grad(1)) {  // dB = A^T dY, [.., K, N]
    Value db = c.Emit1(OpKind::kMatMul, {SwapLast(c, a2, std::max<size_t>(ra, 2)), dy2});
    if (rb == 1) db = c.Emit1(OpKind::kSqueeze, {db, c.Ints({-1})});
    c.SetGrad(1, c.SumTo(db, b));
  }
  return Status::Ok();
}

}  // namespace

void RegisterLinalgRules(RuleTable& t) {
  SetRule(t, OpKind::kGemm, GemmGrad);
  SetRule(t, OpKind::kMatMul, MatMulGrad);
}

}  // namespace amptrain::autodiff
