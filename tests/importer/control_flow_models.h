// ONNX models with control flow (If, Loop) built in C++, for the importer's
// control-flow tests and the end-to-end runs of them.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "tests/importer/model_builder.h"

namespace amptrain::importer::testing {

// An int64 initializer [v.size()], or with `scalar` a 0-D one of v[0].
inline void AddInts(onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& v, bool scalar = false) {
  onnx::TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  if (!scalar) t->add_dims(static_cast<int64_t>(v.size()));
  for (int64_t x : v) t->add_int64_data(x);
}

inline onnx::NodeProto* AddGraphNode(onnx::GraphProto* g, const std::string& op, const std::vector<std::string>& inputs,
                              const std::vector<std::string>& outputs, const std::string& name = "") {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

inline onnx::GraphProto* AddBranch(onnx::NodeProto* node, const std::string& attr) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(attr);
  a->set_type(onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name(attr);
  return a->mutable_g();
}

// The exporter's `h.squeeze(1)`: If(Shape(h)[1] == 1) {Squeeze(h, 1)} else {Identity(h)}.
// The then branch reads an outer value (h) and has a local initializer.
inline onnx::NodeProto* AddSqueezeIf(onnx::ModelProto& m, const std::string& h, const std::string& out,
                              const std::string& name) {
  onnx::GraphProto* g = m.mutable_graph();
  AddGraphNode(g, "Shape", {h}, {name + "_shape"});
  AddGraphNode(g, "Gather", {name + "_shape", "one"}, {name + "_dim"});
  AddGraphNode(g, "Equal", {name + "_dim", "one"}, {name + "_cond"});
  onnx::NodeProto* node = AddGraphNode(g, "If", {name + "_cond"}, {out}, name);
  onnx::GraphProto* then_g = AddBranch(node, "then_branch");
  AddInts(then_g, "axes", {1});
  AddGraphNode(then_g, "Squeeze", {h, "axes"}, {"squeezed"});
  then_g->add_output()->set_name("squeezed");
  onnx::GraphProto* else_g = AddBranch(node, "else_branch");
  AddGraphNode(else_g, "Identity", {h}, {"same"});
  else_g->add_output()->set_name("same");
  return node;
}

// y = squeeze(x W, 1) with x [2, 1, 3] (the If takes then), k = squeeze(z, 1)
// with z [2, 4, 3] (it takes else); W is 0, 0.5, 1, ... (AddInitializer).
inline onnx::ModelProto TwoSqueezeIfs() {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2, 1, 3});
  AddInput(m, "z", {2, 4, 3});
  AddInts(m.mutable_graph(), "one", {1});
  AddInitializer(m, "W", {3, 3});
  AddNode(m, "MatMul", {"x", "W"}, {"h"});
  AddSqueezeIf(m, "h", "y", "squeeze_h");
  AddSqueezeIf(m, "z", "k", "squeeze_z");
  AddOutput(m, "y");
  AddOutput(m, "k");
  return m;
}

inline onnx::TensorProto* AddBool(onnx::GraphProto* g, const std::string& name, bool v) {
  onnx::TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::BOOL);
  t->add_int32_data(v ? 1 : 0);
  return t;
}

enum class Trip { kShape, kNone, kData };

// Loop(M, true, acc0) with body (i, c, acc) -> (c, acc + x[i], 2 x[i]); M is
// Shape(x)[0] (nn.EmbeddingBag's per-bag loop has this shape), absent, or
// computed from x's values. `cond_out` names the body's condition output:
// "still" passes c on, "early" is i < 1.
inline onnx::ModelProto LoopModel(const std::string& cond_out, Trip trip = Trip::kShape) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {4, 3});
  onnx::GraphProto* g = m.mutable_graph();
  AddInts(g, "zero", {0});
  AddInts(g, "one", {1});
  AddBool(g, "yes", true);
  AddInitializer(m, "acc0", {3});
  if (trip == Trip::kShape) {
    AddGraphNode(g, "Shape", {"x"}, {"shape"});
    AddGraphNode(g, "Gather", {"shape", "zero"}, {"rows"});
    AddGraphNode(g, "Squeeze", {"rows"}, {"m"});
  } else if (trip == Trip::kData) {
    SetInt(AddGraphNode(g, "ReduceMax", {"x"}, {"largest"}), "keepdims", 0);
    SetInt(AddGraphNode(g, "Cast", {"largest"}, {"m"}), "to", onnx::TensorProto::INT64);
  }
  onnx::NodeProto* loop =
      AddGraphNode(g, "Loop", {trip == Trip::kNone ? "" : "m", "yes", "acc0"}, {"acc", "doubled"}, "rows_loop");
  onnx::GraphProto* body = AddBranch(loop, "body");
  for (const char* in : {"i", "c", "acc_in"}) body->add_input()->set_name(in);
  AddGraphNode(body, "Gather", {"x", "i"}, {"row"});
  AddGraphNode(body, "Add", {"acc_in", "row"}, {"acc_out"});
  AddGraphNode(body, "Add", {"row", "row"}, {"row2"});
  AddGraphNode(body, "Less", {"i", "one"}, {"early"});
  AddGraphNode(body, "Identity", {"c"}, {"still"});
  for (const std::string& out : {cond_out, std::string("acc_out"), std::string("row2")}) body->add_output()->set_name(out);
  AddOutput(m, "acc");
  AddOutput(m, "doubled");
  return m;
}

// The dynamo exporter's nn.EmbeddingBag in miniature: a Loop with no trip
// count, condition i + 1 < 3, appending 2 x[i] to a sequence; then
// ConcatFromSequence(new_axis = 1) -> y [3, 3] = 2 x[0:3], and its
// SequenceLength -> count = 3. `limit` replaces the 3 (a large one runs into
// the unrolling limit), `rows` the 4 rows of x; `condition_in_if` computes
// the condition inside an If.
inline onnx::ModelProto WhileSequenceModel(int64_t limit = 3, int64_t rows = 4, bool condition_in_if = false) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {rows, 3});
  onnx::GraphProto* g = m.mutable_graph();
  AddBool(g, "yes", true);
  AddInts(g, "one_s", {1}, true);
  AddInts(g, "limit", {limit}, true);
  AddGraphNode(g, "SequenceEmpty", {}, {"seq0"});
  onnx::NodeProto* loop = AddGraphNode(g, "Loop", {"", "yes", "seq0"}, {"rows_seq"}, "while_rows");
  onnx::GraphProto* body = AddBranch(loop, "body");
  for (const char* in : {"i", "c", "seq_in"}) body->add_input()->set_name(in);
  AddGraphNode(body, "Gather", {"x", "i"}, {"row"});
  AddGraphNode(body, "Add", {"row", "row"}, {"row2"});
  AddGraphNode(body, "SequenceInsert", {"seq_in", "row2"}, {"seq_out"});
  AddGraphNode(body, "Add", {"i", "one_s"}, {"next"});
  if (condition_in_if) {
    // go_on = If(yes) {Less(next, limit)} else {yes}: a condition slice
    // with a subgraph, which only the round-by-round unrolling decides.
    onnx::NodeProto* guard = AddGraphNode(body, "If", {"yes"}, {"go_on"}, "guard");
    onnx::GraphProto* then_g = AddBranch(guard, "then_branch");
    AddGraphNode(then_g, "Less", {"next", "limit"}, {"less"});
    then_g->add_output()->set_name("less");
    AddBranch(guard, "else_branch")->add_output()->set_name("yes");
  } else {
    AddGraphNode(body, "Less", {"next", "limit"}, {"go_on"});
  }
  for (const char* out : {"go_on", "seq_out"}) body->add_output()->set_name(out);
  onnx::NodeProto* concat = AddGraphNode(g, "ConcatFromSequence", {"rows_seq"}, {"y"}, "stack");
  SetInt(concat, "axis", 0);
  SetInt(concat, "new_axis", 1);
  AddGraphNode(g, "SequenceLength", {"rows_seq"}, {"count"});
  AddOutput(m, "y");
  AddOutput(m, "count");
  return m;
}

}  // namespace amptrain::importer::testing
