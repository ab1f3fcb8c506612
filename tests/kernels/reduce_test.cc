// CPU reference kernels of the reductions, Softmax/LogSoftmax and
// LayerNormalization against numpy semantics and double-precision formulas.
#include <cmath>
#include <limits>
#include <numeric>

#include "tests/kernels/reference_runner.h"

namespace amptrain::kernels {
namespace {

using ir::DType;
using ir::OpKind;
using ir::Tensor;
using testing::MakeTensor;
using testing::RunOptions;
using testing::Run1;
using testing::Values;

constexpr double kInf = std::numeric_limits<double>::infinity();

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got[i])) << "element " << i;
    else if (std::isinf(want[i])) EXPECT_EQ(got[i], want[i]) << "element " << i;
    else EXPECT_NEAR(got[i], want[i], tol * (1.0 + std::fabs(want[i]))) << "element " << i;
  }
}

Tensor F32(std::vector<int64_t> dims, const std::vector<double>& v) { return MakeTensor(DType::kFloat32, std::move(dims), v); }
Tensor Axes(const std::vector<int64_t>& a) { return Tensor::Int64s(a, {static_cast<int64_t>(a.size())}); }

// The [3, 2, 2] example of the ONNX reduce tests: 1..12.
Tensor Example() { return F32({3, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}); }

ir::Attributes Keep(int64_t keepdims, int64_t noop = 0) {
  ir::Attributes a;
  a.Set("keepdims", keepdims);
  if (noop) a.Set("noop_with_empty_axes", noop);
  return a;
}

TEST(ReduceKernels, SumMeanMaxWithAxesAndKeepdims) {
  RunOptions constant{1, {1}, 2};
  Tensor s = Run1(OpKind::kReduceSum, {Example(), Axes({1})}, Keep(1), constant);
  EXPECT_EQ(s.dims(), (std::vector<int64_t>{3, 1, 2}));
  ExpectNear(Values(s), {4, 6, 12, 14, 20, 22});
  Tensor m = Run1(OpKind::kReduceMean, {Example(), Axes({-2})}, Keep(0), constant);
  EXPECT_EQ(m.dims(), (std::vector<int64_t>{3, 2}));
  ExpectNear(Values(m), {2, 3, 6, 7, 10, 11});
  ExpectNear(Values(Run1(OpKind::kReduceMax, {Example(), Axes({0, 2})}, Keep(0), constant)), {10, 12});
  // Axes known only at run time give the same answer.
  ExpectNear(Values(Run1(OpKind::kReduceSum, {Example(), Axes({1})}, Keep(1))), {4, 6, 12, 14, 20, 22});
}

TEST(ReduceKernels, L2SumsSquaresWide) {
  Tensor l2 = Run1(OpKind::kReduceL2, {Example(), Axes({1})}, Keep(0), RunOptions{1, {1}, 2});
  EXPECT_EQ(l2.dims(), (std::vector<int64_t>{3, 2}));
  ExpectNear(Values(l2), {std::sqrt(10.0), std::sqrt(20.0), std::sqrt(74.0), 10.0, std::sqrt(202.0), std::sqrt(244.0)});
  // The squares of 3e20 and 4e20 overflow float32; their sum in double does
  // not, and the root 5e20 is exact.
  Tensor big = Run1(OpKind::kReduceL2, {F32({1, 2}, {3e20f, -4e20f})}, Keep(1));
  ASSERT_EQ(big.num_elements(), 1);
  EXPECT_EQ(big.data<float>()[0], 5e20f);
  // Zero vector: 0.
  ExpectNear(Values(Run1(OpKind::kReduceL2, {F32({2}, {0, 0})}, Keep(0))), {0});
}

TEST(ReduceKernels, DefaultAndEmptyAxes) {
  Tensor all = Run1(OpKind::kReduceSum, {Example()}, Keep(1));
  EXPECT_EQ(all.dims(), (std::vector<int64_t>{1, 1, 1}));
  ExpectNear(Values(all), {78});
  ExpectNear(Values(Run1(OpKind::kReduceMean, {Example(), Axes({})}, Keep(0))), {6.5});
  Tensor noop = Run1(OpKind::kReduceSum, {Example(), Axes({})}, Keep(1, 1));
  EXPECT_TRUE(noop == Example());
}

TEST(ReduceKernels, EmptySets) {
  Tensor empty = *Tensor::Zeros(DType::kFloat32, {2, 0, 4});
  RunOptions constant{1, {1}, 2};
  Tensor s = Run1(OpKind::kReduceSum, {empty, Axes({1})}, Keep(1), constant);
  EXPECT_EQ(s.dims(), (std::vector<int64_t>{2, 1, 4}));
  ExpectNear(Values(s), std::vector<double>(8, 0.0));
  ExpectNear(Values(Run1(OpKind::kReduceMax, {empty, Axes({1})}, Keep(1), constant)), std::vector<double>(8, -kInf));
  EXPECT_TRUE(std::isnan(Values(Run1(OpKind::kReduceMean, {empty, Axes({1})}, Keep(1), constant))[0]));
  Tensor none = Run1(OpKind::kReduceSum, {empty, Axes({2})}, Keep(1), constant);
  EXPECT_EQ(none.dims(), (std::vector<int64_t>{2, 0, 1}));
  Tensor bools = MakeTensor(DType::kBool, {2, 2}, {1, 0, 0, 0});
  Tensor bmax = Run1(OpKind::kReduceMax, {bools, Axes({1})}, Keep(0), constant);
  EXPECT_EQ(bmax.dtype(), DType::kBool);
  ExpectNear(Values(bmax), {1, 0});
}

TEST(ReduceKernels, LeadingAndInterleavedAxesMatchNaiveSums) {
  // [4, 5, 6] reduced over {0}, {0, 2} and {1}: the kept-inner and general paths.
  std::vector<double> x(120);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<double>(i));
  Tensor t = F32({4, 5, 6}, x);
  auto at = [&](int a, int b, int c) { return static_cast<double>(static_cast<float>(x[static_cast<size_t>(a * 30 + b * 6 + c)])); };
  std::vector<double> over0(30, 0.0), over02(5, 0.0), over1(24, 0.0);
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 5; ++b)
      for (int c = 0; c < 6; ++c) {
        over0[static_cast<size_t>(b * 6 + c)] += at(a, b, c);
        over02[static_cast<size_t>(b)] += at(a, b, c);
        over1[static_cast<size_t>(a * 6 + c)] += at(a, b, c);
      }
  RunOptions constant{1, {1}, 2};
  ExpectNear(Values(Run1(OpKind::kReduceSum, {t, Axes({0})}, Keep(0), constant)), over0, 1e-6);
  ExpectNear(Values(Run1(OpKind::kReduceSum, {t, Axes({0, 2})}, Keep(0), constant)), over02, 1e-6);
  ExpectNear(Values(Run1(OpKind::kReduceSum, {t, Axes({1})}, Keep(0), constant)), over1, 1e-6);
}

TEST(ReduceKernels, HalfSumAccumulatesWide) {
  // 4096 ones: an fp16 accumulator would stop at 2048.
  Tensor ones = MakeTensor(DType::kFloat16, {4096}, std::vector<double>(4096, 1.0));
  Tensor s = Run1(OpKind::kReduceSum, {ones}, Keep(0));
  EXPECT_EQ(s.dtype(), DType::kFloat16);
  ExpectNear(Values(s), {4096}, 0);
  ExpectNear(Values(Run1(OpKind::kReduceMean, {MakeTensor(DType::kInt64, {3}, {1, 2, 4})}, Keep(0))), {2}, 0);  // 7/3 truncates
}

ir::Attributes Axis(int64_t axis) {
  ir::Attributes a;
  a.Set("axis", axis);
  return a;
}

TEST(SoftmaxKernels, StableForLargeInputs) {
  Tensor x = F32({2, 3}, {1000, 1000, 1000, -1000, 0, 1000});
  ExpectNear(Values(Run1(OpKind::kSoftmax, {x})), {1.0 / 3, 1.0 / 3, 1.0 / 3, 0, 0, 1});
  ExpectNear(Values(Run1(OpKind::kLogSoftmax, {x})), {-std::log(3.0), -std::log(3.0), -std::log(3.0), -2000, -1000, 0});
}

TEST(SoftmaxKernels, AxisZeroMatchesFormula) {
  Tensor x = F32({2, 3}, {0, 1, 2, 3, 4, 5});
  std::vector<double> want(6);
  for (int c = 0; c < 3; ++c) {
    double e0 = std::exp(c), e1 = std::exp(c + 3);
    want[static_cast<size_t>(c)] = e0 / (e0 + e1);
    want[static_cast<size_t>(c + 3)] = e1 / (e0 + e1);
  }
  ExpectNear(Values(Run1(OpKind::kSoftmax, {x}, Axis(0))), want);
  ExpectNear(Values(Run1(OpKind::kSoftmax, {x}, Axis(-2))), want);
  Tensor h = Run1(OpKind::kSoftmax, {MakeTensor(DType::kFloat16, {2, 3}, {0, 1, 2, 3, 4, 5})}, Axis(0));
  EXPECT_EQ(h.dtype(), DType::kFloat16);
  ExpectNear(Values(h), want, 1e-3);
}

// numpy's reference: mean and biased variance over X[axis:], in double.
void LayerNormReference(const std::vector<double>& x, int64_t rows, int64_t cols, const std::vector<double>& scale,
                        const std::vector<double>& bias, double eps, std::vector<double>* y, std::vector<double>* mean,
                        std::vector<double>* inv) {
  y->assign(x.size(), 0.0);
  mean->assign(static_cast<size_t>(rows), 0.0);
  inv->assign(static_cast<size_t>(rows), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double m = 0, v = 0;
    for (int64_t c = 0; c < cols; ++c) m += x[static_cast<size_t>(r * cols + c)];
    m /= static_cast<double>(cols);
    for (int64_t c = 0; c < cols; ++c) v += std::pow(x[static_cast<size_t>(r * cols + c)] - m, 2);
    double is = 1 / std::sqrt(v / static_cast<double>(cols) + eps);
    for (int64_t c = 0; c < cols; ++c)
      (*y)[static_cast<size_t>(r * cols + c)] =
          (x[static_cast<size_t>(r * cols + c)] - m) * is * scale[static_cast<size_t>(c)] + (bias.empty() ? 0 : bias[static_cast<size_t>(c)]);
    (*mean)[static_cast<size_t>(r)] = m;
    (*inv)[static_cast<size_t>(r)] = is;
  }
}

TEST(LayerNormKernels, MatchesDoubleFormulaForEveryAxis) {
  std::vector<double> x(24);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(static_cast<float>(std::cos(0.7 * static_cast<double>(i)) * 3));
  for (int64_t axis : {1, 2, -1}) {
    int64_t a = axis < 0 ? axis + 3 : axis;
    std::vector<int64_t> dims = {2, 3, 4};
    std::vector<int64_t> norm(dims.begin() + a, dims.end());
    int64_t cols = std::accumulate(norm.begin(), norm.end(), int64_t{1}, std::multiplies<>());
    std::vector<double> scale(static_cast<size_t>(cols)), bias(static_cast<size_t>(cols));
    for (int64_t c = 0; c < cols; ++c) {
      scale[static_cast<size_t>(c)] = static_cast<float>(0.5 + 0.1 * static_cast<double>(c));
      bias[static_cast<size_t>(c)] = static_cast<float>(-0.25 * static_cast<double>(c));
    }
    ir::Attributes attrs = Axis(axis);
    auto outs = testing::RunReference(OpKind::kLayerNormalization, {F32(dims, x), F32(norm, scale), F32(norm, bias)}, attrs,
                                      RunOptions{3, {}, 2});
    ASSERT_TRUE(outs.ok()) << outs.status().ToString();
    std::vector<double> y, mean, inv;
    LayerNormReference(x, 24 / cols, cols, scale, bias, 1e-5, &y, &mean, &inv);
    ExpectNear(Values((*outs)[0]), y, 1e-5);
    ExpectNear(Values((*outs)[1]), mean, 1e-6);
    ExpectNear(Values((*outs)[2]), inv, 1e-5);
    std::vector<int64_t> stat_dims(dims.begin(), dims.begin() + a);
    stat_dims.resize(3, 1);
    EXPECT_EQ((*outs)[1].dims(), stat_dims);
  }
}

TEST(LayerNormKernels, HalfInputWithoutBiasKeepsFloatStats) {
  std::vector<double> x = {1, 2, 3, 4, -1, 0, 1, 8};
  auto outs = testing::RunReference(OpKind::kLayerNormalization,
                                    {MakeTensor(DType::kFloat16, {2, 4}, x), MakeTensor(DType::kFloat16, {4}, {1, 1, 2, 2})},
                                    {}, RunOptions{2, {}, 1});
  ASSERT_TRUE(outs.ok()) << outs.status().ToString();
  EXPECT_EQ((*outs)[0].dtype(), DType::kFloat16);
  EXPECT_EQ((*outs)[1].dtype(), DType::kFloat32);
  std::vector<double> y, mean, inv;
  LayerNormReference(x, 2, 4, {1, 1, 2, 2}, {}, 1e-5, &y, &mean, &inv);
  ExpectNear(Values((*outs)[0]), y, 1e-3);
  ExpectNear(Values((*outs)[1]), mean, 1e-7);
}

}  // namespace
}  // namespace amptrain::kernels
