// FoldConstants on the shape subgraph of a torch-1.13 flatten export.
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
  // The target shape is data-dependent here: the rank is known, the dims are not.
  EXPECT_EQ(m.g.type(m.reshape->output(0)).ToString(), "float32[?,?]");
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

}  // namespace
}  // namespace amptrain::ir
