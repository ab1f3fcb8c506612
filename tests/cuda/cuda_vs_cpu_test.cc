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
// its gradient's from the same double and float products, rounded alike.
// The cuDNN convolutions (Conv, FusedConv, ConvGrad, ConvTranspose) get 4x these: the
// algorithm is picked by timing on the GPU, and the Winograd and FFT ones
// transform the operands (in the data type for fp16/bf16) before the fp32
// accumulation, a few more roundings per output than a direct sum; a low Y
// with a bias is also rounded twice (convolution, then bias). Pooling, batch
// norm and their gradients keep the plain tolerances (fp32 arithmetic, one
// rounding; MaxPool's inputs have no ties within a window, see Distinct).
// Without a GPU every test skips, naming the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <cstring>
#include <random>

#include "ir/onnx_dtype.h"
#include "tests/cuda/device_runner.h"

namespace amptrain::kernels::devtest {
namespace {

using ir::DType;
using ir::OpKind;
using ir::Tensor;

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

// Random values in [lo, hi) stored as `t` (rounded like Cast).
Tensor Random(DType t, std::vector<int64_t> dims, std::mt19937& rng, double lo = -1.0, double hi = 1.0) {
  Tensor x = *Tensor::Zeros(t, std::move(dims));
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t i = 0; i < x.num_elements(); ++i) ir::SetElementFromDouble(x, i, u(rng));
  return x;
}

Tensor Labels(std::vector<int64_t> dims, int64_t classes, std::mt19937& rng) {
  Tensor y = *Tensor::Zeros(DType::kInt64, std::move(dims));
  std::uniform_int_distribution<int64_t> u(0, classes - 1);
  for (int64_t i = 0; i < y.num_elements(); ++i) y.data<int64_t>()[i] = u(rng);
  return y;
}

struct Case {
  std::string name;
  OpKind op;
  std::function<ir::Attributes(DType)> attrs;
  std::function<std::vector<Tensor>(DType, std::mt19937&)> inputs;
  size_t outputs = 1;
  std::vector<bool> constant;
  std::string cpu_impl = "reference";
  bool bitwise = false;          // outputs and updated inputs must match exactly
  std::vector<size_t> updated;   // inputs the kernel writes in place, compared too
  bool training = true;          // KernelInit::training
  std::vector<bool> unused;      // outputs passed as data == nullptr (skipped by the kernel)
  double tol_factor = 1.0;       // times Tolerance(dtype); see the cuDNN cases
  Seeds seeds;                   // Dropout's node (KernelInit) and run (KernelContext) seeds
  bool same_bytes = false;       // outputs equal the CPU's byte for byte (copies, Dropout)
};

ir::Attributes NoAttrs(DType) { return {}; }

std::function<std::vector<Tensor>(DType, std::mt19937&)> Shapes(std::vector<std::vector<int64_t>> dims, double lo = -1.0,
                                                                 double hi = 1.0) {
  return [dims, lo, hi](DType t, std::mt19937& rng) {
    std::vector<Tensor> in;
    for (const auto& d : dims) in.push_back(Random(t, d, rng, lo, hi));
    return in;
  };
}

Case Unary(const std::string& name, OpKind op, double lo = -3.0, double hi = 3.0,
           std::function<ir::Attributes(DType)> attrs = NoAttrs) {
  return Case{name, op, std::move(attrs), Shapes({{4, 33, 17}}, lo, hi)};
}

ir::Attributes Attr(const std::string& name, ir::AttrValue v) {
  ir::Attributes a;
  a.Set(name, std::move(v));
  return a;
}

// Values distinct within every [H, W] plane (a shuffled (k - P/2) / 64 for k
// < P = H * W <= 256: exact in fp16 and bf16), so that no max-pooling window
// has a tie whose winner the devices could pick differently.
Tensor Distinct(DType t, std::vector<int64_t> dims, std::mt19937& rng) {
  Tensor x = *Tensor::Zeros(t, dims);
  const int64_t plane = dims[dims.size() - 2] * dims.back();
  std::vector<int64_t> perm(static_cast<size_t>(plane));
  for (int64_t p = 0; p * plane < x.num_elements(); ++p) {
    for (int64_t k = 0; k < plane; ++k) perm[static_cast<size_t>(k)] = k;
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int64_t k = 0; k < plane; ++k)
      ir::SetElementFromDouble(x, p * plane + k, static_cast<double>(perm[static_cast<size_t>(k)] - plane / 2) / 64.0);
  }
  return x;
}

using Ints = std::vector<int64_t>;

// Window attributes: kernel_shape (pools only, when given), strides, pads,
// dilations (when given), group, plus `extra`.
std::function<ir::Attributes(DType)> Window(Ints kernel, Ints strides, Ints pads, Ints dilations = {},
                                            int64_t group = 1, std::vector<std::pair<std::string, ir::AttrValue>> extra = {}) {
  return [=](DType) {
    ir::Attributes a;
    if (!kernel.empty()) a.Set("kernel_shape", kernel);
    a.Set("strides", strides);
    a.Set("pads", pads);
    if (!dilations.empty()) a.Set("dilations", dilations);
    if (group != 1) a.Set("group", group);
    for (const auto& [k, v] : extra) a.Set(k, v);
    return a;
  };
}

// cuDNN: convolutions, batch norm, pooling and their gradients.
void AddCudnnCases(std::vector<Case>& c) {
  auto conv = [](Case k) {
    k.tol_factor = 4.0;
    return k;
  };
  // Grouped, strided, padded 3x3 with a bias; dilated without; a 1x1
  // strided projection (ResNet's shortcut).
  c.push_back(conv(Case{"ConvGroupedStridedBias", OpKind::kConv, Window({}, {2, 2}, {1, 1, 1, 1}, {}, 2),
                        Shapes({{2, 6, 9, 9}, {4, 3, 3, 3}, {4}})}));
  c.push_back(conv(Case{"ConvDilated", OpKind::kConv, Window({}, {1, 1}, {2, 2, 2, 2}, {2, 2}),
                        Shapes({{2, 3, 11, 11}, {5, 3, 3, 3}})}));
  c.push_back(conv(Case{"Conv1x1Stride2", OpKind::kConv, Window({}, {2, 2}, {0, 0, 0, 0}),
                        Shapes({{2, 8, 8, 8}, {16, 8, 1, 1}})}));
  c.push_back(conv(Case{"FusedConvBiasResidualRelu", OpKind::kFusedConv,
                        [](DType t) {
                          ir::Attributes a = Window({}, {1, 1}, {1, 1, 1, 1})(t);
                          a.Set("activation", std::string("Relu"));
                          return a;
                        },
                        Shapes({{2, 4, 7, 7}, {6, 4, 3, 3}, {6}, {2, 6, 7, 7}})}));
  c.push_back(conv(Case{"FusedConvResidualNoBias", OpKind::kFusedConv, Window({}, {2, 2}, {1, 1, 1, 1}),
                        [](DType t, std::mt19937& rng) {
                          return std::vector<Tensor>{Random(t, {2, 4, 8, 8}, rng), Random(t, {6, 4, 3, 3}, rng),
                                                     Tensor(), Random(t, {2, 6, 4, 4}, rng)};
                        }}));
  // ConvGrad(dY, X, W) -> dX, dW, dB; the second without dX (the first
  // convolution's, which the executor never allocates).
  Case grad{"ConvGradGroupedStrided", OpKind::kConvGrad, Window({}, {2, 2}, {1, 1, 1, 1}, {}, 2),
            Shapes({{2, 4, 5, 5}, {2, 6, 9, 9}, {4, 3, 3, 3}}), 3};
  c.push_back(conv(grad));
  grad.name = "ConvGradNoDX";
  grad.unused = {true, false, false};
  c.push_back(conv(grad));
  c.push_back(conv(Case{"ConvGradDilated", OpKind::kConvGrad, Window({}, {1, 1}, {2, 2, 2, 2}, {2, 2}),
                        Shapes({{2, 5, 11, 11}, {2, 3, 11, 11}, {5, 3, 3, 3}}), 3}));
  c.push_back(conv(Case{"ConvGrad1x1Stride2", OpKind::kConvGrad, Window({}, {2, 2}, {0, 0, 0, 0}),
                        Shapes({{4, 16, 4, 4}, {4, 8, 8, 8}, {16, 8, 1, 1}}), 3}));

  // ConvTranspose (cuDNN backward-data with the roles transposed): stride 2
  // with output_padding 1 and a bias; grouped without; dilated and strided
  // with a bias.
  auto out_pad = std::vector<std::pair<std::string, ir::AttrValue>>{{"output_padding", Ints{1, 1}}};
  c.push_back(conv(Case{"ConvTransposeStride2OutputPaddingBias", OpKind::kConvTranspose,
                        Window({}, {2, 2}, {1, 1, 1, 1}, {}, 1, out_pad), Shapes({{2, 4, 5, 5}, {4, 3, 3, 3}, {3}})}));
  c.push_back(conv(Case{"ConvTransposeGrouped", OpKind::kConvTranspose, Window({}, {1, 1}, {1, 1, 1, 1}, {}, 2),
                        Shapes({{2, 4, 6, 6}, {4, 3, 3, 3}})}));
  c.push_back(conv(Case{"ConvTransposeDilatedBias", OpKind::kConvTranspose, Window({}, {2, 2}, {2, 2, 2, 2}, {2, 2}),
                        Shapes({{2, 3, 5, 5}, {3, 4, 3, 3}, {4}})}));

  // BatchNormalization: X of the test dtype (mean 1), fp32 parameters and
  // statistics.
  auto bn_inputs = [](Ints x) {
    return [x](DType t, std::mt19937& rng) {
      const int64_t ch = x[1];
      return std::vector<Tensor>{Random(t, x, rng, -1.0, 3.0), Random(DType::kFloat32, {ch}, rng, 0.5, 1.5),
                                 Random(DType::kFloat32, {ch}, rng, -0.5, 0.5),
                                 Random(DType::kFloat32, {ch}, rng, -0.2, 0.2),
                                 Random(DType::kFloat32, {ch}, rng, 0.5, 1.5)};
    };
  };
  auto bn_attrs = [](DType) {
    ir::Attributes a;
    a.Set("momentum", 0.9f);
    a.Set("epsilon", 1e-5f);
    return a;
  };
  c.push_back(Case{"BatchNormTraining", OpKind::kBatchNormalization, bn_attrs, bn_inputs({4, 6, 5, 5}), 3});
  c.push_back(Case{"BatchNormTraining2D", OpKind::kBatchNormalization, bn_attrs, bn_inputs({32, 10}), 3});
  c.push_back(Case{"BatchNormTrainingNoStats", OpKind::kBatchNormalization, bn_attrs, bn_inputs({4, 6, 5, 5}), 1});
  Case bn_inf{"BatchNormInference", OpKind::kBatchNormalization, bn_attrs, bn_inputs({4, 6, 5, 5}), 1};
  bn_inf.training = false;
  c.push_back(bn_inf);
  c.push_back(Case{"BatchNormGrad", OpKind::kBatchNormalizationGrad, bn_attrs,
                   [](DType t, std::mt19937& rng) {
                     return std::vector<Tensor>{Random(t, {4, 6, 5, 5}, rng), Random(t, {4, 6, 5, 5}, rng, -1.0, 3.0),
                                                Random(DType::kFloat32, {6}, rng, 0.5, 1.5)};
                   },
                   3});
  c.push_back(Case{"BatchNormGradDXOnly", OpKind::kBatchNormalizationGrad, bn_attrs,
                   [](DType t, std::mt19937& rng) {
                     return std::vector<Tensor>{Random(t, {8, 3, 4, 4}, rng), Random(t, {8, 3, 4, 4}, rng),
                                                Random(DType::kFloat32, {3}, rng, 0.5, 1.5)};
                   },
                   1});

  // Pooling and its gradients.
  auto distinct = [](Ints dims) {
    return [dims](DType t, std::mt19937& rng) { return std::vector<Tensor>{Distinct(t, dims, rng)}; };
  };
  auto with_dy = [](Ints dy, Ints x, bool distinct_x) {
    return [=](DType t, std::mt19937& rng) {
      Tensor g = Random(t, dy, rng);
      return std::vector<Tensor>{g, distinct_x ? Distinct(t, x, rng) : Random(t, x, rng)};
    };
  };
  auto include_pad = std::vector<std::pair<std::string, ir::AttrValue>>{{"count_include_pad", int64_t{1}}};
  auto ceil = std::vector<std::pair<std::string, ir::AttrValue>>{{"ceil_mode", int64_t{1}}};
  c.push_back(Case{"MaxPool3x3s2p1", OpKind::kMaxPool, Window({3, 3}, {2, 2}, {1, 1, 1, 1}), distinct({2, 3, 9, 9})});
  c.push_back(Case{"MaxPool2x2s2", OpKind::kMaxPool, Window({2, 2}, {2, 2}, {0, 0, 0, 0}), distinct({2, 3, 8, 8})});
  c.push_back(Case{"AveragePool3x3s2p1", OpKind::kAveragePool, Window({3, 3}, {2, 2}, {1, 1, 1, 1}),
                   Shapes({{2, 3, 9, 9}})});
  c.push_back(Case{"AveragePoolIncludePad", OpKind::kAveragePool, Window({3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 1, include_pad),
                   Shapes({{2, 3, 9, 9}})});
  c.push_back(Case{"AveragePoolCeilNoOverhang", OpKind::kAveragePool, Window({2, 2}, {2, 2}, {0, 0, 0, 0}, {}, 1, ceil),
                   Shapes({{2, 3, 8, 8}})});
  c.push_back(Case{"GlobalAveragePool", OpKind::kGlobalAveragePool, NoAttrs, Shapes({{2, 8, 7, 7}})});
  c.push_back(Case{"MaxPoolGrad3x3s2p1", OpKind::kMaxPoolGrad, Window({3, 3}, {2, 2}, {1, 1, 1, 1}),
                   with_dy({2, 3, 5, 5}, {2, 3, 9, 9}, true)});
  c.push_back(Case{"MaxPoolGrad2x2s2", OpKind::kMaxPoolGrad, Window({2, 2}, {2, 2}, {0, 0, 0, 0}),
                   with_dy({2, 3, 4, 4}, {2, 3, 8, 8}, true)});
  c.push_back(Case{"AveragePoolGrad3x3s2p1", OpKind::kAveragePoolGrad, Window({3, 3}, {2, 2}, {1, 1, 1, 1}),
                   with_dy({2, 3, 5, 5}, {2, 3, 9, 9}, false)});
  c.push_back(Case{"AveragePoolGradIncludePad", OpKind::kAveragePoolGrad,
                   Window({3, 3}, {2, 2}, {1, 1, 1, 1}, {}, 1, include_pad), with_dy({2, 3, 5, 5}, {2, 3, 9, 9}, false)});
}

// A scalar of dtype t holding v rounded to t.
Tensor ScalarOf(DType t, double v) {
  Tensor s = *Tensor::Zeros(t, {});
  ir::SetElementFromDouble(s, 0, v);
  return s;
}

// A bool tensor, each element true with probability 0.7 (DropoutGrad's mask).
Tensor Mask(std::vector<int64_t> dims, std::mt19937& rng) {
  Tensor m = *Tensor::Zeros(DType::kBool, std::move(dims));
  std::bernoulli_distribution keep(0.7);
  for (int64_t i = 0; i < m.num_elements(); ++i) m.data<uint8_t>()[i] = keep(rng) ? 1 : 0;
  return m;
}

// Reshape, Flatten, Squeeze, Unsqueeze, Expand, Dropout and its gradient:
// all compared byte for byte.
void AddShapeAndDropoutCases(std::vector<Case>& c) {
  auto exact = [](Case k) {
    k.same_bytes = true;
    return k;
  };
  auto with_ints = [](Ints x, Ints v) {
    return [x, v](DType t, std::mt19937& rng) {
      return std::vector<Tensor>{Random(t, x, rng), Tensor::Int64s(v, {static_cast<int64_t>(v.size())})};
    };
  };
  c.push_back(exact(Case{"Reshape", OpKind::kReshape, NoAttrs, with_ints({4, 33, 17}, {-1, 17}), 1, {false, true}}));
  c.push_back(exact(Case{"Flatten", OpKind::kFlatten, [](DType) { return Attr("axis", int64_t{2}); },
                         Shapes({{2, 3, 4, 5}})}));
  c.push_back(exact(Case{"Squeeze", OpKind::kSqueeze, NoAttrs, with_ints({4, 1, 17, 1}, {1, -1}), 1, {false, true}}));
  c.push_back(exact(Case{"Unsqueeze", OpKind::kUnsqueeze, NoAttrs, with_ints({4, 17}, {0, 2}), 1, {false, true}}));
  // Expand: a column, a scalar, a middle dim, a shape with ones where the
  // input has more (they keep the input's), GlobalAveragePool's gradient
  // ([N, C, 1, 1] to [N, C, H, W]), and int64 data (bytes, any dtype).
  c.push_back(exact(Case{"ExpandColumn", OpKind::kExpand, NoAttrs, with_ints({33, 1}, {4, 33, 17}), 1, {false, true}}));
  c.push_back(exact(Case{"ExpandScalar", OpKind::kExpand, NoAttrs, with_ints({}, {5, 7}), 1, {false, true}}));
  c.push_back(exact(Case{"ExpandMiddle", OpKind::kExpand, NoAttrs, with_ints({4, 1, 17}, {4, 33, 17}), 1,
                         {false, true}}));
  c.push_back(exact(Case{"ExpandShapeOnes", OpKind::kExpand, NoAttrs, with_ints({3, 1, 5}, {2, 1, 4, 1}), 1,
                         {false, true}}));
  c.push_back(exact(Case{"ExpandPoolGrad", OpKind::kExpand, NoAttrs, with_ints({8, 16, 1, 1}, {8, 16, 7, 7}), 1,
                         {false, true}}));
  c.push_back(exact(Case{"ExpandInt64", OpKind::kExpand, NoAttrs,
                         [](DType, std::mt19937& rng) {
                           return std::vector<Tensor>{Random(DType::kInt64, {3, 1}, rng, -1e6, 1e6),
                                                      Tensor::Int64s({2, 3, 4}, {3})};
                         },
                         1, {false, true}}));

  // Dropout: training with a ratio of the test dtype (0.3 rounded to it),
  // node and run seeds, and the mask; the default ratio and the node seed
  // alone; an fp32 ratio without the mask; ratio 0 (the identity); inference.
  auto dropout = [](Ints x, std::function<std::vector<Tensor>(DType)> params) {
    return [x, params](DType t, std::mt19937& rng) {
      std::vector<Tensor> in{Random(t, x, rng)};
      for (Tensor& p : params(t)) in.push_back(p);
      return in;
    };
  };
  auto on = [] {
    Tensor b = *Tensor::Zeros(DType::kBool, {});
    b.data<uint8_t>()[0] = 1;
    return b;
  };
  Case train{"DropoutTraining", OpKind::kDropout, NoAttrs,
             dropout({8, 33, 17}, [on](DType t) { return std::vector<Tensor>{ScalarOf(t, 0.3), on()}; }), 2,
             {false, true, true}};
  train.seeds = {17, 99};
  c.push_back(exact(train));
  Case node_seed{"DropoutDefaultRatioNodeSeed", OpKind::kDropout, NoAttrs, Shapes({{4, 1000}}), 2};
  node_seed.seeds = {12345, 0};
  c.push_back(exact(node_seed));
  Case no_mask{"DropoutNoMask", OpKind::kDropout, NoAttrs,
               dropout({6, 77}, [](DType) { return std::vector<Tensor>{Tensor::Scalar(0.75f)}; }), 1, {false, true}};
  no_mask.seeds = {3, 0xfedcba9876543210ull};
  c.push_back(exact(no_mask));
  Case zero{"DropoutRatioZero", OpKind::kDropout, NoAttrs,
            dropout({6, 77}, [](DType t) { return std::vector<Tensor>{ScalarOf(t, 0.0)}; }), 2, {false, true}};
  zero.seeds = {1, 2};
  c.push_back(exact(zero));
  Case inference{"DropoutInference", OpKind::kDropout, NoAttrs,
                 dropout({8, 33, 17}, [on](DType t) { return std::vector<Tensor>{ScalarOf(t, 0.3), on()}; }), 2,
                 {false, true, true}};
  inference.training = false;
  inference.seeds = {17, 99};
  c.push_back(exact(inference));
  // DropoutGrad(dY, mask, ratio?).
  c.push_back(exact(Case{"DropoutGrad", OpKind::kDropoutGrad, NoAttrs,
                         [](DType t, std::mt19937& rng) {
                           return std::vector<Tensor>{Random(t, {8, 33, 17}, rng), Mask({8, 33, 17}, rng),
                                                      ScalarOf(t, 0.3)};
                         },
                         1, {false, false, true}}));
  c.push_back(exact(Case{"DropoutGradDefaultRatio", OpKind::kDropoutGrad, NoAttrs,
                         [](DType t, std::mt19937& rng) {
                           return std::vector<Tensor>{Random(t, {4, 1000}, rng), Mask({4, 1000}, rng)};
                         }}));
}

// An int64 (or int32) vector tensor.
Tensor IntVector(const Ints& v, DType t = DType::kInt64) {
  Tensor x = *Tensor::Zeros(t, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) ir::SetElementFromDouble(x, static_cast<int64_t>(i), static_cast<double>(v[i]));
  return x;
}

// Random integers in [lo, hi) of dtype t (int32/int64): Gather's indices.
Tensor Indices(DType t, std::vector<int64_t> dims, int64_t lo, int64_t hi, std::mt19937& rng) {
  Tensor x = *Tensor::Zeros(t, std::move(dims));
  std::uniform_int_distribution<int64_t> u(lo, hi - 1);
  for (int64_t i = 0; i < x.num_elements(); ++i) ir::SetElementFromDouble(x, i, static_cast<double>(u(rng)));
  return x;
}

// Softmax, LogSoftmax, LayerNormalization and their gradients; Pow, the
// hard activations, Floor/Ceil/Sign, Clip, ReduceMax/ReduceL2 (judged by
// normalised error); Equal/Less/Greater, Transpose, Slice, Concat, Split,
// Gather, Where (byte for byte) and GatherGrad.
void AddNormAndMovementCases(std::vector<Case>& c) {
  auto axis = [](int64_t a) { return [a](DType) { return Attr("axis", a); }; };
  // Softmax: a block per long contiguous lane (axis -1, 300), a thread per
  // strided lane (axis 1) or short one (10).
  c.push_back(Case{"SoftmaxLastAxis", OpKind::kSoftmax, NoAttrs, Shapes({{8, 4, 300}}, -4, 4)});
  c.push_back(Case{"SoftmaxAxis1", OpKind::kSoftmax, axis(1), Shapes({{4, 33, 17}}, -4, 4)});
  c.push_back(Case{"SoftmaxShortRows", OpKind::kSoftmax, NoAttrs, Shapes({{64, 10}}, -4, 4)});
  c.push_back(Case{"LogSoftmaxLastAxis", OpKind::kLogSoftmax, NoAttrs, Shapes({{8, 4, 300}}, -4, 4)});
  c.push_back(Case{"LogSoftmaxAxis0", OpKind::kLogSoftmax, axis(0), Shapes({{33, 17}}, -4, 4)});
  // Gradients (dY, Y): Y a probability (log-probability) in range.
  auto dy_y = [](Ints d, double lo, double hi) {
    return [d, lo, hi](DType t, std::mt19937& rng) {
      return std::vector<Tensor>{Random(t, d, rng), Random(t, d, rng, lo, hi)};
    };
  };
  c.push_back(Case{"SoftmaxGradLastAxis", OpKind::kSoftmaxGrad, NoAttrs, dy_y({8, 4, 300}, 0.0, 0.01)});
  c.push_back(Case{"SoftmaxGradAxis1", OpKind::kSoftmaxGrad, axis(1), dy_y({4, 33, 17}, 0.0, 0.06)});
  c.push_back(Case{"LogSoftmaxGradLastAxis", OpKind::kLogSoftmaxGrad, NoAttrs, dy_y({8, 4, 300}, -9.0, -5.0)});
  c.push_back(Case{"LogSoftmaxGradAxis0", OpKind::kLogSoftmaxGrad, axis(0), dy_y({33, 17}, -6.0, -2.0)});
  // LayerNormalization: X with mean 1; Mean/InvStdDev in the default fp32
  // stash; no bias over two normalized dims; broadcast Scale and B.
  auto ln = [](Ints x, Ints scale, Ints bias) {
    return [=](DType t, std::mt19937& rng) {
      std::vector<Tensor> in{Random(t, x, rng, -1.0, 3.0), Random(t, scale, rng, 0.5, 1.5)};
      if (!bias.empty()) in.push_back(Random(t, bias, rng, -0.5, 0.5));
      return in;
    };
  };
  c.push_back(Case{"LayerNormStats", OpKind::kLayerNormalization, NoAttrs, ln({4, 6, 64}, {64}, {64}), 3});
  c.push_back(Case{"LayerNormAxis1NoBias", OpKind::kLayerNormalization,
                   [](DType) {
                     ir::Attributes a = Attr("axis", int64_t{1});
                     a.Set("epsilon", 1e-3f);
                     return a;
                   },
                   ln({3, 4, 50}, {4, 50}, {})});
  c.push_back(Case{"LayerNormBroadcastParams", OpKind::kLayerNormalization, axis(-2), ln({2, 3, 8}, {1, 8}, {3, 1}), 3});
  c.push_back(Case{"LayerNormStashF16", OpKind::kLayerNormalization,
                   [](DType) { return Attr("stash_type", int64_t{ir::OnnxFromDType(DType::kFloat16)}); },
                   ln({5, 200}, {200}, {200}), 3});
  auto ln_grad = [](Ints x, Ints scale) {
    return [=](DType t, std::mt19937& rng) {
      return std::vector<Tensor>{Random(t, x, rng), Random(t, x, rng, -1.0, 3.0), Random(t, scale, rng, 0.5, 1.5)};
    };
  };
  c.push_back(Case{"LayerNormGrad", OpKind::kLayerNormalizationGrad, NoAttrs, ln_grad({4, 6, 64}, {64}), 3});
  c.push_back(Case{"LayerNormGradAxis1", OpKind::kLayerNormalizationGrad, axis(1), ln_grad({3, 4, 50}, {4, 50}), 3});
  Case ln_no_dx{"LayerNormGradNoDX", OpKind::kLayerNormalizationGrad, NoAttrs, ln_grad({16, 300}, {300}), 3};
  ln_no_dx.unused = {true, false, false};
  c.push_back(ln_no_dx);
  c.push_back(Case{"LayerNormGradDXOnly", OpKind::kLayerNormalizationGrad, NoAttrs, ln_grad({16, 300}, {300}), 1});

  // Elementwise additions.
  c.push_back(Unary("HardSigmoid", OpKind::kHardSigmoid, -5, 5, [](DType) {
    ir::Attributes a = Attr("alpha", 0.25f);
    a.Set("beta", 0.4f);
    return a;
  }));
  c.push_back(Unary("HardSigmoidDefaults", OpKind::kHardSigmoid, -5, 5));
  c.push_back(Unary("HardSwish", OpKind::kHardSwish, -5, 5));
  c.push_back(Unary("Floor", OpKind::kFloor));
  c.push_back(Unary("Ceil", OpKind::kCeil));
  c.push_back(Unary("Sign", OpKind::kSign));
  c.push_back(Case{"Clip", OpKind::kClip, NoAttrs,
                   [](DType t, std::mt19937& rng) {
                     return std::vector<Tensor>{Random(t, {4, 33, 17}, rng, -3, 3), ScalarOf(t, -0.5), ScalarOf(t, 1.25)};
                   },
                   1, {false, true, true}});
  c.push_back(Case{"ClipMaxOnly", OpKind::kClip, NoAttrs,
                   [](DType t, std::mt19937& rng) {
                     return std::vector<Tensor>{Random(t, {4, 33, 17}, rng, -3, 3), Tensor(), ScalarOf(t, 6.0)};
                   },
                   1, {false, false, true}});
  c.push_back(Unary("ClipNoBounds", OpKind::kClip));
  // Compares (bool outputs, the CPU's bytes) on quarters in [-1, 1], exact
  // in every dtype, so that Equal also meets equal values.
  auto quarters = [](Ints a, Ints b) {
    return [a, b](DType t, std::mt19937& rng) {
      std::vector<Tensor> in;
      std::uniform_int_distribution<int> u(-4, 4);
      for (const Ints& d : {a, b}) {
        Tensor x = *Tensor::Zeros(t, d);
        for (int64_t i = 0; i < x.num_elements(); ++i) ir::SetElementFromDouble(x, i, u(rng) / 4.0);
        in.push_back(x);
      }
      return in;
    };
  };
  auto exact_compare = [](Case k) {
    k.same_bytes = true;
    return k;
  };
  c.push_back(exact_compare(Case{"Equal", OpKind::kEqual, NoAttrs, quarters({6, 40}, {6, 40})}));
  c.push_back(exact_compare(Case{"LessBroadcast", OpKind::kLess, NoAttrs, quarters({4, 1, 17}, {33, 1})}));
  c.push_back(exact_compare(Case{"GreaterScalar", OpKind::kGreater, NoAttrs, quarters({4, 33, 17}, {})}));
  c.push_back(Case{"Pow", OpKind::kPow, NoAttrs, [](DType t, std::mt19937& rng) {
                     return std::vector<Tensor>{Random(t, {6, 40}, rng, 0.5, 2.0), Random(t, {6, 40}, rng, -2.0, 2.0)};
                   }});
  // x^2 with an fp32 exponent for every base dtype (the LayerNorm decomposition).
  c.push_back(Case{"PowSquareF32Exponent", OpKind::kPow, NoAttrs, [](DType t, std::mt19937& rng) {
                     return std::vector<Tensor>{Random(t, {4, 33, 17}, rng, -3.0, 3.0), Tensor::Floats({2.0f}, {})};
                   }});
  c.push_back(Case{"PowBroadcast", OpKind::kPow, NoAttrs, [](DType t, std::mt19937& rng) {
                     return std::vector<Tensor>{Random(t, {4, 1, 17}, rng, 0.5, 2.0), Random(t, {33, 1}, rng, -1.5, 1.5)};
                   }});
  auto with_axes = [](Ints x, Ints a) {
    return [x, a](DType t, std::mt19937& rng) { return std::vector<Tensor>{Random(t, x, rng), IntVector(a)}; };
  };
  c.push_back(Case{"ReduceMaxAxis1", OpKind::kReduceMax, [](DType) { return Attr("keepdims", int64_t{1}); },
                   with_axes({6, 300, 7}, {1}), 1, {false, true}});
  c.push_back(Case{"ReduceMaxAll", OpKind::kReduceMax, NoAttrs, Shapes({{3, 1000}})});
  c.push_back(Case{"ReduceL2Axes02", OpKind::kReduceL2, [](DType) { return Attr("keepdims", int64_t{0}); },
                   with_axes({6, 5, 70}, {0, -1}), 1, {false, true}});

  // Data movement: the CPU's bytes.
  auto exact = [](Case k) {
    k.same_bytes = true;
    return k;
  };
  c.push_back(exact(Case{"TransposeHeads", OpKind::kTranspose, [](DType) { return Attr("perm", Ints{0, 2, 1, 3}); },
                         Shapes({{2, 7, 4, 9}})}));
  c.push_back(exact(Case{"TransposeDefault", OpKind::kTranspose, NoAttrs, Shapes({{3, 4, 5}})}));
  c.push_back(exact(Case{"TransposeInt64", OpKind::kTranspose, [](DType) { return Attr("perm", Ints{1, -1, 0}); },
                         [](DType, std::mt19937& rng) {
                           return std::vector<Tensor>{Random(DType::kInt64, {3, 4, 5}, rng, -1e6, 1e6)};
                         }}));
  // Slice: negative steps and indices, clamped ends, int32 parameters, axes omitted.
  auto slice = [](Ints x, Ints starts, Ints ends, Ints axes, Ints steps, DType p) {
    return [=](DType t, std::mt19937& rng) {
      std::vector<Tensor> in{Random(t, x, rng), IntVector(starts, p), IntVector(ends, p)};
      if (!axes.empty()) in.push_back(IntVector(axes, p));
      if (!steps.empty()) in.push_back(IntVector(steps, p));
      return in;
    };
  };
  c.push_back(exact(Case{"SliceStepsNegative", OpKind::kSlice, NoAttrs,
                         slice({6, 10, 8}, {1, 7}, {5, -100}, {0, 2}, {2, -3}, DType::kInt64), 1,
                         {false, true, true, true, true}}));
  c.push_back(exact(Case{"SliceNoAxesInt32", OpKind::kSlice, NoAttrs,
                         slice({4, 10}, {-3, 2}, {1000, 8}, {}, {}, DType::kInt32), 1, {false, true, true}}));
  c.push_back(exact(Case{"SliceLastAxisInt64Data", OpKind::kSlice, NoAttrs,
                         [](DType, std::mt19937& rng) {
                           return std::vector<Tensor>{Random(DType::kInt64, {3, 12}, rng, -1e6, 1e6), IntVector({4}),
                                                      IntVector({9}), IntVector({-1})};
                         },
                         1, {false, true, true, true}}));
  c.push_back(exact(Case{"ConcatAxis1", OpKind::kConcat, axis(1), Shapes({{2, 3, 5}, {2, 1, 5}, {2, 4, 5}})}));
  c.push_back(exact(Case{"ConcatAxis0", OpKind::kConcat, axis(0), Shapes({{2, 7}, {3, 7}})}));
  c.push_back(exact(Case{"ConcatLastAxisInt64", OpKind::kConcat, axis(-1),
                         [](DType, std::mt19937& rng) {
                           return std::vector<Tensor>{Random(DType::kInt64, {3, 2}, rng, -1e6, 1e6),
                                                      Random(DType::kInt64, {3, 5}, rng, -1e6, 1e6)};
                         }}));
  c.push_back(exact(Case{"SplitAxis1", OpKind::kSplit, axis(1),
                         [](DType t, std::mt19937& rng) {
                           return std::vector<Tensor>{Random(t, {2, 10, 3}, rng), IntVector({2, 3, 5})};
                         },
                         3, {false, true}}));
  c.push_back(exact(Case{"SplitEqualLastAxis", OpKind::kSplit, axis(-1), Shapes({{4, 12}}), 2}));
  // Gather: an embedding lookup with negative indices, int32 indices along
  // axis 1, int64 data.
  c.push_back(exact(Case{"GatherEmbedding", OpKind::kGather, NoAttrs,
                         [](DType t, std::mt19937& rng) {
                           return std::vector<Tensor>{Random(t, {50, 16}, rng), Indices(DType::kInt64, {4, 7}, -50, 50, rng)};
                         }}));
  c.push_back(exact(Case{"GatherAxis1Int32", OpKind::kGather, axis(1),
                         [](DType t, std::mt19937& rng) {
                           return std::vector<Tensor>{Random(t, {3, 9, 5}, rng), Indices(DType::kInt32, {6}, -9, 9, rng)};
                         }}));
  c.push_back(exact(Case{"GatherInt64Data", OpKind::kGather, NoAttrs,
                         [](DType, std::mt19937& rng) {
                           return std::vector<Tensor>{Random(DType::kInt64, {10, 3}, rng, -1e6, 1e6),
                                                      Indices(DType::kInt64, {5}, 0, 10, rng)};
                         }}));
  // GatherGrad(dY, indices, data_shape): repeated and negative indices; 600
  // indices over 2 tiles of the sort.
  c.push_back(Case{"GatherGradEmbedding", OpKind::kGatherGrad, NoAttrs,
                   [](DType t, std::mt19937& rng) {
                     return std::vector<Tensor>{Random(t, {4, 150, 16}, rng), Indices(DType::kInt64, {4, 150}, -20, 20, rng),
                                                IntVector({20, 16})};
                   },
                   1, {false, false, true}});
  c.push_back(Case{"GatherGradAxis1Int32", OpKind::kGatherGrad, axis(1),
                   [](DType t, std::mt19937& rng) {
                     return std::vector<Tensor>{Random(t, {3, 6, 5}, rng), Indices(DType::kInt32, {6}, -9, 9, rng),
                                                IntVector({3, 9, 5})};
                   },
                   1, {false, false, true}});
  // Where: the three operands broadcast; int64 values.
  auto cond = [](Ints d, std::mt19937& rng) { return Mask(std::move(d), rng); };
  c.push_back(exact(Case{"WhereBroadcast", OpKind::kWhere, NoAttrs,
                         [cond](DType t, std::mt19937& rng) {
                           return std::vector<Tensor>{cond({4, 1, 17}, rng), Random(t, {4, 33, 17}, rng),
                                                      Random(t, {33, 1}, rng)};
                         }}));
  c.push_back(exact(Case{"WhereSameShape", OpKind::kWhere, NoAttrs,
                         [cond](DType t, std::mt19937& rng) {
                           return std::vector<Tensor>{cond({6, 40}, rng), Random(t, {6, 40}, rng), Random(t, {6, 40}, rng)};
                         }}));
  c.push_back(exact(Case{"WhereInt64", OpKind::kWhere, NoAttrs,
                         [cond](DType, std::mt19937& rng) {
                           return std::vector<Tensor>{cond({5, 1}, rng), Random(DType::kInt64, {5, 3}, rng, -1e6, 1e6),
                                                      Random(DType::kInt64, {}, rng, -1e6, 1e6)};
                         }}));
}

// Random integers in [lo, hi) of dtype t (any integer dtype).
Tensor RandomInts(DType t, std::vector<int64_t> dims, int64_t lo, int64_t hi, std::mt19937& rng) {
  return Indices(t, std::move(dims), lo, hi, rng);
}

// Random values of magnitude [0.25, 2) and either sign (Mod's divisors: no
// zeros, whose NaN the devices may sign differently).
Tensor NonZero(DType t, std::vector<int64_t> dims, std::mt19937& rng) {
  Tensor x = Random(t, std::move(dims), rng, 0.25, 2.0);
  std::bernoulli_distribution neg(0.5);
  for (int64_t i = 0; i < x.num_elements(); ++i)
    if (neg(rng)) ir::SetElementFromDouble(x, i, -x.GetAsDouble(i));
  return x;
}

// The issue-11 additions: MeanSquaredError(+Grad), Pad, Tile, Resize(+Grad),
// Not, Mod, integer/bool compares, Shape, ConstantOfShape, Constant, Range.
// Data movement, Not, Mod, compares and the plan-time values byte for byte;
// the float math by normalised error (Resize runs the CPU's double
// arithmetic in the CPU's order, so it should match bitwise too).
void AddIssue11Cases(std::vector<Case>& c) {
  auto exact = [](Case k) {
    k.same_bytes = true;
    return k;
  };
  auto attrs = [](std::vector<std::pair<std::string, ir::AttrValue>> kv) {
    return [kv](DType) {
      ir::Attributes a;
      for (const auto& [k, v] : kv) a.Set(k, v);
      return a;
    };
  };
  // MeanSquaredError: small, and over many blocks of partial sums.
  c.push_back(Case{"MeanSquaredError", OpKind::kMeanSquaredError, NoAttrs, Shapes({{8, 33}, {8, 33}}, -2, 2)});
  c.push_back(Case{"MeanSquaredErrorLarge", OpKind::kMeanSquaredError, NoAttrs, Shapes({{600, 1000}, {600, 1000}})});
  c.push_back(Case{"MeanSquaredErrorGrad", OpKind::kMeanSquaredErrorGrad, NoAttrs,
                   [](DType t, std::mt19937& rng) {
                     return std::vector<Tensor>{Random(t, {}, rng, 0.5, 2.0), Random(t, {8, 33}, rng, -2, 2),
                                                Random(t, {8, 33}, rng, -2, 2)};
                   }});

  // Pad(data, pads, constant_value?, axes?): pads and axes plan-time, the
  // value a device scalar.
  auto pad = [](Ints x, Ints pads, bool value, Ints axes) {
    return [=](DType t, std::mt19937& rng) {
      std::vector<Tensor> in{Random(t, x, rng), IntVector(pads)};
      in.push_back(value ? ScalarOf(t, 1.5) : Tensor());
      if (!axes.empty()) in.push_back(IntVector(axes));
      return in;
    };
  };
  auto mode = [attrs](const char* m) { return attrs({{"mode", std::string(m)}}); };
  c.push_back(exact(Case{"PadConstantValue", OpKind::kPad, NoAttrs, pad({2, 3, 5}, {0, 1, 2, 1, 0, 3}, true, {}), 1,
                         {false, true, false}}));
  c.push_back(exact(Case{"PadConstantZeroCrop", OpKind::kPad, NoAttrs, pad({4, 6}, {1, -2, -1, 3}, false, {}), 1,
                         {false, true}}));
  c.push_back(exact(Case{"PadReflect", OpKind::kPad, mode("reflect"), pad({2, 5, 6}, {0, 3, 4, 0, 4, 2}, false, {}),
                         1, {false, true}}));
  c.push_back(exact(Case{"PadEdgeAxes", OpKind::kPad, mode("edge"), pad({2, 3, 4, 5}, {2, 1, 1, 3}, false, {-1, 1}), 1,
                         {false, true, false, true}}));
  c.push_back(exact(Case{"PadWrap", OpKind::kPad, mode("wrap"), pad({3, 4}, {2, 5, 1, 6}, false, {}), 1,
                         {false, true}}));
  c.push_back(exact(Case{"PadInt64", OpKind::kPad, NoAttrs,
                         [](DType, std::mt19937& rng) {
                           Tensor v = *Tensor::Zeros(DType::kInt64, {});
                           v.data<int64_t>()[0] = -7;
                           return std::vector<Tensor>{Random(DType::kInt64, {3, 4}, rng, -1e6, 1e6),
                                                      IntVector({1, 0, 2, 2}), v};
                         },
                         1, {false, true, false}}));

  // Tile: repeats on some dims, every dim (8 strided dims), int64 data.
  auto tile = [](Ints x, Ints repeats) {
    return [x, repeats](DType t, std::mt19937& rng) { return std::vector<Tensor>{Random(t, x, rng), IntVector(repeats)}; };
  };
  c.push_back(exact(Case{"Tile", OpKind::kTile, NoAttrs, tile({2, 3, 4}, {2, 1, 3}), 1, {false, true}}));
  c.push_back(exact(Case{"TileEveryDim", OpKind::kTile, NoAttrs, tile({2, 3, 2, 5}, {2, 2, 3, 2}), 1, {false, true}}));
  c.push_back(exact(Case{"TileInt64", OpKind::kTile, NoAttrs,
                         [](DType, std::mt19937& rng) {
                           return std::vector<Tensor>{Random(DType::kInt64, {3, 1}, rng, -1e6, 1e6), IntVector({2, 4})};
                         },
                         1, {false, true}}));

  // Resize(X, roi, scales, sizes) and ResizeGrad(dY, x_shape, roi, scales,
  // sizes): scales or sizes plan-time.
  auto resize = [](Ints x, std::vector<float> scales, Ints sizes, std::vector<float> roi = {}) {
    return [=](DType t, std::mt19937& rng) {
      std::vector<Tensor> in{Random(t, x, rng, -2, 2)};
      in.push_back(roi.empty() ? Tensor() : Tensor::Floats(roi, {static_cast<int64_t>(roi.size())}));
      in.push_back(scales.empty() ? Tensor() : Tensor::Floats(scales, {static_cast<int64_t>(scales.size())}));
      if (!sizes.empty()) in.push_back(IntVector(sizes));
      return in;
    };
  };
  const std::vector<bool> params = {false, true, true, true};
  c.push_back(Case{"ResizeNearest2x", OpKind::kResize, NoAttrs, resize({2, 3, 5, 7}, {1, 1, 2, 2}, {}), 1, params});
  c.push_back(Case{"ResizeNearestFloorAsymmetricSizes", OpKind::kResize,
                   attrs({{"nearest_mode", std::string("floor")},
                          {"coordinate_transformation_mode", std::string("asymmetric")}}),
                   resize({2, 3, 9, 7}, {}, {2, 3, 4, 11}), 1, params});
  c.push_back(Case{"ResizeLinearHalfPixel", OpKind::kResize, attrs({{"mode", std::string("linear")}}),
                   resize({2, 3, 6, 5}, {1, 1, 1.5f, 2.5f}, {}), 1, params});
  c.push_back(Case{"ResizeLinearAlignCornersDown", OpKind::kResize,
                   attrs({{"mode", std::string("linear")},
                          {"coordinate_transformation_mode", std::string("align_corners")}}),
                   resize({2, 4, 9, 8}, {}, {2, 4, 5, 3}), 1, params});
  c.push_back(Case{"ResizeCubicExcludeOutside", OpKind::kResize,
                   attrs({{"mode", std::string("cubic")}, {"exclude_outside", int64_t{1}},
                          {"cubic_coeff_a", -0.5f}}),
                   resize({1, 2, 7, 6}, {1, 1, 2, 1.5f}, {}), 1, params});
  c.push_back(Case{"ResizeTfCropExtrapolate", OpKind::kResize,
                   attrs({{"mode", std::string("linear")},
                          {"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
                          {"extrapolation_value", 0.25f}}),
                   resize({1, 2, 6, 6}, {}, {1, 2, 7, 5}, {0, 0, -0.2f, 0.1f, 1, 1, 1.1f, 0.9f}), 1, params});
  auto resize_grad = [](Ints dy, Ints x, std::vector<float> scales, Ints sizes) {
    return [=](DType t, std::mt19937& rng) {
      std::vector<Tensor> in{Random(t, dy, rng), IntVector(x), Tensor()};
      in.push_back(scales.empty() ? Tensor() : Tensor::Floats(scales, {static_cast<int64_t>(scales.size())}));
      if (!sizes.empty()) in.push_back(IntVector(sizes));
      return in;
    };
  };
  const std::vector<bool> grad_params = {false, true, true, true, true};
  c.push_back(Case{"ResizeGradNearest2x", OpKind::kResizeGrad, NoAttrs,
                   resize_grad({2, 3, 10, 14}, {2, 3, 5, 7}, {1, 1, 2, 2}, {}), 1, grad_params});
  c.push_back(Case{"ResizeGradLinearSizes", OpKind::kResizeGrad, attrs({{"mode", std::string("linear")}}),
                   resize_grad({2, 3, 9, 4}, {2, 3, 6, 7}, {}, {2, 3, 9, 4}), 1, grad_params});
  c.push_back(Case{"ResizeGradCubicAlignCorners", OpKind::kResizeGrad,
                   attrs({{"mode", std::string("cubic")},
                          {"coordinate_transformation_mode", std::string("align_corners")}}),
                   resize_grad({1, 2, 11, 6}, {1, 2, 5, 6}, {}, {1, 2, 11, 6}), 1, grad_params});

  // Not, Mod, integer and bool compares (the test dtype unused where the
  // inputs are integers or bools).
  c.push_back(exact(Case{"Not", OpKind::kNot, NoAttrs,
                         [](DType, std::mt19937& rng) { return std::vector<Tensor>{Mask({4, 33, 17}, rng)}; }}));
  auto mod_float = [](Ints a, Ints b) {
    return [a, b](DType t, std::mt19937& rng) {
      return std::vector<Tensor>{Random(t, a, rng, -5, 5), NonZero(t, b, rng)};
    };
  };
  // Float Mod with fmod=0 needs opset 28 (the runner plans at 21): fmod=1 here.
  c.push_back(exact(Case{"ModFmod", OpKind::kMod, attrs({{"fmod", int64_t{1}}}), mod_float({6, 40}, {6, 40})}));
  c.push_back(exact(Case{"ModFmodBroadcast", OpKind::kMod, attrs({{"fmod", int64_t{1}}}), mod_float({4, 1, 17}, {33, 1})}));
  auto ints2 = [](DType it, Ints a, Ints b, int64_t lo, int64_t hi) {
    return [=](DType, std::mt19937& rng) {
      return std::vector<Tensor>{RandomInts(it, a, lo, hi, rng), RandomInts(it, b, lo, hi, rng)};
    };
  };
  c.push_back(exact(Case{"ModInt64", OpKind::kMod, NoAttrs, ints2(DType::kInt64, {6, 40}, {6, 40}, -9, 10)}));
  c.push_back(exact(Case{"ModInt32FmodBroadcast", OpKind::kMod, attrs({{"fmod", int64_t{1}}}),
                         ints2(DType::kInt32, {4, 1, 17}, {33, 1}, -9, 10)}));
  c.push_back(exact(Case{"ModInt8", OpKind::kMod, NoAttrs, ints2(DType::kInt8, {6, 40}, {40}, -128, 128)}));
  c.push_back(exact(Case{"ModUInt8", OpKind::kMod, NoAttrs, ints2(DType::kUInt8, {6, 40}, {6, 40}, 0, 256)}));
  c.push_back(exact(Case{"EqualInt64", OpKind::kEqual, NoAttrs, ints2(DType::kInt64, {6, 40}, {6, 40}, -3, 3)}));
  c.push_back(exact(Case{"LessInt32Broadcast", OpKind::kLess, NoAttrs, ints2(DType::kInt32, {4, 1, 17}, {33, 1}, -3, 3)}));
  c.push_back(exact(Case{"GreaterInt8", OpKind::kGreater, NoAttrs, ints2(DType::kInt8, {6, 40}, {}, -128, 128)}));
  c.push_back(exact(Case{"LessUInt8", OpKind::kLess, NoAttrs, ints2(DType::kUInt8, {6, 40}, {6, 40}, 0, 256)}));
  c.push_back(exact(Case{"EqualBool", OpKind::kEqual, NoAttrs, [](DType, std::mt19937& rng) {
                           return std::vector<Tensor>{Mask({4, 1, 17}, rng), Mask({33, 1}, rng)};
                         }}));

  // GatherND/ScatterND and their gradients: int64 tuples with negative
  // coordinates and repeats (a scatter's duplicates resolve in tuple order).
  auto nd = [](Ints data, Ints idx, std::vector<int64_t> bounds, Ints updates = {}, bool int64_data = false) {
    return [=](DType t, std::mt19937& rng) {
      const DType dt = int64_data ? DType::kInt64 : t;
      std::vector<Tensor> in{int64_data ? Random(dt, data, rng, -1e6, 1e6) : Random(dt, data, rng)};
      Tensor ix = *Tensor::Zeros(DType::kInt64, idx);
      const int64_t k = idx.back();
      for (int64_t i = 0; i < ix.num_elements(); ++i) {
        const int64_t b = bounds[static_cast<size_t>(i % k)];
        ix.data<int64_t>()[i] = std::uniform_int_distribution<int64_t>(-b, b - 1)(rng);
      }
      in.push_back(ix);
      if (!updates.empty()) in.push_back(int64_data ? Random(dt, updates, rng, -1e6, 1e6) : Random(dt, updates, rng));
      return in;
    };
  };
  c.push_back(exact(Case{"GatherND", OpKind::kGatherND, NoAttrs, nd({4, 5, 6}, {7, 2}, {4, 5})}));
  c.push_back(exact(Case{"GatherNDBatchDims", OpKind::kGatherND, attrs({{"batch_dims", int64_t{1}}}),
                         nd({3, 5, 6}, {3, 4, 1}, {5})}));
  c.push_back(exact(Case{"GatherNDInt64Elements", OpKind::kGatherND, NoAttrs, nd({4, 5}, {6, 2}, {4, 5}, {}, true)}));
  auto nd_grad = [nd](Ints dy, Ints idx, std::vector<int64_t> bounds, Ints data) {
    return [=](DType t, std::mt19937& rng) {
      std::vector<Tensor> in = nd(dy, idx, bounds)(t, rng);
      in.push_back(IntVector(data));
      return in;
    };
  };
  c.push_back(Case{"GatherNDGradRepeats", OpKind::kGatherNDGrad, NoAttrs, nd_grad({40, 6}, {40, 2}, {3, 4}, {3, 4, 6}), 1,
                   {false, false, true}});
  c.push_back(Case{"GatherNDGradBatchDims", OpKind::kGatherNDGrad, attrs({{"batch_dims", int64_t{1}}}),
                   nd_grad({2, 9, 6}, {2, 9, 1}, {3}, {2, 3, 6}), 1, {false, false, true}});
  c.push_back(exact(Case{"ScatterNDDuplicates", OpKind::kScatterND, NoAttrs, nd({4, 5, 6}, {12, 2}, {4, 5}, {12, 6})}));
  c.push_back(Case{"ScatterNDAdd", OpKind::kScatterND, attrs({{"reduction", std::string("add")}}),
                   nd({4, 5, 6}, {30, 1}, {4}, {30, 5, 6})});
  c.push_back(exact(Case{"ScatterNDMax", OpKind::kScatterND, attrs({{"reduction", std::string("max")}}),
                         nd({6, 7}, {20, 2}, {6, 7}, {20})}));
  c.push_back(exact(Case{"ScatterNDMulInt64", OpKind::kScatterND, attrs({{"reduction", std::string("mul")}}),
                         [](DType, std::mt19937& rng) {
                           return std::vector<Tensor>{RandomInts(DType::kInt64, {5, 3}, -9, 10, rng),
                                                      Tensor::Int64s({1, -4, 1, 0}, {4, 1}),
                                                      RandomInts(DType::kInt64, {4, 3}, -9, 10, rng)};
                         }}));
  c.push_back(exact(Case{"ScatterNDGradNone", OpKind::kScatterNDGrad, NoAttrs, nd({4, 5, 6}, {9, 2}, {4, 5}), 2}));
  c.push_back(exact(Case{"ScatterNDGradAdd", OpKind::kScatterNDGrad, attrs({{"reduction", std::string("add")}}),
                         nd({4, 5, 6}, {9, 1}, {4}), 2}));

  // Plan-time values: Shape (start/end), ConstantOfShape and Constant of the
  // test dtype, Range in the test dtype and in int64/int32.
  c.push_back(exact(Case{"Shape", OpKind::kShape, NoAttrs, Shapes({{2, 3, 4, 5}})}));
  c.push_back(exact(Case{"ShapeStartEnd", OpKind::kShape, attrs({{"start", int64_t{1}}, {"end", int64_t{-1}}}),
                         Shapes({{2, 3, 4, 5}})}));
  c.push_back(exact(Case{"ConstantOfShape", OpKind::kConstantOfShape,
                         [](DType t) {
                           ir::Attributes a;
                           a.Set("value", ir::AttrValue(*ScalarOf(t, -2.75).Reshaped({1})));
                           return a;
                         },
                         [](DType, std::mt19937&) { return std::vector<Tensor>{IntVector({3, 1, 70})}; }, 1,
                         {true}}));
  c.push_back(exact(Case{"ConstantOfShapeDefault", OpKind::kConstantOfShape, NoAttrs,
                         [](DType, std::mt19937&) { return std::vector<Tensor>{IntVector({5, 7})}; }, 1, {true}}));
  c.push_back(exact(Case{"Constant", OpKind::kConstant,
                         [](DType t) {
                           std::mt19937 rng(5);
                           ir::Attributes a;
                           a.Set("value", ir::AttrValue(Random(t, {3, 17}, rng)));
                           return a;
                         },
                         [](DType, std::mt19937&) { return std::vector<Tensor>{}; }}));
  c.push_back(exact(Case{"ConstantInt64", OpKind::kConstant,
                         [](DType) {
                           ir::Attributes a;
                           a.Set("value", ir::AttrValue(IntVector({4, -1, 1LL << 40})));
                           return a;
                         },
                         [](DType, std::mt19937&) { return std::vector<Tensor>{}; }}));
  c.push_back(exact(Case{"Range", OpKind::kRange, NoAttrs,
                         [](DType t, std::mt19937&) {
                           return std::vector<Tensor>{ScalarOf(t, 0.5), ScalarOf(t, 30.0), ScalarOf(t, 0.375)};
                         },
                         1, {true, true, true}}));
  auto int_scalar = [](DType t, int64_t v) {
    Tensor s = *Tensor::Zeros(t, {});
    ir::SetElementFromDouble(s, 0, static_cast<double>(v));
    return s;
  };
  c.push_back(exact(Case{"RangeInt64Negative", OpKind::kRange, NoAttrs,
                         [int_scalar](DType, std::mt19937&) {
                           return std::vector<Tensor>{int_scalar(DType::kInt64, 100), int_scalar(DType::kInt64, -7),
                                                      int_scalar(DType::kInt64, -9)};
                         },
                         1, {true, true, true}}));
  c.push_back(exact(Case{"RangeInt32", OpKind::kRange, NoAttrs,
                         [int_scalar](DType, std::mt19937&) {
                           return std::vector<Tensor>{int_scalar(DType::kInt32, -5), int_scalar(DType::kInt32, 40),
                                                      int_scalar(DType::kInt32, 3)};
                         },
                         1, {true, true, true}}));
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
  AddIssue11Cases(c);
  return c;
}

// Test parameters print as their names, not as bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

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
  auto cpu = RunOnDevice(*CpuDevice(), tc.cpu_impl, tc.op, attrs, copy(inputs), tc.outputs, tc.constant, tc.training,
                         tc.unused, tc.seeds);
  ASSERT_TRUE(cpu.ok()) << "cpu: " << cpu.status().ToString();
  auto planned =
      PlanKernel(DeviceKind::kCuda, "", tc.op, attrs, inputs, tc.outputs, tc.constant, tc.training, tc.seeds);
  ASSERT_TRUE(planned.ok()) << "cuda kernel: " << planned.status().ToString();
  if (!Gpu().ok()) GTEST_SKIP() << Gpu().status().message();
  auto gpu = RunOnDevice(**Gpu(), "", tc.op, attrs, copy(inputs), tc.outputs, tc.constant, tc.training, tc.unused,
                         tc.seeds);
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
