// ToTrainingMode and the loss heads on tiny graphs.
#include <gtest/gtest.h>

#include "autodiff/autodiff.h"
#include "autodiff/loss.h"
#include "autodiff/training_graph.h"
#include "tests/autodiff/gradcheck_util.h"

namespace amptrain::autodiff::testing {
namespace {

using ir::Graph;
using ir::OpKind;
using ir::Value;

// x -> BatchNormalization (inference form, 1 output) -> Dropout -> y
struct BnDropout {
  Graph g;
  BnDropout() {
    Value x = g.AddInput("x", ir::TensorType::Of(ir::DType::kFloat32, ir::Shape({ir::Dim::Symbolic("N"), ir::Dim::Static(2)})));
    std::vector<Value> p;
    for (const char* n : {"bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"})
      p.push_back(g.AddInitializer(n, ir::Tensor::Floats({1, 1}, {2})));
    ir::Node* bn = g.AddNode(OpKind::kBatchNormalization, {x, p[0], p[1], p[2], p[3]}, 1, "bn", {"h"});
    ir::Node* d = g.AddNode(OpKind::kDropout, {bn->output(0)}, 1, "drop", {"y"});
    g.AddOutput(d->output(0));
    EXPECT_TRUE(g.InferShapes().ok());
  }
};

TEST(ToTrainingMode, BatchNormGetsRunningStatOutputs) {
  BnDropout m;
  auto info = ToTrainingMode(m.g);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->bn_updates, (std::map<std::string, std::string>{{"bn.running_mean", "bn.running_mean.update"},
                                                                   {"bn.running_var", "bn.running_var.update"}}));
  ASSERT_EQ(m.g.outputs().size(), 3u);
  const ir::Node* bn = m.g.producer(m.g.FindValue("h"));
  EXPECT_EQ(bn->op(), OpKind::kBatchNormalization);
  EXPECT_EQ(bn->name(), "bn");
  EXPECT_EQ(bn->num_outputs(), 3u);
  EXPECT_EQ(bn->attrs().Int("training_mode", 0), 1);
  EXPECT_EQ(m.g.name(m.g.outputs()[1]), "bn.running_mean.update");
  const ir::Node* d = m.g.producer(m.g.FindValue("y"));
  EXPECT_EQ(d->num_outputs(), 2u);
  ASSERT_TRUE(d->has_input(2));
  EXPECT_TRUE(m.g.ConstantValue(d->input(2))->data<bool>()[0]);
  EXPECT_EQ(m.g.type(d->output(1)).dtype, ir::DType::kBool);
}

// PyTorch's BatchNorm with track_running_stats=False exports the batch's own
// statistics as the mean and variance inputs: computed, not state.
TEST(ToTrainingMode, BatchNormWithComputedStatisticsHasNoState) {
  Graph g;
  Value x = g.AddInput("x", ir::TensorType::Of(ir::DType::kFloat32, {4, 2}));
  Value axes = g.AddInitializer("axes", ir::Tensor::Int64s({0}, {1}));
  ir::Node* mean = g.AddNode(OpKind::kReduceMean, {x, axes}, 1, "mean", {"m"});
  mean->attrs().Set("keepdims", int64_t{0});
  ir::Node* sq = g.AddNode(OpKind::kMul, {x, x}, 1, "sq", {"x2"});
  ir::Node* var = g.AddNode(OpKind::kReduceMean, {sq->output(0), axes}, 1, "var", {"v"});
  var->attrs().Set("keepdims", int64_t{0});
  Value w = g.AddInitializer("bn.weight", ir::Tensor::Floats({1, 1}, {2}));
  Value b = g.AddInitializer("bn.bias", ir::Tensor::Floats({0, 0}, {2}));
  ir::Node* bn = g.AddNode(OpKind::kBatchNormalization, {x, w, b, mean->output(0), var->output(0)}, 1, "bn", {"y"});
  g.AddOutput(bn->output(0));
  ASSERT_TRUE(g.InferShapes().ok());
  auto info = ToTrainingMode(g);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_TRUE(info->bn_updates.empty());
  EXPECT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.producer(g.FindValue("y"))->attrs().Int("training_mode", 0), 1);
}

TEST(ToTrainingMode, DropoutOffBypassesDropout) {
  BnDropout m;
  ASSERT_TRUE(ToTrainingMode(m.g, TrainingGraphOptions{false}).ok());
  for (const ir::Node* n : std::as_const(m.g).nodes()) EXPECT_NE(n->op(), OpKind::kDropout);
  EXPECT_EQ(m.g.producer(m.g.outputs()[0])->op(), OpKind::kBatchNormalization);
}

// A recurrent layer gets its reserve output (ir/rnn.h), its outputs keep
// their names and readers, and its backward op reads the reserve instead of
// running the forward again.
TEST(ToTrainingMode, RecurrentLayerKeepsItsStepsForTheBackwardOp) {
  Graph g;
  Value x = g.AddInput("x", ir::TensorType::Of(ir::DType::kFloat32, {5, 3, 2}));  // seq 5, batch 3, input 2
  Value w = g.AddInitializer("w", ir::Tensor::Floats(std::vector<float>(32, 0.1f), {1, 16, 2}));  // 4 gates x hidden 4
  Value r = g.AddInitializer("r", ir::Tensor::Floats(std::vector<float>(64, 0.1f), {1, 16, 4}));
  ir::Node* lstm = g.AddNode(OpKind::kLSTM, {x, w, r}, 2, "lstm", {"y", "yh"});
  g.AddOutput(lstm->output(1));
  Value loss = Op(g, OpKind::kReduceSum, {lstm->output(0)});
  ASSERT_TRUE(g.InferShapes().ok()) << g.InferShapes().ToString();
  ASSERT_TRUE(ToTrainingMode(g).ok());
  const ir::Node* n = g.producer(g.FindValue("y"));
  ASSERT_EQ(n->num_outputs(), 4u);
  EXPECT_EQ(n->name(), "lstm");
  EXPECT_EQ(g.producer(g.FindValue("yh")), n);
  EXPECT_TRUE(g.is_graph_output(n->output(1)));
  EXPECT_EQ(g.producer(loss)->input(0), n->output(0));
  // gates 16 + h 4 + c before and after 8 = 28 per row, 15 rows.
  EXPECT_EQ(g.type(n->output(3)).ToString(), "float32[420]");
  auto back = BuildBackward(g, g.producer(loss)->output(0), g.AddInitializer("one", ir::Tensor::Floats({1.0f}, {})));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  const ir::Node* grad = nullptr;
  for (const ir::Node* k : std::as_const(g).nodes())
    if (k->op() == OpKind::kLSTMGrad) grad = k;
  ASSERT_NE(grad, nullptr);
  ASSERT_EQ(grad->num_inputs(), 12u);
  EXPECT_EQ(grad->input(11), n->output(3));
}

TEST(LossHeads, CrossEntropyAddsLabelsAndTrains) {
  Graph g;
  Value x = g.AddInput("x", ir::TensorType::Of(ir::DType::kFloat32, ir::Shape({ir::Dim::Symbolic("N"), ir::Dim::Static(3)})));
  g.AddInitializer("w", RandomTensor({3, 4}, -1, 1, 7));
  Value logits = Op(g, OpKind::kMatMul, {x, g.AddInitializer("w32", ir::Tensor::Floats(std::vector<float>(12, 0.5f), {3, 4}))});
  ASSERT_TRUE(g.InferShapes().ok());
  auto head = AttachCrossEntropy(g, logits, 0.1f);
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_EQ(head->target_input, "labels");
  Value labels = g.FindValue("labels");
  EXPECT_EQ(g.type(labels).ToString(), "int64[N]");
  EXPECT_EQ(g.type(head->loss).shape.num_elements(), 1);
  Value seed = g.AddInitializer("one", ir::Tensor::Floats({1.0f}, {}));
  auto r = BuildBackward(g, head->loss, seed);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->names, (std::vector<std::string>{"w32"}));  // w is float64 but does not reach the loss

  Graph m;
  Value p = m.AddInput("p", ir::TensorType::Of(ir::DType::kFloat32, {2, 2}));
  auto mse = AttachMeanSquaredError(m, p);
  ASSERT_TRUE(mse.ok()) << mse.status().ToString();
  EXPECT_EQ(mse->target_input, "targets");
  EXPECT_EQ(m.type(m.FindValue("targets")).ToString(), "float32[2,2]");
}

ir::TensorType Logits(std::vector<ir::Dim> dims) { return ir::TensorType::Of(ir::DType::kFloat32, ir::Shape(dims)); }

TEST(LossHeads, ClassAxisFollowsTheLabels) {
  const ir::Dim n = ir::Dim::Symbolic("N"), t = ir::Dim::Symbolic("T");
  auto axis = [](const ir::TensorType& type, std::optional<std::vector<int64_t>> labels,
                 ClassAxis want = ClassAxis::kAuto) {
    CrossEntropyOptions o;
    o.label_dims = std::move(labels);
    o.class_axis = want;
    return ResolveClassAxis(type, "y", o);
  };
  using V = std::vector<int64_t>;
  EXPECT_EQ(*axis(Logits({n, ir::Dim::Static(10)}), V{}), 1);
  // Per token: [N, 16, 1000] against [N, 16] is classes last; a symbolic
  // sequence fits any label length.
  EXPECT_EQ(*axis(Logits({n, ir::Dim::Static(16), ir::Dim::Static(1000)}), V{16}), 2);
  EXPECT_EQ(*axis(Logits({n, t, ir::Dim::Static(1000)}), V{16}), 2);
  // Per pixel: [N, 5, 8, 8] against [N, 8, 8] is classes first.
  EXPECT_EQ(*axis(Logits({n, ir::Dim::Static(5), ir::Dim::Static(8), ir::Dim::Static(8)}), V{8, 8}), 1);
  // Unknown labels: PyTorch's layout.
  EXPECT_EQ(*axis(Logits({n, ir::Dim::Static(5), ir::Dim::Static(8)}), std::nullopt), 1);
  // Both fit ([N, 8, 8] against [N, 8]): the flag decides, else an error saying so.
  const ir::TensorType square = Logits({n, ir::Dim::Static(8), ir::Dim::Static(8)});
  auto both = axis(square, V{8});
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("--class-axis first|last"), std::string::npos) << both.status().ToString();
  EXPECT_EQ(*axis(square, V{8}, ClassAxis::kFirst), 1);
  EXPECT_EQ(*axis(square, V{8}, ClassAxis::kLast), 2);
  // Neither fits, a forced layout that does not fit, per-position labels for [N, C] logits.
  auto neither = axis(Logits({n, ir::Dim::Static(16), ir::Dim::Static(1000)}), V{15});
  ASSERT_FALSE(neither.ok());
  EXPECT_NE(neither.status().message().find("neither as [N, C, d...] nor as [N, d..., C]"), std::string::npos)
      << neither.status().ToString();
  EXPECT_FALSE(axis(Logits({n, ir::Dim::Static(16), ir::Dim::Static(1000)}), V{16}, ClassAxis::kFirst).ok());
  EXPECT_FALSE(axis(Logits({n, ir::Dim::Static(10)}), V{4}).ok());
  EXPECT_FALSE(axis(Logits({n, ir::Dim::Static(16), ir::Dim::Static(1000)}), V{}).ok());
}

TEST(LossHeads, ClassesLastFlattensRowsWithoutACopyOfState) {
  Graph g;
  Value x = g.AddInput("x", Logits({ir::Dim::Symbolic("N"), ir::Dim::Static(6), ir::Dim::Static(4)}));
  Value y = Op(g, OpKind::kRelu, {x});
  ASSERT_TRUE(g.InferShapes().ok());
  CrossEntropyOptions o;
  o.label_dims = std::vector<int64_t>{6};
  o.ignore_index = 255;
  auto head = AttachCrossEntropy(g, y, o);
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_EQ(head->class_axis, 2);
  EXPECT_EQ(g.type(g.FindValue(head->target_input)).ToString(), "int64[N,6]");
  const ir::Node* loss = g.producer(head->loss);
  const ir::TensorType& rows = g.type(loss->input(0));
  ASSERT_EQ(rows.shape.rank(), 2u) << rows.ToString();
  EXPECT_EQ(rows.shape[1].value, 4) << rows.ToString();
  EXPECT_EQ(g.type(loss->input(1)).shape.rank(), 1u);
  EXPECT_EQ(*loss->attrs().GetInt("ignore_index", 0), 255);
  for (const ir::Node* n : g.nodes()) EXPECT_NE(n->op(), OpKind::kInitializer) << n->name();
}

TEST(LossHeads, RejectsNonFloatLogits) {
  Graph g;
  Value x = g.AddInput("x", ir::TensorType::Of(ir::DType::kInt64, {2, 3}));
  EXPECT_FALSE(AttachCrossEntropy(g, x).ok());
}

}  // namespace
}  // namespace amptrain::autodiff::testing
