// Random kernels (kernels/cpu/random.cc): the draws have the distribution
// the ONNX operator names (moments and quantile fractions at ~6 standard
// errors), honour the `dtype` and `seed` attributes, and are a pure function
// of their seeds: bitwise the same for any thread count, fresh for each run
// seed.
#include <cmath>

#include "ir/onnx_dtype.h"
#include "tests/kernels/nn_test_util.h"

namespace amptrain::kernels::testing {
namespace {

using ir::Attributes;
using ir::Tensor;
using I = std::vector<int64_t>;

constexpr int64_t kN = 200000;

// The `dtype` attribute value (TensorProto.DataType) of `t`.
int64_t Code(DType t) { return ir::OnnxFromDType(t); }

Attributes Attrs(std::initializer_list<std::pair<const char*, ir::AttrValue>> kv) {
  Attributes a;
  for (auto& [k, v] : kv) a.Set(k, v);
  return a;
}

Tensor Run1(OpKind op, const Attributes& a, const std::vector<Tensor>& in, NnRunOptions opt = {}) {
  auto out = RunOp(op, a, in, opt);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? (*out)[0] : Tensor();
}

std::vector<double> Values(const Tensor& t) {
  std::vector<double> v(t.num_elements());
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    switch (t.dtype()) {
      case DType::kFloat32: v[i] = t.data<float>()[i]; break;
      case DType::kFloat64: v[i] = t.data<double>()[i]; break;
      case DType::kBool: v[i] = t.data<bool>()[i]; break;
      case DType::kInt64: v[i] = static_cast<double>(t.data<int64_t>()[i]); break;
      default: ADD_FAILURE() << "no reader for " << DTypeName(t.dtype()); return {};
    }
  }
  return v;
}

struct Moments {
  double mean = 0, var = 0, min = INFINITY, max = -INFINITY;
};

Moments Of(const std::vector<double>& v) {
  Moments m;
  for (double x : v) {
    m.mean += x;
    m.min = std::min(m.min, x);
    m.max = std::max(m.max, x);
  }
  m.mean /= static_cast<double>(v.size());
  for (double x : v) m.var += (x - m.mean) * (x - m.mean);
  m.var /= static_cast<double>(v.size() - 1);
  return m;
}

double FractionWhere(const std::vector<double>& v, bool (*pred)(double)) {
  int64_t k = 0;
  for (double x : v) k += pred(x);
  return static_cast<double>(k) / static_cast<double>(v.size());
}

TEST(RandomReference, UniformLikeHasUniformMomentsInsideItsBounds) {
  Tensor x = Filled({kN}, 7.0f);  // the values do not matter, only the shape and dtype
  Tensor y = Run1(OpKind::kRandomUniformLike, Attrs({{"low", -2.0f}, {"high", 3.0f}}), {x});
  ASSERT_EQ(y.dtype(), DType::kFloat32);
  ASSERT_EQ(y.dims(), I{kN});
  Moments m = Of(Values(y));
  // U(-2, 3): mean 0.5 (standard error 1.44/447 = 0.0032), variance 25/12 (standard error 0.0042).
  EXPECT_NEAR(m.mean, 0.5, 0.02);
  EXPECT_NEAR(m.var, 25.0 / 12.0, 0.03);
  EXPECT_GE(m.min, -2.0);
  EXPECT_LE(m.max, 3.0);
  EXPECT_LT(m.min, -1.99);
  EXPECT_GT(m.max, 2.99);
}

TEST(RandomReference, NormalHasNormalMomentsAndTails) {
  Tensor y = Run1(OpKind::kRandomNormal, Attrs({{"shape", I{400, 500}}, {"mean", 1.0f}, {"scale", 2.0f}}), {});
  ASSERT_EQ(y.dtype(), DType::kFloat32);  // no dtype attribute: float32
  ASSERT_EQ(y.dims(), (I{400, 500}));
  std::vector<double> v = Values(y);
  Moments m = Of(v);
  EXPECT_NEAR(m.mean, 1.0, 0.03);  // standard error 2/447 = 0.0045
  EXPECT_NEAR(std::sqrt(m.var), 2.0, 0.02);
  // P(|z| < 1) = 0.6827, P(z < -2) = 0.02275; standard errors 0.0010 and 0.00033.
  EXPECT_NEAR(FractionWhere(v, [](double x) { return std::abs(x - 1.0) < 2.0; }), 0.6827, 0.006);
  EXPECT_NEAR(FractionWhere(v, [](double x) { return x < 1.0 - 4.0; }), 0.02275, 0.002);
  EXPECT_NEAR(FractionWhere(v, [](double x) { return x > 1.0 + 4.0; }), 0.02275, 0.002);
  for (double x : v) ASSERT_TRUE(std::isfinite(x));
}

TEST(RandomReference, BernoulliDrawsOnesWithProbabilityP) {
  Tensor p = Filled({kN}, 0.25f);
  std::vector<double> v = Values(Run1(OpKind::kBernoulli, Attrs({}), {p}));
  ASSERT_EQ(v.size(), static_cast<size_t>(kN));
  for (double x : v) ASSERT_TRUE(x == 0.0 || x == 1.0);
  EXPECT_NEAR(FractionWhere(v, [](double x) { return x == 1.0; }), 0.25, 0.006);  // standard error 0.00097

  // P = 0 never draws 1, P = 1 always does; P varies per element.
  std::vector<float> edges(1000);
  for (size_t i = 0; i < edges.size(); ++i) edges[i] = i % 2 ? 1.0f : 0.0f;
  std::vector<double> e = Values(Run1(OpKind::kBernoulli, Attrs({}), {Floats(edges, {1000})}));
  for (size_t i = 0; i < edges.size(); ++i) ASSERT_EQ(e[i], edges[i]) << "element " << i;
}

TEST(RandomReference, DTypeAttributeChoosesTheOutputType) {
  Tensor x = Filled({4, 8}, 0.0f);
  Tensor d = Run1(OpKind::kRandomNormalLike, Attrs({{"dtype", Code(DType::kFloat64)}}), {x});
  EXPECT_EQ(d.dtype(), DType::kFloat64);
  EXPECT_EQ(d.dims(), (I{4, 8}));
  Tensor h = Run1(OpKind::kRandomUniformLike, Attrs({{"dtype", Code(DType::kFloat16)}}), {x});
  EXPECT_EQ(h.dtype(), DType::kFloat16);
  Tensor b = Run1(OpKind::kRandomUniform, Attrs({{"shape", I{3}}, {"dtype", Code(DType::kBFloat16)}}), {});
  EXPECT_EQ(b.dtype(), DType::kBFloat16);
  Tensor mask = Run1(OpKind::kBernoulli, Attrs({{"dtype", Code(DType::kBool)}}), {Filled({16}, 1.0f)});
  ASSERT_EQ(mask.dtype(), DType::kBool);
  for (int64_t i = 0; i < 16; ++i) EXPECT_TRUE(mask.data<bool>()[i]);
  Tensor ints = Run1(OpKind::kBernoulli, Attrs({{"dtype", Code(DType::kInt64)}}), {Filled({16}, 1.0f)});
  ASSERT_EQ(ints.dtype(), DType::kInt64);
  for (int64_t i = 0; i < 16; ++i) EXPECT_EQ(ints.data<int64_t>()[i], 1);
}

TEST(RandomReference, DrawsArePureFunctionsOfTheSeeds) {
  Tensor x = Filled({50000}, 0.0f);
  const Attributes a = Attrs({});
  NnRunOptions opt;
  opt.seed = 17;
  opt.run_seed = 3;
  Tensor first = Run1(OpKind::kRandomNormalLike, a, {x}, opt);
  opt.threads = 1;  // other thread count: bitwise identical
  EXPECT_TRUE(Run1(OpKind::kRandomNormalLike, a, {x}, opt) == first);
  opt.run_seed = 4;  // the next training step draws fresh values
  EXPECT_FALSE(Run1(OpKind::kRandomNormalLike, a, {x}, opt) == first);
  opt.run_seed = 3;
  opt.seed = 18;  // another node draws other values
  EXPECT_FALSE(Run1(OpKind::kRandomNormalLike, a, {x}, opt) == first);
}

TEST(RandomReference, SeedAttributeFixesTheNodeSeed) {
  Tensor x = Filled({1000}, 0.0f);
  const Attributes seeded = Attrs({{"seed", 42.0f}});
  NnRunOptions opt;
  opt.seed = 1;
  Tensor a = Run1(OpKind::kRandomUniformLike, seeded, {x}, opt);
  opt.seed = 2;  // the plan's node seed no longer matters
  EXPECT_TRUE(Run1(OpKind::kRandomUniformLike, seeded, {x}, opt) == a);
  EXPECT_FALSE(Run1(OpKind::kRandomUniformLike, Attrs({{"seed", 43.0f}}), {x}, opt) == a);
}

TEST(RandomReference, BadAttributesAreNamed) {
  auto no_shape = RunOp(OpKind::kRandomUniform, Attrs({}), {});
  ASSERT_FALSE(no_shape.ok());
  EXPECT_NE(no_shape.status().ToString().find("shape"), std::string::npos) << no_shape.status().ToString();
  auto reversed = RunOp(OpKind::kRandomUniformLike, Attrs({{"low", 1.0f}, {"high", 0.0f}}), {Filled({4}, 0.0f)});
  ASSERT_FALSE(reversed.ok());
  EXPECT_NE(reversed.status().ToString().find("low"), std::string::npos) << reversed.status().ToString();
  auto int_dtype = RunOp(OpKind::kRandomNormal, Attrs({{"shape", I{2}}, {"dtype", Code(DType::kInt64)}}), {});
  ASSERT_FALSE(int_dtype.ok());
  EXPECT_NE(int_dtype.status().ToString().find("int64"), std::string::npos) << int_dtype.status().ToString();
  auto int_p = RunOp(OpKind::kBernoulli, Attrs({}), {Tensor::Int64s({0, 1}, {2})});
  ASSERT_FALSE(int_p.ok());
}

}  // namespace
}  // namespace amptrain::kernels::testing
