// Accuracy-guided conversion (executor/precision_search.h) on a small
// SimpleCNN in eval mode, O2 fp16: the bound is set below the error of the
// plain conversion, so the search must keep a prefix fp32; what it reports is
// checked against an independent conversion and run.
#include "executor/precision_search.h"

#include <gtest/gtest.h>

#include <limits>

#include "executor/session.h"
#include "trainer_test_util.h"

namespace amptrain::executor {
namespace {

using ir::DType;
using ir::Tensor;

amp::Policy O2Fp16() {
  amp::Policy p;
  p.level = amp::Level::kO2;
  p.low = DType::kFloat16;
  return p;
}

// The model's float outputs after converting it under `policy`, on `inputs`.
std::vector<Tensor> ConvertAndRun(const ir::Graph& model, const amp::Policy& policy,
                                  const std::map<std::string, Tensor>& inputs) {
  std::unique_ptr<ir::Graph> g = model.Clone();
  EXPECT_TRUE(amp::Convert(*g, policy).ok());
  auto session = InferenceSession::Create(std::move(g));
  EXPECT_TRUE(session.ok()) << session.status().message();
  auto outs = (*session)->Run(inputs);
  EXPECT_TRUE(outs.ok()) << outs.status().message();
  return *outs;
}

class PrecisionSearchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = train::testing::SmallCnn(4, /*training_mode=*/false);
    auto in = RandomNormalInputs(*model_, 8, 1);
    ASSERT_TRUE(in.ok()) << in.status().message();
    inputs_ = *in;
    auto session = InferenceSession::Create(model_->Clone());
    ASSERT_TRUE(session.ok());
    auto outs = (*session)->Run(inputs_);
    ASSERT_TRUE(outs.ok());
    reference_ = *outs;
  }
  std::unique_ptr<ir::Graph> model_;
  std::map<std::string, Tensor> inputs_;
  std::vector<InputBatch> batches() const { return {inputs_}; }
  std::vector<Tensor> reference_;
};

TEST_F(PrecisionSearchTest, KeepsTheShortestMeasuredPrefixWithinTheBound) {
  const double plain = RelativeL2Error(ConvertAndRun(*model_, O2Fp16(), inputs_)[0], reference_[0]);
  ASSERT_GT(plain, 0.0) << "fp16 rounding must show in the logits";
  PrecisionSearchOptions opts;
  opts.max_error = plain / 4;
  auto s = SearchFp32Prefix(*model_, O2Fp16(), {}, batches(), opts);
  ASSERT_TRUE(s.ok()) << s.status().message();

  ASSERT_FALSE(s->trials.empty());
  EXPECT_EQ(s->trials.front().fp32_nodes, 0);
  EXPECT_EQ(s->trials.front().error, plain);
  EXPECT_GT(s->chosen.fp32_nodes, 0);
  EXPECT_LE(s->chosen.error, opts.max_error);
  // The chosen nodes are the first of the candidates, and one fewer was measured outside the bound.
  ASSERT_EQ(s->fp32_nodes.size(), static_cast<size_t>(s->chosen.fp32_nodes));
  for (size_t i = 0; i < s->fp32_nodes.size(); ++i) EXPECT_EQ(s->fp32_nodes[i], s->candidates[i]);
  bool one_fewer_fails = false;
  for (const PrecisionTrial& t : s->trials)
    if (t.fp32_nodes == s->chosen.fp32_nodes - 1) one_fewer_fails = t.error > opts.max_error;
  EXPECT_TRUE(one_fewer_fails);

  // The returned policy reproduces the reported error exactly.
  const double again = RelativeL2Error(ConvertAndRun(*model_, s->policy, inputs_)[0], reference_[0]);
  EXPECT_EQ(again, s->chosen.error);
}

TEST_F(PrecisionSearchTest, ABoundThePlainConversionMeetsKeepsNothing) {
  PrecisionSearchOptions opts;
  opts.max_error = 1.0;
  auto s = SearchFp32Prefix(*model_, O2Fp16(), {}, batches(), opts);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->trials.size(), 1u);
  EXPECT_EQ(s->chosen.fp32_nodes, 0);
  EXPECT_TRUE(s->fp32_nodes.empty());
  EXPECT_TRUE(s->policy.node_overrides.empty());
}

TEST_F(PrecisionSearchTest, ABoundNoConversionMeetsIsAnErrorWithBothErrors) {
  // Without keep_io_types the input itself is rounded to fp16: not even the
  // all-fp32 trial reproduces the fp32 logits exactly.
  amp::Policy p = O2Fp16();
  p.keep_io_types = false;
  PrecisionSearchOptions opts;
  opts.max_error = 0.0;
  auto s = SearchFp32Prefix(*model_, p, {}, batches(), opts);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.status().message().find("no conversion meets the error bound 0"), std::string::npos)
      << s.status().message();
  EXPECT_NE(s.status().message().find("kept fp32"), std::string::npos) << s.status().message();
}

TEST(RelativeL2Error, ComparesInDoubleAndFlagsWhatCannotBeCompared) {
  const Tensor want = Tensor::Floats({3.0f, 4.0f}, {2});
  EXPECT_EQ(RelativeL2Error(want, want), 0.0);
  EXPECT_DOUBLE_EQ(RelativeL2Error(Tensor::Floats({3.0f, 4.5f}, {2}), want), 0.1);
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(RelativeL2Error(Tensor::Floats({3.0f, std::numeric_limits<float>::quiet_NaN()}, {2}), want), inf);
  EXPECT_EQ(RelativeL2Error(Tensor::Floats({1.0f}, {1}), Tensor::Floats({0.0f}, {1})), inf);
  EXPECT_EQ(RelativeL2Error(Tensor::Floats({0.0f}, {1}), Tensor::Floats({0.0f}, {1})), 0.0);
  EXPECT_EQ(RelativeL2Error(Tensor::Floats({1.0f}, {1}), want), inf);
}

TEST(RelativeL2Error, PoolsBatchesAsIfConcatenated) {
  L2Error pooled;
  pooled.Add(Tensor::Floats({3.0f}, {1}), Tensor::Floats({3.0f}, {1}));
  pooled.Add(Tensor::Floats({4.5f}, {1}), Tensor::Floats({4.0f}, {1}));
  EXPECT_DOUBLE_EQ(pooled.Relative(), RelativeL2Error(Tensor::Floats({3.0f, 4.5f}, {2}), Tensor::Floats({3.0f, 4.0f}, {2})));
  pooled.Add(Tensor::Floats({1.0f, 2.0f}, {2}), Tensor::Floats({1.0f}, {1}));
  EXPECT_EQ(pooled.Relative(), std::numeric_limits<double>::infinity());
}

TEST(RandomValidationBatches, FillsTheSamplesWithTheModelsBatchSize) {
  ir::Graph dynamic;
  ir::Value x = dynamic.AddInput("x", ir::TensorType::Of(DType::kFloat32, ir::Shape({ir::Dim::Symbolic("n"), ir::Dim::Static(3)})));
  dynamic.AddOutput(dynamic.AddNode(ir::OpKind::kRelu, {x}, 1, "r", {"y"})->output(0));
  auto one = RandomValidationBatches(dynamic, 16, 0);
  ASSERT_TRUE(one.ok()) << one.status().message();
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ(one->front().at("x").dims(), (std::vector<int64_t>{16, 3}));

  ir::Graph fixed;
  ir::Value f = fixed.AddInput("x", ir::TensorType::Of(DType::kFloat32, std::vector<int64_t>{3, 3}));
  fixed.AddOutput(fixed.AddNode(ir::OpKind::kRelu, {f}, 1, "r", {"y"})->output(0));
  auto six = RandomValidationBatches(fixed, 16, 0);
  ASSERT_TRUE(six.ok()) << six.status().message();
  ASSERT_EQ(six->size(), 6u);  // 18 samples >= 16
  EXPECT_FALSE((*six)[0].at("x") == (*six)[1].at("x")) << "each batch has its own seed";
}

TEST(RandomNormalInputs, RefusesInputsItCannotMake) {
  ir::Graph g;
  ir::Value ids = g.AddInput("ids", ir::TensorType::Of(DType::kInt64, std::vector<int64_t>{2, 16}));
  g.AddOutput(ids);
  auto r = RandomNormalInputs(g, 2, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("input 'ids' is int64"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace amptrain::executor
