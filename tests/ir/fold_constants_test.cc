// FoldConstants on the shape subgraph of a torch-1.13 flatten export, and
// with keep_float_initializers: weight routes stay, shape arithmetic folds.
#include "ir/fold_constants.h"

#include <gtest/gtest.h>

#include "ir/verifier.h"

namespace amptrain::ir {
namespace {

// x -> Shape -> Gather(0) -> Unsqueeze([0]) -> Concat(., Constant[-1]) -> Reshape(x, .) -> y
struct FlattenExport {
  Graph g;
  Node* reshape = nullptr;
  explicit FlattenExport(TensorType x_type) {
    Value x = g.AddInput("x", std::move(x_type));
    Node* shape = g.AddNode(OpKind::kShape, {x}, 1, "shape", {"shape_out"});
    Value idx = g.AddInitializer("idx0", Tensor::Int64s({0}, {}));
    Node* gather = g.AddNode(OpKind::kGather, {shape->output(0), idx}, 1, "gather");
    Node* unsq = g.AddNode(OpKind::kUnsqueeze, {gather->output(0), g.AddInitializer("axes", Tensor::Int64s({0}, {1}))}, 1, "unsq");
    Node* minus1 = g.AddNode(OpKind::kConstant, {}, 1, "minus1");
    minus1->attrs().Set("value", Tensor::Int64s({-1}, {1}));
    Node* concat = g.AddNode(OpKind::kConcat, {unsq->output(0), minus1->output(0)}, 1, "concat", {"target_shape"});
    reshape = g.AddNode(OpKind::kReshape, {x, concat->output(0)}, 1, "reshape", {"y"});
    g.AddOutput(reshape->output(0));
  }
};

TEST(FoldConstants, FoldsTheStaticFlattenChain) {
  FlattenExport m(TensorType::Of(DType::kFloat32, {2, 3, 4, 4}));
  ASSERT_TRUE(m.g.InferShapes().ok());
  FoldConstants pass;
  EXPECT_EQ(pass.name(), "fold-constants");
  auto changed = pass.Run(m.g);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(Verify(m.g).ok()) << Verify(m.g).ToString();
  Value target = m.reshape->input(1);
  EXPECT_EQ(m.g.producer(target)->op(), OpKind::kConstant);
  EXPECT_EQ(m.g.name(target), "target_shape");  // the folded value keeps its name
  ASSERT_NE(m.g.ConstantValue(target), nullptr);
  EXPECT_EQ(m.g.ConstantValue(target)->ToInt64Vector(), (std::vector<int64_t>{2, -1}));
  // Only x, the Constant and the Reshape remain; the initializers went dead.
  EXPECT_EQ(m.g.num_nodes(), 3u);
  EXPECT_TRUE(m.g.FindValue("y").valid());
  ASSERT_TRUE(m.g.InferShapes().ok());
  EXPECT_EQ(m.g.type(m.reshape->output(0)).ToString(), "float32[2,48]");
  // A second run has nothing left to do.
  auto again = pass.Run(m.g);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
}

TEST(FoldConstants, SymbolicBatchStopsAtShape) {
  FlattenExport m(TensorType::Of(DType::kFloat32, Shape({Dim::Symbolic("batch"), Dim::Static(3), Dim::Static(4), Dim::Static(4)})));
  ASSERT_TRUE(m.g.InferShapes().ok());
  size_t before = m.g.num_nodes();
  FoldConstants pass;
  auto changed = pass.Run(m.g);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_FALSE(*changed);
  EXPECT_EQ(m.g.num_nodes(), before);
  ASSERT_TRUE(Verify(m.g).ok());
  EXPECT_EQ(m.g.producer(m.g.FindValue("shape_out"))->op(), OpKind::kShape);
  // The target shape is data-dependent here, so nothing folds, but shape
  // inference tracks it as dims ([batch, -1]: ValueInfo::sym_value), and the
  // -1 is the input's elements over batch.
  EXPECT_EQ(m.g.type(m.reshape->output(0)).ToString(), "float32[batch,48]");
}

TEST(FoldConstants, StaticPartOfASymbolicShapeFolds) {
  Graph g;
  Value x = g.AddInput("x", TensorType::Of(DType::kFloat32, Shape({Dim::Symbolic("batch"), Dim::Static(3), Dim::Static(5)})));
  Node* tail = g.AddNode(OpKind::kShape, {x}, 1, "tail", {"tail_dims"});
  tail->attrs().Set("start", int64_t{1});
  g.AddOutput(tail->output(0));
  ASSERT_TRUE(g.InferShapes().ok());
  auto changed = FoldConstants().Run(g);
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(Verify(g).ok());
  Value out = g.outputs()[0];
  EXPECT_EQ(g.name(out), "tail_dims");
  ASSERT_NE(g.ConstantValue(out), nullptr);
  EXPECT_EQ(g.ConstantValue(out)->ToInt64Vector(), (std::vector<int64_t>{3, 5}));
}

// Shape(x [seq, batch, 192]) -> Gather(2) -> Div(3): the attention exports' E / 3.
TEST(FoldConstants, GatherOfStaticDimsOfASymbolicShapeFolds) {
  Graph g;
  Value x = g.AddInput("x", TensorType::Of(DType::kFloat32, Shape({Dim::Static(16), Dim::Symbolic("batch"), Dim::Static(192)})));
  Node* shape = g.AddNode(OpKind::kShape, {x}, 1, "shape");
  Node* e = g.AddNode(OpKind::kGather, {shape->output(0), g.AddInitializer("last", Tensor::Int64s({-1}, {}))}, 1, "e");
  Node* third = g.AddNode(OpKind::kDiv, {e->output(0), g.AddInitializer("three", Tensor::Int64s({3}, {}))}, 1, "third",
                          {"third"});
  Node* batch = g.AddNode(OpKind::kGather, {shape->output(0), g.AddInitializer("one", Tensor::Int64s({1}, {1}))}, 1,
                          "batch", {"batch"});
  g.AddOutput(third->output(0));
  g.AddOutput(batch->output(0));
  ASSERT_TRUE(g.InferShapes().ok());
  ASSERT_TRUE(FoldConstants().Run(g).ok());
  ASSERT_TRUE(Verify(g).ok()) << Verify(g).ToString();
  const Tensor* folded = g.ConstantValue(g.FindValue("third"));
  ASSERT_NE(folded, nullptr);
  EXPECT_EQ(folded->ToInt64Vector(), (std::vector<int64_t>{64}));
  EXPECT_TRUE(folded->dims().empty());
  EXPECT_EQ(g.producer(g.FindValue("batch"))->op(), OpKind::kGather);  // the symbolic dim stays
}

// Weights read through nodes whose inputs are all constants: the routes
// PyTorch exports for attention projections (Transpose(w) -> MatMul) and
// position embeddings (Gather(table, constant indices)), a BN running
// statistic read through Identity, an unused float initializer, and a
// shape argument computed from a weight's shape (Shape(w) -> Reshape).
struct WeightRoutes {
  Graph g;
  Node *transpose, *gather, *identity, *shape, *reshape;
  WeightRoutes() {
    Value x = g.AddInput("x", TensorType::Of(DType::kFloat32, {2, 1, 3}));
    Value w = g.AddInitializer("w", Tensor::Floats({1, 2, 3, 4, 5, 6}, {2, 3}));
    Value table = g.AddInitializer("table", Tensor::Floats({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3}));
    Value positions = g.AddInitializer("positions", Tensor::Int64s({2}, {1}));
    g.AddInitializer("spare", Tensor::Floats({1}, {1}));
    g.AddInitializer("spare_ints", Tensor::Int64s({1}, {1}));
    gather = g.AddNode(OpKind::kGather, {table, positions}, 1, "gather");
    Node* add = g.AddNode(OpKind::kAdd, {x, gather->output(0)}, 1, "add");  // [2,1,3]
    transpose = g.AddNode(OpKind::kTranspose, {w}, 1, "transpose");
    Node* mm = g.AddNode(OpKind::kMatMul, {add->output(0), transpose->output(0)}, 1, "mm");  // [2,1,2]
    shape = g.AddNode(OpKind::kShape, {w}, 1, "shape");  // [2, 3]: the Reshape drops add's 1
    reshape = g.AddNode(OpKind::kReshape, {add->output(0), shape->output(0)}, 1, "reshape");
    Node* bn_in = g.AddNode(OpKind::kUnsqueeze, {reshape->output(0), g.AddInitializer("axes", Tensor::Int64s({2}, {1}))}, 1);
    Value one3 = g.AddInitializer("bn_scale", Tensor::Floats({1, 1, 1}, {3}));
    Value zero3 = g.AddInitializer("bn_bias", Tensor::Floats({0, 0, 0}, {3}));
    Value mean = g.AddInitializer("bn_mean", Tensor::Floats({0, 0, 0}, {3}));
    Value var = g.AddInitializer("bn_var", Tensor::Floats({1, 1, 1}, {3}));
    identity = g.AddNode(OpKind::kIdentity, {mean}, 1, "mean_identity");
    Node* bn = g.AddNode(OpKind::kBatchNormalization, {bn_in->output(0), one3, zero3, identity->output(0), var}, 1, "bn");
    g.AddOutput(mm->output(0));
    g.AddOutput(bn->output(0));
  }
};

TEST(FoldConstants, KeepFloatInitializersLeavesWeightRoutesAndFoldsShapes) {
  WeightRoutes m;
  ASSERT_TRUE(m.g.InferShapes().ok()) << m.g.InferShapes().ToString();
  auto changed = FoldConstants({.keep_float_initializers = true}).Run(m.g);
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(Verify(m.g).ok()) << Verify(m.g).ToString();
  for (const char* kept : {"transpose", "gather", "mean_identity"}) {
    bool found = false;
    for (const Node* n : std::as_const(m.g).nodes()) found = found || n->name() == kept;
    EXPECT_TRUE(found) << kept << " was folded";
  }
  for (const char* name : {"w", "table", "spare", "bn_mean", "positions"})
    EXPECT_EQ(m.g.producer(m.g.FindValue(name))->op(), OpKind::kInitializer) << name;
  EXPECT_FALSE(m.g.FindValue("spare_ints").valid()) << "an unused integer initializer stays removable";
  // The shape argument folded, so the Reshape's output is static.
  EXPECT_EQ(m.g.producer(m.reshape->input(1))->op(), OpKind::kConstant);
  EXPECT_EQ(m.g.type(m.reshape->output(0)).ToString(), "float32[2,3]");
}

TEST(FoldConstants, WithoutKeepingWeightRoutesFold) {
  WeightRoutes m;
  ASSERT_TRUE(m.g.InferShapes().ok());
  ASSERT_TRUE(FoldConstants().Run(m.g).ok());
  ASSERT_TRUE(Verify(m.g).ok());
  // What froze parameters before issue 10: w and table became constants.
  EXPECT_FALSE(m.g.FindValue("w").valid());
  EXPECT_FALSE(m.g.FindValue("table").valid());
  EXPECT_EQ(m.g.producer(m.g.FindValue("transpose:0"))->op(), OpKind::kConstant);
}

}  // namespace
}  // namespace amptrain::ir
