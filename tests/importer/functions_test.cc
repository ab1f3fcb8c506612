// Model-local functions inlined at import (importer/inline_functions.cc):
// attribute references bound to the call or the function's default, nested
// calls, unique names for repeated calls, left-out optional inputs and
// outputs, overloads, calls in subgraphs, the refusals (recursion, another
// opset, unknown values), and a model with functions that runs exactly as
// the same model inlined by hand.
#include <gtest/gtest.h>

#include <google/protobuf/unknown_field_set.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "executor/session.h"
#include "importer/import_internal.h"
#include "importer/onnx_import.h"
#include "tests/importer/control_flow_models.h"

namespace amptrain::importer {
namespace {

using namespace testing;  // NOLINT
using ir::OpKind;

onnx::FunctionProto* AddFunction(onnx::ModelProto& m, const std::string& domain, const std::string& name,
                                 const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                                 int64_t opset = 17) {
  onnx::FunctionProto* f = m.add_functions();
  f->set_domain(domain);
  f->set_name(name);
  for (const auto& i : inputs) f->add_input(i);
  for (const auto& o : outputs) f->add_output(o);
  auto* op = f->add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  if (!domain.empty()) {
    bool imported = false;
    for (const auto& o : m.opset_import()) imported = imported || o.domain() == domain;
    if (!imported) {
      auto* d = m.add_opset_import();
      d->set_domain(domain);
      d->set_version(1);
    }
  }
  return f;
}

onnx::NodeProto* AddBody(onnx::FunctionProto* f, const std::string& op, const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs, const std::string& name = "",
                         const std::string& domain = "") {
  onnx::NodeProto* n = f->add_node();
  n->set_op_type(op);
  n->set_name(name);
  n->set_domain(domain);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

onnx::NodeProto* AddCall(onnx::GraphProto* g, const std::string& domain, const std::string& fn,
                         const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                         const std::string& name = "") {
  onnx::NodeProto* n = AddGraphNode(g, fn, inputs, outputs, name);
  n->set_domain(domain);
  return n;
}

void AddRef(onnx::NodeProto* n, const std::string& name, const std::string& ref, onnx::AttributeProto::AttributeType t) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_ref_attr_name(ref);
  a->set_type(t);
}

// FunctionProto.attribute_proto (IR 9) and the overload fields (IR 10) are
// newer than the protos compiled here: a parsed file holds them as unknown
// fields, and so do these.
void AddDefault(onnx::FunctionProto* f, const std::string& name, float value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(value);
  f->mutable_unknown_fields()->AddLengthDelimited(11, a.SerializeAsString());
}
void SetOverload(onnx::FunctionProto* f, const std::string& overload) {
  f->mutable_unknown_fields()->AddLengthDelimited(13, overload);
}
void SetOverload(onnx::NodeProto* n, const std::string& overload) {
  n->mutable_unknown_fields()->AddLengthDelimited(8, overload);
}

// The node named `name`, and its attribute `name`: an empty one, and a
// failure, where there is none.
const onnx::NodeProto& NodeNamed(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& n : g.node())
    if (n.name() == name) return n;
  ADD_FAILURE() << "no node '" << name << "'";
  return onnx::NodeProto::default_instance();
}

const onnx::AttributeProto& Attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a;
  ADD_FAILURE() << "node '" << n.name() << "' has no attribute '" << name << "'";
  return onnx::AttributeProto::default_instance();
}

// The type of `value` in the imported model, or the import's error.
std::string ImportedType(const onnx::ModelProto& m, const std::string& value) {
  auto g = ImportModelBytes(Bytes(m), "");
  if (!g.ok()) return g.status().ToString();
  ir::Value v = (*g)->FindValue(value);
  return v.valid() ? (*g)->type(v).ToString() : "(no value '" + value + "')";
}

// Act(X) = LeakyRelu<alpha = @alpha>(X) + X, alpha defaulting to 0.3, and
// Elu<alpha = @elu_alpha>, an attribute without a default.
onnx::FunctionProto* AddAct(onnx::ModelProto& m) {
  onnx::FunctionProto* f = AddFunction(m, "local", "Act", {"X"}, {"Y"});
  f->add_attribute("elu_alpha");
  AddDefault(f, "alpha", 0.3f);
  AddRef(AddBody(f, "LeakyRelu", {"X"}, {"L"}, "leaky"), "alpha", "alpha", onnx::AttributeProto::FLOAT);
  AddRef(AddBody(f, "Elu", {"L"}, {"E"}, "elu"), "alpha", "elu_alpha", onnx::AttributeProto::FLOAT);
  AddBody(f, "Add", {"E", "X"}, {"Y"}, "add");
  return f;
}

TEST(InlineFunctions, AttributeReferencesTakeTheCallsValueOrTheDefault) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2, 3});
  AddAct(m);
  onnx::GraphProto* g = m.mutable_graph();
  SetFloat(AddCall(g, "local", "Act", {"x"}, {"a"}, "given"), "alpha", 0.05f);
  SetFloat(AddCall(g, "local", "Act", {"a"}, {"y"}, "defaulted"), "elu_alpha", 2.0f);
  AddOutput(m, "y");
  const onnx::ModelProto original = m;
  ASSERT_TRUE(detail::InlineFunctions(m).ok());
  EXPECT_EQ(m.functions_size(), 0);
  ASSERT_EQ(m.graph().node_size(), 6);
  const onnx::NodeProto& leaky = NodeNamed(m.graph(), "given/leaky");
  EXPECT_FLOAT_EQ(Attr(leaky, "alpha").f(), 0.05f);
  EXPECT_TRUE(Attr(leaky, "alpha").ref_attr_name().empty());
  EXPECT_FLOAT_EQ(Attr(NodeNamed(m.graph(), "defaulted/leaky"), "alpha").f(), 0.3f);
  // elu_alpha: no value on the first call and no default, so Elu's own default.
  EXPECT_EQ(NodeNamed(m.graph(), "given/elu").attribute_size(), 0);
  EXPECT_FLOAT_EQ(Attr(NodeNamed(m.graph(), "defaulted/elu"), "alpha").f(), 2.0f);
  // Values: the formal X is the call's input, Y its output, L and E renamed under the call.
  EXPECT_EQ(leaky.input(0), "x");
  EXPECT_EQ(leaky.output(0), "given/L");
  const onnx::NodeProto& add = NodeNamed(m.graph(), "defaulted/add");
  ASSERT_EQ(add.input_size(), 2);
  EXPECT_EQ(add.input(0), "defaulted/E");
  EXPECT_EQ(add.input(1), "a");
  EXPECT_EQ(add.output(0), "y");
  // The functions' own domain is no longer imported; the default one is.
  ASSERT_EQ(m.opset_import_size(), 1);
  EXPECT_EQ(m.opset_import(0).domain(), "");
  EXPECT_EQ(ImportedType(original, "y"), "float32[2,3]");
}

// TorchScript's shape: the model is a function calling a function twice,
// an attribute of the outer call handed down by reference.
TEST(InlineFunctions, NestedCallsPassAttributesDown) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2, 3});
  AddAct(m);
  onnx::FunctionProto* net = AddFunction(m, "__main__", "Net", {"input"}, {"output"});
  net->add_attribute("slope");
  AddRef(AddBody(net, "Act", {"input"}, {"h"}, "Act_0", "local"), "alpha", "slope", onnx::AttributeProto::FLOAT);
  AddBody(net, "Act", {"h"}, {"output"}, "Act_1", "local");
  SetFloat(AddCall(m.mutable_graph(), "__main__", "Net", {"x"}, {"y"}, "/Net"), "slope", 0.125f);
  AddOutput(m, "y");
  const onnx::ModelProto original = m;
  ASSERT_TRUE(detail::InlineFunctions(m).ok());
  std::vector<std::string> names;
  for (const auto& n : m.graph().node()) names.push_back(n.name());
  ASSERT_EQ(names, (std::vector<std::string>{"/Net/Act_0/leaky", "/Net/Act_0/elu", "/Net/Act_0/add",
                                             "/Net/Act_1/leaky", "/Net/Act_1/elu", "/Net/Act_1/add"}));
  EXPECT_FLOAT_EQ(Attr(NodeNamed(m.graph(), "/Net/Act_0/leaky"), "alpha").f(), 0.125f);
  EXPECT_FLOAT_EQ(Attr(NodeNamed(m.graph(), "/Net/Act_1/leaky"), "alpha").f(), 0.3f);
  EXPECT_EQ(m.graph().node(3).input(0), "/Net/h");
  EXPECT_EQ(m.graph().node(5).output(0), "y");
  EXPECT_EQ(m.opset_import_size(), 1);
  EXPECT_EQ(ImportedType(original, "y"), "float32[2,3]");
}

// Calls of one function named alike (twice "dup", twice unnamed), next to a
// graph value that already has the name inlining would choose: every value
// and node name stays unique.
TEST(InlineFunctions, RepeatedCallsGetUniqueNames) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2, 3});
  AddAct(m);
  onnx::GraphProto* g = m.mutable_graph();
  AddNode(m, "Relu", {"x"}, {"dup/L"}, "dup/leaky");
  AddCall(g, "local", "Act", {"dup/L"}, {"a"}, "dup");
  AddCall(g, "local", "Act", {"a"}, {"b"}, "dup");
  AddCall(g, "local", "Act", {"b"}, {"c"});
  AddCall(g, "local", "Act", {"c"}, {"y"});
  AddOutput(m, "y");
  const onnx::ModelProto original = m;
  ASSERT_TRUE(detail::InlineFunctions(m).ok());
  ASSERT_EQ(m.graph().node_size(), 13);
  std::set<std::string> values{"x"}, nodes;
  for (const auto& n : m.graph().node()) {
    EXPECT_TRUE(nodes.insert(n.name()).second) << "node name " << n.name();
    for (const auto& o : n.output()) EXPECT_TRUE(values.insert(o).second) << "value " << o;
  }
  EXPECT_EQ(m.graph().node(0).output(0), "dup/L");  // the graph's own value keeps its name
  EXPECT_EQ(m.graph().node(1).input(0), "dup/L");
  EXPECT_EQ(m.graph().node(1).output(0), "dup/L_1");
  EXPECT_TRUE(nodes.count("Act/leaky") && nodes.count("Act/leaky_1"));
  EXPECT_EQ(ImportedType(original, "y"), "float32[2,3]");
}

// Split(X) => (Lo, Hi): a call that names only Lo leaves Hi an internal
// value. Clip(X, Min, Max) called with X alone reads "" for both bounds.
TEST(InlineFunctions, LeftOutOptionalInputsAndOutputs) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {4, 3});
  AddInts(m.mutable_graph(), "halves", {2, 2});
  onnx::FunctionProto* halves = AddFunction(m, "local", "Halves", {"X", "Sizes"}, {"Lo", "Hi"});
  AddBody(halves, "Split", {"X", "Sizes"}, {"Lo", "Hi"}, "split");
  onnx::FunctionProto* clip = AddFunction(m, "local", "Bound", {"X", "Min", "Max"}, {"Y"});
  AddBody(clip, "Clip", {"X", "Min", "Max"}, {"Y"}, "clip");
  AddCall(m.mutable_graph(), "local", "Halves", {"x", "halves"}, {"lo"}, "h");
  AddCall(m.mutable_graph(), "local", "Bound", {"lo"}, {"y"}, "b");
  AddOutput(m, "y");
  const onnx::ModelProto original = m;
  ASSERT_TRUE(detail::InlineFunctions(m).ok());
  ASSERT_EQ(m.graph().node_size(), 2);
  const onnx::NodeProto &split = m.graph().node(0), &clipped = m.graph().node(1);
  EXPECT_EQ(split.name(), "h/split");
  ASSERT_EQ(split.output_size(), 2);
  EXPECT_EQ(split.output(0), "lo");
  EXPECT_EQ(split.output(1), "h/Hi");
  EXPECT_EQ(clipped.name(), "b/clip");
  ASSERT_EQ(clipped.input_size(), 3);
  EXPECT_EQ(clipped.input(1), "");
  EXPECT_EQ(clipped.input(2), "");
  EXPECT_EQ(ImportedType(original, "y"), "float32[2,3]");
}

// An output that is the function's input passes through an Identity.
TEST(InlineFunctions, OutputThatIsAnInputBecomesAnIdentity) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2});
  onnx::FunctionProto* f = AddFunction(m, "local", "Both", {"X"}, {"Y", "X"});
  AddBody(f, "Neg", {"X"}, {"Y"});
  AddCall(m.mutable_graph(), "local", "Both", {"x"}, {"neg", "same"}, "both");
  AddOutput(m, "neg");
  AddOutput(m, "same");
  ASSERT_TRUE(detail::InlineFunctions(m).ok());
  ASSERT_EQ(m.graph().node_size(), 2);
  EXPECT_EQ(m.graph().node(1).op_type(), "Identity");
  EXPECT_EQ(m.graph().node(1).input(0), "x");
  EXPECT_EQ(m.graph().node(1).output(0), "same");
}

// Two overloads of one name (IR 10), told apart by the call's overload.
TEST(InlineFunctions, OverloadsAreToldApart) {
  onnx::ModelProto m = NewModel(17, 10);
  AddInput(m, "x", {2});
  for (const char* op : {"Neg", "Abs"}) {
    onnx::FunctionProto* f = AddFunction(m, "local", "Unary", {"X"}, {"Y"});
    SetOverload(f, op);
    AddBody(f, op, {"X"}, {"Y"}, op);
  }
  SetOverload(AddCall(m.mutable_graph(), "local", "Unary", {"x"}, {"a"}, "first"), "Abs");
  SetOverload(AddCall(m.mutable_graph(), "local", "Unary", {"a"}, {"y"}, "second"), "Neg");
  AddOutput(m, "y");
  ASSERT_TRUE(detail::InlineFunctions(m).ok());
  ASSERT_EQ(m.graph().node_size(), 2);
  EXPECT_EQ(m.graph().node(0).op_type(), "Abs");
  EXPECT_EQ(m.graph().node(1).op_type(), "Neg");
}

// A call in an If branch of the graph, and a function whose body holds an
// If: the branch reads the function's input and an attribute reference.
TEST(InlineFunctions, CallsInSubgraphsAndSubgraphsInBodies) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2, 3});
  AddAct(m);
  onnx::FunctionProto* f = AddFunction(m, "local", "Pick", {"X", "C"}, {"Y"});
  onnx::NodeProto* body_if = AddBody(f, "If", {"C"}, {"Y"}, "pick");
  onnx::GraphProto* then_g = AddBranch(body_if, "then_branch");
  AddRef(AddGraphNode(then_g, "LeakyRelu", {"X"}, {"t"}, "leaky"), "alpha", "slope", onnx::AttributeProto::FLOAT);
  then_g->add_output()->set_name("t");
  onnx::GraphProto* else_g = AddBranch(body_if, "else_branch");
  AddGraphNode(else_g, "Neg", {"X"}, {"t"});
  else_g->add_output()->set_name("t");
  onnx::GraphProto* g = m.mutable_graph();
  AddBool(g, "yes", true);
  SetFloat(AddCall(g, "local", "Pick", {"x", "yes"}, {"p"}, "pick_call"), "slope", 0.5f);
  onnx::NodeProto* outer = AddGraphNode(g, "If", {"yes"}, {"y"}, "outer");
  onnx::GraphProto* branch = AddBranch(outer, "then_branch");
  AddCall(branch, "local", "Act", {"p"}, {"acted"}, "in_branch");
  branch->add_output()->set_name("acted");
  onnx::GraphProto* other = AddBranch(outer, "else_branch");
  AddGraphNode(other, "Identity", {"p"}, {"kept"});
  other->add_output()->set_name("kept");
  AddOutput(m, "y");
  const onnx::ModelProto original = m;
  ASSERT_TRUE(detail::InlineFunctions(m).ok());
  const onnx::NodeProto& inlined_if = NodeNamed(m.graph(), "pick_call/pick");
  const onnx::GraphProto& t = Attr(inlined_if, "then_branch").g();
  ASSERT_EQ(t.node_size(), 1);
  ASSERT_EQ(t.output_size(), 1);
  EXPECT_EQ(t.node(0).input(0), "x");
  EXPECT_EQ(t.node(0).output(0), t.output(0).name());
  EXPECT_FLOAT_EQ(Attr(t.node(0), "alpha").f(), 0.5f);
  const onnx::GraphProto& e = Attr(inlined_if, "else_branch").g();
  ASSERT_EQ(e.node_size(), 1);
  EXPECT_EQ(e.node(0).input(0), "x");
  EXPECT_NE(e.output(0).name(), t.output(0).name());  // each branch's own value, renamed apart
  const onnx::GraphProto& b = Attr(NodeNamed(m.graph(), "outer"), "then_branch").g();
  ASSERT_EQ(b.node_size(), 3);
  EXPECT_EQ(b.node(0).name(), "in_branch/leaky");
  EXPECT_EQ(b.node(2).output(0), "acted");
  EXPECT_EQ(ImportedType(original, "y"), "float32[2,3]");
}

std::vector<ir::Tensor> RunModel(const onnx::ModelProto& m, const ir::Tensor& x) {
  auto g = ImportModelBytes(Bytes(m), "");
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  if (!g.ok()) return {};
  auto s = executor::InferenceSession::Create(std::move(*g));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return {};
  auto out = (*s)->Run({{"x", x}});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? *out : std::vector<ir::Tensor>{};
}

// Repeat(X, M) = Loop(M, "", X) {(i, c, acc) -> (c, Twice(acc))}: the body's
// own inputs are renamed, the call in it inlined; the Loop is then unrolled
// (M = 3) and y = 8 x.
TEST(InlineFunctions, LoopBodyInAFunctionCallsAFunction) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2, 3});
  AddInts(m.mutable_graph(), "three", {3}, true);
  AddBody(AddFunction(m, "local", "Twice", {"A"}, {"B"}), "Add", {"A", "A"}, {"B"}, "add");
  onnx::FunctionProto* repeat = AddFunction(m, "local", "Repeat", {"X", "M"}, {"Y"});
  onnx::NodeProto* loop = AddBody(repeat, "Loop", {"M", "", "X"}, {"Y"}, "loop");
  onnx::GraphProto* body = AddBranch(loop, "body");
  for (const char* in : {"i", "c", "acc"}) body->add_input()->set_name(in);
  AddGraphNode(body, "Identity", {"c"}, {"c_out"});
  AddCall(body, "local", "Twice", {"acc"}, {"acc_out"}, "twice");
  for (const char* out : {"c_out", "acc_out"}) body->add_output()->set_name(out);
  AddCall(m.mutable_graph(), "local", "Repeat", {"x", "three"}, {"y"}, "rep");
  AddOutput(m, "y");

  onnx::ModelProto inlined = m;
  ASSERT_TRUE(detail::InlineFunctions(inlined).ok());
  const onnx::GraphProto& b = Attr(NodeNamed(inlined.graph(), "rep/loop"), "body").g();
  ASSERT_EQ(b.input_size(), 3);
  EXPECT_EQ(b.input(2).name(), "rep/acc");
  ASSERT_EQ(b.node_size(), 2);
  EXPECT_EQ(b.node(1).name(), "rep/twice/add");
  EXPECT_EQ(b.node(1).input(0), "rep/acc");
  EXPECT_EQ(b.node(1).output(0), b.output(1).name());

  ir::Tensor x = *ir::Tensor::Zeros(ir::DType::kFloat32, {2, 3});
  for (int64_t i = 0; i < 6; ++i) x.data<float>()[i] = 0.75f * static_cast<float>(i) - 2.0f;
  std::vector<ir::Tensor> out = RunModel(m, x);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{2, 3}));
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(out[0].data<float>()[i], 8.0f * x.data<float>()[i]) << i;
}

std::string ImportError(const onnx::ModelProto& m) {
  auto g = ImportModelBytes(Bytes(m), "");
  return g.ok() ? "(imported)" : g.status().ToString();
}

TEST(InlineFunctions, RecursionIsRefusedNamingTheCycle) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2});
  AddBody(AddFunction(m, "local", "A", {"X"}, {"Y"}), "B", {"X"}, {"Y"}, "calls_b", "local");
  onnx::FunctionProto* b = AddFunction(m, "local", "B", {"X"}, {"Y"});
  AddBody(b, "Relu", {"X"}, {"R"});
  AddBody(b, "A", {"R"}, {"Y"}, "calls_a", "local");
  AddCall(m.mutable_graph(), "local", "A", {"x"}, {"y"}, "top");
  AddOutput(m, "y");
  const std::string err = ImportError(m);
  EXPECT_NE(err.find("function 'local.A' calls itself (local.A -> local.B -> local.A)"), std::string::npos) << err;
  EXPECT_NE(err.find("in node 'calls_a' of function 'local.B'"), std::string::npos) << err;

  onnx::ModelProto self = NewModel(17);
  AddInput(self, "x", {2});
  AddBody(AddFunction(self, "local", "F", {"X"}, {"Y"}), "F", {"X"}, {"Y"}, "again", "local");
  AddCall(self.mutable_graph(), "local", "F", {"x"}, {"y"}, "top");
  AddOutput(self, "y");
  EXPECT_NE(ImportError(self).find("(local.F -> local.F)"), std::string::npos) << ImportError(self);
}

TEST(InlineFunctions, RefusalsNameTheFunction) {
  auto model = [](int64_t function_opset) {
    onnx::ModelProto m = NewModel(17);
    AddInput(m, "x", {2});
    AddBody(AddFunction(m, "local", "F", {"X"}, {"Y"}, function_opset), "Relu", {"X"}, {"Y"});
    AddCall(m.mutable_graph(), "local", "F", {"x"}, {"y"}, "call");
    AddOutput(m, "y");
    return m;
  };
  std::string err = ImportError(model(13));
  EXPECT_NE(err.find("unimplemented: node 'call' (function 'local.F'): the function imports default-domain opset 13, "
                     "the model 17"),
            std::string::npos)
      << err;

  onnx::ModelProto unknown = model(17);
  unknown.mutable_functions(0)->mutable_node(0)->set_input(0, "elsewhere");
  err = ImportError(unknown);
  EXPECT_NE(err.find("node 'Relu' of function 'local.F' reads 'elsewhere'"), std::string::npos) << err;

  onnx::ModelProto extra = model(17);
  extra.mutable_graph()->mutable_node(0)->add_input("x");
  err = ImportError(extra);
  EXPECT_NE(err.find("node 'call' (function 'local.F') has 2 inputs"), std::string::npos) << err;

  onnx::ModelProto twice = model(17);
  *twice.add_functions() = twice.functions(0);
  EXPECT_NE(ImportError(twice).find("function 'local.F' is defined twice"), std::string::npos);
}

// Each of 40 functions calls the one before twice: 2^40 nodes, refused
// before any is copied. A chain of 100 calls nests too deep.
TEST(InlineFunctions, ExplosionAndDeepNestingAreRefused) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2});
  AddBody(AddFunction(m, "local", "F0", {"X"}, {"Y"}), "Relu", {"X"}, {"Y"});
  for (int k = 1; k < 40; ++k) {
    onnx::FunctionProto* f = AddFunction(m, "local", StrCat("F", k), {"X"}, {"Y"});
    AddBody(f, StrCat("F", k - 1), {"X"}, {"H"}, "first", "local");
    AddBody(f, StrCat("F", k - 1), {"H"}, {"Y"}, "second", "local");
  }
  AddCall(m.mutable_graph(), "local", "F39", {"x"}, {"y"}, "top");
  AddOutput(m, "y");
  EXPECT_NE(ImportError(m).find("inlining the model's functions makes more than 1048576 nodes"), std::string::npos)
      << ImportError(m);

  onnx::ModelProto deep = NewModel(17);
  AddInput(deep, "x", {2});
  AddBody(AddFunction(deep, "local", "F0", {"X"}, {"Y"}), "Relu", {"X"}, {"Y"});
  for (int k = 1; k < 100; ++k)
    AddBody(AddFunction(deep, "local", StrCat("F", k), {"X"}, {"Y"}), StrCat("F", k - 1), {"X"}, {"Y"}, "inner", "local");
  AddCall(deep.mutable_graph(), "local", "F99", {"x"}, {"y"}, "top");
  AddOutput(deep, "y");
  EXPECT_NE(ImportError(deep).find("function calls nest more than 64 deep"), std::string::npos) << ImportError(deep);
}

// Functions nobody calls are dropped; a model without functions is not
// touched at all.
TEST(InlineFunctions, UncalledFunctionsAndModelsWithoutThem) {
  onnx::ModelProto m = ConvReluGemm();
  const std::string before = Bytes(m);
  ASSERT_TRUE(detail::InlineFunctions(m).ok());
  EXPECT_EQ(Bytes(m), before);
  AddAct(m);
  ASSERT_TRUE(detail::InlineFunctions(m).ok());
  EXPECT_EQ(m.functions_size(), 0);
  EXPECT_EQ(m.graph().node_size(), 4);
}

// ---- runs ----------------------------------------------------------------

// Deterministic values of both signs.
void AddWeights(onnx::ModelProto& m, const std::string& name, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.125f * static_cast<float>(static_cast<int>((i * 7) % 13) - 6);
  FillFloats(m.mutable_graph()->add_initializer(), name, dims, v);
}

// x[2,1,6,6] -> Block(w1, b1; slope 0.1) -> Block(w2, b2; slope 0.2, pads
// given) -> Head(fc) -> y[2,4], where
//   Block(X, W, B) = LeakyRelu<alpha = @slope>(Conv<pads = @pads, default 1s>(X, W, B))
//   Head(H, W, B) = Gemm<transB = 1>(Flatten(H), W, B)
// with `functions`, the whole network a function Net as TorchScript writes it;
// without, the same nodes written out by hand.
onnx::ModelProto BlocksModel(bool functions) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2, 1, 6, 6});
  AddWeights(m, "w1", {2, 1, 3, 3});
  AddWeights(m, "b1", {2});
  AddWeights(m, "w2", {3, 2, 3, 3});
  AddWeights(m, "b2", {3});
  AddWeights(m, "fc_w", {4, 108});
  AddWeights(m, "fc_b", {4});
  AddOutput(m, "y");
  onnx::GraphProto* g = m.mutable_graph();
  if (!functions) {
    for (int k : {1, 2}) {
      const std::string in = k == 1 ? "x" : "/net/h1", p = StrCat("/net/block", k, "/");
      SetInts(AddNode(m, "Conv", {in, StrCat("w", k), StrCat("b", k)}, {p + "c"}, p + "conv"), "pads", {1, 1, 1, 1});
      SetFloat(AddNode(m, "LeakyRelu", {p + "c"}, {StrCat("/net/h", k)}, p + "act"), "alpha", k == 1 ? 0.1f : 0.2f);
    }
    SetInt(AddNode(m, "Flatten", {"/net/h2"}, {"/net/head/f"}, "/net/head/flatten"), "axis", 1);
    SetInt(AddNode(m, "Gemm", {"/net/head/f", "fc_w", "fc_b"}, {"y"}, "/net/head/gemm"), "transB", 1);
    return m;
  }
  onnx::FunctionProto* block = AddFunction(m, "__main__", "Block", {"X", "W", "B"}, {"Y"});
  block->add_attribute("slope");
  onnx::AttributeProto pads;
  pads.set_name("pads");
  pads.set_type(onnx::AttributeProto::INTS);
  for (int i = 0; i < 4; ++i) pads.add_ints(1);
  block->mutable_unknown_fields()->AddLengthDelimited(11, pads.SerializeAsString());
  AddRef(AddBody(block, "Conv", {"X", "W", "B"}, {"c"}, "conv"), "pads", "pads", onnx::AttributeProto::INTS);
  AddRef(AddBody(block, "LeakyRelu", {"c"}, {"Y"}, "act"), "alpha", "slope", onnx::AttributeProto::FLOAT);
  onnx::FunctionProto* head = AddFunction(m, "__main__", "Head", {"H", "W", "B"}, {"Y"});
  SetInt(AddBody(head, "Flatten", {"H"}, {"f"}, "flatten"), "axis", 1);
  SetInt(AddBody(head, "Gemm", {"f", "W", "B"}, {"Y"}, "gemm"), "transB", 1);
  onnx::FunctionProto* net = AddFunction(m, "__main__", "Net", {"x", "w1", "b1", "w2", "b2", "fc_w", "fc_b"}, {"y"});
  onnx::NodeProto* b1 = AddBody(net, "Block", {"x", "w1", "b1"}, {"h1"}, "block1", "__main__");
  SetFloat(b1, "slope", 0.1f);
  onnx::NodeProto* b2 = AddBody(net, "Block", {"h1", "w2", "b2"}, {"h2"}, "block2", "__main__");
  SetFloat(b2, "slope", 0.2f);
  SetInts(b2, "pads", {1, 1, 1, 1});
  AddBody(net, "Head", {"h2", "fc_w", "fc_b"}, {"y"}, "head", "__main__");
  AddCall(g, "__main__", "Net", {"x", "w1", "b1", "w2", "b2", "fc_w", "fc_b"}, {"y"}, "/net");
  return m;
}

TEST(InlineFunctions, RunsExactlyAsTheModelInlinedByHand) {
  ir::Tensor x = *ir::Tensor::Zeros(ir::DType::kFloat32, {2, 1, 6, 6});
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = 0.25f * static_cast<float>((i * 5) % 17) - 2.0f;
  std::vector<ir::Tensor> with = RunModel(BlocksModel(true), x), by_hand = RunModel(BlocksModel(false), x);
  ASSERT_EQ(with.size(), 1u);
  ASSERT_EQ(by_hand.size(), 1u);
  ASSERT_EQ(with[0].dims(), (std::vector<int64_t>{2, 4}));
  EXPECT_TRUE(with[0] == by_hand[0]);
  bool nonzero = false;
  for (int64_t i = 0; i < with[0].num_elements(); ++i) nonzero = nonzero || with[0].data<float>()[i] != 0.0f;
  EXPECT_TRUE(nonzero);
  // Same names too: the hand-written model uses the names inlining gives.
  auto a = ImportModelBytes(Bytes(BlocksModel(true)), ""), b = ImportModelBytes(Bytes(BlocksModel(false)), "");
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<std::string> na, nb;
  for (const ir::Node* n : (*a)->nodes()) na.push_back(n->name());
  for (const ir::Node* n : (*b)->nodes()) nb.push_back(n->name());
  EXPECT_EQ(na, nb);
}

}  // namespace
}  // namespace amptrain::importer
