// The ops the importer lowers into others (importer/lowerings.cc), run
// end to end: Einsum against loops written here, on equations PyTorch code
// writes (attention with the heads inside, implicit output, ellipsis, a label
// summed away in one input), and the exporter's unique node names, which two
// lowered Einsums would otherwise repeat (ONNX Runtime refuses such a model).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <set>

#include "executor/session.h"
#include "importer/onnx_export.h"
#include "importer/onnx_import.h"
#include "tests/importer/model_builder.h"

namespace amptrain {
namespace {

namespace mb = importer::testing;

ir::Tensor Iota(const std::vector<int64_t>& dims, float scale) {
  ir::Tensor t = *ir::Tensor::Zeros(ir::DType::kFloat32, dims);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = std::sin(scale * static_cast<float>(i + 1));
  return t;
}

// Runs Einsum(equation) on a and b (b absent when its dims are empty).
ir::Tensor RunEinsum(const std::string& equation, const ir::Tensor& a, const ir::Tensor* b) {
  onnx::ModelProto m = mb::NewModel(17);
  mb::AddInput(m, "a", a.dims());
  std::vector<std::string> ins = {"a"};
  if (b) {
    mb::AddInput(m, "b", b->dims());
    ins.push_back("b");
  }
  auto* n = mb::AddNode(m, "Einsum", ins, {"y"}, "einsum");
  auto* attr = n->add_attribute();
  attr->set_name("equation");
  attr->set_type(onnx::AttributeProto::STRING);
  attr->set_s(equation);
  mb::AddOutput(m, "y");
  auto g = importer::ImportModelBytes(mb::Bytes(m), "");
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  if (!g.ok()) return {};
  for (const ir::Node* node : (*g)->nodes()) EXPECT_NE(node->op(), ir::OpKind::kEinsum);
  auto s = executor::InferenceSession::Create(std::move(*g));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  std::map<std::string, ir::Tensor> feeds = {{"a", a}};
  if (b) feeds["b"] = *b;
  auto out = (*s)->Run(feeds);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? (*out)[0] : ir::Tensor();
}

void ExpectNear(const ir::Tensor& got, const std::vector<int64_t>& dims, const std::vector<double>& want) {
  ASSERT_EQ(got.dims(), dims);
  ASSERT_EQ(static_cast<size_t>(got.num_elements()), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got.GetAsDouble(static_cast<int64_t>(i)), want[i], 1e-5) << i;
}

TEST(LoweredEinsum, AttentionScoresWithHeadsInside) {  // bqhd,bkhd->bhqk
  const int64_t B = 2, Q = 3, K = 4, H = 2, D = 5;
  ir::Tensor q = Iota({B, Q, H, D}, 0.3f), k = Iota({B, K, H, D}, 0.7f);
  std::vector<double> want;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Q; ++i)
        for (int64_t j = 0; j < K; ++j) {
          double s = 0;
          for (int64_t d = 0; d < D; ++d)
            s += static_cast<double>(q.data<float>()[((b * Q + i) * H + h) * D + d]) * k.data<float>()[((b * K + j) * H + h) * D + d];
          want.push_back(s);
        }
  ExpectNear(RunEinsum("bqhd,bkhd->bhqk", q, &k), {B, H, Q, K}, want);
}

TEST(LoweredEinsum, ImplicitOutputEllipsisAndSummedLabels) {
  ir::Tensor a = Iota({2, 3}, 0.5f), b = Iota({3, 4}, 0.9f);
  std::vector<double> mm;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      double s = 0;
      for (int k = 0; k < 3; ++k) s += static_cast<double>(a.data<float>()[i * 3 + k]) * b.data<float>()[k * 4 + j];
      mm.push_back(s);
    }
  ExpectNear(RunEinsum("ij,jk", a, &b), {2, 4}, mm);              // implicit "->ik"
  ExpectNear(RunEinsum("...ij,...jk->...ik", a, &b), {2, 4}, mm);  // empty ellipsis
  // "ij->i" (one input), "ij,jk->i" (k summed in b first, j contracted).
  std::vector<double> rows, ij_jk_i;
  for (int i = 0; i < 2; ++i) {
    double r = 0, s = 0;
    for (int j = 0; j < 3; ++j) r += a.data<float>()[i * 3 + j];
    for (int j = 0; j < 4; ++j) s += mm[static_cast<size_t>(i * 4 + j)];
    rows.push_back(r);
    ij_jk_i.push_back(s);
  }
  ExpectNear(RunEinsum("ij->i", a, nullptr), {2}, rows);
  ExpectNear(RunEinsum("ij,jk->i", a, &b), {2}, ij_jk_i);
  // "ij->ji" and "i,i->" (a scalar).
  ir::Tensor v = Iota({3}, 0.2f), w = Iota({3}, 0.4f);
  double dot = 0;
  for (int i = 0; i < 3; ++i) dot += static_cast<double>(v.data<float>()[i]) * w.data<float>()[i];
  ExpectNear(RunEinsum("i,i->", v, &w), {}, {dot});
  std::vector<double> t;
  for (int j = 0; j < 3; ++j)
    for (int i = 0; i < 2; ++i) t.push_back(a.data<float>()[i * 3 + j]);
  ExpectNear(RunEinsum("ij->ji", a, nullptr), {3, 2}, t);
}

TEST(LoweredEinsum, ExportWritesUniqueNodeNames) {
  onnx::ModelProto m = mb::NewModel(17);
  mb::AddInput(m, "a", {2, 3});
  mb::AddInput(m, "b", {3, 4});
  for (const char* y : {"y1", "y2"}) {
    auto* n = mb::AddNode(m, "Einsum", {"a", "b"}, {y}, "same_name");
    auto* attr = n->add_attribute();
    attr->set_name("equation");
    attr->set_type(onnx::AttributeProto::STRING);
    attr->set_s("ij,jk->ki");
    mb::AddOutput(m, y);
  }
  auto g = importer::ImportModelBytes(mb::Bytes(m), "");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto bytes = importer::ExportModelBytes(**g, {});
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  onnx::ModelProto out;
  ASSERT_TRUE(out.ParseFromString(*bytes));
  std::set<std::string> names;
  for (const auto& n : out.graph().node())
    if (!n.name().empty()) EXPECT_TRUE(names.insert(n.name()).second) << "repeated node name " << n.name();
}

// InstanceNormalization with symbolic spatial dims: LayerNormalization's ones
// come from ConstantOfShape at run time; per-(n, c) statistics as ONNX's.
TEST(LoweredInstanceNorm, SymbolicSpatialDims) {
  onnx::ModelProto m = mb::NewModel(17);
  auto* x = mb::AddInput(m, "x", {2, 3, 5, 7});
  for (int d : {2, 3}) x->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(d)->set_dim_param(d == 2 ? "h" : "w");
  const std::vector<float> scale = {1.5f, 0.5f, -1.0f}, bias = {0.1f, 0.2f, 0.3f};
  mb::FillFloats(m.mutable_graph()->add_initializer(), "s", {3}, scale);
  mb::FillFloats(m.mutable_graph()->add_initializer(), "b", {3}, bias);
  mb::SetFloat(mb::AddNode(m, "InstanceNormalization", {"x", "s", "b"}, {"y"}, "in"), "epsilon", 1e-5f);
  mb::AddOutput(m, "y");
  auto g = importer::ImportModelBytes(mb::Bytes(m), "");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto s = executor::InferenceSession::Create(std::move(*g));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ir::Tensor in = Iota({2, 3, 5, 7}, 0.37f);
  auto out = (*s)->Run({{"x", in}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::vector<double> want;
  for (int nc = 0; nc < 6; ++nc) {
    const float* p = in.data<float>() + nc * 35;
    double mean = 0, var = 0;
    for (int i = 0; i < 35; ++i) mean += p[i] / 35.0;
    for (int i = 0; i < 35; ++i) var += (p[i] - mean) * (p[i] - mean) / 35.0;
    for (int i = 0; i < 35; ++i) want.push_back((p[i] - mean) / std::sqrt(var + 1e-5) * scale[nc % 3] + bias[nc % 3]);
  }
  ExpectNear((*out)[0], {2, 3, 5, 7}, want);
}

}  // namespace
}  // namespace amptrain
