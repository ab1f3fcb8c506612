// The direct kernels (kernels/cpu/direct_kernels.h) against the reference
// kernels in fp32, bf16 and fp16 (tests/kernels/kernel_paths.h, DirectPaths).
// Pools and elementwise ops bit for bit: the direct loops compare, sum and
// round exactly as the reference does, so no tolerance is needed.
// BatchNormalization within a tolerance (see BatchNormTolerance). Inputs hold ties, signed zeros,
// infinities and quiet NaNs besides random values; geometries cover odd
// sizes, strides, asymmetric and ceil_mode padding, dilation and overlapping
// windows. Erf and its gradient (direct_erf.cc) are not the reference's
// bits: within one ulp of the exact value; SoftmaxCrossEntropyLoss and its
// gradient (direct_loss.cc) within one ulp of the reference. ReduceSumTo bit for bit too (each output summed in double in the
// reference's order). Also: the registry picks "direct" for these ops, and what the
// direct kernels decline (MaxPool's Indices, 1-D pools) still runs.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "ir/onnx_dtype.h"
#include "tests/kernels/grad_test_util.h"
#include "tests/kernels/kernel_paths.h"
#include "tests/kernels/nn_test_util.h"

namespace amptrain::kernels::testing {
namespace {

using gradtest::Options;
using gradtest::RunKernel;
using ir::Attributes;
using ir::Tensor;
using I = std::vector<int64_t>;

// Random values in [-1, 1) of `t`, with every 7th element a copy of its
// neighbour (ties), and a few zeros, -0, +-inf and NaN when `specials`.
Tensor Values(const I& dims, uint32_t seed, DType t, bool specials = true) {
  Tensor x = gradtest::Random(dims, seed, t);
  const int64_t n = x.num_elements();
  const double inf = std::numeric_limits<double>::infinity();
  const double special[] = {0.0, -0.0, inf, -inf, std::numeric_limits<double>::quiet_NaN()};
  for (int64_t i = 1; i < n; ++i) {
    if (i % 7 == 0) ir::SetElementFromDouble(x, i, x.GetAsDouble(i - 1));
    if (specials && i % 53 == 0) ir::SetElementFromDouble(x, i, special[(i / 53) % 5]);
  }
  return x;
}

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.dims() == b.dims() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// Runs `op` on the direct kernel (which must accept it, and which the
// registry must pick by default) and on the reference; every output bitwise.
void ExpectSameAsReference(const std::string& what, OpKind op, const Attributes& a, const std::vector<Tensor>& in) {
  Options direct, ref, any;
  direct.impl = "direct";
  any.impl = "";
  auto got = RunKernel(op, a, in, direct);
  ASSERT_TRUE(got.ok()) << what << ": " << got.status().ToString();
  auto want = RunKernel(op, a, in, ref);
  ASSERT_TRUE(want.ok()) << what << ": " << want.status().ToString();
  for (size_t o = 0; o < want->size(); ++o)
    EXPECT_TRUE(SameBits((*got)[o], (*want)[o])) << what << " output " << o << " " << ir::DTypeName(in[0].dtype());
  auto picked = RunKernel(op, a, in, any);
  ASSERT_TRUE(picked.ok()) << what << ": " << picked.status().ToString();
  EXPECT_TRUE(SameBits((*picked)[0], (*got)[0])) << what << ": the registry's pick differs";
}

struct PoolCase {
  const char* name;
  I x, kernel, strides, dilations, pads;
  int64_t ceil_mode = 0;
};

Attributes PoolAttrs(const PoolCase& c, int64_t count_include_pad = 0) {
  Attributes a;
  a.Set("kernel_shape", c.kernel);
  if (!c.strides.empty()) a.Set("strides", c.strides);
  if (!c.dilations.empty()) a.Set("dilations", c.dilations);
  if (!c.pads.empty()) a.Set("pads", c.pads);
  a.Set("ceil_mode", c.ceil_mode);
  a.Set("count_include_pad", count_include_pad);
  return a;
}

const std::vector<PoolCase>& PoolCases() {
  static const std::vector<PoolCase> cases = {
      {"2x2 s2 (SimpleCNN)", {3, 5, 28, 28}, {2, 2}, {2, 2}, {}, {}},
      {"2x2 s2 odd sizes", {2, 3, 9, 7}, {2, 2}, {2, 2}, {}, {}},
      {"3x3 s2 p1 (ResNet stem)", {2, 4, 15, 16}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}},
      {"3x3 s1 p1", {1, 3, 7, 9}, {3, 3}, {1, 1}, {}, {1, 1, 1, 1}},
      {"3x3 s2 ceil_mode", {1, 4, 10, 11}, {3, 3}, {2, 2}, {}, {}, 1},
      {"2x2 s2 ceil_mode odd", {2, 2, 7, 9}, {2, 2}, {2, 2}, {}, {}, 1},
      {"3x3 s1 dilation 2", {1, 2, 12, 11}, {3, 3}, {1, 1}, {2, 2}, {}},
      {"2x3 s1x2 asymmetric pads", {1, 4, 9, 9}, {2, 3}, {1, 2}, {}, {1, 0, 0, 2}},
      {"1x3 s1", {1, 2, 5, 8}, {1, 3}, {1, 1}, {}, {}},
      {"3x2 s3 ceil, pads", {1, 3, 11, 6}, {3, 2}, {3, 3}, {}, {1, 1, 0, 1}, 1},
      {"whole plane", {2, 3, 5, 6}, {5, 6}, {1, 1}, {}, {}},
      {"empty batch", {0, 3, 8, 8}, {2, 2}, {2, 2}, {}, {}},
      {"2x2 s2 wide rows", {1, 3, 5, 71}, {2, 2}, {2, 2}, {}, {}},  // 16 windows at a time, then 3
      {"2x2 s2 many channels", {2, 37, 7, 6}, {2, 2}, {2, 2}, {}, {}},  // channels-last: 16, 16, then 5 lanes
  };
  return cases;
}

class DirectPath : public ::testing::TestWithParam<KernelPath> {};
INSTANTIATE_DIRECT_PATHS(DirectPath);

TEST_P(DirectPath, MaxPoolMatchesReferenceBitwise) {
  const DType t = GetParam().dtype;
  for (const PoolCase& c : PoolCases())
    ExpectSameAsReference(c.name, OpKind::kMaxPool, PoolAttrs(c), {Values(c.x, 1, t)});
  // All-equal windows (ReLU zeros before the pool): the first maximum's bits.
  const PoolCase& c = PoolCases()[2];
  Tensor zeros = *Tensor::Zeros(t, c.x);
  for (int64_t i = 0; i < zeros.num_elements(); i += 2) ir::SetElementFromDouble(zeros, i, -0.0);
  ExpectSameAsReference("signed zeros", OpKind::kMaxPool, PoolAttrs(c), {zeros});
}

TEST_P(DirectPath, AveragePoolMatchesReferenceBitwise) {
  const DType t = GetParam().dtype;
  for (const PoolCase& c : PoolCases()) {
    for (int64_t include_pad : {0, 1}) {
      // No specials: an inf or NaN makes the whole window inf/NaN on both sides, hiding the divisor.
      ExpectSameAsReference(std::string(c.name) + (include_pad ? " include pad" : " exclude pad"),
                            OpKind::kAveragePool, PoolAttrs(c, include_pad), {Values(c.x, 2, t, false)});
    }
  }
  ExpectSameAsReference("with inf and NaN", OpKind::kAveragePool, PoolAttrs(PoolCases()[3]),
                        {Values(PoolCases()[3].x, 3, t)});
}

TEST_P(DirectPath, GlobalAveragePoolMatchesReferenceBitwise) {
  const DType t = GetParam().dtype;
  for (const I& x : {I{3, 5, 28, 28}, I{2, 3, 9, 7}, I{1, 17, 1, 1}, I{0, 3, 8, 8}, I{2, 64, 7, 7}})
    ExpectSameAsReference("GlobalAveragePool " + ir::Shape::FromStatic(x).ToString(), OpKind::kGlobalAveragePool, Attributes{},
                          {Values(x, 4, t, false)});
  ExpectSameAsReference("GlobalAveragePool with inf and NaN", OpKind::kGlobalAveragePool, Attributes{},
                        {Values({2, 3, 5, 6}, 5, t)});
}

TEST_P(DirectPath, MaxPoolGradMatchesReferenceBitwise) {
  const DType t = GetParam().dtype;
  for (const PoolCase& c : PoolCases()) {
    const Attributes a = PoolAttrs(c);
    Tensor x = Values(c.x, 4, t);
    auto y = RunKernel(OpKind::kMaxPool, a, {x});
    ASSERT_TRUE(y.ok()) << c.name << ": " << y.status().ToString();
    ExpectSameAsReference(c.name, OpKind::kMaxPoolGrad, a, {Values((*y)[0].dims(), 5, t), x});
    ExpectSameAsReference(std::string(c.name) + ", finite dY", OpKind::kMaxPoolGrad, a,
                          {Values((*y)[0].dims(), 6, t, false), x});
  }
  // Ties everywhere: the gradient goes to the first maximum of each window
  // (the 2x2 stride-2 path, 16 windows at a time and one, and the general one).
  for (size_t k : {size_t{0}, size_t{2}, PoolCases().size() - 1}) {
    const PoolCase& c = PoolCases()[k];
    Tensor zeros = *Tensor::Zeros(t, c.x);
    auto y = RunKernel(OpKind::kMaxPool, PoolAttrs(c), {zeros});
    ASSERT_TRUE(y.ok());
    ExpectSameAsReference(std::string("ties, ") + c.name, OpKind::kMaxPoolGrad, PoolAttrs(c),
                          {Values((*y)[0].dims(), 7, t, false), zeros});
  }
}

// Channels-last dY, X and dX (and X, Y of the forward pools) give the
// reference's bits on every geometry, with specials and with ties; so do a
// plain Y (dY) beside a channels-last X (and dX): the pool before a Flatten.
TEST_P(DirectPath, PoolsChannelsLastMatchReferenceBitwise) {
  const DType t = GetParam().dtype;
  Options last;
  last.impl = "direct";
  last.channels_last_inputs = 0b11;
  last.channels_last_outputs = 0b1;
  Options plain_y = last;  // forward: X channels-last, Y plain
  plain_y.channels_last_inputs = 0b1;
  plain_y.channels_last_outputs = 0;
  Options plain_dy = last;  // gradient: dY plain, X and dX channels-last
  plain_dy.channels_last_inputs = 0b10;
  for (const PoolCase& c : PoolCases()) {
    const Attributes a = PoolAttrs(c);
    for (bool ties : {false, true}) {
      const std::string what = std::string(c.name) + (ties ? ", ties" : "");
      const Tensor x = ties ? *Tensor::Zeros(t, c.x) : Values(c.x, 8, t);
      auto y = RunKernel(OpKind::kMaxPool, a, {x});
      ASSERT_TRUE(y.ok()) << what << ": " << y.status().ToString();
      for (const Options* o : {&last, &plain_y}) {
        auto y_last = RunKernel(OpKind::kMaxPool, a, {x}, *o);
        ASSERT_TRUE(y_last.ok()) << what << ": " << y_last.status().ToString();
        EXPECT_TRUE(SameBits((*y_last)[0], (*y)[0]))
            << what << " MaxPool " << ir::DTypeName(t) << (o == &plain_y ? ", plain Y" : "");
      }
      const std::vector<Tensor> in = {Values((*y)[0].dims(), 9, t), x};
      auto want = RunKernel(OpKind::kMaxPoolGrad, a, in);
      ASSERT_TRUE(want.ok()) << what << ": " << want.status().ToString();
      for (const Options* o : {&last, &plain_dy}) {
        auto got = RunKernel(OpKind::kMaxPoolGrad, a, in, *o);
        ASSERT_TRUE(got.ok()) << what << ": " << got.status().ToString();
        EXPECT_TRUE(SameBits((*got)[0], (*want)[0]))
            << what << " MaxPoolGrad " << ir::DTypeName(t) << (o == &plain_dy ? ", plain dY" : "");
      }
    }
  }
  // bf16 signaling NaNs and -0 in X and dY of the 2x2 path (it moves the
  // loaded bits and quiets a NaN itself): the reference's bits. (fp16 widens
  // through F16C, which quiets a signaling NaN as it loads: lanes16.h.)
  if (t == DType::kBFloat16) {
    const PoolCase two{"2x2 stride 2, 40 channels", {2, 40, 6, 4}, {2, 2}, {2, 2}, {}, {}};
    const Attributes a = PoolAttrs(two);
    Tensor x = Values(two.x, 10, t);
    const uint16_t snan = 0x7f81, neg_snan = 0xff81;
    for (int64_t i = 3; i < x.num_elements(); i += 29) x.data<uint16_t>()[i] = (i / 29) % 2 ? snan : neg_snan;
    auto y = RunKernel(OpKind::kMaxPool, a, {x});
    ASSERT_TRUE(y.ok()) << y.status().ToString();
    auto y_last = RunKernel(OpKind::kMaxPool, a, {x}, last);
    ASSERT_TRUE(y_last.ok()) << y_last.status().ToString();
    EXPECT_TRUE(SameBits((*y_last)[0], (*y)[0])) << "MaxPool with signaling NaNs " << ir::DTypeName(t);
    Tensor dy = Values((*y)[0].dims(), 11, t);
    for (int64_t i = 0; i < dy.num_elements(); i += 5) dy.data<uint16_t>()[i] = i % 2 ? snan : 0x8000;  // -0
    auto want = RunKernel(OpKind::kMaxPoolGrad, a, {dy, x});
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    auto got = RunKernel(OpKind::kMaxPoolGrad, a, {dy, x}, last);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_TRUE(SameBits((*got)[0], (*want)[0])) << "MaxPoolGrad with signaling NaNs and -0 " << ir::DTypeName(t);
  }
  // The layouts the kernels decline: a channels-last Y beside a plain X, a
  // channels-last dY beside a plain X, X and dX apart.
  const PoolCase& c = PoolCases()[0];
  const Tensor x = Values(c.x, 8, t);
  Options y_only = last;
  y_only.channels_last_inputs = 0;
  EXPECT_FALSE(RunKernel(OpKind::kMaxPool, PoolAttrs(c), {x}, y_only).ok());
  auto y = RunKernel(OpKind::kMaxPool, PoolAttrs(c), {x});
  ASSERT_TRUE(y.ok());
  Options dy_only = last, x_only = last;
  dy_only.channels_last_inputs = 0b1;
  dy_only.channels_last_outputs = 0b1;
  x_only.channels_last_outputs = 0;
  for (const Options* o : {&dy_only, &x_only})
    EXPECT_FALSE(RunKernel(OpKind::kMaxPoolGrad, PoolAttrs(c), {Values((*y)[0].dims(), 9, t), x}, *o).ok());
}

// Unused dX (data == nullptr) is left alone.
TEST_P(DirectPath, MaxPoolGradSkipsAnUnusedOutput) {
  const DType t = GetParam().dtype;
  const PoolCase& c = PoolCases()[0];
  Options direct;
  direct.impl = "direct";
  direct.unused = {true};
  Tensor x = Values(c.x, 8, t);
  auto out = RunKernel(OpKind::kMaxPoolGrad, PoolAttrs(c), {Values({3, 5, 14, 14}, 9, t), x}, direct);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
}

TEST_P(DirectPath, DeclinesWhatTheReferenceRuns) {
  const DType t = GetParam().dtype;
  Options direct, any;
  direct.impl = "direct";
  any.impl = "";
  Attributes a;
  a.Set("kernel_shape", I{2});
  // 1-D pool: reference.
  std::vector<Tensor> in1d = {Values({1, 2, 9}, 10, t)};
  EXPECT_FALSE(RunKernel(OpKind::kMaxPool, a, in1d, direct).ok());
  EXPECT_TRUE(RunKernel(OpKind::kMaxPool, a, in1d, any).ok());
  // MaxPool with its Indices output: reference.
  Attributes a2 = PoolAttrs(PoolCases()[1]);
  Options two = direct, two_any = any;
  two.num_outputs = two_any.num_outputs = 2;
  std::vector<Tensor> in = {Values(PoolCases()[1].x, 11, t)};
  EXPECT_FALSE(RunKernel(OpKind::kMaxPool, a2, in, two).ok());
  EXPECT_TRUE(RunKernel(OpKind::kMaxPool, a2, in, two_any).ok());
}

// Every 2-byte pattern once, in a [256, 256] tensor of `t`.
Tensor AllPatterns(DType t) {
  Tensor x = *Tensor::Zeros(t, {256, 256});
  for (uint32_t i = 0; i < 65536; ++i) x.data<uint16_t>()[i] = static_cast<uint16_t>(i);
  return x;
}

// fp32 bit patterns spread over all 2^32 (a multiplicative hash of the index),
// the ties and boundaries of fp16/bf16 rounding, and the specials.
Tensor FloatPatterns() {
  std::vector<uint32_t> bits;
  for (uint32_t i = 0; i < (1u << 18); ++i) bits.push_back(i * 0x9E3779B1u);
  for (uint32_t h = 0; h < 65536; h += 7) {
    const uint32_t f = ir::FloatBits(ir::HalfToFloat(static_cast<uint16_t>(h)));
    for (uint32_t d : {0u, 1u, 0xfffu, 0x1000u, 0x1001u, 0x2000u, 0x8000u, 0x7fffu}) bits.insert(bits.end(), {f + d, f - d});
  }
  for (float v : {0.0f, -0.0f, 65504.0f, 65520.0f, -65520.0f, 1e-8f, 3e-8f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::signaling_NaN(), std::numeric_limits<float>::denorm_min()})
    bits.push_back(ir::FloatBits(v));
  Tensor x = *Tensor::Zeros(DType::kFloat32, {static_cast<int64_t>(bits.size())});
  std::memcpy(x.raw(), bits.data(), bits.size() * 4);
  return x;
}

TEST_P(DirectPath, ReluMatchesReferenceBitwise) {
  const DType t = GetParam().dtype;
  if (t == DType::kFloat32) {  // the reference's fp32 loop is vectorized already: no direct kernel
    EXPECT_FALSE(RunKernel(OpKind::kRelu, Attributes{}, {Values({4, 8}, 1, t)}, Options{.impl = "direct"}).ok());
    return;
  }
  ExpectSameAsReference("every pattern", OpKind::kRelu, Attributes{}, {AllPatterns(t)});
  ExpectSameAsReference("odd size", OpKind::kRelu, Attributes{}, {Values({3, 37, 41}, 2, t)});
}

TEST_P(DirectPath, ReluGradMatchesReferenceBitwise) {
  const DType t = GetParam().dtype;
  if (t == DType::kFloat32) {
    ExpectSameAsReference("random", OpKind::kReluGrad, Attributes{}, {Values({3, 37, 41}, 3, t), Values({3, 37, 41}, 4, t)});
    return;
  }
  // Y: every pattern; dY: every pattern in another order.
  Tensor y = AllPatterns(t), dy = AllPatterns(t);
  for (uint32_t i = 0; i < 65536; ++i) dy.data<uint16_t>()[i] = static_cast<uint16_t>(i * 40503u + 17u);
  ExpectSameAsReference("every pattern", OpKind::kReluGrad, Attributes{}, {dy, y});
  ExpectSameAsReference("every dY where Y > 0", OpKind::kReluGrad, Attributes{}, {y, Values({256, 256}, 5, t, false)});
}

TEST_P(DirectPath, AddMatchesReferenceBitwise) {
  const DType t = GetParam().dtype;
  // Every pattern against every pattern in another order (2-byte types), the
  // specials against random values, sizes off the vector and block widths.
  if (t != DType::kFloat32) {
    Tensor a = AllPatterns(t), b = AllPatterns(t);
    for (uint32_t i = 0; i < 65536; ++i) b.data<uint16_t>()[i] = static_cast<uint16_t>(i * 40503u + 17u);
    ExpectSameAsReference("every pattern", OpKind::kAdd, Attributes{}, {a, b});
  } else {
    Tensor a = FloatPatterns(), b = FloatPatterns();
    std::reverse(b.data<uint32_t>(), b.data<uint32_t>() + b.num_elements());
    ExpectSameAsReference("fp32 patterns", OpKind::kAdd, Attributes{}, {a, b});
  }
  ExpectSameAsReference("odd size", OpKind::kAdd, Attributes{}, {Values({3, 37, 41}, 6, t), Values({3, 37, 41}, 7, t)});
  ExpectSameAsReference("one block and a bit", OpKind::kAdd, Attributes{}, {Values({513}, 8, t), Values({513}, 9, t)});
  // A broadcasting Add is the reference's.
  EXPECT_FALSE(RunKernel(OpKind::kAdd, Attributes{}, {Values({4, 8}, 1, t), Values({8}, 2, t)},
                         Options{.impl = "direct"}).ok());
  EXPECT_TRUE(RunKernel(OpKind::kAdd, Attributes{}, {Values({4, 8}, 1, t), Values({8}, 2, t)}, Options{.impl = ""}).ok());
}

// ReduceSumTo(X, shape) with the shape as an int64 tensor.
std::vector<Tensor> SumToInputs(const I& x, const I& to, uint32_t seed, DType t) {
  Tensor shape = *Tensor::Zeros(DType::kInt64, {static_cast<int64_t>(to.size())});
  std::copy(to.begin(), to.end(), shape.data<int64_t>());
  return {Values(x, seed, t, false), shape};
}

TEST_P(DirectPath, ReduceSumToMatchesReferenceBitwise) {
  const DType t = GetParam().dtype;
  const struct {
    const char* name;
    I x, to;
  } cases[] = {
      {"Linear bias [B, S, N] -> [N]", {4, 33, 70}, {70}},          // 64 columns, then 6
      {"leading axes kept as 1", {4, 33, 70}, {1, 1, 70}},
      {"per-channel bias -> [C, 1, 1]", {3, 19, 5, 7}, {19, 1, 1}},  // 8 outputs side by side, then 3
      {"middle run kept", {2, 9, 16, 3}, {1, 9, 16, 1}},
      {"trailing axes only", {12, 40}, {12, 1}},
      {"size-1 axes between", {5, 1, 17, 1, 3}, {17, 1, 3}},
      {"nothing summed", {3, 5, 11}, {3, 5, 11}},
      {"big enough for two threads", {64, 512, 8}, {512, 1}},
  };
  for (const auto& c : cases) {
    std::vector<Tensor> in = SumToInputs(c.x, c.to, 12, t);
    ExpectSameAsReference(c.name, OpKind::kReduceSumTo, Attributes{}, in);
    // The bits do not depend on the thread count.
    Options one{.impl = "direct", .threads = 1}, two{.impl = "direct", .threads = 2};
    auto a = RunKernel(OpKind::kReduceSumTo, Attributes{}, in, one), b = RunKernel(OpKind::kReduceSumTo, Attributes{}, in, two);
    ASSERT_TRUE(a.ok() && b.ok()) << c.name;
    EXPECT_TRUE(SameBits((*a)[0], (*b)[0])) << c.name << ": 1 and 2 threads differ";
  }
  // Infinities and NaN reach the sums as in the reference.
  std::vector<Tensor> special = SumToInputs({6, 40}, {40}, 13, t);
  special[0] = Values({6, 40}, 13, t, true);
  ExpectSameAsReference("specials", OpKind::kReduceSumTo, Attributes{}, special);
  // Declined, so the reference runs them: a sum to one element, two kept runs.
  for (const auto& [x, to] : {std::pair<I, I>{{4, 9}, {1}}, std::pair<I, I>{{3, 4, 5}, {3, 1, 5}}}) {
    std::vector<Tensor> in = SumToInputs(x, to, 14, t);
    EXPECT_FALSE(RunKernel(OpKind::kReduceSumTo, Attributes{}, in, Options{.impl = "direct"}).ok());
    EXPECT_TRUE(RunKernel(OpKind::kReduceSumTo, Attributes{}, in, Options{.impl = ""}).ok());
  }
}

// One unit in the last place of `t` at v (its subnormal step below the normal range).
double Ulp(DType t, double v) {
  const int digits = t == DType::kFloat32 ? 24 : t == DType::kFloat16 ? 11 : 8;
  const int min_exp = t == DType::kFloat16 ? -14 : -126;
  int e = 0;
  std::frexp(v, &e);  // v = m 2^e, 0.5 <= |m| < 1
  return std::ldexp(1.0, std::max(e - 1, min_exp) - (digits - 1));
}

// Erf and Erf's UnaryGrad (direct_erf.cc: polynomials and exp in double)
// within one ulp of the exact value (double-precision erf and exp of the
// same input) over a dense sweep, the specials as the reference gives
// them, the same bits on 1 and 2 threads, and the registry's pick.
TEST_P(DirectPath, ErfIsCorrectlyRoundedToAnUlp) {
  const DType t = GetParam().dtype;
  const int64_t n = 200003;
  Tensor x = *Tensor::Zeros(t, {n}), dy = *Tensor::Zeros(t, {n});
  for (int64_t i = 0; i < n; ++i) {
    const double u = -6.0 + 12.0 * static_cast<double>(i) / static_cast<double>(n - 1);
    ir::SetElementFromDouble(x, i, i % 5 == 0 ? std::ldexp(u, -20) : u);  // some tiny ones too
    ir::SetElementFromDouble(dy, i, 1.0 + 0.25 * std::sin(static_cast<double>(i)));
  }
  const double inf = std::numeric_limits<double>::infinity();
  const double special[] = {0.0, -0.0, inf, -inf, std::numeric_limits<double>::quiet_NaN(), 1.0, 3.93, -3.92, 10.2, 9.0};
  for (size_t k = 0; k < std::size(special); ++k) ir::SetElementFromDouble(x, static_cast<int64_t>(k), special[k]);
  Attributes grad;
  grad.Set("op", std::string("Erf"));
  Options one{.impl = "direct", .threads = 1}, two{.impl = "direct", .threads = 2}, any{.impl = ""};
  for (bool backward : {false, true}) {
    const OpKind op = backward ? OpKind::kUnaryGrad : OpKind::kErf;
    const Attributes& a = backward ? grad : Attributes{};
    const std::vector<Tensor> in = backward ? std::vector<Tensor>{dy, x} : std::vector<Tensor>{x};
    auto got = RunKernel(op, a, in, two), got1 = RunKernel(op, a, in, one), picked = RunKernel(op, a, in, any);
    auto ref = RunKernel(op, a, in, Options{});
    ASSERT_TRUE(got.ok() && got1.ok() && picked.ok() && ref.ok()) << got.status().ToString();
    EXPECT_TRUE(SameBits((*got)[0], (*got1)[0])) << "1 and 2 threads differ";
    EXPECT_TRUE(SameBits((*got)[0], (*picked)[0])) << "the registry's pick is not the direct kernel";
    int64_t worst_at = -1;
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double xv = x.GetAsDouble(i), have = (*got)[0].GetAsDouble(i);
      const float xf = static_cast<float>(xv);
      const double exact = backward ? dy.GetAsDouble(i) * 1.1283791670955126 *
                                          std::exp(-static_cast<double>(xf * xf))  // x^2 rounded as the kernels do
                                    : std::erf(xv);
      if (std::isnan(exact) || std::isnan(have)) {
        EXPECT_EQ(std::isnan(exact), std::isnan(have)) << "x = " << xv;
        EXPECT_EQ(std::isnan(have), std::isnan((*ref)[0].GetAsDouble(i))) << "x = " << xv << ": NaN where the reference has none";
        continue;
      }
      const double err = std::abs(have - exact) / Ulp(t, exact);
      if (err > worst) worst = err, worst_at = i;
    }
    EXPECT_LE(worst, 1.0) << (backward ? "UnaryGrad" : "Erf") << " at x = " << x.GetAsDouble(worst_at);
    // Signed zeros and infinities: the reference's bits.
    for (int64_t k = 0; k < 4; ++k)
      EXPECT_EQ(std::signbit((*got)[0].GetAsDouble(k)), std::signbit((*ref)[0].GetAsDouble(k))) << "x = " << special[k];
  }
}

// Gelu and GeluGrad (the exact, erf-based GELU; direct_erf.cc) within one
// ulp of the exact value in double over a dense sweep for x > -5.5 (below,
// where |gelu| < 1.2e-7, within 1.2e-7: 1 + erf cancels to 0 from x = -5.56,
// here as in the reference's fp32 erf; GeluGrad within an ulp of its terms'
// size where they cancel); NaN where the reference has NaN; the same bits on 1 and 2
// threads; the registry's pick; the tanh approximation declined.
TEST_P(DirectPath, GeluIsCorrectlyRoundedToAnUlp) {
  const DType t = GetParam().dtype;
  const int64_t n = 120007;
  Tensor x = *Tensor::Zeros(t, {n}), dy = *Tensor::Zeros(t, {n});
  for (int64_t i = 0; i < n; ++i) {
    ir::SetElementFromDouble(x, i, -8.0 + 16.0 * static_cast<double>(i) / static_cast<double>(n - 1));
    ir::SetElementFromDouble(dy, i, 1.0 + 0.25 * std::sin(static_cast<double>(i)));
  }
  const double inf = std::numeric_limits<double>::infinity();
  const double special[] = {0.0, -0.0, inf, -inf, std::numeric_limits<double>::quiet_NaN()};
  for (size_t k = 0; k < std::size(special); ++k) ir::SetElementFromDouble(x, static_cast<int64_t>(k), special[k]);
  Options direct{.impl = "direct"}, one{.impl = "direct", .threads = 1}, any{.impl = ""};
  for (bool backward : {false, true}) {
    const OpKind op = backward ? OpKind::kGeluGrad : OpKind::kGelu;
    const std::vector<Tensor> in = backward ? std::vector<Tensor>{dy, x} : std::vector<Tensor>{x};
    auto got = RunKernel(op, {}, in, direct), got1 = RunKernel(op, {}, in, one), picked = RunKernel(op, {}, in, any);
    auto ref = RunKernel(op, {}, in, Options{});
    ASSERT_TRUE(got.ok() && got1.ok() && picked.ok() && ref.ok()) << got.status().ToString();
    EXPECT_TRUE(SameBits((*got)[0], (*got1)[0])) << "1 and 2 threads differ";
    EXPECT_TRUE(SameBits((*got)[0], (*picked)[0])) << "the registry's pick is not the direct kernel";
    double worst = 0, worst_x = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double xv = x.GetAsDouble(i), have = (*got)[0].GetAsDouble(i);
      const double cdf = 0.5 * std::erfc(-xv / std::sqrt(2.0));
      const double exact = backward ? dy.GetAsDouble(i) * (cdf + xv * std::exp(-0.5 * xv * xv) / std::sqrt(2 * M_PI))
                                    : xv * cdf;
      const double want_ref = (*ref)[0].GetAsDouble(i);
      if (std::isnan(have) || std::isnan(want_ref)) {
        EXPECT_EQ(std::isnan(have), std::isnan(want_ref)) << "x = " << xv;
        continue;
      }
      if (xv <= -5.5) {  // |exact| < 1.2e-7 here, and 0 is within that of it
        EXPECT_LE(std::abs(have - exact), 1.2e-7) << "x = " << xv;
        continue;
      }
      // GeluGrad's two terms cancel at its zero (x = -0.7518): there one ulp
      // of the terms' size is what any fp32 evaluation can promise.
      const double size = backward ? std::abs(dy.GetAsDouble(i)) *
                                         (cdf + std::abs(xv) * std::exp(-0.5 * xv * xv) / std::sqrt(2 * M_PI))
                                   : std::abs(exact);
      const double err = std::abs(have - exact) / std::max(Ulp(t, exact), Ulp(t, size));
      if (err > worst) worst = err, worst_x = xv;
    }
    EXPECT_LE(worst, 1.0) << (backward ? "GeluGrad" : "Gelu") << " at x = " << worst_x;
  }
  Attributes tanh;
  tanh.Set("approximate", std::string("tanh"));
  EXPECT_FALSE(RunKernel(OpKind::kGelu, tanh, {x}, direct).ok());
  EXPECT_TRUE(RunKernel(OpKind::kGelu, tanh, {x}, any).ok());
}

// Tanh and Sigmoid (in double on ExpNegative) and Pow with a constant
// exponent of 3 within one ulp of the exact value over a dense sweep, Pow's
// x^1 and x^2 the reference's bits; NaN, infinities and signed zeros as the reference gives them; other
// exponents, and an exponent that is not a constant, declined.
TEST_P(DirectPath, TanhSigmoidAndSmallPowersWithinAnUlp) {
  const DType t = GetParam().dtype;
  const int64_t n = 100003;
  Tensor x = *Tensor::Zeros(t, {n});
  for (int64_t i = 0; i < n; ++i) {
    const double u = -12.0 + 24.0 * static_cast<double>(i) / static_cast<double>(n - 1);
    ir::SetElementFromDouble(x, i, i % 7 == 0 ? std::ldexp(u, -18) : u);  // tiny ones too (the series)
  }
  const double inf = std::numeric_limits<double>::infinity();
  const double special[] = {0.0, -0.0, inf, -inf, std::numeric_limits<double>::quiet_NaN()};
  for (size_t k = 0; k < std::size(special); ++k) ir::SetElementFromDouble(x, static_cast<int64_t>(k), special[k]);
  auto exponent = [](double e) {
    Tensor c = *Tensor::Zeros(DType::kFloat32, {});
    ir::SetElementFromDouble(c, 0, e);
    return c;
  };
  Options direct{.impl = "direct"}, one{.impl = "direct", .threads = 1}, any{.impl = ""};
  // tanh, sigmoid, x^1, x^2, x^3
  const OpKind ops[] = {OpKind::kTanh, OpKind::kSigmoid, OpKind::kPow, OpKind::kPow, OpKind::kPow};
  const char* names[] = {"Tanh", "Sigmoid", "x^1", "x^2", "x^3"};
  for (int which = 0; which < 5; ++which) {
    const OpKind op = ops[which];
    const bool pow = op == OpKind::kPow;
    const std::vector<Tensor> in = pow ? std::vector<Tensor>{x, exponent(which - 1)} : std::vector<Tensor>{x};
    Options d = direct, d1 = one, a = any;
    if (pow) d.constant_inputs = d1.constant_inputs = a.constant_inputs = 0b10;
    auto got = RunKernel(op, {}, in, d), got1 = RunKernel(op, {}, in, d1), picked = RunKernel(op, {}, in, a);
    auto ref = RunKernel(op, {}, in, Options{});
    ASSERT_TRUE(got.ok() && got1.ok() && picked.ok() && ref.ok()) << names[which] << ": " << got.status().ToString();
    EXPECT_TRUE(SameBits((*got)[0], (*got1)[0])) << "1 and 2 threads differ";
    EXPECT_TRUE(SameBits((*got)[0], (*picked)[0])) << "the registry's pick is not the direct kernel";
    if (which == 2 || which == 3) {
      EXPECT_TRUE(SameBits((*got)[0], (*ref)[0])) << names[which] << " is not the reference's";
      continue;
    }
    double worst = 0, worst_x = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double xv = x.GetAsDouble(i), have = (*got)[0].GetAsDouble(i), want_ref = (*ref)[0].GetAsDouble(i);
      if (std::isnan(have) || std::isnan(want_ref)) {
        EXPECT_EQ(std::isnan(have), std::isnan(want_ref)) << "x = " << xv;
        continue;
      }
      if (std::isinf(xv) || xv == 0) {
        EXPECT_EQ(have, want_ref) << "x = " << xv;
        EXPECT_EQ(std::signbit(have), std::signbit(want_ref)) << "x = " << xv;
        continue;
      }
      const double exact = which == 0   ? std::tanh(xv)
                           : which == 1 ? 1.0 / (1.0 + std::exp(-xv))
                                        : static_cast<double>(static_cast<long double>(xv) * xv * xv);
      if (std::isinf(have) && std::isinf(want_ref)) continue;  // an fp16 cube past 65504
      const double err = std::abs(have - exact) / Ulp(t, exact);
      if (err > worst) worst = err, worst_x = xv;
    }
    EXPECT_LE(worst, 1.0) << names[which] << " at x = " << worst_x;
  }
  Options d = direct;
  d.constant_inputs = 0b10;
  EXPECT_FALSE(RunKernel(OpKind::kPow, {}, {x, exponent(2.5)}, d).ok());
  EXPECT_FALSE(RunKernel(OpKind::kPow, {}, {x, exponent(2.0)}, direct).ok()) << "a run-time exponent";
}

// Training Dropout (the same mask as the reference's counter-based stream,
// compared as integers here) and DropoutGrad, bit for bit, with and without
// the mask output, at several ratios and run seeds; 1 and 2 threads alike.
TEST_P(DirectPath, DropoutMatchesReferenceBitwise) {
  const DType t = GetParam().dtype;
  const Tensor x = Values({3, 37, 411}, 15, t);  // specials included: they pass or drop like any value
  for (double ratio : {0.1, 0.5, 0.0, 0.9}) {
    Tensor r = *Tensor::Zeros(DType::kFloat32, {});
    ir::SetElementFromDouble(r, 0, ratio);
    for (uint64_t seed : {uint64_t{0}, uint64_t{12345}}) {
      const std::string what = "ratio " + std::to_string(ratio) + " seed " + std::to_string(seed);
      Options direct{.impl = "direct", .training = true, .seed = seed}, ref{.training = true, .seed = seed};
      Options masked = direct, ref_masked = ref, one = masked;
      masked.num_outputs = ref_masked.num_outputs = one.num_outputs = 2;
      one.threads = 1;
      auto got = RunKernel(OpKind::kDropout, Attributes{}, {x, r}, masked);
      auto want = RunKernel(OpKind::kDropout, Attributes{}, {x, r}, ref_masked);
      auto got1 = RunKernel(OpKind::kDropout, Attributes{}, {x, r}, one);
      auto no_mask = RunKernel(OpKind::kDropout, Attributes{}, {x, r}, direct);
      ASSERT_TRUE(got.ok() && want.ok() && got1.ok() && no_mask.ok()) << what << ": " << got.status().ToString();
      EXPECT_TRUE(SameBits((*got)[0], (*want)[0])) << what << " output";
      EXPECT_TRUE(SameBits((*got)[1], (*want)[1])) << what << " mask";
      EXPECT_TRUE(SameBits((*got)[0], (*got1)[0]) && SameBits((*got)[1], (*got1)[1])) << what << ": 1 and 2 threads";
      EXPECT_TRUE(SameBits((*no_mask)[0], (*want)[0])) << what << " without the mask output";
      const std::vector<Tensor> grad_in = {Values(x.dims(), 16, t), (*want)[1], r};
      Options gd{.impl = "direct"}, gr{};
      auto g = RunKernel(OpKind::kDropoutGrad, Attributes{}, grad_in, gd), gw = RunKernel(OpKind::kDropoutGrad, Attributes{}, grad_in, gr);
      ASSERT_TRUE(g.ok() && gw.ok()) << what << ": " << g.status().ToString();
      EXPECT_TRUE(SameBits((*g)[0], (*gw)[0])) << what << " DropoutGrad";
    }
  }
  // Inference-mode Dropout is the reference's copy.
  EXPECT_FALSE(RunKernel(OpKind::kDropout, Attributes{}, {x}, Options{.impl = "direct"}).ok());
}

TEST_P(DirectPath, CastMatchesReferenceBitwise) {
  const DType t = GetParam().dtype;
  Attributes to_float, to_t;
  to_float.Set("to", int64_t{ir::OnnxFromDType(DType::kFloat32)});
  to_t.Set("to", int64_t{ir::OnnxFromDType(t)});
  if (t == DType::kFloat32) {  // fp32 -> fp32 is a copy; the direct Cast converts between widths only
    EXPECT_FALSE(RunKernel(OpKind::kCast, to_float, {Values({4, 8}, 1, t)}, Options{.impl = "direct"}).ok());
    return;
  }
  ExpectSameAsReference("every pattern to fp32", OpKind::kCast, to_float, {AllPatterns(t)});
  ExpectSameAsReference("fp32 patterns", OpKind::kCast, to_t, {FloatPatterns()});
  // Lengths around the vector width and the parallel threshold.
  for (int64_t n : {1, 7, 9, 17, (1 << 15) + 3})
    ExpectSameAsReference("n = " + std::to_string(n), OpKind::kCast, to_float, {Values({n}, 6, t)});
}

// BatchNormalization: the reference sums in double in two passes, the direct
// kernel in fp32 lanes per block (double across blocks) in one shifted pass,
// and computes Y/dX in fp32. On the error normalized by the reference's
// largest magnitude:
//   fp32 outputs (Y/dX of fp32 data, the fp32 statistics and dScale/dB of
//     every path) 1e-5: a few fp32 ulps of the scale, as oneDNN's fp32 BN;
//   fp16 Y/dX 2e-3, bf16 1e-2: both round the same fp32-accurate value once
//     to the 2-byte type, so they differ by at most one step (2^-11, 2^-8)
//     of the scale where a value sits on a rounding boundary; with headroom.
double BatchNormTolerance(DType t) { return t == DType::kFloat16 ? 2e-3 : t == DType::kBFloat16 ? 1e-2 : 1e-5; }

// Compares every output of the direct kernel and the reference.
void ExpectCloseToReference(const std::string& what, OpKind op, const Attributes& a, const std::vector<Tensor>& in,
                            Options opt) {
  Options ref = opt;
  opt.impl = "direct";
  ref.impl = "reference";
  auto got = RunKernel(op, a, in, opt);
  ASSERT_TRUE(got.ok()) << what << ": " << got.status().ToString();
  auto want = RunKernel(op, a, in, ref);
  ASSERT_TRUE(want.ok()) << what << ": " << want.status().ToString();
  for (size_t o = 0; o < want->size(); ++o) {
    if (o < opt.unused.size() && opt.unused[o]) continue;
    EXPECT_LT(NormalizedError((*got)[o], (*want)[o]), BatchNormTolerance((*want)[o].dtype()))
        << what << " output " << o << " " << ir::DTypeName(in[0].dtype());
  }
}

// X of `t` around `offset`, parameters of `p` (fp32; X's type at O3).
std::vector<Tensor> BatchNormInputs(const I& x, DType t, double offset, uint32_t seed, DType p = DType::kFloat32) {
  const int64_t c = x[1];
  Tensor data = gradtest::Random(x, seed, DType::kFloat64, offset - 1.0, offset + 1.0);
  Tensor xt = *Tensor::Zeros(t, x);
  for (int64_t i = 0; i < data.num_elements(); ++i) ir::SetElementFromDouble(xt, i, data.GetAsDouble(i));
  return {xt, gradtest::Random({c}, seed + 1, p, 0.5, 1.5), gradtest::Random({c}, seed + 2, p),
          gradtest::Random({c}, seed + 3, p), gradtest::Random({c}, seed + 4, p, 0.5, 1.5)};
}

// Parameter types: fp32 (O1/O2) and, for 2-byte X, X's own type (O3).
std::vector<DType> ParamTypes(DType t) {
  if (t == DType::kFloat32) return {t};
  return {DType::kFloat32, t};
}

const std::vector<I>& BatchNormShapes() {
  static const std::vector<I> shapes = {{8, 16, 7, 7}, {3, 5, 4, 5}, {2, 3, 61, 37}, {2, 3, 4, 5, 6}, {1, 2, 19},
                                        {8, 20, 2, 2}};
  return shapes;
}

TEST_P(DirectPath, BatchNormCloseToReference) {
  const DType t = GetParam().dtype;
  Attributes a;
  a.Set("epsilon", 1e-3f);
  a.Set("momentum", 0.8f);
  for (const I& x : BatchNormShapes())
    for (double offset : {0.0, 10.0})
    for (DType p : ParamTypes(t)) {
      const std::string what = ir::Shape::FromStatic(x).ToString() + " offset " + std::to_string(offset) +
                               " parameters " + std::string(ir::DTypeName(p));
      const std::vector<Tensor> in = BatchNormInputs(x, t, offset, 20, p);
      ExpectCloseToReference(what + " training", OpKind::kBatchNormalization, a, in,
                             Options{.num_outputs = 3, .training = true});
      ExpectCloseToReference(what + " inference", OpKind::kBatchNormalization, a, in, Options{});
      ExpectCloseToReference(what + " unused running stats", OpKind::kBatchNormalization, a, in,
                             Options{.num_outputs = 3, .training = true, .unused = {false, true, true}});
    }
}

TEST_P(DirectPath, BatchNormGradCloseToReference) {
  const DType t = GetParam().dtype;
  Attributes a;
  a.Set("epsilon", 1e-5f);
  for (const I& x : BatchNormShapes())
    for (double offset : {0.0, 10.0})
    for (DType p : ParamTypes(t)) {
      const std::string what = ir::Shape::FromStatic(x).ToString() + " offset " + std::to_string(offset) +
                               " parameters " + std::string(ir::DTypeName(p));
      const std::vector<Tensor> bn = BatchNormInputs(x, t, offset, 30, p);
      const std::vector<Tensor> in = {Values(x, 31, t, false), bn[0], bn[1]};
      ExpectCloseToReference(what, OpKind::kBatchNormalizationGrad, a, in, Options{.num_outputs = 3});
      ExpectCloseToReference(what + " dX unused", OpKind::kBatchNormalizationGrad, a, in,
                             Options{.num_outputs = 3, .unused = {true, false, false}});
      ExpectCloseToReference(what + " dScale unused", OpKind::kBatchNormalizationGrad, a, in,
                             Options{.num_outputs = 3, .unused = {false, true, false}});
    }
}

// Channels-last X, Y, dY and dX give the plain kernel's bits: every channel's
// sums take the same additions in the same order. Shapes with a partial block
// of 16 channels (5, 20), plane tails (7x7, 4x5) and a flush inside a plane
// (61x37 > 2048).
TEST_P(DirectPath, BatchNormChannelsLastSameBits) {
  const DType t = GetParam().dtype;
  Attributes a;
  a.Set("epsilon", 1e-3f);
  a.Set("momentum", 0.8f);
  for (const I& x : std::vector<I>{{8, 16, 7, 7}, {3, 5, 4, 5}, {2, 3, 61, 37}, {2, 20, 9, 9}, {4, 48, 4, 4},
                                   {8, 20, 2, 2}, {2, 3, 3, 3}})
    for (double offset : {0.0, 10.0})
    for (DType p : ParamTypes(t)) {
      const std::string what = ir::Shape::FromStatic(x).ToString() + " offset " + std::to_string(offset) +
                               " parameters " + std::string(ir::DTypeName(p));
      const std::vector<Tensor> bn = BatchNormInputs(x, t, offset, 40, p);
      const std::vector<Tensor> grad = {Values(x, 41, t, false), bn[0], bn[1]};
      struct Run { const char* name; OpKind op; const std::vector<Tensor>* in; Options plain; uint32_t inputs; };
      const Run runs[] = {
          {" training", OpKind::kBatchNormalization, &bn, Options{.num_outputs = 3, .training = true}, 0b1},
          {" inference", OpKind::kBatchNormalization, &bn, Options{}, 0b1},
          {" grad", OpKind::kBatchNormalizationGrad, &grad, Options{.num_outputs = 3}, 0b11},
          {" grad, dX unused", OpKind::kBatchNormalizationGrad, &grad,
           Options{.num_outputs = 3, .unused = {true, false, false}}, 0b11}};
      for (const Run& r : runs) {
        Options plain = r.plain, last = r.plain;
        plain.impl = last.impl = "direct";
        last.channels_last_inputs = r.inputs;
        last.channels_last_outputs = 0b1;
        auto want = RunKernel(r.op, a, *r.in, plain);
        ASSERT_TRUE(want.ok()) << what << r.name << ": " << want.status().ToString();
        auto got = RunKernel(r.op, a, *r.in, last);
        ASSERT_TRUE(got.ok()) << what << r.name << ": " << got.status().ToString();
        for (size_t o = 0; o < want->size(); ++o)
          EXPECT_TRUE(SameBits((*got)[o], (*want)[o])) << what << r.name << " output " << o << " "
                                                       << ir::DTypeName(t);
      }
    }
}

// The direct BatchNormalization's sums in the order kernels/cpu/batchnorm_lanes.inc
// fixes, written out: 16 fp32 lanes over each plane's groups of 16, flushed into
// double every 2048 elements and at the end, each plane's tail in double.
struct LaneSums {
  double d = 0.0, d2 = 0.0, dy = 0.0, dy_d = 0.0;
};

LaneSums LaneOrderSums(const Tensor& x, const Tensor* dy, int64_t c) {
  const int64_t n_ = x.dims()[0], c_ = x.dims()[1], plane = x.num_elements() / (n_ * c_);
  const float k = static_cast<float>(x.GetAsDouble(c * plane));
  float l[4][16] = {};
  LaneSums out;
  auto flush = [&] {
    for (int j = 0; j < 16; ++j) out.d += l[0][j];
    for (int j = 0; j < 16; ++j) out.d2 += l[1][j];
    for (int j = 0; j < 16; ++j) out.dy += l[2][j];
    for (int j = 0; j < 16; ++j) out.dy_d += l[3][j];
    std::memset(l, 0, sizeof(l));
  };
  int64_t pending = 0;
  for (int64_t n = 0; n < n_; ++n) {
    const int64_t base = (n * c_ + c) * plane;
    int64_t i = 0;
    for (; i + 16 <= plane; i += 16) {
      for (int j = 0; j < 16; ++j) {
        const float d = static_cast<float>(x.GetAsDouble(base + i + j)) - k;
        l[0][j] += d, l[1][j] += d * d;
        if (dy) {
          const float g = static_cast<float>(dy->GetAsDouble(base + i + j));
          l[2][j] += g, l[3][j] += g * d;
        }
      }
      if ((pending += 16) == 2048) flush(), pending = 0;
    }
    for (; i < plane; ++i) {
      const double d = x.GetAsDouble(base + i) - k;
      out.d += d, out.d2 += d * d;
      if (dy) out.dy += dy->GetAsDouble(base + i), out.dy_d += dy->GetAsDouble(base + i) * d;
    }
  }
  flush();
  return out;
}

// One fp32 value rounded to `t`, as its bits.
uint32_t RoundedBits(float v, DType t) {
  if (t == DType::kBFloat16) return ir::FloatToBFloat16(v);
  if (t == DType::kFloat16) return ir::FloatToHalf(v);
  return ir::FloatBits(v);
}

uint32_t ElementBits(const Tensor& t, int64_t i) {
  if (t.dtype() == DType::kFloat32) return ir::FloatBits(t.data<float>()[i]);
  return t.data<uint16_t>()[i];
}

// The direct kernels follow the lane order bit for bit, so their results do
// not depend on the ISA (CI runs this under ONEDNN_MAX_CPU_ISA=AVX2 as well;
// SSE41 takes the portable loops). Sizes cross the flush point inside a plane
// and leave tails; X sits at an offset, so the shift matters.
TEST_P(DirectPath, BatchNormFollowsLaneOrderBitwise) {
  const DType t = GetParam().dtype;
  const float eps = 1e-3f, momentum = 0.8f;
  Attributes a;
  a.Set("epsilon", eps);
  a.Set("momentum", momentum);
  for (const I& dims : {I{3, 2, 37, 29}, I{5, 3, 16}, I{2, 4, 33}}) {
    const std::string what = ir::Shape::FromStatic(dims).ToString();
    const std::vector<Tensor> in = BatchNormInputs(dims, t, 3.0, 50);
    auto y = RunKernel(OpKind::kBatchNormalization, a, in, Options{.impl = "direct", .num_outputs = 3, .training = true});
    ASSERT_TRUE(y.ok()) << what << ": " << y.status().ToString();
    const Tensor dy = Values(dims, 51, t, false);
    auto g = RunKernel(OpKind::kBatchNormalizationGrad, a, {dy, in[0], in[1]},
                       Options{.impl = "direct", .num_outputs = 3});
    ASSERT_TRUE(g.ok()) << what << ": " << g.status().ToString();
    const int64_t plane = in[0].num_elements() / (dims[0] * dims[1]);
    const double count = static_cast<double>(dims[0] * plane);
    int64_t mismatches = 0;
    for (int64_t c = 0; c < dims[1]; ++c) {
      const float x0 = static_cast<float>(in[0].GetAsDouble(c * plane));
      const double scale = in[1].GetAsDouble(c), bias = in[2].GetAsDouble(c);
      // Forward, training mode.
      const LaneSums f = LaneOrderSums(in[0], nullptr, c);
      const double d = f.d / count, mean = x0 + d, var = std::max(f.d2 / count - d * d, 0.0);
      const double fa = scale / std::sqrt(var + static_cast<double>(eps)), fb = bias - mean * fa;
      mismatches += ir::FloatBits((*y)[1].data<float>()[c]) !=
                    ir::FloatBits(static_cast<float>(in[3].GetAsDouble(c) * momentum + mean * (1.0 - momentum)));
      mismatches += ir::FloatBits((*y)[2].data<float>()[c]) !=
                    ir::FloatBits(static_cast<float>(in[4].GetAsDouble(c) * momentum + var * (1.0 - momentum)));
      // Backward.
      const LaneSums b = LaneOrderSums(in[0], &dy, c);
      const double bd = b.d / count, bmean = x0 + bd;
      const double inv = 1.0 / std::sqrt(std::max(b.d2 / count - bd * bd, 0.0) + static_cast<double>(eps));
      const double sdyx = inv * (b.dy_d - bd * b.dy);
      mismatches += ir::FloatBits((*g)[1].data<float>()[c]) != ir::FloatBits(static_cast<float>(sdyx));
      mismatches += ir::FloatBits((*g)[2].data<float>()[c]) != ir::FloatBits(static_cast<float>(b.dy));
      const double ga = scale * inv / count;
      const float k1 = static_cast<float>(ga * count), k2 = static_cast<float>(-ga * inv * sdyx),
                  k3 = static_cast<float>(-ga * b.dy + ga * bmean * inv * sdyx);
      for (int64_t n = 0; n < dims[0]; ++n)
        for (int64_t i = 0; i < plane; ++i) {
          const int64_t e = (n * dims[1] + c) * plane + i;
          const float xv = static_cast<float>(in[0].GetAsDouble(e)), gv = static_cast<float>(dy.GetAsDouble(e));
          mismatches += ElementBits((*y)[0], e) != RoundedBits(xv * static_cast<float>(fa) + static_cast<float>(fb), t);
          mismatches += ElementBits((*g)[0], e) != RoundedBits(xv * k2 + k3 + gv * k1, t);
        }
    }
    EXPECT_EQ(mismatches, 0) << what << " " << ir::DTypeName(t) << " (ISA " << cpu::Cpu().onednn_isa << ")";
  }
}

// SoftmaxCrossEntropyLoss and its gradient on fp32 rows (direct_loss.cc):
// not the reference's bits (exp by polynomial, the row sum in another
// order) but within one ulp of them everywhere, the loss too; the same bits
// on 1 and 2 threads; rows holding inf or NaN as the reference computes
// them, bit for bit; ignored labels; label smoothing.
struct LossCase {
  Tensor scores, labels;
  Attributes attrs;
};

LossCase LossInputs(int64_t n, int64_t c, uint32_t seed, double smoothing) {
  LossCase k{gradtest::Random({n, c}, seed, DType::kFloat32, -8.0, 8.0), *Tensor::Zeros(DType::kInt64, {n}), {}};
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < n; ++i) k.labels.data<int64_t>()[i] = i % 5 == 3 ? -100 : static_cast<int64_t>(rng() % c);
  k.attrs.Set("reduction", std::string("mean"));
  k.attrs.Set("ignore_index", int64_t{-100});
  if (smoothing > 0) k.attrs.Set("label_smoothing", static_cast<float>(smoothing));
  return k;
}

// The largest distance in ulps between a and b, element by element (NaN must match NaN).
double WorstUlps(const Tensor& a, const Tensor& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    const double x = a.GetAsDouble(i), y = b.GetAsDouble(i);
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) return INFINITY;
      continue;
    }
    if (x != y) worst = std::max(worst, std::abs(x - y) / Ulp(DType::kFloat32, y));
  }
  return worst;
}

TEST(DirectLoss, WithinAnUlpOfTheReference) {
  for (double smoothing : {0.0, 0.1}) {
    LossCase k = LossInputs(37, 1000, 81, smoothing);
    Options direct{.impl = "direct", .num_outputs = 2}, one = direct, any = direct, ref{.num_outputs = 2};
    one.threads = 1;
    any.impl = "";
    auto got = RunKernel(OpKind::kSoftmaxCrossEntropyLoss, k.attrs, {k.scores, k.labels}, direct);
    auto got1 = RunKernel(OpKind::kSoftmaxCrossEntropyLoss, k.attrs, {k.scores, k.labels}, one);
    auto picked = RunKernel(OpKind::kSoftmaxCrossEntropyLoss, k.attrs, {k.scores, k.labels}, any);
    auto want = RunKernel(OpKind::kSoftmaxCrossEntropyLoss, k.attrs, {k.scores, k.labels}, ref);
    ASSERT_TRUE(got.ok() && got1.ok() && picked.ok() && want.ok()) << got.status().ToString();
    for (int o = 0; o < 2; ++o) {
      EXPECT_TRUE(SameBits((*got)[o], (*got1)[o])) << "1 and 2 threads differ, output " << o;
      EXPECT_TRUE(SameBits((*got)[o], (*picked)[o])) << "the registry's pick is not the direct kernel";
      EXPECT_LE(WorstUlps((*got)[o], (*want)[o]), 1.0) << "output " << o << ", smoothing " << smoothing;
    }
    // The gradient of the reference's log_prob, at a scale that is not 1.
    const std::vector<Tensor> in = {Tensor::Floats({1.7f}, {}), (*want)[1], k.labels};
    auto grad = RunKernel(OpKind::kSoftmaxCrossEntropyLossGrad, k.attrs, in, Options{.impl = "direct"});
    auto grad1 = RunKernel(OpKind::kSoftmaxCrossEntropyLossGrad, k.attrs, in, Options{.impl = "direct", .threads = 1});
    auto grad_ref = RunKernel(OpKind::kSoftmaxCrossEntropyLossGrad, k.attrs, in, Options{});
    ASSERT_TRUE(grad.ok() && grad1.ok() && grad_ref.ok()) << grad.status().ToString();
    EXPECT_TRUE(SameBits((*grad)[0], (*grad1)[0])) << "1 and 2 threads differ";
    EXPECT_LE(WorstUlps((*grad)[0], (*grad_ref)[0]), 1.0) << "smoothing " << smoothing;
    for (int64_t i = 3; i < 37; i += 5)  // ignored rows: zero
      for (int64_t j = 0; j < 1000; ++j) ASSERT_EQ((*grad)[0].GetAsDouble(i * 1000 + j), 0.0);
  }
}

TEST(DirectLoss, RowsWithInfOrNaNAsTheReference) {
  LossCase k = LossInputs(6, 50, 82, 0.0);
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  ir::SetElementFromDouble(k.scores, 0 * 50 + 7, inf);   // an overflowed fp16 logit
  ir::SetElementFromDouble(k.scores, 1 * 50 + 9, -inf);
  ir::SetElementFromDouble(k.scores, 2 * 50 + 1, nan);
  k.labels.data<int64_t>()[0] = 7;
  Options direct{.impl = "direct", .num_outputs = 2}, ref{.num_outputs = 2};
  auto got = RunKernel(OpKind::kSoftmaxCrossEntropyLoss, k.attrs, {k.scores, k.labels}, direct);
  auto want = RunKernel(OpKind::kSoftmaxCrossEntropyLoss, k.attrs, {k.scores, k.labels}, ref);
  ASSERT_TRUE(got.ok() && want.ok()) << got.status().ToString();
  EXPECT_TRUE(std::isnan((*got)[0].GetAsDouble(0)));
  for (int64_t e = 0; e < 3 * 50; ++e)  // the three rows, bit for bit
    EXPECT_EQ(ElementBits((*got)[1], e), ElementBits((*want)[1], e)) << "log_prob element " << e;
  const std::vector<Tensor> in = {Tensor::Floats({1.0f}, {}), (*want)[1], k.labels};
  auto grad = RunKernel(OpKind::kSoftmaxCrossEntropyLossGrad, k.attrs, in, Options{.impl = "direct"});
  auto grad_ref = RunKernel(OpKind::kSoftmaxCrossEntropyLossGrad, k.attrs, in, Options{});
  ASSERT_TRUE(grad.ok() && grad_ref.ok());
  for (int64_t e = 0; e < 3 * 50; ++e)
    EXPECT_EQ(ElementBits((*grad)[0], e), ElementBits((*grad_ref)[0], e)) << "gradient element " << e;
}

TEST(DirectLoss, DeclinesWhatTheReferenceTakesAndNamesABadLabel) {
  LossCase k = LossInputs(4, 10, 83, 0.0);
  Options direct{.impl = "direct", .num_outputs = 2}, any = direct;
  any.impl = "";
  Attributes none = k.attrs;
  none.Set("reduction", std::string("none"));
  Tensor strided = gradtest::Random({4, 10, 3}, 84, DType::kFloat32);
  Tensor strided_labels = *Tensor::Zeros(DType::kInt64, {4, 3});
  Tensor weights = Tensor::Floats(std::vector<float>(10, 0.5f), {10});
  const std::vector<std::pair<Attributes, std::vector<Tensor>>> declined = {
      {none, {k.scores, k.labels}},
      {k.attrs, {strided, strided_labels}},
      {k.attrs, {k.scores, k.labels, weights}},
      {k.attrs, {gradtest::Random({4, 10}, 85, DType::kFloat16), k.labels}}};
  for (const auto& [a, in] : declined) {
    EXPECT_FALSE(RunKernel(OpKind::kSoftmaxCrossEntropyLoss, a, in, direct).ok());
    EXPECT_TRUE(RunKernel(OpKind::kSoftmaxCrossEntropyLoss, a, in, any).ok());
  }
  k.labels.data<int64_t>()[2] = 10;
  auto bad = RunKernel(OpKind::kSoftmaxCrossEntropyLoss, k.attrs, {k.scores, k.labels}, direct);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("label 10 at position 2 is outside [0, 10)"), std::string::npos)
      << bad.status().ToString();
}

// [N, C] inputs and planes under 16 elements go to the other kernels.
TEST_P(DirectPath, BatchNormDeclinesWhatOthersRun) {
  const DType t = GetParam().dtype;
  Attributes a;
  Options direct{.impl = "direct", .num_outputs = 3, .training = true}, any = direct;
  any.impl = "";
  for (const I& x : {I{4, 6}, I{2, 3, 5}}) {
    std::vector<Tensor> in = BatchNormInputs(x, t, 0.0, 40);
    EXPECT_FALSE(RunKernel(OpKind::kBatchNormalization, a, in, direct).ok());
    EXPECT_TRUE(RunKernel(OpKind::kBatchNormalization, a, in, any).ok());
  }
  // Parameters of a third type (bf16 for fp16 X, fp16 otherwise) are neither fp32 nor X's.
  const DType other = t == DType::kFloat16 ? DType::kBFloat16 : DType::kFloat16;
  std::vector<Tensor> in = {Values({2, 3, 5, 5}, 41, t), Values({2, 3, 5, 5}, 42, t, false),
                            Values({3}, 43, other, false)};
  EXPECT_FALSE(RunKernel(OpKind::kBatchNormalizationGrad, a, in, direct).ok());
}

}  // namespace
}  // namespace amptrain::kernels::testing
