// Inference graph optimizations (executor/optimize.h): BatchNormalization
// folding and Conv (+ Add) (+ Relu) fusion on a small residual block, checked
// for structure and for outputs equal (within fp32 rounding) to the
// unoptimized session, with the oneDNN and the reference kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "executor/optimize.h"
#include "executor/session.h"
#include "ir/graph.h"
#include "ir/verifier.h"

namespace amptrain::executor {
namespace {

using ir::DType;
using ir::Graph;
using ir::OpKind;
using ir::Tensor;
using ir::TensorType;
using ir::Value;

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

size_t Count(const Graph& g, OpKind op) {
  size_t n = 0;
  for (const ir::Node* node : g.nodes()) n += node->op() == op;
  return n;
}

TEST(OptimizeTest, FoldsBatchNormAndFusesConvChains) {
  auto g = Block();
  FoldBatchNormPass fold;
  auto folded = fold.Run(*g);
  ASSERT_TRUE(folded.ok()) << folded.status().ToString();
  EXPECT_TRUE(*folded);
  EXPECT_EQ(Count(*g, OpKind::kBatchNormalization), 0u);
  EXPECT_EQ(Count(*g, OpKind::kConv), 3u);
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
  EXPECT_EQ(Count(*g, OpKind::kFusedConv), 2u);
  EXPECT_EQ(Count(*g, OpKind::kConv), 1u);  // c3 feeds a graph output directly
  EXPECT_EQ(Count(*g, OpKind::kAdd), 0u);
  EXPECT_EQ(Count(*g, OpKind::kRelu), 0u);
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
  EXPECT_EQ(Count(g, OpKind::kConv), 1u);
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
  EXPECT_EQ(Count((*b)->graph(), OpKind::kBatchNormalization), 3u) << "the caller's graph stays as it was";
  EXPECT_EQ(Count((*b)->graph(), OpKind::kFusedConv), 0u);
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

}  // namespace
}  // namespace amptrain::executor
