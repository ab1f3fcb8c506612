// The plan's layout step (executor/plan.h, AssignChannelsLast): in an
// inference ResNet, the activations between the oneDNN convolutions are
// stored channels-last, and every output keeps the bits of the plain plan.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <string>

#include "amp/passes.h"
#include "executor/session.h"
#include "executor/train/train_graph.h"
#include "kernels/cpu/cpu_info.h"
#include "models/builders.h"
#include "tests/executor/trainer_test_util.h"

namespace amptrain::executor {
namespace {

using ir::Tensor;

Tensor Uniform(std::mt19937& rng, float lo, float hi, std::vector<int64_t> dims) {
  std::uniform_real_distribution<float> u(lo, hi);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = u(rng);
  return Tensor::Floats(v, std::move(dims));
}

// Runs `g` on `inputs` with the layout step off, then on; the outputs of
// each, and the channels-last slots of the second plan (given to `inspect`).
struct BothRuns {
  std::vector<Tensor> outs[2];
  size_t channels_last = 0;
};
BothRuns RunBoth(const ir::Graph& g, const std::map<std::string, Tensor>& inputs,
                 const std::function<void(const Plan&)>& inspect = nullptr, bool winograd = true) {
  BothRuns r;
  for (int layout = 0; layout < 2; ++layout) {
    SessionOptions so;
    so.threads = 2;
    so.channels_last = layout == 1;
    so.winograd = winograd;
    auto session = InferenceSession::Create(g.Clone(), so);
    EXPECT_TRUE(session.ok()) << session.status().ToString();
    if (!session.ok()) return r;
    auto out = (*session)->Run(inputs);
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    if (!out.ok()) return r;
    r.outs[layout] = std::move(*out);
    if (layout == 0) continue;
    for (const Slot& s : (*session)->last_plan()->slots) r.channels_last += s.channels_last;
    if (inspect) inspect(*(*session)->last_plan());
  }
  return r;
}

void ExpectSameBits(const BothRuns& r) {
  ASSERT_EQ(r.outs[0].size(), r.outs[1].size());
  for (size_t i = 0; i < r.outs[0].size(); ++i) {
    ASSERT_EQ(r.outs[0][i].nbytes(), r.outs[1][i].nbytes());
    EXPECT_EQ(std::memcmp(r.outs[0][i].raw(), r.outs[1][i].raw(), r.outs[0][i].nbytes()), 0)
        << "output " << i << " changed with channels-last activations";
  }
}

// ResNet-18, 10 classes, 32x32 inputs.
StatusOr<std::unique_ptr<ir::Graph>> ResNet18(uint64_t seed, bool training) {
  models::ResNetConfig c;
  c.depth = 18;
  c.num_classes = 10;
  c.height = c.width = 32;
  c.seed = seed;
  c.training_mode = training;
  AMP_ASSIGN_OR_RETURN(auto model, models::BuildResNet(c));
  AMP_RETURN_IF_ERROR(model->InferShapes());
  return model;
}

// Direct convolutions (winograd off): the residual written over Y in place
// below is theirs; Winograd computes a blocked Y and reorders it (checked for
// the same bits at the end).
TEST(ChannelsLast, ResNetBetweenConvolutionsSameBits) {
  auto model = ResNet18(4, /*training=*/false);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::vector<float> x(3 * 3 * 32 * 32);
  for (float& f : x) f = normal(rng);
  const std::string input = (*model)->name((*model)->inputs()[0]);
  std::map<std::string, Tensor> inputs = {{input, Tensor::Floats(x, {3, 3, 32, 32})}};

  size_t convs = 0, residuals = 0, residuals_in_place = 0;
  BothRuns r = RunBoth(**model, inputs, [&](const Plan& plan) {
    for (const Step& s : plan.steps) {
      const ir::OpKind op = s.node->op();
      if (s.impl != "onednn" || (op != ir::OpKind::kConv && op != ir::OpKind::kFusedConv)) continue;
      const Slot& y = plan.slots[static_cast<size_t>(s.outputs[0])];
      if (s.inputs.size() > 3 && s.inputs[3] >= 0 && s.kernel->inplace_input(0) == 3) {
        // The block's residual Z dies at its FusedConv, which computes Y in Y's own buffer (oneDNN
        // takes nhwc as it is; under an AVX2 cap it picks a blocked dst instead): Y is written over
        // Z, and the sum post-op needs no copy.
        ++residuals;
        residuals_in_place += plan.slots[static_cast<size_t>(s.inputs[3])].buffer == y.buffer;
      }
      if (y.dims[2] * y.dims[3] == 1) continue;  // layer4 at 32x32: 1x1 planes read the same either way
      ++convs;
      // BN folds into the convolutions, whose outputs are read by
      // convolutions, the stem's MaxPool or the head's GlobalAveragePool,
      // which all take channels-last.
      EXPECT_TRUE(y.channels_last) << s.node->name() << "'s output is plain";
    }
  }, /*winograd=*/false);
  EXPECT_GE(r.channels_last, convs);
  std::cout << "[ " << residuals << " of ResNet-18's 8 residuals can alias Y ]\n";
  if (kernels::cpu::Cpu().onednn_bf16()) {  // oneDNN at avx512_core or above
    EXPECT_EQ(residuals, 8u);
  }
  EXPECT_EQ(residuals_in_place, residuals);
  ExpectSameBits(r);
  // Winograd where oneDNN has it (AVX-512): the same bits in either layout,
  // and other bits than the direct convolutions' (SessionOptions::winograd
  // reaches the kernels); elsewhere the direct convolutions' bits.
  const BothRuns wino = RunBoth(**model, inputs);
  ExpectSameBits(wino);
  ASSERT_EQ(wino.outs[1].size(), r.outs[1].size());
  ASSERT_FALSE(r.outs[1].empty());
  const bool changed = std::memcmp(wino.outs[1][0].raw(), r.outs[1][0].raw(), r.outs[1][0].nbytes()) != 0;
  EXPECT_EQ(changed, kernels::cpu::Cpu().onednn_isa.rfind("avx512", 0) == 0) << kernels::cpu::Cpu().onednn_isa;
}

// x -> Conv c1 -> Relu r; y = Relu(Conv c2(r) + r), a graph output. After
// the inference optimizations c2 is a FusedConv whose residual Z (r) is
// channels-last while its Y, a graph output, is plain: Z must land in the
// layout oneDNN computes Y in.
TEST(ChannelsLast, ResidualIntoAPlainGraphOutputSameBits) {
  std::mt19937 rng(5);
  auto random = [&](std::vector<int64_t> dims) { return Uniform(rng, -0.5f, 0.5f, std::move(dims)); };
  ir::Graph g;
  ir::Value x = g.AddInput("x", ir::TensorType::Of(ir::DType::kFloat32, {2, 8, 6, 6}));
  ir::Node* c1 = g.AddNode(ir::OpKind::kConv, {x, g.AddInitializer("w1", random({16, 8, 3, 3}))}, 1, "c1");
  c1->attrs().Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  ir::Value r = g.AddNode(ir::OpKind::kRelu, {c1->output(0)}, 1, "r")->output(0);
  ir::Node* c2 = g.AddNode(ir::OpKind::kConv, {r, g.AddInitializer("w2", random({16, 16, 1, 1}))}, 1, "c2");
  ir::Value a = g.AddNode(ir::OpKind::kAdd, {c2->output(0), r}, 1, "add")->output(0);
  g.AddOutput(g.AddNode(ir::OpKind::kRelu, {a}, 1, "y")->output(0));
  ASSERT_TRUE(g.InferShapes().ok());
  BothRuns both = RunBoth(g, {{"x", random({2, 8, 6, 6})}});
  EXPECT_EQ(both.channels_last, 1u) << "r, between c1 and the FusedConv c2";
  ExpectSameBits(both);
}

// x -> Conv c1 (3x3) -> Conv c2 (1x1, strides 2x3, no padding) -> y on
// odd planes (7x9 -> 4x3): with X channels-last, c2 gathers every
// stride-th pixel and runs a stride-1 convolution; the plain plan runs
// oneDNN's strided one. Same bits.
TEST(ChannelsLast, StridedPointwiseConvGathersSameBits) {
  std::mt19937 rng(6);
  auto random = [&](std::vector<int64_t> dims) { return Uniform(rng, -0.5f, 0.5f, std::move(dims)); };
  ir::Graph g;
  ir::Value x = g.AddInput("x", ir::TensorType::Of(ir::DType::kFloat32, {3, 8, 7, 9}));
  ir::Node* c1 = g.AddNode(ir::OpKind::kConv, {x, g.AddInitializer("w1", random({16, 8, 3, 3}))}, 1, "c1");
  c1->attrs().Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  ir::Node* c2 = g.AddNode(ir::OpKind::kConv, {c1->output(0), g.AddInitializer("w2", random({24, 16, 1, 1})),
                                               g.AddInitializer("b2", random({24}))}, 1, "c2");
  c2->attrs().Set("strides", std::vector<int64_t>{2, 3});
  g.AddOutput(c2->output(0));
  ASSERT_TRUE(g.InferShapes().ok());
  EXPECT_EQ(g.type(c2->output(0)).shape.ToString(), "[3,24,4,3]");
  BothRuns both = RunBoth(g, {{"x", random({3, 8, 7, 9})}});
  EXPECT_EQ(both.channels_last, 1u) << "c1's output";
  ExpectSameBits(both);
}

// Conv -> MaxPool (3x3, stride 2, pad 1: overlapping windows, padding) ->
// Conv -> AveragePool (3x3, stride 1, pad 1, count_include_pad) -> Conv ->
// GlobalAveragePool -> y: the pools run on channels-last values (the direct
// pool kernels, KernelEntry::channels_last_together) with the plain plan's bits.
class ChannelsLastPools : public ::testing::TestWithParam<ir::DType> {};

// In fp32, and in bf16 (the graph converted to O3 bf16 for a CPU's
// kernels): where oneDNN runs the bf16 convolutions natively they take
// channels-last too; its storage-only twin keeps plain buffers.
TEST_P(ChannelsLastPools, BetweenConvolutionsSameBits) {
  std::mt19937 rng(8);
  auto random = [&](std::vector<int64_t> dims) { return Uniform(rng, -1.0f, 1.0f, std::move(dims)); };
  ir::Graph g;
  ir::Value x = g.AddInput("x", ir::TensorType::Of(ir::DType::kFloat32, {2, 3, 11, 11}));
  auto conv = [&](ir::Value in, int64_t cin, int64_t cout, const char* name) {
    ir::Node* c = g.AddNode(ir::OpKind::kConv, {in, g.AddInitializer(std::string(name) + ".w", random({cout, cin, 3, 3}))},
                            1, name);
    c->attrs().Set("pads", std::vector<int64_t>{1, 1, 1, 1});
    return c->output(0);
  };
  auto pool = [&](ir::OpKind op, ir::Value in, int64_t stride, const char* name) {
    ir::Node* p = g.AddNode(op, {in}, 1, name);
    p->attrs().Set("kernel_shape", std::vector<int64_t>{3, 3});
    p->attrs().Set("strides", std::vector<int64_t>{stride, stride});
    p->attrs().Set("pads", std::vector<int64_t>{1, 1, 1, 1});
    if (op == ir::OpKind::kAveragePool) p->attrs().Set("count_include_pad", int64_t{1});
    return p->output(0);
  };
  ir::Value a = pool(ir::OpKind::kMaxPool, conv(x, 3, 16, "c1"), 2, "max");
  ir::Value b = pool(ir::OpKind::kAveragePool, conv(a, 16, 16, "c2"), 1, "avg");
  g.AddOutput(g.AddNode(ir::OpKind::kGlobalAveragePool, {conv(b, 16, 32, "c3")}, 1, "gap", {"y"})->output(0));
  ASSERT_TRUE(g.InferShapes().ok());
  if (GetParam() != ir::DType::kFloat32) {
    amp::Policy p;
    p.level = amp::Level::kO3;
    p.low = GetParam();
    amp::ConvertOptions co;
    co.capability = amp::Capability::Training(nullptr);  // every op low, whatever the opset
    auto report = amp::Convert(g, p, co);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
  }
  bool native = true;
  BothRuns r = RunBoth(g, {{"x", random({2, 3, 11, 11})}}, [&](const Plan& plan) {
    for (const Step& s : plan.steps)
      if (s.node->op() == ir::OpKind::kConv) native = native && s.impl == "onednn";
  });
  std::cout << "[ " << ir::DTypeName(GetParam()) << ": " << r.channels_last << " channels-last values, "
            << (native ? "native" : "storage-only") << " convolutions ]\n";
  if (native) {
    EXPECT_EQ(r.channels_last, 5u) << "every value from c1's output to c3's";
  }
  ExpectSameBits(r);
}

// O1 bf16 with Relu kept fp32: c1 (bf16) -> Cast -> Relu (fp32) -> Cast ->
// c2 (bf16) -> GlobalAveragePool. The Casts are flat conversions, so the
// values on both sides of each stay channels-last (before, every Cast put its
// neighbours plain and each convolution reordered its activations), and the
// output keeps the plain plan's bits. Native bf16 convolutions only: the
// storage-only twin keeps plain buffers.
TEST(ChannelsLast, CastsBetweenConvolutionsKeepTheLayoutSameBits) {
  std::mt19937 rng(9);
  auto random = [&](std::vector<int64_t> dims) { return Uniform(rng, -1.0f, 1.0f, std::move(dims)); };
  ir::Graph g;
  ir::Value x = g.AddInput("x", ir::TensorType::Of(ir::DType::kFloat32, {2, 16, 9, 9}));
  auto conv = [&](ir::Value in, const char* name) {
    ir::Node* c = g.AddNode(ir::OpKind::kConv, {in, g.AddInitializer(std::string(name) + ".w", random({16, 16, 3, 3}))},
                            1, name);
    c->attrs().Set("pads", std::vector<int64_t>{1, 1, 1, 1});
    return c->output(0);
  };
  ir::Value r = g.AddNode(ir::OpKind::kRelu, {conv(x, "c1")}, 1, "relu")->output(0);
  g.AddOutput(g.AddNode(ir::OpKind::kGlobalAveragePool, {conv(r, "c2")}, 1, "gap", {"y"})->output(0));
  ASSERT_TRUE(g.InferShapes().ok());
  amp::Policy p;
  p.level = amp::Level::kO1;
  p.low = ir::DType::kBFloat16;
  p.fp32_ops = {"Relu"};
  amp::ConvertOptions co;
  co.capability = amp::Capability::Training(nullptr);
  auto report = amp::Convert(g, p, co);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  bool native = true;
  int casts_last = 0;
  BothRuns run = RunBoth(g, {{"x", random({2, 16, 9, 9})}}, [&](const Plan& plan) {
    for (const Step& s : plan.steps) {
      if (s.node->op() == ir::OpKind::kConv) native = native && s.impl == "onednn";
      if (s.node->op() == ir::OpKind::kCast && s.inputs[0] >= 0 && s.outputs[0] >= 0)
        casts_last += plan.slots[static_cast<size_t>(s.inputs[0])].channels_last &&
                      plan.slots[static_cast<size_t>(s.outputs[0])].channels_last;
    }
  });
  std::cout << "[ " << run.channels_last << " channels-last values, " << casts_last << " Casts channels-last in and out, "
            << (native ? "native" : "storage-only") << " bf16 convolutions ]\n";
  if (native) {
    EXPECT_EQ(casts_last, 2) << "the Casts on both sides of the fp32 Relu";
    EXPECT_EQ(run.channels_last, 5u) << "c1's output, the Casts' and Relu's, c2's";
  }
  ExpectSameBits(run);
}

// A ResNet-18 training step (32x32, batch 4; forward, loss, backward: the
// BatchNormalizations, their gradients, Relu/ReluGrad, the residual Adds,
// the stem's MaxPool and its gradient, the convolutions and their
// gradients): with the layout step, the activations and their gradients stay
// channels-last from the stem to the head, and the loss, every gradient and
// every BN statistic keep the plain plan's values. oneDNN's nhwc backward
// convolutions sum in their own order, so gradients are compared by
// normalized error against the plain plan, with fp32's rounding as the scale;
// the forward's BN statistics and loss bitwise.
TEST(ChannelsLast, ResNetTrainingStep) {
  auto model = ResNet18(7, /*training=*/true);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  train::TrainGraphOptions opts;
  opts.num_classes = 10;
  auto tg = train::BuildTrainGraph(**model, opts);
  ASSERT_TRUE(tg.ok()) << tg.status().ToString();
  std::map<std::string, Tensor> inputs;
  for (ir::Value v : (*model)->initializers())
    for (ir::Value g : tg->graph->inputs())
      if (tg->graph->name(g) == (*model)->name(v)) inputs[(*model)->name(v)] = *(*model)->ConstantValue(v);
  std::mt19937 rng(12);
  inputs[tg->data_inputs[0]] = Uniform(rng, -1.0f, 1.0f, {4, 3, 32, 32});
  inputs[tg->target_input] = Tensor::Int64s({1, 7, 3, 0}, {4});
  inputs[tg->loss_scale] = Tensor::Scalar(1.0f);

  std::vector<Tensor> outs[2];
  size_t channels_last = 0;
  for (int layout = 0; layout < 2; ++layout) {
    SessionOptions so;
    so.training = true;
    so.threads = 2;
    so.channels_last = layout == 1;
    auto session = InferenceSession::Create(tg->graph->Clone(), so);
    ASSERT_TRUE(session.ok()) << session.status().ToString();
    auto out = (*session)->Run(inputs);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    outs[layout] = std::move(*out);
    if (layout == 1)
      for (const Slot& s : (*session)->last_plan()->slots) channels_last += s.channels_last;
  }
  std::cout << "[ " << channels_last << " channels-last values in the training step ]\n";
  EXPECT_GE(channels_last, 80u) << "activations and gradients between the stem and the head";
  const ir::Graph& g = *tg->graph;
  for (size_t i = 0; i < outs[0].size(); ++i) {
    const std::string& name = g.name(g.outputs()[i]);
    const bool forward = name == tg->loss || tg->stat_updates.count(name.substr(0, name.size() - 7)) ||
                         name.find(".update") != std::string::npos;
    if (forward) {
      EXPECT_TRUE(outs[0][i] == outs[1][i]) << name << " changed with channels-last activations";
      continue;
    }
    double diff = 0, scale = 0;
    for (int64_t k = 0; k < outs[0][i].num_elements(); ++k) {
      diff = std::max(diff, std::fabs(outs[1][i].GetAsDouble(k) - outs[0][i].GetAsDouble(k)));
      scale = std::max(scale, std::fabs(outs[0][i].GetAsDouble(k)));
    }
    // fp32 sums of a few thousand products in another order: well inside 1e-4 of the tensor's scale.
    EXPECT_LE(diff, 1e-4 * std::max(scale, 1e-30)) << name;
  }
}

// ReluAfterMaxPool (executor/train/train_graph.cc): SimpleCNN's Relu ->
// MaxPool blocks run as MaxPool -> Relu in the training graph, and a training
// step gives the same loss, gradients and BN statistics, bit for bit, as the
// graph without the rewrite (max and ReLU commute; the gradients take the
// same elements), with and without channels-last activations.
TEST(TrainGraph, ReluAfterMaxPoolKeepsEveryValue) {
  const std::unique_ptr<ir::Graph> model = train::testing::SmallCnn(10);  // 1x8x8
  train::TrainGraph tgs[2];
  for (int swap = 0; swap < 2; ++swap) {
    train::TrainGraphOptions opts;
    opts.num_classes = 10;
    opts.relu_after_max_pool = swap == 1;
    auto tg = train::BuildTrainGraph(*model, opts);
    ASSERT_TRUE(tg.ok()) << tg.status().ToString();
    tgs[swap] = std::move(*tg);
  }
  // The rewrite happened: each MaxPool reads a BatchNormalization's output.
  int pools = 0, moved = 0;
  for (const ir::Node* n : tgs[1].graph->nodes()) {
    if (n->op() != ir::OpKind::kMaxPool) continue;
    ++pools;
    moved += tgs[1].graph->producer(n->input(0))->op() == ir::OpKind::kBatchNormalization;
  }
  EXPECT_EQ(pools, 2);
  EXPECT_EQ(moved, 2);
  std::map<std::string, Tensor> inputs;
  for (ir::Value v : model->initializers())
    for (ir::Value g : tgs[0].graph->inputs())
      if (tgs[0].graph->name(g) == model->name(v)) inputs[model->name(v)] = *model->ConstantValue(v);
  std::mt19937 rng(5);
  inputs[tgs[0].data_inputs[0]] = Uniform(rng, -1.0f, 1.0f, {4, 1, 8, 8});
  inputs[tgs[0].target_input] = Tensor::Int64s({1, 7, 3, 0}, {4});
  inputs[tgs[0].loss_scale] = Tensor::Scalar(1.0f);
  for (bool channels_last : {false, true}) {
    std::map<std::string, Tensor> outs[2];
    for (int swap = 0; swap < 2; ++swap) {
      SessionOptions so;
      so.training = true;
      so.threads = 2;
      so.channels_last = channels_last;
      auto session = InferenceSession::Create(tgs[swap].graph->Clone(), so);
      ASSERT_TRUE(session.ok()) << session.status().ToString();
      auto out = (*session)->Run(inputs);
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      const ir::Graph& g = *tgs[swap].graph;
      for (size_t i = 0; i < out->size(); ++i) outs[swap][g.name(g.outputs()[i])] = (*out)[i];
    }
    ASSERT_EQ(outs[0].size(), outs[1].size());
    for (const auto& [name, t] : outs[0]) {
      ASSERT_TRUE(outs[1].count(name)) << name;
      EXPECT_TRUE(outs[1].at(name) == t) << name << (channels_last ? " (channels-last)" : "") << " changed";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(DTypes, ChannelsLastPools, ::testing::Values(ir::DType::kFloat32, ir::DType::kBFloat16),
                         [](const ::testing::TestParamInfo<ir::DType>& i) { return std::string(ir::DTypeName(i.param)); });

}  // namespace
}  // namespace amptrain::executor
