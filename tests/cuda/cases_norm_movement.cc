// CUDA-against-CPU cases: normalisations, activations, reductions, data movement (see op_cases.h).
#include "tests/cuda/op_cases.h"

namespace amptrain::kernels::devtest {

// Softmax, LogSoftmax, LayerNormalization and their gradients; Pow, the
// hard activations, Floor/Ceil/Sign, Clip, Sin/Cos, ReduceMax/ReduceL2
// (judged by normalised error); Equal/Less/Greater, ArgMax/ArgMin,
// Transpose, Slice, Concat, Split, Gather, Where (byte for byte) and
// GatherGrad.
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
  // Sin and Cos in double on the device: the correctly rounded float, within
  // an ulp of glibc's sinf/cosf; over several periods.
  c.push_back(Unary("Sin", OpKind::kSin, -10, 10));
  c.push_back(Unary("Cos", OpKind::kCos, -10, 10));
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

  // ArgMax/ArgMin (int64 positions, the CPU's exactly): quarters in [-1, 1]
  // (9 values, so lanes of 17 or 33 have ties) for the first and the last
  // index; NaNs (a lane's first NaN wins, select_last_index or not, and
  // from position 0 nothing else is looked at); the integer dtypes.
  auto arg = [](int64_t axis, int64_t keepdims, int64_t last) {
    return [=](DType) {
      ir::Attributes a = Attr("axis", axis);
      a.Set("keepdims", keepdims);
      a.Set("select_last_index", last);
      return a;
    };
  };
  auto ties = [quarters](Ints d) {
    return [quarters, d](DType t, std::mt19937& rng) { return std::vector<Tensor>{quarters(d, {})(t, rng)[0]}; };
  };
  // NaN at the flat positions 0 and 3 mod 37: lanes with none, one and two,
  // and (position 0) one that starts with a NaN.
  auto nans = [](Ints d) {
    return [d](DType t, std::mt19937& rng) {
      Tensor x = Random(t, d, rng, -4, 4);
      for (int64_t i = 0; i < x.num_elements(); ++i)
        if (i % 37 == 0 || i % 37 == 3) ir::SetElementFromDouble(x, i, NAN);
      return std::vector<Tensor>{x};
    };
  };
  auto ints = [](DType t, Ints d, int64_t lo, int64_t hi) {
    return [=](DType, std::mt19937& rng) { return std::vector<Tensor>{RandomInts(t, d, lo, hi, rng)}; };
  };
  c.push_back(exact_compare(Case{"ArgMaxAxis1Ties", OpKind::kArgMax, arg(1, 1, 0), ties({4, 33, 17})}));
  c.push_back(exact_compare(Case{"ArgMaxLastIndexNoKeepdims", OpKind::kArgMax, arg(-1, 0, 1), ties({4, 33, 17})}));
  c.push_back(exact_compare(Case{"ArgMinAxis0Ties", OpKind::kArgMin, arg(0, 1, 0), ties({33, 17})}));
  c.push_back(exact_compare(Case{"ArgMinLastIndex", OpKind::kArgMin, arg(1, 0, 1), ties({4, 33, 17})}));
  c.push_back(exact_compare(Case{"ArgMaxNaN", OpKind::kArgMax, arg(1, 1, 0), nans({5, 20, 3})}));
  c.push_back(exact_compare(Case{"ArgMaxNaNLastIndex", OpKind::kArgMax, arg(-1, 0, 1), nans({6, 20})}));
  c.push_back(exact_compare(Case{"ArgMinNaNLastIndex", OpKind::kArgMin, arg(0, 1, 1), nans({20, 6})}));
  c.push_back(exact_compare(Case{"ArgMaxInt8LastIndex", OpKind::kArgMax, arg(1, 0, 1), ints(DType::kInt8, {6, 40}, -5, 5)}));
  c.push_back(exact_compare(Case{"ArgMinUInt8", OpKind::kArgMin, arg(-1, 1, 0), ints(DType::kUInt8, {6, 40}, 250, 256)}));
  c.push_back(exact_compare(Case{"ArgMaxInt32", OpKind::kArgMax, arg(0, 0, 0), ints(DType::kInt32, {30, 7}, -4, 4)}));
  c.push_back(exact_compare(Case{"ArgMinInt64LastIndex", OpKind::kArgMin, arg(1, 1, 1),
                                 ints(DType::kInt64, {3, 50, 2}, -(1LL << 40), -(1LL << 40) + 5)}));

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

}  // namespace amptrain::kernels::devtest
