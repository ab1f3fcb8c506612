// Models of opsets 7-10 (importer/legacy_ops.cc, UpgradeToCanonical): each
// old encoding imported, run, and checked against values computed here. The
// ONNX backend node tests cover Upsample-9 and Scatter-10 and run the other
// old-opset cases as written; tools/bench/legacy_opsets.py checks these and
// more against ONNX Runtime.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "executor/session.h"
#include "importer/onnx_import.h"
#include "tests/importer/model_builder.h"

namespace amptrain {
namespace {

namespace mb = importer::testing;

StatusOr<std::vector<ir::Tensor>> RunLegacy(const onnx::ModelProto& m, const ir::Tensor& x) {
  AMP_ASSIGN_OR_RETURN(auto g, importer::ImportModelBytes(mb::Bytes(m), ""));
  EXPECT_EQ(g->info().opset, 11) << "a model of opset 7-10 is read as opset 11";
  AMP_ASSIGN_OR_RETURN(auto s, executor::InferenceSession::Create(std::move(g)));
  return s->Run({{"x", x}});
}

// x [1, 1, 3, 4] = 0, 1, ..., 11.
ir::Tensor Iota() {
  ir::Tensor x = *ir::Tensor::Zeros(ir::DType::kFloat32, {1, 1, 3, 4});
  for (int64_t i = 0; i < 12; ++i) x.data<float>()[i] = static_cast<float>(i);
  return x;
}

onnx::ModelProto OneNode(int64_t opset, const std::string& op, const std::vector<std::string>& outputs = {"y"}) {
  onnx::ModelProto m = mb::NewModel(opset, opset < 8 ? 3 : 4);
  mb::AddInput(m, "x", {1, 1, 3, 4});
  mb::AddNode(m, op, {"x"}, outputs, "n");
  for (const std::string& o : outputs) mb::AddOutput(m, o);
  return m;
}

onnx::NodeProto* Node(onnx::ModelProto& m) { return m.mutable_graph()->mutable_node(0); }

std::vector<float> Floats(const ir::Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.num_elements());
}

TEST(LegacyOpsets, UpsampleWithAScalesAttributeRepeatsRows) {
  onnx::ModelProto m = OneNode(7, "Upsample");
  onnx::AttributeProto* a = Node(m)->add_attribute();
  a->set_name("scales");
  a->set_type(onnx::AttributeProto::FLOATS);
  for (float s : {1.0f, 1.0f, 2.0f, 1.5f}) a->add_floats(s);
  auto out = RunLegacy(m, Iota());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ((*out)[0].dims(), (std::vector<int64_t>{1, 1, 6, 6}));
  // Row r reads input row floor(r / 2), column c input column floor(c / 1.5).
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t c = 0; c < 6; ++c)
      EXPECT_EQ((*out)[0].data<float>()[r * 6 + c], static_cast<float>((r / 2) * 4 + (c * 2) / 3))
          << r << "," << c;
}

TEST(LegacyOpsets, SliceTopKPadAndClipAttributes) {
  onnx::ModelProto slice = OneNode(7, "Slice");
  mb::SetInts(Node(slice), "starts", {1, 1});
  mb::SetInts(Node(slice), "ends", {1000, -1});
  mb::SetInts(Node(slice), "axes", {2, 3});
  auto s = RunLegacy(slice, Iota());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(Floats((*s)[0]), (std::vector<float>{5, 6, 9, 10}));

  onnx::ModelProto topk = OneNode(9, "TopK", {"v", "i"});
  mb::SetInt(Node(topk), "k", 2);
  auto t = RunLegacy(topk, Iota());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(Floats((*t)[0]), (std::vector<float>{3, 2, 7, 6, 11, 10}));
  ASSERT_EQ((*t)[1].dtype(), ir::DType::kInt64);
  EXPECT_EQ((*t)[1].ToInt64Vector(), (std::vector<int64_t>{3, 2, 3, 2, 3, 2}));

  onnx::ModelProto pad = OneNode(8, "Pad");
  mb::SetInts(Node(pad), "pads", {0, 0, 0, 1, 0, 0, 0, 2});
  mb::SetFloat(Node(pad), "value", -1.5f);
  auto p = RunLegacy(pad, Iota());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ((*p)[0].dims(), (std::vector<int64_t>{1, 1, 3, 7}));
  EXPECT_EQ(Floats((*p)[0]), (std::vector<float>{-1.5f, 0, 1, 2, 3, -1.5f, -1.5f, -1.5f, 4, 5, 6, 7, -1.5f, -1.5f,
                                                 -1.5f, 8, 9, 10, 11, -1.5f, -1.5f}));

  onnx::ModelProto clip = OneNode(10, "Clip");
  mb::SetFloat(Node(clip), "max", 4.5f);  // no min: no lower bound
  auto c = RunLegacy(clip, Iota());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ((*c)[0].data<float>()[i], std::min(static_cast<float>(i), 4.5f)) << i;
}

TEST(LegacyOpsets, ImageScalerScalesAndAddsTheChannelBias) {
  onnx::ModelProto m = OneNode(8, "ImageScaler");
  mb::SetFloat(Node(m), "scale", 0.5f);
  onnx::AttributeProto* bias = Node(m)->add_attribute();
  bias->set_name("bias");
  bias->set_type(onnx::AttributeProto::FLOATS);
  bias->add_floats(0.25f);
  auto out = RunLegacy(m, Iota());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ((*out)[0].data<float>()[i], 0.5f * static_cast<float>(i) + 0.25f) << i;
}

TEST(LegacyOpsets, PerActivationBatchNormIsRefusedByName) {
  onnx::ModelProto m = mb::NewModel(7, 3);
  mb::AddInput(m, "x", {1, 1, 3, 4});
  for (const char* p : {"g", "b", "mean", "var"}) mb::FillFloats(m.mutable_graph()->add_initializer(), p, {1}, {1.0f});
  onnx::NodeProto* bn = mb::AddNode(m, "BatchNormalization", {"x", "g", "b", "mean", "var"}, {"y"}, "bn");
  mb::SetInt(bn, "spatial", 0);
  mb::AddOutput(m, "y");
  auto g = importer::ImportModelBytes(mb::Bytes(m), "");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("'bn'"), std::string::npos) << g.status().message();
  EXPECT_NE(g.status().message().find("spatial=0"), std::string::npos) << g.status().message();
}

TEST(LegacyOpsets, OpsetsBelowSevenAreRefused) {
  auto g = importer::ImportModelBytes(mb::Bytes(OneNode(6, "Relu")), "");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("opset 6 is not supported (supported: 7..28)"), std::string::npos)
      << g.status().message();
}

}  // namespace
}  // namespace amptrain
