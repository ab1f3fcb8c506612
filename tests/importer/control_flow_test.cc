// Control flow decided at import (importer/control_flow.cc): the
// TorchScript exporter's shape-checked squeeze, nested Ifs, a condition
// behind a weight, Loops unrolled by their trip count (carried and scan
// outputs), and the refusals of what the data decides.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "importer/onnx_import.h"
#include "tests/importer/control_flow_models.h"

namespace amptrain::importer {
namespace {

using namespace testing;  // NOLINT
using ir::OpKind;

std::string TypeOf(const ir::Graph& g, const std::string& name) {
  ir::Value v = g.FindValue(name);
  return v.valid() ? g.type(v).ToString() : "(absent)";
}

// Both branches taken in one model: dim 1 of [2,1,3] is 1 (squeezed), of
// [2,4,3] it is not (kept). The branch's local names, used twice, are
// renamed apart; W stays a trainable initializer behind the inlined nodes.
TEST(IfInline, ShapeDecidedConditionsTakeTheirBranch) {
  onnx::ModelProto m = TwoSqueezeIfs();
  auto g = ImportModelBytes(Bytes(m), "");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(TypeOf(**g, "y"), "float32[2,3]");
  EXPECT_EQ(TypeOf(**g, "k"), "float32[2,4,3]");
  bool squeeze = false, w_is_initializer = false;
  for (const ir::Node* n : (*g)->nodes()) squeeze = squeeze || n->op() == OpKind::kSqueeze;
  for (ir::Value v : (*g)->initializers()) w_is_initializer = w_is_initializer || (*g)->name(v) == "W";
  EXPECT_TRUE(squeeze);
  EXPECT_TRUE(w_is_initializer);
}

// A condition computed from the shape of a product with a large weight: the
// probe takes the weight as a typed input and still decides it.
TEST(IfInline, ConditionBehindALargeWeight) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {4, 1, 64});
  AddInts(m.mutable_graph(), "one", {1});
  AddInitializer(m, "W", {64, 128});
  AddNode(m, "MatMul", {"x", "W"}, {"h"});
  AddSqueezeIf(m, "h", "y", "squeeze");
  AddOutput(m, "y");
  auto g = ImportModelBytes(Bytes(m), "");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(TypeOf(**g, "y"), "float32[4,128]");
}

// An If inside the taken branch is decided in the next round; it reads a
// value local to the outer branch, which inlining renamed.
TEST(IfInline, NestedIfReadsTheOuterBranchsRenamedValue) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2, 1, 3});
  AddInts(m.mutable_graph(), "one", {1});
  onnx::GraphProto* g = m.mutable_graph();
  onnx::TensorProto* t = g->add_initializer();
  t->set_name("yes");
  t->set_data_type(onnx::TensorProto::BOOL);
  t->add_int32_data(1);
  onnx::NodeProto* outer = AddGraphNode(g, "If", {"yes"}, {"y"}, "outer");
  onnx::GraphProto* then_g = AddBranch(outer, "then_branch");
  AddGraphNode(then_g, "Relu", {"x"}, {"local"});
  onnx::NodeProto* inner = AddGraphNode(then_g, "If", {"yes"}, {"inner_out"}, "inner");
  onnx::GraphProto* inner_then = AddBranch(inner, "then_branch");
  AddGraphNode(inner_then, "Neg", {"local"}, {"negated"});
  inner_then->add_output()->set_name("negated");
  onnx::GraphProto* inner_else = AddBranch(inner, "else_branch");
  AddGraphNode(inner_else, "Identity", {"local"}, {"kept"});
  inner_else->add_output()->set_name("kept");
  then_g->add_output()->set_name("inner_out");
  onnx::GraphProto* else_g = AddBranch(outer, "else_branch");
  AddGraphNode(else_g, "Identity", {"x"}, {"plain"});
  else_g->add_output()->set_name("plain");
  AddOutput(m, "y");
  auto imported = ImportModelBytes(Bytes(m), "");
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  const ir::Graph& ig = **imported;
  ir::Value y = ig.FindValue("y");
  ASSERT_TRUE(y.valid());
  EXPECT_EQ(ig.producer(y)->op(), OpKind::kNeg);
  EXPECT_EQ(ig.producer(ig.producer(y)->input(0))->op(), OpKind::kRelu);
}

TEST(IfInline, DataDependentConditionIsRefusedByName) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2, 3});
  AddNode(m, "ReduceSum", {"x"}, {"s"});
  AddInitializer(m, "zero", {});
  AddNode(m, "Greater", {"s", "zero"}, {"positive"});
  onnx::NodeProto* node = AddNode(m, "If", {"positive"}, {"y"}, "data_if");
  AddGraphNode(AddBranch(node, "then_branch"), "Relu", {"x"}, {"a"});
  node->mutable_attribute(0)->mutable_g()->add_output()->set_name("a");
  AddGraphNode(AddBranch(node, "else_branch"), "Neg", {"x"}, {"b"});
  node->mutable_attribute(1)->mutable_g()->add_output()->set_name("b");
  AddOutput(m, "y");
  auto g = ImportModelBytes(Bytes(m), "");
  ASSERT_FALSE(g.ok());
  const std::string msg = g.status().message();
  EXPECT_NE(msg.find("node 'data_if'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("depends on the input data"), std::string::npos) << msg;
}

TEST(IfInline, BranchWithTheWrongOutputCountIsRefused) {
  onnx::ModelProto m = NewModel(17);
  AddInput(m, "x", {2, 3});
  onnx::GraphProto* g = m.mutable_graph();
  onnx::TensorProto* t = g->add_initializer();
  t->set_name("yes");
  t->set_data_type(onnx::TensorProto::BOOL);
  t->add_int32_data(1);
  onnx::NodeProto* node = AddGraphNode(g, "If", {"yes"}, {"y", "y2"}, "two_outputs");
  onnx::GraphProto* then_g = AddBranch(node, "then_branch");
  AddGraphNode(then_g, "Relu", {"x"}, {"a"});
  then_g->add_output()->set_name("a");
  AddBranch(node, "else_branch");
  AddOutput(m, "y");
  auto imported = ImportModelBytes(Bytes(m), "");
  ASSERT_FALSE(imported.ok());
  EXPECT_NE(imported.status().message().find("then_branch has 1 outputs, the node 2"), std::string::npos)
      << imported.status().message();
}

TEST(LoopUnroll, TripCountFromAShape) {
  auto g = ImportModelBytes(Bytes(LoopModel("still")), "");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(TypeOf(**g, "acc"), "float32[3]");
  EXPECT_EQ(TypeOf(**g, "doubled"), "float32[4,3]");
  int gathers = 0;
  for (const ir::Node* n : (*g)->nodes()) gathers += n->op() == OpKind::kGather;
  EXPECT_EQ(gathers, 4);  // one per iteration; the trip count's Gather folded
}

TEST(LoopUnroll, WhatTheDataDecidesIsRefused) {
  auto expect_error = [](Trip trip, const char* cond_out, const std::string& want) {
    auto g = ImportModelBytes(Bytes(LoopModel(cond_out, trip)), "");
    ASSERT_FALSE(g.ok());
    EXPECT_NE(g.status().message().find(want), std::string::npos) << g.status().message();
  };
  expect_error(Trip::kNone, "still", "Loop node 'rows_loop' runs more than 4096 iterations");
  expect_error(Trip::kData, "still", "the trip count M of Loop node 'rows_loop' ('m') depends on the input data");
  expect_error(Trip::kShape, "early", "the condition after iteration 1 of Loop node 'rows_loop' is false");
}

// A Loop without a trip count is unrolled as many times as running its
// condition's slice on constants says, and the sequence it builds becomes a
// Concat; past the unrolling limit it is refused by name.
TEST(LoopUnroll, WhileLoopBuildingASequence) {
  auto g = ImportModelBytes(Bytes(WhileSequenceModel()), "");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(TypeOf(**g, "y"), "float32[3,3]");
  EXPECT_EQ(TypeOf(**g, "count"), "int64[]");
  // 1000 iterations (the dynamo export of an EmbeddingBag over 1000 bags).
  auto long_loop = ImportModelBytes(Bytes(WhileSequenceModel(1000, 1000)), "");
  ASSERT_TRUE(long_loop.ok()) << long_loop.status().ToString();
  EXPECT_EQ(TypeOf(**long_loop, "y"), "float32[1000,3]");
  int gathers = 0;
  for (const ir::Node* n : (*long_loop)->nodes()) gathers += n->op() == OpKind::kGather;
  EXPECT_EQ(gathers, 1000);
  auto endless = ImportModelBytes(Bytes(WhileSequenceModel(100000)), "");
  ASSERT_FALSE(endless.ok());
  EXPECT_NE(endless.status().message().find("Loop node 'while_rows' runs more than 4096 iterations"),
            std::string::npos)
      << endless.status().message();
}

// A condition whose slice has a subgraph (an If in the body) is decided an
// iteration per round instead, up to 256 iterations.
TEST(LoopUnroll, WhileLoopDecidedRoundByRound) {
  auto g = ImportModelBytes(Bytes(WhileSequenceModel(3, 4, true)), "");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(TypeOf(**g, "y"), "float32[3,3]");
  auto endless = ImportModelBytes(Bytes(WhileSequenceModel(100000, 4, true)), "");
  ASSERT_FALSE(endless.ok());
  EXPECT_NE(endless.status().message().find("Loop node 'while_rows' runs more than 256 iterations, the most amptrain "
                                            "unrolls without a trip count"),
            std::string::npos)
      << endless.status().message();
}

}  // namespace
}  // namespace amptrain::importer
