// Older-opset encodings -> canonical IR form on import, and back on export.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "importer/onnx_export.h"
#include "importer/onnx_import.h"
#include "tests/importer/model_builder.h"

namespace amptrain::importer {
namespace {

using namespace testing;  // NOLINT
using ir::OpKind;

std::unique_ptr<ir::Graph> MustImport(const onnx::ModelProto& m) {
  auto g = ImportModelBytes(Bytes(m), "");
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? std::move(g).value() : nullptr;
}

const ir::Node* FindOp(const ir::Graph& g, OpKind op) {
  for (const ir::Node* n : g.nodes())
    if (n->op() == op) return n;
  return nullptr;
}

onnx::ModelProto Export(const ir::Graph& g, int64_t opset = 0) {
  ExportOptions o;
  o.opset = opset;
  auto bytes = ExportModelBytes(g, o);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  onnx::ModelProto m;
  if (bytes.ok()) {
    EXPECT_TRUE(m.ParseFromString(*bytes));
  }
  return m;
}

const onnx::NodeProto* FindNode(const onnx::ModelProto& m, const std::string& op) {
  for (const auto& n : m.graph().node())
    if (n.op_type() == op) return &n;
  return nullptr;
}

const onnx::AttributeProto* FindAttr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

onnx::ModelProto ReduceMeanModel(int64_t opset) {
  onnx::ModelProto m = NewModel(opset);
  AddInput(m, "x", {-1, 4, 5});
  auto* r = AddNode(m, "ReduceMean", {"x"}, {"y"}, "mean");
  SetInts(r, "axes", {-1});
  SetInt(r, "keepdims", 0);
  AddOutput(m, "y");
  return m;
}

TEST(OpsetAdapters, ReduceMeanAxesAttributeBecomesInputAndBack) {
  auto g = MustImport(ReduceMeanModel(13));
  ASSERT_TRUE(g);
  const ir::Node* r = FindOp(*g, OpKind::kReduceMean);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->attrs().Has("axes"));
  ASSERT_TRUE(r->has_input(1));
  const ir::Tensor* axes = g->ConstantValue(r->input(1));
  ASSERT_TRUE(axes);
  EXPECT_EQ(axes->dtype(), ir::DType::kInt64);
  EXPECT_EQ(axes->ToInt64Vector(), std::vector<int64_t>{-1});
  EXPECT_EQ(g->type(g->outputs()[0]).ToString(), "float32[N,4]");

  onnx::ModelProto out = Export(*g);  // the imported opset, 13
  EXPECT_EQ(out.opset_import(0).version(), 13);
  ASSERT_EQ(out.graph().node_size(), 1) << "the axes Constant should be gone";
  const onnx::NodeProto& n = out.graph().node(0);
  EXPECT_EQ(n.input_size(), 1);
  const auto* a = FindAttr(n, "axes");
  ASSERT_TRUE(a);
  ASSERT_EQ(a->ints_size(), 1);
  EXPECT_EQ(a->ints(0), -1);

  onnx::ModelProto new_form = Export(*g, 18);
  const onnx::NodeProto* n18 = FindNode(new_form, "ReduceMean");
  ASSERT_TRUE(n18);
  EXPECT_EQ(n18->input_size(), 2);
  EXPECT_FALSE(FindAttr(*n18, "axes"));
  EXPECT_TRUE(FindNode(new_form, "Constant"));
}

TEST(OpsetAdapters, NonConstantAxesCannotBeWrittenAsAttribute) {
  onnx::ModelProto m = NewModel(18);
  AddInput(m, "x", {2, 3});
  AddInput(m, "axes", {1}, onnx::TensorProto::INT64);
  AddNode(m, "ReduceMean", {"x", "axes"}, {"y"}, "dyn");
  AddOutput(m, "y");
  auto g = MustImport(m);
  ASSERT_TRUE(g);
  ExportOptions o;
  o.opset = 13;
  auto bytes = ExportModelBytes(*g, o);
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().message().find("ReduceMean node 'dyn'"), std::string::npos) << bytes.status().message();
  EXPECT_TRUE(ExportModelBytes(*g).ok());  // opset 18 has axes as an input
}

TEST(OpsetAdapters, SqueezeUnsqueezeSplitDropoutAttributes) {
  onnx::ModelProto m = NewModel(11);
  AddInput(m, "x", {1, 6});
  SetInts(AddNode(m, "Squeeze", {"x"}, {"s"}, "sq"), "axes", {0});
  SetInts(AddNode(m, "Unsqueeze", {"s"}, {"u"}, "unsq"), "axes", {1});
  auto* split = AddNode(m, "Split", {"u"}, {"p0", "p1"}, "split");
  SetInts(split, "split", {2, 4});
  SetInt(split, "axis", 0);
  SetFloat(AddNode(m, "Dropout", {"p1"}, {"d"}, "drop"), "ratio", 0.25f);
  AddOutput(m, "p0");
  AddOutput(m, "d");
  auto g = MustImport(m);
  ASSERT_TRUE(g);
  for (OpKind op : {OpKind::kSqueeze, OpKind::kUnsqueeze, OpKind::kSplit, OpKind::kDropout}) {
    const ir::Node* n = FindOp(*g, op);
    ASSERT_TRUE(n);
    ASSERT_TRUE(n->has_input(1)) << n->Describe();
    EXPECT_TRUE(g->ConstantValue(n->input(1))) << n->Describe();
    EXPECT_FALSE(n->attrs().Has("axes") || n->attrs().Has("split") || n->attrs().Has("ratio")) << n->Describe();
  }
  EXPECT_EQ(g->ConstantValue(FindOp(*g, OpKind::kDropout)->input(1))->GetAsDouble(0), 0.25);
  EXPECT_EQ(g->type(g->outputs()[0]).ToString(), "float32[2,1]");
  EXPECT_EQ(g->type(g->outputs()[1]).ToString(), "float32[4,1]");

  onnx::ModelProto out = Export(*g);
  EXPECT_EQ(out.graph().node_size(), 4);
  EXPECT_FALSE(FindNode(out, "Constant"));
  EXPECT_EQ(FindAttr(*FindNode(out, "Split"), "split")->ints_size(), 2);
  EXPECT_EQ(FindAttr(*FindNode(out, "Dropout"), "ratio")->f(), 0.25f);
  auto again = ImportModelBytes(Bytes(out), "");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
}

onnx::ModelProto BatchNormModel(int64_t opset, bool use_saved_mean) {
  onnx::ModelProto m = NewModel(opset);
  AddInput(m, "x", {2, 3, 4, 4});
  for (const char* p : {"scale", "bias", "mean", "var"}) AddInitializer(m, p, {3});
  auto* bn = AddNode(m, "BatchNormalization", {"x", "scale", "bias", "mean", "var"},
                     {"y", "running_mean", "running_var", "saved_mean", "saved_var"}, "bn");
  SetFloat(bn, "momentum", 0.9f);
  AddOutput(m, "y");
  AddOutput(m, "running_mean");
  if (use_saved_mean) AddOutput(m, "saved_mean");
  return m;
}

TEST(OpsetAdapters, BatchNormFiveOutputTrainingForm) {
  auto g = MustImport(BatchNormModel(13, false));
  ASSERT_TRUE(g);
  const ir::Node* bn = FindOp(*g, OpKind::kBatchNormalization);
  ASSERT_TRUE(bn);
  EXPECT_EQ(bn->name(), "bn");
  ASSERT_EQ(bn->num_outputs(), 3u);
  EXPECT_EQ(bn->attrs().Int("training_mode", 0), 1);
  EXPECT_EQ(bn->output_info(0).name, "y");
  EXPECT_EQ(bn->output_info(2).name, "running_var");
  EXPECT_EQ(g->outputs()[1], bn->output(1));
  EXPECT_EQ(g->type(bn->output(1)).ToString(), "float32[3]");

  onnx::ModelProto old = Export(*g);  // opset 13: five outputs, no training_mode
  const onnx::NodeProto* n = FindNode(old, "BatchNormalization");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->output_size(), 5);
  EXPECT_EQ(n->output(1), "running_mean");
  EXPECT_FALSE(FindAttr(*n, "training_mode"));
  onnx::ModelProto now = Export(*g, 15);
  const onnx::NodeProto* n15 = FindNode(now, "BatchNormalization");
  EXPECT_EQ(n15->output_size(), 3);
  ASSERT_TRUE(FindAttr(*n15, "training_mode"));
  EXPECT_EQ(FindAttr(*n15, "training_mode")->i(), 1);

  auto used = ImportModelBytes(Bytes(BatchNormModel(13, true)), "");
  ASSERT_FALSE(used.ok());
  EXPECT_NE(used.status().message().find("BatchNormalization node 'bn': output 3 (saved_mean) is used"),
            std::string::npos)
      << used.status().message();
}

onnx::ModelProto SoftmaxModel(int64_t opset, int64_t axis) {
  onnx::ModelProto m = NewModel(opset);
  AddInput(m, "x", {-1, 3, 4, 5});
  SetInt(AddNode(m, "Softmax", {"x"}, {"y"}, "sm"), "axis", axis);
  AddOutput(m, "y");
  return m;
}

TEST(OpsetAdapters, SoftmaxOpset11AxisOneOnRankFour) {
  auto g = MustImport(SoftmaxModel(11, 1));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->TopologicalOrder()->size(), 4u);  // Flatten, Softmax, shape Constant, Reshape
  const ir::Node* sm = FindOp(*g, OpKind::kSoftmax);
  ASSERT_TRUE(sm);
  EXPECT_EQ(sm->attrs().Int("axis", 0), -1);
  EXPECT_EQ(g->producer(sm->input(0))->op(), OpKind::kFlatten);
  EXPECT_EQ(g->producer(sm->input(0))->attrs().Int("axis", 0), 1);
  EXPECT_EQ(g->type(sm->output(0)).ToString(), "float32[N,60]");
  ir::Value y = g->outputs()[0];
  EXPECT_EQ(g->name(y), "y");
  EXPECT_EQ(g->producer(y)->op(), OpKind::kReshape);
  EXPECT_EQ(g->type(y).ToString(), "float32[N,3,4,5]");
  // Written back to opset 11: the Softmax is on the last dim of its 2-D input.
  onnx::ModelProto out = Export(*g);
  const onnx::NodeProto* n = FindNode(out, "Softmax");
  ASSERT_TRUE(n);
  EXPECT_EQ(FindAttr(*n, "axis")->i(), -1);
  EXPECT_TRUE(ImportModelBytes(Bytes(out), "").ok());
}

TEST(OpsetAdapters, SoftmaxOpset11TwoUnknownDimsRestoresShapeOfInput) {
  onnx::ModelProto m = NewModel(11);
  AddInput(m, "x", {-1, -1, 4});
  AddNode(m, "LogSoftmax", {"x"}, {"y"}, "lsm");  // axis defaults to 1 before opset 13
  AddOutput(m, "y");
  auto g = MustImport(m);
  ASSERT_TRUE(g);
  const ir::Node* flat = FindOp(*g, OpKind::kFlatten);
  ASSERT_TRUE(flat);
  EXPECT_EQ(flat->attrs().Int("axis", 0), 1);
  const ir::Node* reshape = g->producer(g->outputs()[0]);
  EXPECT_EQ(reshape->op(), OpKind::kReshape);
  EXPECT_EQ(g->producer(reshape->input(1))->op(), OpKind::kShape);
  EXPECT_EQ(g->type(g->outputs()[0]).shape.rank(), 3u);
}

TEST(OpsetAdapters, SoftmaxOpset11LastAxisNeedsNoRewrite) {
  auto g = MustImport(SoftmaxModel(11, 3));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->TopologicalOrder()->size(), 1u);
  EXPECT_EQ(FindOp(*g, OpKind::kSoftmax)->attrs().Int("axis", 0), -1);
  // A canonical Softmax on a middle axis cannot be written for opset 11.
  auto mid = MustImport(SoftmaxModel(13, 1));
  ASSERT_TRUE(mid);
  ExportOptions o;
  o.opset = 11;
  auto bytes = ExportModelBytes(*mid, o);
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().message().find("Softmax node 'sm'"), std::string::npos);
}

TEST(OpsetAdapters, OpNewerThanTargetOpset) {
  onnx::ModelProto m = NewModel(18);
  AddInput(m, "x", {2, 3});
  AddNode(m, "Mish", {"x"}, {"y"}, "mish");
  AddOutput(m, "y");
  auto g = MustImport(m);
  ASSERT_TRUE(g);
  ExportOptions o;
  o.opset = 17;
  auto bytes = ExportModelBytes(*g, o);
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().message().find("Mish node 'mish': op needs opset 18"), std::string::npos)
      << bytes.status().message();
}

// LayerNormalization (opset 17) is written below 17 as ReduceMean / Sub /
// Mul / Add / Sqrt / Div; a used Mean / InvStdDev output cannot be.
TEST(OpsetAdapters, LayerNormalizationBelowOpset17IsDecomposed) {
  for (bool mean_used : {false, true}) {
    SCOPED_TRACE(mean_used ? "mean output used" : "Y only");
    onnx::ModelProto m = NewModel(17);
    AddInput(m, "x", {2, 3, 4});
    AddInitializer(m, "s", {4});
    AddInitializer(m, "b", {4});
    std::vector<std::string> outs = {"y"};
    if (mean_used) outs.push_back("mean");
    SetInt(AddNode(m, "LayerNormalization", {"x", "s", "b"}, outs, "ln"), "axis", -1);
    for (const std::string& o : outs) AddOutput(m, o);
    auto g = MustImport(m);
    ASSERT_TRUE(g);
    ExportOptions o;
    o.opset = 13;
    auto bytes = ExportModelBytes(*g, o);
    if (mean_used) {
      ASSERT_FALSE(bytes.ok());
      EXPECT_NE(bytes.status().message().find("LayerNormalization node 'ln'"), std::string::npos)
          << bytes.status().message();
      continue;
    }
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    onnx::ModelProto out;
    ASSERT_TRUE(out.ParseFromString(*bytes));
    std::map<std::string, int> ops;
    for (const auto& n : out.graph().node()) {
      ++ops[n.op_type()];
      if (n.op_type() == "ReduceMean") {  // opset 13: axes is an attribute
        ASSERT_EQ(n.input_size(), 1);
        ASSERT_EQ(n.attribute_size(), 2);
      }
    }
    EXPECT_EQ(ops["LayerNormalization"], 0);
    EXPECT_EQ(ops["ReduceMean"], 2);
    EXPECT_EQ(ops["Sqrt"], 1);
    EXPECT_EQ(ops["Div"], 1);
    EXPECT_EQ(out.graph().output(0).name(), "y");
  }
}

TEST(OpsetAdapters, IrOnlyOpsAreNotExported) {
  ir::Graph g;
  ir::Value x = g.AddInput("x", ir::TensorType::Of(ir::DType::kFloat32, {2}));
  ir::Node* r = g.AddNode(OpKind::kReluGrad, {x, x}, 1, "relu_grad");
  g.AddOutput(r->output(0));
  auto bytes = ExportModelBytes(g);
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().message().find("ReluGrad node 'relu_grad'"), std::string::npos) << bytes.status().message();
}

// dynamo's x.chunk / x.split without optimization: SplitToSequence read by
// SequenceAt at constant positions imports as Slices (the piece shapes
// show the ranges: chunks of 2 of a dim of 5, sizes [1, 4] read from the
// end, pieces of 1 squeezed); a sequence used otherwise is still refused.
TEST(SequenceSplits, SplitToSequenceWithSequenceAtBecomesSlices) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2, 5, 3});
  auto ints = [&](const std::string& name, const std::vector<int64_t>& v, bool scalar) {
    onnx::TensorProto* t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    if (!scalar) t->add_dims(static_cast<int64_t>(v.size()));
    for (int64_t x : v) t->add_int64_data(x);
  };
  ints("two", {2}, true);
  ints("sizes", {1, 4}, false);
  ints("p0", {0}, true);
  ints("p2", {2}, true);
  ints("pm1", {-1}, true);
  ints("p4", {4}, true);
  SetInt(AddNode(m, "SplitToSequence", {"x", "two"}, {"chunks"}, "chunk"), "axis", 1);
  AddNode(m, "SequenceAt", {"chunks", "p0"}, {"c0"});
  AddNode(m, "SequenceAt", {"chunks", "p2"}, {"c2"});
  SetInt(AddNode(m, "SplitToSequence", {"x", "sizes"}, {"parts"}, "split"), "axis", -2);
  AddNode(m, "SequenceAt", {"parts", "pm1"}, {"last"});
  auto* ones = AddNode(m, "SplitToSequence", {"x"}, {"singles"}, "unbind");
  SetInt(ones, "axis", 1);
  SetInt(ones, "keepdims", 0);
  AddNode(m, "SequenceAt", {"singles", "p4"}, {"s4"});
  for (const char* o : {"c0", "c2", "last", "s4"}) AddOutput(m, o);
  auto g = MustImport(m);
  ASSERT_TRUE(g);
  EXPECT_FALSE(FindOp(*g, OpKind::kSplit));
  auto type = [&](const char* name) { return g->type(g->FindValue(name)).ToString(); };
  EXPECT_EQ(type("c0"), "float32[2,2,3]");
  EXPECT_EQ(type("c2"), "float32[2,1,3]");
  EXPECT_EQ(type("last"), "float32[2,4,3]");
  EXPECT_EQ(type("s4"), "float32[2,3]");

  onnx::ModelProto other = NewModel(17);
  AddInput(other, "x", {2, 5});
  AddNode(other, "SplitToSequence", {"x"}, {"seq"}, "to_seq");
  AddNode(other, "ConcatFromSequence", {"seq"}, {"y"}, "back");
  AddOutput(other, "y");
  auto refused = ImportModelBytes(Bytes(other), "");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("'SplitToSequence' (domain"), std::string::npos)
      << refused.status().message();
}

}  // namespace
}  // namespace amptrain::importer

namespace amptrain::importer {
namespace {

using namespace testing;  // NOLINT
using ir::OpKind;

size_t CountOp(const ir::Graph& g, OpKind op) {
  size_t n = 0;
  for (const ir::Node* node : g.nodes()) n += node->op() == op;
  return n;
}

// InstanceNormalization becomes LayerNormalization over the spatial dims plus
// a per-channel Mul/Add. A Constant scale of ones / bias of zeros (GroupNorm's
// export) drops its Mul / Add; an initializer of ones does not: it is a
// parameter (nn.InstanceNorm2d(affine=True) starts at ones / zeros), and
// dropping it would leave it untrained.
TEST(Lowerings, InstanceNormKeepsItsParametersAndDropsConstantIdentities) {
  for (bool constant : {false, true}) {
    SCOPED_TRACE(constant ? "Constant ones/zeros" : "initializers of ones/zeros");
    onnx::ModelProto m = NewModel(17);
    AddInput(m, "x", {2, 3, 4, 5});
    std::vector<float> ones(3, 1.0f), zeros(3, 0.0f);
    if (constant) {
      for (auto [name, v] : {std::pair{"s", &ones}, std::pair{"b", &zeros}}) {
        auto* c = AddNode(m, "Constant", {}, {name});
        auto* a = c->add_attribute();
        a->set_name("value");
        a->set_type(onnx::AttributeProto::TENSOR);
        FillFloats(a->mutable_t(), "", {3}, *v);
      }
    } else {
      FillFloats(m.mutable_graph()->add_initializer(), "s", {3}, ones);
      FillFloats(m.mutable_graph()->add_initializer(), "b", {3}, zeros);
    }
    SetFloat(AddNode(m, "InstanceNormalization", {"x", "s", "b"}, {"y"}, "in"), "epsilon", 1e-3f);
    AddOutput(m, "y");
    auto g = MustImport(m);
    ASSERT_TRUE(g);
    EXPECT_EQ(CountOp(*g, OpKind::kInstanceNormalization), 0u);
    EXPECT_EQ(CountOp(*g, OpKind::kLayerNormalization), 1u);
    EXPECT_EQ(CountOp(*g, OpKind::kMul), constant ? 0u : 1u);
    EXPECT_EQ(CountOp(*g, OpKind::kAdd), constant ? 0u : 1u);
    EXPECT_EQ(g->type(g->FindValue("y")).ToString(), "float32[2,3,4,5]");
  }
}

// Symbolic dims (a dynamic batch, or here H) lower to shapes computed at run
// time; static ones fold to constants.
TEST(Lowerings, SymbolicDimsLowerToRunTimeShapes) {
  onnx::ModelProto m = NewModel(17);
  auto* x = AddInput(m, "x", {1, 8, 4, 4});
  x->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(2)->set_dim_param("h");
  SetInt(AddNode(m, "DepthToSpace", {"x"}, {"y"}, "d2s"), "blocksize", 2);
  AddOutput(m, "y");
  auto g = MustImport(m);
  ASSERT_TRUE(g);
  EXPECT_EQ(CountOp(*g, OpKind::kDepthToSpace), 0u);
  EXPECT_EQ(CountOp(*g, OpKind::kShape), 1u);
  EXPECT_EQ(g->type(g->FindValue("y")).shape.rank(), 4u);
  onnx::ModelProto s = NewModel(17);
  AddInput(s, "x", {1, 8, 4, 4});
  SetInt(AddNode(s, "DepthToSpace", {"x"}, {"y"}, "d2s"), "blocksize", 2);
  AddOutput(s, "y");
  auto folded = MustImport(s);
  ASSERT_TRUE(folded);
  EXPECT_EQ(CountOp(*folded, OpKind::kShape), 0u);
  EXPECT_EQ(folded->type(folded->FindValue("y")).ToString(), "float32[1,2,8,8]");
}

}  // namespace
}  // namespace amptrain::importer
