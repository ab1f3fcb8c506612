// Symbolic shape values (ir/shape.h SymInt, ir/infer/value_util.h): the dims
// of a dynamic-batch export survive the shape arithmetic that PyTorch's
// TorchScript exporter writes around every reshape (Shape -> Gather -> Mul
// -> Unsqueeze -> Concat -> Reshape), and products are canonical monomials.
#include <gtest/gtest.h>

#include "ir/graph.h"

namespace amptrain::ir {
namespace {

Dim Sym(const char* s) { return Dim::Symbolic(s); }

std::string Str(const std::optional<Dim>& d) {
  if (!d) return "none";
  return d->is_static() ? std::to_string(d->value) : d->symbol.empty() ? "?" : d->symbol;
}

TEST(SymbolicDims, ProductsAreCanonicalMonomials) {
  EXPECT_EQ(Str(MulDims(Sym("batch"), Dim::Static(4))), "4*batch");
  EXPECT_EQ(Str(MulDims(Dim::Static(4), Sym("batch"))), "4*batch");
  EXPECT_EQ(Str(MulDims(Sym("4*batch"), Sym("seq"))), "4*batch*seq");
  EXPECT_EQ(Str(MulDims(Sym("seq"), Sym("4*batch"))), "4*batch*seq");  // one name for one product
  EXPECT_EQ(Str(MulDims(Sym("batch"), Dim::Static(1))), "batch");
  EXPECT_EQ(Str(MulDims(Sym("batch"), Dim::Static(0))), "0");
  EXPECT_EQ(Str(DivDims(Sym("4*batch"), Dim::Static(4))), "batch");
  EXPECT_EQ(Str(DivDims(Sym("4*batch*seq"), Sym("batch"))), "4*seq");
  EXPECT_EQ(Str(DivDims(Sym("8*batch"), Sym("2*batch"))), "4");
  EXPECT_EQ(Str(DivDims(Dim::Static(12), Dim::Static(4))), "3");
  // No monomial: inexact, a name that is not a factor, an unknown dim.
  EXPECT_EQ(Str(DivDims(Sym("batch"), Dim::Static(2))), "none");
  EXPECT_EQ(Str(DivDims(Dim::Static(12), Dim::Static(5))), "none");
  EXPECT_EQ(Str(DivDims(Sym("batch"), Sym("seq"))), "none");
  EXPECT_EQ(Str(DivDims(Sym("batch"), Dim::Static(0))), "none");
  EXPECT_EQ(Str(MulDims(Sym(""), Dim::Static(2))), "none");
  // An expression with other operators is one factor.
  EXPECT_EQ(Str(MulDims(Sym("s0 + 1"), Dim::Static(2))), "2*s0 + 1");
  EXPECT_EQ(Str(DivDims(Sym("2*s0 + 1"), Dim::Static(2))), "none");
}

struct Builder {
  Graph g;
  Value Node1(OpKind op, std::vector<Value> in, Attributes a = {}) {
    Node* n = g.AddNode(op, std::move(in));
    n->attrs() = std::move(a);
    return n->output(0);
  }
  Value Ints(std::vector<int64_t> v, std::vector<int64_t> dims) { return g.AddInitializer(g.UniqueName("c"), Tensor::Int64s(v, dims)); }
  Value Pick(Value shape, int64_t i) { return Node1(OpKind::kGather, {shape, Ints({i}, {})}); }
  Value Unsq(Value scalar) { return Node1(OpKind::kUnsqueeze, {scalar, Ints({0}, {1})}); }
  std::string Type(Value v) { return g.type(v).ToString(); }
};

// nn.MultiheadAttention as TorchScript exports it: x [seq, batch, 256] is
// reshaped to [seq, batch * heads, head_dim] through its own Shape, then
// back to [seq, batch, 256] after attention.
TEST(SymbolicDims, AttentionReshapesKeepTheBatch) {
  Builder b;
  Value x = b.g.AddInput("x", TensorType::Of(DType::kFloat32, Shape({Dim::Static(128), Sym("batch"), Dim::Static(256)})));
  Value shape = b.Node1(OpKind::kShape, {x});
  Value seq = b.Pick(shape, 0), batch = b.Pick(shape, 1), embed = b.Pick(shape, 2);
  Value bh = b.Node1(OpKind::kMul, {batch, b.Ints({4}, {})});
  Value head_dim = b.Node1(OpKind::kDiv, {embed, b.Ints({4}, {})});
  Value split_shape = b.Node1(OpKind::kConcat, {b.Unsq(seq), b.Unsq(bh), b.Unsq(head_dim)}, [] {
    Attributes a;
    a.Set("axis", int64_t{0});
    return a;
  }());
  Value heads = b.Node1(OpKind::kReshape, {x, split_shape});
  Value back_shape = b.Node1(OpKind::kConcat, {b.Unsq(seq), b.Unsq(b.Node1(OpKind::kDiv, {bh, b.Ints({4}, {})})),
                                               b.Ints({-1}, {1})},
                             [] {
                               Attributes a;
                               a.Set("axis", int64_t{0});
                               return a;
                             }());
  Value back = b.Node1(OpKind::kReshape, {heads, back_shape});
  // Slices and casts of a shape, and the ops that read one.
  Value tail = b.Node1(OpKind::kSlice, {shape, b.Ints({1}, {1}), b.Ints({3}, {1})});
  Value tail64 = b.Node1(OpKind::kCast, {tail}, [] {
    Attributes a;
    a.Set("to", int64_t{7});
    return a;
  }());
  Value zeros = b.Node1(OpKind::kConstantOfShape, {tail64});
  Value wide = b.Node1(OpKind::kExpand, {b.g.AddInitializer("row", Tensor::Floats({1, 2}, {1, 1, 2})),
                                         b.Node1(OpKind::kConcat, {b.Unsq(batch), b.Ints({3, 1}, {2})}, [] {
                                           Attributes a;
                                           a.Set("axis", int64_t{0});
                                           return a;
                                         }())});
  for (Value v : {back, zeros, wide}) b.g.AddOutput(v);
  ASSERT_TRUE(b.g.InferShapes().ok());
  EXPECT_EQ(b.Type(heads), "float32[128,4*batch,64]");
  EXPECT_EQ(b.Type(back), "float32[128,batch,256]");
  EXPECT_EQ(b.Type(zeros), "float32[batch,256]");
  EXPECT_EQ(b.Type(wide), "float32[batch,3,2]");
}

// What cannot be told stays unknown, never wrong: a dim computed with an
// operation that has no monomial, a shape read from data.
TEST(SymbolicDims, UnknownStaysUnknown) {
  Builder b;
  Value x = b.g.AddInput("x", TensorType::Of(DType::kFloat32, Shape({Sym("batch"), Dim::Static(6)})));
  Value batch = b.Pick(b.Node1(OpKind::kShape, {x}), 0);
  Value plus = b.Node1(OpKind::kAdd, {batch, b.Ints({1}, {})});  // batch + 1: no monomial
  Value half = b.Node1(OpKind::kDiv, {batch, b.Ints({2}, {})});   // batch / 2: inexact
  Value data = b.g.AddInput("n", TensorType::Of(DType::kInt64, {1}));
  Value target = b.Node1(OpKind::kConcat, {b.Unsq(plus), b.Unsq(half), data}, [] {
    Attributes a;
    a.Set("axis", int64_t{0});
    return a;
  }());
  Value y = b.Node1(OpKind::kConstantOfShape, {target});
  Value z = b.Node1(OpKind::kConstantOfShape,
                    {b.Node1(OpKind::kConcat, {b.Unsq(plus), b.Unsq(half)}, [] {
                      Attributes a;
                      a.Set("axis", int64_t{0});
                      return a;
                    }())});
  b.g.AddOutput(y);
  b.g.AddOutput(z);
  ASSERT_TRUE(b.g.InferShapes().ok());
  EXPECT_EQ(b.Type(y), "float32[?,?,?]");
  EXPECT_EQ(b.Type(z), "float32[?,?]");
}

}  // namespace
}  // namespace amptrain::ir
