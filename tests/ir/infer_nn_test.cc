// Shape/dtype rules of conv, pooling, BN, Dropout (ir/infer/nn.cc), Gemm and
// MatMul (ir/infer/linalg.cc), run through Graph::InferShapes.
#include <gtest/gtest.h>

#include "ir/graph.h"

namespace amptrain::ir {
namespace {

using I = std::vector<int64_t>;

Shape BatchShape(std::vector<int64_t> rest, const std::string& batch = "N") {
  std::vector<Dim> d{Dim::Symbolic(batch)};
  for (int64_t v : rest) d.push_back(Dim::Static(v));
  return Shape(d);
}

// Builds x -> op(x, extra inputs) and infers; returns the node's output types or the error.
struct OneNode {
  Graph g;
  Node* node = nullptr;
  Status status;
  OneNode(OpKind op, TensorType x, std::vector<TensorType> others, Attributes attrs, size_t outputs = 1) {
    std::vector<Value> in{g.AddInput("x", std::move(x))};
    for (size_t i = 0; i < others.size(); ++i)
      in.push_back(others[i].dtype == DType::kUndefined ? Value{} : g.AddInput("in" + std::to_string(i), others[i]));
    node = g.AddNode(op, in, outputs, "n1");
    node->attrs() = std::move(attrs);
    g.AddOutput(node->output(0));
    status = g.InferShapes();
  }
  const TensorType& out(size_t i = 0) const { return g.type(node->output(i)); }
};

Attributes A(std::initializer_list<std::pair<const char*, AttrValue>> kv) {
  Attributes a;
  for (auto& [k, v] : kv) a.Set(k, v);
  return a;
}

TensorType F32(Shape s) { return TensorType::Of(DType::kFloat32, std::move(s)); }
TensorType F32(I dims) { return TensorType::Of(DType::kFloat32, dims); }

TEST(InferConv, SymbolicBatchStridesPadsGroups) {
  OneNode n(OpKind::kConv, F32(BatchShape({3, 224, 224})), {F32({64, 3, 7, 7}), F32({64})},
            A({{"strides", I{2, 2}}, {"pads", I{3, 3, 3, 3}}}));
  ASSERT_TRUE(n.status.ok()) << n.status.message();
  EXPECT_EQ(n.out().ToString(), "float32[N,64,112,112]");
  OneNode dw(OpKind::kConv, F32({1, 32, 10, 9}), {F32({32, 1, 3, 3})},
             A({{"group", int64_t{32}}, {"pads", I{0, 1, 2, 0}}, {"dilations", I{2, 1}}}));
  ASSERT_TRUE(dw.status.ok()) << dw.status.message();
  EXPECT_EQ(dw.out().shape, Shape::FromStatic({1, 32, 8, 8}));
  OneNode same(OpKind::kConv, F32({1, 4, 7, 7}), {F32({8, 4, 3, 3})},
               A({{"strides", I{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}}));
  ASSERT_TRUE(same.status.ok());
  EXPECT_EQ(same.out().shape, Shape::FromStatic({1, 8, 4, 4}));
}

TEST(InferConv, SymbolicSpatialDimKeptWhereTheWindowKeepsSizes) {
  Shape s({Dim::Symbolic("N"), Dim::Static(4), Dim::Symbolic("H"), Dim::Static(8)});
  OneNode keep(OpKind::kConv, F32(s), {F32({4, 4, 3, 3})}, A({{"pads", I{1, 1, 1, 1}}}));
  ASSERT_TRUE(keep.status.ok()) << keep.status.message();
  EXPECT_EQ(keep.out().ToString(), "float32[N,4,H,8]");
  OneNode strided(OpKind::kConv, F32(s), {F32({4, 4, 3, 3})}, A({{"pads", I{1, 1, 1, 1}}, {"strides", I{2, 2}}}));
  ASSERT_TRUE(strided.status.ok());
  EXPECT_FALSE(strided.out().shape[2].is_static());
  EXPECT_EQ(strided.out().shape[2].symbol, "");
  EXPECT_EQ(strided.out().shape[3].value, 4);
}

TEST(InferConv, ErrorsNameTheNode) {
  OneNode bad_c(OpKind::kConv, F32({1, 3, 8, 8}), {F32({8, 4, 3, 3})}, A({}));
  ASSERT_FALSE(bad_c.status.ok());
  EXPECT_NE(bad_c.status.message().find("Conv node 'n1'"), std::string::npos) << bad_c.status.message();
  OneNode bad_group(OpKind::kConv, F32({1, 4, 8, 8}), {F32({6, 1, 3, 3})}, A({{"group", int64_t{4}}}));
  EXPECT_FALSE(bad_group.status.ok());
  OneNode bad_rank(OpKind::kConv, F32({1, 4, 8, 8}), {F32({6, 4, 3})}, A({}));
  EXPECT_FALSE(bad_rank.status.ok());
  OneNode too_big(OpKind::kConv, F32({1, 4, 2, 2}), {F32({6, 4, 3, 3})}, A({}));
  EXPECT_FALSE(too_big.status.ok());
  OneNode bad_bias(OpKind::kConv, F32({1, 4, 8, 8}), {F32({6, 4, 3, 3}), F32({5})}, A({}));
  EXPECT_FALSE(bad_bias.status.ok());
  OneNode bad_pad(OpKind::kConv, F32({1, 4, 8, 8}), {F32({6, 4, 3, 3})}, A({{"auto_pad", std::string("SAME")}}));
  EXPECT_FALSE(bad_pad.status.ok());
}

TEST(InferConvTranspose, OutputShapeOutputPaddingGroups) {
  OneNode n(OpKind::kConvTranspose, F32(BatchShape({8, 3, 3})), {F32({8, 2, 3, 3})},
            A({{"strides", I{3, 2}}, {"output_padding", I{1, 1}}, {"group", int64_t{2}}}));
  ASSERT_TRUE(n.status.ok()) << n.status.message();
  EXPECT_EQ(n.out().ToString(), "float32[N,4,10,8]");
  OneNode os(OpKind::kConvTranspose, F32({1, 1, 3, 3}), {F32({1, 2, 3, 3})},
             A({{"strides", I{3, 2}}, {"output_shape", I{10, 8}}}));
  ASSERT_TRUE(os.status.ok());
  EXPECT_EQ(os.out().shape, Shape::FromStatic({1, 2, 10, 8}));
  OneNode same(OpKind::kConvTranspose, F32({1, 1, 3, 3}), {F32({1, 2, 3, 3})},
               A({{"strides", I{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}}));
  ASSERT_TRUE(same.status.ok());
  EXPECT_EQ(same.out().shape, Shape::FromStatic({1, 2, 6, 6}));
  // output_shape fixes the spatial dims even for symbolic input sizes.
  Shape sym({Dim::Symbolic("N"), Dim::Static(1), Dim::Symbolic("H"), Dim::Symbolic("W")});
  OneNode fixed(OpKind::kConvTranspose, F32(sym), {F32({1, 2, 3, 3})},
                A({{"strides", I{3, 2}}, {"output_shape", I{10, 8}}}));
  ASSERT_TRUE(fixed.status.ok()) << fixed.status.message();
  EXPECT_EQ(fixed.out().ToString(), "float32[N,2,10,8]");
}

TEST(InferPool, CeilModeIndicesGlobal) {
  OneNode ceil(OpKind::kMaxPool, F32(BatchShape({64, 112, 112})), {},
               A({{"kernel_shape", I{3, 3}}, {"strides", I{2, 2}}, {"ceil_mode", int64_t{1}}}), 2);
  ASSERT_TRUE(ceil.status.ok()) << ceil.status.message();
  EXPECT_EQ(ceil.out().ToString(), "float32[N,64,56,56]");
  EXPECT_EQ(ceil.out(1).ToString(), "int64[N,64,56,56]");
  // ceil_mode: the last window may not start in the end padding: 5 + pads 1/1, k2 s2 -> 3 (not 4).
  OneNode last(OpKind::kAveragePool, F32({1, 1, 5}), {},
               A({{"kernel_shape", I{2}}, {"strides", I{2}}, {"pads", I{1, 1}}, {"ceil_mode", int64_t{1}}}));
  ASSERT_TRUE(last.status.ok());
  EXPECT_EQ(last.out().shape, Shape::FromStatic({1, 1, 3}));
  // ceil_mode: a window wider than the input gives one output (PyTorch's
  // AvgPool2d(1280, ceil_mode=True) over 2x2); without ceil_mode it is an error.
  OneNode wide(OpKind::kAveragePool, F32({1, 3, 2, 2}), {},
               A({{"kernel_shape", I{320, 320}}, {"strides", I{320, 320}}, {"ceil_mode", int64_t{1}}}));
  ASSERT_TRUE(wide.status.ok()) << wide.status.message();
  EXPECT_EQ(wide.out().shape, Shape::FromStatic({1, 3, 1, 1}));
  OneNode too_wide(OpKind::kAveragePool, F32({1, 3, 2, 2}), {},
                   A({{"kernel_shape", I{320, 320}}, {"strides", I{320, 320}}}));
  EXPECT_FALSE(too_wide.status.ok());
  OneNode no_k(OpKind::kAveragePool, F32({1, 1, 5, 5}), {}, A({}));
  EXPECT_FALSE(no_k.status.ok());
  OneNode global(OpKind::kGlobalAveragePool, F32(BatchShape({2048, 7, 7})), {}, A({}));
  ASSERT_TRUE(global.status.ok());
  EXPECT_EQ(global.out().ToString(), "float32[N,2048,1,1]");
}

TEST(InferBatchNorm, InferenceAndTrainingOutputs) {
  std::vector<TensorType> params(4, F32({16}));
  OneNode inf(OpKind::kBatchNormalization, F32(BatchShape({16, 8, 8})), params, A({}));
  ASSERT_TRUE(inf.status.ok()) << inf.status.message();
  EXPECT_EQ(inf.out().ToString(), "float32[N,16,8,8]");
  OneNode train(OpKind::kBatchNormalization, F32(BatchShape({16, 8, 8})), params, A({{"training_mode", int64_t{1}}}),
                3);
  ASSERT_TRUE(train.status.ok());
  EXPECT_EQ(train.out(1).ToString(), "float32[16]");
  EXPECT_EQ(train.out(2).ToString(), "float32[16]");
  std::vector<TensorType> wrong(4, F32({15}));
  EXPECT_FALSE(OneNode(OpKind::kBatchNormalization, F32({1, 16, 2, 2}), wrong, A({})).status.ok());
}

TEST(InferDropout, OutputAndMask) {
  OneNode d(OpKind::kDropout, F32(BatchShape({10})), {TensorType::Of(DType::kFloat32, I{})}, A({}), 2);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(d.out().ToString(), "float32[N,10]");
  EXPECT_EQ(d.out(1).ToString(), "bool[N,10]");
  EXPECT_FALSE(OneNode(OpKind::kDropout, F32({2}), {TensorType::Of(DType::kInt64, I{})}, A({})).status.ok());
}

TEST(InferGemm, TransposesAndC) {
  OneNode g(OpKind::kGemm, F32(BatchShape({2048})), {F32({1000, 2048}), F32({1000})}, A({{"transB", int64_t{1}}}));
  ASSERT_TRUE(g.status.ok()) << g.status.message();
  EXPECT_EQ(g.out().ToString(), "float32[N,1000]");
  OneNode ta(OpKind::kGemm, F32({3, 5}), {F32({3, 4})}, A({{"transA", int64_t{1}}}));
  ASSERT_TRUE(ta.status.ok());
  EXPECT_EQ(ta.out().shape, Shape::FromStatic({5, 4}));
  EXPECT_FALSE(OneNode(OpKind::kGemm, F32({3, 5}), {F32({4, 6})}, A({})).status.ok());
  EXPECT_FALSE(OneNode(OpKind::kGemm, F32({3, 5}), {F32({5, 6}), F32({4})}, A({})).status.ok());
}

TEST(InferMatMul, NumpySemantics) {
  OneNode b(OpKind::kMatMul, F32(Shape({Dim::Symbolic("B"), Dim::Static(1), Dim::Static(4), Dim::Static(5)})),
            {F32({3, 5, 6})}, A({}));
  ASSERT_TRUE(b.status.ok()) << b.status.message();
  EXPECT_EQ(b.out().ToString(), "float32[B,3,4,6]");
  OneNode v(OpKind::kMatMul, F32({5}), {F32({2, 5, 3})}, A({}));
  ASSERT_TRUE(v.status.ok());
  EXPECT_EQ(v.out().shape, Shape::FromStatic({2, 3}));
  OneNode vv(OpKind::kMatMul, F32({5}), {F32({5})}, A({}));
  ASSERT_TRUE(vv.status.ok());
  EXPECT_EQ(vv.out().shape.rank(), 0u);
  OneNode bad(OpKind::kMatMul, F32({2, 4, 5}), {F32({3, 5, 6})}, A({}));
  ASSERT_FALSE(bad.status.ok());
  EXPECT_NE(bad.status.message().find("MatMul node 'n1'"), std::string::npos) << bad.status.message();
  EXPECT_FALSE(OneNode(OpKind::kMatMul, F32({2, 4}), {F32({5, 6})}, A({})).status.ok());
}


// The optimizer-step ops' layout (ir/ops.def): AdamStep takes (p, g, m, v,
// low) per parameter and the hyper-parameters; an fp32 master may have a
// bf16 gradient and a bf16 low copy; a low copy of a bf16 parameter and
// mixed parameter dtypes are refused by name.
TEST(InferOptimizerStep, AdamStepGroupsOfFiveWithLowGradientsAndCopies) {
  auto run = [](std::vector<TensorType> in) {
    Graph g;
    std::vector<Value> values;
    for (size_t i = 0; i < in.size(); ++i)
      values.push_back(in[i].dtype == DType::kUndefined ? Value{} : g.AddInput("in" + std::to_string(i), in[i]));
    g.AddNode(OpKind::kAdamStep, values, 0, "adam");
    return g.InferShapes();
  };
  const TensorType f32 = F32(I{4}), bf16 = TensorType::Of(DType::kBFloat16, I{4}), none;
  const TensorType hyper = F32(I{5});
  EXPECT_TRUE(run({f32, f32, f32, f32, none, hyper}).ok());
  Status low = run({f32, bf16, f32, f32, bf16, f32, f32, f32, f32, none, hyper});
  EXPECT_TRUE(low.ok()) << low.message();
  EXPECT_FALSE(run({f32, f32, f32, f32, hyper}).ok());  // four inputs per parameter
  Status mixed = run({f32, f32, f32, f32, none, bf16, bf16, f32, f32, none, hyper});
  EXPECT_NE(mixed.message().find("mixes dtypes"), std::string::npos) << mixed.message();
  Status copy = run({bf16, bf16, f32, f32, bf16, hyper});
  EXPECT_NE(copy.message().find("low copy"), std::string::npos) << copy.message();
}

}  // namespace
}  // namespace amptrain::ir
