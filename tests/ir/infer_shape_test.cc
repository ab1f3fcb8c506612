// Shape rules of the data-movement ops on graphs: symbolic dims, unknown
// parameter values, and value propagation through shape arithmetic.
#include <gtest/gtest.h>

#include "ir/graph.h"

namespace amptrain::ir {
namespace {

TensorType Sym(DType dt, std::vector<Dim> dims) { return TensorType::Of(dt, Shape(std::move(dims))); }
Value I64(Graph& g, const std::string& name, std::vector<int64_t> v) {
  int64_t n = static_cast<int64_t>(v.size());
  return g.AddInitializer(name, Tensor::Int64s(v, {n}));
}

TEST(InferShape, ReshapeAndFlattenKeepTheBatchSymbol) {
  Graph g;
  Value x = g.AddInput("x", Sym(DType::kFloat32, {Dim::Symbolic("batch"), Dim::Static(512), Dim::Static(1), Dim::Static(1)}));
  Node* r = g.AddNode(OpKind::kReshape, {x, I64(g, "s", {0, -1})});
  Node* r2 = g.AddNode(OpKind::kReshape, {x, I64(g, "s2", {-1, 512})});
  Node* f = g.AddNode(OpKind::kFlatten, {x});
  ASSERT_TRUE(g.InferShapes().ok());
  EXPECT_EQ(g.type(r->output(0)).ToString(), "float32[batch,512]");
  EXPECT_EQ(g.type(r2->output(0)).ToString(), "float32[batch,512]");
  EXPECT_EQ(g.type(f->output(0)).ToString(), "float32[batch,512]");
}

TEST(InferShape, ReshapeWithUnknownShapeValueKeepsTheRank) {
  Graph g;
  Value x = g.AddInput("x", TensorType::Of(DType::kFloat32, {2, 3}));
  Value s = g.AddInput("s", TensorType::Of(DType::kInt64, {3}));
  Node* r = g.AddNode(OpKind::kReshape, {x, s});
  ASSERT_TRUE(g.InferShapes().ok());
  EXPECT_EQ(g.type(r->output(0)).ToString(), "float32[?,?,?]");
}

TEST(InferShape, ShapeOfSymbolicInputHasNoValueButItsStaticPartDoes) {
  Graph g;
  Value x = g.AddInput("x", Sym(DType::kFloat32, {Dim::Symbolic("batch"), Dim::Static(3)}));
  Node* s = g.AddNode(OpKind::kShape, {x});
  Node* tail = g.AddNode(OpKind::kShape, {x});
  tail->attrs().Set("start", int64_t{1});
  std::vector<Tensor> v;
  ASSERT_TRUE(g.InferNode(s, &v).ok());
  EXPECT_EQ(g.type(s->output(0)).ToString(), "int64[2]");
  EXPECT_TRUE(v[0].empty());
  ASSERT_TRUE(g.InferNode(tail, &v).ok());
  ASSERT_FALSE(v[0].empty());
  EXPECT_EQ(v[0].ToInt64Vector(), (std::vector<int64_t>{3}));
}

// Runs rules in order, turning every propagated value into a Constant so
// the next rule sees it (what FoldConstants does, without the rewrite).
std::vector<Tensor> Propagate(Graph& g, Node* n) {
  std::vector<Tensor> v;
  EXPECT_TRUE(g.InferNode(n, &v).ok());
  return v;
}

TEST(InferShape, ValuesFlowThroughGatherUnsqueezeConcat) {
  Graph g;
  Value x = g.AddInput("x", TensorType::Of(DType::kFloat32, {2, 3, 4, 4}));
  Node* shape = g.AddNode(OpKind::kShape, {x});
  auto sv = Propagate(g, shape);
  ASSERT_FALSE(sv[0].empty());
  Value sc = g.AddInitializer("shape_value", sv[0]);
  Node* gather = g.AddNode(OpKind::kGather, {sc, g.AddInitializer("i", Tensor::Int64s({-4}, {}))});
  auto gv = Propagate(g, gather);
  ASSERT_FALSE(gv[0].empty());
  EXPECT_EQ(gv[0].rank(), 0u);
  EXPECT_EQ(gv[0].GetAsInt64(0), 2);
  Value gc = g.AddInitializer("gathered", gv[0]);
  Node* unsq = g.AddNode(OpKind::kUnsqueeze, {gc, I64(g, "axes", {0})});
  auto uv = Propagate(g, unsq);
  ASSERT_FALSE(uv[0].empty());
  Value uc = g.AddInitializer("unsqueezed", uv[0]);
  Node* concat = g.AddNode(OpKind::kConcat, {uc, I64(g, "minus1", {-1})});
  auto cv = Propagate(g, concat);
  ASSERT_FALSE(cv[0].empty());
  EXPECT_EQ(cv[0].ToInt64Vector(), (std::vector<int64_t>{2, -1}));
}

TEST(InferShape, ValuesOfSliceTransposeExpandTileRangeConstantOfShapeSplit) {
  Graph g;
  Value v = g.AddInitializer("v", Tensor::Int64s({0, 1, 2, 3, 4, 5}, {2, 3}));
  auto val = [&](OpKind op, std::vector<Value> in, Attributes a = {}, size_t outs = 1) {
    Node* n = g.AddNode(op, std::move(in), outs);
    n->attrs() = a;
    std::vector<Tensor> r = Propagate(g, n);
    return r;
  };
  EXPECT_EQ(val(OpKind::kSlice, {v, I64(g, "b", {-1}), I64(g, "e", {-100}), I64(g, "a", {1}), I64(g, "st", {-2})})[0].ToInt64Vector(),
            (std::vector<int64_t>{2, 0, 5, 3}));
  EXPECT_EQ(val(OpKind::kTranspose, {v})[0].ToInt64Vector(), (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(val(OpKind::kExpand, {v, I64(g, "es", {2, 1, 1})})[0].dims(), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(val(OpKind::kTile, {v, I64(g, "rep", {1, 2})})[0].ToInt64Vector(),
            (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}));
  Value s = g.AddInitializer("s", Tensor::Int64s({1}, {}));
  Value l = g.AddInitializer("l", Tensor::Int64s({7}, {}));
  Value d = g.AddInitializer("d", Tensor::Int64s({3}, {}));
  EXPECT_EQ(val(OpKind::kRange, {s, l, d})[0].ToInt64Vector(), (std::vector<int64_t>{1, 4}));
  Attributes fill;
  fill.Set("value", Tensor::Int64s({1}, {1}));
  EXPECT_EQ(val(OpKind::kConstantOfShape, {I64(g, "cs", {3})}, fill)[0].ToInt64Vector(), (std::vector<int64_t>{1, 1, 1}));
  Attributes axis1;
  axis1.Set("axis", int64_t{1});
  auto parts = val(OpKind::kSplit, {v, I64(g, "sp", {1, 2})}, axis1, 2);
  EXPECT_EQ(parts[1].ToInt64Vector(), (std::vector<int64_t>{1, 2, 4, 5}));
  EXPECT_EQ(val(OpKind::kSqueeze, {g.AddInitializer("one", Tensor::Int64s({9}, {1}))})[0].rank(), 0u);
}

TEST(InferShape, LargeValuesAreNotPropagated) {
  Graph g;
  Value big = g.AddInitializer("big", *Tensor::Zeros(DType::kFloat32, {kMaxPropagatedElements + 1}));
  Node* t = g.AddNode(OpKind::kTranspose, {big});
  EXPECT_TRUE(Propagate(g, t)[0].empty());
}

TEST(InferShape, SymbolicDimsThroughSliceConcatGatherExpandResizePad) {
  Graph g;
  Dim b = Dim::Symbolic("batch");
  Value x = g.AddInput("x", Sym(DType::kFloat32, {b, Dim::Static(8), Dim::Static(6)}));
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  Node* sl = g.AddNode(OpKind::kSlice, {x, I64(g, "b0", {0, 1}), I64(g, "e0", {kMax, -1}), I64(g, "a0", {0, -1})});
  Node* cc = g.AddNode(OpKind::kConcat, {x, x});
  cc->attrs().Set("axis", int64_t{1});
  Node* ga = g.AddNode(OpKind::kGather, {x, g.AddInitializer("ix", Tensor::Int64s({0, 1, 2}, {3}))});
  ga->attrs().Set("axis", int64_t{-1});
  Node* ex = g.AddNode(OpKind::kExpand, {x, I64(g, "es", {1, 8, 1})});
  Node* x4 = g.AddNode(OpKind::kUnsqueeze, {x, I64(g, "ua", {1})});
  Node* rs = g.AddNode(OpKind::kResize, {x4->output(0), Value{}, g.AddInitializer("sc", Tensor::Floats({1, 1, 2, 0.5f}, {4}))});
  Node* pd = g.AddNode(OpKind::kPad, {x, I64(g, "pads", {0, 1, 2, 0, 1, 2})});
  pd->attrs().Set("mode", std::string("reflect"));
  Status st = g.InferShapes();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(g.type(sl->output(0)).ToString(), "float32[batch,8,4]");
  EXPECT_EQ(g.type(cc->output(0)).ToString(), "float32[batch,16,6]");
  EXPECT_EQ(g.type(ga->output(0)).ToString(), "float32[batch,8,3]");
  EXPECT_EQ(g.type(ex->output(0)).ToString(), "float32[batch,8,6]");
  EXPECT_EQ(g.type(rs->output(0)).ToString(), "float32[batch,1,16,3]");
  EXPECT_EQ(g.type(pd->output(0)).ToString(), "float32[batch,10,10]");
}

// GatherND: indices[:-1] + data[b+k:], the batch symbol kept; k beyond the
// data's rank less batch_dims is an error.
TEST(InferShape, GatherNDTakesIndexTuplesAndBatchDims) {
  Graph g;
  Value x = g.AddInput("x", Sym(DType::kFloat32, {Dim::Symbolic("batch"), Dim::Static(4), Dim::Static(5), Dim::Static(6)}));
  Value i2 = g.AddInput("i2", Sym(DType::kInt64, {Dim::Static(7), Dim::Static(2)}));
  Value ib = g.AddInput("ib", Sym(DType::kInt64, {Dim::Symbolic("batch"), Dim::Static(3), Dim::Static(1)}));
  Node* plain = g.AddNode(OpKind::kGatherND, {x, i2});
  Node* batched = g.AddNode(OpKind::kGatherND, {x, ib});
  batched->attrs().Set("batch_dims", int64_t{1});
  ASSERT_TRUE(g.InferShapes().ok()) << g.InferShapes().ToString();
  EXPECT_EQ(g.type(plain->output(0)).ToString(), "float32[7,5,6]");
  EXPECT_EQ(g.type(batched->output(0)).ToString(), "float32[batch,3,5,6]");

  Graph bad;
  Value y = bad.AddInput("y", TensorType::Of(DType::kFloat32, {2, 3}));
  Value i3 = bad.AddInput("i3", TensorType::Of(DType::kInt64, {1, 3}));
  bad.AddNode(OpKind::kGatherND, {y, i3}, 1, "gnd");
  Status st = bad.InferShapes();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("indices' last dim is 3, expected 1..2"), std::string::npos) << st.message();
}

// NonZero: [rank, N] with N unknown until the data is (a plan learns it);
// of a known value, the indices themselves.
TEST(InferShape, NonZeroCountIsTheDatas) {
  Graph g;
  Value x = g.AddInput("x", Sym(DType::kBool, {Dim::Symbolic("batch"), Dim::Static(16)}));
  Node* nz = g.AddNode(OpKind::kNonZero, {x});
  Node* known = g.AddNode(OpKind::kNonZero, {g.AddInitializer("c", Tensor::Int64s({0, 3, 0, 5}, {2, 2}))});
  ASSERT_TRUE(g.InferShapes().ok()) << g.InferShapes().ToString();
  EXPECT_EQ(g.type(nz->output(0)).ToString(), "int64[2,?]");
  EXPECT_EQ(g.type(known->output(0)).ToString(), "int64[2,2]");
  std::vector<Tensor> values;
  ASSERT_TRUE(g.InferNode(known, &values).ok());
  ASSERT_FALSE(values[0].empty());
  EXPECT_EQ(values[0].data<int64_t>()[0], 0);  // (0, 1) and (1, 1)
  EXPECT_EQ(values[0].data<int64_t>()[1], 1);
  EXPECT_EQ(values[0].data<int64_t>()[2], 1);
  EXPECT_EQ(values[0].data<int64_t>()[3], 1);
}

TEST(InferShape, ErrorsNameTheNode) {
  Graph g;
  Value x = g.AddInput("x", TensorType::Of(DType::kFloat32, {2, 3}));
  Node* r = g.AddNode(OpKind::kReshape, {x, I64(g, "s", {4, -1})}, 1, "bad_reshape");
  Status s = g.InferNode(r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("Reshape node 'bad_reshape'"), std::string::npos) << s.message();
  Node* rz = g.AddNode(OpKind::kResize, {x, Value{}, g.AddInitializer("sc", Tensor::Floats({1, 2}, {2}))}, 1, "rz");
  rz->attrs().Set("antialias", int64_t{2});
  Status u = g.InferNode(rz);
  EXPECT_EQ(u.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(u.message().find("Resize node 'rz'"), std::string::npos) << u.message();
}

}  // namespace
}  // namespace amptrain::ir
