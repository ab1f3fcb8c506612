// oneDNN kernels against the reference kernels on random data over a grid
// of configurations, on each precision path (tests/kernels/kernel_paths.h):
// fp32, native bf16 (skipped, naming the ISA, where oneDNN has no bf16
// kernels), and bf16 / fp16 widened to fp32 around the fp32 primitive.
//
// Tolerances, on the error normalized by the reference output's largest
// magnitude (NormalizedError):
//   fp32 1e-5: the reference accumulates in double, oneDNN in fp32 with a
//     different summation order; with |x|, |w| < 1 and <= ~600 terms the fp32
//     rounding error stays a few ulps (~1e-7 each) of the output scale.
//   bf16 1e-2: both sides read the same bf16 inputs and round the output to
//     bf16 (8 significant bits, a relative step of 2^-8 = 3.9e-3); oneDNN's
//     fp32 accumulation can put a value on the other side of a rounding
//     boundary, so one bf16 step of the scale, with headroom.
//   fp16 2e-3: the same argument with 11 significant bits (step 2^-11 =
//     4.9e-4): four steps of the scale.
#include <algorithm>
#include <iostream>

#include "kernels/cpu/cpu_info.h"
#include "tests/kernels/kernel_paths.h"
#include "tests/kernels/nn_test_util.h"

namespace amptrain::kernels::testing {
namespace {

using ir::Attributes;
using ir::Tensor;
using I = std::vector<int64_t>;

double Tolerance(DType t) { return t == DType::kFloat32 ? 1e-5 : t == DType::kFloat16 ? 2e-3 : 1e-2; }

// Runs `op` with oneDNN implementation `impl` (which must accept it) and
// with the reference kernel; returns the normalized error of output 0.
double CompareToReference(OpKind op, const Attributes& a, const std::vector<Tensor>& in,
                          std::vector<bool> constant = {}, const char* impl = "onednn", bool training = false) {
  NnRunOptions dnn;
  dnn.impl = impl;
  dnn.constant = std::move(constant);
  dnn.training = training;
  auto got = RunOp(op, a, in, dnn);
  EXPECT_TRUE(got.ok()) << got.status().ToString();
  auto want = RunOp(op, a, in);
  EXPECT_TRUE(want.ok()) << want.status().ToString();
  if (!got.ok() || !want.ok()) return INFINITY;
  return NormalizedError((*got)[0], (*want)[0]);
}

struct ConvCase {
  const char* name;
  I x, w;
  int64_t group;
  I strides, dilations, pads;
  std::string auto_pad;
  bool bias;
};

Attributes ConvAttrs(const ConvCase& c) {
  Attributes a;
  a.Set("group", c.group);
  if (!c.strides.empty()) a.Set("strides", c.strides);
  if (!c.dilations.empty()) a.Set("dilations", c.dilations);
  if (!c.pads.empty()) a.Set("pads", c.pads);
  if (!c.auto_pad.empty()) a.Set("auto_pad", c.auto_pad);
  return a;
}

// Each TEST_P runs once per precision path.
class OneDnnPath : public ::testing::TestWithParam<KernelPath> {};
INSTANTIATE_KERNEL_PATHS(OneDnnPath);

TEST_P(OneDnnPath, ConvMatchesReference) {
  SKIP_UNLESS_CPU_RUNS(GetParam());
  const DType t = GetParam().dtype;
  const char* impl = GetParam().impl;
  const std::vector<ConvCase> cases = {
      {"3x3 pad 1", {2, 8, 9, 9}, {16, 8, 3, 3}, 1, {}, {}, {1, 1, 1, 1}, "", true},
      {"1x1", {1, 32, 7, 7}, {24, 32, 1, 1}, 1, {}, {}, {}, "", false},
      {"7x7 stride 2 pad 3", {1, 3, 32, 32}, {16, 3, 7, 7}, 1, {2, 2}, {}, {3, 3, 3, 3}, "", true},
      {"stride 2", {1, 16, 14, 14}, {32, 16, 3, 3}, 1, {2, 2}, {}, {1, 1, 1, 1}, "", true},
      {"dilation 2", {1, 8, 12, 12}, {8, 8, 3, 3}, 1, {}, {2, 2}, {2, 2, 2, 2}, "", true},
      {"groups 4", {1, 16, 10, 10}, {32, 4, 3, 3}, 4, {}, {}, {1, 1, 1, 1}, "", true},
      {"depthwise", {2, 32, 11, 11}, {32, 1, 3, 3}, 32, {2, 2}, {}, {1, 1, 1, 1}, "", true},
      {"asymmetric pads", {1, 8, 9, 10}, {8, 8, 3, 2}, 1, {}, {}, {0, 1, 2, 0}, "", true},
      {"SAME_UPPER stride 2", {1, 8, 9, 9}, {8, 8, 3, 3}, 1, {2, 2}, {}, {}, "SAME_UPPER", false},
  };
  for (const ConvCase& c : cases) {
    std::vector<Tensor> in = {Random(c.x, t, 1), Random(c.w, t, 2)};
    if (c.bias) in.push_back(Random({c.w[0]}, t, 3));
    for (bool constant_w : {false, true}) {
      double err = CompareToReference(OpKind::kConv, ConvAttrs(c), in, {false, constant_w}, impl);
      EXPECT_LT(err, Tolerance(t)) << c.name << (constant_w ? " constant W" : "");
    }
    // Training with a computed weight: fp32 reads it in its backward-weights layout.
    double err = CompareToReference(OpKind::kConv, ConvAttrs(c), in, {false, false}, impl, /*training=*/true);
    EXPECT_LT(err, Tolerance(t)) << c.name << " training";
  }
}

// Convolutions of 3x3 stride 1 in fp32 with constant weights run as oneDNN's
// Winograd F(4x4, 3x3) where it has one (AVX-512): its rounding differs from the
// direct convolution's, so the claim to defend is that its error against
// the reference is of the same size, not the bits. Measured at ResNet
// shapes: both within 1e-5 normalized error; Winograd at most 4x direct's.
TEST(OneDnnConv, WinogradErrorIsTheDirectConvolutions) {
  if (kernels::cpu::Cpu().onednn_isa.rfind("avx512", 0) != 0)
    GTEST_SKIP() << "oneDNN's Winograd convolution needs AVX-512 (oneDNN ISA here: "
                 << kernels::cpu::Cpu().onednn_isa << ")";
  const std::vector<ConvCase> cases = {
      {"ResNet layer1 3x3", {2, 64, 28, 28}, {64, 64, 3, 3}, 1, {}, {}, {1, 1, 1, 1}, "", true},
      {"ResNet layer4 3x3", {2, 512, 7, 7}, {512, 512, 3, 3}, 1, {}, {}, {1, 1, 1, 1}, "", false},
      {"unpadded", {1, 32, 12, 12}, {48, 32, 3, 3}, 1, {}, {}, {}, "", true},
  };
  for (const ConvCase& c : cases) {
    std::vector<Tensor> in = {Random(c.x, DType::kFloat32, 1), Random(c.w, DType::kFloat32, 2)};
    if (c.bias) in.push_back(Random({c.w[0]}, DType::kFloat32, 3));
    NnRunOptions wino{.impl = "onednn", .constant = {false, true}};
    NnRunOptions direct = wino;
    direct.winograd = false;
    NnRunOptions computed_w{.impl = "onednn"};  // weights given at run time: direct
    auto w = RunOp(OpKind::kConv, ConvAttrs(c), in, wino);
    auto d = RunOp(OpKind::kConv, ConvAttrs(c), in, direct);
    auto dc = RunOp(OpKind::kConv, ConvAttrs(c), in, computed_w);
    auto ref = RunOp(OpKind::kConv, ConvAttrs(c), in);
    ASSERT_TRUE(w.ok() && d.ok() && dc.ok() && ref.ok()) << c.name;
    // Winograd ran: its bits differ from the direct convolution's.
    EXPECT_GT(NormalizedError((*w)[0], (*d)[0]), 0.0) << c.name << ": Winograd was not used";
    EXPECT_EQ(NormalizedError((*dc)[0], (*d)[0]), 0.0) << c.name << ": computed weights must stay direct";
    const double err_w = NormalizedError((*w)[0], (*ref)[0]), err_d = NormalizedError((*d)[0], (*ref)[0]);
    EXPECT_LT(err_w, 1e-5) << c.name;
    EXPECT_LE(err_w, std::max(4.0 * err_d, 1e-7)) << c.name << ": Winograd " << err_w << ", direct " << err_d;
    std::cout << "[ " << c.name << ": normalized error Winograd " << err_w << ", direct " << err_d << " ]\n";
  }
}

// A kernel that needs an ISA the CPU lacks declines and the next one runs:
// bf16 Conv goes to native oneDNN where oneDNN has bf16 kernels, else to the
// widened one; fp16 always to the widened one.
TEST(OneDnnConv, RegistryPicksNativeOrWidened) {
  Attributes a;
  for (DType t : {DType::kBFloat16, DType::kFloat16}) {
    KernelInit init;
    init.op = OpKind::kConv;
    init.attrs = &a;
    init.node_name = "c";
    init.inputs = {TensorSpec{t, {1, 8, 9, 9}}, TensorSpec{t, {16, 8, 3, 3}}};
    init.outputs = {TensorSpec{t, {1, 16, 7, 7}}};
    auto e = Registry::Global().Select(init);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    const bool native = t == DType::kBFloat16 && cpu::Cpu().bf16_faster();
    EXPECT_EQ((*e)->impl, native ? "onednn" : "onednn-widened")
        << ir::DTypeName(t) << " on oneDNN ISA " << cpu::Cpu().onednn_isa << ", bf16 dot products at "
        << cpu::Cpu().bf16_dot_speedup << "x fp32";
  }
}

// An empty batch never reaches oneDNN (Gemm with a bias and M = 0 raised
// SIGFPE in its matmul creation): the reference kernel gives the empty result.
TEST(OneDnnGemm, EmptyBatchGoesToTheReference) {
  Attributes a;
  a.Set("transB", int64_t{1});
  std::vector<Tensor> in = {Random({0, 8}, DType::kFloat32, 1), Random({4, 8}, DType::kFloat32, 2),
                            Random({4}, DType::kFloat32, 3)};
  EXPECT_FALSE(RunOp(OpKind::kGemm, a, in, NnRunOptions{.impl = "onednn"}).ok());
  auto out = RunOp(OpKind::kGemm, a, in, NnRunOptions{.impl = ""});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].dims(), (std::vector<int64_t>{0, 4}));
}

// 4-D convolutions have no oneDNN kernel here (1-D ones run as 2-D, 3-D as themselves).
TEST(OneDnnConv, LeavesOtherRanksToTheReference) {
  NnRunOptions dnn;
  dnn.impl = "onednn";
  Attributes a;
  auto out =
      RunOp(OpKind::kConv, a, {Random({1, 2, 4, 4, 4, 4}, DType::kFloat32, 1), Random({3, 2, 2, 2, 2, 2}, DType::kFloat32, 2)},
            dnn);
  EXPECT_FALSE(out.ok());
  auto fallback =
      RunOp(OpKind::kConv, a, {Random({1, 2, 4, 4, 4, 4}, DType::kFloat32, 1), Random({3, 2, 2, 2, 2, 2}, DType::kFloat32, 2)},
            NnRunOptions{.impl = ""});
  EXPECT_TRUE(fallback.ok()) << fallback.status().ToString();
}

struct PoolCase {
  const char* name;
  OpKind op;
  I x, kernel, strides, dilations, pads;
  int64_t ceil_mode, count_include_pad;
  bool onednn;  // expected to be taken by oneDNN
};

TEST_P(OneDnnPath, PoolMatchesReference) {
  SKIP_UNLESS_CPU_RUNS(GetParam());
  const DType t = GetParam().dtype;
  const char* impl = GetParam().impl;
  const std::vector<PoolCase> cases = {
      {"max 3x3 s2 p1", OpKind::kMaxPool, {2, 8, 15, 15}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}, 0, 0, true},
      {"max ceil", OpKind::kMaxPool, {1, 4, 10, 10}, {3, 3}, {2, 2}, {}, {}, 1, 0, true},
      {"max dilation 2 (oneDNN ref only)", OpKind::kMaxPool, {1, 4, 12, 12}, {3, 3}, {1, 1}, {2, 2}, {}, 0, 0, false},
      {"max asymmetric", OpKind::kMaxPool, {1, 4, 9, 9}, {2, 3}, {1, 2}, {}, {1, 0, 0, 2}, 0, 0, true},
      {"avg exclude pad", OpKind::kAveragePool, {1, 4, 9, 9}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}, 0, 0, true},
      {"avg include pad", OpKind::kAveragePool, {1, 4, 9, 9}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}, 0, 1, true},
      {"avg ceil exclude", OpKind::kAveragePool, {1, 4, 10, 10}, {3, 3}, {2, 2}, {}, {}, 1, 0, true},
      {"avg ceil include (overhang)", OpKind::kAveragePool, {1, 4, 10, 10}, {3, 3}, {2, 2}, {}, {}, 1, 1, false},
      {"max 1-D k3 s2 p1", OpKind::kMaxPool, {2, 4, 17}, {3}, {2}, {}, {1, 1}, 0, 0, true},
      {"avg 1-D ceil exclude", OpKind::kAveragePool, {1, 3, 18}, {4}, {4}, {}, {}, 1, 0, true},
      {"max 3-D 2x2x2 s2 (MaxPool3d)", OpKind::kMaxPool, {2, 3, 4, 6, 6}, {2, 2, 2}, {2, 2, 2}, {}, {}, 0, 0, true},
      {"max 3-D 1x3x3 s1x2x2 p", OpKind::kMaxPool, {1, 4, 3, 9, 8}, {1, 3, 3}, {1, 2, 2}, {}, {0, 1, 1, 0, 1, 1}, 0, 0, true},
      {"avg 3-D 3x3x3 s2 ceil exclude", OpKind::kAveragePool, {1, 2, 7, 8, 9}, {3, 3, 3}, {2, 2, 2}, {}, {}, 1, 0, true},
      {"avg 3-D include pad", OpKind::kAveragePool, {1, 2, 5, 6, 6}, {3, 3, 3}, {1, 2, 2}, {}, {1, 1, 1, 1, 1, 1}, 0, 1, true},
  };
  for (const PoolCase& c : cases) {
    Attributes a;
    a.Set("kernel_shape", c.kernel);
    if (!c.strides.empty()) a.Set("strides", c.strides);
    if (!c.dilations.empty()) a.Set("dilations", c.dilations);
    if (!c.pads.empty()) a.Set("pads", c.pads);
    a.Set("ceil_mode", c.ceil_mode);
    if (c.op == OpKind::kAveragePool) a.Set("count_include_pad", c.count_include_pad);
    std::vector<Tensor> in = {Random(c.x, t, 5)};
    if (c.onednn) {
      EXPECT_LT(CompareToReference(c.op, a, in, {}, impl), Tolerance(t)) << c.name;
    } else {
      EXPECT_FALSE(RunOp(c.op, a, in, NnRunOptions{.impl = impl}).ok()) << c.name;
      EXPECT_TRUE(RunOp(c.op, a, in, NnRunOptions{.impl = ""}).ok()) << c.name;
    }
  }
}

TEST_P(OneDnnPath, GemmTransposesAlphaAndBias) {
  SKIP_UNLESS_CPU_RUNS(GetParam());
  const DType t = GetParam().dtype;
  const char* impl = GetParam().impl;
  struct Case {
    bool ta, tb;
    float alpha, beta;
    I c;
    bool onednn;
  };
  const std::vector<Case> cases = {
      {false, false, 1.0f, 1.0f, {}, true},      {true, false, 1.0f, 1.0f, {}, true},
      {false, true, 1.0f, 1.0f, {24}, true},     {true, true, 1.0f, 1.0f, {1, 24}, true},
      {false, true, 1.0f, 1.0f, {16, 1}, false}, {false, true, 1.0f, 1.0f, {16, 24}, false},  // oneDNN: ref only
      {false, false, 0.25f, 1.0f, {}, true},     {false, true, 2.0f, 0.0f, {24}, true},
      {false, true, 0.5f, 2.0f, {24}, false},
  };
  const int64_t m = 16, k = 40, n = 24;
  for (const Case& c : cases) {
    Attributes a;
    a.Set("transA", int64_t{c.ta});
    a.Set("transB", int64_t{c.tb});
    a.Set("alpha", c.alpha);
    a.Set("beta", c.beta);
    std::vector<Tensor> in = {Random(c.ta ? I{k, m} : I{m, k}, t, 7), Random(c.tb ? I{n, k} : I{k, n}, t, 8)};
    if (!c.c.empty()) in.push_back(Random(c.c, t, 9));
    std::string what = ::testing::PrintToString(c.ta) + ::testing::PrintToString(c.tb) + " alpha " +
                       std::to_string(c.alpha) + " beta " + std::to_string(c.beta);
    if (c.onednn) {
      EXPECT_LT(CompareToReference(OpKind::kGemm, a, in, {}, impl), Tolerance(t)) << what;
      EXPECT_LT(CompareToReference(OpKind::kGemm, a, in, {false, true}, impl), Tolerance(t)) << what << " constant B";
    } else {
      EXPECT_FALSE(RunOp(OpKind::kGemm, a, in, NnRunOptions{.impl = impl}).ok()) << what;
      EXPECT_TRUE(RunOp(OpKind::kGemm, a, in, NnRunOptions{.impl = ""}).ok()) << what;
    }
  }
}

TEST_P(OneDnnPath, MatMulBatchedWithBroadcasting) {
  SKIP_UNLESS_CPU_RUNS(GetParam());
  const DType t = GetParam().dtype;
  const std::vector<std::pair<I, I>> cases = {
      {{8, 12}, {12, 5}}, {{2, 1, 4, 5}, {3, 5, 6}}, {{3, 4, 5}, {5, 6}},
      {{5}, {2, 5, 3}},   {{2, 3, 5}, {5}},          {{1, 7, 9}, {4, 9, 2}},
  };
  for (const auto& [a, b] : cases)
    EXPECT_LT(CompareToReference(OpKind::kMatMul, Attributes{}, {Random(a, t, 11), Random(b, t, 12)}, {},
                                 GetParam().impl),
              Tolerance(t))
        << ::testing::PrintToString(a) << " x " << ::testing::PrintToString(b);
}

TEST(OneDnnBatchNorm, InferenceMatchesReference) {
  const DType t = DType::kFloat32;
  Tensor var = Random({6}, t, 24);
  for (int64_t i = 0; i < 6; ++i) var.data<float>()[i] = 0.5f + std::fabs(var.data<float>()[i]);
  Attributes a;
  a.Set("epsilon", 1e-3f);
  std::vector<Tensor> in = {Random({2, 6, 5, 5}, t, 20), Random({6}, t, 21), Random({6}, t, 22), Random({6}, t, 23),
                            var};
  EXPECT_LT(CompareToReference(OpKind::kBatchNormalization, a, in), 1e-5);
  // Training mode: batch statistics and the running-stat outputs.
  a.Set("momentum", 0.8f);
  NnRunOptions train{.impl = "onednn", .num_outputs = 3, .training = true};
  NnRunOptions ref = train;
  ref.impl = "reference";
  auto got = RunOp(OpKind::kBatchNormalization, a, in, train), want = RunOp(OpKind::kBatchNormalization, a, in, ref);
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_TRUE(want.ok()) << want.status().message();
  for (size_t k = 0; k < 3; ++k)
    for (int64_t i = 0; i < (*want)[k].num_elements(); ++i)
      EXPECT_NEAR((*got)[k].data<float>()[i], (*want)[k].data<float>()[i], 1e-4) << "output " << k << " element " << i;
}

// AMP O2's BatchNormalization: low-precision X/Y with fp32
// scale/B/mean/var. The reference computes in fp32 from the same input and
// rounds Y once, as oneDNN does: they agree to the output rounding.
TEST_P(OneDnnPath, BatchNormLowDataFp32ParamsMatchesReference) {
  SKIP_UNLESS_CPU_RUNS(GetParam());
  const DType f32 = DType::kFloat32, t = GetParam().dtype;
  Tensor var = Random({6}, f32, 24);
  for (int64_t i = 0; i < 6; ++i) var.data<float>()[i] = 0.5f + std::fabs(var.data<float>()[i]);
  Attributes a;
  a.Set("epsilon", 1e-3f);
  std::vector<Tensor> in = {Random({2, 6, 5, 5}, t, 20), Random({6}, f32, 21), Random({6}, f32, 22),
                            Random({6}, f32, 23), var};
  EXPECT_LT(CompareToReference(OpKind::kBatchNormalization, a, in, {}, GetParam().impl), Tolerance(t));
}

}  // namespace
}  // namespace amptrain::kernels::testing
