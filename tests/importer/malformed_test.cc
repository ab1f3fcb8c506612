// Untrusted input: every malformed model gives a clean Status naming the
// problem, never a crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "importer/onnx_import.h"
#include "tests/importer/model_builder.h"

namespace amptrain::importer {
namespace {

using namespace testing;  // NOLINT
namespace fs = std::filesystem;

// Imports `m` and expects an error whose message contains every one of `parts`.
void ExpectError(const onnx::ModelProto& m, std::initializer_list<std::string> parts,
                 const std::string& model_dir = "") {
  auto g = ImportModelBytes(Bytes(m), model_dir);
  ASSERT_FALSE(g.ok()) << "imported a malformed model";
  for (const auto& p : parts) EXPECT_NE(g.status().message().find(p), std::string::npos) << g.status().ToString();
}

// x[2,3] -> Relu -> y, plus an initializer "w" feeding Add.
onnx::ModelProto Small() {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2, 3});
  AddInitializer(m, "w", {2, 3});
  AddNode(m, "Add", {"x", "w"}, {"a"}, "add");
  AddNode(m, "Relu", {"a"}, {"y"}, "relu");
  AddOutput(m, "y");
  return m;
}

// An empty file is named as one (issue 9: it reported "IR version 0").
TEST(Malformed, EmptyFileSaysSo) {
  auto g = ImportModelBytes("", "");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("the model is empty"), std::string::npos) << g.status().ToString();
}

TEST(Malformed, SmallModelIsValid) { EXPECT_TRUE(ImportModelBytes(Bytes(Small()), "").ok()); }

TEST(Malformed, TruncatedAtEveryOffset) {
  std::string bytes = Bytes(ConvReluGemm());
  ASSERT_TRUE(ImportModelBytes(bytes, "").ok());
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    auto g = ImportModelBytes(bytes.substr(0, cut), "");
    if (!g.ok()) {
      EXPECT_FALSE(g.status().message().empty());
    }
  }
}

TEST(Malformed, RandomByteFlipsNeverCrash) {
  std::string bytes = Bytes(ConvReluGemm());
  std::mt19937 rng(7);
  for (int i = 0; i < 3000; ++i) {
    std::string b = bytes;
    for (int k = 0; k < 3; ++k) b[rng() % b.size()] = static_cast<char>(rng());
    (void)ImportModelBytes(b, "").ok();
  }
  EXPECT_FALSE(ImportModelBytes(std::string(1000, '\xff'), "").ok());
}

TEST(Malformed, NegativeDims) {
  onnx::ModelProto m = Small();
  m.mutable_graph()->mutable_initializer(0)->set_dims(0, -2);
  ExpectError(m, {"tensor 'w'", "negative"});
  onnx::ModelProto m2 = Small();
  m2.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(-3);
  ExpectError(m2, {"graph input 'x'", "negative"});
}

TEST(Malformed, DimsProductOverflows) {
  onnx::ModelProto m = Small();
  auto* t = m.mutable_graph()->mutable_initializer(0);
  t->clear_dims();
  t->add_dims(int64_t{1} << 40);
  t->add_dims(int64_t{1} << 40);
  ExpectError(m, {"tensor 'w'", "overflow"});
  // A product that fits int64 but not as bytes.
  t->clear_dims();
  t->add_dims(int64_t{1} << 62);
  ExpectError(m, {"tensor 'w'", "overflow"});
}

TEST(Malformed, RawDataTooShort) {
  onnx::ModelProto m = Small();
  m.mutable_graph()->mutable_initializer(0)->mutable_raw_data()->resize(20);
  ExpectError(m, {"tensor 'w'", "raw_data has 20 bytes, expected 24"});
}

TEST(Malformed, TypedFieldCountMismatch) {
  onnx::ModelProto m = Small();
  auto* t = m.mutable_graph()->mutable_initializer(0);
  t->clear_raw_data();
  for (int i = 0; i < 5; ++i) t->add_float_data(1.0f);
  ExpectError(m, {"tensor 'w'", "5 elements, expected 6"});
  auto* h = m.mutable_graph()->mutable_initializer(0);
  h->clear_float_data();
  h->set_data_type(onnx::TensorProto::FLOAT16);
  for (int i = 0; i < 6; ++i) h->add_int32_data(i == 3 ? 70000 : 0);
  ExpectError(m, {"tensor 'w'", "int32_data[3]"});
}

// Several missing op types are named in one error, each once with its first
// node and how many more use it.
TEST(Malformed, AllUnknownOpTypesAreNamedAtOnce) {
  onnx::ModelProto m = Small();
  AddNode(m, "Foo", {"y"}, {"z1"}, "foo_1");
  AddNode(m, "Bar", {"z1"}, {"z2"}, "bar_1");
  AddNode(m, "Foo", {"z2"}, {"z3"}, "foo_2");
  AddNode(m, "Foo", {"z3"}, {"z4"}, "foo_3");
  ExpectError(m, {"2 unsupported op types: 'Foo' (domain '', opset 17) in node 'foo_1' and 2 more nodes; "
                  "'Bar' (domain '', opset 17) in node 'bar_1'"});
}

TEST(Malformed, UnknownOpNamesNodeOpDomainAndOpset) {
  onnx::ModelProto m = Small();
  AddNode(m, "Foo", {"y"}, {"z"}, "foo_1");
  ExpectError(m, {"unsupported op 'Foo' (domain '', opset 17) in node 'foo_1'"});
  onnx::ModelProto d = Small();
  auto* op = d.add_opset_import();
  op->set_domain("com.example");
  op->set_version(2);
  AddNode(d, "Relu", {"y"}, {"z"}, "custom")->set_domain("com.example");
  ExpectError(d, {"unsupported op 'Relu' (domain 'com.example', opset 2) in node 'custom'"});
  // An imported domain that no node uses is fine.
  onnx::ModelProto unused = Small();
  *unused.add_opset_import() = *op;
  EXPECT_TRUE(ImportModelBytes(Bytes(unused), "").ok());
  // An op newer than the model's opset.
  onnx::ModelProto ln = NewModel(13);
  AddInput(ln, "x", {2, 3});
  AddInitializer(ln, "s", {3});
  AddNode(ln, "LayerNormalization", {"x", "s"}, {"y"}, "ln");
  AddOutput(ln, "y");
  ExpectError(ln, {"'LayerNormalization'", "opset 13", "needs opset 17"});
}

TEST(Malformed, SubgraphAttribute) {
  onnx::ModelProto m = Small();
  auto* a = m.mutable_graph()->mutable_node(1)->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name("sub");
  ExpectError(m, {"Relu node 'relu'", "'body'", "subgraph"});
  onnx::ModelProto i = Small();
  AddNode(i, "If", {"y"}, {"z"}, "if_1");
  ExpectError(i, {"If node 'if_1' has no then_branch graph"});
}

TEST(Malformed, OpsetAndIrVersionBounds) {
  ExpectError(NewModel(5), {"opset 5"});
  ExpectError(NewModel(30), {"opset 30"});
  ExpectError(NewModel(17, 99), {"IR version 99"});
  onnx::ModelProto none = Small();
  none.clear_opset_import();
  ExpectError(none, {"no default-domain"});
}

// The newest versions that onnx 1.23 writes import (opset 28, IR 14); the
// element types they add are refused by name.
TEST(Malformed, NewestOpsetAndIrImportAndNewTypesAreNamed) {
  onnx::ModelProto m = Small();
  m.set_ir_version(14);
  m.mutable_opset_import(0)->set_version(28);
  EXPECT_TRUE(ImportModelBytes(Bytes(m), "").ok());
  ExpectError(NewModel(29), {"opset 29", "7..28"});
  ExpectError(NewModel(17, 15), {"IR version 15", "3..14"});
  for (auto [code, name] : {std::pair{23, "FLOAT4E2M1 (23)"}, {24, "FLOAT8E8M0 (24)"}, {26, "INT2 (26)"}}) {
    onnx::ModelProto t = Small();
    t.set_ir_version(14);
    t.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(code);
    ExpectError(t, {"input 'x'", name, "not supported"});
  }
}

TEST(Malformed, UnknownInputName) {
  onnx::ModelProto m = Small();
  m.mutable_graph()->mutable_node(1)->set_input(0, "nowhere");
  ExpectError(m, {"node 'relu'", "'nowhere'"});
  onnx::ModelProto o = Small();
  AddOutput(o, "ghost");
  ExpectError(o, {"graph output 'ghost'"});
}

TEST(Malformed, Cycle) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2});
  AddNode(m, "Add", {"x", "b"}, {"a"}, "n1");
  AddNode(m, "Relu", {"a"}, {"b"}, "n2");
  AddOutput(m, "b");
  ExpectError(m, {"cycle", "node 'n1'"});
  onnx::ModelProto self = NewModel(17);
  AddInput(self, "x", {2});
  AddNode(self, "Add", {"x", "s"}, {"s"}, "loop");
  AddOutput(self, "s");
  ExpectError(self, {"cycle", "node 'loop'"});
}

TEST(Malformed, DuplicateNames) {
  onnx::ModelProto m = Small();
  AddNode(m, "Neg", {"x"}, {"a"}, "dup");
  ExpectError(m, {"value name 'a' is defined twice", "node 'dup'"});
  onnx::ModelProto i = Small();
  AddNode(i, "Neg", {"y"}, {"w"}, "shadow");
  ExpectError(i, {"'w' is defined twice"});
  onnx::ModelProto inits = Small();
  AddInitializer(inits, "w", {1});
  ExpectError(inits, {"'w' is defined twice"});
}

TEST(Malformed, HugeAttributeList) {
  onnx::ModelProto m = Small();
  std::vector<int64_t> big((1 << 20) + 1, 1);
  SetInts(m.mutable_graph()->mutable_node(1), "pads", big);
  ExpectError(m, {"node 'relu'", "'pads'", "more than 1048576"});
  onnx::ModelProto twice = Small();
  SetInt(twice.mutable_graph()->mutable_node(1), "k", 1);
  SetInt(twice.mutable_graph()->mutable_node(1), "k", 2);
  ExpectError(twice, {"'k' is given twice"});
}

TEST(Malformed, WrongInputCountAndLongNames) {
  onnx::ModelProto m = Small();
  *m.mutable_graph()->mutable_node(1)->add_input() = "x";
  ExpectError(m, {"Relu node 'relu' has 2 inputs"});
  onnx::ModelProto n = Small();
  n.mutable_graph()->mutable_node(1)->mutable_name()->append(5000, 'n');
  ExpectError(n, {"node name is 5004 bytes long"});
}

// ONNX's LSTM has 3 outputs: a fourth, amptrain's internal reserve slot
// (ir/rnn.h), is not a file's to give.
TEST(Malformed, RecurrentLayerWithTheInternalReserveOutput) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {5, 3, 2});
  AddInitializer(m, "w", {1, 16, 2});
  AddInitializer(m, "r", {1, 16, 4});
  AddNode(m, "LSTM", {"x", "w", "r"}, {"y", "yh", "yc", "reserve"}, "lstm");
  AddOutput(m, "y");
  ExpectError(m, {"LSTM node 'lstm' has 4 outputs, expected 0..3"});
}

// ---- external data ----------------------------------------------------------

class ExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    // One folder per test: ctest may run the tests of this fixture in parallel.
    root_ = fs::path(AMPTRAIN_BINARY_DIR) /
            (std::string("importer_test_external_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "model" / "sub");
    std::vector<float> w = {1, 2, 3, 4, 5, 6};
    std::string bytes(reinterpret_cast<const char*>(w.data()), w.size() * 4);
    std::ofstream(root_ / "model" / "weights.bin", std::ios::binary) << std::string(8, '\0') << bytes;
    std::ofstream(root_ / "outside.bin", std::ios::binary) << bytes;
    fs::create_symlink(root_ / "outside.bin", root_ / "model" / "link.bin");
    fs::create_directory_symlink(root_, root_ / "model" / "updir");
  }
  void TearDown() override { fs::remove_all(root_); }

  // Small() with "w" stored externally.
  onnx::ModelProto WithExternal(const std::string& location, const std::string& offset, const std::string& length) {
    onnx::ModelProto m = Small();
    auto* t = m.mutable_graph()->mutable_initializer(0);
    t->clear_raw_data();
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const std::string& k, const std::string& v) {
      if (v.empty()) return;
      auto* kv = t->add_external_data();
      kv->set_key(k);
      kv->set_value(v);
    };
    add("location", location);
    add("offset", offset);
    add("length", length);
    return m;
  }
  std::string dir() const { return (root_ / "model").string(); }

  fs::path root_;
};

TEST_F(ExternalData, ValidReferenceLoads) {
  auto g = ImportModelBytes(Bytes(WithExternal("weights.bin", "8", "24")), dir());
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ((*g)->ConstantValue((*g)->FindValue("w"))->GetAsDouble(5), 6.0);
  fs::copy_file(root_ / "model" / "weights.bin", root_ / "model" / "sub" / "w.bin");
  EXPECT_TRUE(ImportModelBytes(Bytes(WithExternal("./sub/w.bin", "8", "")), dir()).ok());
}

TEST_F(ExternalData, NotAllowedWithoutModelDir) {
  ExpectError(WithExternal("weights.bin", "8", "24"), {"tensor 'w'", "external data is not allowed"});
}

TEST_F(ExternalData, ParentComponentRejected) {
  ExpectError(WithExternal("../outside.bin", "", "24"), {"tensor 'w'", "'..'"}, dir());
  ExpectError(WithExternal("sub/../../outside.bin", "", "24"), {"'..'"}, dir());
}

TEST_F(ExternalData, AbsolutePathRejected) {
  ExpectError(WithExternal((root_ / "outside.bin").string(), "", "24"), {"absolute path"}, dir());
}

TEST_F(ExternalData, SymlinksRejected) {
  ExpectError(WithExternal("link.bin", "", "24"), {"symlink"}, dir());
  ExpectError(WithExternal("updir/outside.bin", "", "24"), {"symlink"}, dir());
}

// Issue 9 F17: a hard link inside the folder to a file outside it was read.
TEST_F(ExternalData, HardLinksRejected) {
  fs::create_hard_link(root_ / "outside.bin", root_ / "model" / "hard.bin");
  ExpectError(WithExternal("hard.bin", "", "24"), {"hard links"}, dir());
}

TEST_F(ExternalData, OffsetLengthPastEof) {
  ExpectError(WithExternal("weights.bin", "16", "24"), {"past the end"}, dir());
  ExpectError(WithExternal("weights.bin", "9223372036854775807", "24"), {"past the end"}, dir());
  ExpectError(WithExternal("weights.bin", "0", "16"), {"length 16 differs"}, dir());
  ExpectError(WithExternal("weights.bin", "-1", "24"), {"offset '-1'"}, dir());
  ExpectError(WithExternal("missing.bin", "", ""), {"missing.bin"}, dir());
}

// Found by fuzz_onnx_model (tests/fuzz): a 200-byte model whose external
// tensor declared 2^40 floats had them allocated (4 TiB; under ASan an abort)
// before the file's size was checked.
TEST_F(ExternalData, HugeDimsRefusedBeforeAllocating) {
  onnx::ModelProto m = WithExternal("weights.bin", "8", "24");
  auto* t = m.mutable_graph()->mutable_initializer(0);
  t->clear_dims();
  t->add_dims(int64_t{1} << 20);
  t->add_dims(int64_t{1} << 20);
  ExpectError(m, {"tensor 'w'", "differs from the tensor's 4398046511104 bytes"}, dir());
}

// Found by fuzz_onnx_model: Expand to a shape input of 101 entries gave a
// rank-101 value, more than a declared type may have (64); the exported model
// then failed to import.
// The node-count bound (docs/limits.md): one node over it is refused
// before any node is read.
TEST(Malformed, NodeCountOverTheLimit) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2});
  const int n = (1 << 20) + 1;
  std::string prev = "x";
  for (int i = 0; i < n; ++i) {
    std::string out = "v" + std::to_string(i);
    AddNode(m, "Relu", {prev}, {out}, "");
    prev = out;
  }
  AddOutput(m, prev);
  ExpectError(m, {"the graph has 1048577 nodes, more than the limit of 1048576"});
}

TEST(Malformed, InferredRankOverTheLimit) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {3});
  AddInput(m, "shape", {101}, onnx::TensorProto::INT64);
  AddNode(m, "Expand", {"x", "shape"}, {"y"}, "expand");
  AddOutput(m, "y");
  ExpectError(m, {"node 'expand' (Expand)", "rank 101", "more than 64"});
}

// torch.onnx's dynamo exporter (optimize=False) writes a bias-free Conv3d's
// bias as Expand(CastLike(0, X), Concat(Shape(W)[:1], [2])): zeros of shape
// [M, 2]. Such a Conv imports without the bias (it adds nothing) and the
// Expand's chain goes; an Expand of anything but a zero Constant (a nonzero
// value, or an initializer a user may train) stays the error it is.
onnx::ModelProto ExpandedBias(float value, bool initializer) {
  onnx::ModelProto m = NewModel(20);
  AddInput(m, "x", {1, 2, 3, 4, 4});
  AddInitializer(m, "w", {3, 2, 1, 1, 1});
  if (initializer) {
    FillFloats(m.mutable_graph()->add_initializer(), "zero", {}, {value});
  } else {
    auto* c = AddNode(m, "Constant", {}, {"zero"}, "zero_node");
    auto* a = c->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    FillFloats(a->mutable_t(), "zero", {}, {value});
  }
  AddNode(m, "CastLike", {"zero", "x"}, {"zero_like"}, "castlike");
  auto int64 = [&](const std::string& name, int64_t v) {
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(1);
    t->add_int64_data(v);
  };
  int64("s0", 0);
  int64("s1", 1);
  int64("two", 2);
  AddNode(m, "Shape", {"w"}, {"w_shape"}, "shape");
  AddNode(m, "Slice", {"w_shape", "s0", "s1"}, {"m"}, "slice");
  SetInt(AddNode(m, "Concat", {"m", "two"}, {"bias_shape"}, "concat"), "axis", 0);
  AddNode(m, "Expand", {"zero_like", "bias_shape"}, {"bias"}, "expand");
  SetInts(AddNode(m, "Conv", {"x", "w", "bias"}, {"y"}, "node_conv3d"), "kernel_shape", {1, 1, 1});
  AddOutput(m, "y");
  return m;
}

TEST(Malformed, DynamoZeroConv3dBiasOfShapeM2ImportsWithoutIt) {
  auto g = ImportModelBytes(Bytes(ExpandedBias(0.0f, false)), "");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  for (const ir::Node* n : (*g)->nodes()) {
    EXPECT_NE(n->op(), ir::OpKind::kExpand) << "the bias's chain is left";
    if (n->op() == ir::OpKind::kConv) {
      EXPECT_FALSE(n->has_input(2));
    }
  }
  for (auto [value, initializer] : {std::pair{1.0f, false}, std::pair{0.0f, true}}) {
    auto bad = ImportModelBytes(Bytes(ExpandedBias(value, initializer)), "");
    ASSERT_FALSE(bad.ok()) << value << " " << initializer;
    EXPECT_NE(bad.status().ToString().find("bias has shape [3,2], expected [3]"), std::string::npos)
        << bad.status().ToString();
  }
}

}  // namespace
}  // namespace amptrain::importer
