// Shape/dtype rules and value propagation of the elementwise, reduction and
// normalization ops, on small graphs with symbolic dims.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/graph.h"
#include "ir/onnx_dtype.h"

namespace amptrain::ir {
namespace {

Shape Dims(std::vector<Dim> d) { return Shape(std::move(d)); }
Dim S(int64_t v) { return Dim::Static(v); }
Dim Sym(const char* s) { return Dim::Symbolic(s); }

TEST(OnnxDType, RoundTripsEveryDType) {
  for (DType t : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt64, DType::kInt32,
                  DType::kInt8, DType::kUInt8, DType::kBool})
    EXPECT_EQ(DTypeFromOnnx(OnnxFromDType(t)), t);
  EXPECT_EQ(OnnxFromDType(DType::kFloat16), 10);
  EXPECT_EQ(DTypeFromOnnx(8), DType::kUndefined);  // STRING
}

TEST(InferElementwise, BroadcastsSymbolicDims) {
  Graph g;
  Value x = g.AddInput("x", TensorType::Of(DType::kFloat32, Dims({Sym("batch"), S(1), S(3)})));
  Value b = g.AddInput("b", TensorType::Of(DType::kFloat32, Dims({S(4), S(1)})));
  Node* add = g.AddNode(OpKind::kAdd, {x, b}, 1, "add");
  ASSERT_TRUE(g.InferNode(add).ok());
  EXPECT_EQ(g.type(add->output(0)).shape, Dims({Sym("batch"), S(4), S(3)}));
  Value c = g.AddInput("c", TensorType::Of(DType::kBool, Dims({S(3)})));
  Node* where = g.AddNode(OpKind::kWhere, {c, x, b}, 1, "where");
  ASSERT_TRUE(g.InferNode(where).ok());
  EXPECT_EQ(g.type(where->output(0)).dtype, DType::kFloat32);
  EXPECT_EQ(g.type(where->output(0)).shape, Dims({Sym("batch"), S(4), S(3)}));
  Node* eq = g.AddNode(OpKind::kEqual, {x, b}, 1, "eq");
  ASSERT_TRUE(g.InferNode(eq).ok());
  EXPECT_EQ(g.type(eq->output(0)).dtype, DType::kBool);
}

TEST(InferElementwise, RejectsMixedDTypesAndBadShapes) {
  Graph g;
  Value x = g.AddInput("x", TensorType::Of(DType::kFloat32, {2, 3}));
  Value h = g.AddInput("h", TensorType::Of(DType::kFloat16, {2, 3}));
  Value y = g.AddInput("y", TensorType::Of(DType::kFloat32, {4}));
  Status mixed = g.InferNode(g.AddNode(OpKind::kAdd, {x, h}, 1, "mixed_add"));
  EXPECT_EQ(mixed.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(mixed.message().find("Add node 'mixed_add'"), std::string::npos) << mixed.message();
  EXPECT_NE(mixed.message().find("float16"), std::string::npos);
  EXPECT_FALSE(g.InferNode(g.AddNode(OpKind::kMul, {x, y}, 1, "bad_bcast")).ok());
  Value i = g.AddInput("i", TensorType::Of(DType::kInt64, {3}));
  EXPECT_FALSE(g.InferNode(g.AddNode(OpKind::kSigmoid, {i}, 1, "sig_int")).ok());
  EXPECT_TRUE(g.InferNode(g.AddNode(OpKind::kRelu, {i}, 1, "relu_int")).ok());
  EXPECT_FALSE(g.InferNode(g.AddNode(OpKind::kNot, {x}, 1, "not_float")).ok());
}

TEST(InferElementwise, PowKeepsBaseDType) {
  Graph g;
  Value x = g.AddInput("x", TensorType::Of(DType::kInt32, {2, 3}));
  Value e = g.AddInput("e", TensorType::Of(DType::kFloat32, {3}));
  Node* pow = g.AddNode(OpKind::kPow, {x, e}, 1, "pow");
  ASSERT_TRUE(g.InferNode(pow).ok());
  EXPECT_EQ(g.type(pow->output(0)).dtype, DType::kInt32);
}

TEST(InferElementwise, CastAndGeluAttributes) {
  Graph g;
  Value x = g.AddInput("x", TensorType::Of(DType::kFloat32, Dims({Sym("n"), S(2)})));
  Node* cast = g.AddNode(OpKind::kCast, {x}, 1, "cast");
  cast->attrs().Set("to", int64_t{10});
  ASSERT_TRUE(g.InferNode(cast).ok());
  EXPECT_EQ(g.type(cast->output(0)).dtype, DType::kFloat16);
  EXPECT_EQ(g.type(cast->output(0)).shape, Dims({Sym("n"), S(2)}));
  cast->attrs().Set("to", int64_t{8});
  EXPECT_EQ(g.InferNode(cast).code(), StatusCode::kUnimplemented);
  Node* gelu = g.AddNode(OpKind::kGelu, {x}, 1, "gelu");
  gelu->attrs().Set("approximate", std::string("erf"));
  EXPECT_FALSE(g.InferNode(gelu).ok());
}

TEST(InferElementwise, HardSigmoidAndHardSwishTakeFloats) {
  Graph g;
  Value x = g.AddInput("x", TensorType::Of(DType::kBFloat16, Dims({Sym("n"), S(3)})));
  for (OpKind op : {OpKind::kHardSigmoid, OpKind::kHardSwish}) {
    Node* n = g.AddNode(op, {x});
    ASSERT_TRUE(g.InferNode(n).ok()) << Schema(op).name;
    EXPECT_EQ(g.type(n->output(0)).ToString(), g.type(x).ToString()) << Schema(op).name;
  }
  Value i = g.AddInput("i", TensorType::Of(DType::kInt32, {3}));
  EXPECT_FALSE(g.InferNode(g.AddNode(OpKind::kHardSwish, {i}, 1, "hs_int")).ok());
  Node* bad = g.AddNode(OpKind::kHardSigmoid, {x}, 1, "bad_alpha");
  bad->attrs().Set("alpha", std::string("0.2"));
  Status s = g.InferNode(bad);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("alpha"), std::string::npos) << s.message();
}

TEST(InferElementwise, ModBroadcastsAndNeedsFmodForFloats) {
  Graph g;
  Value a = g.AddInput("a", TensorType::Of(DType::kInt64, Dims({Sym("n"), S(1), S(3)})));
  Value b = g.AddInput("b", TensorType::Of(DType::kInt64, Dims({S(4), S(1)})));
  Node* mod = g.AddNode(OpKind::kMod, {a, b}, 1, "mod");
  ASSERT_TRUE(g.InferNode(mod).ok());
  EXPECT_EQ(g.type(mod->output(0)).ToString(), TensorType::Of(DType::kInt64, Dims({Sym("n"), S(4), S(3)})).ToString());

  Value f = g.AddInput("f", TensorType::Of(DType::kFloat16, {3}));
  Node* float_mod = g.AddNode(OpKind::kMod, {f, f}, 1, "float_mod");
  Status s = g.InferNode(float_mod);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("Mod node 'float_mod': fmod=0 takes integer inputs before opset 28"), std::string::npos)
      << s.message();
  float_mod->attrs().Set("fmod", int64_t{1});
  ASSERT_TRUE(g.InferNode(float_mod).ok());
  EXPECT_EQ(g.type(float_mod->output(0)).dtype, DType::kFloat16);
  float_mod->attrs().Set("fmod", int64_t{2});
  EXPECT_FALSE(g.InferNode(float_mod).ok());
  EXPECT_FALSE(g.InferNode(g.AddNode(OpKind::kMod, {a, f}, 1, "mixed")).ok());
}

// From opset 28, fmod=0 takes floats too: a - floor(a / b) * b, the divisor's
// sign, a zero with b's sign, NaN for a zero divisor or an infinite dividend.
TEST(InferElementwise, ModOfFloatsWithFmod0FromOpset28) {
  Graph g;
  g.info().opset = 28;
  const float inf = std::numeric_limits<float>::infinity();
  Value a = g.AddInitializer("a", Tensor::Floats({7.5f, -7.5f, 7.5f, 0.0f, -0.0f, 2.0f, -2.0f, inf, 1.0f}, {9}));
  Value b = g.AddInitializer("b", Tensor::Floats({2.0f, 2.0f, -2.0f, -3.0f, 3.0f, inf, inf, 1.0f, 0.0f}, {9}));
  std::vector<Tensor> values;
  ASSERT_TRUE(g.InferNode(g.AddNode(OpKind::kMod, {a, b}), &values).ok());
  const std::vector<float> want = {1.5f, 0.5f, -0.5f, -0.0f, 0.0f, 2.0f, inf};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(values[0].data<float>()[i], want[i]) << i;
    EXPECT_EQ(std::signbit(values[0].data<float>()[i]), std::signbit(want[i])) << i;
  }
  EXPECT_TRUE(std::isnan(values[0].data<float>()[7]));
  EXPECT_TRUE(std::isnan(values[0].data<float>()[8]));
}

// Mod propagates values (shape arithmetic): fmod=0 takes the divisor's sign
// as Python's %, fmod=1 the dividend's as C's %; x mod 0 gives 0.
TEST(InferElementwise, ModPropagatesPythonAndCRemainders) {
  Graph g;
  Value a = g.AddInitializer("a", Tensor::Int64s({7, -7, 7, -7, 6, 5}, {6}));
  Value b = g.AddInitializer("b", Tensor::Int64s({3, 3, -3, -3, 3, 0}, {6}));
  std::vector<Tensor> values;
  Node* py = g.AddNode(OpKind::kMod, {a, b});
  ASSERT_TRUE(g.InferNode(py, &values).ok());
  EXPECT_EQ(values[0].ToInt64Vector(), (std::vector<int64_t>{1, 2, -2, -1, 0, 0}));
  Node* c = g.AddNode(OpKind::kMod, {a, b});
  c->attrs().Set("fmod", int64_t{1});
  ASSERT_TRUE(g.InferNode(c, &values).ok());
  EXPECT_EQ(values[0].ToInt64Vector(), (std::vector<int64_t>{1, -1, 1, -1, 0, 0}));
}

TEST(InferElementwise, CastLikeTakesTheDTypeOfLike) {
  Graph g;
  Value x = g.AddInput("x", TensorType::Of(DType::kFloat32, Dims({Sym("n"), S(2)})));
  Value like = g.AddInput("like", TensorType::Of(DType::kFloat16, {5}));
  Node* n = g.AddNode(OpKind::kCastLike, {x, like}, 1, "castlike");
  ASSERT_TRUE(g.InferNode(n).ok());
  EXPECT_EQ(g.type(n->output(0)).ToString(), TensorType::Of(DType::kFloat16, Dims({Sym("n"), S(2)})).ToString());
  // Values propagate as through Cast: int64 -> like's float32.
  Value ints = g.AddInitializer("ints", Tensor::Int64s({3, -1}, {2}));
  Value f = g.AddInitializer("f", Tensor::Floats({0.5f}, {}));
  std::vector<Tensor> values;
  ASSERT_TRUE(g.InferNode(g.AddNode(OpKind::kCastLike, {ints, f}), &values).ok());
  ASSERT_EQ(values[0].dtype(), DType::kFloat32);
  EXPECT_EQ(values[0].data<float>()[1], -1.0f);
  Value untyped = g.AddInput("untyped", TensorType{});
  EXPECT_FALSE(g.InferNode(g.AddNode(OpKind::kCastLike, {x, untyped}, 1, "no_like")).ok());
}

TEST(InferElementwise, ClipBoundsMustBeScalarsOfTheInputDType) {
  Graph g;
  Value x = g.AddInput("x", TensorType::Of(DType::kFloat32, {2, 3}));
  Value lo = g.AddInput("lo", TensorType::Of(DType::kFloat32, std::vector<int64_t>{}));
  Value vec = g.AddInput("vec", TensorType::Of(DType::kFloat32, {3}));
  Value ilo = g.AddInput("ilo", TensorType::Of(DType::kInt64, std::vector<int64_t>{}));
  EXPECT_TRUE(g.InferNode(g.AddNode(OpKind::kClip, {x, lo}, 1, "ok")).ok());
  EXPECT_TRUE(g.InferNode(g.AddNode(OpKind::kClip, {x, Value{}, lo}, 1, "max_only")).ok());
  EXPECT_FALSE(g.InferNode(g.AddNode(OpKind::kClip, {x, vec}, 1, "vector")).ok());
  EXPECT_FALSE(g.InferNode(g.AddNode(OpKind::kClip, {x, ilo}, 1, "int")).ok());
}

// Clip propagates values, min before max, either bound absent (the pads of
// TensorFlow-style "same" padding are max(total, 0), exported as Clip).
TEST(InferElementwise, ClipPropagatesValues) {
  Graph g;
  Value x = g.AddInitializer("x", Tensor::Floats({-3.0f, 0.5f, 7.0f}, {3}));
  Value lo = g.AddInitializer("lo", Tensor::Floats({0.0f}, {}));
  Value hi = g.AddInitializer("hi", Tensor::Floats({6.0f}, {}));
  auto clip = [&](std::vector<Value> in) {
    std::vector<Tensor> values;
    EXPECT_TRUE(g.InferNode(g.AddNode(OpKind::kClip, std::move(in)), &values).ok());
    EXPECT_FALSE(values.empty() || values[0].empty());
    return values.empty() || values[0].empty() ? std::vector<float>{}
                                               : std::vector<float>(values[0].data<float>(), values[0].data<float>() + 3);
  };
  EXPECT_EQ(clip({x, lo}), (std::vector<float>{0.0f, 0.5f, 7.0f}));
  EXPECT_EQ(clip({x, Value{}, hi}), (std::vector<float>{-3.0f, 0.5f, 6.0f}));
  EXPECT_EQ(clip({x, lo, hi}), (std::vector<float>{0.0f, 0.5f, 6.0f}));
  EXPECT_EQ(clip({x}), (std::vector<float>{-3.0f, 0.5f, 7.0f}));
  Value ints = g.AddInitializer("ints", Tensor::Int64s({-2, 9}, {2}));
  Value ilo = g.AddInitializer("ilo", Tensor::Int64s({0}, {}));
  std::vector<Tensor> values;
  ASSERT_TRUE(g.InferNode(g.AddNode(OpKind::kClip, {ints, ilo}), &values).ok());
  EXPECT_EQ(values[0].ToInt64Vector(), (std::vector<int64_t>{0, 9}));
}

// Pow and Sqrt propagate values (traced sizes: int(N ** 0.5)); integer Pow
// wraps as the kernels do.
TEST(InferElementwise, PowAndSqrtPropagateValues) {
  Graph g;
  Value n = g.AddInitializer("n", Tensor::Floats({16.0f, 2.0f}, {2}));
  Value half = g.AddInitializer("half", Tensor::Floats({0.5f}, {}));
  std::vector<Tensor> values;
  ASSERT_TRUE(g.InferNode(g.AddNode(OpKind::kPow, {n, half}), &values).ok());
  ASSERT_FALSE(values.empty() || values[0].empty());
  EXPECT_EQ(values[0].data<float>()[0], 4.0f);
  EXPECT_EQ(values[0].data<float>()[1], std::sqrt(2.0f));
  ASSERT_TRUE(g.InferNode(g.AddNode(OpKind::kSqrt, {n}), &values).ok());
  ASSERT_FALSE(values.empty() || values[0].empty());
  EXPECT_EQ(values[0].data<float>()[0], 4.0f);
  Value base = g.AddInitializer("base", Tensor::Int64s({3, -1, 2, 5}, {4}));
  Value exp = g.AddInitializer("exp", Tensor::Int64s({4, 3, 64, -1}, {4}));
  ASSERT_TRUE(g.InferNode(g.AddNode(OpKind::kPow, {base, exp}), &values).ok());
  EXPECT_EQ(values[0].ToInt64Vector(), (std::vector<int64_t>{81, -1, 0, 0}));
}

TEST(InferElementwise, PropagatesShapeArithmeticValues) {
  Graph g;
  Value shape = g.AddInitializer("shape", Tensor::Int64s({2, 3, -7}, {3}));
  Value one = g.AddInitializer("one", Tensor::Int64s({2}, {}));
  std::vector<Tensor> values;
  auto run = [&](OpKind op, std::vector<Value> in) {
    Node* n = g.AddNode(op, std::move(in));
    EXPECT_TRUE(g.InferNode(n, &values).ok());
    EXPECT_FALSE(values.at(0).empty()) << Schema(op).name;
    return values.empty() || values[0].empty() ? std::vector<int64_t>{} : values[0].ToInt64Vector();
  };
  EXPECT_EQ(run(OpKind::kAdd, {shape, one}), (std::vector<int64_t>{4, 5, -5}));
  EXPECT_EQ(run(OpKind::kSub, {shape, one}), (std::vector<int64_t>{0, 1, -9}));
  EXPECT_EQ(run(OpKind::kMul, {shape, one}), (std::vector<int64_t>{4, 6, -14}));
  EXPECT_EQ(run(OpKind::kDiv, {shape, one}), (std::vector<int64_t>{1, 1, -3}));  // truncation
  EXPECT_EQ(run(OpKind::kNeg, {shape}), (std::vector<int64_t>{-2, -3, 7}));
  EXPECT_EQ(run(OpKind::kMax, {shape, one}), (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(run(OpKind::kMin, {shape, one}), (std::vector<int64_t>{2, 2, -7}));
  EXPECT_EQ(run(OpKind::kEqual, {shape, one}), (std::vector<int64_t>{1, 0, 0}));
  EXPECT_EQ(run(OpKind::kLess, {shape, one}), (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(run(OpKind::kGreater, {shape, one}), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(run(OpKind::kIdentity, {shape}), (std::vector<int64_t>{2, 3, -7}));

  Value cond = g.AddInitializer("cond", [] {
    Tensor t = *Tensor::Zeros(DType::kBool, {3});
    t.data<uint8_t>()[1] = 1;
    return t;
  }());
  EXPECT_EQ(run(OpKind::kWhere, {cond, one, shape}), (std::vector<int64_t>{2, 2, -7}));
  EXPECT_EQ(run(OpKind::kNot, {cond}), (std::vector<int64_t>{1, 0, 1}));

  Node* cast = g.AddNode(OpKind::kCast, {shape});
  cast->attrs().Set("to", int64_t{1});
  ASSERT_TRUE(g.InferNode(cast, &values).ok());
  ASSERT_EQ(values[0].dtype(), DType::kFloat32);
  EXPECT_EQ(values[0].data<float>()[2], -7.0f);

  Value halves = g.AddInitializer("halves", Tensor::Floats({2.5f, -2.5f}, {2}));
  Node* to_int = g.AddNode(OpKind::kCast, {halves});
  to_int->attrs().Set("to", int64_t{7});
  ASSERT_TRUE(g.InferNode(to_int, &values).ok());
  EXPECT_EQ(values[0].ToInt64Vector(), (std::vector<int64_t>{2, -2}));

  // Unknown inputs propagate nothing.
  Value x = g.AddInput("x", TensorType::Of(DType::kInt64, {3}));
  ASSERT_TRUE(g.InferNode(g.AddNode(OpKind::kAdd, {x, one}), &values).ok());
  EXPECT_TRUE(values[0].empty());
}

TEST(InferReduce, AxesKeepdimsAndNoop) {
  Graph g;
  Value x = g.AddInput("x", TensorType::Of(DType::kFloat32, Dims({Sym("b"), S(3), S(4)})));
  Value last = g.AddInitializer("last", Tensor::Int64s({-1}, {1}));
  Value none = g.AddInitializer("none", Tensor::Int64s({}, {0}));
  Value bad = g.AddInitializer("bad", Tensor::Int64s({3}, {1}));
  Value twice = g.AddInitializer("twice", Tensor::Int64s({1, -2}, {2}));
  auto shape_of = [&](OpKind op, std::vector<Value> in, int64_t keepdims, int64_t noop = 0) -> StatusOr<TensorType> {
    Node* n = g.AddNode(op, std::move(in));
    n->attrs().Set("keepdims", keepdims);
    n->attrs().Set("noop_with_empty_axes", noop);
    AMP_RETURN_IF_ERROR(g.InferNode(n));
    return g.type(n->output(0));
  };
  auto r = shape_of(OpKind::kReduceMean, {x, last}, 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->shape, Dims({Sym("b"), S(3)}));
  r = shape_of(OpKind::kReduceSum, {x, last}, 1);
  EXPECT_EQ(r->shape, Dims({Sym("b"), S(3), S(1)}));
  r = shape_of(OpKind::kReduceMax, {x}, 1);
  EXPECT_EQ(r->shape, Dims({S(1), S(1), S(1)}));
  r = shape_of(OpKind::kReduceSum, {x, none}, 0);
  EXPECT_EQ(r->shape, Dims({}));
  r = shape_of(OpKind::kReduceSum, {x, none}, 0, 1);
  EXPECT_EQ(r->shape, Dims({Sym("b"), S(3), S(4)}));
  r = shape_of(OpKind::kReduceSum, {x, bad}, 1);
  EXPECT_EQ(r.status().code(), StatusCode::kOutOfRange);
  EXPECT_NE(r.status().message().find("ReduceSum node"), std::string::npos) << r.status().message();
  EXPECT_FALSE(shape_of(OpKind::kReduceSum, {x, twice}, 1).ok());
  // Axes computed at run time: rank is known only with keepdims.
  Value dyn = g.AddInput("dyn", TensorType::Of(DType::kInt64, {1}));
  r = shape_of(OpKind::kReduceSum, {x, dyn}, 1);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->shape.rank(), 3u);
  EXPECT_FALSE(r->shape.is_static());
  r = shape_of(OpKind::kReduceSum, {x, dyn}, 0);
  EXPECT_FALSE(r->has_shape);
  Value flags = g.AddInput("flags", TensorType::Of(DType::kBool, {3}));
  EXPECT_TRUE(shape_of(OpKind::kReduceMax, {flags}, 0).ok());
  EXPECT_FALSE(shape_of(OpKind::kReduceSum, {flags}, 0).ok());
}

TEST(InferNorm, SoftmaxAxisAndLayerNormOutputs) {
  Graph g;
  Value x = g.AddInput("x", TensorType::Of(DType::kFloat16, Dims({Sym("b"), S(3), S(4)})));
  Node* sm = g.AddNode(OpKind::kSoftmax, {x}, 1, "sm");
  sm->attrs().Set("axis", int64_t{3});
  EXPECT_EQ(g.InferNode(sm).code(), StatusCode::kOutOfRange);
  sm->attrs().Set("axis", int64_t{-3});
  EXPECT_TRUE(g.InferNode(sm).ok());

  Value scale = g.AddInput("scale", TensorType::Of(DType::kFloat16, {3, 4}));
  Node* ln = g.AddNode(OpKind::kLayerNormalization, {x, scale}, 3, "ln");
  ln->attrs().Set("axis", int64_t{1});
  ASSERT_TRUE(g.InferNode(ln).ok());
  EXPECT_EQ(g.type(ln->output(0)).dtype, DType::kFloat16);
  EXPECT_EQ(g.type(ln->output(1)).dtype, DType::kFloat32);
  EXPECT_EQ(g.type(ln->output(2)).shape, Dims({Sym("b"), S(1), S(1)}));
  ln->attrs().Set("axis", int64_t{2});
  EXPECT_FALSE(g.InferNode(ln).ok());  // scale [3,4] does not fit X[2:] = [4]
  Value f32 = g.AddInput("f32", TensorType::Of(DType::kFloat32, {4}));
  EXPECT_FALSE(g.InferNode(g.AddNode(OpKind::kLayerNormalization, {x, f32}, 1, "mixed")).ok());
}

}  // namespace
}  // namespace amptrain::ir
