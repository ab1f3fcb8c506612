// CUDA against CPU: every CUDA kernel against the CPU reference kernel
// ("reference"; "fused" for the optimizer steps) on the same random inputs,
// in fp32, fp16 and bf16, through one runner for both devices
// (device_runner.h). Every output, and every input a kernel updates in place,
// is judged by normalised error ||cuda - cpu||_2 / ||cpu||_2 against the
// tolerance of its dtype:
//   float32 1e-5: both compute in fp32 (the CPU often in double) with other
//     summation orders and device libm functions within 2 ulp; a few 1e-7
//     relative per element, far below 1e-5.
//   float16 2e-3: both round one fp32 result to fp16 (step 2^-11 = 4.9e-4
//     relative); results that differ in fp32 by a few ulp round to neighbours
//     at most once in a while: under one fp16 step in the norm, with margin.
//   bfloat16 1.6e-2: the same with 8 significant bits (step 3.9e-3): four steps.
//   float64 1e-12: GradCheck's double sums of exact squares in another order.
// The optimizer steps must match bitwise (tolerance 0): the CUDA build turns
// off FMA contraction and uses IEEE sqrt and division, as the CPU kernels do.
// The data-movement ops (copies) and Dropout must give the CPU's bytes:
// Dropout's mask comes from the same counter-based stream, its values and
// its gradient's from the same double and float products, rounded alike;
// so must the integer ops and the casts beyond fp32/fp16/bf16 (exact
// operations: cases_loss_pad_resize.cc).
// The cuDNN convolutions (Conv, FusedConv, ConvGrad, ConvTranspose) get 4x these: the
// algorithm is picked by timing on the GPU, and the Winograd and FFT ones
// transform the operands (in the data type for fp16/bf16) before the fp32
// accumulation, a few more roundings per output than a direct sum; a low Y
// with a bias is also rounded twice (convolution, then bias). Pooling, batch
// norm and their gradients keep the plain tolerances (fp32 arithmetic, one
// rounding; MaxPool's inputs have no ties within a window, see Distinct).
// Without a GPU every test skips, naming the reason.
// The elementwise, cast and optimizer-step cases are here (Cases()); the
// other families in cases_*.cc, a case's form and the input makers in
// op_cases.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <cstring>
#include <random>

#include "tests/cuda/op_cases.h"

namespace amptrain::kernels::devtest {
namespace {

// The GPU every test runs on, opened once; the reason when there is none.
StatusOr<std::shared_ptr<Device>>& Gpu() {
  static StatusOr<std::shared_ptr<Device>> dev = OpenDevice(DeviceSpec{DeviceKind::kCuda, 0});
  return dev;
}

double Tolerance(DType t) {
  switch (t) {
    case DType::kFloat32: return 1e-5;
    case DType::kFloat16: return 2e-3;
    case DType::kBFloat16: return 1.6e-2;
    default: return 1e-12;
  }
}

// Cast from the test dtype to `to`.
Case CastTo(DType to) {
  return Case{std::string("CastTo_") + std::string(ir::DTypeName(to)), OpKind::kCast,
              [to](DType) { return Attr("to", int64_t{ir::OnnxFromDType(to)}); }, Shapes({{7, 129}}, -70000.0, 70000.0)};
}

std::vector<Case> Cases() {
  std::vector<Case> c;
  // Unary maps.
  c.push_back(Unary("Relu", OpKind::kRelu));
  c.push_back(Unary("LeakyRelu", OpKind::kLeakyRelu, -3, 3, [](DType) { return Attr("alpha", 0.1f); }));
  c.push_back(Unary("Sigmoid", OpKind::kSigmoid, -8, 8));
  c.push_back(Unary("Silu", OpKind::kSilu, -8, 8));
  c.push_back(Unary("Tanh", OpKind::kTanh));
  c.push_back(Unary("Exp", OpKind::kExp));
  c.push_back(Unary("Log", OpKind::kLog, 0.05, 5));
  c.push_back(Unary("Sqrt", OpKind::kSqrt, 0.0, 5));
  c.push_back(Unary("Neg", OpKind::kNeg));
  c.push_back(Unary("Abs", OpKind::kAbs));
  c.push_back(Unary("Reciprocal", OpKind::kReciprocal, 0.2, 4));
  c.push_back(Unary("Erf", OpKind::kErf));
  c.push_back(Unary("Gelu", OpKind::kGelu));
  c.push_back(Unary("GeluTanh", OpKind::kGelu, -3, 3, [](DType) { return Attr("approximate", std::string("tanh")); }));
  // Binary ops, with and without broadcasting.
  c.push_back(Case{"Add", OpKind::kAdd, NoAttrs, Shapes({{4, 33, 17}, {4, 33, 17}})});
  c.push_back(Case{"AddBias", OpKind::kAdd, NoAttrs, Shapes({{4, 33, 17}, {33, 1}})});
  c.push_back(Case{"SubBroadcastBoth", OpKind::kSub, NoAttrs, Shapes({{4, 1, 17}, {4, 33, 1}})});
  c.push_back(Case{"MulScalar", OpKind::kMul, NoAttrs, Shapes({{4, 33, 17}, {}})});
  c.push_back(Case{"Div", OpKind::kDiv, NoAttrs, [](DType t, std::mt19937& rng) {
                     return std::vector<Tensor>{Random(t, {5, 64}, rng), Random(t, {64}, rng, 0.5, 2.0)};
                   }});
  c.push_back(Case{"Max", OpKind::kMax, NoAttrs, Shapes({{6, 40}, {6, 40}})});
  c.push_back(Case{"Min", OpKind::kMin, NoAttrs, Shapes({{6, 40}, {1, 40}})});
  // Pointwise gradients.
  c.push_back(Case{"ReluGrad", OpKind::kReluGrad, NoAttrs, Shapes({{8, 16, 9}, {8, 16, 9}})});
  c.push_back(Case{"GeluGrad", OpKind::kGeluGrad, NoAttrs, Shapes({{8, 16, 9}, {8, 16, 9}}, -3, 3)});
  c.push_back(Case{"SiluGrad", OpKind::kSiluGrad, NoAttrs, Shapes({{8, 16, 9}, {8, 16, 9}}, -8, 8)});
  c.push_back(Case{"TanhGrad", OpKind::kTanhGrad, NoAttrs, Shapes({{8, 16, 9}, {8, 16, 9}}, -1, 1)});
  c.push_back(Case{"SigmoidGrad", OpKind::kSigmoidGrad, NoAttrs, Shapes({{8, 16, 9}, {8, 16, 9}}, 0, 1)});
  c.push_back(Case{"HardSwishGrad", OpKind::kUnaryGrad, [](DType) { return Attr("op", std::string("HardSwish")); },
                   Shapes({{8, 16, 9}, {8, 16, 9}}, -5, 5)});
  c.push_back(Case{"ErfGrad", OpKind::kUnaryGrad, [](DType) { return Attr("op", std::string("Erf")); },
                   Shapes({{8, 16, 9}, {8, 16, 9}}, -3, 3)});
  c.push_back(Case{"GeluTanhGrad", OpKind::kGeluGrad, [](DType) { return Attr("approximate", std::string("tanh")); },
                   Shapes({{8, 16, 9}, {8, 16, 9}}, -3, 3)});
  // Casts (beyond fp16's range on purpose: +-inf on both devices).
  for (DType to : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) c.push_back(CastTo(to));
  // Reductions.
  auto axes = [](std::vector<int64_t> a) { return Tensor::Int64s(a, {static_cast<int64_t>(a.size())}); };
  c.push_back(Case{"ReduceSumAxis1", OpKind::kReduceSum, [](DType) { return Attr("keepdims", int64_t{1}); },
                   [axes](DType t, std::mt19937& rng) { return std::vector<Tensor>{Random(t, {6, 300, 7}, rng), axes({1})}; },
                   1, {false, true}});
  c.push_back(Case{"ReduceMeanAxes02", OpKind::kReduceMean, [](DType) { return Attr("keepdims", int64_t{0}); },
                   [axes](DType t, std::mt19937& rng) { return std::vector<Tensor>{Random(t, {6, 5, 70}, rng), axes({0, -1})}; },
                   1, {false, true}});
  c.push_back(Case{"ReduceSumAll", OpKind::kReduceSum, NoAttrs, Shapes({{3, 1000}})});
  c.push_back(Case{"ReduceSumToBias", OpKind::kReduceSumTo, NoAttrs,
                   [axes](DType t, std::mt19937& rng) {
                     return std::vector<Tensor>{Random(t, {8, 16, 5, 5}, rng), axes({16, 1, 1})};
                   },
                   1, {false, true}});
  // Softmax cross-entropy and its gradient.
  c.push_back(Case{"SoftmaxCrossEntropyMean", OpKind::kSoftmaxCrossEntropyLoss, NoAttrs,
                   [](DType t, std::mt19937& rng) {
                     return std::vector<Tensor>{Random(t, {32, 10}, rng, -4, 4), Labels({32}, 10, rng)};
                   },
                   2});
  c.push_back(Case{"SoftmaxCrossEntropyWeightedSmoothedSum", OpKind::kSoftmaxCrossEntropyLoss,
                   [](DType) {
                     ir::Attributes a;
                     a.Set("reduction", std::string("sum"));
                     a.Set("ignore_index", int64_t{2});
                     a.Set("label_smoothing", 0.1f);
                     return a;
                   },
                   [](DType t, std::mt19937& rng) {
                     return std::vector<Tensor>{Random(t, {8, 5, 3}, rng, -4, 4), Labels({8, 3}, 5, rng),
                                                Random(t, {5}, rng, 0.5, 2.0)};
                   },
                   2});
  c.push_back(Case{"SoftmaxCrossEntropyNone", OpKind::kSoftmaxCrossEntropyLoss,
                   [](DType) { return Attr("reduction", std::string("none")); },
                   [](DType t, std::mt19937& rng) {
                     return std::vector<Tensor>{Random(t, {16, 1000}, rng, -4, 4), Labels({16}, 1000, rng)};
                   }});
  c.push_back(Case{"SoftmaxCrossEntropyGradMean", OpKind::kSoftmaxCrossEntropyLossGrad, NoAttrs,
                   [](DType t, std::mt19937& rng) {
                     return std::vector<Tensor>{Random(t, {}, rng, 0.5, 2.0), Random(t, {32, 10}, rng, -4.0, -0.05),
                                                Labels({32}, 10, rng)};
                   }});
  c.push_back(Case{"SoftmaxCrossEntropyGradWeightedSmoothedNone", OpKind::kSoftmaxCrossEntropyLossGrad,
                   [](DType) {
                     ir::Attributes a;
                     a.Set("reduction", std::string("none"));
                     a.Set("ignore_index", int64_t{1});
                     a.Set("label_smoothing", 0.2f);
                     return a;
                   },
                   [](DType t, std::mt19937& rng) {
                     return std::vector<Tensor>{Random(t, {8, 3}, rng, 0.5, 2.0), Random(t, {8, 5, 3}, rng, -4.0, -0.05),
                                                Labels({8, 3}, 5, rng), Random(t, {5}, rng, 0.5, 2.0)};
                   }});
  // GEMMs.
  c.push_back(Case{"GemmTransBiasAlphaBeta", OpKind::kGemm,
                   [](DType) {
                     ir::Attributes a;
                     a.Set("transB", int64_t{1});
                     a.Set("alpha", 0.5f);
                     a.Set("beta", 2.0f);
                     return a;
                   },
                   Shapes({{33, 70}, {9, 70}, {9}})});
  c.push_back(Case{"GemmTransA", OpKind::kGemm, [](DType) { return Attr("transA", int64_t{1}); },
                   Shapes({{70, 33}, {70, 9}})});
  c.push_back(Case{"MatMulBatched", OpKind::kMatMul, NoAttrs, Shapes({{2, 3, 33, 17}, {17, 9}})});
  c.push_back(Case{"MatMulBroadcastBatch", OpKind::kMatMul, NoAttrs, Shapes({{2, 1, 8, 4}, {3, 4, 5}})});
  c.push_back(Case{"MatMulVector", OpKind::kMatMul, NoAttrs, Shapes({{64}, {64, 5}})});
  // Fused optimizer steps: fp32 masters with gradients of the test dtype and
  // (fp16/bf16) a low copy; the kernels update p, the state and the copy.
  c.push_back(Case{"GradCheck", OpKind::kGradCheck, NoAttrs,
                   [](DType t, std::mt19937& rng) {
                     Tensor g0 = Random(t, {5000}, rng, -1000, 1000), g1 = Random(t, {37}, rng, -1000, 1000);
                     return std::vector<Tensor>{g0, g1, Tensor::Floats({1024.0f}, {})};
                   },
                   1, {}, "fused"});
  c.push_back(Case{"GradCheckOverflow", OpKind::kGradCheck, NoAttrs,
                   [](DType t, std::mt19937& rng) {
                     Tensor g0 = Random(t, {300}, rng), g1 = Random(t, {3000}, rng);
                     ir::SetElementFromDouble(g1, 1234, INFINITY);
                     return std::vector<Tensor>{g0, g1, Tensor::Floats({1.0f}, {})};
                   },
                   1, {}, "fused"});
  auto low_of = [](DType t, const Tensor& p) {
    if (t == DType::kFloat32) return Tensor();
    Tensor low = *Tensor::Zeros(t, p.dims());
    for (int64_t i = 0; i < p.num_elements(); ++i) ir::SetElementFromDouble(low, i, p.GetAsDouble(i));
    return low;
  };
  c.push_back(Case{"SgdStepNesterov", OpKind::kSgdStep,
                   [](DType) {
                     ir::Attributes a;
                     a.Set("momentum", 0.9f);
                     a.Set("weight_decay", 1e-4f);
                     a.Set("nesterov", int64_t{1});
                     return a;
                   },
                   [low_of](DType t, std::mt19937& rng) {
                     std::vector<Tensor> in;
                     for (int64_t n : {1000, 17}) {
                       Tensor p = Random(DType::kFloat32, {n}, rng);
                       in.push_back(p);
                       in.push_back(Random(t, {n}, rng, -500, 500));
                       in.push_back(Random(DType::kFloat32, {n}, rng));
                       in.push_back(low_of(t, p));
                     }
                     in.push_back(Tensor::Floats({0.1f, 1.0f / 512, 0.75f, 0.0f}, {4}));
                     return in;
                   },
                   0, {}, "fused", true, {0, 2, 3, 4, 6, 7}});
  c.push_back(Case{"AdamWStep", OpKind::kAdamStep,
                   [](DType) {
                     ir::Attributes a;
                     a.Set("beta1", 0.9f);
                     a.Set("beta2", 0.999f);
                     a.Set("eps", 1e-8f);
                     a.Set("weight_decay", 0.01f);
                     a.Set("decoupled", int64_t{1});
                     return a;
                   },
                   [low_of](DType t, std::mt19937& rng) {
                     std::vector<Tensor> in;
                     for (int64_t n : {1000, 17}) {
                       Tensor p = Random(DType::kFloat32, {n}, rng);
                       in.push_back(p);
                       in.push_back(Random(t, {n}, rng, -500, 500));
                       in.push_back(Random(DType::kFloat32, {n}, rng, -0.1, 0.1));
                       in.push_back(Random(DType::kFloat32, {n}, rng, 0.0, 0.01));
                       in.push_back(low_of(t, p));
                     }
                     const float bc2 = static_cast<float>(std::sqrt(1.0 - std::pow(0.999, 3)));
                     in.push_back(Tensor::Floats({-1e-3f / 0.271f, bc2, 1.0f - 1e-5f, 1.0f / 512, 0.5f}, {5}));
                     return in;
                   },
                   0, {}, "fused", true, {0, 2, 3, 4, 5, 7, 8, 9}});
  // O3: parameters stored in the test dtype, L2 decay, no low copy.
  c.push_back(Case{"AdamStepL2LowParams", OpKind::kAdamStep,
                   [](DType) { return Attr("weight_decay", 0.01f); },
                   [](DType t, std::mt19937& rng) {
                     std::vector<Tensor> in{Random(t, {777}, rng), Random(t, {777}, rng),
                                            Random(DType::kFloat32, {777}, rng, -0.1, 0.1),
                                            Random(DType::kFloat32, {777}, rng, 0.0, 0.01), Tensor()};
                     in.push_back(Tensor::Floats({-1e-3f, 0.5f, 1.0f, 1.0f, 1.0f}, {5}));
                     return in;
                   },
                   0, {}, "fused", true, {0, 2, 3}});
  AddCudnnCases(c);
  AddShapeAndDropoutCases(c);
  AddNormAndMovementCases(c);
  AddLossPadResizeIntegerCases(c);
  return c;
}

class CudaVsCpu : public ::testing::TestWithParam<std::tuple<Case, DType>> {};

// Without a GPU the CPU half still runs and the CUDA kernel is still created
// (creation touches no device), so the cases and the CUDA kernels' checks
// are exercised on every machine before the test skips.
TEST_P(CudaVsCpu, MatchesReference) {
  const auto& [tc, dtype] = GetParam();
  std::mt19937 rng(1234);
  const std::vector<Tensor> inputs = tc.inputs(dtype, rng);
  const ir::Attributes attrs = tc.attrs(dtype);
  // Each device gets its own copy of the inputs (the step kernels write them).
  auto copy = [](const std::vector<Tensor>& in) {
    std::vector<Tensor> out;
    for (const Tensor& t : in) {
      if (t.empty()) {
        out.emplace_back();
        continue;
      }
      Tensor c = *Tensor::Zeros(t.dtype(), t.dims());
      std::memcpy(c.raw(), t.raw(), t.nbytes());
      out.push_back(c);
    }
    return out;
  };
  const std::vector<DType> out_dtypes = tc.output_dtypes ? tc.output_dtypes(dtype) : std::vector<DType>{};
  auto cpu = RunOnDevice(*CpuDevice(), tc.cpu_impl, tc.op, attrs, copy(inputs), tc.outputs, tc.constant, tc.training,
                         tc.unused, tc.seeds, out_dtypes);
  ASSERT_TRUE(cpu.ok()) << "cpu: " << cpu.status().ToString();
  const Layouts layouts = dtype == DType::kFloat32 ? Layouts{} : tc.cuda_layouts;
  auto planned = PlanKernel(DeviceKind::kCuda, "", tc.op, attrs, inputs, tc.outputs, tc.constant, tc.training,
                            tc.seeds, out_dtypes, layouts);
  ASSERT_TRUE(planned.ok()) << "cuda kernel: " << planned.status().ToString();
  if (!Gpu().ok()) GTEST_SKIP() << Gpu().status().message();
  auto gpu = RunOnDevice(**Gpu(), "", tc.op, attrs, copy(inputs), tc.outputs, tc.constant, tc.training, tc.unused,
                         tc.seeds, out_dtypes, layouts);
  ASSERT_TRUE(gpu.ok()) << "cuda: " << gpu.status().ToString();
  auto judge = [&](const Tensor& got, const Tensor& want, const std::string& what) {
    if (want.empty() && got.empty()) return;  // an unused output
    if (tc.same_bytes) {
      EXPECT_TRUE(got == want) << what << " (" << ir::DTypeName(want.dtype()) << ") differs from the CPU's bytes";
      return;
    }
    const double err = NormalizedError(got, want);
    const double tol = tc.bitwise ? 0.0 : Tolerance(want.dtype()) * tc.tol_factor;
    EXPECT_LE(err, tol) << what << " (" << ir::DTypeName(want.dtype()) << ")";
  };
  for (size_t o = 0; o < cpu->outputs.size(); ++o) judge(gpu->outputs[o], cpu->outputs[o], "output " + std::to_string(o));
  for (size_t i : tc.updated)
    if (!cpu->inputs[i].empty()) judge(gpu->inputs[i], cpu->inputs[i], "updated input " + std::to_string(i));
}

INSTANTIATE_TEST_SUITE_P(Ops, CudaVsCpu,
                         ::testing::Combine(::testing::ValuesIn(Cases()),
                                            ::testing::Values(DType::kFloat32, DType::kFloat16, DType::kBFloat16)),
                         [](const ::testing::TestParamInfo<std::tuple<Case, DType>>& info) {
                           return std::get<0>(info.param).name + "_" +
                                  std::string(ir::DTypeName(std::get<1>(info.param)));
                         });

// What the cuDNN kernels decline (their entries' accepts): no CUDA kernel is
// created, while the CPU reference takes the same node. Runs without a GPU.
TEST(CudnnDeclines, WhatCudnnCannotDo) {
  std::mt19937 rng(7);
  struct Declined {
    std::string name;
    OpKind op;
    ir::Attributes attrs;
    std::vector<Tensor> inputs;
    size_t outputs = 1;
  };
  const DType f32 = DType::kFloat32, f16 = DType::kFloat16;
  ir::Attributes same_upper = Window({}, {2, 2}, {0, 0, 0, 0})(f32);
  same_upper.Erase("pads");
  same_upper.Set("auto_pad", std::string("SAME_UPPER"));
  ir::Attributes ceil = Window({2, 2}, {2, 2}, {0, 0, 0, 0})(f32);
  ceil.Set("ceil_mode", int64_t{1});
  ir::Attributes bn;
  bn.Set("momentum", 0.9f);
  const std::vector<Declined> cases = {
      {"ConvAsymmetricPads", OpKind::kConv, same_upper, {Random(f32, {1, 2, 8, 8}, rng), Random(f32, {3, 2, 3, 3}, rng)}},
      {"Conv3D", OpKind::kConv, Window({}, {1, 1, 1}, {0, 0, 0, 0, 0, 0})(f32),
       {Random(f32, {1, 2, 4, 4, 4}, rng), Random(f32, {3, 2, 3, 3, 3}, rng)}},
      {"ConvGradAsymmetricPads", OpKind::kConvGrad, same_upper,
       {Random(f32, {1, 3, 4, 4}, rng), Random(f32, {1, 2, 8, 8}, rng), Random(f32, {3, 2, 3, 3}, rng)}, 3},
      {"ConvTransposeAsymmetricPads", OpKind::kConvTranspose, Window({}, {2, 2}, {0, 0, 1, 1})(f32),
       {Random(f32, {1, 2, 4, 4}, rng), Random(f32, {2, 3, 3, 3}, rng)}},
      {"MaxPoolCeilOverhang", OpKind::kMaxPool, ceil, {Random(f32, {1, 1, 9, 9}, rng)}},
      {"MaxPoolIndices", OpKind::kMaxPool, Window({2, 2}, {2, 2}, {0, 0, 0, 0})(f32), {Random(f32, {1, 1, 8, 8}, rng)}, 2},
      {"AveragePoolAsymmetricPads", OpKind::kAveragePool, Window({2, 2}, {1, 1}, {0, 0, 1, 1})(f32),
       {Random(f32, {1, 1, 8, 8}, rng)}},
      {"MaxPoolGradCeilOverhang", OpKind::kMaxPoolGrad, ceil,
       {Random(f32, {1, 1, 5, 5}, rng), Random(f32, {1, 1, 9, 9}, rng)}},
      {"BatchNormLowParams", OpKind::kBatchNormalization, bn,
       {Random(f16, {2, 3, 4, 4}, rng), Random(f16, {3}, rng), Random(f16, {3}, rng), Random(f16, {3}, rng),
        Random(f16, {3}, rng, 0.5, 1.5)},
       3},
  };
  for (const Declined& d : cases) {
    auto cpu = PlanKernel(DeviceKind::kCpu, "reference", d.op, d.attrs, d.inputs, d.outputs);
    EXPECT_TRUE(cpu.ok()) << d.name << ": the CPU reference should take it: " << cpu.status().ToString();
    auto gpu = PlanKernel(DeviceKind::kCuda, "", d.op, d.attrs, d.inputs, d.outputs);
    EXPECT_FALSE(gpu.ok()) << d.name << ": a CUDA kernel was created";
    // Declined by the entry (accepts), not failed by its factory.
    if (!gpu.ok()) {
      EXPECT_NE(gpu.status().message().find("no cuda kernel supports"), std::string::npos) << gpu.status().ToString();
    }
  }
}

// What the other CUDA kernels decline: Clip's bounds computed at run time,
// LayerNormalizationGrad's broadcast scale, a float64 LayerNormalization
// stash. (A Slice with computed parameters has no static output shape, so
// this runner cannot plan it; its entry declines it likewise.) Runs without
// a GPU.
TEST(CudaDeclines, RunTimeParametersAndBroadcastScale) {
  std::mt19937 rng(11);
  const DType f32 = DType::kFloat32;
  struct Declined {
    std::string name;
    OpKind op;
    ir::Attributes attrs;
    std::vector<Tensor> inputs;
    std::vector<bool> constant;
    size_t outputs = 1;
  };
  const std::vector<Declined> cases = {
      {"ClipComputedMax", OpKind::kClip, {}, {Random(f32, {4, 6}, rng), ScalarOf(f32, 0.0), ScalarOf(f32, 1.0)},
       {false, true, false}},
      {"LayerNormGradBroadcastScale", OpKind::kLayerNormalizationGrad, Attr("axis", int64_t{1}),
       {Random(f32, {3, 4, 5}, rng), Random(f32, {3, 4, 5}, rng), Random(f32, {5}, rng)}, {}, 3},
      {"LayerNormStashF64", OpKind::kLayerNormalization, Attr("stash_type", int64_t{11}),
       {Random(f32, {3, 8}, rng), Random(f32, {8}, rng)}, {}, 3},
  };
  for (const Declined& d : cases) {
    auto cpu = PlanKernel(DeviceKind::kCpu, "reference", d.op, d.attrs, d.inputs, d.outputs, d.constant);
    EXPECT_TRUE(cpu.ok()) << d.name << ": the CPU reference should take it: " << cpu.status().ToString();
    auto gpu = PlanKernel(DeviceKind::kCuda, "", d.op, d.attrs, d.inputs, d.outputs, d.constant);
    EXPECT_FALSE(gpu.ok()) << d.name << ": a CUDA kernel was created";
    if (!gpu.ok()) {
      EXPECT_NE(gpu.status().message().find("no cuda kernel supports"), std::string::npos) << gpu.status().ToString();
    }
  }
}

}  // namespace
}  // namespace amptrain::kernels::devtest
