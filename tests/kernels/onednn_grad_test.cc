// oneDNN kernels of the backward ops against the reference kernels on random
// data, every output, on each precision path (tests/kernels/kernel_paths.h):
// fp32, native bf16 (skipped, naming the ISA, where oneDNN has no bf16
// kernels), bf16 and fp16 widened to fp32.
//
// Tolerances: tests/kernels/onednn_match.h.
#include "tests/kernels/onednn_match.h"
#include "tests/kernels/kernel_paths.h"

namespace amptrain::kernels::gradtest {
namespace {

using ir::Attributes;
using ir::DType;
using ir::Tensor;
using I = std::vector<int64_t>;

using testing::KernelPath;

Attributes ConvAttrs(int64_t group, I strides, I pads, I dilations = {}) {
  Attributes a;
  a.Set("group", group);
  if (!strides.empty()) a.Set("strides", strides);
  if (!pads.empty()) a.Set("pads", pads);
  if (!dilations.empty()) a.Set("dilations", dilations);
  return a;
}

// Each TEST_P runs once per precision path.
class OneDnnGradPath : public ::testing::TestWithParam<KernelPath> {};
INSTANTIATE_KERNEL_PATHS(OneDnnGradPath);

TEST_P(OneDnnGradPath, ConvGradMatchesReference) {
  SKIP_UNLESS_CPU_RUNS(GetParam());
  const DType t = GetParam().dtype;
  const char* impl = GetParam().impl;
  struct Case { const char* name; I x, w; Attributes a; };
  const std::vector<Case> cases = {
      {"3x3 pad 1", {2, 8, 9, 9}, {16, 8, 3, 3}, ConvAttrs(1, {}, {1, 1, 1, 1})},
      {"1x1 stride 2", {2, 16, 8, 8}, {8, 16, 1, 1}, ConvAttrs(1, {2, 2}, {})},
      {"7x7 stride 2 pad 3", {1, 3, 20, 20}, {8, 3, 7, 7}, ConvAttrs(1, {2, 2}, {3, 3, 3, 3})},
      {"dilation 2", {1, 4, 11, 11}, {4, 4, 3, 3}, ConvAttrs(1, {}, {2, 2, 2, 2}, {2, 2})},
      {"groups 2 asymmetric pads", {2, 8, 9, 10}, {8, 4, 3, 3}, ConvAttrs(2, {2, 1}, {1, 0, 0, 1})},
      // Enough channels for oneDNN's blocked layouts (reordered in and out of scratch).
      {"32 channels 3x3", {2, 32, 8, 8}, {32, 32, 3, 3}, ConvAttrs(1, {}, {1, 1, 1, 1})},
      {"depthwise 32 stride 2", {2, 32, 9, 9}, {32, 1, 3, 3}, ConvAttrs(32, {2, 2}, {1, 1, 1, 1})},
  };
  for (const Case& c : cases) {
    Tensor x = Random(c.x, 1, t), w = Random(c.w, 2, t);
    auto y = RunKernel(OpKind::kConv, c.a, {x, w});
    ASSERT_TRUE(y.ok()) << y.status().ToString();
    Tensor dy = Random((*y)[0].dims(), 3, t);
    ExpectMatchesReference(c.name, OpKind::kConvGrad, c.a, {dy, x, w}, 3, {}, impl);
    ExpectMatchesReference(std::string(c.name) + " dW unused", OpKind::kConvGrad, c.a, {dy, x, w}, 3, {false, true, false}, impl);
    ExpectMatchesReference(std::string(c.name) + " dX unused", OpKind::kConvGrad, c.a, {dy, x, w}, 3, {true, false, false}, impl);
    ExpectMatchesReference(std::string(c.name) + " dX only", OpKind::kConvGrad, c.a, {dy, x, w}, 1, {}, impl);
    // dY, X and dX channels-last, as the executor keeps them between kernels in training (the
    // widened kernel's fp32 copies keep the layout); and X alone, dX plain.
    ExpectMatchesReference(std::string(c.name) + " channels-last", OpKind::kConvGrad, c.a, {dy, x, w}, 3, {}, impl,
                           0b11, 0b1);
    ExpectMatchesReference(std::string(c.name) + " channels-last X only", OpKind::kConvGrad, c.a, {dy, x, w}, 3, {},
                           impl, 0b10, 0b0);
    // The forward convolution on channels-last X and Y, where the kernel takes them (one that
    // declines leaves the executor's values plain: executor/channels_last.cc).
    Options last;
    last.impl = impl;
    last.channels_last_inputs = last.channels_last_outputs = 0b1;
    if (RunKernel(OpKind::kConv, c.a, {x, w}, last).ok())
      ExpectMatchesReference(std::string(c.name) + " forward channels-last", OpKind::kConv, c.a, {x, w}, 1, {}, impl,
                             0b1, 0b1);
  }
}

// 1-D convolutions (Conv1d: audio, text) run on oneDNN as the 2-D ones they
// are ([N, C, L] read as [N, C, 1, L]; LiftWindow1d), 3-D ones (Conv3d: video,
// volumes) on its ncdhw ones; forward and gradient.
TEST_P(OneDnnGradPath, ConvOfOtherRanksMatchesReference) {
  SKIP_UNLESS_CPU_RUNS(GetParam());
  const DType t = GetParam().dtype;
  const char* impl = GetParam().impl;
  struct Case { const char* name; I x, w; Attributes a; const char* grad_impl; };
  const std::vector<Case> cases = {
      {"1-D k3 pad 1", {2, 8, 31}, {16, 8, 3}, ConvAttrs(1, {}, {1, 1}), impl},
      {"1-D k9 stride 2 groups 2", {2, 8, 40}, {16, 4, 9}, ConvAttrs(2, {2}, {4, 4}), impl},
      {"1-D dilation 2 asymmetric pads", {1, 16, 33}, {16, 16, 9}, ConvAttrs(1, {}, {8, 7}, {2}), impl},
      // oneDNN 2.6 has only its gemm for this gradient: the direct depthwise kernel takes it.
      {"1-D depthwise 32", {2, 32, 25}, {32, 1, 5}, ConvAttrs(32, {}, {2, 2}), "direct"},
      {"1-D no attributes", {2, 4, 12}, {6, 4, 1}, Attributes{}, impl},
      {"3-D k3 pad 1", {2, 4, 5, 6, 7}, {8, 4, 3, 3, 3}, ConvAttrs(1, {}, {1, 1, 1, 1, 1, 1}), impl},
      {"3-D stride 2 groups 2 asymmetric pads", {1, 8, 7, 6, 6}, {8, 4, 3, 3, 3},
       ConvAttrs(2, {2, 2, 1}, {1, 0, 1, 0, 1, 1}), impl},
      {"3-D dilation 2, 16 channels", {1, 16, 6, 6, 6}, {16, 16, 3, 3, 3},
       ConvAttrs(1, {}, {2, 2, 2, 2, 2, 2}, {2, 2, 2}), impl},
      {"3-D pointwise", {2, 16, 3, 4, 5}, {8, 16, 1, 1, 1}, Attributes{}, impl},
      // torchvision's MC3/R(2+1)D: spatial-only kernels, spatial-only strides.
      {"3-D (1, 3, 3) stride (1, 2, 2)", {2, 16, 4, 4, 4}, {32, 16, 1, 3, 3}, ConvAttrs(1, {1, 2, 2}, {0, 1, 1, 0, 1, 1}), impl},
      {"3-D pointwise stride (1, 2, 2)", {2, 16, 4, 4, 4}, {32, 16, 1, 1, 1}, ConvAttrs(1, {1, 2, 2}, {}), impl},
      {"3-D (3, 1, 1) pad (1, 0, 0)", {2, 16, 4, 4, 4}, {16, 16, 3, 1, 1}, ConvAttrs(1, {}, {1, 0, 0, 1, 0, 0}), impl},
      {"3-D stem (3, 7, 7) stride (1, 2, 2)", {2, 3, 4, 16, 16}, {8, 3, 3, 7, 7}, ConvAttrs(1, {1, 2, 2}, {1, 3, 3, 1, 3, 3}), impl},
  };
  for (const Case& c : cases) {
    Tensor x = Random(c.x, 1, t), w = Random(c.w, 2, t);
    ExpectMatchesReference(std::string(c.name) + " forward", OpKind::kConv, c.a, {x, w}, 1, {}, impl);
    if (c.x.size() == 5)  // X and Y channels-last (ndhwc), as the training plan may give them
      ExpectMatchesReference(std::string(c.name) + " forward ndhwc", OpKind::kConv, c.a, {x, w}, 1, {}, impl, 0b1, 0b1);
    auto y = RunKernel(OpKind::kConv, c.a, {x, w});
    ASSERT_TRUE(y.ok()) << y.status().ToString();
    Tensor dy = Random((*y)[0].dims(), 3, t);
    ExpectMatchesReference(c.name, OpKind::kConvGrad, c.a, {dy, x, w}, 3, {}, c.grad_impl);
    ExpectMatchesReference(std::string(c.name) + " dX only", OpKind::kConvGrad, c.a, {dy, x, w}, 1, {}, c.grad_impl);
  }
}

// ConvTranspose (decoders, UNets, GANs) runs on oneDNN as the data gradient
// of its Conv (MakeConvTranspose): 1-D and 2-D, strides, pads,
// output_padding, groups, dilations, output_shape, auto_pad and a bias. A
// bias in a 2-byte type goes to the widened kernel (it adds the bias in fp32
// and rounds once).
TEST_P(OneDnnGradPath, ConvTransposeMatchesReference) {
  SKIP_UNLESS_CPU_RUNS(GetParam());
  const DType t = GetParam().dtype;
  const char* impl = GetParam().impl;
  auto attrs = [](int64_t group, I strides, I pads, I output_padding, I dilations = {}) {
    Attributes a = ConvAttrs(group, std::move(strides), std::move(pads), std::move(dilations));
    if (!output_padding.empty()) a.Set("output_padding", output_padding);
    return a;
  };
  Attributes shape = ConvAttrs(1, {2, 2}, {});
  shape.Set("output_shape", I{15, 14});
  Attributes same = ConvAttrs(1, {2, 2}, {});
  same.Set("auto_pad", std::string("SAME_UPPER"));
  struct Case { const char* name; I x, w; Attributes a; bool bias; };
  const std::vector<Case> cases = {
      {"k4 stride 2 pad 1 (UNet up)", {2, 16, 8, 8}, {16, 8, 4, 4}, attrs(1, {2, 2}, {1, 1, 1, 1}, {}), false},
      {"k3 stride 2 pad 1 output_padding 1, bias", {2, 8, 7, 6}, {8, 12, 3, 3}, attrs(1, {2, 2}, {1, 1, 1, 1}, {1, 1}),
       true},
      {"groups 2 dilation 2", {1, 8, 6, 6}, {8, 3, 3, 3}, attrs(2, {}, {2, 2, 2, 2}, {}, {2, 2}), false},
      {"32 channels k2 stride 2, bias", {2, 32, 5, 5}, {32, 16, 2, 2}, attrs(1, {2, 2}, {}, {}), true},
      {"output_shape", {1, 4, 7, 7}, {4, 6, 3, 3}, shape, false},
      {"auto_pad SAME_UPPER", {1, 4, 5, 5}, {4, 6, 3, 3}, same, false},
      {"1-D k4 stride 2 pad 1", {2, 16, 20}, {16, 8, 4}, attrs(1, {2}, {1, 1}, {}), true},
  };
  for (const Case& c : cases) {
    std::vector<Tensor> in = {Random(c.x, 1, t), Random(c.w, 2, t)};
    if (c.bias) in.push_back(Random({c.w[1] * c.a.Int("group", 1)}, 3, t));
    const char* path = c.bias && t != DType::kFloat32 ? "onednn-widened" : impl;
    ExpectMatchesReference(c.name, OpKind::kConvTranspose, c.a, in, 1, {}, path);
  }
}

// oneDNN's scratchpad lives in the kernel's scratch (UserScratchpad), which
// the executor's arena reuses between kernels: whatever an earlier kernel left
// there (here all zero bits, then all one bits: NaNs in every float type) must
// not reach the results. At this shape oneDNN 2.6's native bf16
// backward-weights convolution takes a scratchpad (296 KB with 2 threads,
// AVX512_BF16); fp32 and the widened paths take none here, and check the
// layout copies alone.
TEST_P(OneDnnGradPath, ConvGradIgnoresWhatItsScratchHeld) {
  SKIP_UNLESS_CPU_RUNS(GetParam());
  const DType t = GetParam().dtype;
  const Attributes a = ConvAttrs(1, {}, {1, 1, 1, 1});
  const Tensor x = Random({4, 64, 16, 16}, 1, t), w = Random({64, 64, 3, 3}, 2, t), dy = Random({4, 64, 16, 16}, 3, t);
  std::vector<std::vector<Tensor>> runs;
  for (int fill : {0x00, 0xFF}) {
    Options o;
    o.impl = GetParam().impl;
    o.num_outputs = 3;
    o.scratch_fill = fill;
    auto r = RunKernel(OpKind::kConvGrad, a, {dy, x, w}, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    runs.push_back(*r);
  }
  for (size_t o = 0; o < 3; ++o)
    EXPECT_EQ(0, std::memcmp(runs[0][o].raw(), runs[1][o].raw(), runs[0][o].nbytes())) << "output " << o;
}

TEST_P(OneDnnGradPath, PoolGradsMatchReference) {
  SKIP_UNLESS_CPU_RUNS(GetParam());
  const DType t = GetParam().dtype;
  const char* impl = GetParam().impl;
  struct Case { const char* name; I x; Attributes a; };
  auto pool = [](I k, I s, I pads, bool ceil) {
    Attributes a;
    a.Set("kernel_shape", k);
    a.Set("strides", s);
    if (!pads.empty()) a.Set("pads", pads);
    if (ceil) a.Set("ceil_mode", int64_t{1});
    return a;
  };
  const std::vector<Case> cases = {
      {"3x3 stride 2 pad 1 (ResNet stem)", {2, 4, 16, 16}, pool({3, 3}, {2, 2}, {1, 1, 1, 1}, false)},
      {"2x2 stride 2", {1, 3, 8, 8}, pool({2, 2}, {2, 2}, {}, false)},
      {"ceil_mode", {1, 2, 9, 8}, pool({3, 3}, {2, 2}, {}, true)},
      {"1-D k3 stride 2 pad 1", {2, 3, 17}, pool({3}, {2}, {1, 1}, false)},
      {"3-D 2x2x2 stride 2 (MaxPool3d)", {2, 3, 4, 6, 6}, pool({2, 2, 2}, {2, 2, 2}, {}, false)},
      {"3-D 1x3x3 stride 1x2x2 pad, ceil_mode", {1, 2, 3, 9, 8}, pool({1, 3, 3}, {1, 2, 2}, {0, 1, 1, 0, 1, 1}, true)},
  };
  for (const Case& c : cases) {
    Tensor x = Random(c.x, 4, t);
    auto y = RunKernel(OpKind::kMaxPool, c.a, {x});
    ASSERT_TRUE(y.ok()) << y.status().ToString();
    ExpectMatchesReference(c.name, OpKind::kMaxPoolGrad, c.a, {Random((*y)[0].dims(), 5, t), x}, 1, {}, impl);
  }
  // AveragePoolGrad, both divisors (an average counting the padding declines a
  // ceil_mode overhang, as the forward does).
  for (const Case& c : cases) {
    for (int64_t include_pad : {0, 1}) {
      Attributes a = c.a;
      a.Set("count_include_pad", include_pad);
      Tensor x = Random(c.x, 7, t);
      auto y = RunKernel(OpKind::kAveragePool, a, {x});
      ASSERT_TRUE(y.ok()) << y.status().ToString();
      const std::vector<Tensor> in = {Random((*y)[0].dims(), 8, t), x};
      const std::string what = std::string("average ") + c.name + (include_pad ? ", include pad" : "");
      if (include_pad && a.Int("ceil_mode", 0)) {
        Options o;
        o.impl = impl;
        EXPECT_FALSE(RunKernel(OpKind::kAveragePoolGrad, a, in, o).ok()) << what;
        continue;
      }
      ExpectMatchesReference(what, OpKind::kAveragePoolGrad, a, in, 1, {}, impl);
    }
  }
  // Ties (ReLU zeros before the pool): both send the gradient to the first
  // maximum of each window.
  Attributes a = pool({3, 3}, {2, 2}, {1, 1, 1, 1}, false);
  Tensor zeros = *Tensor::Zeros(t, {1, 2, 8, 8});
  ExpectMatchesReference("ties", OpKind::kMaxPoolGrad, a, {Random({1, 2, 4, 4}, 6, t), zeros}, 1, {}, impl);
}

TEST(OneDnnGrad, BatchNormalizationGradMatchesReference) {
  for (I dims : {I{8, 16, 7, 7}, I{4, 6}, I{2, 5, 3, 4, 4}}) {
    Attributes a;
    a.Set("epsilon", 1e-5f);
    Tensor x = Random(dims, 1, DType::kFloat32), dy = Random(dims, 2, DType::kFloat32);
    Tensor scale = Random({dims[1]}, 3, DType::kFloat32);
    ExpectMatchesReference("BN " + ir::Shape::FromStatic(dims).ToString(), OpKind::kBatchNormalizationGrad, a, {dy, x, scale}, 3);
    ExpectMatchesReference("BN dScale unused", OpKind::kBatchNormalizationGrad, a, {dy, x, scale}, 3, {false, true, false});
  }
}

// Softmax (kernels/cpu/onednn_softmax.cc) against the reference on every
// path. Along the last axis (attention scores, classifier logits) oneDNN
// must take it; along another axis it may decline (its reference
// implementation there), and then the registry's pick must still run, as it
// must for the gradient, which stays on the reference. In fp32 also elementwise: within a few ulps of the reference
// (outputs span many magnitudes; the max-normalized error alone would not
// see a wrong small probability).
TEST_P(OneDnnGradPath, SoftmaxMatchesReference) {
  SKIP_UNLESS_CPU_RUNS(GetParam());
  const DType t = GetParam().dtype;
  const char* impl = GetParam().impl;
  struct Case { const char* name; I x; int64_t axis; double scale; };
  const Case cases[] = {
      {"attention scores, last axis", {2, 4, 16, 16}, -1, 1.0},
      {"odd sizes, last axis", {3, 5, 37}, -1, 1.0},
      {"logits in the hundreds (no overflow)", {4, 33}, -1, 300.0},
      {"middle axis", {2, 7, 5, 3}, 1, 1.0},
      {"axis 0", {9, 6}, 0, 1.0},
  };
  for (const Case& c : cases) {
    Attributes a;
    a.Set("axis", c.axis);
    Tensor x = Random(c.x, 21, t);
    if (c.scale != 1.0)
      for (int64_t i = 0; i < x.num_elements(); ++i) ir::SetElementFromDouble(x, i, x.GetAsDouble(i) * c.scale);
    const bool last = c.axis == -1;
    {
      const OpKind op = OpKind::kSoftmax, grad = OpKind::kSoftmaxGrad;
      const std::string what = std::string(c.name) + " Softmax";
      auto y = RunKernel(op, a, {x});
      ASSERT_TRUE(y.ok()) << y.status().ToString();
      const std::vector<Tensor> grad_in = {Random(c.x, 22, t), (*y)[0]};
      if (last || RunKernel(op, a, {x}, Options{.impl = impl}).ok()) ExpectMatchesReference(what, op, a, {x}, 1, {}, impl);
      ExpectMatchesReference(what + ", the registry's pick", op, a, {x}, 1, {}, "");
      ExpectMatchesReference(what + " gradient, the registry's pick", grad, a, grad_in, 1, {}, "");
      if (t != DType::kFloat32 || !last) continue;
      auto got = RunKernel(op, a, {x}, Options{.impl = impl});
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      double worst = 0;
      for (int64_t i = 0; i < x.num_elements(); ++i) {
        const double want = (*y)[0].GetAsDouble(i), have = (*got)[0].GetAsDouble(i);
        worst = std::max(worst, std::abs(have - want) / std::max(std::abs(want), 1e-30));
      }
      EXPECT_LT(worst, 8 * 0x1p-24) << what << ": worst relative error " << worst;
    }
  }
}

TEST(OneDnnGrad, DeclinesWhatItCannotDo) {
  // 4-D conv, bf16 BN: no oneDNN kernel; the registry falls back to the reference.
  Attributes conv = ConvAttrs(1, {}, {});
  Tensor x = Random({1, 2, 4, 4, 4, 4}, 1, DType::kFloat32), w = Random({3, 2, 2, 2, 2, 2}, 2, DType::kFloat32);
  std::vector<Tensor> in = {Random({1, 3, 3, 3, 3, 3}, 3, DType::kFloat32), x, w};
  Options dnn, any;
  dnn.impl = "onednn";
  any.impl = "";
  EXPECT_FALSE(RunKernel(OpKind::kConvGrad, conv, in, dnn).ok());
  EXPECT_TRUE(RunKernel(OpKind::kConvGrad, conv, in, any).ok());
  Tensor xb = Random({2, 3, 4, 4}, 1, DType::kBFloat16);
  std::vector<Tensor> bn = {xb, xb, Random({3}, 2, DType::kBFloat16)};
  EXPECT_FALSE(RunKernel(OpKind::kBatchNormalizationGrad, Attributes{}, bn, dnn).ok());
  EXPECT_TRUE(RunKernel(OpKind::kBatchNormalizationGrad, Attributes{}, bn, any).ok());
  // A depthwise 5x5 over a 2x2 plane (EfficientNet's last stages at 64 px):
  // oneDNN 2.6 has only its gemm, one tiny product per channel, slower than
  // the reference's loops by ~50x there; it declines and the reference runs.
  Attributes dw = ConvAttrs(32, {}, {2, 2, 2, 2});
  std::vector<Tensor> dw_in = {Random({4, 32, 2, 2}, 4, DType::kFloat32), Random({4, 32, 2, 2}, 5, DType::kFloat32),
                               Random({32, 1, 5, 5}, 6, DType::kFloat32)};
  Options dnn3 = dnn, any3 = any;
  dnn3.num_outputs = any3.num_outputs = 3;
  EXPECT_FALSE(RunKernel(OpKind::kConvGrad, dw, dw_in, dnn3).ok());
  EXPECT_TRUE(RunKernel(OpKind::kConvGrad, dw, dw_in, any3).ok());
}

}  // namespace
}  // namespace amptrain::kernels::gradtest
