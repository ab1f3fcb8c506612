// --batch-axis (executor/train/batch_axis.h): a sequence-major input [T, B, F]
// read as [B, T, F] through a Transpose gives the model's outputs unchanged
// for the transposed data, every axis position; RestoreBatchAxes gives the
// model its own interface back (input type, no Transpose, same outputs); the
// parser names unknown inputs, bad axes and inputs named twice.
#include <gtest/gtest.h>

#include <numeric>

#include "executor/session.h"
#include "executor/train/batch_axis.h"
#include "ir/graph.h"
#include "ir/verifier.h"
#include "tests/common/count_nodes.h"

namespace amptrain::executor::train {
namespace {

using ir::DType;
using ir::Graph;
using ir::OpKind;
using ir::Tensor;
using ir::TensorType;
using ir::Value;
using amptrain::testing::CountNodes;

// x [dims] -> Softmax over the last axis, Mul by a weight over x's dims -> y:
// an output that depends on where each element sits.
std::unique_ptr<Graph> Model(const std::vector<int64_t>& dims) {
  auto g = std::make_unique<Graph>();
  Value x = g->AddInput("x", TensorType::Of(DType::kFloat32, dims));
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> w(static_cast<size_t>(n));
  std::iota(w.begin(), w.end(), 1.0f);
  Value s = g->AddNode(OpKind::kSoftmax, {x})->output(0);
  ir::Node* y = g->AddNode(OpKind::kMul, {s, g->AddInitializer("w", Tensor::Floats(w, dims))}, 1, "mul", {"y"});
  g->AddOutput(y->output(0));
  EXPECT_TRUE(g->InferShapes().ok());
  return g;
}

Tensor Iota(const std::vector<int64_t>& dims) {
  Tensor t = *Tensor::Zeros(DType::kFloat32, dims);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = 0.1f * static_cast<float>(i % 17);
  return t;
}

// x with its axis `axis` moved to the front.
Tensor BatchFirst(const Tensor& x, int64_t axis) {
  const std::vector<int64_t>& d = x.dims();
  std::vector<int64_t> out_dims = d;
  std::rotate(out_dims.begin(), out_dims.begin() + axis, out_dims.begin() + axis + 1);
  Tensor out = *Tensor::Zeros(DType::kFloat32, out_dims);
  int64_t outer = 1, inner = 1;
  for (int64_t a = 0; a < axis; ++a) outer *= d[static_cast<size_t>(a)];
  for (size_t a = static_cast<size_t>(axis) + 1; a < d.size(); ++a) inner *= d[a];
  const int64_t b = d[static_cast<size_t>(axis)];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < b; ++k)
      for (int64_t i = 0; i < inner; ++i)
        out.data<float>()[(k * outer + o) * inner + i] = x.data<float>()[(o * b + k) * inner + i];
  return out;
}

std::vector<float> Outputs(std::unique_ptr<Graph> g, const Tensor& x) {
  auto session = InferenceSession::Create(std::move(g), SessionOptions{});
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  if (!session.ok()) return {};
  auto out = (*session)->Run({{"x", x}});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return {};
  const Tensor& y = (*out)[0];
  return std::vector<float>(y.data<float>(), y.data<float>() + y.num_elements());
}

TEST(BatchAxis, TransposedDataGiveTheModelsOwnOutputs) {
  const std::vector<int64_t> dims = {3, 2, 4, 5};
  const Tensor x = Iota(dims);
  const std::vector<float> want = Outputs(Model(dims), x);
  for (int64_t axis : {1, 2, 3}) {
    SCOPED_TRACE(axis);
    auto g = Model(dims);
    ASSERT_TRUE(MoveBatchAxesFirst(*g, {{"x", axis}}).ok());
    EXPECT_TRUE(ir::Verify(*g).ok());
    const Tensor moved = BatchFirst(x, axis);
    EXPECT_EQ(g->type(g->inputs()[0]).shape.static_dims(), moved.dims());
    EXPECT_EQ(Outputs(std::move(g), moved), want);  // a Transpose moves values, it computes nothing
    g = Model(dims);
    ASSERT_TRUE(MoveBatchAxesFirst(*g, {{"x", axis}}).ok());
    ASSERT_TRUE(RestoreBatchAxes(*g, {{"x", axis}}).ok());
    EXPECT_TRUE(ir::Verify(*g).ok());
    EXPECT_EQ(CountNodes(*g, OpKind::kTranspose), 0u);
    EXPECT_EQ(g->type(g->inputs()[0]).shape.static_dims(), dims);
    EXPECT_EQ(Outputs(std::move(g), x), want);
  }
}

TEST(BatchAxis, ParsingNamesWhatIsWrong) {
  auto g = Model({3, 2, 4});
  auto all = ParseBatchAxes({"1"}, *g);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].input, "x");
  EXPECT_EQ((*all)[0].axis, 1);
  EXPECT_TRUE(ParseBatchAxes({"x=2"}, *g).ok());
  EXPECT_TRUE(ParseBatchAxes({"0"}, *g)->empty());      // every input as it is
  EXPECT_EQ(ParseBatchAxes({"x=0"}, *g)->at(0).axis, 0);  // x as it is
  for (const char* bad : {"-1", "x=3", "y=1", "one", "1x", "x=1,2"}) {
    SCOPED_TRACE(bad);
    auto r = ParseBatchAxes({bad}, *g);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("--batch-axis"), std::string::npos) << r.status().message();
  }
  EXPECT_FALSE(ParseBatchAxes({"x=1", "1"}, *g).ok());  // x twice
  EXPECT_TRUE(ParseBatchAxes({}, *g)->empty());
}

// The export's dynamic dims tell: ids [16, batch] with logits [batch, 10] take
// their batch at axis 1; a static first dim alone ([1, seq]) or a dynamic dim
// of another name does not.
TEST(BatchAxis, DetectedWhereTheExportNamesTheBatch) {
  auto build = [](std::vector<ir::Dim> in, std::vector<ir::Dim> out) {
    auto g = std::make_unique<Graph>();
    Value x = g->AddInput("ids", TensorType::Of(DType::kFloat32, ir::Shape(std::move(in))));
    ir::Node* r = g->AddNode(OpKind::kIdentity, {x});
    r->mutable_output_info(0).type = TensorType::Of(DType::kFloat32, ir::Shape(std::move(out)));
    g->AddOutput(r->output(0));
    return g;
  };
  using ir::Dim;
  auto seq_major = build({Dim::Static(16), Dim::Symbolic("batch")}, {Dim::Symbolic("batch"), Dim::Static(10)});
  std::vector<BatchAxis> found = DetectBatchAxes(*seq_major);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].input, "ids");
  EXPECT_EQ(found[0].axis, 1);
  EXPECT_TRUE(DetectBatchAxes(*build({Dim::Static(1), Dim::Symbolic("seq")}, {Dim::Static(1), Dim::Static(10)})).empty());
  EXPECT_TRUE(DetectBatchAxes(*build({Dim::Static(16), Dim::Symbolic("n")}, {Dim::Symbolic("batch"), Dim::Static(10)})).empty());
  EXPECT_TRUE(DetectBatchAxes(*build({Dim::Symbolic("batch"), Dim::Static(16)}, {Dim::Symbolic("batch"), Dim::Static(10)})).empty());
}

}  // namespace
}  // namespace amptrain::executor::train
