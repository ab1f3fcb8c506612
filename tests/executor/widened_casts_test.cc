// Cast fusion (executor/plan.h, FuseWidenedCasts): on the training step of a
// small SimpleCNN under each AMP level, a plan with the fusion gives every
// output (loss, logits, gradients, BN statistics) with the bits of a plan
// without it, in fewer Cast steps, with no more bytes live at its peak; the
// loss reads the low logits and its gradient writes low scores' gradients. At
// O1 the BatchNormalizations run low with fp32 statistics (AMP rule 8) and
// they and their gradients read the low Conv outputs, on every CPU. Where
// the CPU computes fp16/bf16 natively (oneDNN's bf16 kernels on
// AVX512_BF16), the low Convs and Gemms are not storage-only and have no
// Casts of their own to fuse.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>

#include "executor/session.h"
#include "executor/train/train_graph.h"
#include "kernels/cpu/cpu_info.h"
#include "kernels/cpu/float_convert.h"
#include "kernels/cpu/onednn_common.h"
#include "trainer_test_util.h"

namespace amptrain::executor {
namespace {

using ir::DType;
using ir::Tensor;

struct Case {
  amp::Level level;
  DType low;
  size_t slice_bytes;  // of the widened kernels: 1 forces slices of the batch
  const char* name;
};

class WidenedCasts : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override { saved_ = kernels::cpu::onednn::WidenedSliceBytes(); }
  void TearDown() override { kernels::cpu::onednn::SetWidenedSliceBytes(saved_); }
  size_t saved_ = 0;
};

// The training graph of the 4-class SmallCnn under `policy`.
StatusOr<train::TrainGraph> FourClassTrainGraph(const ir::Graph& model, const amp::Policy& policy) {
  train::TrainGraphOptions opts;
  opts.num_classes = 4;
  opts.amp = policy;
  return train::BuildTrainGraph(model, opts);
}

// The training step's inputs: the model's initializers (parameters and BN
// statistics), a random batch of 40 (two slices and a tail when sliced),
// labels and a loss scale of 1024.
void StepInputs(const ir::Graph& model, const train::TrainGraph& tg, std::map<std::string, Tensor>& in) {
  for (ir::Value v : model.initializers()) {
    const std::string& name = model.name(v);
    for (ir::Value g : tg.graph->inputs()) {
      if (tg.graph->name(g) != name) continue;
      const Tensor& value = *model.ConstantValue(v);
      const DType want = tg.graph->type(g).dtype;  // O3 stores the weights low
      if (want == value.dtype()) {
        in[name] = value;
        continue;
      }
      auto low = Tensor::Zeros(want, value.dims());
      ASSERT_TRUE(low.ok());
      kernels::cpu::NarrowFromFloat(want, value.data<float>(), low->raw(), value.num_elements(), 1);
      in[name] = std::move(*low);
    }
  }
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  std::vector<float> x(40 * 8 * 8);
  for (float& f : x) f = normal(rng);
  in[tg.data_inputs[0]] = Tensor::Floats(x, {40, 1, 8, 8});
  std::vector<int64_t> labels(40);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>(i % 4);
  in[tg.target_input] = Tensor::Int64s(labels, {40});
  in[tg.loss_scale] = Tensor::Scalar(1024.0f);
}

// BatchNormalization and BatchNormalizationGrad steps that read a 2-byte X.
size_t LowBatchNormReads(const Plan& plan) {
  size_t n = 0;
  for (const Step& s : plan.steps) {
    const ir::OpKind op = s.node->op();
    const size_t x = op == ir::OpKind::kBatchNormalization ? 0 : op == ir::OpKind::kBatchNormalizationGrad ? 1 : 9;
    if (x < s.inputs.size() && s.inputs[x] >= 0 && ir::IsLowPrecision(plan.slots[s.inputs[x]].dtype)) ++n;
  }
  return n;
}

// The loss's low scores read and its gradient's low output written (LowLogits
// in train_graph.cc, then cast fusion): 2 when both Casts of the loss head went.
size_t LowLossSteps(const Plan& plan) {
  size_t n = 0;
  for (const Step& s : plan.steps) {
    const ir::OpKind op = s.node->op();
    if (op == ir::OpKind::kSoftmaxCrossEntropyLoss && s.inputs[0] >= 0)
      n += ir::IsLowPrecision(plan.slots[s.inputs[0]].dtype);
    if (op == ir::OpKind::kSoftmaxCrossEntropyLossGrad) n += ir::IsLowPrecision(plan.slots[s.outputs[0]].dtype);
  }
  return n;
}

size_t CastSteps(const Plan& plan) {
  size_t n = 0;
  for (const Step& s : plan.steps) n += s.node->op() == ir::OpKind::kCast;
  return n;
}

// One training step of `graph` (2 threads, seed 9); the session, for its
// plan, or nullptr after a failure was recorded.
std::unique_ptr<InferenceSession> RunStep(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs,
                                          bool fuse_casts, std::vector<Tensor>* outs) {
  SessionOptions so;
  so.training = true;
  so.threads = 2;
  so.fuse_widened_casts = fuse_casts;
  auto session = InferenceSession::Create(graph.Clone(), so);
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  if (!session.ok()) return nullptr;
  RunOptions run;
  run.seed = 9;
  auto out = (*session)->Run(inputs, run);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return nullptr;
  *outs = std::move(*out);
  return std::move(*session);
}

TEST_P(WidenedCasts, SameBitsInFewerCasts) {
  const Case& c = GetParam();
  kernels::cpu::onednn::SetWidenedSliceBytes(c.slice_bytes);
  std::unique_ptr<ir::Graph> model = train::testing::SmallCnn(4);
  amp::Policy policy;
  policy.level = c.level;
  policy.low = c.low;
  auto tg = FourClassTrainGraph(*model, policy);
  ASSERT_TRUE(tg.ok()) << tg.status().ToString();
  std::map<std::string, Tensor> inputs;
  StepInputs(*model, *tg, inputs);
  if (HasFatalFailure()) return;

  std::vector<Tensor> outs[2];
  size_t casts[2] = {0, 0}, live[2] = {0, 0}, low_bn[2] = {0, 0}, low_loss[2] = {0, 0};
  for (int fused = 0; fused < 2; ++fused) {
    std::unique_ptr<InferenceSession> session = RunStep(*tg->graph, inputs, fused == 1, &outs[fused]);
    if (!session) return;
    casts[fused] = CastSteps(*session->last_plan());
    live[fused] = session->last_plan()->live_bytes;
    low_bn[fused] = LowBatchNormReads(*session->last_plan());
    low_loss[fused] = LowLossSteps(*session->last_plan());
  }
  // The loss reads the low logits and its gradient writes the low scores'
  // gradient, on every CPU: the two fp32 copies of the loss head are gone.
  EXPECT_EQ(low_loss[0], 0u);
  EXPECT_EQ(low_loss[1], 2u) << "the loss head's Casts were not fused";
  const ir::Graph& g = *tg->graph;
  ASSERT_EQ(outs[0].size(), outs[1].size());
  for (size_t i = 0; i < outs[0].size(); ++i) {
    const std::string& name = g.name(g.outputs()[i]);
    ASSERT_EQ(outs[0][i].dtype(), outs[1][i].dtype()) << name;
    ASSERT_EQ(outs[0][i].dims(), outs[1][i].dims()) << name;
    EXPECT_EQ(std::memcmp(outs[0][i].raw(), outs[1][i].raw(), outs[0][i].nbytes()), 0)
        << "output '" << name << "' differs with cast fusion";
  }
  // Widened kernels run the low Convs and Gemms unless oneDNN computes the type natively.
  const bool native = c.low == DType::kBFloat16 && kernels::cpu::Cpu().bf16_faster();
  if (!native) {
    EXPECT_LT(casts[1], casts[0]) << "no Cast was fused";
  }
  // O1 trains each BatchNormalization between a low Conv and a low reader
  // low, with fp32 statistics (AMP rule 8): it and its gradient read the
  // Conv's low output in both plans, with no Cast to fuse.
  if (c.level == amp::Level::kO1) {
    EXPECT_EQ(low_bn[0], 4u) << "the two BatchNormalizations and their gradients should read the low Conv outputs";
    EXPECT_EQ(low_bn[1], 4u);
  }
  // A value fused in fp32 takes twice its bytes: fusion keeps those it would
  // make raise the plan's peak low.
  EXPECT_LE(live[1], live[0]) << "cast fusion raised the most bytes live at one step";
}

INSTANTIATE_TEST_SUITE_P(Levels, WidenedCasts,
                         ::testing::Values(Case{amp::Level::kO1, DType::kBFloat16, size_t{8} << 20, "O1_bf16"},
                                           Case{amp::Level::kO1, DType::kFloat16, 1, "O1_fp16_sliced"},
                                           Case{amp::Level::kO2, DType::kFloat16, size_t{8} << 20, "O2_fp16"},
                                           Case{amp::Level::kO2, DType::kBFloat16, 1, "O2_bf16_sliced"},
                                           Case{amp::Level::kO3, DType::kFloat16, 1, "O3_fp16_sliced"}),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

// O1's rule 7 (amp/plan.cc): Relu and the 2x2 MaxPool between the fp32
// BatchNormalization and the next low Conv run low, since every reader takes
// them low. Their low results are the roundings of the fp32 ones, so the
// forward outputs (loss, logits, BN statistics) keep their bits against a
// policy that keeps them fp32; BatchNormalization then writes its low Y
// itself (the Cast in front of Relu is absorbed) and the step holds fewer
// bytes. Gradients may differ where rounding ties two maxima of a window.
TEST(O1LowReaders, ForwardBitsUnchangedInFewerBytes) {
  for (DType low : {DType::kBFloat16, DType::kFloat16}) {
    SCOPED_TRACE(ir::DTypeName(low));
    std::unique_ptr<ir::Graph> model = train::testing::SmallCnn(4);
    std::vector<Tensor> outs[2];
    size_t live[2] = {0, 0}, low_relus[2] = {0, 0}, casts[2] = {0, 0};
    std::unique_ptr<ir::Graph> graphs[2];
    std::set<std::string> grads;
    for (int rule = 0; rule < 2; ++rule) {
      amp::Policy policy;
      policy.level = amp::Level::kO1;
      policy.low = low;
      if (rule == 0) policy.fp32_ops = {"Relu", "MaxPool", "Flatten"};
      auto tg = FourClassTrainGraph(*model, policy);
      ASSERT_TRUE(tg.ok()) << tg.status().ToString();
      std::map<std::string, Tensor> inputs;
      StepInputs(*model, *tg, inputs);
      if (HasFatalFailure()) return;
      for (const ir::Node* n : tg->graph->nodes())
        if (n->op() == ir::OpKind::kRelu && tg->graph->type(n->output(0)).dtype == low) ++low_relus[rule];
      std::unique_ptr<InferenceSession> session = RunStep(*tg->graph, inputs, true, &outs[rule]);
      if (!session) return;
      live[rule] = session->last_plan()->live_bytes;
      casts[rule] = CastSteps(*session->last_plan());
      graphs[rule] = std::move(tg->graph);
      for (const auto& [param, grad] : tg->grads) grads.insert(grad);
    }
    EXPECT_EQ(low_relus[0], 0u);
    EXPECT_EQ(low_relus[1], 3u) << "the two Relus between BatchNormalization and a low Conv should run low (the classifier's, after a low Gemm, follows it)";
    EXPECT_LE(casts[1], casts[0]);
    EXPECT_LT(live[1], live[0]) << "low Relu/MaxPool outputs should hold fewer bytes";
    const ir::Graph& g = *graphs[1];
    ASSERT_EQ(outs[0].size(), outs[1].size());
    size_t compared = 0;
    for (size_t i = 0; i < outs[0].size(); ++i) {
      const std::string& name = g.name(g.outputs()[i]);
      ASSERT_EQ(name, graphs[0]->name(graphs[0]->outputs()[i]));
      ASSERT_EQ(outs[0][i].dtype(), outs[1][i].dtype()) << name;
      ASSERT_EQ(outs[0][i].dims(), outs[1][i].dims()) << name;
      if (grads.count(name)) continue;  // a rounding tie may route a gradient elsewhere
      ++compared;
      EXPECT_EQ(std::memcmp(outs[0][i].raw(), outs[1][i].raw(), outs[0][i].nbytes()), 0)
          << "forward output '" << name << "' changed when Relu/MaxPool run low";
    }
    EXPECT_GE(compared, 6u) << "loss, logits and the four BN statistics";
  }
}

}  // namespace
}  // namespace amptrain::executor
