// CUDA-against-CPU cases: shape ops, Dropout and the random ops (see op_cases.h).
#include "tests/cuda/op_cases.h"

namespace amptrain::kernels::devtest {

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
  // GlobalAveragePool's gradient into channels-last activations (fp16/bf16 runs).
  Case expand_nhwc{"ExpandPoolGradNhwc", OpKind::kExpand, NoAttrs, with_ints({8, 16, 1, 1}, {8, 16, 7, 7}), 1,
                   {false, true}};
  expand_nhwc.cuda_layouts = {0b0, 0b1};
  c.push_back(exact(expand_nhwc));
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

  // The random ops, from the same stream: uniform draws and Bernoulli's
  // byte for byte; normal draws within the tolerance (CUDA's double log1p
  // and cos are not glibc's, so a rounding may differ in the last bit).
  auto code = [](DType t) { return int64_t{ir::OnnxFromDType(t)}; };
  Case uniform_like{"RandomUniformLike", OpKind::kRandomUniformLike,
                    [](DType) {
                      ir::Attributes a = Attr("low", -2.0f);
                      a.Set("high", 3.0f);
                      return a;
                    },
                    Shapes({{8, 33, 17}})};
  uniform_like.seeds = {17, 99};
  c.push_back(exact(uniform_like));
  Case uniform{"RandomUniformSeedAttr", OpKind::kRandomUniform,
               [code](DType t) {
                 ir::Attributes a = Attr("shape", Ints{4, 1000});
                 a.Set("dtype", code(t));
                 a.Set("seed", 42.0f);
                 return a;
               },
               [](DType, std::mt19937&) { return std::vector<Tensor>{}; }};
  uniform.seeds = {5, 6};
  c.push_back(exact(uniform));
  Case normal_like{"RandomNormalLike", OpKind::kRandomNormalLike,
                   [](DType) {
                     ir::Attributes a = Attr("mean", 1.0f);
                     a.Set("scale", 2.0f);
                     return a;
                   },
                   Shapes({{8, 33, 17}})};
  normal_like.seeds = {17, 99};
  c.push_back(normal_like);
  Case normal{"RandomNormal", OpKind::kRandomNormal,
              [code](DType t) {
                ir::Attributes a = Attr("shape", Ints{3, 777});
                a.Set("dtype", code(t));
                return a;
              },
              [](DType, std::mt19937&) { return std::vector<Tensor>{}; }};
  normal.seeds = {12345, 0};
  c.push_back(normal);
  Case bernoulli{"Bernoulli", OpKind::kBernoulli, NoAttrs, Shapes({{8, 33, 17}}, 0.0, 1.0)};
  bernoulli.seeds = {17, 99};
  c.push_back(exact(bernoulli));
  Case bernoulli_bool{"BernoulliBool", OpKind::kBernoulli, [code](DType) { return Attr("dtype", code(DType::kBool)); },
                      Shapes({{4, 1000}}, 0.0, 1.0)};
  bernoulli_bool.seeds = {3, 4};
  c.push_back(exact(bernoulli_bool));
}

}  // namespace amptrain::kernels::devtest
