// O1's own rule (amp/plan.cc rule 7, docs/PRECISION_CHOICES.md): a follow op
// that commutes with rounding runs low when every reader of it computes low.
#include <gtest/gtest.h>

#include "amp/passes.h"
#include "amp_test_util.h"

namespace amptrain::amp {
namespace {

using ir::DType;
using ir::OpKind;
using testing::Count;
using testing::DecisionsByName;
using testing::ExpectWellFormed;

constexpr DType F32 = DType::kFloat32, F16 = DType::kFloat16, BF16 = DType::kBFloat16;

Policy O1(DType low = F16) { return testing::AtLevel(Level::kO1, low); }

struct Block {
  std::vector<int64_t> pool_kernel = {2, 2}, pool_strides = {2, 2};
  bool relu_to_softmax = false;  // a second, fp32 (denylist) reader of the Relu
  bool bn_training = false;      // training mode: the running mean and variance are graph outputs too
  bool pool_indices = false;     // the pool's Indices output is a graph output (return_indices=True)
  int64_t opset = 17;
};

// x[2,3,8,8] -> conv -> bn -> relu -> pool -> conv2 -> y (and relu -> sm -> z)
std::unique_ptr<ir::Graph> ConvBlock(const Block& b) {
  auto g = std::make_unique<ir::Graph>();
  g->info().opset = b.opset;
  ir::Value x = g->AddInput("x", ir::TensorType::Of(F32, {2, 3, 8, 8}));
  ir::Node* conv = g->AddNode(OpKind::kConv, {x, testing::Weight(*g, "W", {4, 3, 3, 3}, 1)}, 1, "conv");
  conv->attrs().Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  ir::Node* bn = testing::UnitBatchNorm(*g, conv->output(0), "bn", b.bn_training ? 3 : 1);
  if (b.bn_training) {
    bn->attrs().Set("training_mode", int64_t{1});
    g->AddOutput(bn->output(1));
    g->AddOutput(bn->output(2));
  }
  ir::Node* relu = g->AddNode(OpKind::kRelu, {bn->output(0)}, 1, "relu");
  ir::Node* pool = g->AddNode(OpKind::kMaxPool, {relu->output(0)}, b.pool_indices ? 2 : 1, "pool");
  pool->attrs().Set("kernel_shape", b.pool_kernel);
  pool->attrs().Set("strides", b.pool_strides);
  if (b.pool_indices) g->AddOutput(pool->output(1));
  ir::Node* conv2 = g->AddNode(OpKind::kConv, {pool->output(0), testing::Weight(*g, "W2", {4, 4, 1, 1}, 2)}, 1,
                               "conv2", {"y"});
  g->AddOutput(conv2->output(0));
  if (b.relu_to_softmax) g->AddOutput(g->AddNode(OpKind::kSoftmax, {relu->output(0)}, 1, "sm", {"z"})->output(0));
  EXPECT_TRUE(g->InferShapes().ok());
  return g;
}

// A follow op promotes to fp32 on a float initializer of rank >= 1, as an
// fp32 nn.Parameter does in PyTorch's autocast: ConvNeXt's layer scale
// (x * gamma, gamma = 1e-6: subnormal in fp16). A rank-0 constant does not
// promote (PyTorch's wrapped scalars), and neither does the bias of a Linear
// split into MatMul + Add (PyTorch adds it inside the low linear).
TEST(AmpO1Rules, DimensionedWeightsPromoteScalarsAndSplitBiasesDoNot) {
  auto g = std::make_unique<ir::Graph>();
  g->info().opset = 17;
  ir::Value x = g->AddInput("x", ir::TensorType::Of(F32, {2, 3, 4}));
  ir::Node* mm = g->AddNode(OpKind::kMatMul, {x, testing::Weight(*g, "W", {4, 4}, 1)}, 1, "fc");
  ir::Node* bias = g->AddNode(OpKind::kAdd, {mm->output(0), testing::Weight(*g, "b", {4}, 2)}, 1, "fc_bias");
  ir::Node* half = g->AddNode(OpKind::kMul, {bias->output(0), g->AddInitializer("half", ir::Tensor::Scalar(0.5f))}, 1,
                              "times_half");
  ir::Node* fc2 = g->AddNode(OpKind::kMatMul, {half->output(0), testing::Weight(*g, "W2", {4, 4}, 3)}, 1, "fc2");
  ir::Node* scale =
      g->AddNode(OpKind::kMul, {fc2->output(0), testing::Weight(*g, "gamma", {4}, 4)}, 1, "layer_scale", {"y"});
  g->AddOutput(scale->output(0));
  ASSERT_TRUE(g->InferShapes().ok());
  auto d = DecisionsByName(*g, O1());
  EXPECT_EQ(d["fc"].dtype, F16);
  EXPECT_EQ(d["fc_bias"].dtype, F16) << "the split Linear's bias";
  EXPECT_EQ(d["times_half"].dtype, F16) << "a rank-0 constant does not promote";
  EXPECT_EQ(d["layer_scale"].dtype, F32) << "gamma [4] promotes";
  EXPECT_EQ(d["layer_scale"].reason, Reason::kFollow);
  // O2 runs follow ops low whatever their inputs.
  EXPECT_EQ(DecisionsByName(*g, testing::AtLevel(Level::kO2, F16))["layer_scale"].dtype, F16);
  ASSERT_TRUE(Convert(*g, O1()).ok());
  ExpectWellFormed(*g);
}

TEST(AmpO1Rules, ReluAndPoolBeforeALowConvRunLow) {
  auto g = ConvBlock({});
  auto d = DecisionsByName(*g, O1());
  EXPECT_EQ(d["bn"].dtype, F32);
  for (const char* n : {"relu", "pool"}) {
    EXPECT_EQ(d[n].dtype, F16) << n;
    EXPECT_EQ(d[n].reason, Reason::kLowReaders) << n;
  }
  // casts (fp16 graph input and output): W, conv->bn, bn->relu, W2; as many
  // as with Relu and MaxPool fp32 (pool->conv2 instead of bn->relu).
  ASSERT_TRUE(Convert(*g, O1()).ok());
  EXPECT_EQ(Count(*g, OpKind::kCast), 4);
  ExpectWellFormed(*g);
}

TEST(AmpO1Rules, OverlappingPoolStaysFp32AndSoDoesItsRelu) {
  // A 3x3 window at stride 2 shares inputs: its gradient adds them up.
  Block b;
  b.pool_kernel = {3, 3};
  auto g = ConvBlock(b);
  auto d = DecisionsByName(*g, O1());
  EXPECT_EQ(d["pool"].dtype, F32);
  EXPECT_EQ(d["pool"].reason, Reason::kFollow);
  EXPECT_EQ(d["relu"].dtype, F32) << "its reader, the pool, is fp32";
}

TEST(AmpO1Rules, PoolWithIndicesStaysFp32) {
  // Two values that round to the same fp16 tie: the index of the maximum
  // (MaxUnpool's input) may differ from the fp32 one.
  Block b;
  b.pool_indices = true;
  auto g = ConvBlock(b);
  auto d = DecisionsByName(*g, O1());
  EXPECT_EQ(d["pool"].dtype, F32);
  EXPECT_EQ(d["pool"].reason, Reason::kFollow);
  ASSERT_TRUE(Convert(*g, O1()).ok());
  ExpectWellFormed(*g);
}

TEST(AmpO1Rules, AnFp32ReaderKeepsTheChainFp32) {
  Block b;
  b.relu_to_softmax = true;
  auto g = ConvBlock(b);
  auto d = DecisionsByName(*g, O1());
  EXPECT_EQ(d["relu"].dtype, F32) << "Softmax reads it in fp32";
  EXPECT_EQ(d["pool"].dtype, F16) << "the pool's only reader is the fp16 conv2";
}

TEST(AmpO1Rules, UserListsAndCapabilityWin) {
  auto g = ConvBlock({});
  Policy p = O1();
  p.fp32_ops = {"Relu"};
  auto d = DecisionsByName(*g, p);
  EXPECT_EQ(d["relu"].reason, Reason::kCustomDeny);
  EXPECT_EQ(d["pool"].dtype, F16);
  // bf16 for an opset-17 export: no bf16 Conv or MaxPool in ONNX there, so
  // nothing reads low and nothing moves.
  auto d17 = DecisionsByName(*g, O1(BF16));
  EXPECT_EQ(d17["pool"].dtype, F32);
  EXPECT_EQ(d17["relu"].dtype, F32);
  // The same model trained on a CPU (kernel capability): bf16 throughout.
  auto dk = DecisionsByName(*g, O1(BF16), Capability::Training(nullptr));
  EXPECT_EQ(dk["relu"].dtype, BF16);
  EXPECT_EQ(dk["pool"].dtype, BF16);
}

// Rule 8 for training: a training-mode BatchNormalization between a low
// Conv and a Relu that runs low (rule 7) takes and gives the low type with
// its statistics fp32, as the Cast pair around an fp32 BN would (its kernels
// widen X and dY exactly, compute in fp32 and round Y and dX once: the
// gradients of ResNet-18 at O1 were bitwise those of the Cast pair, fp16 and
// bf16). An export to ONNX Runtime keeps it fp32 with its Casts.
TEST(AmpO1Rules, TrainingBatchNormBetweenLowOpsRunsLowWithFp32Statistics) {
  for (DType low : {F16, BF16}) {
    Block b;
    b.bn_training = true;
    auto g = ConvBlock(b);
    ir::Node* bn = nullptr;
    for (ir::Node* n : g->nodes())
      if (n->op() == OpKind::kBatchNormalization) bn = n;
    ASSERT_NE(bn, nullptr);
    const Capability training = Capability::Training(nullptr);
    auto d = DecisionsByName(*g, O1(low), training);
    EXPECT_EQ(d["bn"].dtype, low);
    EXPECT_EQ(d["bn"].reason, Reason::kFp32Inside);
    EXPECT_EQ(d["relu"].dtype, low);
    EXPECT_EQ(DecisionsByName(*g, O1(low))["bn"].dtype, F32) << "export: ONNX Runtime's BN is not fp32 inside";
    ConvertOptions options;
    options.capability = training;
    options.convert_initializers = false;
    ASSERT_TRUE(Convert(*g, O1(low), options).ok());
    EXPECT_EQ(g->type(bn->input(0)).dtype, low) << "conv -> bn without a Cast";
    EXPECT_EQ(g->type(bn->output(0)).dtype, low);
    for (size_t k = 1; k < 5; ++k) EXPECT_EQ(g->type(bn->input(k)).dtype, F32) << "parameter " << k;
    for (size_t k = 1; k < 3; ++k) EXPECT_EQ(g->type(bn->output(k)).dtype, F32) << "statistic " << k;
    ExpectWellFormed(*g);
  }
}

TEST(AmpO1Rules, NothingMovesAtO0OrO2) {
  auto g = ConvBlock({});
  Policy o2 = O1();
  o2.level = Level::kO2;
  for (const auto& [name, dec] : DecisionsByName(*g, o2)) EXPECT_NE(dec.reason, Reason::kLowReaders) << name;
}

}  // namespace
}  // namespace amptrain::amp
