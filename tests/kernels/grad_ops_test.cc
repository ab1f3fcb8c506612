// Reference kernels of the training ops (autodiff/grad_ops.md):
//   - every backward op against float64 central differences of its forward
//     op's reference kernel (grad_test_util.h: L = sum(r * forward), eps 1e-6,
//     |analytic - numeric| <= 1e-5 + 1e-3 |numeric|, all-zero gradients fail),
//     inputs kept away from kinks (ReLU at 0; MaxPool ties are improbable
//     with continuous random values);
//   - the loss heads against values from PyTorch 1.13's
//     F.cross_entropy(..., weight, ignore_index, label_smoothing) in float64;
//   - bitwise repeatability across runs and thread counts;
//   - the shape rules on symbolic batch dims and shape inputs.
#include "ir/graph.h"
#include "tests/kernels/grad_test_util.h"

namespace amptrain::kernels::gradtest {
namespace {

using ir::Attributes;
using ir::DType;
using ir::Tensor;
using I = std::vector<int64_t>;

Tensor Out(OpKind op, const Attributes& a, const std::vector<Tensor>& in, Options opt = {}, size_t which = 0) {
  auto r = RunKernel(op, a, in, opt);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? (*r)[which] : Tensor();
}

Forward Fwd(OpKind op, const Attributes& a, Options opt = {}) {
  return [=](const std::vector<Tensor>& in) { return Out(op, a, in, opt); };
}

// Runs `grad_op` on grad_inputs (dY = r first) and checks its output k
// against the forward op's differences with respect to fwd_inputs[wrt[k]].
void CheckBackward(const std::string& what, const Forward& fwd, const std::vector<Tensor>& fwd_inputs, OpKind grad_op,
                   const Attributes& a, const std::vector<Tensor>& grad_inputs, const std::vector<int>& wrt,
                   const Tensor& r) {
  Options opt;
  opt.num_outputs = wrt.size();
  auto grads = RunKernel(grad_op, a, grad_inputs, opt);
  ASSERT_TRUE(grads.ok()) << what << ": " << grads.status().ToString();
  for (size_t k = 0; k < wrt.size(); ++k)
    if (wrt[k] >= 0) ExpectGradient(what + " output " + std::to_string(k), fwd, fwd_inputs, wrt[k], r, (*grads)[k]);
}

Attributes Window(I kernel, I strides, I pads, I dilations = {}) {
  Attributes a;
  if (!kernel.empty()) a.Set("kernel_shape", kernel);
  if (!strides.empty()) a.Set("strides", strides);
  if (!pads.empty()) a.Set("pads", pads);
  if (!dilations.empty()) a.Set("dilations", dilations);
  return a;
}

TEST(GradOps, ConvGrad) {
  struct Case { const char* name; I x, w; Attributes a; int64_t group; };
  std::vector<Case> cases = {
      {"2-D pads", {2, 3, 5, 5}, {4, 3, 3, 3}, Window({}, {}, {1, 1, 1, 1}), 1},
      {"2-D stride 2 asymmetric pads", {1, 2, 7, 6}, {3, 2, 3, 2}, Window({}, {2, 2}, {1, 0, 0, 1}), 1},
      {"2-D dilation 2", {1, 2, 7, 7}, {2, 2, 3, 3}, Window({}, {}, {2, 2, 2, 2}, {2, 2}), 1},
      {"2-D groups 2", {2, 4, 5, 5}, {6, 2, 3, 3}, Window({}, {2, 1}, {1, 1, 1, 1}), 2},
      {"1-D stride 2", {2, 3, 9}, {2, 3, 3}, Window({}, {2}, {1, 1}), 1},
      {"3-D", {1, 2, 4, 4, 3}, {2, 2, 2, 3, 2}, Window({}, {1, 2, 1}, {0, 1, 1, 1, 0, 0}), 1},
  };
  for (Case& c : cases) {
    c.a.Set("group", c.group);
    Tensor x = Random(c.x, 1), w = Random(c.w, 2), b = Random({c.w[0]}, 3);
    Tensor y = Out(OpKind::kConv, c.a, {x, w, b});
    Tensor r = Random(y.dims(), 4);
    CheckBackward(c.name, Fwd(OpKind::kConv, c.a), {x, w, b}, OpKind::kConvGrad, c.a, {r, x, w}, {0, 1, 2}, r);
  }
}

TEST(GradOps, ConvGradSkipsUnusedOutputs) {
  Attributes a = Window({}, {}, {1, 1, 1, 1});
  Tensor x = Random({1, 2, 4, 4}, 1), w = Random({3, 2, 3, 3}, 2);
  Options opt;
  opt.num_outputs = 3;
  opt.unused = {true, false, true};
  auto r = RunKernel(OpKind::kConvGrad, a, {Random({1, 3, 4, 4}, 3), x, w}, opt);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (size_t o : {0, 2})
    for (double v : Values((*r)[o])) EXPECT_EQ(v, 0.0) << "output " << o << " was written";
  double norm = 0.0;
  for (double v : Values((*r)[1])) norm += std::fabs(v);
  EXPECT_GT(norm, 0.0);
}

TEST(GradOps, PoolGrads) {
  struct Case { const char* name; I x; Attributes a; };
  auto with = [](Attributes a, const char* key, int64_t v) { a.Set(key, v); return a; };
  std::vector<Case> cases = {
      {"2x2 stride 2", {2, 2, 4, 4}, Window({2, 2}, {2, 2}, {})},
      {"3x3 stride 2 pad 1", {1, 2, 7, 7}, Window({3, 3}, {2, 2}, {1, 1, 1, 1})},
      {"ceil_mode", {1, 2, 6, 5}, with(Window({3, 2}, {2, 2}, {}), "ceil_mode", 1)},
      {"count_include_pad", {1, 2, 5, 5}, with(Window({3, 3}, {2, 2}, {1, 1, 1, 1}), "count_include_pad", 1)},
      {"1-D", {2, 3, 9}, Window({3}, {2}, {1, 0})},
      {"3-D", {1, 2, 4, 4, 4}, Window({2, 2, 2}, {2, 1, 2}, {})},
      {"dilation 2", {1, 1, 7, 7}, Window({2, 2}, {1, 1}, {}, {2, 2})},
  };
  for (const Case& c : cases) {
    Tensor x = Random(c.x, 7);
    for (OpKind fwd : {OpKind::kMaxPool, OpKind::kAveragePool}) {
      const OpKind grad = fwd == OpKind::kMaxPool ? OpKind::kMaxPoolGrad : OpKind::kAveragePoolGrad;
      Tensor r = Random(Out(fwd, c.a, {x}).dims(), 8);
      CheckBackward(std::string(c.name) + (fwd == OpKind::kMaxPool ? " max" : " avg"), Fwd(fwd, c.a), {x}, grad, c.a,
                    {r, x}, {0}, r);
    }
  }
}

TEST(GradOps, BatchNormalizationGrad) {
  for (I dims : {I{4, 3}, I{2, 3, 4, 5}, I{3, 2, 5}}) {
    Attributes a;
    a.Set("epsilon", 1e-3f);
    const int64_t c = dims[1];
    Tensor x = Random(dims, 1, DType::kFloat64, -2, 2), scale = Random({c}, 2), bias = Random({c}, 3);
    Tensor mean = Random({c}, 4), var = Random({c}, 5, DType::kFloat64, 0.5, 1.5);
    Options train;
    train.num_outputs = 3;  // training mode: batch statistics
    Forward fwd = [=](const std::vector<Tensor>& in) { return Out(OpKind::kBatchNormalization, a, in, train); };
    Tensor r = Random(dims, 6);
    CheckBackward("BN rank " + std::to_string(dims.size()), fwd, {x, scale, bias, mean, var},
                  OpKind::kBatchNormalizationGrad, a, {r, x, scale}, {0, 1, 2}, r);
  }
}

TEST(GradOps, LayerNormalizationGrad) {
  struct Case { I x, scale; int64_t axis; };
  for (const Case& c : {Case{{3, 8}, {8}, -1}, Case{{2, 3, 4}, {3, 4}, 1}, Case{{2, 3, 4}, {1, 4}, 1}}) {
    Attributes a;
    a.Set("axis", c.axis);
    a.Set("epsilon", 1e-3f);
    Tensor x = Random(c.x, 1, DType::kFloat64, -2, 2), scale = Random(c.scale, 2), bias = Random(c.scale, 3);
    Tensor r = Random(c.x, 4);
    CheckBackward("LN axis " + std::to_string(c.axis), Fwd(OpKind::kLayerNormalization, a), {x, scale, bias},
                  OpKind::kLayerNormalizationGrad, a, {r, x, scale}, {0, 1, 2}, r);
  }
}

// UnaryGrad: each function's fused derivative against float64 differences of
// its forward kernel (inside its domain, away from the exponential units'
// kink at 0); in fp16 and bf16 the result is the exact dY f'(X) rounded once:
// equal to the rounded float64 value but where float32 lands next to a
// rounding midpoint, and never more than an ulp off.
TEST(GradOps, UnaryGradIsTheDerivativeRoundedOnce) {
  struct Case {
    OpKind op;
    double lo, hi;
    Attributes a;
  };
  auto with = [](std::initializer_list<std::pair<const char*, float>> kv) {
    Attributes a;
    for (const auto& [k, v] : kv) a.Set(k, v);
    return a;
  };
  const std::vector<Case> cases = {
      {OpKind::kSin, -3, 3, {}},        {OpKind::kCos, -3, 3, {}},      {OpKind::kTan, -1.2, 1.2, {}},
      {OpKind::kAsin, -0.9, 0.9, {}},   {OpKind::kAcos, -0.9, 0.9, {}}, {OpKind::kAtan, -3, 3, {}},
      {OpKind::kSinh, -3, 3, {}},       {OpKind::kCosh, -3, 3, {}},     {OpKind::kAsinh, -3, 3, {}},
      {OpKind::kAcosh, 1.1, 4, {}},     {OpKind::kAtanh, -0.9, 0.9, {}}, {OpKind::kSoftplus, -4, 4, {}},
      {OpKind::kMish, -4, 4, {}},       {OpKind::kElu, -3, 3, with({{"alpha", 0.5f}})},
      {OpKind::kCelu, -3, 3, with({{"alpha", 2.0f}})}, {OpKind::kSelu, -3, 3, {}},
      {OpKind::kErf, -3, 3, {}},        {OpKind::kHardSwish, -2.5, 2.5, {}},
  };
  for (const Case& c : cases) {
    const std::string name(ir::Schema(c.op).onnx_type);
    SCOPED_TRACE(name);
    Attributes g = c.a;
    g.Set("op", name);
    Tensor x = Random({4, 25}, 1, DType::kFloat64, c.lo, c.hi, 0.05), r = Random({4, 25}, 2);
    CheckBackward("UnaryGrad " + name, Fwd(c.op, c.a), {x}, OpKind::kUnaryGrad, g, {r, x}, {0}, r);
    for (DType low : {DType::kFloat16, DType::kBFloat16}) {
      SCOPED_TRACE(ir::DTypeName(low));
      Tensor xl = Random({4, 25}, 3, low, c.lo, c.hi, 0.05), rl = Random({4, 25}, 4, low);
      Tensor got = Out(OpKind::kUnaryGrad, g, {rl, xl});
      Tensor x64 = *Tensor::Zeros(DType::kFloat64, {4, 25}), r64 = *Tensor::Zeros(DType::kFloat64, {4, 25});
      for (int64_t i = 0; i < 100; ++i) {
        ir::SetElementFromDouble(x64, i, xl.GetAsDouble(i));
        ir::SetElementFromDouble(r64, i, rl.GetAsDouble(i));
      }
      Tensor exact = Out(OpKind::kUnaryGrad, g, {r64, x64});
      Tensor rounded = *Tensor::Zeros(low, {4, 25});
      int64_t equal = 0;
      const double eps = low == DType::kFloat16 ? 0x1p-10 : 0x1p-7;
      for (int64_t i = 0; i < 100; ++i) {
        ir::SetElementFromDouble(rounded, i, exact.GetAsDouble(i));
        equal += got.GetAsDouble(i) == rounded.GetAsDouble(i);
        EXPECT_LE(std::fabs(got.GetAsDouble(i) - exact.GetAsDouble(i)), eps * std::fabs(exact.GetAsDouble(i)) + 1e-7)
            << i << ": x " << xl.GetAsDouble(i) << " dy " << rl.GetAsDouble(i) << " got " << got.GetAsDouble(i) << " exact " << exact.GetAsDouble(i);
      }
      EXPECT_GE(equal, 98) << "of 100 not rounded once";
    }
  }
}

// TanhGrad and SigmoidGrad in fp16/bf16 round once: the exact dY (1 - Y^2)
// and dY Y (1 - Y) of the low inputs, rounded, bit for bit (PyTorch's
// tanh_backward / sigmoid_backward compute in float and round once too).
TEST(GradOps, TanhAndSigmoidGradsRoundOnceInLowPrecision) {
  Attributes none;
  for (OpKind op : {OpKind::kTanhGrad, OpKind::kSigmoidGrad})
    for (DType low : {DType::kFloat16, DType::kBFloat16}) {
      SCOPED_TRACE(std::string(ir::Schema(op).onnx_type) + " " + std::string(ir::DTypeName(low)));
      const bool tanh = op == OpKind::kTanhGrad;
      Tensor y = Random({4, 25}, 3, low, tanh ? -1 : 0, 1), dy = Random({4, 25}, 4, low);
      Tensor got = Out(op, none, {dy, y});
      Tensor rounded = *Tensor::Zeros(low, {4, 25});
      for (int64_t i = 0; i < 100; ++i) {
        const double v = y.GetAsDouble(i), g = dy.GetAsDouble(i);
        ir::SetElementFromDouble(rounded, i, g * (tanh ? (1 - v) * (1 + v) : v * (1 - v)));
        EXPECT_EQ(got.GetAsDouble(i), rounded.GetAsDouble(i)) << i << ": y " << v << " dy " << g;
      }
    }
}

TEST(GradOps, ActivationGrads) {
  Tensor x = Random({3, 17}, 1, DType::kFloat64, -3, 3, 0.05);
  Tensor r = Random({3, 17}, 2);
  Attributes none;
  CheckBackward("ReluGrad", Fwd(OpKind::kRelu, none), {x}, OpKind::kReluGrad, none,
                {r, Out(OpKind::kRelu, none, {x})}, {0}, r);
  for (const char* approx : {"none", "tanh"}) {
    Attributes a;
    a.Set("approximate", std::string(approx));
    CheckBackward(std::string("GeluGrad ") + approx, Fwd(OpKind::kGelu, a), {x}, OpKind::kGeluGrad, a, {r, x}, {0}, r);
  }
  Tensor wide = Random({3, 17}, 5, DType::kFloat64, -9, 9, 0.05);
  CheckBackward("SiluGrad", Fwd(OpKind::kSilu, none), {wide}, OpKind::kSiluGrad, none, {r, wide}, {0}, r);
  CheckBackward("TanhGrad", Fwd(OpKind::kTanh, none), {x}, OpKind::kTanhGrad, none,
                {r, Out(OpKind::kTanh, none, {x})}, {0}, r);
  CheckBackward("SigmoidGrad", Fwd(OpKind::kSigmoid, none), {wide}, OpKind::kSigmoidGrad, none,
                {r, Out(OpKind::kSigmoid, none, {wide})}, {0}, r);
  for (int64_t axis : {0, 1, -1}) {
    Tensor x3 = Random({2, 3, 4}, 3, DType::kFloat64, -2, 2), r3 = Random({2, 3, 4}, 4);
    Attributes a;
    a.Set("axis", axis);
    CheckBackward("SoftmaxGrad axis " + std::to_string(axis), Fwd(OpKind::kSoftmax, a), {x3}, OpKind::kSoftmaxGrad, a,
                  {r3, Out(OpKind::kSoftmax, a, {x3})}, {0}, r3);
    CheckBackward("LogSoftmaxGrad axis " + std::to_string(axis), Fwd(OpKind::kLogSoftmax, a), {x3},
                  OpKind::kLogSoftmaxGrad, a, {r3, Out(OpKind::kLogSoftmax, a, {x3})}, {0}, r3);
  }
}

TEST(GradOps, DropoutGrad) {
  Tensor x = Random({4, 25}, 1), r = Random({4, 25}, 2);
  Tensor ratio = *Tensor::Zeros(DType::kFloat64, {});
  ratio.data<double>()[0] = 0.3;
  Options train;
  train.training = true;
  train.seed = 42;
  train.num_outputs = 2;
  Attributes none;
  Tensor mask = Out(OpKind::kDropout, none, {x, ratio}, train, 1);
  int dropped = 0;
  for (double m : Values(mask)) dropped += m == 0.0;
  EXPECT_GT(dropped, 0);
  CheckBackward("DropoutGrad", Fwd(OpKind::kDropout, none, train), {x, ratio}, OpKind::kDropoutGrad, none,
                {r, mask, ratio}, {0}, r);
}

TEST(GradOps, GatherGrad) {
  struct Case { I data, index_dims; std::vector<int64_t> indices; int64_t axis; };
  for (const Case& c : {Case{{5, 3}, {2, 3}, {0, 4, -1, 2, 0, 0}, 0}, Case{{2, 4, 3}, {3}, {3, -4, 3}, 1},
                        Case{{2, 3}, {}, {-1}, 1}}) {
    Attributes a;
    a.Set("axis", c.axis);
    Tensor data = Random(c.data, 1), idx = Tensor::Int64s(c.indices, c.index_dims);
    Tensor r = Random(Out(OpKind::kGather, a, {data, idx}).dims(), 2);
    CheckBackward("GatherGrad axis " + std::to_string(c.axis), Fwd(OpKind::kGather, a), {data, idx},
                  OpKind::kGatherGrad, a, {r, idx, Tensor::Int64s(c.data, {static_cast<int64_t>(c.data.size())})}, {0},
                  r);
  }
}

TEST(GradOps, ReduceSumTo) {
  struct Case { I from, to; };
  for (const Case& c : {Case{{3, 4}, {4}}, Case{{2, 3, 4, 5}, {3, 1, 1}}, Case{{2, 3}, {2, 3}}, Case{{4, 5}, {1}},
                        Case{{2, 1, 3}, {1, 1, 3}}}) {
    Tensor x = Random(c.to, 1), r = Random(c.from, 2);
    Tensor shape_to = Tensor::Int64s(c.to, {static_cast<int64_t>(c.to.size())});
    Tensor shape_from = Tensor::Int64s(c.from, {static_cast<int64_t>(c.from.size())});
    Attributes none;
    CheckBackward("ReduceSumTo " + ir::Shape::FromStatic(c.to).ToString(), Fwd(OpKind::kExpand, none), {x, shape_from},
                  OpKind::kReduceSumTo, none, {r, shape_to}, {0}, r);
  }
}

Attributes LossAttrs(const char* reduction, double smoothing, std::optional<int64_t> ignore = std::nullopt) {
  Attributes a;
  a.Set("reduction", std::string(reduction));
  a.Set("label_smoothing", static_cast<float>(smoothing));
  if (ignore) a.Set("ignore_index", *ignore);
  return a;
}

TEST(GradOps, SoftmaxCrossEntropyLossGrad) {
  Tensor w = Random({4}, 9, DType::kFloat64, 0.5, 2.0);
  for (I dims : {I{5, 4}, I{2, 4, 3}}) {
    I label_dims = dims;
    label_dims.erase(label_dims.begin() + 1);
    std::vector<int64_t> labels(static_cast<size_t>(Count(label_dims)));
    for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>((i * 7 + 1) % 4);
    Tensor y = Tensor::Int64s(labels, label_dims), s = Random(dims, 3, DType::kFloat64, -2, 2);
    for (const char* red : {"mean", "sum", "none"}) {
      for (bool weighted : {false, true}) {
        Attributes a = LossAttrs(red, 0.15, 3);
        std::vector<Tensor> in = {s, y, weighted ? w : Tensor()};
        Options both;
        both.num_outputs = 2;
        auto fwd = RunKernel(OpKind::kSoftmaxCrossEntropyLoss, a, in, both);
        ASSERT_TRUE(fwd.ok()) << fwd.status().ToString();
        Tensor r = Random((*fwd)[0].dims(), 5, DType::kFloat64, 0.5, 1.5);
        CheckBackward(std::string("SCE ") + red + (weighted ? " weighted" : "") + " rank " + std::to_string(dims.size()),
                      Fwd(OpKind::kSoftmaxCrossEntropyLoss, a), in, OpKind::kSoftmaxCrossEntropyLossGrad, a,
                      {r, (*fwd)[1], y, in[2]}, {0}, r);
      }
    }
  }
}

TEST(GradOps, MeanSquaredErrorGrad) {
  Tensor p = Random({3, 7}, 1), t = Random({3, 7}, 2), r = Random({}, 3, DType::kFloat64, 0.5, 1.5);
  Attributes none;
  CheckBackward("MSE pred", Fwd(OpKind::kMeanSquaredError, none), {p, t}, OpKind::kMeanSquaredErrorGrad, none,
                {r, p, t}, {0}, r);
  EXPECT_NEAR(Out(OpKind::kMeanSquaredError, none,
                  {Tensor::Floats({1, 2, 3, 4}, {2, 2}), Tensor::Floats({1, 0, 3, 0}, {2, 2})}).GetAsDouble(0),
              (4.0 + 16.0) / 4.0, 1e-6);
}

// PyTorch 1.13, float64: F.cross_entropy(s, y, weight=w, ignore_index=, label_smoothing=, reduction=).
// Tolerance 1e-7: label_smoothing is a float32 attribute (0.1f - 0.1 ~ 1.5e-9,
// times the ~1 smoothing term); with smoothing 0 the match is to 1e-12.
TEST(LossHeads, MatchPyTorchCrossEntropy) {
  Tensor s = Tensor::Zeros(DType::kFloat64, {3, 4}).value();
  const double sv[] = {1.0, 2.0, 0.5, -1.0, 0.3, -0.2, 2.2, 1.1, -1.5, 0.0, 0.7, 0.4};
  for (int i = 0; i < 12; ++i) s.data<double>()[i] = sv[i];
  Tensor y = Tensor::Int64s({1, 3, 0}, {3});
  Tensor w = Tensor::Zeros(DType::kFloat64, {4}).value();
  const double wv[] = {0.5, 1.0, 2.0, 1.5};
  for (int i = 0; i < 4; ++i) w.data<double>()[i] = wv[i];
  auto loss = [&](const Attributes& a, bool weighted) {
    return Values(Out(OpKind::kSoftmaxCrossEntropyLoss, a, {s, y, weighted ? w : Tensor()}));
  };
  EXPECT_NEAR(loss(LossAttrs("mean", 0.0), false)[0], 1.7006395555806482, 1e-12);
  EXPECT_NEAR(loss(LossAttrs("mean", 0.1), false)[0], 1.7081395555806482, 1e-7);
  EXPECT_NEAR(loss(LossAttrs("mean", 0.3, 3), false)[0], 1.77066691061771, 1e-7);
  EXPECT_NEAR(loss(LossAttrs("mean", 0.2, 3), true)[0], 1.6448764953582438, 1e-7);
  EXPECT_NEAR(loss(LossAttrs("sum", 0.1), true)[0], 4.522961448471126, 1e-7);
  std::vector<double> none = loss(LossAttrs("none", 0.1, 0), false);
  ASSERT_EQ(none.size(), 3u);
  EXPECT_NEAR(none[0], 0.6326818980858561, 1e-7);
  EXPECT_NEAR(none[1], 1.5780848455065244, 1e-7);
  EXPECT_EQ(none[2], 0.0);
  // Uniform scores: -log(1/4) whatever the label, in float32 too.
  Tensor uniform = Tensor::Floats(std::vector<float>(8, 0.5f), {2, 4});
  EXPECT_NEAR(Out(OpKind::kSoftmaxCrossEntropyLoss, LossAttrs("mean", 0.0), {uniform, Tensor::Int64s({2, 0}, {2})})
                  .GetAsDouble(0),
              std::log(4.0), 1e-6);
}

TEST(LossHeads, LabelOutOfRangeIsAnError) {
  Tensor s = Random({2, 3}, 1);
  for (int64_t bad : {3, -1}) {
    auto r = RunKernel(OpKind::kSoftmaxCrossEntropyLoss, LossAttrs("mean", 0.0), {s, Tensor::Int64s({0, bad}, {2})});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kOutOfRange);
    EXPECT_NE(r.status().message().find("label " + std::to_string(bad)), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("'test'"), std::string::npos) << r.status().message();
  }
  // ignore_index may lie outside [0, C).
  EXPECT_TRUE(RunKernel(OpKind::kSoftmaxCrossEntropyLoss, LossAttrs("mean", 0.0, -100), {s, Tensor::Int64s({0, -100}, {2})}).ok());
}

TEST(GradOps, BitwiseRepeatable) {
  Attributes a = Window({}, {2, 2}, {1, 1, 1, 1});
  Tensor x = Random({2, 4, 9, 9}, 1, DType::kFloat32), w = Random({8, 4, 3, 3}, 2, DType::kFloat32);
  Tensor dy = Random({2, 8, 5, 5}, 3, DType::kFloat32);
  Attributes bn;
  std::vector<std::vector<Tensor>> runs;
  for (int threads : {2, 2, 1}) {
    Options opt;
    opt.threads = threads;
    opt.num_outputs = 3;
    auto conv = RunKernel(OpKind::kConvGrad, a, {dy, x, w}, opt);
    auto norm = RunKernel(OpKind::kBatchNormalizationGrad, bn, {x, x, Random({4}, 4, DType::kFloat32)}, opt);
    ASSERT_TRUE(conv.ok() && norm.ok());
    runs.push_back(*conv);
    runs.back().insert(runs.back().end(), norm->begin(), norm->end());
  }
  for (size_t k = 1; k < runs.size(); ++k)
    for (size_t o = 0; o < runs[0].size(); ++o) EXPECT_TRUE(runs[k][o] == runs[0][o]) << "run " << k << " output " << o;
}

TEST(GradRules, SymbolicBatchPropagates) {
  auto type = [](std::vector<ir::Dim> dims) { return ir::TensorType::Of(DType::kFloat32, ir::Shape(std::move(dims))); };
  const ir::Dim n = ir::Dim::Symbolic("batch");
  auto S = ir::Dim::Static;
  ir::Attributes a;
  a.Set("pads", I{1, 1, 1, 1});
  ir::InferContext ctx;
  ctx.attrs = &a;
  ctx.inputs = {type({n, S(8), S(6), S(6)}), type({n, S(3), S(6), S(6)}), type({S(8), S(3), S(3), S(3)})};
  ctx.values.resize(3);
  ctx.outputs.resize(3);
  ctx.output_values.resize(3);
  ASSERT_TRUE(ir::InferConvGrad(ctx).ok());
  EXPECT_EQ(ctx.outputs[0].shape.ToString(), "[batch,3,6,6]");
  EXPECT_EQ(ctx.outputs[1].shape.ToString(), "[8,3,3,3]");
  EXPECT_EQ(ctx.outputs[2].shape.ToString(), "[8]");
  ctx.inputs[0] = type({n, S(7), S(6), S(6)});  // dY with the wrong channel count
  EXPECT_FALSE(ir::InferConvGrad(ctx).ok());

  // ReduceSumTo / GatherGrad: rank-only (or dims from dY) without the shape value, exact with it.
  ir::Attributes none;
  ir::InferContext red;
  red.attrs = &none;
  red.inputs = {type({n, S(4)}), ir::TensorType::Of(DType::kInt64, I{1})};
  red.values = {nullptr, nullptr};
  red.outputs.resize(1);
  red.output_values.resize(1);
  ASSERT_TRUE(ir::InferReduceSumTo(red).ok());
  EXPECT_EQ(red.outputs[0].shape.rank(), 1u);
  Tensor four = Tensor::Int64s({4}, {1});
  red.values[1] = &four;
  ASSERT_TRUE(ir::InferReduceSumTo(red).ok());
  EXPECT_EQ(red.outputs[0].shape.ToString(), "[4]");

  ir::InferContext gg;
  gg.attrs = &none;
  gg.inputs = {type({n, S(5), S(16)}), ir::TensorType::Of(DType::kInt64, ir::Shape({n, S(5)})),
               ir::TensorType::Of(DType::kInt64, I{2})};
  gg.values = {nullptr, nullptr, nullptr};
  gg.outputs.resize(1);
  gg.output_values.resize(1);
  ASSERT_TRUE(ir::InferGatherGrad(gg).ok());
  EXPECT_EQ(gg.outputs[0].shape.rank(), 2u);
  EXPECT_EQ(gg.outputs[0].shape[1].value, 16);

  ir::InferContext sce;
  ir::Attributes none_red;
  none_red.Set("reduction", std::string("none"));
  sce.attrs = &none_red;
  sce.inputs = {type({n, S(10)}), ir::TensorType::Of(DType::kInt64, ir::Shape({n}))};
  sce.values = {nullptr, nullptr};
  sce.outputs.resize(2);
  sce.output_values.resize(2);
  ASSERT_TRUE(ir::InferSoftmaxCrossEntropyLoss(sce).ok());
  EXPECT_EQ(sce.outputs[0].shape.ToString(), "[batch]");
  EXPECT_EQ(sce.outputs[1].shape.ToString(), "[batch,10]");
}

}  // namespace
}  // namespace amptrain::kernels::gradtest
