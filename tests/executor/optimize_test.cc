// Graph optimizations (executor/optimize.h): BatchNormalization folding and
// Conv (+ Add) (+ Relu) fusion on a small residual block, checked for
// structure and for outputs equal (within fp32 rounding) to the unoptimized
// session, with the oneDNN and the reference kernels. FuseGelu: the
// TorchScript and dynamo decompositions of the exact GELU and of GPT-2's tanh
// GELU, operands in either order, become one Gelu node with the same outputs
// (within fp32 rounding of the decomposed graph); patterns that are not GELU,
// intermediates read elsewhere, and constants that are trainable
// initializers are left alone. FuseSilu: Mul(x, Sigmoid(x)), either operand
// order, becomes one Silu with the same outputs; a Sigmoid read elsewhere, a
// product with another value, and the nodes a policy names are left alone.
// FuseTransposedWeights: MatMul(x, Transpose(w)) of a 2-D w becomes one Gemm
// (transB) with the same outputs for x of rank 2 to 4; a Transpose read
// elsewhere stays, and so do batched transposes, rows that cannot be viewed
// back, and the nodes a policy names.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "executor/optimize.h"
#include "executor/session.h"
#include "ir/graph.h"
#include "ir/verifier.h"
#include "tests/common/count_nodes.h"

namespace amptrain::executor {
namespace {

using ir::DType;
using ir::Graph;
using ir::OpKind;
using ir::Tensor;
using ir::TensorType;
using ir::Value;
using amptrain::testing::CountNodes;

Tensor Random(std::vector<int64_t> dims, std::mt19937& rng, float lo, float hi) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& f : v) f = u(rng);
  return Tensor::Floats(v, std::move(dims));
}

Value ConvBn(Graph& g, Value x, int64_t cin, int64_t cout, int64_t k, const std::string& name, std::mt19937& rng,
             bool bias) {
  std::vector<Value> in = {x, g.AddInitializer(name + ".w", Random({cout, cin, k, k}, rng, -0.5f, 0.5f))};
  if (bias) in.push_back(g.AddInitializer(name + ".b", Random({cout}, rng, -0.5f, 0.5f)));
  ir::Node* conv = g.AddNode(OpKind::kConv, in, 1, name);
  conv->attrs().Set("pads", std::vector<int64_t>(4, k / 2));
  Value c = conv->output(0);
  std::vector<Value> bn_in = {c};
  const char* params[] = {"scale", "bias", "mean", "var"};
  for (const char* p : params)
    bn_in.push_back(g.AddInitializer(name + ".bn." + p, Random({cout}, rng, std::string(p) == "var" ? 0.5f : -1.0f,
                                                               std::string(p) == "var" ? 2.0f : 1.0f)));
  ir::Node* bn = g.AddNode(OpKind::kBatchNormalization, bn_in, 1, name + ".bn");
  bn->attrs().Set("epsilon", 1e-3f);
  return bn->output(0);
}

// x [1,4,6,6] -> ConvBn(3x3) -> Relu r -> ConvBn(1x1, no bias) -> Add(r) -> Relu y
//                                      \-> ConvBn(1x1) -> s (graph output, no Relu)
std::unique_ptr<Graph> Block() {
  std::mt19937 rng(7);
  auto g = std::make_unique<Graph>();
  Value x = g->AddInput("x", TensorType::Of(DType::kFloat32, {1, 4, 6, 6}));
  Value r = g->AddNode(OpKind::kRelu, {ConvBn(*g, x, 4, 8, 3, "c1", rng, true)}, 1, "r")->output(0);
  Value a = g->AddNode(OpKind::kAdd, {ConvBn(*g, r, 8, 8, 1, "c2", rng, false), r}, 1, "add")->output(0);
  g->AddOutput(g->AddNode(OpKind::kRelu, {a}, 1, "y")->output(0));
  g->AddOutput(ConvBn(*g, r, 8, 8, 1, "c3", rng, true));
  EXPECT_TRUE(g->InferShapes().ok());
  return g;
}


TEST(OptimizeTest, FoldsBatchNormAndFusesConvChains) {
  auto g = Block();
  FoldBatchNormPass fold;
  auto folded = fold.Run(*g);
  ASSERT_TRUE(folded.ok()) << folded.status().ToString();
  EXPECT_TRUE(*folded);
  EXPECT_EQ(CountNodes(*g, OpKind::kBatchNormalization), 0u);
  EXPECT_EQ(CountNodes(*g, OpKind::kConv), 3u);
  for (const ir::Node* n : g->nodes()) {
    if (n->op() == OpKind::kConv) {
      EXPECT_TRUE(n->has_input(2)) << n->name() << " gets the folded bias";
    }
  }
  EXPECT_TRUE(ir::Verify(*g).ok());

  FuseConvPass fuse;
  auto fused = fuse.Run(*g);
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  EXPECT_TRUE(*fused);
  EXPECT_TRUE(ir::Verify(*g).ok());
  EXPECT_EQ(CountNodes(*g, OpKind::kFusedConv), 2u);
  EXPECT_EQ(CountNodes(*g, OpKind::kConv), 1u);  // c3 feeds a graph output directly
  EXPECT_EQ(CountNodes(*g, OpKind::kAdd), 0u);
  EXPECT_EQ(CountNodes(*g, OpKind::kRelu), 0u);
  const ir::Node* c2 = g->producer(g->outputs()[0]);
  ASSERT_EQ(c2->op(), OpKind::kFusedConv);
  EXPECT_EQ(c2->name(), "c2");
  EXPECT_EQ(c2->num_inputs(), 4u);
  EXPECT_EQ(*c2->attrs().GetString("activation", ""), "Relu");
  EXPECT_EQ(g->producer(c2->input(3))->name(), "c1");  // the residual is the fused c1 output

  auto again = fuse.Run(*g);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
}

TEST(OptimizeTest, KeepsValuesWithOtherConsumers) {
  std::mt19937 rng(1);
  Graph g;
  Value x = g.AddInput("x", TensorType::Of(DType::kFloat32, {1, 2, 4, 4}));
  ir::Node* conv = g.AddNode(OpKind::kConv, {x, g.AddInitializer("w", Random({2, 2, 1, 1}, rng, -1, 1))}, 1, "c");
  Value relu = g.AddNode(OpKind::kRelu, {conv->output(0)}, 1, "r")->output(0);
  g.AddOutput(relu);
  g.AddOutput(conv->output(0));  // the Conv output is also a graph output: nothing to fuse
  ASSERT_TRUE(g.InferShapes().ok());
  auto changed = OptimizeForInference(g);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(CountNodes(g, OpKind::kConv), 1u);
}

void ExpectNear(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.dims(), b.dims());
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    // fp32 rounding: folded weights round once more, and oneDNN sums in another order.
    const double x = a.data<float>()[i], y = b.data<float>()[i];
    ASSERT_NEAR(x, y, 1e-4 * (1.0 + std::abs(y))) << "element " << i;
  }
}

void CompareWithUnoptimized(const std::string& impl) {
  std::mt19937 rng(3);
  std::map<std::string, Tensor> feeds = {{"x", Random({1, 4, 6, 6}, rng, -2, 2)}};
  SessionOptions plain;
  plain.kernel_impl = impl;
  plain.optimize = false;
  SessionOptions optimized = plain;
  optimized.optimize = true;
  auto a = InferenceSession::Create(Block(), plain);
  auto b = InferenceSession::Create(Block(), optimized);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(&(*a)->run_graph(), &(*a)->graph());
  EXPECT_NE(&(*b)->run_graph(), &(*b)->graph());
  EXPECT_EQ(CountNodes((*b)->graph(), OpKind::kBatchNormalization), 3u) << "the caller's graph stays as it was";
  EXPECT_EQ(CountNodes((*b)->graph(), OpKind::kFusedConv), 0u);
  auto ya = (*a)->Run(feeds);
  auto yb = (*b)->Run(feeds);
  ASSERT_TRUE(ya.ok()) << ya.status().ToString();
  ASSERT_TRUE(yb.ok()) << yb.status().ToString();
  ASSERT_EQ(ya->size(), 2u);
  ASSERT_EQ(yb->size(), 2u);
  for (size_t i = 0; i < 2; ++i) ExpectNear((*yb)[i], (*ya)[i]);
}

TEST(OptimizeTest, OutputsMatchUnoptimizedOneDnn) { CompareWithUnoptimized(""); }
TEST(OptimizeTest, OutputsMatchUnoptimizedReference) { CompareWithUnoptimized("reference"); }

TEST(OptimizeTest, TrainingSessionsRunTheCallersGraph) {
  SessionOptions opts;
  opts.training = true;
  auto s = InferenceSession::Create(Block(), opts);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(&(*s)->run_graph(), &(*s)->graph());
}

TEST(OptimizeTest, ProfileCountsEveryStep) {
  SessionOptions opts;
  opts.profile = true;
  auto s = InferenceSession::Create(Block(), opts);
  ASSERT_TRUE(s.ok());
  std::mt19937 rng(3);
  ASSERT_TRUE((*s)->Run({{"x", Random({1, 4, 6, 6}, rng, -2, 2)}}).ok());
  ASSERT_TRUE((*s)->Run({{"x", Random({1, 4, 6, 6}, rng, -2, 2)}}).ok());
  const Profile& p = (*s)->profile();
  ASSERT_EQ(p.nodes().size(), 3u);  // c1, c2 (FusedConv), c3 (Conv)
  for (const Profile::NodeTime& n : p.nodes()) EXPECT_EQ(n.calls, 2);
  EXPECT_NE(p.Report().find("FusedConv"), std::string::npos);
}

// A scalar Constant node (or an initializer, with `init`).
Value Scalar(Graph& g, double v, bool init = false) {
  Tensor t = Tensor::Floats({static_cast<float>(v)}, {});
  if (init) return g.AddInitializer(g.UniqueName("c"), std::move(t));
  ir::Node* n = g.AddNode(OpKind::kConstant, {}, 1, g.UniqueName("const"));
  n->attrs().Set("value", std::move(t));
  return n->output(0);
}

Value Op(Graph& g, OpKind op, std::vector<Value> in) { return g.AddNode(op, std::move(in))->output(0); }

struct Variant {
  const char* name;
  // GELU of x built from primitive ops; `k` gives the constants.
  std::function<Value(Graph&, Value x, const std::function<Value(double)>& k)> build;
  const char* approximate;
};

const Variant kVariants[] = {
    {"exact, TorchScript: (x * (1 + erf(x / sqrt2))) * 0.5",
     [](Graph& g, Value x, const std::function<Value(double)>& k) {
       Value e = Op(g, OpKind::kErf, {Op(g, OpKind::kDiv, {x, k(std::sqrt(2.0))})});
       return Op(g, OpKind::kMul, {Op(g, OpKind::kMul, {x, Op(g, OpKind::kAdd, {e, k(1.0)})}), k(0.5)});
     },
     "none"},
    {"exact, dynamo: (x * 0.5) * (1 + erf(x * 0.7071))",
     [](Graph& g, Value x, const std::function<Value(double)>& k) {
       Value h = Op(g, OpKind::kMul, {x, k(0.5)});
       Value e = Op(g, OpKind::kErf, {Op(g, OpKind::kMul, {k(0.7071067811865476), x})});
       return Op(g, OpKind::kMul, {h, Op(g, OpKind::kAdd, {k(1.0), e})});
     },
     "none"},
    {"tanh, dynamo (GPT-2's gelu_new)",
     [](Graph& g, Value x, const std::function<Value(double)>& k) {
       Value h = Op(g, OpKind::kMul, {x, k(0.5)});
       Value cube = Op(g, OpKind::kPow, {x, k(3.0)});
       Value inner = Op(g, OpKind::kAdd, {x, Op(g, OpKind::kMul, {cube, k(0.044715)})});
       Value t = Op(g, OpKind::kTanh, {Op(g, OpKind::kMul, {inner, k(0.7978845608028654)})});
       return Op(g, OpKind::kMul, {h, Op(g, OpKind::kAdd, {t, k(1.0)})});
     },
     "tanh"},
    {"tanh, operands swapped: x * (0.5 * (1 + tanh((0.044715 x^3 + x) * c)))",
     [](Graph& g, Value x, const std::function<Value(double)>& k) {
       Value cube = Op(g, OpKind::kPow, {x, k(3.0)});
       Value inner = Op(g, OpKind::kAdd, {Op(g, OpKind::kMul, {k(0.044715), cube}), x});
       Value t = Op(g, OpKind::kTanh, {Op(g, OpKind::kMul, {k(0.7978845608028654), inner})});
       return Op(g, OpKind::kMul, {Op(g, OpKind::kMul, {k(0.5), Op(g, OpKind::kAdd, {k(1.0), t})}), x});
     },
     "tanh"},
};

// x [4, 37] -> Relu -> GELU -> Add(x') -> y: x' (the Relu's output) has
// another reader, as a residual stream does.
std::unique_ptr<Graph> Model(const Variant& v, const std::function<Value(Graph&, double)>& constant) {
  auto g = std::make_unique<Graph>();
  Value in = g->AddInput("x", TensorType::Of(DType::kFloat32, {4, 37}));
  Value x = Op(*g, OpKind::kRelu, {in});
  Value gelu = v.build(*g, x, [&](double c) { return constant(*g, c); });
  g->AddOutput(Op(*g, OpKind::kAdd, {gelu, x}));
  EXPECT_TRUE(g->InferShapes().ok());
  return g;
}

std::vector<float> Outputs(std::unique_ptr<Graph> g, const Tensor& x) {
  SessionOptions options;
  options.optimize = false;
  auto session = InferenceSession::Create(std::move(g), options);
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  auto out = (*session)->Run({{"x", x}});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  const Tensor& y = (*out)[0];
  return std::vector<float>(y.data<float>(), y.data<float>() + y.num_elements());
}

const auto kAnyInitializer = [](const std::string&) { return true; };

TEST(FuseGelu, EachExportedFormBecomesOneGeluWithTheSameOutputs) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-6.0f, 6.0f);
  std::vector<float> xs(4 * 37);
  for (float& v : xs) v = u(rng);
  const Tensor x = Tensor::Floats(xs, {4, 37});
  for (const Variant& v : kVariants) {
    auto constant = [](Graph& g, double c) { return Scalar(g, c); };
    auto g = Model(v, constant);
    const std::vector<float> want = Outputs(Model(v, constant), x);
    auto fused = FuseGelu(*g, kAnyInitializer);
    ASSERT_TRUE(fused.ok()) << v.name << ": " << fused.status().ToString();
    EXPECT_EQ(*fused, 1) << v.name;
    EXPECT_EQ(CountNodes(*g, OpKind::kGelu), 1u) << v.name;
    for (OpKind op : {OpKind::kErf, OpKind::kTanh, OpKind::kMul, OpKind::kDiv, OpKind::kPow, OpKind::kConstant})
      EXPECT_EQ(CountNodes(*g, op), 0u) << v.name << ": " << ir::Schema(op).name << " left";
    for (const ir::Node* n : g->nodes()) {
      if (n->op() == OpKind::kGelu) {
        EXPECT_EQ(n->attrs().Str("approximate", "none"), v.approximate) << v.name;
      }
    }
    const std::vector<float> got = Outputs(std::move(g), x);
    for (size_t i = 0; i < got.size(); ++i)  // the decomposed graph rounds after each op
      EXPECT_NEAR(got[i], want[i], 4e-7 * std::max(1.0f, std::abs(want[i]))) << v.name << " at x = " << xs[i];
  }
}

TEST(FuseGelu, LeavesWhatIsNotExactlyTheirGelu) {
  const Variant& exact = kVariants[0];
  const Variant& tanh = kVariants[2];
  // Another constant (0.6 for 0.5).
  auto g = Model(exact, [](Graph& g, double c) { return Scalar(g, c == 0.5 ? 0.6 : c); });
  EXPECT_EQ(*FuseGelu(*g, kAnyInitializer), 0);
  // A cube that is x^2.
  g = Model(tanh, [](Graph& g, double c) { return Scalar(g, c == 3.0 ? 2.0 : c); });
  EXPECT_EQ(*FuseGelu(*g, kAnyInitializer), 0);
  // The constants are initializers the caller trains (--train-all): never consumed.
  g = Model(exact, [](Graph& g, double c) { return Scalar(g, c, true); });
  EXPECT_EQ(*FuseGelu(*g, [](const std::string&) { return false; }), 0);
  EXPECT_EQ(*FuseGelu(*g, kAnyInitializer), 1);
  // An intermediate value read elsewhere (the erf is also a graph output).
  g = Model(exact, [](Graph& g, double c) { return Scalar(g, c); });
  for (ir::Node* n : g->nodes())
    if (n->op() == OpKind::kErf) g->AddOutput(n->output(0));
  EXPECT_EQ(*FuseGelu(*g, kAnyInitializer), 0);
  EXPECT_EQ(CountNodes(*g, OpKind::kGelu), 0u);
}

// x [4, 37] -> Sigmoid -> Mul (x first or second) -> Add(x) -> y.
std::unique_ptr<Graph> SiluModel(bool sigmoid_first) {
  auto g = std::make_unique<Graph>();
  Value x = g->AddInput("x", TensorType::Of(DType::kFloat32, {4, 37}));
  ir::Node* sigmoid = g->AddNode(OpKind::kSigmoid, {x}, 1, "act/Sigmoid");
  const Value s = sigmoid->output(0);
  ir::Node* mul = g->AddNode(OpKind::kMul, sigmoid_first ? std::vector<Value>{s, x} : std::vector<Value>{x, s}, 1, "act/Mul");
  EXPECT_TRUE(g->RenameValue(mul->output(0), "silu_out").ok());
  g->AddOutput(Op(*g, OpKind::kAdd, {mul->output(0), x}));
  EXPECT_TRUE(g->InferShapes().ok());
  return g;
}

TEST(FuseSilu, EitherOperandOrderBecomesOneSiluWithTheSameOutputs) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-12.0f, 12.0f);
  std::vector<float> xs(4 * 37);
  for (float& v : xs) v = u(rng);
  const Tensor x = Tensor::Floats(xs, {4, 37});
  for (bool sigmoid_first : {false, true}) {
    auto g = SiluModel(sigmoid_first);
    const std::vector<float> want = Outputs(SiluModel(sigmoid_first), x);
    auto fused = FuseSilu(*g, nullptr);
    ASSERT_TRUE(fused.ok()) << fused.status().ToString();
    EXPECT_EQ(*fused, 1);
    EXPECT_EQ(CountNodes(*g, OpKind::kSilu), 1u);
    EXPECT_EQ(CountNodes(*g, OpKind::kSigmoid) + CountNodes(*g, OpKind::kMul), 0u);
    EXPECT_TRUE(ir::Verify(*g).ok());
    const ir::Node* silu = g->producer(g->FindValue("silu_out"));
    ASSERT_NE(silu, nullptr) << "the Mul's value name is gone";
    EXPECT_EQ(silu->op(), OpKind::kSilu);
    EXPECT_EQ(silu->name(), "act/Mul");
    const std::vector<float> got = Outputs(std::move(g), x);
    for (size_t i = 0; i < got.size(); ++i)  // the pair rounds twice, the Silu once
      EXPECT_NEAR(got[i], want[i], 3e-7 * std::max(1.0f, std::abs(want[i]))) << "x = " << xs[i];
  }
}

TEST(FuseSilu, LeavesWhatIsNotASilu) {
  // The Sigmoid's output is also a graph output (a gate read twice).
  auto g = SiluModel(false);
  for (ir::Node* n : g->nodes())
    if (n->op() == OpKind::kSigmoid) g->AddOutput(n->output(0));
  EXPECT_EQ(*FuseSilu(*g, nullptr), 0);
  // x * Sigmoid(z): a gate of another value (squeeze-excitation, GLU).
  g = std::make_unique<Graph>();
  Value x = g->AddInput("x", TensorType::Of(DType::kFloat32, {4, 37}));
  Value z = g->AddInput("z", TensorType::Of(DType::kFloat32, {4, 37}));
  g->AddOutput(Op(*g, OpKind::kMul, {x, Op(*g, OpKind::kSigmoid, {z})}));
  ASSERT_TRUE(g->InferShapes().ok());
  EXPECT_EQ(*FuseSilu(*g, nullptr), 0);
  // A node that a policy names stays for the policy to find.
  g = SiluModel(true);
  EXPECT_EQ(*FuseSilu(*g, [](const ir::Node& n) { return n.name() == "act/Sigmoid"; }), 0);
  EXPECT_EQ(*FuseSilu(*g, [](const ir::Node& n) { return n.name() == "elsewhere"; }), 1);
}

// x [dims..., 8] -> MatMul(x, Transpose(w [5, 8])) -> y (nn.Linear without its
// bias, as the exporters write it on inputs of rank 3 and more).
std::unique_ptr<Graph> LinearModel(const std::vector<ir::Dim>& x_dims, bool transpose_is_output = false) {
  std::mt19937 rng(9);
  auto g = std::make_unique<Graph>();
  Value x = g->AddInput("x", TensorType::Of(DType::kFloat32, ir::Shape(x_dims)));
  ir::Node* t = g->AddNode(OpKind::kTranspose, {g->AddInitializer("w", Random({5, 8}, rng, -1.0f, 1.0f))}, 1, "fc/T");
  t->attrs().Set("perm", std::vector<int64_t>{1, 0});
  ir::Node* mm = g->AddNode(OpKind::kMatMul, {x, t->output(0)}, 1, "fc/MatMul", {"y"});
  g->AddOutput(mm->output(0));
  if (transpose_is_output) g->AddOutput(t->output(0));
  EXPECT_TRUE(g->InferShapes().ok());
  return g;
}

std::vector<ir::Dim> Static(const std::vector<int64_t>& dims) {
  std::vector<ir::Dim> d;
  for (int64_t v : dims) d.push_back(ir::Dim::Static(v));
  return d;
}

TEST(FuseTransposedWeights, LinearOfEveryRankBecomesOneGemmWithTheSameOutputs) {
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{6, 8}, {2, 3, 8}, {2, 2, 3, 8}}) {
    std::mt19937 rng(4);
    const Tensor x = Random(dims, rng, -1.0f, 1.0f);
    auto g = LinearModel(Static(dims));
    const std::vector<float> want = Outputs(LinearModel(Static(dims)), x);
    auto fused = FuseTransposedWeights(*g, nullptr);
    ASSERT_TRUE(fused.ok()) << fused.status().ToString();
    EXPECT_EQ(*fused, 1);
    EXPECT_EQ(CountNodes(*g, OpKind::kGemm), 1u);
    EXPECT_EQ(CountNodes(*g, OpKind::kTranspose) + CountNodes(*g, OpKind::kMatMul), 0u);
    EXPECT_TRUE(ir::Verify(*g).ok());
    const Value y = g->FindValue("y");
    ASSERT_TRUE(y.valid()) << "the MatMul's value name is gone";
    EXPECT_EQ(g->type(y).shape.rank(), dims.size());
    for (const ir::Node* n : g->nodes())
      if (n->op() == OpKind::kGemm) {
        EXPECT_EQ(n->name(), "fc/MatMul");
      }
    const std::vector<float> got = Outputs(std::move(g), x);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)  // 8 products summed in another order at most
      EXPECT_NEAR(got[i], want[i], 1e-6f * std::max(1.0f, std::abs(want[i])));
  }
}

TEST(FuseTransposedWeights, KeepsWhatItCannotReadInPlace) {
  // W^T read elsewhere too (a graph output): the MatMul still becomes a Gemm, the Transpose stays.
  auto g = LinearModel(Static({2, 3, 8}), /*transpose_is_output=*/true);
  EXPECT_EQ(*FuseTransposedWeights(*g, nullptr), 1);
  EXPECT_EQ(CountNodes(*g, OpKind::kTranspose), 1u);
  // Two symbolic dims before the last: the rows could not be viewed back.
  g = LinearModel({ir::Dim::Symbolic("batch"), ir::Dim::Symbolic("seq"), ir::Dim::Static(8)});
  EXPECT_EQ(*FuseTransposedWeights(*g, nullptr), 0);
  // An empty leading dim: a Reshape could not state it beside a -1.
  g = LinearModel({ir::Dim::Symbolic("batch"), ir::Dim::Static(0), ir::Dim::Static(8)});
  EXPECT_EQ(*FuseTransposedWeights(*g, nullptr), 0);
  // One symbolic dim is fine.
  g = LinearModel({ir::Dim::Symbolic("batch"), ir::Dim::Static(3), ir::Dim::Static(8)});
  EXPECT_EQ(*FuseTransposedWeights(*g, nullptr), 1);
  EXPECT_EQ(g->type(g->FindValue("y")).shape[0], ir::Dim::Symbolic("batch"));
  // A batched K^T (perm over 3 axes) is no 2-D weight.
  g = std::make_unique<Graph>();
  Value q = g->AddInput("q", TensorType::Of(DType::kFloat32, {2, 4, 8}));
  Value k = g->AddInput("k", TensorType::Of(DType::kFloat32, {2, 4, 8}));
  ir::Node* t = g->AddNode(OpKind::kTranspose, {k});
  t->attrs().Set("perm", std::vector<int64_t>{0, 2, 1});
  g->AddOutput(Op(*g, OpKind::kMatMul, {q, t->output(0)}));
  ASSERT_TRUE(g->InferShapes().ok());
  EXPECT_EQ(*FuseTransposedWeights(*g, nullptr), 0);
  // A node that a policy names stays for the policy to find.
  g = LinearModel(Static({2, 3, 8}));
  EXPECT_EQ(*FuseTransposedWeights(*g, [](const ir::Node& n) { return n.name() == "fc/T"; }), 0);
}

}  // namespace
}  // namespace amptrain::executor
