// The direct kernels (kernels/cpu/direct_kernels.h) against the reference
// kernels in fp32, bf16 and fp16 (tests/kernels/kernel_paths.h, DirectPaths):
// pools, elementwise ops, Cast, ReduceSumTo and the depthwise ConvGrad, bit
// for bit (the direct loops compare, sum and round exactly as the reference
// does, so no tolerance is needed). Inputs hold ties, signed zeros,
// infinities and quiet NaNs besides random values; geometries cover odd
// sizes, strides, asymmetric and ceil_mode padding, dilation and overlapping
// windows. Also: the registry picks "direct" for these ops, and what the
// direct kernels decline (MaxPool's Indices, 3-D pools) still runs.
// Elsewhere: BatchNormalization in direct_batchnorm_test.cc, the kernels that
// are not the reference's bits (Erf, Gelu, Tanh, Sigmoid, Silu, Pow, the
// loss) in direct_math_test.cc.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "ir/onnx_dtype.h"
#include "tests/kernels/direct_test_util.h"
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

// Runs `op` on the direct kernel (which must accept it, and which the
// registry must pick by default) and on the reference; every output bitwise.
// `nan_payloads`: NaN results must carry the reference's payload too (off
// for Add and Mul: SameBitsOrNaNs).
void ExpectSameAsReference(const std::string& what, OpKind op, const Attributes& a, const std::vector<Tensor>& in,
                           bool nan_payloads = true) {
  const auto same = nan_payloads ? SameBits : SameBitsOrNaNs;
  Options direct, ref, any;
  direct.impl = "direct";
  any.impl = "";
  auto got = RunKernel(op, a, in, direct);
  ASSERT_TRUE(got.ok()) << what << ": " << got.status().ToString();
  auto want = RunKernel(op, a, in, ref);
  ASSERT_TRUE(want.ok()) << what << ": " << want.status().ToString();
  for (size_t o = 0; o < want->size(); ++o)
    EXPECT_TRUE(same((*got)[o], (*want)[o])) << what << " output " << o << " " << ir::DTypeName(in[0].dtype());
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

// The 2-D cases and 1-D pools ([N, C, L], which the direct kernels run as
// [N, C, 1, L]); the channels-last test takes the 2-D ones only.
const std::vector<PoolCase>& AllPoolCases() {
  static const std::vector<PoolCase> cases = [] {
    std::vector<PoolCase> all = PoolCases();
    all.push_back({"1-D k3 s1 p1", {2, 3, 17}, {3}, {1}, {}, {1, 1}});
    all.push_back({"1-D k2 s2 (MaxPool1d)", {2, 4, 16}, {2}, {2}, {}, {}});
    all.push_back({"1-D k4 s4 ceil_mode", {1, 3, 18}, {4}, {4}, {}, {}, 1});
    all.push_back({"1-D k3 s2 dilation 2, pads", {1, 2, 20}, {3}, {2}, {2}, {1, 2}});
    all.push_back({"1-D k5 s1 overlapping", {2, 2, 11}, {5}, {1}, {}, {2, 2}});
    return all;
  }();
  return cases;
}

class DirectPath : public ::testing::TestWithParam<KernelPath> {};
INSTANTIATE_DIRECT_PATHS(DirectPath);

TEST_P(DirectPath, MaxPoolMatchesReferenceBitwise) {
  const DType t = GetParam().dtype;
  for (const PoolCase& c : AllPoolCases())
    ExpectSameAsReference(c.name, OpKind::kMaxPool, PoolAttrs(c), {Values(c.x, 1, t)});
  // All-equal windows (ReLU zeros before the pool): the first maximum's bits.
  const PoolCase& c = PoolCases()[2];
  Tensor zeros = *Tensor::Zeros(t, c.x);
  for (int64_t i = 0; i < zeros.num_elements(); i += 2) ir::SetElementFromDouble(zeros, i, -0.0);
  ExpectSameAsReference("signed zeros", OpKind::kMaxPool, PoolAttrs(c), {zeros});
}

TEST_P(DirectPath, AveragePoolMatchesReferenceBitwise) {
  const DType t = GetParam().dtype;
  for (const PoolCase& c : AllPoolCases()) {
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
  for (const I& x : {I{3, 5, 28, 28}, I{2, 3, 9, 7}, I{1, 17, 1, 1}, I{0, 3, 8, 8}, I{2, 64, 7, 7}, I{2, 3, 9}, I{2, 3, 4, 5, 6}})
    ExpectSameAsReference("GlobalAveragePool " + ir::Shape::FromStatic(x).ToString(), OpKind::kGlobalAveragePool, Attributes{},
                          {Values(x, 4, t, false)});
  ExpectSameAsReference("GlobalAveragePool with inf and NaN", OpKind::kGlobalAveragePool, Attributes{},
                        {Values({2, 3, 5, 6}, 5, t)});
}

TEST_P(DirectPath, MaxPoolGradMatchesReferenceBitwise) {
  const DType t = GetParam().dtype;
  for (const PoolCase& c : AllPoolCases()) {
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

// Every geometry, both divisors; dY with infinities and NaNs too (they reach
// dX through each window that holds an element, in the reference's order).
TEST_P(DirectPath, AveragePoolGradMatchesReferenceBitwise) {
  const DType t = GetParam().dtype;
  for (const PoolCase& c : AllPoolCases()) {
    for (int64_t include_pad : {0, 1}) {
      const Attributes a = PoolAttrs(c, include_pad);
      Tensor x = Values(c.x, 8, t);
      auto y = RunKernel(OpKind::kAveragePool, a, {x});
      ASSERT_TRUE(y.ok()) << c.name << ": " << y.status().ToString();
      const std::string what = std::string(c.name) + (include_pad ? " include pad" : " exclude pad");
      ExpectSameAsReference(what, OpKind::kAveragePoolGrad, a, {Values((*y)[0].dims(), 9, t, false), x});
      ExpectSameAsReference(what + ", specials in dY", OpKind::kAveragePoolGrad, a, {Values((*y)[0].dims(), 10, t), x});
    }
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

// A bool condition of `dims`, about half true.
Tensor Condition(const I& dims, uint32_t seed) {
  Tensor c = *Tensor::Zeros(DType::kBool, dims);
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < c.num_elements(); ++i) c.data<uint8_t>()[i] = static_cast<uint8_t>(rng() & 1u);
  return c;
}

// Where selects bits, so any loop gives the reference's: the gradients' form
// (a full mask, dY and a scalar 0), two full branches (LeakyRelu's), a
// scalar on either side, an attention mask (a block of the trailing dims,
// -inf beside the scores), a scalar condition, sizes off the vector width;
// specials and NaN payloads pass through untouched. Other dtypes by size
// (int64, bool).
TEST_P(DirectPath, WhereMatchesReferenceBitwise) {
  const DType t = GetParam().dtype;
  const Tensor zero = *Tensor::Zeros(t, {});
  Tensor minus_inf = *Tensor::Zeros(t, {1});
  ir::SetElementFromDouble(minus_inf, 0, -std::numeric_limits<double>::infinity());
  const I big = {3, 37, 41};
  ExpectSameAsReference("mask, dY, 0", OpKind::kWhere, Attributes{}, {Condition(big, 1), Values(big, 2, t), zero});
  ExpectSameAsReference("two full branches", OpKind::kWhere, Attributes{},
                        {Condition(big, 3), Values(big, 4, t), Values(big, 5, t)});
  ExpectSameAsReference("scalar X", OpKind::kWhere, Attributes{}, {Condition({7, 9}, 6), zero, Values({7, 9}, 7, t)});
  ExpectSameAsReference("causal mask over heads", OpKind::kWhere, Attributes{},
                        {Condition({1, 1, 16, 16}, 8), Values({2, 3, 16, 16}, 9, t), minus_inf});
  ExpectSameAsReference("scalar condition", OpKind::kWhere, Attributes{},
                        {Condition({}, 10), Values({5, 6}, 11, t), Values({5, 6}, 12, t)});
  ExpectSameAsReference("big, several threads", OpKind::kWhere, Attributes{},
                        {Condition({4, 64, 33, 17}, 13), Values({4, 64, 33, 17}, 14, t), zero});
  if (t != DType::kFloat32) return;
  Tensor ix = Tensor::Int64s({1, -2, 3, 4, 5, 6}, {2, 3}), iy = Tensor::Int64s({7, 8, 9, 10, 11, 12}, {2, 3});
  ExpectSameAsReference("int64", OpKind::kWhere, Attributes{}, {Condition({2, 3}, 15), ix, iy});
  ExpectSameAsReference("bool", OpKind::kWhere, Attributes{}, {Condition({2, 3}, 16), Condition({2, 3}, 17), Condition({}, 18)});
}

// X broadcast along a middle axis is not one of the direct Where's forms.
TEST_P(DirectPath, WhereDeclinesOtherBroadcasts) {
  const DType t = GetParam().dtype;
  Options direct, any;
  direct.impl = "direct";
  any.impl = "";
  const std::vector<Tensor> in = {Condition({4, 5, 6}, 1), Values({4, 1, 6}, 2, t), Values({4, 5, 6}, 3, t)};
  EXPECT_FALSE(RunKernel(OpKind::kWhere, Attributes{}, in, direct).ok());
  EXPECT_TRUE(RunKernel(OpKind::kWhere, Attributes{}, in, any).ok());
}

TEST_P(DirectPath, DeclinesWhatTheReferenceRuns) {
  const DType t = GetParam().dtype;
  Options direct, any;
  direct.impl = "direct";
  any.impl = "";
  Attributes a;
  a.Set("kernel_shape", I{2, 2, 2});
  // 3-D pool: oneDNN or the reference.
  std::vector<Tensor> in3d = {Values({1, 2, 4, 5, 6}, 10, t)};
  EXPECT_FALSE(RunKernel(OpKind::kMaxPool, a, in3d, direct).ok());
  EXPECT_TRUE(RunKernel(OpKind::kMaxPool, a, in3d, any).ok());
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
    ExpectSameAsReference("every pattern", OpKind::kAdd, Attributes{}, {a, b}, false);
  } else {
    Tensor a = FloatPatterns(), b = FloatPatterns();
    std::reverse(b.data<uint32_t>(), b.data<uint32_t>() + b.num_elements());
    ExpectSameAsReference("fp32 patterns", OpKind::kAdd, Attributes{}, {a, b}, false);
  }
  ExpectSameAsReference("odd size", OpKind::kAdd, Attributes{}, {Values({3, 37, 41}, 6, t), Values({3, 37, 41}, 7, t)}, false);
  ExpectSameAsReference("one block and a bit", OpKind::kAdd, Attributes{}, {Values({513}, 8, t), Values({513}, 9, t)}, false);
  // A broadcast of both inputs (an outer sum) is the reference's.
  EXPECT_FALSE(RunKernel(OpKind::kAdd, Attributes{}, {Values({4, 1}, 1, t), Values({8}, 2, t)},
                         Options{.impl = "direct"}).ok());
  EXPECT_TRUE(RunKernel(OpKind::kAdd, Attributes{}, {Values({4, 1}, 1, t), Values({8}, 2, t)}, Options{.impl = ""}).ok());
}

// Mul of two inputs of one shape, and Mul and Add of X [N, C, H, W] with one
// value per channel ([N, C, 1, 1], [1, C, 1, 1], [C, 1, 1]) in either slot,
// with X and Y plain or channels-last: the reference's bits, specials
// included (a NaN of two NaNs may be either's); a per-row scale is the
// reference's.
TEST_P(DirectPath, MulAndChannelBroadcastsMatchReferenceBitwise) {
  const DType t = GetParam().dtype;
  if (t != DType::kFloat32) {
    Tensor a = AllPatterns(t), b = AllPatterns(t);
    for (uint32_t i = 0; i < 65536; ++i) b.data<uint16_t>()[i] = static_cast<uint16_t>(i * 40503u + 17u);
    ExpectSameAsReference("every pattern", OpKind::kMul, Attributes{}, {a, b}, false);
  } else {
    Tensor a = FloatPatterns(), b = FloatPatterns();
    std::reverse(b.data<uint32_t>(), b.data<uint32_t>() + b.num_elements());
    ExpectSameAsReference("fp32 patterns", OpKind::kMul, Attributes{}, {a, b}, false);
  }
  ExpectSameAsReference("odd size", OpKind::kMul, Attributes{}, {Values({3, 37, 41}, 6, t), Values({3, 37, 41}, 7, t)}, false);
  ExpectSameAsReference("empty", OpKind::kMul, Attributes{}, {*Tensor::Zeros(t, {0, 5}), *Tensor::Zeros(t, {0, 5})});
  ExpectSameAsReference("empty planes", OpKind::kMul, Attributes{}, {*Tensor::Zeros(t, {2, 3, 0, 4}), *Tensor::Zeros(t, {2, 3, 1, 1})});
  const I x_dims = {3, 13, 5, 7};
  for (const I& s_dims : {I{3, 13, 1, 1}, I{1, 13, 1, 1}, I{13, 1, 1}})
    for (OpKind op : {OpKind::kMul, OpKind::kAdd})
      for (int x_slot : {0, 1})
        for (bool last : {false, true}) {
          const std::string what = std::string(ir::Schema(op).name) + " of " + ir::Shape::FromStatic(x_dims).ToString() +
                                   " and " + ir::Shape::FromStatic(s_dims).ToString() + ", X in slot " +
                                   std::to_string(x_slot) + (last ? ", channels-last" : "");
          const Tensor x = Values(x_dims, 11, t), sv = Values(s_dims, 12, t);
          const std::vector<Tensor> in = x_slot == 0 ? std::vector<Tensor>{x, sv} : std::vector<Tensor>{sv, x};
          Options direct{.impl = "direct"};
          if (last) direct.channels_last_inputs = x_slot == 0 ? 0b1u : 0b10u, direct.channels_last_outputs = 0b1;
          auto got = RunKernel(op, Attributes{}, in, direct);
          auto want = RunKernel(op, Attributes{}, in, Options{});
          ASSERT_TRUE(got.ok() && want.ok()) << what << ": " << got.status().ToString();
          EXPECT_TRUE(SameBitsOrNaNs((*got)[0], (*want)[0])) << what << " " << ir::DTypeName(t);
        }
  // X channels-last with a plain Y is declined; so is a scale per row (H).
  Options split{.impl = "direct"};
  split.channels_last_inputs = 0b1;
  EXPECT_FALSE(RunKernel(OpKind::kMul, Attributes{}, {Values(x_dims, 1, t), Values({3, 13, 1, 1}, 2, t)}, split).ok());
  EXPECT_FALSE(RunKernel(OpKind::kMul, Attributes{}, {Values(x_dims, 1, t), Values({5, 1}, 2, t)}, Options{.impl = "direct"}).ok());
  EXPECT_TRUE(RunKernel(OpKind::kMul, Attributes{}, {Values(x_dims, 1, t), Values({5, 1}, 2, t)}, Options{.impl = ""}).ok());
}

// Add and Mul of X and a block of its trailing dims (a Linear's bias, a
// position table, a scalar), in either slot, on one thread and two: the
// reference's bits, and the registry picks the direct kernel.
TEST_P(DirectPath, TrailingBlockBroadcastsMatchReferenceBitwise) {
  const DType t = GetParam().dtype;
  struct Case {
    I x, b;
  };
  const std::vector<Case> cases = {{{4, 9, 37}, {37}},   {{4, 9, 37}, {1, 37}},   {{4, 9, 37}, {9, 37}},
                                   {{4, 9, 37}, {1, 9, 37}}, {{4, 9, 37}, {}},   {{4, 9, 37}, {1, 1, 1}},
                                   {{3, 5, 7, 2}, {7, 2}},  {{0, 37}, {37}},       {{2, 40, 1031}, {1031}},
                                   {{70001}, {1}},          {{300, 257}, {1, 257}}};
  for (const Case& c : cases)
    for (OpKind op : {OpKind::kAdd, OpKind::kMul})
      for (int x_slot : {0, 1})
        for (int threads : {1, 2}) {
          const std::string what = std::string(ir::Schema(op).name) + " of " + ir::Shape::FromStatic(c.x).ToString() +
                                   " and " + ir::Shape::FromStatic(c.b).ToString() + ", X in slot " +
                                   std::to_string(x_slot) + ", " + std::to_string(threads) + " threads";
          const Tensor x = Values(c.x, 21, t), b = Values(c.b, 22, t);
          const std::vector<Tensor> in = x_slot == 0 ? std::vector<Tensor>{x, b} : std::vector<Tensor>{b, x};
          Options direct{.impl = "direct", .threads = threads}, ref{.threads = threads};
          auto got = RunKernel(op, Attributes{}, in, direct);
          auto want = RunKernel(op, Attributes{}, in, ref);
          ASSERT_TRUE(got.ok() && want.ok()) << what << ": " << got.status().ToString();
          EXPECT_TRUE(SameBitsOrNaNs((*got)[0], (*want)[0])) << what << " " << ir::DTypeName(t);
          auto picked = RunKernel(op, Attributes{}, in, Options{.impl = "", .threads = threads});
          ASSERT_TRUE(picked.ok()) << what;
          EXPECT_TRUE(SameBitsOrNaNs((*picked)[0], (*got)[0])) << what << ": the registry's pick differs";
        }
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
      {"two kept runs (grouped-query keys)", {3, 2, 2, 5, 7}, {3, 2, 1, 5, 7}},
      {"kept, summed, kept, summed", {4, 3, 9, 6}, {4, 1, 9, 1}},
      {"summed, kept, summed, kept", {2, 3, 5, 70}, {3, 1, 70}},
      {"many runs on two threads", {8, 6, 33, 40}, {8, 1, 33, 40}},
      {"a wide bias (an LM head's), a block per thread", {2, 20, 9000}, {9000}},
      {"wider than a block", {24, 20000}, {20000}},
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
  // Declined, so the reference runs them: sums to one element.
  for (const auto& [x, to] : {std::pair<I, I>{{4, 9}, {1}}, std::pair<I, I>{{3, 4, 5}, {1, 1, 1}}}) {
    std::vector<Tensor> in = SumToInputs(x, to, 14, t);
    EXPECT_FALSE(RunKernel(OpKind::kReduceSumTo, Attributes{}, in, Options{.impl = "direct"}).ok());
    EXPECT_TRUE(RunKernel(OpKind::kReduceSumTo, Attributes{}, in, Options{.impl = ""}).ok());
  }
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

// ConvGrad of depthwise convolutions (direct_depthwise.cc): the reference's
// bits for dX, dW and dB, plain and channels-last, over strides, pads
// (asymmetric too), dilations, kernels wider than the plane, and channel
// counts that leave a partial block of 16; 1 and 2 threads alike. The
// registry gives it what oneDNN declines (its gemm-only 5x5 over 2x2).
TEST_P(DirectPath, DepthwiseConvGradMatchesReferenceBitwise) {
  const DType t = GetParam().dtype;
  auto attrs = [](int64_t group, I strides, I pads, I dilations) {
    Attributes a;
    a.Set("group", group);
    a.Set("strides", strides);
    a.Set("pads", pads);
    a.Set("dilations", dilations);
    return a;
  };
  const struct {
    const char* name;
    I x;
    int64_t k;
    Attributes a;
  } cases[] = {
      {"5x5 over 2x2 (EfficientNet's last stage at 64 px)", {3, 32, 2, 2}, 5, attrs(32, {1, 1}, {2, 2, 2, 2}, {1, 1})},
      {"3x3 stride 2", {2, 24, 9, 9}, 3, attrs(24, {2, 2}, {1, 1, 1, 1}, {1, 1})},
      {"3x3 dilation 2", {2, 20, 7, 7}, 3, attrs(20, {1, 1}, {2, 2, 2, 2}, {2, 2})},
      {"asymmetric pads, strides 2 and 1", {2, 17, 6, 5}, 3, attrs(17, {2, 1}, {0, 1, 1, 0}, {1, 1})},
  };
  for (const auto& c : cases) {
    Tensor x = Values(c.x, 21, t, false), w = Values({c.x[1], 1, c.k, c.k}, 22, t, false);
    auto y = RunKernel(OpKind::kConv, c.a, {x, w}, Options{});
    ASSERT_TRUE(y.ok()) << c.name << ": " << y.status().ToString();
    const std::vector<Tensor> in = {Values((*y)[0].dims(), 23, t, false), x, w};
    auto want = RunKernel(OpKind::kConvGrad, c.a, in, Options{.num_outputs = 3});
    ASSERT_TRUE(want.ok()) << c.name << ": " << want.status().ToString();
    const struct {
      const char* name;
      uint32_t in_mask, out_mask;
    } layouts[] = {{"plain", 0, 0}, {"channels-last", 0b11, 0b1}, {"X channels-last only", 0b10, 0}};
    for (const auto& l : layouts) {
      for (int threads : {1, 2}) {
        Options direct{.impl = "direct", .num_outputs = 3, .threads = threads};
        direct.channels_last_inputs = l.in_mask;
        direct.channels_last_outputs = l.out_mask;
        auto got = RunKernel(OpKind::kConvGrad, c.a, in, direct);
        ASSERT_TRUE(got.ok()) << c.name << ", " << l.name << ": " << got.status().ToString();
        for (int o = 0; o < 3; ++o)
          EXPECT_TRUE(SameBits((*got)[o], (*want)[o]))
              << c.name << ", " << l.name << ", " << threads << " thread(s): output " << o << " " << ir::DTypeName(t);
      }
    }
    if (c.k == 5 && t == DType::kFloat32) {  // oneDNN declines this one: the registry picks the direct kernel
      auto picked = RunKernel(OpKind::kConvGrad, c.a, in, Options{.impl = "", .num_outputs = 3});
      ASSERT_TRUE(picked.ok());
      EXPECT_TRUE(SameBits((*picked)[0], (*want)[0]));
    }
  }
  // Not depthwise: declined.
  Tensor x = Values({1, 4, 5, 5}, 24, t, false), w = Values({4, 2, 3, 3}, 25, t, false);
  Attributes grouped = attrs(2, {1, 1}, {1, 1, 1, 1}, {1, 1});
  EXPECT_FALSE(RunKernel(OpKind::kConvGrad, grouped, {Values({1, 4, 5, 5}, 26, t, false), x, w},
                         Options{.impl = "direct", .num_outputs = 3})
                   .ok());
}

}  // namespace
}  // namespace amptrain::kernels::testing
