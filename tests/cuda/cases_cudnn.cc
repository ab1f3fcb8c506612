// CUDA-against-CPU cases: the cuDNN kernels (see op_cases.h).
#include "tests/cuda/op_cases.h"

namespace amptrain::kernels::devtest {

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
  // 3x3 with channels in multiples of 8: cuDNN runs these NHWC where the
  // activations are channels-last (the NHWC variants below), with the filter
  // copied to KRSC and dW back.
  c.push_back(conv(Case{"Conv3x3C8Bias", OpKind::kConv, Window({}, {1, 1}, {1, 1, 1, 1}),
                        Shapes({{2, 8, 6, 6}, {16, 8, 3, 3}, {16}})}));
  c.push_back(conv(Case{"ConvGrad3x3C8", OpKind::kConvGrad, Window({}, {1, 1}, {1, 1, 1, 1}),
                        Shapes({{2, 16, 6, 6}, {2, 8, 6, 6}, {16, 8, 3, 3}}), 3}));

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

  // The cast-fused forms (KernelEntry::fuses_casts), as O1 plans them: an
  // fp32 BatchNormalization reading the 2-byte Conv output X and writing fp32
  // Y; its gradient reading fp32 dY beside that X and writing dX in X's type
  // (for the low ConvGrad) or fp32. The CPU side is the direct kernel, the
  // one that takes these forms there.
  auto fp32_y = [](DType) { return std::vector<DType>{DType::kFloat32}; };
  Case wide_y{"BatchNormTrainingLowXFp32Y", OpKind::kBatchNormalization, bn_attrs, bn_inputs({4, 6, 5, 5}), 3};
  wide_y.cpu_impl = "direct";
  wide_y.output_dtypes = fp32_y;
  c.push_back(wide_y);
  auto fp32_dy = [](DType t, std::mt19937& rng) {
    return std::vector<Tensor>{Random(DType::kFloat32, {4, 6, 5, 5}, rng), Random(t, {4, 6, 5, 5}, rng, -1.0, 3.0),
                               Random(DType::kFloat32, {6}, rng, 0.5, 1.5)};
  };
  Case low_dx{"BatchNormGradFp32DYLowDX", OpKind::kBatchNormalizationGrad, bn_attrs, fp32_dy, 3};
  low_dx.cpu_impl = "direct";
  low_dx.output_dtypes = [](DType t) { return std::vector<DType>{t}; };
  c.push_back(low_dx);
  Case wide_dx{"BatchNormGradFp32DYFp32DX", OpKind::kBatchNormalizationGrad, bn_attrs, fp32_dy, 3};
  wide_dx.cpu_impl = "direct";
  wide_dx.output_dtypes = fp32_y;
  c.push_back(wide_dx);

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

  // Channels-last on the CUDA side (fp16/bf16 runs; the CPU side runs NCHW,
  // the runner converts): the cases above with their activations NHWC, and
  // the mixes the cuDNN convolutions convert through scratch (an NCHW X, the
  // batch before the first convolution; an NCHW Y beside an NHWC X). The
  // cases whose channels per group are not multiples of 8 run NCHW inside
  // cuDNN with their NHWC tensors converted; 1x1 and 3x3 ones of 8 and 16
  // channels run NHWC.
  struct Variant {
    const char* of;
    const char* name;
    Layouts layouts;
  };
  const Variant variants[] = {
      {"Conv3x3C8Bias", "Conv3x3C8BiasNhwc", {0b1, 0b1}},
      {"Conv3x3C8Bias", "Conv3x3C8BiasNchwXNhwcY", {0b0, 0b1}},
      {"ConvGrad3x3C8", "ConvGrad3x3C8Nhwc", {0b11, 0b1}},
      {"ConvGrad3x3C8", "ConvGrad3x3C8NhwcDYNchwX", {0b01, 0b1}},
      {"ConvGroupedStridedBias", "ConvGroupedStridedBiasNhwc", {0b1, 0b1}},
      {"Conv1x1Stride2", "Conv1x1Stride2Nhwc", {0b1, 0b1}},
      {"Conv1x1Stride2", "Conv1x1Stride2NchwXNhwcY", {0b0, 0b1}},
      {"ConvDilated", "ConvDilatedNhwcXNchwY", {0b1, 0b0}},
      {"FusedConvBiasResidualRelu", "FusedConvBiasResidualReluNhwc", {0b1001, 0b1}},
      {"FusedConvBiasResidualRelu", "FusedConvNchwResidualNhwcY", {0b0001, 0b1}},
      {"ConvGradGroupedStrided", "ConvGradGroupedStridedNhwc", {0b11, 0b1}},
      {"ConvGradNoDX", "ConvGradNoDXNhwcDYNchwX", {0b01, 0b0}},
      {"ConvGrad1x1Stride2", "ConvGrad1x1Stride2Nhwc", {0b11, 0b1}},
      {"ConvGradDilated", "ConvGradDilatedNhwcDYNchwDX", {0b11, 0b0}},
      {"BatchNormTraining", "BatchNormTrainingNhwc", {0b1, 0b1}},
      {"BatchNormInference", "BatchNormInferenceNhwc", {0b1, 0b1}},
      {"BatchNormGrad", "BatchNormGradNhwc", {0b11, 0b1}},
      {"BatchNormTrainingLowXFp32Y", "BatchNormTrainingLowXFp32YNhwc", {0b1, 0b1}},
      {"BatchNormGradFp32DYLowDX", "BatchNormGradFp32DYLowDXNhwc", {0b11, 0b1}},
      {"MaxPool3x3s2p1", "MaxPool3x3s2p1Nhwc", {0b1, 0b1}},
      {"AveragePool3x3s2p1", "AveragePool3x3s2p1Nhwc", {0b1, 0b1}},
      {"GlobalAveragePool", "GlobalAveragePoolNhwc", {0b1, 0b0}},
      {"MaxPoolGrad3x3s2p1", "MaxPoolGrad3x3s2p1Nhwc", {0b11, 0b1}},
      {"AveragePoolGrad3x3s2p1", "AveragePoolGrad3x3s2p1Nhwc", {0b11, 0b1}},
  };
  for (const Variant& v : variants) {
    auto it = std::find_if(c.begin(), c.end(), [&](const Case& k) { return k.name == v.of; });
    if (it == c.end()) continue;  // a renamed case: the variant's test would be missing, and its name with it
    Case k = *it;
    k.name = v.name;
    k.cuda_layouts = v.layouts;
    c.push_back(k);
  }
}

}  // namespace amptrain::kernels::devtest
