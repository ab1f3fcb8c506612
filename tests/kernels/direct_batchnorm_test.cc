// The direct BatchNormalization kernels (training mode, forward and
// gradient; kernels/cpu/direct_batchnorm.cc) against the reference in fp32,
// bf16 and fp16, with fp32 parameters (O1/O2) and low ones (O3): within the
// tolerances of BatchNormTolerance, the reference's bits where few values
// leave no rounding choice, the same bits plain and channels-last, the lane
// order's sums bit for bit, and what the kernel declines still runs.
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

class DirectBatchNorm : public ::testing::TestWithParam<KernelPath> {};
INSTANTIATE_DIRECT_PATHS(DirectBatchNorm);

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
  ExpectDirectCloseToReference(what, op, a, in, opt, BatchNormTolerance);
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

TEST_P(DirectBatchNorm, CloseToReference) {
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

TEST_P(DirectBatchNorm, GradCloseToReference) {
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

// A gradient over at most 64 values per channel takes the reference's
// arithmetic, and its bits, in either layout. Two samples at a 1x1 plane whose
// mean is exactly 0 (x and -x) get a dX that sums to exactly 0 per channel,
// as the exact one does: the gradient of a bias before the BatchNormalization
// is then 0, as PyTorch computes it (squeeze-excitation blocks at batch 2).
TEST_P(DirectBatchNorm, GradOfFewValuesIsTheReferences) {
  const DType t = GetParam().dtype;
  Attributes a;
  a.Set("epsilon", 1e-5f);
  for (const I& x : std::vector<I>{{2, 24, 1, 1}, {4, 5, 2, 2}, {8, 20, 2, 2}, {1, 3, 64}}) {
    const std::vector<Tensor> bn = BatchNormInputs(x, t, 3.0, 60);
    const std::vector<Tensor> in = {Values(x, 61, t, false), bn[0], bn[1]};
    auto want = RunKernel(OpKind::kBatchNormalizationGrad, a, in, Options{.impl = "reference", .num_outputs = 3});
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    for (int threads : {1, 2})
      for (uint32_t last : {0u, 0b11u}) {
        Options direct{.impl = "direct", .num_outputs = 3, .threads = threads};
        direct.channels_last_inputs = x.size() == 4 ? last : 0u;
        direct.channels_last_outputs = x.size() == 4 ? (last & 1u) : 0u;
        auto got = RunKernel(OpKind::kBatchNormalizationGrad, a, in, direct);
        ASSERT_TRUE(got.ok()) << got.status().ToString();
        for (size_t o = 0; o < 3; ++o)
          EXPECT_TRUE(SameBits((*got)[o], (*want)[o])) << ir::Shape::FromStatic(x).ToString() << " output " << o
                                                       << ", " << threads << " thread(s), layout " << last;
      }
  }
  const I pair = {2, 24, 1, 1};
  Tensor x = Values(pair, 62, t, false);
  for (int64_t c = 0; c < pair[1]; ++c) ir::SetElementFromDouble(x, pair[1] + c, -x.GetAsDouble(c));
  const std::vector<Tensor> bn = BatchNormInputs(pair, t, 0.0, 63);
  auto got = RunKernel(OpKind::kBatchNormalizationGrad, a, {Values(pair, 64, t, false), x, bn[1]},
                       Options{.impl = "direct", .num_outputs = 3});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  int64_t nonzero = 0, zero_terms = 0;
  for (int64_t c = 0; c < pair[1]; ++c) {
    const double d0 = (*got)[0].GetAsDouble(c), d1 = (*got)[0].GetAsDouble(pair[1] + c);
    nonzero += d0 + d1 != 0.0;
    zero_terms += d0 == 0.0;
  }
  EXPECT_EQ(nonzero, 0) << ir::DTypeName(t);
  EXPECT_LT(zero_terms, pair[1]) << "dX is all zeros";
}

// Channels-last X, Y, dY and dX give the plain kernel's bits: every channel's
// sums take the same additions in the same order. Shapes with a partial block
// of 16 channels (5, 20), plane tails (7x7, 4x5) and a flush inside a plane
// (61x37 > 2048).
TEST_P(DirectBatchNorm, ChannelsLastSameBits) {
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

// The direct kernels follow the lane order bit for bit, so their results do
// not depend on the ISA (CI runs this under ONEDNN_MAX_CPU_ISA=AVX2 as well;
// SSE41 takes the portable loops). Sizes cross the flush point inside a plane
// and leave tails; X sits at an offset, so the shift matters.
TEST_P(DirectBatchNorm, FollowsLaneOrderBitwise) {
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

// [N, C] inputs and planes under 16 elements go to the other kernels.
TEST_P(DirectBatchNorm, DeclinesWhatOthersRun) {
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
