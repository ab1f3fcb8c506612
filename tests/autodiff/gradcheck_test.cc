// Finite-difference checks of every gradient rule (see gradcheck_util.h). The
// driver's invariants (gradient sums, frozen values, missing rules) are in
// driver_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "autodiff/autodiff.h"
#include "executor/session.h"
#include "tests/autodiff/gradcheck_util.h"

namespace amptrain::autodiff::testing {
namespace {

using ir::Attributes;
using ir::Graph;
using ir::OpKind;
using ir::Value;
using V = std::vector<Value>;

BuildFn Unary(OpKind op, Attributes a = {}) {
  return [op, a](Graph& g, const V& x) { return Op(g, op, {x[0]}, a); };
}
BuildFn Binary(OpKind op) {
  return [op](Graph& g, const V& x) { return Op(g, op, {x[0], x[1]}); };
}

// ---- elementwise ----

struct BinaryCase { OpKind op; std::vector<int64_t> a, b; double lo_b; };

TEST(GradCheck, BinaryBroadcasting) {
  std::vector<std::vector<int64_t>> a{{2, 3}, {2, 1, 3}, {3}, {2, 3}}, b{{2, 3}, {4, 1}, {2, 3}, {1}};
  for (OpKind op : {OpKind::kAdd, OpKind::kSub, OpKind::kMul, OpKind::kDiv}) {
    for (size_t k = 0; k < a.size(); ++k) {
      SCOPED_TRACE(StrCat(ir::Schema(op).name, " ", k));
      double lo = op == OpKind::kDiv ? 0.5 : -1.0;
      GRADCHECK((std::vector<GradInput>{{"a", a[k]}, {"b", b[k], lo, 2.0}}), Binary(op));
    }
  }
}

// fmod on floats: da = dy, db = -dy trunc(a / b); divisors of both signs, broadcast.
TEST(GradCheck, FloatMod) {
  BuildFn mod = [](Graph& g, const V& x) { return Op(g, OpKind::kMod, {x[0], x[1]}, A({{"fmod", int64_t{1}}})); };
  GRADCHECK((std::vector<GradInput>{{"a", {2, 3}, -4.0, 4.0}, {"b", {3}, 0.7, 1.9}}), mod);
  GRADCHECK((std::vector<GradInput>{{"a", {3}, -4.0, 4.0}, {"b", {2, 3}, -1.9, -0.7}}), mod);
}

TEST(GradCheck, Pow) {
  GRADCHECK((std::vector<GradInput>{{"a", {2, 3}, 0.5, 2.0}, {"b", {3}, -1.0, 2.0}}), Binary(OpKind::kPow));
}

// Under AMP the exponent keeps its dtype (an fp32 constant) while the base is
// low (O3: x.pow(2) in bf16): the backward must not mix them in one Mul.
TEST(GradCheck, PowWithAnFp32ExponentOfALowBase) {
  for (ir::DType low : {ir::DType::kBFloat16, ir::DType::kFloat16}) {
    auto g = std::make_unique<Graph>();
    Value x = g->AddInput("x", ir::TensorType::Of(low, {2, 3}));
    Value e = g->AddInput("e", ir::TensorType::Of(ir::DType::kFloat32, std::vector<int64_t>{}));
    Value y = Op(*g, OpKind::kPow, {x, e});
    Value y32 = Op(*g, OpKind::kCast, {y}, A({{"to", int64_t{1}}}));
    Value loss = Op(*g, OpKind::kReduceSum, {y32}, A({{"keepdims", int64_t{0}}}));
    Value seed = Op(*g, OpKind::kCast, {DoublesConst(*g, {1.0}, {})}, A({{"to", int64_t{1}}}));
    ASSERT_TRUE(g->InferShapes().ok());
    auto r = BuildBackward(*g, loss, seed, BackwardOptions{{"x", "e"}, {}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(g->type(r->grads["x"]).dtype, low);
    EXPECT_EQ(g->type(r->grads["e"]).dtype, ir::DType::kFloat32);
    EXPECT_TRUE(g->InferShapes().ok());
  }
}

TEST(GradCheck, UnaryOps) {
  for (OpKind op : {OpKind::kNeg, OpKind::kExp, OpKind::kAbs, OpKind::kIdentity, OpKind::kErf, OpKind::kSigmoid,
                    OpKind::kTanh}) {
    SCOPED_TRACE(ir::Schema(op).name);
    GRADCHECK((std::vector<GradInput>{{"x", {2, 3}, -2.0, 2.0}}), Unary(op));
  }
  for (OpKind op : {OpKind::kSqrt, OpKind::kLog, OpKind::kReciprocal}) {
    SCOPED_TRACE(ir::Schema(op).name);
    GRADCHECK((std::vector<GradInput>{{"x", {2, 3}, 0.5, 2.0}}), Unary(op));
  }
  GRADCHECK((std::vector<GradInput>{{"x", {2, 3}, -2.0, 2.0}}), Unary(OpKind::kLeakyRelu, A({{"alpha", 0.2f}})));
}

TEST(GradCheck, ReluAndGelu) {
  GRADCHECK((std::vector<GradInput>{{"x", {2, 3}}}), Unary(OpKind::kRelu));
  GRADCHECK((std::vector<GradInput>{{"x", {2, 3}}}), Unary(OpKind::kGelu));
  GRADCHECK((std::vector<GradInput>{{"x", {2, 3}}}), Unary(OpKind::kGelu, A({{"approximate", std::string("tanh")}})));
}

// Inputs in [-5, 5] cover all three pieces of each (seeded: the same values every run).
TEST(GradCheck, HardSigmoidAndHardSwish) {
  GRADCHECK((std::vector<GradInput>{{"x", {4, 5}, -5.0, 5.0}}), Unary(OpKind::kHardSigmoid));
  GRADCHECK((std::vector<GradInput>{{"x", {4, 5}, -5.0, 5.0}}),
            Unary(OpKind::kHardSigmoid, A({{"alpha", 0.5f}, {"beta", 0.6f}})));
  GRADCHECK((std::vector<GradInput>{{"x", {4, 5}, -5.0, 5.0}}), Unary(OpKind::kHardSwish));
}

// d sum(op(x)) / dx at the given float64 points (BuildBackward, reference kernels).
std::vector<double> GradAt(OpKind op, const Attributes& a, const std::vector<double>& xs) {
  auto g = std::make_unique<Graph>();
  Value x = g->AddInput("x", ir::TensorType::Of(ir::DType::kFloat64, {static_cast<int64_t>(xs.size())}));
  Value loss = Op(*g, OpKind::kReduceSum, {Op(*g, op, {x}, a)}, A({{"keepdims", int64_t{0}}}));
  Value seed = DoublesConst(*g, {1.0}, {});
  EXPECT_TRUE(g->InferShapes().ok());
  auto r = BuildBackward(*g, loss, seed, BackwardOptions{{"x"}, {}});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return {};
  size_t index = std::find(g->outputs().begin(), g->outputs().end(), r->grads["x"]) - g->outputs().begin();
  EXPECT_LT(index, g->outputs().size());
  executor::SessionOptions o;
  o.kernel_impl = "reference";
  o.training = true;
  auto session = executor::InferenceSession::Create(std::move(g), o);
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  if (!session.ok()) return {};
  ir::Tensor t = *ir::Tensor::Zeros(ir::DType::kFloat64, {static_cast<int64_t>(xs.size())});
  std::copy(xs.begin(), xs.end(), t.data<double>());
  auto out = (*session)->Run({{"x", t}});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok() || index >= out->size()) return {};
  const ir::Tensor& dx = (*out)[index];
  return std::vector<double>(dx.data<double>(), dx.data<double>() + dx.num_elements());
}

// At the kinks the gradient takes PyTorch's choice (torch 2.x
// hardswish_backward / hardsigmoid_backward): HardSwish 0 at x = -3 and dy at
// x = 3; HardSigmoid 0 at both ends, alpha strictly inside.
TEST(GradCheck, HardActivationKinksFollowPyTorch) {
  EXPECT_EQ(GradAt(OpKind::kHardSwish, {}, {-4, -3, -1.5, 0, 1.5, 3, 4}),
            (std::vector<double>{0, 0, 0, 0.5, 1, 1, 1}));
  const double alpha = 0.2f;
  EXPECT_EQ(GradAt(OpKind::kHardSigmoid, {}, {-3, -2.5, -1, 2.4, 2.5, 3}),
            (std::vector<double>{0, 0, alpha, alpha, 0, 0}));
  // PyTorch's own hardsigmoid (alpha 1/6): zero at x = -3 and 3 as there.
  const Attributes torch_like = A({{"alpha", static_cast<float>(1.0 / 6.0)}});
  const double sixth = static_cast<float>(1.0 / 6.0);
  EXPECT_EQ(GradAt(OpKind::kHardSigmoid, torch_like, {-3, -2.9, 2.9, 3}),
            (std::vector<double>{0, sixth, sixth, 0}));
}

// The activations of PyTorch exports beyond ReLU; [-3, 3] covers both branches
// of the exponential units and the tails of Softplus / Mish.
TEST(GradCheck, MoreActivations) {
  for (OpKind op : {OpKind::kSin, OpKind::kCos, OpKind::kSoftplus, OpKind::kMish, OpKind::kElu, OpKind::kSelu,
                    OpKind::kCelu}) {
    SCOPED_TRACE(ir::Schema(op).name);
    GRADCHECK((std::vector<GradInput>{{"x", {4, 5}, -3.0, 3.0}}), Unary(op));
  }
  GRADCHECK((std::vector<GradInput>{{"x", {4, 5}, -3.0, 3.0}}), Unary(OpKind::kElu, A({{"alpha", 0.5f}})));
  GRADCHECK((std::vector<GradInput>{{"x", {4, 5}, -3.0, 3.0}}), Unary(OpKind::kCelu, A({{"alpha", 2.0f}})));
  GRADCHECK((std::vector<GradInput>{{"x", {4, 5}, -3.0, 3.0}}),
            Unary(OpKind::kSelu, A({{"alpha", 1.5f}, {"gamma", 1.2f}})));
}

// ONNX's other trigonometric and hyperbolic functions, each on its domain
// (Asin, Acos, Atanh inside (-1, 1); Acosh above 1; Tan inside (-pi/2, pi/2)).
TEST(GradCheck, TrigonometricAndHyperbolic) {
  struct Case {
    OpKind op;
    double lo, hi;
  };
  for (const Case& c : {Case{OpKind::kTan, -1.2, 1.2}, Case{OpKind::kAsin, -0.9, 0.9}, Case{OpKind::kAcos, -0.9, 0.9},
                        Case{OpKind::kAtan, -3, 3}, Case{OpKind::kSinh, -3, 3}, Case{OpKind::kCosh, -3, 3},
                        Case{OpKind::kAsinh, -3, 3}, Case{OpKind::kAcosh, 1.1, 4}, Case{OpKind::kAtanh, -0.9, 0.9}}) {
    SCOPED_TRACE(ir::Schema(c.op).name);
    GRADCHECK((std::vector<GradInput>{{"x", {4, 5}, c.lo, c.hi}}), Unary(c.op));
  }
}

// Near |x| = 1 the factored (1 - x)(1 + x) keeps the derivative of Asin and
// Atanh accurate where 1 - x^2 would lose digits: at x = 1 - 2^-30 (exact in
// float64), 1 - x^2 = 2^-29 - 2^-60.
TEST(GradCheck, InverseFunctionsNearOneKeepTheirDigits) {
  const double x = 1.0 - std::ldexp(1.0, -30), d = (1.0 - x) * (1.0 + x);
  std::vector<double> g = GradAt(OpKind::kAtanh, {}, {x});
  ASSERT_EQ(g.size(), 1u);
  EXPECT_NEAR(g[0], 1.0 / d, 1e-15 / d);
  g = GradAt(OpKind::kAsin, {}, {x});
  ASSERT_EQ(g.size(), 1u);
  EXPECT_NEAR(g[0], 1.0 / std::sqrt(d), 1e-15 / std::sqrt(d));
}

// Far from 0 the exponential branch's derivative is taken from e^x, not from
// y + alpha (which cancels): at x = -30, d elu / dx = e^-30 to the last bits,
// and at x = 200 the unused branch does not overflow into the result.
TEST(GradCheck, ExponentialUnitsKeepTinyDerivatives) {
  std::vector<double> g = GradAt(OpKind::kElu, {}, {-30, 0, 200});
  ASSERT_EQ(g.size(), 3u);
  EXPECT_NEAR(g[0], std::exp(-30.0), 1e-15 * std::exp(-30.0));
  EXPECT_EQ(g[1], 1.0);  // x = 0 takes the exponential branch (alpha e^0), as PyTorch's elu_backward
  EXPECT_EQ(g[2], 1.0);
  std::vector<double> s = GradAt(OpKind::kSoftplus, {}, {-800, 0, 800});
  EXPECT_EQ(s, (std::vector<double>{0.0, 0.5, 1.0}));
}

// PRelu with a per-channel slope [C, 1, 1] (nn.PReLU(C) as exported) and a
// scalar one; x = 0 takes the slope branch as PyTorch's prelu backward does.
TEST(GradCheck, PRelu) {
  GRADCHECK((std::vector<GradInput>{{"x", {2, 3, 2, 2}, -2.0, 2.0}, {"slope", {3, 1, 1}, 0.1, 0.5}}),
            Binary(OpKind::kPRelu));
  GRADCHECK((std::vector<GradInput>{{"x", {2, 5}, -2.0, 2.0}, {"slope", {1}, 0.1, 0.5}}), Binary(OpKind::kPRelu));
}

TEST(GradCheck, MaxMinVariadic) {
  for (OpKind op : {OpKind::kMax, OpKind::kMin}) {
    GRADCHECK((std::vector<GradInput>{{"a", {2, 3}}, {"b", {3}}}), Binary(op));
    GRADCHECK((std::vector<GradInput>{{"a", {4, 4}}, {"b", {4, 4}}, {"c", {4, 4}}}),
              [op](Graph& g, const V& x) { return Op(g, op, {x[0], x[1], x[2]}); });
  }
}

TEST(GradCheck, WhereAndClip) {
  GRADCHECK((std::vector<GradInput>{{"a", {2, 3}}, {"b", {3}}}), [](Graph& g, const V& x) {
    ir::Tensor c = *ir::Tensor::Zeros(ir::DType::kBool, {2, 3});
    for (int i = 0; i < 6; i += 2) c.data<bool>()[i] = true;
    return Op(g, OpKind::kWhere, {g.AddInitializer("cond", c), x[0], x[1]});
  });
  GRADCHECK((std::vector<GradInput>{{"x", {3, 4}}}), [](Graph& g, const V& x) {
    return Op(g, OpKind::kClip, {x[0], DoublesConst(g, {-0.5}, {}), DoublesConst(g, {0.6}, {})});
  });
  // Bounds that are trained (torch.clamp(x, lo, hi) with tensors): each gets
  // the sum of dy where x passed it. Scalars, as ONNX's Clip takes them.
  GRADCHECK((std::vector<GradInput>{{"x", {3, 4}}, {"lo", {}, -0.6, -0.4}, {"hi", {}, 0.4, 0.6}}),
            [](Graph& g, const V& x) { return Op(g, OpKind::kClip, {x[0], x[1], x[2]}); });
}

// The gradient of Cast casts back: a float32 input gets a float32 gradient.
TEST(GradCheck, CastCastsBack) {
  Graph g;
  Value x = g.AddInput("x", ir::TensorType::Of(ir::DType::kFloat32, {3}));
  Value y = Op(g, OpKind::kCast, {x}, A({{"to", int64_t{11}}}));  // DOUBLE
  Value loss = Op(g, OpKind::kReduceSum, {Op(g, OpKind::kMul, {y, DoublesConst(g, {1, 2, 3}, {3})})},
                  A({{"keepdims", int64_t{0}}}));
  ASSERT_TRUE(g.InferShapes().ok());
  auto r = BuildBackward(g, loss, DoublesConst(g, {1.0}, {}), BackwardOptions{{"x"}, {}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Value dx = r->grads["x"];
  EXPECT_EQ(g.type(dx).dtype, ir::DType::kFloat32);
  EXPECT_EQ(g.name(dx), "x_grad");
}

// ---- linalg ----

TEST(GradCheck, GemmTransposesAlphaBeta) {
  for (int64_t ta : {0, 1})
    for (int64_t tb : {0, 1})
      for (bool full_c : {false, true}) {
        SCOPED_TRACE(StrCat("transA ", ta, " transB ", tb, " C ", full_c ? "[M,N]" : "[N]"));
        std::vector<int64_t> a = ta ? std::vector<int64_t>{3, 2} : std::vector<int64_t>{2, 3};
        std::vector<int64_t> b = tb ? std::vector<int64_t>{4, 3} : std::vector<int64_t>{3, 4};
        std::vector<int64_t> c = full_c ? std::vector<int64_t>{2, 4} : std::vector<int64_t>{4};
        GRADCHECK((std::vector<GradInput>{{"a", a}, {"b", b}, {"c", c}}), [=](Graph& g, const V& x) {
          return Op(g, OpKind::kGemm, {x[0], x[1], x[2]},
                    A({{"transA", ta}, {"transB", tb}, {"alpha", 0.7f}, {"beta", 1.3f}}));
        });
      }
}

TEST(GradCheck, MatMulBatchedAndVectors) {
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes{
      {{2, 3}, {3, 4}}, {{2, 1, 2, 3}, {3, 3, 2}}, {{3}, {3, 4}}, {{2, 3}, {3}}, {{3}, {3}}, {{2, 2, 3}, {3}},
      {{3}, {2, 3, 2}}};
  for (auto& [a, b] : shapes) {
    SCOPED_TRACE(StrCat(a.size(), "-D x ", b.size(), "-D"));
    GRADCHECK((std::vector<GradInput>{{"a", a}, {"b", b}}), Binary(OpKind::kMatMul));
  }
}

// ---- shape ----

TEST(GradCheck, ReshapeFamily) {
  GRADCHECK((std::vector<GradInput>{{"x", {2, 3, 2}}}),
            [](Graph& g, const V& x) { return Op(g, OpKind::kReshape, {x[0], IntsConst(g, {3, 4})}); });
  GRADCHECK((std::vector<GradInput>{{"x", {2, 3, 2}}}), Unary(OpKind::kFlatten, A({{"axis", int64_t{2}}})));
  GRADCHECK((std::vector<GradInput>{{"x", {2, 1, 3}}}),
            [](Graph& g, const V& x) { return Op(g, OpKind::kSqueeze, {x[0], IntsConst(g, {1})}); });
  GRADCHECK((std::vector<GradInput>{{"x", {2, 3}}}),
            [](Graph& g, const V& x) { return Op(g, OpKind::kUnsqueeze, {x[0], IntsConst(g, {0, 2})}); });
  GRADCHECK((std::vector<GradInput>{{"x", {2, 3, 4}}}),
            Unary(OpKind::kTranspose, A({{"perm", std::vector<int64_t>{1, 2, 0}}})));
}

TEST(GradCheck, ConcatAxes) {
  for (int64_t axis : {0, 1, -1}) {
    SCOPED_TRACE(axis);
    GRADCHECK((std::vector<GradInput>{{"a", {2, 2}}, {"b", {2, 2}}, {"c", {2, 2}}}), [axis](Graph& g, const V& x) {
      return Op(g, OpKind::kConcat, {x[0], x[1], x[2]}, A({{"axis", axis}}));
    });
  }
  GRADCHECK((std::vector<GradInput>{{"a", {2, 1, 3}}, {"b", {2, 3, 3}}}), [](Graph& g, const V& x) {
    return Op(g, OpKind::kConcat, {x[0], x[1]}, A({{"axis", int64_t{1}}}));
  });
}

// Output 1 of the Split gets no gradient: its slot is zero-filled.
TEST(GradCheck, SplitWithUnusedOutput) {
  GRADCHECK((std::vector<GradInput>{{"x", {2, 5}}}), [](Graph& g, const V& x) {
    ir::Node* s = g.AddNode(OpKind::kSplit, {x[0], IntsConst(g, {2, 1, 2})}, 3);
    s->attrs().Set("axis", int64_t{1});
    return Op(g, OpKind::kMul, {s->output(0), s->output(2)});
  });
}

TEST(GradCheck, Slice) {
  GRADCHECK((std::vector<GradInput>{{"x", {4, 5}}}), [](Graph& g, const V& x) {
    return Op(g, OpKind::kSlice, {x[0], IntsConst(g, {1, -4}), IntsConst(g, {3, 100}), IntsConst(g, {0, 1})});
  });
  GRADCHECK((std::vector<GradInput>{{"x", {3, 4, 2}}}), [](Graph& g, const V& x) {
    return Op(g, OpKind::kSlice, {x[0], IntsConst(g, {1}), IntsConst(g, {3}), IntsConst(g, {-2})});
  });
}

// Strided and reversed slices of a weight (w[:, ::2], w[::-1], w[5:0:-2]).
TEST(GradCheck, SliceWithSteps) {
  struct Case { std::vector<int64_t> starts, ends, axes, steps; };
  for (const Case& k : {Case{{0}, {100}, {1}, {2}}, Case{{1, 0}, {6, 7}, {0, 1}, {3, 2}}, Case{{-1}, {-100}, {0}, {-1}},
                        Case{{5, 6}, {0, 0}, {0, 1}, {-2, -3}}}) {
    SCOPED_TRACE(StrCat("steps ", k.steps[0]));
    GRADCHECK((std::vector<GradInput>{{"x", {6, 7}}}), [k](Graph& g, const V& x) {
      return Op(g, OpKind::kSlice, {x[0], IntsConst(g, k.starts), IntsConst(g, k.ends), IntsConst(g, k.axes),
                                    IntsConst(g, k.steps)});
    });
  }
}

// ScatterND: data keeps dY outside the scattered slices (all of it with
// reduction add); updates get the slices. Indices with a negative one.
TEST(GradCheck, ScatterND) {
  for (const char* reduction : {"none", "add"}) {
    SCOPED_TRACE(reduction);
    GRADCHECK((std::vector<GradInput>{{"data", {4, 3, 2}}, {"updates", {2, 2}}}), [reduction](Graph& g, const V& x) {
      ir::Tensor idx = ir::Tensor::Int64s({0, 1, -1, 2}, {2, 2});  // slices data[0, 1, :] and data[3, 2, :]
      return Op(g, OpKind::kScatterND, {x[0], g.AddInitializer("idx", idx), x[1]},
                A({{"reduction", std::string(reduction)}}));
    });
  }
}

// ScatterElements along axis 1 (torch.scatter / scatter_add): data keeps dY
// outside the scattered elements (all of it with add); updates get dY at
// their targets. A negative index, and with add a target hit twice.
// none, add, and max / min (PyTorch's scatter_reduce amax / amin as the dynamo
// exporter writes it), with two updates meeting at one position for the
// reductions that allow it; random values, so no ties.
TEST(GradCheck, ScatterElements) {
  for (const char* reduction : {"none", "add", "max", "min"}) {
    SCOPED_TRACE(reduction);
    const bool add = std::string(reduction) != "none";
    GRADCHECK((std::vector<GradInput>{{"data", {3, 4}}, {"updates", {3, 2}}}), [&](Graph& g, const V& x) {
      ir::Tensor idx = ir::Tensor::Int64s({0, 2, -1, 1, 3, add ? 3 : 0}, {3, 2});
      return Op(g, OpKind::kScatterElements, {x[0], g.AddInitializer("idx", idx), x[1]},
                A({{"reduction", std::string(reduction)}, {"axis", int64_t{1}}}));
    });
  }
}

// GatherND: a repeated tuple's gradients add up; a negative index wraps;
// batch_dims 1 picks within each batch element; k < rank takes whole rows.
TEST(GradCheck, GatherND) {
  GRADCHECK((std::vector<GradInput>{{"data", {4, 3, 2}}}), [](Graph& g, const V& x) {
    ir::Tensor idx = ir::Tensor::Int64s({0, 1, -1, 2, 0, 1}, {3, 2});  // data[0, 1], data[3, 2], data[0, 1] again
    return Op(g, OpKind::kGatherND, {x[0], g.AddInitializer("idx", idx)});
  });
  GRADCHECK((std::vector<GradInput>{{"data", {2, 3, 2}}}), [](Graph& g, const V& x) {
    ir::Tensor idx = ir::Tensor::Int64s({2, 0, 1, 1}, {2, 2, 1});  // rows 2 and 0 of batch 0, 1 and 1 of batch 1
    return Op(g, OpKind::kGatherND, {x[0], g.AddInitializer("idx", idx)}, A({{"batch_dims", int64_t{1}}}));
  });
}

// sum(x[x > 0.2]^3): boolean-mask indexing as PyTorch exports it, GatherND
// at the transposed NonZero of the mask, summed to a scalar (a static shape
// for the check's projection). The count is the data's (the session plans
// for it); the selected elements get 3x^2, the others 0.
TEST(GradCheck, GatherNDAtNonZeroOfAMask) {
  GRADCHECK((std::vector<GradInput>{{"x", {3, 4}}}), [](Graph& g, const V& x) {
    Value mask = Op(g, OpKind::kGreater, {x[0], DoublesConst(g, {0.2}, {})});
    Value idx = Op(g, OpKind::kTranspose, {Op(g, OpKind::kNonZero, {mask})}, A({{"perm", std::vector<int64_t>{1, 0}}}));
    Value y = Op(g, OpKind::kGatherND, {x[0], idx});
    return Op(g, OpKind::kReduceSum, {Op(g, OpKind::kMul, {y, Op(g, OpKind::kMul, {y, y})})},
              A({{"keepdims", int64_t{0}}}));
  });
}

// Resize: nearest (PyTorch's default export), bilinear half_pixel and
// align_corners, cubic; up- and downsampling, antialiased downsampling.
TEST(GradCheck, Resize) {
  struct ResizeCase { const char* name; Attributes attrs; std::vector<double> scales; };
  for (const ResizeCase& c : {
           ResizeCase{"nearest x2", A({{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("asymmetric")},
                                        {"nearest_mode", std::string("floor")}}), {1, 1, 2, 2}},
           ResizeCase{"linear half_pixel x2", A({{"mode", std::string("linear")}}), {1, 1, 2, 2}},
           ResizeCase{"linear align_corners x1.5", A({{"mode", std::string("linear")},
                                                      {"coordinate_transformation_mode", std::string("align_corners")}}),
                      {1, 1, 1.5, 1.5}},
           ResizeCase{"cubic down x0.5", A({{"mode", std::string("cubic")}}), {1, 1, 0.5, 0.5}},
           ResizeCase{"linear antialias down x0.5", A({{"mode", std::string("linear")}, {"antialias", int64_t{1}},
                                                       {"exclude_outside", int64_t{1}}}), {1, 1, 0.5, 0.75}},
           ResizeCase{"cubic antialias down x0.5", A({{"mode", std::string("cubic")}, {"antialias", int64_t{1}}}),
                      {1, 1, 0.5, 0.5}},
       }) {
    SCOPED_TRACE(c.name);
    GRADCHECK((std::vector<GradInput>{{"x", {1, 2, 4, 4}}}), [&c](Graph& g, const V& x) {
      Value scales = g.AddInitializer(g.UniqueName("scales"), [&] {
        ir::Tensor t = *ir::Tensor::Zeros(ir::DType::kFloat32, {4});
        for (size_t i = 0; i < 4; ++i) t.data<float>()[i] = static_cast<float>(c.scales[i]);
        return t;
      }());
      return Op(g, OpKind::kResize, {x[0], Value{}, scales}, c.attrs);
    });
  }
}

TEST(GradCheck, GatherRepeatedIndices) {
  for (int64_t axis : {0, 1}) {
    GRADCHECK((std::vector<GradInput>{{"x", {3, 4}}}), [axis](Graph& g, const V& x) {
      Value idx = g.AddInitializer(g.UniqueName("idx"), ir::Tensor::Int64s({2, 0, 2, -1}, {2, 2}));
      return Op(g, OpKind::kGather, {x[0], idx}, A({{"axis", axis}}));
    });
  }
}

// A scalar index drops the axis (w[2], a row of an embedding table).
TEST(GradCheck, GatherScalarIndex) {
  for (int64_t axis : {0, 1}) {
    GRADCHECK((std::vector<GradInput>{{"x", {3, 4}}}), [axis](Graph& g, const V& x) {
      Value idx = g.AddInitializer(g.UniqueName("idx"), ir::Tensor::Int64s({-1}, {}));
      return Op(g, OpKind::kGather, {x[0], idx}, A({{"axis", axis}}));
    });
  }
}

TEST(GradCheck, ExpandAndTile) {
  GRADCHECK((std::vector<GradInput>{{"x", {3, 1}}}),
            [](Graph& g, const V& x) { return Op(g, OpKind::kExpand, {x[0], IntsConst(g, {2, 3, 4})}); });
  GRADCHECK((std::vector<GradInput>{{"x", {2, 3}}}),
            [](Graph& g, const V& x) { return Op(g, OpKind::kTile, {x[0], IntsConst(g, {2, 3})}); });
}

TEST(GradCheck, Reductions) {
  for (OpKind op : {OpKind::kReduceSum, OpKind::kReduceMean, OpKind::kReduceMax, OpKind::kReduceL2, OpKind::kReduceMin,
                    OpKind::kReduceProd, OpKind::kReduceLogSumExp}) {
    for (int64_t keep : {0, 1}) {
      SCOPED_TRACE(StrCat(ir::Schema(op).name, " keepdims ", keep));
      GRADCHECK((std::vector<GradInput>{{"x", {2, 3, 4}}}), [op, keep](Graph& g, const V& x) {
        return Op(g, op, {x[0], IntsConst(g, {0, -1})}, A({{"keepdims", keep}}));
      });
      GRADCHECK((std::vector<GradInput>{{"x", {2, 3}}}), [op, keep](Graph& g, const V& x) {
        return Op(g, op, {x[0]}, A({{"keepdims", keep}}));
      });
    }
  }
}

// Ties of a maximum / minimum share dy evenly (torch.amax / amin), rather
// than each getting all of it.
TEST(GradCheck, ReduceMaxMinTiesShareTheGradient) {
  EXPECT_EQ(GradAt(OpKind::kReduceMax, {}, {1, 3, 3, 2}), (std::vector<double>{0, 0.5, 0.5, 0}));
  EXPECT_EQ(GradAt(OpKind::kReduceMin, {}, {-1, 3, -1, -1}), (std::vector<double>{1.0 / 3, 0, 1.0 / 3, 1.0 / 3}));
  EXPECT_EQ(GradAt(OpKind::kReduceMax, {}, {1, 4, 3, 2}), (std::vector<double>{0, 1, 0, 0}));
}

// ScatterElements max: the data value 2 and the updates 2, 2 meeting at
// position 0 tie, each takes a third of dy; position 1's update 5 beats the
// data's 1 and takes all of it.
TEST(GradCheck, ScatterMaxTiesShareTheGradient) {
  auto g = std::make_unique<Graph>();
  Value data = g->AddInput("data", ir::TensorType::Of(ir::DType::kFloat64, {2}));
  Value upd = g->AddInput("upd", ir::TensorType::Of(ir::DType::kFloat64, {3}));
  Value y = Op(*g, OpKind::kScatterElements, {data, g->AddInitializer("idx", ir::Tensor::Int64s({0, 0, 1}, {3})), upd},
               A({{"reduction", std::string("max")}}));
  Value loss = Op(*g, OpKind::kReduceSum, {y}, A({{"keepdims", int64_t{0}}}));
  ASSERT_TRUE(g->InferShapes().ok());
  auto r = BuildBackward(*g, loss, DoublesConst(*g, {1.0}, {}), BackwardOptions{{"data", "upd"}, {}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto index = [&](const std::string& name) {
    return std::find(g->outputs().begin(), g->outputs().end(), r->grads[name]) - g->outputs().begin();
  };
  const auto d_data = index("data"), d_upd = index("upd");
  executor::SessionOptions o;
  o.kernel_impl = "reference";
  o.training = true;
  auto session = executor::InferenceSession::Create(std::move(g), o);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  auto doubles = [](const std::vector<double>& v) {
    ir::Tensor t = *ir::Tensor::Zeros(ir::DType::kFloat64, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.data<double>());
    return t;
  };
  auto out = (*session)->Run({{"data", doubles({2, 1})}, {"upd", doubles({2, 2, 5})}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  auto values = [](const ir::Tensor& t) { return std::vector<double>(t.data<double>(), t.data<double>() + t.num_elements()); };
  EXPECT_EQ(values((*out)[static_cast<size_t>(d_data)]), (std::vector<double>{1.0 / 3, 0}));
  EXPECT_EQ(values((*out)[static_cast<size_t>(d_upd)]), (std::vector<double>{1.0 / 3, 1.0 / 3, 1}));
}

// ReduceProd where the reduced sets hold no zero, one zero or two: the
// gradient is the product of the others (PyTorch's prod backward), not y / x.
TEST(GradCheck, ReduceProdWithZeros) {
  auto g = GradAt(OpKind::kReduceProd, {}, {2, 0, 3, 4});  // one zero: d/dx1 = 2 * 3 * 4, others 0
  EXPECT_EQ(g, (std::vector<double>{0, 24, 0, 0}));
  g = GradAt(OpKind::kReduceProd, {}, {2, 0, 3, 0});       // two zeros: all 0
  EXPECT_EQ(g, (std::vector<double>{0, 0, 0, 0}));
  g = GradAt(OpKind::kReduceProd, {}, {2, -1, 3, 4});
  EXPECT_EQ(g, (std::vector<double>{-12, 24, -8, -6}));
}

TEST(GradCheck, CumSumAndTrilu) {
  for (int64_t exclusive : {0, 1})
    for (int64_t reverse : {0, 1}) {
      SCOPED_TRACE(StrCat("exclusive ", exclusive, " reverse ", reverse));
      GRADCHECK((std::vector<GradInput>{{"x", {2, 4, 3}}}), [exclusive, reverse](Graph& g, const V& x) {
        return Op(g, OpKind::kCumSum, {x[0], IntsConst(g, {1})},
                  A({{"exclusive", exclusive}, {"reverse", reverse}}));
      });
    }
  for (int64_t upper : {0, 1})
    for (int64_t k : {-1, 0, 2}) {
      SCOPED_TRACE(StrCat("upper ", upper, " k ", k));
      GRADCHECK((std::vector<GradInput>{{"x", {2, 3, 4}}}), [upper, k](Graph& g, const V& x) {
        return Op(g, OpKind::kTrilu, {x[0], IntsConst(g, {k})}, A({{"upper", upper}}));
      });
    }
}

// torch.gather with repeated indices (their gradients add), and TopK's values
// on both ends (distinct random values: no ties to break).
TEST(GradCheck, GatherElementsAndTopK) {
  GRADCHECK((std::vector<GradInput>{{"x", {3, 4}}}), [](Graph& g, const V& x) {
    Value idx = Op(g, OpKind::kReshape, {IntsConst(g, {0, 3, 3, -1, 1, 2, 2, 0, 1, 3, 0, 0, 0, 2, -4}),
                                         IntsConst(g, {3, 5})});
    return Op(g, OpKind::kGatherElements, {x[0], idx}, A({{"axis", int64_t{1}}}));
  });
  for (int64_t largest : {0, 1})
    for (int64_t axis : {0, -1}) {
      SCOPED_TRACE(StrCat("largest ", largest, " axis ", axis));
      GRADCHECK((std::vector<GradInput>{{"x", {3, 5}}}), [largest, axis](Graph& g, const V& x) {
        return Op(g, OpKind::kTopK, {x[0], IntsConst(g, {2})}, A({{"axis", axis}, {"largest", largest}}), 2, 0);
      });
    }
}

// ---- nn ----

TEST(GradCheck, GlobalAveragePoolAndPad) {
  GRADCHECK((std::vector<GradInput>{{"x", {2, 3, 2, 3}}}), Unary(OpKind::kGlobalAveragePool));
  GRADCHECK((std::vector<GradInput>{{"x", {2, 3, 3}}}), [](Graph& g, const V& x) {
    return Op(g, OpKind::kPad, {x[0], IntsConst(g, {0, 1, 2, 0, 0, 1})});
  });
}

// The modes that fold the border back onto the input (PadGrad sums several
// outputs into one input), with pads wider than the dim (reflect twice,
// edge and wrap past the far end), a dim of one, negative pads (cropping,
// constant mode too) and the axes input.
TEST(GradCheck, PadModesFoldTheBorderBack) {
  for (const char* mode : {"reflect", "edge", "wrap", "constant"}) {
    SCOPED_TRACE(mode);
    GRADCHECK((std::vector<GradInput>{{"x", {2, 3, 4}}}), [mode](Graph& g, const V& x) {
      return Op(g, OpKind::kPad, {x[0], IntsConst(g, {0, 2, 3, 0, -1, 5})}, A({{"mode", std::string(mode)}}));
    });
    GRADCHECK((std::vector<GradInput>{{"x", {2, 1, 3, 3}}}), [mode](Graph& g, const V& x) {
      return Op(g, OpKind::kPad, {x[0], IntsConst(g, {1, 2, 1, 1}), Value{}, IntsConst(g, {1, 3})},
                A({{"mode", std::string(mode)}}));
    });
  }
}

// Bilinear and bicubic sampling with grid values past [-1, 1], so that every
// padding mode has taps outside; nearest passes dX only (its dgrid is 0).
TEST(GradCheck, GridSample) {
  for (const char* padding : {"zeros", "border", "reflection"})
    for (int64_t align : {0, 1}) {
      SCOPED_TRACE(StrCat(padding, " align_corners ", align));
      GRADCHECK((std::vector<GradInput>{{"x", {2, 3, 4, 5}}, {"grid", {2, 3, 2, 2}, -1.3, 1.3}}),
                [padding, align](Graph& g, const V& x) {
                  return Op(g, OpKind::kGridSample, {x[0], x[1]},
                            A({{"padding_mode", std::string(padding)}, {"align_corners", align}}));
                });
    }
  GRADCHECK((std::vector<GradInput>{{"x", {1, 2, 4, 4}}}), [](Graph& g, const V& x) {
    return Op(g, OpKind::kGridSample, {x[0], DoublesConst(g, {-0.9, -0.6, 0.3, 0.2, 0.8, -0.4, 0.55, 0.95}, {1, 2, 2, 2})},
              A({{"mode", std::string("nearest")}}));
  });
  // Bicubic: 16 taps, each padded on its own (border and reflection repeat
  // pixels near the edges).
  for (const char* padding : {"zeros", "border", "reflection"})
    for (int64_t align : {0, 1}) {
      SCOPED_TRACE(StrCat("bicubic ", padding, " align_corners ", align));
      GRADCHECK((std::vector<GradInput>{{"x", {1, 2, 4, 5}}, {"grid", {1, 3, 2, 2}, -1.3, 1.3}}),
                [padding, align](Graph& g, const V& x) {
                  return Op(g, OpKind::kGridSample, {x[0], x[1]},
                            A({{"mode", std::string("bicubic")}, {"padding_mode", std::string(padding)}, {"align_corners", align}}));
                });
    }
}

TEST(GradCheck, AffineGrid) {
  for (int64_t align : {0, 1}) {
    SCOPED_TRACE(StrCat("align_corners ", align));
    GRADCHECK((std::vector<GradInput>{{"theta", {2, 2, 3}}}), [align](Graph& g, const V& x) {
      return Op(g, OpKind::kAffineGrid, {x[0], IntsConst(g, {2, 1, 3, 4})}, A({{"align_corners", align}}));
    });
  }
}

// DFT's gradient is DFTs: complex and real inputs, forward and inverse, along
// the first, a middle and the last signal axis, lengths that are no power of
// two, dft_length padding and truncating, RFFT of even and odd lengths, and
// IRFFT with its default length, an odd one and one past its bins.
TEST(GradCheck, DftEveryMode) {
  struct DftCase {
    std::vector<int64_t> dims;
    int64_t axis, inverse, onesided, length;  // length 0: none
  };
  const DftCase cases[] = {
      {{2, 5, 3, 2}, 1, 0, 0, 0}, {{2, 5, 3, 2}, 2, 1, 0, 0}, {{2, 5, 2}, 1, 0, 0, 7}, {{2, 5, 2}, 1, 1, 0, 3},
      {{3, 6, 1}, 1, 0, 0, 0},    {{3, 6, 1}, 1, 1, 0, 4},    {{2, 6, 3, 1}, 1, 0, 1, 0}, {{2, 5, 1}, 1, 0, 1, 0},
      {{2, 5, 1}, 1, 0, 1, 8},    {{2, 4, 2}, 1, 1, 1, 0},    {{2, 4, 2}, 1, 1, 1, 5},    {{2, 3, 2, 2}, 1, 1, 1, 10},
      {{4, 3, 2}, 0, 0, 0, 0},
  };
  for (const DftCase& d : cases) {
    SCOPED_TRACE(StrCat("dims ", d.dims.size(), "-D axis ", d.axis, " inverse ", d.inverse, " onesided ", d.onesided,
                        " length ", d.length));
    GRADCHECK((std::vector<GradInput>{{"x", d.dims}}), [d](Graph& g, const V& x) {
      return Op(g, OpKind::kDFT, {x[0], d.length ? IntsConst(g, {d.length}) : Value{}, IntsConst(g, {d.axis})},
                A({{"inverse", d.inverse}, {"onesided", d.onesided}}));
    });
  }
}

// RoiAlign (avg) is linear in X: boxes on both images, one partly outside the
// image (samples past -1 read nothing, those in [-1, 0] the border), one past
// the last row and column, a degenerate one; both coordinate modes, a fixed
// and the adaptive sampling grid.
TEST(GradCheck, RoiAlign) {
  for (const char* coords : {"half_pixel", "output_half_pixel"})
    for (int64_t ratio : {0, 2}) {
      SCOPED_TRACE(StrCat(coords, " sampling_ratio ", ratio));
      GRADCHECK((std::vector<GradInput>{{"x", {2, 3, 6, 7}}}), [coords, ratio](Graph& g, const V& x) {
        Value rois = DoublesConst(g, {0.5, 1.0, 4.5, 5.0, -2.0, -1.5, 3.0, 2.5, 3.3, 2.2, 9.0, 8.0, 2.0, 2.0, 2.0, 2.0},
                                  {4, 4});
        return Op(g, OpKind::kRoiAlign, {x[0], rois, IntsConst(g, {0, 1, 1, 0})},
                  A({{"output_height", int64_t{2}}, {"output_width", int64_t{3}}, {"sampling_ratio", ratio},
                     {"spatial_scale", 0.75f}, {"coordinate_transformation_mode", std::string(coords)}}));
      });
    }
}

TEST(GradCheck, Conv) {
  GRADCHECK((std::vector<GradInput>{{"x", {2, 2, 5, 5}}, {"w", {3, 2, 3, 3}}, {"b", {3}}}), [](Graph& g, const V& x) {
    return Op(g, OpKind::kConv, {x[0], x[1], x[2]},
              A({{"strides", std::vector<int64_t>{2, 1}}, {"pads", std::vector<int64_t>{1, 0, 1, 1}}}));
  });
  GRADCHECK((std::vector<GradInput>{{"x", {1, 4, 4, 6}}, {"w", {4, 2, 3, 3}}}), [](Graph& g, const V& x) {
    return Op(g, OpKind::kConv, {x[0], x[1]}, A({{"group", int64_t{2}}, {"dilations", std::vector<int64_t>{1, 2}}}));
  });
}

TEST(GradCheck, ConvTranspose) {
  GRADCHECK((std::vector<GradInput>{{"x", {1, 2, 3, 3}}, {"w", {2, 3, 3, 3}}, {"b", {3}}}), [](Graph& g, const V& x) {
    return Op(g, OpKind::kConvTranspose, {x[0], x[1], x[2]},
              A({{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                 {"output_padding", std::vector<int64_t>{1, 0}}}));
  });
}

TEST(GradCheck, Pooling) {
  GRADCHECK((std::vector<GradInput>{{"x", {1, 2, 4, 4}}}),
            Unary(OpKind::kMaxPool, A({{"kernel_shape", std::vector<int64_t>{2, 2}},
                                        {"strides", std::vector<int64_t>{2, 2}}})));
  GRADCHECK((std::vector<GradInput>{{"x", {1, 2, 5, 5}}}),
            Unary(OpKind::kAveragePool, A({{"kernel_shape", std::vector<int64_t>{3, 3}},
                                            {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                                            {"strides", std::vector<int64_t>{2, 2}}})));
}

TEST(GradCheck, Normalization) {
  GRADCHECK((std::vector<GradInput>{{"x", {3, 2, 2, 2}}, {"s", {2}}, {"b", {2}}}), [](Graph& g, const V& x) {
    ir::Node* n = g.AddNode(OpKind::kBatchNormalization,
                            {x[0], x[1], x[2], DoublesConst(g, {0, 0}, {2}), DoublesConst(g, {1, 1}, {2})}, 3);
    n->attrs().Set("training_mode", int64_t{1});
    return n->output(0);
  });
  GRADCHECK((std::vector<GradInput>{{"x", {2, 3, 4}}, {"s", {4}}, {"b", {4}}}), [](Graph& g, const V& x) {
    return Op(g, OpKind::kLayerNormalization, {x[0], x[1], x[2]}, A({{"axis", int64_t{-1}}}));
  });
}

TEST(GradCheck, SoftmaxFamily) {
  for (OpKind op : {OpKind::kSoftmax, OpKind::kLogSoftmax})
    for (int64_t axis : {-1, 1}) GRADCHECK((std::vector<GradInput>{{"x", {2, 3, 4}}}), Unary(op, A({{"axis", axis}})));
}

TEST(GradCheck, LossHeads) {
  GRADCHECK((std::vector<GradInput>{{"x", {4, 3}}}), [](Graph& g, const V& x) {
    Value labels = g.AddInitializer("labels", ir::Tensor::Int64s({0, 2, 1, 2}, {4}));
    return Op(g, OpKind::kSoftmaxCrossEntropyLoss, {x[0], labels}, A({{"label_smoothing", 0.1f}}));
  });
  GRADCHECK((std::vector<GradInput>{{"x", {2, 3}}}), [](Graph& g, const V& x) {
    return Op(g, OpKind::kMeanSquaredError, {x[0], DoublesConst(g, {1, 2, 3, 4, 5, 6}, {2, 3})});
  });
}

// ---- recurrent layers (RNN, GRU, LSTM: one backward op through time) ----

struct RecurrentCase {
  const char* name;
  OpKind op;
  int64_t dirs, layout;
  bool bias, initial, peepholes, lens;
  Attributes attrs;
};

// seq 3, batch 2, input 3, hidden 2; every output (Y, Y_h, Y_c) flattened
// into one loss; sequence_lens {3, 2} when `lens`.
void RecurrentCheck(const RecurrentCase& c) {
  SCOPED_TRACE(c.name);
  const int64_t seq = 3, batch = 2, input = 3, hidden = 2;
  const int64_t gates = c.op == OpKind::kLSTM ? 4 : c.op == OpKind::kGRU ? 3 : 1;
  const bool lstm = c.op == OpKind::kLSTM;
  std::vector<GradInput> in = {
      {"x", c.layout == 0 ? std::vector<int64_t>{seq, batch, input} : std::vector<int64_t>{batch, seq, input}},
      {"w", {c.dirs, gates * hidden, input}},
      {"r", {c.dirs, gates * hidden, hidden}}};
  const std::vector<int64_t> state =
      c.layout == 0 ? std::vector<int64_t>{c.dirs, batch, hidden} : std::vector<int64_t>{batch, c.dirs, hidden};
  if (c.bias) in.push_back({"b", {c.dirs, 2 * gates * hidden}});
  if (c.initial) in.push_back({"h0", state});
  if (c.initial && lstm) in.push_back({"c0", state});
  if (c.peepholes) in.push_back({"p", {c.dirs, 3 * hidden}});
  GRADCHECK(in, [&c, lstm](Graph& g, const V& x) {
    size_t k = 3;
    std::vector<Value> args = {x[0], x[1], x[2], c.bias ? x[k++] : Value{}, Value{}, Value{}};
    if (c.lens) {
      ir::Tensor lens = *ir::Tensor::Zeros(ir::DType::kInt32, {2});
      lens.data<int32_t>()[0] = 3;
      lens.data<int32_t>()[1] = 2;
      args[4] = g.AddInitializer("lens", lens);
    }
    if (c.initial) args[5] = x[k++];
    if (lstm) {
      args.push_back(c.initial ? x[k++] : Value{});
      args.push_back(c.peepholes ? x[k++] : Value{});
    }
    ir::Node* n = g.AddNode(c.op, args, lstm ? 3 : 2, "rnn");
    n->attrs() = c.attrs;
    std::vector<Value> flat;
    for (size_t o = 0; o < n->num_outputs(); ++o) flat.push_back(Op(g, OpKind::kReshape, {n->output(o), IntsConst(g, {-1})}));
    return Op(g, OpKind::kConcat, flat, A({{"axis", int64_t{0}}}));
  });
}

TEST(GradCheck, LSTM) {
  for (const RecurrentCase& c : {
           RecurrentCase{"forward, no optional input", OpKind::kLSTM, 1, 0, false, false, false, false, {}},
           RecurrentCase{"bidirectional, everything", OpKind::kLSTM, 2, 0, true, true, true, true,
                         A({{"direction", std::string("bidirectional")}})},
           RecurrentCase{"reverse, batch-first, clipped", OpKind::kLSTM, 1, 1, true, true, false, true,
                         A({{"direction", std::string("reverse")}, {"layout", int64_t{1}}, {"clip", 0.7f}})},
       })
    RecurrentCheck(c);
}

TEST(GradCheck, GRU) {
  for (const RecurrentCase& c : {
           RecurrentCase{"linear_before_reset 0", OpKind::kGRU, 1, 0, true, true, false, false, {}},
           RecurrentCase{"linear_before_reset 1 (PyTorch), bidirectional, lengths", OpKind::kGRU, 2, 0, true, true,
                         false, true,
                         A({{"direction", std::string("bidirectional")}, {"linear_before_reset", int64_t{1}}})},
           RecurrentCase{"batch-first, reverse", OpKind::kGRU, 1, 1, true, false, false, false,
                         A({{"direction", std::string("reverse")}, {"layout", int64_t{1}},
                            {"linear_before_reset", int64_t{1}}})},
       })
    RecurrentCheck(c);
}

TEST(GradCheck, RNN) {
  for (const RecurrentCase& c : {
           RecurrentCase{"tanh", OpKind::kRNN, 1, 0, true, true, false, false, {}},
           RecurrentCase{"relu, bidirectional, lengths", OpKind::kRNN, 2, 0, true, true, false, true,
                         A({{"direction", std::string("bidirectional")},
                            {"activations", std::vector<std::string>{"Relu", "Relu"}}})},
       })
    RecurrentCheck(c);
}

}  // namespace
}  // namespace amptrain::autodiff::testing
