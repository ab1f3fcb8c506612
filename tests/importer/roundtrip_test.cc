// Import -> export -> re-import keeps nodes, names, attributes, initializer
// bytes and metadata; export is deterministic.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "importer/onnx_export.h"
#include "importer/onnx_import.h"
#include "importer/tensor_proto.h"
#include "ir/verifier.h"
#include "tests/importer/model_builder.h"

namespace amptrain::importer {
namespace {

using namespace testing;  // NOLINT
using ir::OpKind;

std::unique_ptr<ir::Graph> MustImport(const onnx::ModelProto& m, const ImportOptions& opts = {}) {
  auto g = ImportModelBytes(Bytes(m), "", opts);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? std::move(g).value() : nullptr;
}

std::vector<const ir::Node*> Order(const ir::Graph& g) { return *g.TopologicalOrder(); }

void ExpectSameGraph(const ir::Graph& a, const ir::Graph& b) {
  auto oa = Order(a), ob = Order(b);
  ASSERT_EQ(oa.size(), ob.size());
  for (size_t i = 0; i < oa.size(); ++i) {
    EXPECT_EQ(oa[i]->op(), ob[i]->op());
    EXPECT_EQ(oa[i]->name(), ob[i]->name());
    EXPECT_TRUE(oa[i]->attrs() == ob[i]->attrs()) << oa[i]->Describe();
    ASSERT_EQ(oa[i]->num_inputs(), ob[i]->num_inputs());
    for (size_t k = 0; k < oa[i]->num_inputs(); ++k) EXPECT_EQ(a.name(oa[i]->input(k)), b.name(ob[i]->input(k)));
    ASSERT_EQ(oa[i]->num_outputs(), ob[i]->num_outputs());
    for (size_t k = 0; k < oa[i]->num_outputs(); ++k) {
      EXPECT_EQ(oa[i]->output_info(k).name, ob[i]->output_info(k).name);
      EXPECT_EQ(oa[i]->output_info(k).type.ToString(), ob[i]->output_info(k).type.ToString());
    }
  }
  ASSERT_EQ(a.initializers().size(), b.initializers().size());
  for (size_t i = 0; i < a.initializers().size(); ++i) {
    EXPECT_EQ(a.name(a.initializers()[i]), b.name(b.initializers()[i]));
    EXPECT_TRUE(*a.ConstantValue(a.initializers()[i]) == *b.ConstantValue(b.initializers()[i]));
  }
  ASSERT_EQ(a.inputs().size(), b.inputs().size());
  for (size_t i = 0; i < a.inputs().size(); ++i) {
    EXPECT_EQ(a.name(a.inputs()[i]), b.name(b.inputs()[i]));
    EXPECT_EQ(a.type(a.inputs()[i]).ToString(), b.type(b.inputs()[i]).ToString());
  }
  ASSERT_EQ(a.outputs().size(), b.outputs().size());
  for (size_t i = 0; i < a.outputs().size(); ++i) EXPECT_EQ(a.name(a.outputs()[i]), b.name(b.outputs()[i]));
}

TEST(RoundTrip, ConvReluGemmKeepsEverything) {
  onnx::ModelProto m = ConvReluGemm();
  m.set_doc_string("a doc");
  m.set_model_version(3);
  auto* kv = m.add_metadata_props();
  kv->set_key("author");
  kv->set_value("me");
  auto g = MustImport(m);
  ASSERT_TRUE(g);
  auto order = Order(*g);
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(order[0]->op(), OpKind::kConv);
  EXPECT_EQ(order[0]->name(), "conv1");
  EXPECT_EQ(order[0]->attrs().Ints("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(order[3]->op(), OpKind::kGemm);
  EXPECT_EQ(g->type(g->outputs()[0]).ToString(), "float32[N,10]");
  EXPECT_EQ(g->info().opset, 17);
  EXPECT_EQ(g->info().producer_name, "importer-test");
  EXPECT_EQ(g->info().graph_name, "test_graph");
  EXPECT_EQ(g->info().model_version, 3);
  EXPECT_EQ(g->info().doc, "a doc");
  ASSERT_EQ(g->info().metadata.size(), 1u);
  EXPECT_EQ(g->info().metadata[0].second, "me");
  const ir::Tensor* w = g->ConstantValue(g->FindValue("conv.w"));
  ASSERT_TRUE(w);
  EXPECT_EQ(w->GetAsDouble(5), 2.5);

  auto bytes = ExportModelBytes(*g);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto again = ExportModelBytes(*g);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*bytes, *again) << "export is not deterministic";

  auto g2 = ImportModelBytes(*bytes, "");
  ASSERT_TRUE(g2.ok()) << g2.status().ToString();
  ExpectSameGraph(*g, **g2);
  EXPECT_EQ((*g2)->info().metadata, g->info().metadata);
  auto bytes2 = ExportModelBytes(**g2);
  ASSERT_TRUE(bytes2.ok());
  EXPECT_EQ(*bytes, *bytes2) << "re-imported model exports differently";
}

// A recurrent layer with the training graph's reserve output (ir/rnn.h)
// has no ONNX form: the export says so rather than write a 4-output LSTM.
TEST(RoundTrip, RecurrentReserveOutputIsNotExported) {
  ir::Graph g;
  ir::Value x = g.AddInput("x", ir::TensorType::Of(ir::DType::kFloat32, {5, 3, 2}));
  ir::Value w = g.AddInitializer("w", ir::Tensor::Floats(std::vector<float>(32, 0.1f), {1, 16, 2}));
  ir::Value r = g.AddInitializer("r", ir::Tensor::Floats(std::vector<float>(64, 0.1f), {1, 16, 4}));
  ir::Node* lstm = g.AddNode(OpKind::kLSTM, {x, w, r}, 4, "lstm");
  g.AddOutput(lstm->output(0));
  ASSERT_TRUE(g.InferShapes().ok());
  auto bytes = ExportModelBytes(g);
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().message().find("reserve output"), std::string::npos) << bytes.status().ToString();
}

TEST(RoundTrip, ExportWritesValueInfoAndSymbolicDims) {
  auto g = MustImport(ConvReluGemm());
  ASSERT_TRUE(g);
  auto bytes = ExportModelBytes(*g);
  ASSERT_TRUE(bytes.ok());
  onnx::ModelProto out;
  ASSERT_TRUE(out.ParseFromString(*bytes));
  EXPECT_EQ(out.graph().initializer_size(), 4);
  EXPECT_EQ(out.graph().initializer(0).name(), "conv.w");
  EXPECT_TRUE(out.graph().initializer(0).has_raw_data());
  ASSERT_EQ(out.graph().value_info_size(), 3);  // c, r, f
  const auto& c = out.graph().value_info(0);
  EXPECT_EQ(c.name(), "c");
  EXPECT_EQ(c.type().tensor_type().shape().dim(0).dim_param(), "N");
  EXPECT_EQ(c.type().tensor_type().shape().dim(1).dim_value(), 4);
  EXPECT_EQ(out.graph().output(0).type().tensor_type().shape().dim(1).dim_value(), 10);
  EXPECT_EQ(out.opset_import(0).version(), 17);
  // Attributes in name order.
  const auto& gemm = out.graph().node(3);
  ASSERT_EQ(gemm.attribute_size(), 2);
  EXPECT_EQ(gemm.attribute(0).name(), "alpha");
  EXPECT_EQ(gemm.attribute(1).name(), "transB");
}

TEST(RoundTrip, NodesInAnyOrderAreSorted) {
  onnx::ModelProto m = ConvReluGemm();
  auto* nodes = m.mutable_graph()->mutable_node();
  std::reverse(nodes->begin(), nodes->end());
  auto g = MustImport(m);
  ASSERT_TRUE(g);
  auto order = Order(*g);
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(order[0]->name(), "conv1");
  EXPECT_EQ(order[3]->name(), "fc");
}

TEST(RoundTrip, InitializerListedAsInputIsAnInitializer) {
  onnx::ModelProto m = ConvReluGemm();
  AddInput(m, "conv.w", {4, 1, 3, 3});
  auto g = MustImport(m);
  ASSERT_TRUE(g);
  ASSERT_EQ(g->inputs().size(), 1u);
  EXPECT_EQ(g->name(g->inputs()[0]), "x");
  EXPECT_EQ(g->initializers().size(), 4u);
}

TEST(RoundTrip, ConstantForms) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2, 3});
  auto* c1 = AddNode(m, "Constant", {}, {"k1"}, "c1");
  SetFloat(c1, "value_float", 2.0f);
  auto* c2 = AddNode(m, "Constant", {}, {"k2"}, "c2");
  SetInts(c2, "value_ints", {3});
  AddNode(m, "Mul", {"x", "k1"}, {"y"}, "mul");
  AddOutput(m, "y");
  AddOutput(m, "k2");
  auto g = MustImport(m, {.fold_constants = false});
  ASSERT_TRUE(g);
  const ir::Tensor* k1 = g->ConstantValue(g->FindValue("k1"));
  ASSERT_TRUE(k1);
  EXPECT_EQ(k1->dtype(), ir::DType::kFloat32);
  EXPECT_EQ(k1->rank(), 0u);
  EXPECT_EQ(k1->GetAsDouble(0), 2.0);
  const ir::Tensor* k2 = g->ConstantValue(g->FindValue("k2"));
  ASSERT_TRUE(k2);
  EXPECT_EQ(k2->dtype(), ir::DType::kInt64);
  EXPECT_EQ(k2->ToInt64Vector(), std::vector<int64_t>{3});
  // Written back as Constant nodes with a "value" tensor.
  auto bytes = ExportModelBytes(*g);
  ASSERT_TRUE(bytes.ok());
  onnx::ModelProto out;
  ASSERT_TRUE(out.ParseFromString(*bytes));
  int constants = 0;
  for (const auto& n : out.graph().node())
    if (n.op_type() == "Constant") {
      ++constants;
      ASSERT_EQ(n.attribute_size(), 1);
      EXPECT_EQ(n.attribute(0).name(), "value");
    }
  EXPECT_EQ(constants, 2);

  onnx::ModelProto bad = NewModel(17);
  auto* s = AddNode(bad, "Constant", {}, {"k"}, "strings");
  s->add_attribute()->set_name("value_strings");
  s->mutable_attribute(0)->set_type(onnx::AttributeProto::STRINGS);
  s->mutable_attribute(0)->add_strings("a");
  AddOutput(bad, "k");
  auto r = ImportModelBytes(Bytes(bad), "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("value_strings"), std::string::npos) << r.status().message();
}

TEST(RoundTrip, TypedFieldsAndHalfInInt32Data) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2}, onnx::TensorProto::FLOAT16);
  auto* h = m.mutable_graph()->add_initializer();
  h->set_name("h");
  h->set_data_type(onnx::TensorProto::FLOAT16);
  h->add_dims(2);
  h->add_int32_data(ir::FloatToHalf(1.5f));
  h->add_int32_data(ir::FloatToHalf(-2.0f));
  auto* f = m.mutable_graph()->add_initializer();
  f->set_name("f");
  f->set_data_type(onnx::TensorProto::FLOAT);
  f->add_dims(2);
  f->add_float_data(0.25f);
  f->add_float_data(4.0f);
  AddNode(m, "Add", {"x", "h"}, {"y"}, "add");
  AddOutput(m, "y");
  AddOutput(m, "f");
  auto g = MustImport(m);
  ASSERT_TRUE(g);
  const ir::Tensor* ht = g->ConstantValue(g->FindValue("h"));
  ASSERT_TRUE(ht);
  EXPECT_EQ(ht->dtype(), ir::DType::kFloat16);
  EXPECT_EQ(ht->GetAsDouble(0), 1.5);
  EXPECT_EQ(ht->GetAsDouble(1), -2.0);
  EXPECT_EQ(g->ConstantValue(g->FindValue("f"))->GetAsDouble(1), 4.0);
  EXPECT_EQ(g->type(g->outputs()[0]).ToString(), "float16[2]");
}

TEST(RoundTrip, IdentityRemoval) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2});
  AddNode(m, "Relu", {"x"}, {"r"}, "relu");
  AddNode(m, "Identity", {"r"}, {"i1"}, "id1");   // inner: removed
  AddNode(m, "Neg", {"i1"}, {"n"}, "neg");
  AddNode(m, "Identity", {"n"}, {"out"}, "id2");  // feeds a graph output: Neg's output renamed "out"
  AddNode(m, "Identity", {"x"}, {"xcopy"}, "id3");  // graph input -> graph output: kept
  AddOutput(m, "out");
  AddOutput(m, "xcopy");
  auto g = MustImport(m);
  ASSERT_TRUE(g);
  auto order = Order(*g);
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[0]->op(), OpKind::kRelu);
  EXPECT_EQ(order[1]->op(), OpKind::kNeg);
  EXPECT_EQ(order[1]->output_info(0).name, "out");
  EXPECT_EQ(g->producer(order[1]->input(0))->op(), OpKind::kRelu);
  EXPECT_EQ(order[2]->op(), OpKind::kIdentity);
  EXPECT_EQ(g->name(g->outputs()[0]), "out");
  EXPECT_EQ(g->name(g->outputs()[1]), "xcopy");

  auto kept = MustImport(m, {.remove_identity = false});
  ASSERT_TRUE(kept);
  EXPECT_EQ(Order(*kept).size(), 5u);
}

TEST(RoundTrip, ExportModelFileIsAtomic) {
  auto g = MustImport(ConvReluGemm());
  ASSERT_TRUE(g);
  std::filesystem::path dir = std::filesystem::path(AMPTRAIN_BINARY_DIR) / "importer_test_export";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string path = (dir / "m.onnx").string();
  ASSERT_TRUE(ExportModelFile(*g, path).ok());
  auto g2 = ImportModelFile(path);
  ASSERT_TRUE(g2.ok()) << g2.status().ToString();
  ExpectSameGraph(*g, **g2);
  size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1u) << "a temp file was left behind";
  // A folder that does not exist: an error and nothing written.
  Status s = ExportModelFile(*g, (dir / "missing" / "m.onnx").string());
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  // An opset we cannot write: an error, and the old file stays intact.
  auto before = std::filesystem::file_size(path);
  ExportOptions old;
  old.opset = 5;
  EXPECT_FALSE(ExportModelFile(*g, path, old).ok());
  EXPECT_EQ(std::filesystem::file_size(path), before);
  std::filesystem::remove_all(dir);
}

TEST(RoundTrip, ReadTensorProtoFile) {
  std::filesystem::path dir = std::filesystem::path(AMPTRAIN_BINARY_DIR) / "importer_test_tensor";
  std::filesystem::create_directories(dir);
  onnx::TensorProto t;
  FillFloats(&t, "input_0", {2, 2}, {1, 2, 3, 4});
  std::string path = (dir / "input_0.pb").string();
  { std::ofstream(path, std::ios::binary) << t.SerializeAsString(); }
  auto r = ReadTensorProtoFile(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(r->GetAsDouble(3), 4.0);
  { std::ofstream(path, std::ios::binary) << t.SerializeAsString().substr(0, 9); }
  EXPECT_FALSE(ReadTensorProtoFile(path).ok());
  EXPECT_EQ(ReadTensorProtoFile((dir / "nope.pb").string()).status().code(), StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace amptrain::importer
