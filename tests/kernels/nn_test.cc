// Reference NN kernels against small cases whose expected values were
// computed by hand or with ONNX Runtime 1.x / the onnx reference on the same
// inputs (the ONNX backend node tests' inputs where those are small).
#include "tests/kernels/nn_test_util.h"

namespace amptrain::kernels::testing {
namespace {

using ir::Attributes;
using ir::Tensor;
using V = std::vector<double>;

Tensor Run1(OpKind op, const Attributes& a, const std::vector<Tensor>& in, NnRunOptions opt = {}) {
  auto out = RunOp(op, a, in, opt);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? (*out)[0] : Tensor();
}

Attributes Attrs(std::initializer_list<std::pair<const char*, ir::AttrValue>> kv) {
  Attributes a;
  for (auto& [k, v] : kv) a.Set(k, v);
  return a;
}

using I = std::vector<int64_t>;

TEST(ConvReference, PadsAndNoPads) {  // ONNX backend test "conv": 5x5 iota, 3x3 ones
  Tensor x = Iota({1, 1, 5, 5}), w = Filled({1, 1, 3, 3}, 1.0f);
  ExpectValues(
      Run1(OpKind::kConv, Attrs({{"pads", I{1, 1, 1, 1}}}), {x, w}),
      {12, 21, 27, 33, 24, 33, 54, 63, 72, 51, 63, 99, 108, 117, 81, 93, 144, 153, 162, 111, 72, 111, 117, 123, 84});
  ExpectValues(Run1(OpKind::kConv, Attrs({}), {x, w}), {54, 63, 72, 99, 108, 117, 144, 153, 162});
}

TEST(ConvReference, StridesSamePadsDilations) {
  Tensor w = Filled({1, 1, 3, 3}, 1.0f);
  ExpectValues(Run1(OpKind::kConv, Attrs({{"strides", I{2, 2}}, {"pads", I{1, 1, 1, 1}}}), {Iota({1, 1, 7, 5}), w}),
               {12, 27, 24, 63, 108, 81, 123, 198, 141, 112, 177, 124});
  ExpectValues(Run1(OpKind::kConv, Attrs({{"strides", I{2, 2}}, {"auto_pad", std::string("SAME_LOWER")}}),
                    {Iota({1, 1, 5, 5}), w}),
               {12, 27, 24, 63, 108, 81, 72, 117, 84});
  ExpectValues(Run1(OpKind::kConv, Attrs({{"dilations", I{2, 2}}}), {Iota({1, 1, 7, 7}), w}),
               {144, 153, 162, 207, 216, 225, 270, 279, 288});
}

TEST(ConvReference, GroupsBiasAsymmetricPads) {
  Tensor x = Iota({1, 4, 3, 3}), w = Iota({6, 2, 2, 2});
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] *= 0.1f;
  for (int64_t i = 0; i < w.num_elements(); ++i) w.data<float>()[i] *= 0.01f;
  Tensor b = Floats({1, 2, 3, 4, 5, 6}, {6});
  ExpectValues(
      Run1(OpKind::kConv, Attrs({{"group", int64_t{2}}, {"pads", I{0, 1, 1, 0}}}), {x, w, b}),
      {1.138, 1.268, 1.296, 1.186,  1.352,  1.38,  1.081,  1.147,  1.157,  2.33,   2.684,  2.776, 2.474,  2.96,
       3.052, 2.249, 2.499, 2.541,  3.522,  4.1,   4.256,  3.762,  4.568,  4.724,  3.417,  3.851, 3.925,  6.73,
       9.476, 9.696, 7.066, 10.136, 10.356, 5.557, 7.111,  7.217,  8.498,  12.044, 12.328, 8.93,  12.896, 13.18,
       7.013, 9.039, 9.177, 10.266, 14.612, 14.96, 10.794, 15.656, 16.004, 8.469,  10.967, 11.137},
      1e-4);
}

TEST(ConvReference, OneDAndThreeD) {
  // 1-D: [0..5] * [1, 2] -> x[i] + 2 x[i+1]
  ExpectValues(Run1(OpKind::kConv, Attrs({}), {Iota({1, 1, 5}), Floats({1, 2}, {1, 1, 2})}), {2, 5, 8, 11});
  // 3-D 2x2x2 ones kernel over a 2x2x3 iota: sums of two 2x2x2 blocks.
  ExpectValues(Run1(OpKind::kConv, Attrs({}), {Iota({1, 1, 2, 2, 3}), Filled({1, 1, 2, 2, 2}, 1.0f)}), {40, 48});
}

TEST(ConvReference, RejectsChannelMismatchNamingTheNode) {
  Attributes attrs;
  KernelInit init;
  init.op = OpKind::kConv;
  init.attrs = &attrs;
  init.node_name = "conv7";
  init.inputs = {{DType::kFloat32, {1, 3, 4, 4}, nullptr}, {DType::kFloat32, {2, 2, 3, 3}, nullptr}};
  init.outputs = {{DType::kFloat32, {1, 2, 2, 2}, nullptr}};
  auto kernel = Registry::Global().Create(init, "reference");
  ASSERT_FALSE(kernel.ok());
  EXPECT_NE(kernel.status().message().find("Conv node 'conv7'"), std::string::npos) << kernel.status().message();
}

TEST(ConvTransposeReference, BackendCases) {
  Tensor x = Iota({1, 1, 3, 3}), w = Filled({1, 2, 3, 3}, 1.0f);
  V plane = {0, 1, 3, 3, 2, 3, 8, 15, 12, 7, 9, 21, 36, 27, 15, 9, 20, 33, 24, 13, 6, 13, 21, 15, 8};
  V two = plane;
  two.insert(two.end(), plane.begin(), plane.end());
  ExpectValues(Run1(OpKind::kConvTranspose, Attrs({}), {x, w}), two);
  V pads = {1, 1, 3, 1, 1, 3, 7, 4, 9, 7, 4, 9, 7, 4, 9, 13, 7, 15, 13, 7, 15};
  V pads2 = pads;
  pads2.insert(pads2.end(), pads.begin(), pads.end());
  ExpectValues(Run1(OpKind::kConvTranspose, Attrs({{"strides", I{3, 2}}, {"pads", I{1, 2, 1, 2}}}), {x, w}), pads2);
  ExpectValues(Run1(OpKind::kConvTranspose, Attrs({{"dilations", I{2, 2}}}), {Iota({1, 1, 2, 2}), Iota({1, 1, 2, 2})}),
               {0, 0, 0, 1, 0, 0, 2, 3, 0, 2, 0, 3, 4, 6, 6, 9});
}

TEST(ConvTransposeReference, OutputShapeAndSameUpper) {
  Tensor x = Iota({1, 1, 3, 3}), w = Filled({1, 2, 3, 3}, 1.0f);
  V rows = {0, 0, 1, 1, 3, 2, 2, 0, 3, 3, 7, 4, 9, 5, 5, 0, 6, 6, 13, 7, 15, 8, 8, 0};
  V expect;
  for (int c = 0; c < 2; ++c) {
    for (int r = 0; r < 9; ++r) expect.insert(expect.end(), rows.begin() + (r / 3) * 8, rows.begin() + (r / 3) * 8 + 8);
    expect.insert(expect.end(), 8, 0.0);
  }
  ExpectValues(Run1(OpKind::kConvTranspose, Attrs({{"strides", I{3, 2}}, {"output_shape", I{10, 8}}}), {x, w}), expect);
  V same = {0, 0, 1, 1, 3, 2, 0, 0, 1,  1,  3,  2,  3, 3, 8,  5, 12, 7,
            3, 3, 7, 4, 9, 5, 9, 9, 20, 11, 24, 13, 6, 6, 13, 7, 15, 8};
  V same2 = same;
  same2.insert(same2.end(), same.begin(), same.end());
  ExpectValues(
      Run1(OpKind::kConvTranspose, Attrs({{"strides", I{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}}), {x, w}),
      same2);
}

Tensor Grid5() { return Iota({1, 1, 5, 5}, 1.0f); }

TEST(PoolReference, AveragePoolPadsWithAndWithoutCountIncludePad) {
  ExpectValues(Run1(OpKind::kAveragePool, Attrs({{"kernel_shape", I{3, 3}}, {"pads", I{2, 2, 2, 2}}}), {Grid5()}),
               {1,  1.5,  2,   3,    4,    4.5,  5,  3.5,  4,  4.5,  5.5, 6.5, 7,    7.5,  6,  6.5, 7,
                8,  9,    9.5, 10,   11,   11.5, 12, 13,   14, 14.5, 15,  16,  16.5, 17,   18, 19,  19.5,
                20, 18.5, 19,  19.5, 20.5, 21.5, 22, 22.5, 21, 21.5, 22,  23,  24,   24.5, 25});
  ExpectValues(
      Run1(OpKind::kAveragePool,
           Attrs({{"kernel_shape", I{3, 3}}, {"pads", I{2, 2, 2, 2}}, {"count_include_pad", int64_t{1}}}), {Grid5()}),
      {0.111111, 0.333333, 0.666667, 1,       1.33333, 1,       0.555556, 0.777778, 1.77778, 3,
       3.66667,  4.33333,  3.11111,  1.66667, 2,       4.33333, 7,        8,        9,       6.33333,
       3.33333,  3.66667,  7.66667,  12,      13,      14,      9.66667,  5,        5.33333, 11,
       17,       18,       19,       13,      6.66667, 4.11111, 8.44444,  13,       13.6667, 14.3333,
       9.77778,  5,        2.33333,  4.77778, 7.33333, 7.66667, 8,        5.44444,  2.77778},
      1e-4);
}

TEST(PoolReference, CeilModeSameLowerDilation) {
  // averagepool_2d_ceil: 4x4 of 1..16, kernel 3, stride 2.
  ExpectValues(
      Run1(OpKind::kAveragePool, Attrs({{"kernel_shape", I{3, 3}}, {"strides", I{2, 2}}, {"ceil_mode", int64_t{1}}}),
           {Iota({1, 1, 4, 4}, 1.0f)}),
      {6, 7.5, 12, 13.5});
  ExpectValues(
      Run1(OpKind::kAveragePool, Attrs({{"kernel_shape", I{2, 2}}, {"auto_pad", std::string("SAME_LOWER")}}),
           {Grid5()}),
      {1, 1.5, 2.5, 3.5, 4.5, 3.5, 4, 5, 6, 7, 8.5, 9, 10, 11, 12, 13.5, 14, 15, 16, 17, 18.5, 19, 20, 21, 22});
  ExpectValues(
      Run1(OpKind::kMaxPool,
           Attrs({{"kernel_shape", I{2, 2}}, {"strides", I{2, 2}}, {"dilations", I{2, 2}}, {"ceil_mode", int64_t{1}}}),
           {Iota({1, 1, 4, 4})}),
      {10, 10, 10, 10});
}

TEST(PoolReference, MaxPoolIndices) {
  NnRunOptions two;
  two.num_outputs = 2;
  // maxpool_with_argmax_2d_precomputed_pads
  auto out = RunOp(OpKind::kMaxPool, Attrs({{"kernel_shape", I{5, 5}}, {"pads", I{2, 2, 2, 2}}}), {Grid5()}, two);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectValues((*out)[0],
               {13, 14, 15, 15, 15, 18, 19, 20, 20, 20, 23, 24, 25, 25, 25, 23, 24, 25, 25, 25, 23, 24, 25, 25, 25});
  ExpectValues((*out)[1],
               {12, 13, 14, 14, 14, 17, 18, 19, 19, 19, 22, 23, 24, 24, 24, 22, 23, 24, 24, 24, 22, 23, 24, 24, 24});
  // maxpool_with_argmax_2d_precomputed_strides: storage_order 1 gives column-major indices.
  out = RunOp(OpKind::kMaxPool, Attrs({{"kernel_shape", I{2, 2}}, {"strides", I{2, 2}}, {"storage_order", int64_t{1}}}),
              {Grid5()}, two);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectValues((*out)[0], {7, 9, 17, 19});
  ExpectValues((*out)[1], {6, 16, 8, 18});
  // 1-D, two images and channels: indices include the (n*C + c) plane offset, as ONNX Runtime.
  Tensor x = Iota({2, 2, 5});
  for (int64_t i = 0; i < 20; ++i) x.data<float>()[i] *= (i % 5) % 2 ? -1.0f : 1.0f;
  out = RunOp(OpKind::kMaxPool, Attrs({{"kernel_shape", I{2}}, {"pads", I{1, 0}}}), {x}, two);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectValues((*out)[0], {0, 0, 2, 2, 4, 5, 5, 7, 7, 9, 10, 10, 12, 12, 14, 15, 15, 17, 17, 19});
  ExpectValues((*out)[1], {0, 0, 2, 2, 4, 5, 5, 7, 7, 9, 10, 10, 12, 12, 14, 15, 15, 17, 17, 19});
}

TEST(PoolReference, MaxPoolUInt8) {  // ONNX opset 12+ MaxPool takes int8/uint8
  Tensor x = Tensor::Zeros(DType::kUInt8, {1, 1, 3, 3}).value();
  for (int64_t i = 0; i < 9; ++i) x.data<uint8_t>()[i] = static_cast<uint8_t>(200 + i);
  Tensor y = Run1(OpKind::kMaxPool, Attrs({{"kernel_shape", I{2, 2}}}), {x});
  ASSERT_EQ(y.dtype(), DType::kUInt8);
  ExpectValues(y, {204, 205, 207, 208});
}

TEST(ConvReference, HalfAndBFloat16StorageMatchFloat) {
  // Small integers are exact in fp16/bf16 and the sums (< 256) too, so the
  // 2-byte kernels (double accumulation) must agree exactly with fp32.
  Tensor x32 = Iota({1, 2, 4, 4}), w32 = Filled({3, 2, 2, 2}, 1.0f);
  Tensor want = Run1(OpKind::kConv, Attrs({}), {x32, w32});
  for (DType t : {DType::kFloat16, DType::kBFloat16}) {
    Tensor x = Tensor::Zeros(t, x32.dims()).value(), w = Tensor::Zeros(t, w32.dims()).value();
    auto fill = [t](Tensor& dst, const Tensor& src) {
      for (int64_t i = 0; i < src.num_elements(); ++i)
        dst.data<uint16_t>()[i] =
            t == DType::kFloat16 ? ir::FloatToHalf(src.data<float>()[i]) : ir::FloatToBFloat16(src.data<float>()[i]);
    };
    fill(x, x32);
    fill(w, w32);
    Tensor y = Run1(OpKind::kConv, Attrs({}), {x, w});
    ASSERT_EQ(y.dtype(), t);
    EXPECT_EQ(NormalizedError(y, want), 0.0) << ir::DTypeName(t);
  }
}

TEST(PoolReference, GlobalAveragePool) {
  ExpectValues(Run1(OpKind::kGlobalAveragePool, Attrs({}), {Iota({1, 2, 2, 2})}), {1.5, 5.5});
}

TEST(GemmReference, TransposesAlphaBetaBroadcastC) {
  Tensor a = Iota({3, 2});  // A^T = [[0,2,4],[1,3,5]]
  Tensor b = Iota({4, 3});  // B^T is 3x4
  Tensor c = Floats({1, 2, 3, 4}, {4});
  // Y = 0.5 * A^T B^T + 2 * C
  Tensor y = Run1(OpKind::kGemm,
                  Attrs({{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 0.5f}, {"beta", 2.0f}}), {a, b, c});
  ASSERT_EQ(y.dims(), (I{2, 4}));
  V expect;
  for (int m = 0; m < 2; ++m)
    for (int n = 0; n < 4; ++n) {
      double s = 0;
      for (int k = 0; k < 3; ++k) s += (2 * k + m) * (3 * n + k);
      expect.push_back(0.5 * s + 2 * (n + 1));
    }
  ExpectValues(y, expect);
}

TEST(MatMulReference, BatchedBroadcastAndVectors) {
  Tensor a = Iota({2, 1, 2, 3}), b = Iota({3, 3, 2});
  Tensor y = Run1(OpKind::kMatMul, Attrs({}), {a, b});
  ASSERT_EQ(y.dims(), (I{2, 3, 2, 2}));
  V expect;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int m = 0; m < 2; ++m)
        for (int n = 0; n < 2; ++n) {
          double s = 0;
          for (int k = 0; k < 3; ++k) s += (i * 6 + m * 3 + k) * (j * 6 + k * 2 + n);
          expect.push_back(s);
        }
  ExpectValues(y, expect);
  Tensor v = Run1(OpKind::kMatMul, Attrs({}), {Iota({3}), Iota({3, 2})});  // [3] x [3,2] -> [2]
  ASSERT_EQ(v.dims(), (I{2}));
  ExpectValues(v, {10, 13});
}

TEST(BatchNormReference, Inference) {
  Tensor x = Iota({1, 2, 1, 2});  // channel 0: {0,1}, channel 1: {2,3}
  Tensor y = Run1(OpKind::kBatchNormalization, Attrs({{"epsilon", 0.0f}}),
                  {x, Floats({1, 2}, {2}), Floats({0, 1}, {2}), Floats({1, 2}, {2}), Floats({4, 1}, {2})});
  ExpectValues(y, {-0.5, 0, 1, 3});
}

TEST(BatchNormReference, TrainingStatisticsAndRunningUpdate) {
  Tensor x = Floats({1, 3, 10, 20, 5, 7, 30, 40}, {2, 2, 2});  // channel 0: 1,3,5,7; channel 1: 10,20,30,40
  NnRunOptions opt;
  opt.num_outputs = 3;
  auto out =
      RunOp(OpKind::kBatchNormalization, Attrs({{"training_mode", int64_t{1}}, {"momentum", 0.9f}, {"epsilon", 0.0f}}),
            {x, Floats({1, 1}, {2}), Floats({0, 0}, {2}), Floats({0, 0}, {2}), Floats({1, 1}, {2})}, opt);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  // Batch mean 4 and 25, biased var 5 and 125.
  ExpectValues((*out)[1], {0.1 * 4, 0.1 * 25});
  ExpectValues((*out)[2], {0.9 + 0.1 * 5, 0.9 + 0.1 * 125}, 1e-4);
  const double s0 = std::sqrt(5.0), s1 = std::sqrt(125.0);
  ExpectValues((*out)[0], {-3 / s0, -1 / s0, -15 / s1, -5 / s1, 1 / s0, 3 / s0, 5 / s1, 15 / s1});
  // KernelInit::training forces batch statistics even for a 1-output inference node.
  opt.num_outputs = 1;
  opt.training = true;
  auto y = RunOp(OpKind::kBatchNormalization, Attrs({{"epsilon", 0.0f}}),
                 {x, Floats({1, 1}, {2}), Floats({0, 0}, {2}), Floats({0, 0}, {2}), Floats({1, 1}, {2})}, opt);
  ASSERT_TRUE(y.ok());
  EXPECT_LT(NormalizedError((*y)[0], (*out)[0]), 1e-6);
}

TEST(DropoutReference, IdentityInInference) {
  NnRunOptions opt;
  opt.num_outputs = 2;
  Tensor x = Iota({4, 5});
  auto out = RunOp(OpKind::kDropout, Attrs({}), {x, Tensor::Scalar(0.5f)}, opt);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(NormalizedError((*out)[0], x), 0.0);
  for (int64_t i = 0; i < 20; ++i) EXPECT_TRUE((*out)[1].data<bool>()[i]);
}

TEST(DropoutReference, TrainingDropsFractionScalesAndIsReproducible) {
  const int64_t n = 100000;
  Tensor x = Filled({n}, 2.0f);
  NnRunOptions opt;
  opt.num_outputs = 2;
  opt.training = true;
  opt.seed = 1234;
  auto a = RunOp(OpKind::kDropout, Attrs({}), {x, Tensor::Scalar(0.3f)}, opt);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float y = (*a)[0].data<float>()[i];
    const bool m = (*a)[1].data<bool>()[i];
    kept += m;
    EXPECT_FLOAT_EQ(y, m ? 2.0f / 0.7f : 0.0f);
  }
  // Binomial(1e5, 0.7): sd ~ 145, so +-1% (1000) is ~7 sd.
  EXPECT_NEAR(static_cast<double>(kept) / n, 0.7, 0.01);
  opt.threads = 1;  // same seed, other thread count: bitwise identical
  auto b = RunOp(OpKind::kDropout, Attrs({}), {x, Tensor::Scalar(0.3f)}, opt);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE((*a)[0] == (*b)[0]);
  EXPECT_TRUE((*a)[1] == (*b)[1]);
  opt.seed = 99;
  auto c = RunOp(OpKind::kDropout, Attrs({}), {x, Tensor::Scalar(0.3f)}, opt);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE((*a)[1] == (*c)[1]);
}

}  // namespace
}  // namespace amptrain::kernels::testing
