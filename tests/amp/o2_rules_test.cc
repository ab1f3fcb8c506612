// O2's own rules (amp/assign.cc rule 6 and docs/PRECISION_CHOICES.md):
// islands whose low precision would only round run fp32; LayerNormalization
// (opset >= 17, fp32 statistics) and Erf run low.
#include <gtest/gtest.h>

#include "amp/passes.h"
#include "amp_test_util.h"
#include "ir/printer.h"

namespace amptrain::amp {
namespace {

using ir::DType;
using ir::OpKind;
using testing::Count;
using testing::DecisionsByName;
using testing::ExpectWellFormed;
using testing::FindNode;
using testing::OutDType;
using testing::RandomTensor;

constexpr DType F32 = DType::kFloat32, F16 = DType::kFloat16, BF16 = DType::kBFloat16;

Policy O2(DType low = F16) { return testing::AtLevel(Level::kO2, low); }

// x -> relu -> softmax -> y, and optionally relu -> matmul(W) -> matmul(W2) -> z
// (two MatMuls: a lone last-layer MatMul would itself join the island).
std::unique_ptr<ir::Graph> ReluIsland(bool low_consumer) {
  auto g = std::make_unique<ir::Graph>();
  ir::Value x = g->AddInput("x", ir::TensorType::Of(F32, {2, 8}));
  ir::Node* relu = g->AddNode(OpKind::kRelu, {x}, 1, "relu");
  g->AddOutput(g->AddNode(OpKind::kSoftmax, {relu->output(0)}, 1, "sm", {"y"})->output(0));
  if (low_consumer) {
    ir::Node* mm = g->AddNode(OpKind::kMatMul, {relu->output(0), testing::Weight(*g, "W", {8, 4}, 1)}, 1, "mm");
    g->AddOutput(g->AddNode(OpKind::kMatMul, {mm->output(0), testing::Weight(*g, "W2", {4, 4}, 2)}, 1, "mm2", {"z"})
                     ->output(0));
  }
  EXPECT_TRUE(g->InferShapes().ok());
  return g;
}

TEST(AmpO2Rules, IslandWithoutLowNeighbourRunsFp32) {
  auto g = ReluIsland(false);
  auto d = DecisionsByName(*g, O2());
  EXPECT_EQ(d["relu"].dtype, F32);
  EXPECT_EQ(d["relu"].reason, Reason::kRoundingOnly);
  ASSERT_TRUE(Convert(*g, O2()).ok());
  EXPECT_EQ(Count(*g, OpKind::kCast), 0) << "fp16 relu would cost two Casts and only round";
  ExpectWellFormed(*g);
}

TEST(AmpO2Rules, IslandFeedingLowComputeStaysLow) {
  auto g = ReluIsland(true);
  auto d = DecisionsByName(*g, O2());
  EXPECT_EQ(d["relu"].dtype, F16);
  EXPECT_EQ(d["relu"].reason, Reason::kLevelAll);
  // casts: x, relu->sm, mm2->z (W, W2 stored fp16)
  ASSERT_TRUE(Convert(*g, O2()).ok());
  EXPECT_EQ(Count(*g, OpKind::kCast), 3);
  ExpectWellFormed(*g);
}

// x -> softmax (fp32, denylist) -> matmul(W) -> z: the last layer reads only
// fp32 and feeds the fp32 output, so at O2 it runs fp32 with no Cast at all
// (the transformer's head after its fp32 mean-pool).
TEST(AmpO2Rules, LastLayerBetweenFp32RunsFp32) {
  auto g = std::make_unique<ir::Graph>();
  ir::Value x = g->AddInput("x", ir::TensorType::Of(F32, {2, 8}));
  ir::Node* sm = g->AddNode(OpKind::kSoftmax, {x}, 1, "sm");
  g->AddOutput(g->AddNode(OpKind::kMatMul, {sm->output(0), testing::Weight(*g, "W", {8, 4}, 1)}, 1, "mm", {"z"})
                   ->output(0));
  ASSERT_TRUE(g->InferShapes().ok());
  auto d = DecisionsByName(*g, O2());
  EXPECT_EQ(d["mm"].dtype, F32);
  EXPECT_EQ(d["mm"].reason, Reason::kRoundingOnly);
  ASSERT_TRUE(Convert(*g, O2()).ok());
  EXPECT_EQ(Count(*g, OpKind::kCast), 0);
  ExpectWellFormed(*g);
}

TEST(AmpO2Rules, NoKeepIoTypesMakesInputsLowNeighbours) {
  auto g = ReluIsland(false);
  Policy p = O2();
  p.keep_io_types = false;
  EXPECT_EQ(DecisionsByName(*g, p)["relu"].dtype, F16);
}

TEST(AmpO2Rules, NodeOverrideIsNeverDemoted) {
  auto g = ReluIsland(false);
  Policy p = O2();
  p.node_overrides = {{"relu", false, F16}};
  EXPECT_EQ(DecisionsByName(*g, p)["relu"].dtype, F16);
}

// x -> conv1 -> relu1 -> conv2 -> add(conv2, relu1) -> bn -> relu2 -> gap -> y:
// ResNet's residual pattern. bf16 below opset 22 has no bf16 Conv/pools, so
// the follow ops and BN between them stay fp32 with no Cast at all.
std::unique_ptr<ir::Graph> Residual(int64_t opset) {
  auto g = std::make_unique<ir::Graph>();
  g->info().opset = opset;
  ir::Value x = g->AddInput("x", ir::TensorType::Of(F32, {1, 4, 6, 6}));
  auto conv = [&](ir::Value in, const char* name, uint32_t seed) {
    ir::Node* c = g->AddNode(OpKind::kConv, {in, testing::Weight(*g, std::string(name) + "_W", {4, 4, 3, 3}, seed)},
                             1, name);
    c->attrs().Set("pads", std::vector<int64_t>{1, 1, 1, 1});
    return c->output(0);
  };
  ir::Node* relu1 = g->AddNode(OpKind::kRelu, {conv(x, "conv1", 1)}, 1, "relu1");
  ir::Node* add = g->AddNode(OpKind::kAdd, {conv(relu1->output(0), "conv2", 2), relu1->output(0)}, 1, "add");
  ir::Node* bn = g->AddNode(OpKind::kBatchNormalization,
                            {add->output(0), g->AddInitializer("s", RandomTensor({4}, 0.5, 1.5, 3)),
                             g->AddInitializer("b", RandomTensor({4}, -0.1, 0.1, 4)),
                             g->AddInitializer("m", RandomTensor({4}, -0.1, 0.1, 5)),
                             g->AddInitializer("v", RandomTensor({4}, 0.5, 1.5, 6))}, 1, "bn");
  ir::Node* relu2 = g->AddNode(OpKind::kRelu, {bn->output(0)}, 1, "relu2");
  ir::Node* gap = g->AddNode(OpKind::kGlobalAveragePool, {relu2->output(0)}, 1, "gap", {"y"});
  g->AddOutput(gap->output(0));
  EXPECT_TRUE(g->InferShapes().ok());
  return g;
}

TEST(AmpO2Rules, Bf16ResidualStreamIsNotRoundedBetweenFp32Convs) {
  auto g = Residual(17);
  auto d = DecisionsByName(*g, O2(BF16));
  for (const char* n : {"relu1", "add", "bn", "relu2"}) {
    EXPECT_EQ(d[n].dtype, F32) << n;
    EXPECT_EQ(d[n].reason, Reason::kRoundingOnly) << n;
  }
  ASSERT_TRUE(Convert(*g, O2(BF16)).ok());
  EXPECT_EQ(Count(*g, OpKind::kCast), 0);
  ExpectWellFormed(*g);
}

TEST(AmpO2Rules, ResidualStaysLowWhereConvRunsLow) {
  for (auto [low, opset] : {std::pair{F16, int64_t{17}}, std::pair{BF16, int64_t{22}}}) {
    auto g = Residual(opset);
    auto d = DecisionsByName(*g, O2(low));
    for (const char* n : {"conv1", "relu1", "add", "bn", "relu2", "gap"}) EXPECT_EQ(d[n].dtype, low) << n;
    ASSERT_TRUE(Convert(*g, O2(low)).ok());
    EXPECT_EQ(Count(*g, OpKind::kCast), 2) << "x and y only";
    ExpectWellFormed(*g);
  }
}

// Squeeze-excitation as the dynamo exporter writes it: x -> conv -> a;
// a -> ReduceMean(axes 2,3) -> fc1 (1x1 conv) -> relu -> fc2 -> sigmoid;
// y = a * sigmoid. With `mean_to_output`, the mean is also a graph output.
std::unique_ptr<ir::Graph> SqueezeExcite(bool mean_to_output) {
  auto g = std::make_unique<ir::Graph>();
  g->info().opset = 18;
  ir::Value x = g->AddInput("x", ir::TensorType::Of(F32, {2, 4, 6, 6}));
  ir::Node* conv = g->AddNode(OpKind::kConv, {x, testing::Weight(*g, "W", {4, 4, 3, 3}, 1)}, 1, "conv");
  conv->attrs().Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  ir::Node* mean = g->AddNode(OpKind::kReduceMean,
                              {conv->output(0), g->AddInitializer("axes", ir::Tensor::Int64s({2, 3}, {2}))}, 1,
                              "mean");
  ir::Node* fc1 = g->AddNode(OpKind::kConv, {mean->output(0), testing::Weight(*g, "W1", {2, 4, 1, 1}, 2)}, 1, "fc1");
  ir::Node* relu = g->AddNode(OpKind::kRelu, {fc1->output(0)}, 1, "relu");
  ir::Node* fc2 = g->AddNode(OpKind::kConv, {relu->output(0), testing::Weight(*g, "W2", {4, 2, 1, 1}, 3)}, 1, "fc2");
  ir::Node* sig = g->AddNode(OpKind::kSigmoid, {fc2->output(0)}, 1, "sig");
  g->AddOutput(g->AddNode(OpKind::kMul, {conv->output(0), sig->output(0)}, 1, "mul", {"y"})->output(0));
  if (mean_to_output) g->AddOutput(mean->output(0));
  EXPECT_TRUE(g->InferShapes().ok());
  return g;
}

TEST(AmpO2Rules, ReduceMeanBetweenLowOpsTakesAndGivesLowWithoutCasts) {
  auto g = SqueezeExcite(false);
  auto d = DecisionsByName(*g, O2());
  EXPECT_EQ(d["mean"].dtype, F16);
  EXPECT_EQ(d["mean"].reason, Reason::kFp32Inside);
  ASSERT_TRUE(Convert(*g, O2()).ok());
  EXPECT_EQ(Count(*g, OpKind::kCast), 2) << "x and y only: no Cast pair around the mean\n" << ir::PrintGraph(*g);
  ExpectWellFormed(*g);
  // An fp32 reader (here the graph output) keeps it fp32 with its Casts.
  auto g2 = SqueezeExcite(true);
  EXPECT_EQ(DecisionsByName(*g2, O2())["mean"].reason, Reason::kLevelDeny);
  // A user's fp32 list is never overruled.
  Policy p = O2();
  p.fp32_ops = {"ReduceMean"};
  EXPECT_EQ(DecisionsByName(*g, p)["mean"].reason, Reason::kCustomDeny);
  // Without a capability that computes it in fp32 inside, it stays denied.
  Capability none = Capability::Export();
  none.computes_fp32_inside = nullptr;
  EXPECT_EQ(DecisionsByName(*g, O2(), none)["mean"].dtype, F32);
}

// ConvNeXt-V2's global response norm: x -> conv -> a; n = ReduceL2(a, axes
// 2,3); m = ReduceMean(n, axis 1); y = conv2(a * (n / m)). With
// `mean_to_output`, m is also a graph output.
std::unique_ptr<ir::Graph> ResponseNorm(bool mean_to_output) {
  auto g = std::make_unique<ir::Graph>();
  g->info().opset = 18;
  ir::Value x = g->AddInput("x", ir::TensorType::Of(F32, {2, 4, 6, 6}));
  ir::Node* conv = g->AddNode(OpKind::kConv, {x, testing::Weight(*g, "W", {4, 4, 3, 3}, 1)}, 1, "conv");
  conv->attrs().Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  ir::Node* l2 = g->AddNode(OpKind::kReduceL2,
                            {conv->output(0), g->AddInitializer("hw", ir::Tensor::Int64s({2, 3}, {2}))}, 1, "l2");
  ir::Node* mean = g->AddNode(OpKind::kReduceMean,
                              {l2->output(0), g->AddInitializer("c", ir::Tensor::Int64s({1}, {1}))}, 1, "mean");
  ir::Node* div = g->AddNode(OpKind::kDiv, {l2->output(0), mean->output(0)}, 1, "div");
  ir::Node* mul = g->AddNode(OpKind::kMul, {conv->output(0), div->output(0)}, 1, "mul");
  ir::Node* conv2 =
      g->AddNode(OpKind::kConv, {mul->output(0), testing::Weight(*g, "W2", {4, 4, 1, 1}, 2)}, 1, "conv2", {"y"});
  g->AddOutput(conv2->output(0));
  if (mean_to_output) g->AddOutput(mean->output(0));
  EXPECT_TRUE(g->InferShapes().ok());
  return g;
}

TEST(AmpO2Rules, ChainedFp32InsideOpsRunLowTogether) {
  auto g = ResponseNorm(false);
  auto d = DecisionsByName(*g, O2());
  EXPECT_EQ(d["l2"].dtype, F16);
  EXPECT_EQ(d["l2"].reason, Reason::kFp32Inside);
  EXPECT_EQ(d["mean"].dtype, F16);
  EXPECT_EQ(d["mean"].reason, Reason::kFp32Inside);
  ASSERT_TRUE(Convert(*g, O2()).ok());
  EXPECT_EQ(Count(*g, OpKind::kCast), 2) << "x and y only\n" << ir::PrintGraph(*g);
  ExpectWellFormed(*g);
  // The mean read by an fp32 graph output stays fp32, and so does the
  // ReduceL2 that counted on it as a low reader.
  auto g2 = ResponseNorm(true);
  auto d2 = DecisionsByName(*g2, O2());
  EXPECT_EQ(d2["mean"].reason, Reason::kLevelDeny);
  EXPECT_EQ(d2["l2"].reason, Reason::kLevelDeny);
  EXPECT_EQ(d2["l2"].dtype, F32);
  ASSERT_TRUE(Convert(*g2, O2()).ok());
  ExpectWellFormed(*g2);
}

// x -> mm1(W1) -> ln -> erf -> mm2(W2) -> y
std::unique_ptr<ir::Graph> LnErf(int64_t opset, float w1_scale) {
  auto g = std::make_unique<ir::Graph>();
  g->info().opset = opset;
  ir::Value x = g->AddInput("x", ir::TensorType::Of(F32, {4, 32}));
  ir::Tensor w1 = RandomTensor({32, 64}, -0.5f, 0.5f, 7);
  for (int64_t i = 0; i < w1.num_elements(); ++i) w1.data<float>()[i] *= w1_scale;
  ir::Node* mm1 = g->AddNode(OpKind::kMatMul, {x, g->AddInitializer("W1", std::move(w1))}, 1, "mm1");
  ir::Node* ln = g->AddNode(OpKind::kLayerNormalization,
                            {mm1->output(0), g->AddInitializer("g", RandomTensor({64}, 0.5, 1.5, 8)),
                             g->AddInitializer("b", RandomTensor({64}, -0.1, 0.1, 9))}, 1, "ln");
  ir::Node* erf = g->AddNode(OpKind::kErf, {ln->output(0)}, 1, "erf");
  ir::Node* mm2 = g->AddNode(OpKind::kMatMul, {erf->output(0), testing::Weight(*g, "W2", {64, 8}, 10)}, 1, "mm2",
                             {"y"});
  g->AddOutput(mm2->output(0));
  EXPECT_TRUE(g->InferShapes().ok());
  return g;
}

TEST(AmpO2Rules, LayerNormAndErfRunLowWithFp32Statistics) {
  // mm1's outputs reach ~1e3: their squares (~1e6) are beyond fp16, so
  // fp16 statistics would overflow; stash_type=1 keeps them fp32.
  auto g = LnErf(17, 100.0f);
  auto d = DecisionsByName(*g, O2());
  EXPECT_EQ(d["ln"].dtype, F16);
  EXPECT_EQ(d["erf"].dtype, F16);
  auto ref = g->Clone();
  auto r = Convert(*g, O2());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectWellFormed(*g);
  const ir::Node* ln = FindNode(*g, "ln");
  EXPECT_EQ(OutDType(*g, "ln"), F16);
  EXPECT_EQ(ln->attrs().Int("stash_type", 0), 1);
  EXPECT_EQ(g->ConstantValue(ln->input(1))->dtype(), F16) << "ONNX ties Scale to X";
  EXPECT_EQ(Count(*g, OpKind::kCast), 2) << "x and y only";
  ir::Tensor x = RandomTensor({4, 32}, -1.0f, 1.0f, 11);
  auto want = testing::RunGraph(std::move(ref), {{"x", x}});
  auto got = testing::RunGraph(std::move(g), {{"x", x}});
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(want.size(), 1u);
  double err = testing::RelL2(got[0], want[0]);
  EXPECT_LT(err, 1e-2) << "fp16 LayerNorm/Erf with fp32 statistics";
}

TEST(AmpO2Rules, LayerNormStaysFp32BelowOpset17AndAtO1) {
  EXPECT_EQ(DecisionsByName(*LnErf(16, 1.0f), O2())["ln"].dtype, F32);
  Policy o1 = O2();
  o1.level = Level::kO1;
  auto d = DecisionsByName(*LnErf(17, 1.0f), o1);
  EXPECT_EQ(d["ln"].dtype, F32);
  EXPECT_EQ(d["erf"].dtype, F32);
}

}  // namespace
}  // namespace amptrain::amp
