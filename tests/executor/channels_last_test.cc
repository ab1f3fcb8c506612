// The plan's layout step (executor/plan.h, AssignChannelsLast): in an
// inference ResNet, the activations between the oneDNN convolutions are
// stored channels-last, and every output keeps the bits of the plain plan.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <string>

#include "executor/session.h"
#include "models/builders.h"

namespace amptrain::executor {
namespace {

using ir::Tensor;

TEST(ChannelsLast, ResNetBetweenConvolutionsSameBits) {
  models::ResNetConfig c;
  c.depth = 18;
  c.num_classes = 10;
  c.height = c.width = 32;
  c.seed = 4;
  auto model = models::BuildResNet(c);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  ASSERT_TRUE((*model)->InferShapes().ok());
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::vector<float> x(3 * 3 * 32 * 32);
  for (float& f : x) f = normal(rng);
  const std::string input = (*model)->name((*model)->inputs()[0]);
  std::map<std::string, Tensor> inputs = {{input, Tensor::Floats(x, {3, 3, 32, 32})}};

  std::vector<Tensor> outs[2];
  size_t channels_last[2] = {0, 0}, convs = 0;
  for (int layout = 0; layout < 2; ++layout) {
    SessionOptions so;
    so.threads = 2;
    so.channels_last = layout == 1;
    auto session = InferenceSession::Create((*model)->Clone(), so);
    ASSERT_TRUE(session.ok()) << session.status().ToString();
    auto out = (*session)->Run(inputs);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    outs[layout] = std::move(*out);
    const Plan& plan = *(*session)->last_plan();
    for (const Slot& s : plan.slots) channels_last[layout] += s.channels_last;
    if (layout == 1)
      for (const Step& s : plan.steps) convs += s.impl == "onednn";
  }
  EXPECT_EQ(channels_last[0], 0u);
  // Where oneDNN runs the convolutions, the values between them (all but the
  // stem's output, read by the plain MaxPool, and the last, read by the pool
  // of the head) are channels-last.
  if (convs > 0) EXPECT_GE(channels_last[1], convs / 2) << convs << " oneDNN convolutions";
  ASSERT_EQ(outs[0].size(), outs[1].size());
  for (size_t i = 0; i < outs[0].size(); ++i) {
    ASSERT_EQ(outs[0][i].nbytes(), outs[1][i].nbytes());
    EXPECT_EQ(std::memcmp(outs[0][i].raw(), outs[1][i].raw(), outs[0][i].nbytes()), 0)
        << "output " << i << " changed with channels-last activations";
  }
}

// x -> Conv c1 -> Relu r; y = Relu(Conv c2(r) + r), a graph output. After
// the inference optimizations c2 is a FusedConv whose residual Z (r) is
// channels-last while its Y, a graph output, is plain: Z must land in the
// layout oneDNN computes Y in.
TEST(ChannelsLast, ResidualIntoAPlainGraphOutputSameBits) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  auto random = [&](std::vector<int64_t> dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& f : v) f = u(rng);
    return Tensor::Floats(v, std::move(dims));
  };
  ir::Graph g;
  ir::Value x = g.AddInput("x", ir::TensorType::Of(ir::DType::kFloat32, {2, 8, 6, 6}));
  ir::Node* c1 = g.AddNode(ir::OpKind::kConv, {x, g.AddInitializer("w1", random({16, 8, 3, 3}))}, 1, "c1");
  c1->attrs().Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  ir::Value r = g.AddNode(ir::OpKind::kRelu, {c1->output(0)}, 1, "r")->output(0);
  ir::Node* c2 = g.AddNode(ir::OpKind::kConv, {r, g.AddInitializer("w2", random({16, 16, 1, 1}))}, 1, "c2");
  ir::Value a = g.AddNode(ir::OpKind::kAdd, {c2->output(0), r}, 1, "add")->output(0);
  g.AddOutput(g.AddNode(ir::OpKind::kRelu, {a}, 1, "y")->output(0));
  ASSERT_TRUE(g.InferShapes().ok());
  std::map<std::string, Tensor> inputs = {{"x", random({2, 8, 6, 6})}};
  std::vector<Tensor> outs[2];
  size_t channels_last = 0;
  for (int layout = 0; layout < 2; ++layout) {
    SessionOptions so;
    so.threads = 2;
    so.channels_last = layout == 1;
    auto session = InferenceSession::Create(g.Clone(), so);
    ASSERT_TRUE(session.ok()) << session.status().ToString();
    auto out = (*session)->Run(inputs);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    outs[layout] = std::move(*out);
    if (layout == 1)
      for (const Slot& s : (*session)->last_plan()->slots) channels_last += s.channels_last;
  }
  EXPECT_EQ(channels_last, 1u) << "r, between c1 and the FusedConv c2";
  ASSERT_EQ(outs[0][0].nbytes(), outs[1][0].nbytes());
  EXPECT_EQ(std::memcmp(outs[0][0].raw(), outs[1][0].raw(), outs[0][0].nbytes()), 0);
}

}  // namespace
}  // namespace amptrain::executor
