// Control flow decided at import (importer/control_flow.cc), run: an
// unrolled Loop's carried and scan outputs, a while-loop's sequence stacked,
// and the branch an If takes, against values computed here.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "executor/session.h"
#include "importer/onnx_import.h"
#include "tests/importer/control_flow_models.h"

namespace amptrain {
namespace {

namespace mb = importer::testing;

std::vector<ir::Tensor> RunModel(const onnx::ModelProto& m, const std::map<std::string, ir::Tensor>& feeds) {
  auto g = importer::ImportModelBytes(mb::Bytes(m), "");
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  if (!g.ok()) return {};
  auto s = executor::InferenceSession::Create(std::move(*g));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  auto out = (*s)->Run(feeds);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? *out : std::vector<ir::Tensor>{};
}

// acc = acc0 + the rows of x; doubled = 2 x, row by row (mb::LoopModel).
TEST(ControlFlowRun, UnrolledLoopCarriesAndScans) {
  ir::Tensor x = *ir::Tensor::Zeros(ir::DType::kFloat32, {4, 3});
  for (int64_t i = 0; i < 12; ++i) x.data<float>()[i] = 0.25f * static_cast<float>(i) - 1.0f;
  std::vector<ir::Tensor> out = RunModel(mb::LoopModel("still"), {{"x", x}});
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{3}));
  ASSERT_EQ(out[1].dims(), (std::vector<int64_t>{4, 3}));
  for (int64_t c = 0; c < 3; ++c) {
    float want = 0.5f * static_cast<float>(c);  // acc0 = 0, 0.5, 1 (mb::AddInitializer)
    for (int64_t r = 0; r < 4; ++r) want += x.data<float>()[r * 3 + c];
    EXPECT_FLOAT_EQ(out[0].data<float>()[c], want) << c;
  }
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(out[1].data<float>()[i], 2.0f * x.data<float>()[i]) << i;
}

// y = squeeze(x W, 1) where dim 1 is 1; k = z unchanged where it is not.
TEST(ControlFlowRun, IfRunsTheBranchItsShapeTakes) {
  onnx::ModelProto m = mb::TwoSqueezeIfs();
  ir::Tensor x = *ir::Tensor::Zeros(ir::DType::kFloat32, {2, 1, 3}), z = *ir::Tensor::Zeros(ir::DType::kFloat32, {2, 4, 3});
  for (int64_t i = 0; i < 6; ++i) x.data<float>()[i] = static_cast<float>(i) - 2.0f;
  for (int64_t i = 0; i < 24; ++i) z.data<float>()[i] = 0.5f * static_cast<float>(i);
  std::vector<ir::Tensor> out = RunModel(m, {{"x", x}, {"z", z}});
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{2, 3}));
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t j = 0; j < 3; ++j) {
      float want = 0;  // W[k][j] = 0.5 (3 k + j)
      for (int64_t k = 0; k < 3; ++k) want += x.data<float>()[b * 3 + k] * 0.5f * static_cast<float>(3 * k + j);
      EXPECT_FLOAT_EQ(out[0].data<float>()[b * 3 + j], want);
    }
  ASSERT_EQ(out[1].dims(), (std::vector<int64_t>{2, 4, 3}));
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(out[1].data<float>()[i], z.data<float>()[i]);
}

// y = 2 x[0:3] stacked from the unrolled while-loop's sequence, count = 3.
TEST(ControlFlowRun, WhileLoopSequenceStacks) {
  ir::Tensor x = *ir::Tensor::Zeros(ir::DType::kFloat32, {4, 3});
  for (int64_t i = 0; i < 12; ++i) x.data<float>()[i] = 1.5f - 0.25f * static_cast<float>(i);
  std::vector<ir::Tensor> out = RunModel(mb::WhileSequenceModel(), {{"x", x}});
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{3, 3}));
  for (int64_t i = 0; i < 9; ++i) EXPECT_EQ(out[0].data<float>()[i], 2.0f * x.data<float>()[i]) << i;
  ASSERT_EQ(out[1].num_elements(), 1);
  EXPECT_EQ(out[1].GetAsInt64(0), 3);
}

// 300 iterations, past what the round-by-round unrolling allows: the trip
// count comes from running the condition's slice.
TEST(ControlFlowRun, LongWhileLoopStacksEveryRow) {
  constexpr int64_t kRows = 300;
  ir::Tensor x = *ir::Tensor::Zeros(ir::DType::kFloat32, {kRows, 3});
  for (int64_t i = 0; i < kRows * 3; ++i) x.data<float>()[i] = 0.125f * static_cast<float>(i % 97) - 3.0f;
  std::vector<ir::Tensor> out = RunModel(mb::WhileSequenceModel(kRows, kRows), {{"x", x}});
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{kRows, 3}));
  for (int64_t i = 0; i < kRows * 3; ++i) EXPECT_EQ(out[0].data<float>()[i], 2.0f * x.data<float>()[i]) << i;
  EXPECT_EQ(out[1].GetAsInt64(0), kRows);
}

// The same loop with its condition inside an If, unrolled round by round.
TEST(ControlFlowRun, WhileLoopWithConditionInAnIf) {
  ir::Tensor x = *ir::Tensor::Zeros(ir::DType::kFloat32, {4, 3});
  for (int64_t i = 0; i < 12; ++i) x.data<float>()[i] = 0.5f * static_cast<float>(i) - 2.0f;
  std::vector<ir::Tensor> out = RunModel(mb::WhileSequenceModel(3, 4, true), {{"x", x}});
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{3, 3}));
  for (int64_t i = 0; i < 9; ++i) EXPECT_EQ(out[0].data<float>()[i], 2.0f * x.data<float>()[i]) << i;
  EXPECT_EQ(out[1].GetAsInt64(0), 3);
}

}  // namespace
}  // namespace amptrain
