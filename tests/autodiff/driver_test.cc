// The autodiff driver's invariants (autodiff/autodiff.cc): gradients that
// meet are summed in one place (or stacked, for Gathers or Slices that split
// a tensor),
// the default and frozen sets of values to differentiate, the reason each
// untrained initializer gets none, determinism, and clean errors. Split out
// of gradcheck_test.cc, whose finite-difference helpers it shares.
#include <gtest/gtest.h>

#include "autodiff/autodiff.h"
#include "tests/autodiff/gradcheck_util.h"
#include "tests/common/count_nodes.h"

namespace amptrain::autodiff::testing {
namespace {

using ir::Attributes;
using ir::Graph;
using ir::OpKind;
using ir::Value;
using V = std::vector<Value>;
using amptrain::testing::CountNodes;

// x feeds two consumers; their gradients are summed in one place.
TEST(Driver, ValueWithTwoConsumersSumsGradients) {
  GRADCHECK((std::vector<GradInput>{{"x", {2, 3}}, {"w", {3}}}), [](Graph& g, const V& x) {
    Value a = Op(g, OpKind::kMul, {x[0], x[1]});
    Value b = Op(g, OpKind::kExp, {x[0]});
    return Op(g, OpKind::kAdd, {Op(g, OpKind::kMul, {a, x[0]}), b});
  });
}

// q, k, v = x[0], x[2], x[1] (TorchScript's split of a packed attention
// projection): the three gradients are stacked into one Concat, in index
// order, instead of a zero-filled copy of x each and the Adds between them;
// with an index missing (x[0], x[2] of 3) they are summed as before.
Value QkvSplit(Graph& g, Value x, const std::vector<int64_t>& indices) {
  std::vector<Value> parts;
  for (int64_t i : indices)
    parts.push_back(Op(g, OpKind::kGather, {x, g.AddInitializer(g.UniqueName("idx"), ir::Tensor::Int64s({i}, {}))}));
  Value y = Op(g, OpKind::kMul, {parts[0], parts[1]});
  return parts.size() > 2 ? Op(g, OpKind::kAdd, {y, Op(g, OpKind::kExp, {parts[2]})}) : y;
}

TEST(Driver, GatheredSlicesCoveringAnAxisStackTheirGradients) {
  for (const std::vector<int64_t>& indices : {std::vector<int64_t>{0, -1, 1}, std::vector<int64_t>{0, 2}}) {
    const bool covers = indices.size() == 3;
    SCOPED_TRACE(covers ? "all three" : "two of three");
    GRADCHECK((std::vector<GradInput>{{"x", {3, 2, 4}}}),
              [&](Graph& g, const V& x) { return QkvSplit(g, x[0], indices); });
    Graph g;
    Value x = g.AddInput("x", ir::TensorType::Of(ir::DType::kFloat64, {3, 2, 4}));
    Value loss = Op(g, OpKind::kReduceSum, {QkvSplit(g, x, indices)}, A({{"keepdims", int64_t{0}}}));
    ASSERT_TRUE(g.InferShapes().ok());
    auto r = BuildBackward(g, loss, DoublesConst(g, {1.0}, {}), BackwardOptions{{"x"}, {}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(CountNodes(g, OpKind::kGatherGrad), covers ? 0u : 2u);
    EXPECT_EQ(CountNodes(g, OpKind::kConcat), covers ? 1u : 0u);
  }
}

// q, k, v = x[:, 0:4], x[:, 4:6], x[:, 6:10] by Slice (the dynamo export's
// split of GPT-2's packed projection; rotate_half's halves): their
// gradients are concatenated in offset order, one Concat instead of a
// zero-filled Pad of x each and the Adds between them, and summed with the
// gradient of any other reader of x (Llama's q is read whole and by
// rotate_half); pieces that leave a gap (0:4 and 6:10) or overlap are summed
// as before.
Value SlicedParts(Graph& g, Value x, const std::vector<std::pair<int64_t, int64_t>>& ranges, bool whole) {
  std::vector<Value> parts;
  for (const auto& [from, to] : ranges)
    parts.push_back(Op(g, OpKind::kSlice,
                       {x, g.AddInitializer(g.UniqueName("s"), ir::Tensor::Int64s({from}, {1})),
                        g.AddInitializer(g.UniqueName("e"), ir::Tensor::Int64s({to}, {1})),
                        g.AddInitializer(g.UniqueName("a"), ir::Tensor::Int64s({1}, {1}))}));
  Value y;
  for (size_t k = 0; k < parts.size(); ++k) {  // sum of exp(k * piece): each piece read once
    Value scaled = Op(g, OpKind::kMul, {parts[k], DoublesConst(g, {0.5 * static_cast<double>(k + 1)}, {})});
    Value s = Op(g, OpKind::kReduceSum, {Op(g, OpKind::kExp, {scaled})}, A({{"keepdims", int64_t{0}}}));
    y = k == 0 ? s : Op(g, OpKind::kAdd, {y, s});
  }
  if (whole) y = Op(g, OpKind::kAdd, {y, Op(g, OpKind::kReduceSum, {Op(g, OpKind::kSin, {x})}, A({{"keepdims", int64_t{0}}}))});
  return y;
}

TEST(Driver, SlicedPiecesTilingAnAxisConcatenateTheirGradients) {
  using Ranges = std::vector<std::pair<int64_t, int64_t>>;
  const struct {
    const char* name;
    Ranges ranges;
    bool whole;
    int concats, sums;
  } cases[] = {
      {"tiling", {{4, 6}, {0, 4}, {6, 10}}, false, 1, 0},
      {"tiling, x read whole too", {{0, 4}, {4, 10}}, true, 1, 1},
      {"a gap", {{0, 4}, {6, 10}}, false, 0, 1},
      {"overlapping", {{0, 6}, {4, 10}}, false, 0, 1},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    GRADCHECK((std::vector<GradInput>{{"x", {3, 10}}}),
              [&](Graph& g, const V& x) { return SlicedParts(g, x[0], c.ranges, c.whole); });
    Graph g;
    Value x = g.AddInput("x", ir::TensorType::Of(ir::DType::kFloat64, {3, 10}));
    Value loss = SlicedParts(g, x, c.ranges, c.whole);
    ASSERT_TRUE(g.InferShapes().ok());
    auto r = BuildBackward(g, loss, DoublesConst(g, {1.0}, {}), BackwardOptions{{"x"}, {}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    int sums = 0;  // the Adds that sum x's gradient
    for (const ir::Node* n : std::as_const(g).nodes()) sums += n->op() == OpKind::kAdd && n->name().rfind("grad/x/sum_", 0) == 0;
    EXPECT_EQ(CountNodes(g, OpKind::kConcat), static_cast<size_t>(c.concats));
    EXPECT_EQ(sums, c.sums);
  }
}

struct TinyModel {
  Graph g;
  Value loss, seed;
  TinyModel() {
    Value x = g.AddInput("x", ir::TensorType::Of(ir::DType::kFloat64, {2, 3}));
    Value w = g.AddInitializer("w", RandomTensor({3, 2}, -1, 1, 3));
    Value b = g.AddInitializer("b", RandomTensor({2}, -1, 1, 4));
    Value unused = g.AddInitializer("unused", RandomTensor({2}, -1, 1, 5));
    Value y = Op(g, OpKind::kAdd, {Op(g, OpKind::kMatMul, {x, w}), b});
    g.AddOutput(Op(g, OpKind::kNeg, {unused}));
    loss = Op(g, OpKind::kReduceSum, {Op(g, OpKind::kTanh, {y})}, A({{"keepdims", int64_t{0}}}));
    seed = DoublesConst(g, {1.0}, {});
    EXPECT_TRUE(g.InferShapes().ok());
  }
};

TEST(Driver, DefaultWrtIsFloatInitializersReachingTheLossAndFrozenAreSkipped) {
  TinyModel m;
  auto r = BuildBackward(m.g, m.loss, m.seed);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->names, (std::vector<std::string>{"w", "b"}));
  TinyModel f;
  auto rf = BuildBackward(f.g, f.loss, f.seed, BackwardOptions{{"w", "b", "x"}, {"w"}});
  ASSERT_TRUE(rf.ok()) << rf.status().ToString();
  EXPECT_EQ(rf->names, (std::vector<std::string>{"b", "x"}));
  EXPECT_FALSE(rf->grads.count("w"));
  for (const ir::Node* n : std::as_const(f.g).nodes())
    for (size_t i = 0; i < n->num_outputs(); ++i) EXPECT_NE(f.g.name(n->output(i)), "w_grad");
}

// Every initializer without a gradient comes back with the reason.
TEST(Driver, UntrainedInitializersComeWithTheirReason) {
  Graph g;
  Value x = g.AddInput("x", ir::TensorType::Of(ir::DType::kFloat64, {2, 3}));
  Value w = g.AddInitializer("w", RandomTensor({3, 2}, -1, 1, 3));
  Value frozen = g.AddInitializer("frozen", RandomTensor({2}, -1, 1, 4));
  Value hi = g.AddInitializer("hi", RandomTensor({}, 0.5, 1, 5));
  Value idx = g.AddInitializer("idx", ir::Tensor::Int64s({1, 0}, {2}));
  g.AddInitializer("unused", RandomTensor({2}, -1, 1, 6));
  Value y = Op(g, OpKind::kAdd, {Op(g, OpKind::kGather, {Op(g, OpKind::kMatMul, {x, w}), idx}), frozen});
  // Pad's constant_value is no differentiable slot (it fills positions, it is no data).
  Value loss = Op(g, OpKind::kReduceSum, {Op(g, OpKind::kPad, {y, Op(g, OpKind::kConstant, {}, A({{"value", ir::Tensor::Int64s({0, 0, 0, 1}, {4})}})), hi})}, A({{"keepdims", int64_t{0}}}));
  ir::Tensor one = *ir::Tensor::Zeros(ir::DType::kFloat64, {});
  one.data<double>()[0] = 1.0;
  Value seed = Op(g, OpKind::kConstant, {}, A({{"value", one}}));
  ASSERT_TRUE(g.InferShapes().ok()) << g.InferShapes().ToString();
  auto r = BuildBackward(g, loss, seed, BackwardOptions{{}, {"frozen"}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->names, (std::vector<std::string>{"w"}));
  using U = std::vector<std::pair<std::string, NoGradient>>;
  EXPECT_EQ(r->untrained, (U{{"frozen", NoGradient::kFrozen},
                             {"hi", NoGradient::kNotDifferentiable},
                             {"idx", NoGradient::kNotFloat},
                             {"unused", NoGradient::kUnused}}));
  EXPECT_STREQ(NoGradientReason(NoGradient::kUnused), "the loss does not depend on it");
}

TEST(Driver, SameGraphGivesTheSameBackward) {
  TinyModel a, b;
  ASSERT_TRUE(BuildBackward(a.g, a.loss, a.seed).ok());
  ASSERT_TRUE(BuildBackward(b.g, b.loss, b.seed).ok());
  auto describe = [](const Graph& g) {
    std::string s;
    for (const ir::Node* n : g.nodes()) {
      s += StrCat(n->name(), " ", n->op_name(), " (");
      for (Value v : n->inputs()) s += (v.valid() ? g.name(v) : std::string("-")) + ",";
      s += ") -> " + g.name(n->output(0)) + " " + g.type(n->output(0)).ToString() + "\n";
    }
    return s;
  };
  EXPECT_EQ(describe(a.g), describe(b.g));
}

// Every differentiable op has a rule now; a rule that declines an attribute
// value (ScatterND's reduction mul) is one clean error naming the node.
TEST(Driver, UnsupportedGradientIsACleanError) {
  Graph g;
  Value x = g.AddInput("x", ir::TensorType::Of(ir::DType::kFloat64, {3, 2}));
  Value u = g.AddInput("u", ir::TensorType::Of(ir::DType::kFloat64, {1, 2}));
  ir::Node* n = g.AddNode(OpKind::kScatterND, {x, g.AddInitializer("idx", ir::Tensor::Int64s({1}, {1, 1})), u}, 1, "scatter");
  n->attrs().Set("reduction", std::string("mul"));
  Value loss = Op(g, OpKind::kReduceSum, {n->output(0)}, A({{"keepdims", int64_t{0}}}));
  Value seed = DoublesConst(g, {1.0}, {});
  ASSERT_TRUE(g.InferShapes().ok()) << g.InferShapes().ToString();
  auto r = BuildBackward(g, loss, seed, BackwardOptions{{"x"}, {}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("ScatterND node 'scatter'"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("reduction 'mul'"), std::string::npos) << r.status().message();
}

TEST(Driver, NonScalarLossIsAnError) {
  Graph g;
  Value x = g.AddInput("x", ir::TensorType::Of(ir::DType::kFloat64, {2}));
  Value y = Op(g, OpKind::kNeg, {x});
  ASSERT_TRUE(g.InferShapes().ok());
  auto r = BuildBackward(g, y, DoublesConst(g, {1.0}, {}), BackwardOptions{{"x"}, {}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("must be a float scalar"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace amptrain::autodiff::testing
