// CPU reference kernels of the unary, binary and Cast ops against
// hand-computed values and numpy/ONNX semantics.
#include <cmath>
#include <limits>

#include "ir/onnx_dtype.h"
#include "tests/kernels/reference_runner.h"

namespace amptrain::kernels {
namespace {

using ir::DType;
using ir::OpKind;
using ir::Tensor;
using testing::MakeTensor;
using testing::Run1;
using testing::RunReference;
using testing::Values;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got[i])) << "element " << i;
    else if (std::isinf(want[i])) EXPECT_EQ(got[i], want[i]) << "element " << i;
    else EXPECT_NEAR(got[i], want[i], tol * (1.0 + std::fabs(want[i]))) << "element " << i;
  }
}

Tensor F32(std::vector<int64_t> dims, const std::vector<double>& v) { return MakeTensor(DType::kFloat32, std::move(dims), v); }

TEST(UnaryKernels, FloatOpsMatchFormulas) {
  Tensor x = F32({5}, {-2.0, -0.5, 0.0, 0.5, 3.0});
  std::vector<double> xs = Values(x);
  auto map = [&](auto f) {
    std::vector<double> r;
    for (double v : xs) r.push_back(f(v));
    return r;
  };
  ExpectNear(Values(Run1(OpKind::kRelu, {x})), {0, 0, 0, 0.5, 3});
  ExpectNear(Values(Run1(OpKind::kSigmoid, {x})), map([](double v) { return 1 / (1 + std::exp(-v)); }));
  ExpectNear(Values(Run1(OpKind::kTanh, {x})), map([](double v) { return std::tanh(v); }));
  ExpectNear(Values(Run1(OpKind::kErf, {x})), map([](double v) { return std::erf(v); }));
  ExpectNear(Values(Run1(OpKind::kExp, {x})), map([](double v) { return std::exp(v); }));
  ExpectNear(Values(Run1(OpKind::kNeg, {x})), {2, 0.5, 0, -0.5, -3});
  ExpectNear(Values(Run1(OpKind::kAbs, {x})), {2, 0.5, 0, 0.5, 3});
  ExpectNear(Values(Run1(OpKind::kReciprocal, {x})), {-0.5, -2, kInf, 2, 1.0 / 3});
  ExpectNear(Values(Run1(OpKind::kSqrt, {F32({3}, {4, 2, -1})})), {2, std::sqrt(2.0), kNaN});
  ExpectNear(Values(Run1(OpKind::kFloor, {F32({4}, {-2.5, -0.5, 0.5, 3})})), {-3, -1, 0, 3});
  ExpectNear(Values(Run1(OpKind::kCeil, {F32({4}, {-2.5, -0.5, 0.5, 3})})), {-2, -0.0, 1, 3});
  ExpectNear(Values(Run1(OpKind::kSign, {F32({4}, {-2.5, 0, 0.5, kNaN})})), {-1, 0, 1, kNaN});
  ExpectNear(Values(Run1(OpKind::kLog, {F32({3}, {1, 0, std::exp(2.0)})})), {0, -kInf, 2});
  ir::Attributes leaky;
  leaky.Set("alpha", 0.1f);
  ExpectNear(Values(Run1(OpKind::kLeakyRelu, {x}, leaky)), {-0.2, -0.05, 0, 0.5, 3});
  // Relu keeps NaN like numpy's maximum(x, 0).
  EXPECT_TRUE(std::isnan(Values(Run1(OpKind::kRelu, {F32({1}, {kNaN})}))[0]));
}

TEST(UnaryKernels, SigmoidIsStableForLargeInputs) {
  ExpectNear(Values(Run1(OpKind::kSigmoid, {F32({3}, {-1000, 1000, -88})})), {0, 1, 1 / (1 + std::exp(88.0))}, 1e-5);
}

TEST(UnaryKernels, GeluExactAndTanh) {
  Tensor x = F32({4}, {-3, -1, 0.5, 2});
  std::vector<double> exact, approx;
  for (double v : Values(x)) {
    exact.push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
    approx.push_back(0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
  }
  ExpectNear(Values(Run1(OpKind::kGelu, {x})), exact);
  ir::Attributes tanh_attr;
  tanh_attr.Set("approximate", std::string("tanh"));
  ExpectNear(Values(Run1(OpKind::kGelu, {x}, tanh_attr)), approx);
  EXPECT_GT(std::fabs(exact[1] - approx[1]), 1e-5);  // the two forms really differ
}

TEST(UnaryKernels, ClipBoundsAndEdgeCases) {
  Tensor x = F32({4}, {-6, 0, 6, kNaN});
  ExpectNear(Values(Run1(OpKind::kClip, {x, F32({}, {-5}), F32({}, {5})})), {-5, 0, 5, kNaN});
  ExpectNear(Values(Run1(OpKind::kClip, {x, F32({}, {-1})})), {-1, 0, 6, kNaN});        // default max
  ExpectNear(Values(Run1(OpKind::kClip, {x, Tensor(), F32({}, {1})})), {-6, 0, 1, kNaN});  // default min
  ExpectNear(Values(Run1(OpKind::kClip, {x, F32({}, {2}), F32({}, {1})})), {1, 1, 1, kNaN});  // min > max -> max
  Tensor i8 = MakeTensor(DType::kInt8, {3}, {-128, 5, 127});
  Tensor r = Run1(OpKind::kClip, {i8, MakeTensor(DType::kInt8, {}, {0})});
  EXPECT_EQ(r.dtype(), DType::kInt8);
  ExpectNear(Values(r), {0, 5, 127});
}

TEST(UnaryKernels, IntegerAndBoolOps) {
  Tensor i = MakeTensor(DType::kInt64, {3}, {-3, 0, 7});
  ExpectNear(Values(Run1(OpKind::kRelu, {i})), {0, 0, 7});
  ExpectNear(Values(Run1(OpKind::kNeg, {i})), {3, 0, -7});
  ExpectNear(Values(Run1(OpKind::kAbs, {MakeTensor(DType::kInt32, {2}, {-4, 4})})), {4, 4});
  ExpectNear(Values(Run1(OpKind::kSign, {i})), {-1, 0, 1});
  ExpectNear(Values(Run1(OpKind::kSign, {MakeTensor(DType::kUInt8, {2}, {0, 200})})), {0, 1});
  Tensor b = MakeTensor(DType::kBool, {3}, {1, 0, 1});
  Tensor n = Run1(OpKind::kNot, {b});
  EXPECT_EQ(n.dtype(), DType::kBool);
  ExpectNear(Values(n), {0, 1, 0});
  EXPECT_TRUE(Run1(OpKind::kIdentity, {i}) == i);
  EXPECT_FALSE(Registry::Global().Supports(OpKind::kSigmoid, DeviceKind::kCpu, DType::kInt64));
}

TEST(UnaryKernels, HalfAndBFloat16ComputeInFloat) {
  for (DType t : {DType::kFloat16, DType::kBFloat16}) {
    Tensor x = MakeTensor(t, {3}, {-1, 0.5, 2});
    Tensor y = Run1(OpKind::kTanh, {x});
    EXPECT_EQ(y.dtype(), t);
    Tensor want = MakeTensor(t, {3}, {std::tanh(-1.0), std::tanh(0.5), std::tanh(2.0)});
    EXPECT_TRUE(y == want) << ir::DTypeName(t);
  }
}

// MobileNetV3's activations. Kinks: HardSigmoid's alpha x + beta = 0 and 1
// (x = -2.5 and 2.5 with the defaults), HardSwish's x = -3 and 3.
TEST(UnaryKernels, HardSigmoidClampsAtBothEnds) {
  Tensor x = F32({7}, {-3, -2.5, -1, 0, 1, 2.5, 3});
  ExpectNear(Values(Run1(OpKind::kHardSigmoid, {x})), {0, 0, 0.3, 0.5, 0.7, 1, 1});
  ir::Attributes a;
  a.Set("alpha", 0.5f);
  a.Set("beta", 0.6f);
  ExpectNear(Values(Run1(OpKind::kHardSigmoid, {x}, a)), {0, 0, 0.1, 0.6, 1, 1, 1});
  ExpectNear(Values(Run1(OpKind::kHardSigmoid, {F32({3}, {kNaN, -kInf, kInf})})), {kNaN, 0, 1});
}

TEST(UnaryKernels, HardSwishMatchesItsPieces) {
  Tensor x = F32({9}, {-4, -3, -1.5, -0.5, 0, 0.5, 1.5, 3, 4});
  // x * (x / 6 + 0.5) on [-3, 3]; 0 below, x above.
  ExpectNear(Values(Run1(OpKind::kHardSwish, {x})), {0, 0, -0.375, -0.5 * 5 / 12, 0, 0.5 * 7 / 12, 1.125, 3, 4});
  // -inf * 0 is NaN, as in numpy's formula and PyTorch.
  ExpectNear(Values(Run1(OpKind::kHardSwish, {F32({3}, {kNaN, kInf, -kInf})})), {kNaN, kInf, kNaN});
}

TEST(UnaryKernels, HardActivationsInEveryFloatType) {
  for (DType t : {DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    Tensor x = MakeTensor(t, {4}, {-3.5, -1, 1, 3.5});
    Tensor sig = Run1(OpKind::kHardSigmoid, {x});
    Tensor swish = Run1(OpKind::kHardSwish, {x});
    EXPECT_EQ(sig.dtype(), t);
    EXPECT_EQ(swish.dtype(), t);
    // Computed in float (double for fp64), rounded once to t; alpha is the float 0.2f.
    const double alpha = 0.2f;
    ExpectNear(Values(sig), Values(MakeTensor(t, {4}, {0, 0.5 - alpha, 0.5 + alpha, 1})), 0);
    ExpectNear(Values(swish), Values(MakeTensor(t, {4}, {0, -(0.5 - 1 / 6.0), 0.5 + 1 / 6.0, 3.5})), 0);
  }
  EXPECT_FALSE(Registry::Global().Supports(OpKind::kHardSwish, DeviceKind::kCpu, DType::kInt32));
}

TEST(BinaryKernels, BroadcastShapes) {
  Tensor a = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  ExpectNear(Values(Run1(OpKind::kAdd, {a, F32({3}, {10, 20, 30})})), {11, 22, 33, 14, 25, 36});
  ExpectNear(Values(Run1(OpKind::kSub, {a, F32({2, 1}, {1, 2})})), {0, 1, 2, 2, 3, 4});
  ExpectNear(Values(Run1(OpKind::kMul, {F32({}, {2}), a})), {2, 4, 6, 8, 10, 12});
  Tensor outer = Run1(OpKind::kMul, {F32({3, 1}, {1, 2, 3}), F32({1, 2}, {10, 100})});
  EXPECT_EQ(outer.dims(), (std::vector<int64_t>{3, 2}));
  ExpectNear(Values(outer), {10, 100, 20, 200, 30, 300});
  ExpectNear(Values(Run1(OpKind::kDiv, {a, F32({1}, {2})})), {0.5, 1, 1.5, 2, 2.5, 3});
}

TEST(BinaryKernels, LargeChannelBroadcastMatchesNaiveLoop) {
  // [N, C, H, W] + [C, 1, 1] (per-channel bias), large enough for the parallel path.
  const int64_t n = 4, c = 16, hw = 1024;
  std::vector<double> x(static_cast<size_t>(n * c * hw)), bias(static_cast<size_t>(c));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i % 97) - 48;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = static_cast<double>(i) * 0.5;
  Tensor y = Run1(OpKind::kAdd, {F32({n, c, 32, 32}, x), F32({c, 1, 1}, bias)}, {}, {1, {}, 4});
  std::vector<double> got = Values(y);
  for (int64_t i = 0; i < n * c * hw; ++i)
    ASSERT_EQ(got[static_cast<size_t>(i)], x[static_cast<size_t>(i)] + bias[static_cast<size_t>(i / hw % c)]) << i;
}

TEST(BinaryKernels, IntegerDivisionTruncatesTowardZero) {
  Tensor x = MakeTensor(DType::kInt32, {4}, {-3, 3, -3, 3});
  Tensor y = MakeTensor(DType::kInt32, {4}, {2, 2, -2, -2});
  Tensor z = Run1(OpKind::kDiv, {x, y});
  EXPECT_EQ(z.dtype(), DType::kInt32);
  ExpectNear(Values(z), {-1, 1, 1, -1});
  ExpectNear(Values(Run1(OpKind::kDiv, {MakeTensor(DType::kInt64, {2}, {7, -7}), MakeTensor(DType::kInt64, {2}, {0, -1})})),
             {0, 7});
  ExpectNear(Values(Run1(OpKind::kAdd, {MakeTensor(DType::kUInt8, {2}, {250, 1}), MakeTensor(DType::kUInt8, {2}, {10, 1})})),
             {4, 2});  // uint8 wraps
}

TEST(BinaryKernels, PowMixedTypes) {
  ExpectNear(Values(Run1(OpKind::kPow, {F32({3}, {1, 2, 3}), MakeTensor(DType::kInt64, {3}, {4, 5, 6})})), {1, 32, 729});
  Tensor ib = Run1(OpKind::kPow, {MakeTensor(DType::kInt32, {3}, {1, 2, 3}), F32({3}, {4, 5, 6})});
  EXPECT_EQ(ib.dtype(), DType::kInt32);
  ExpectNear(Values(ib), {1, 32, 729});
  ExpectNear(Values(Run1(OpKind::kPow, {F32({3}, {2, 4, 9}), F32({}, {0.5})})), {std::sqrt(2.0), 2, 3});
  ExpectNear(Values(Run1(OpKind::kPow, {F32({2}, {-3, 1.5}), F32({}, {2})})), {9, 2.25});
}

TEST(BinaryKernels, VariadicMaxMinWithBroadcastAndNaN) {
  Tensor a = F32({3}, {3, 2, 1}), b = F32({3}, {1, 4, 4}), c = F32({2, 1}, {2, kNaN});
  Tensor mx = Run1(OpKind::kMax, {a, b, c});
  EXPECT_EQ(mx.dims(), (std::vector<int64_t>{2, 3}));
  ExpectNear(Values(mx), {3, 4, 4, kNaN, kNaN, kNaN});
  ExpectNear(Values(Run1(OpKind::kMin, {a, b})), {1, 2, 1});
  ExpectNear(Values(Run1(OpKind::kMax, {a})), {3, 2, 1});
  ExpectNear(Values(Run1(OpKind::kMin, {MakeTensor(DType::kInt64, {2}, {5, -5}), MakeTensor(DType::kInt64, {}, {0})})), {0, -5});
}

TEST(BinaryKernels, ComparesGiveBool) {
  Tensor a = MakeTensor(DType::kInt32, {2, 2}, {1, 2, 3, 4}), b = MakeTensor(DType::kInt32, {2}, {2, 2});
  Tensor eq = Run1(OpKind::kEqual, {a, b});
  EXPECT_EQ(eq.dtype(), DType::kBool);
  ExpectNear(Values(eq), {0, 1, 0, 0});
  ExpectNear(Values(Run1(OpKind::kLess, {a, b})), {1, 0, 0, 0});
  ExpectNear(Values(Run1(OpKind::kGreater, {a, b})), {0, 0, 1, 1});
  ExpectNear(Values(Run1(OpKind::kEqual, {MakeTensor(DType::kBool, {2}, {1, 0}), MakeTensor(DType::kBool, {2}, {1, 1})})), {1, 0});
  ExpectNear(Values(Run1(OpKind::kEqual, {F32({1}, {kNaN}), F32({1}, {kNaN})})), {0});
}

TEST(BinaryKernels, WhereBroadcastsAllThree) {
  Tensor cond = MakeTensor(DType::kBool, {2, 1}, {1, 0});
  Tensor z = Run1(OpKind::kWhere, {cond, F32({3}, {1, 2, 3}), F32({}, {-1})});
  EXPECT_EQ(z.dims(), (std::vector<int64_t>{2, 3}));
  ExpectNear(Values(z), {1, 2, 3, -1, -1, -1});
  Tensor zi = Run1(OpKind::kWhere, {MakeTensor(DType::kBool, {2}, {0, 1}), MakeTensor(DType::kInt64, {2}, {1, 2}),
                                    MakeTensor(DType::kInt64, {2}, {9, 8})});
  EXPECT_EQ(zi.dtype(), DType::kInt64);
  ExpectNear(Values(zi), {9, 2});
}

TEST(BinaryKernels, InplaceOnlyWithoutBroadcastOfInput0) {
  ir::Attributes none;
  auto make = [&](std::vector<int64_t> a, std::vector<int64_t> b, std::vector<int64_t> out) {
    KernelInit init;
    init.op = OpKind::kAdd;
    init.attrs = &none;
    init.inputs = {{DType::kFloat32, a, nullptr}, {DType::kFloat32, b, nullptr}};
    init.outputs = {{DType::kFloat32, out, nullptr}};
    return Registry::Global().Create(init, "reference");
  };
  auto same = make({2, 3}, {3}, {2, 3});
  ASSERT_TRUE(same.ok());
  EXPECT_EQ((*same)->inplace_input(0), 0);
  auto bcast = make({3}, {2, 3}, {2, 3});
  ASSERT_TRUE(bcast.ok());
  EXPECT_EQ((*bcast)->inplace_input(0), -1);
}

ir::Attributes Fmod(int64_t f) {
  ir::Attributes a;
  a.Set("fmod", f);
  return a;
}

// fmod=0: the divisor's sign (numpy's mod, Python's %); fmod=1: the
// dividend's (C's fmod and %). Integer x mod 0 is 0 (not UB), as x / 0.
TEST(BinaryKernels, ModSignsFollowFmod) {
  for (DType t : {DType::kInt64, DType::kInt32, DType::kInt8}) {
    SCOPED_TRACE(ir::DTypeName(t));
    Tensor a = MakeTensor(t, {7}, {7, -7, 7, -7, 6, 5, -128});
    Tensor b = MakeTensor(t, {7}, {3, 3, -3, -3, -3, 0, -1});
    Tensor py = Run1(OpKind::kMod, {a, b});
    EXPECT_EQ(py.dtype(), t);
    ExpectNear(Values(py), {1, 2, -2, -1, 0, 0, 0}, 0);
    ExpectNear(Values(Run1(OpKind::kMod, {a, b}, Fmod(1))), {1, -1, 1, -1, 0, 0, 0}, 0);
  }
  Tensor u = MakeTensor(DType::kUInt8, {3}, {250, 7, 9});
  ExpectNear(Values(Run1(OpKind::kMod, {u, MakeTensor(DType::kUInt8, {3}, {7, 250, 0})})), {5, 7, 0}, 0);
}

TEST(BinaryKernels, ModBroadcastsLikeTheOtherBinaryOps) {
  Tensor a = MakeTensor(DType::kInt32, {2, 3}, {-4, -3, -2, 2, 3, 4});
  Tensor z = Run1(OpKind::kMod, {a, MakeTensor(DType::kInt32, {2, 1}, {3, -3})});
  EXPECT_EQ(z.dims(), (std::vector<int64_t>{2, 3}));
  ExpectNear(Values(z), {2, 0, 1, -1, 0, -2}, 0);
  ExpectNear(Values(Run1(OpKind::kMod, {MakeTensor(DType::kInt64, {}, {10}), MakeTensor(DType::kInt64, {3}, {3, -4, 7})})),
             {1, -2, 3}, 0);
}

TEST(BinaryKernels, FloatModIsFmodOrTheFloorRemainder) {
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(ir::DTypeName(t));
    Tensor a = MakeTensor(t, {6}, {5.5, -5.5, 5.5, -5.5, 1, 3});
    Tensor b = MakeTensor(t, {6}, {2, 2, -2, -2, 0, kInf});
    Tensor y = Run1(OpKind::kMod, {a, b}, Fmod(1));
    EXPECT_EQ(y.dtype(), t);
    ExpectNear(Values(y), {1.5, -1.5, 1.5, -1.5, kNaN, 3}, 0);  // exact: fmod never rounds
  }
  // The rule refuses fmod=0 for floats before opset 28 (the graph here is
  // at 17); from 28 the kernel takes the divisor's sign (ir/float_mod.h).
  EXPECT_FALSE(RunReference(OpKind::kMod, {F32({1}, {1}), F32({1}, {2})}).ok());
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(ir::DTypeName(t));
    KernelInit init;
    ir::Attributes none;
    init.op = OpKind::kMod;
    init.attrs = &none;
    init.inputs = {{t, {6}, nullptr}, {t, {6}, nullptr}};
    init.outputs = {{t, {6}, nullptr}};
    auto k = Registry::Global().Create(init, "reference");
    ASSERT_TRUE(k.ok()) << k.status().message();
    Tensor a = MakeTensor(t, {6}, {5.5, -5.5, 5.5, -5.5, 1, -3});
    Tensor b = MakeTensor(t, {6}, {2, 2, -2, -2, 0, kInf});
    Tensor y = *Tensor::Zeros(t, {6});
    KernelContext ctx{{ir::TensorView::Of(a), ir::TensorView::Of(b)}, {ir::TensorView::Of(y)}};
    ASSERT_TRUE((*k)->Run(ctx).ok());
    ExpectNear(Values(y), {1.5, 0.5, -0.5, -1.5, kNaN, kInf}, 0);
  }
}

// ScatterND: replace (negative indices wrap), add (repeated indices add up),
// and an index out of range named in the error.
TEST(ScatterNDKernel, ReplacesAddsAndNamesABadIndex) {
  const Tensor data = F32({3, 2}, {1, 2, 3, 4, 5, 6});
  ir::Attributes none, add;
  add.Set("reduction", std::string("add"));
  auto y = RunReference(OpKind::kScatterND, {data, Tensor::Int64s({-1, 0}, {2, 1}), F32({2, 2}, {10, 20, 30, 40})}, none);
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  ExpectNear(Values((*y)[0]), {30, 40, 3, 4, 10, 20}, 0);
  y = RunReference(OpKind::kScatterND, {data, Tensor::Int64s({2, 2}, {2, 1}), F32({2, 2}, {10, 20, 30, 40})}, add);
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  ExpectNear(Values((*y)[0]), {1, 2, 3, 4, 45, 66}, 0);  // row 2 gets both updates
  y = RunReference(OpKind::kScatterND, {data, Tensor::Int64s({1, 1, 2, 0}, {2, 2}), F32({2}, {10, 100})}, none);
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  ExpectNear(Values((*y)[0]), {1, 2, 3, 10, 100, 6}, 0);  // elements (1, 1) and (2, 0)
  y = RunReference(OpKind::kScatterND, {data, Tensor::Int64s({3}, {1, 1}), F32({1, 2}, {0, 0})}, none);
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("index 3 (tuple 0, coordinate 0) is outside [-3, 3)"), std::string::npos)
      << y.status().message();
}

// GatherND: whole rows (k = 1, a negative index wraps), single elements
// (k = 2), rows within each batch element (batch_dims 1), and an index out
// of range named in the error. The ONNX backend tests run it too.
TEST(GatherNDKernel, GathersSlicesTuplesAndBatches) {
  const Tensor data = F32({3, 2}, {1, 2, 3, 4, 5, 6});
  auto y = RunReference(OpKind::kGatherND, {data, Tensor::Int64s({-1, 0}, {2, 1})}, {});
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ((*y)[0].dims(), (std::vector<int64_t>{2, 2}));
  ExpectNear(Values((*y)[0]), {5, 6, 1, 2}, 0);
  y = RunReference(OpKind::kGatherND, {data, Tensor::Int64s({1, 1, 2, 0}, {2, 2})}, {});
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  ExpectNear(Values((*y)[0]), {4, 5}, 0);
  ir::Attributes batch;
  batch.Set("batch_dims", int64_t{1});
  y = RunReference(OpKind::kGatherND, {F32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), Tensor::Int64s({1, 0}, {2, 1})}, batch);
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  ExpectNear(Values((*y)[0]), {3, 4, 5, 6}, 0);  // row 1 of batch 0, row 0 of batch 1
  y = RunReference(OpKind::kGatherND, {data, Tensor::Int64s({0, 2}, {1, 2})}, {});
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("index 2 (tuple 0, coordinate 1) is outside [-2, 2)"), std::string::npos)
      << y.status().message();
}

ir::Attributes CastTo(DType t) {
  ir::Attributes a;
  a.Set("to", static_cast<int64_t>(ir::OnnxFromDType(t)));
  return a;
}

TEST(CastKernels, Float16RoundsToNearestEvenAndOverflowsToInf) {
  const double ulp = std::ldexp(1.0, -10);  // fp16 spacing in [1, 2)
  Tensor x = F32({6}, {1 + ulp / 2, 1 + 3 * ulp / 2, 65504, 65520, -1e6, std::ldexp(1.0, -25) * 1.5});
  Tensor h = Run1(OpKind::kCast, {x}, CastTo(DType::kFloat16));
  EXPECT_EQ(h.dtype(), DType::kFloat16);
  // Ties go to the even mantissa; 65520 is the first value that rounds to inf;
  // 1.5 * 2^-25 rounds up to the smallest subnormal 2^-24.
  ExpectNear(Values(h), {1, 1 + 2 * ulp, 65504, kInf, -kInf, std::ldexp(1.0, -24)}, 0);
}

TEST(CastKernels, BFloat16RoundsToNearestEven) {
  const double ulp = std::ldexp(1.0, -7);  // bf16 spacing in [1, 2)
  Tensor x = F32({4}, {1 + ulp / 2, 1 + 3 * ulp / 2, 1 + ulp / 2 + ulp / 8, kNaN});
  Tensor b = Run1(OpKind::kCast, {x}, CastTo(DType::kBFloat16));
  ExpectNear(Values(b), {1, 1 + 2 * ulp, 1 + ulp, kNaN}, 0);
}

TEST(CastKernels, FloatToIntegerAndBool) {
  Tensor x = F32({6}, {-2.7, 2.7, 0, -0.0, 1e20, kNaN});
  ExpectNear(Values(Run1(OpKind::kCast, {x}, CastTo(DType::kInt32))), {-2, 2, 0, 0, 2147483647, 0}, 0);
  ExpectNear(Values(Run1(OpKind::kCast, {x}, CastTo(DType::kBool))), {1, 1, 0, 0, 1, 1}, 0);
  ExpectNear(Values(Run1(OpKind::kCast, {MakeTensor(DType::kInt64, {2}, {300, -1})}, CastTo(DType::kUInt8))), {44, 255}, 0);
  ExpectNear(Values(Run1(OpKind::kCast, {MakeTensor(DType::kBool, {2}, {1, 0})}, CastTo(DType::kFloat64))), {1, 0}, 0);
}

TEST(CastKernels, EveryPairRoundTripsSmallValues) {
  const DType all[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt64,
                       DType::kInt32,   DType::kInt8,    DType::kUInt8,    DType::kBool};
  for (DType from : all)
    for (DType to : all) {
      Tensor x = MakeTensor(from, {3}, {0, 1, 2});
      Tensor y = Run1(OpKind::kCast, {x}, CastTo(to));
      ASSERT_EQ(y.dtype(), to);
      std::vector<double> want = {0, 1, from == DType::kBool || to == DType::kBool ? 1.0 : 2.0};
      ExpectNear(Values(y), want, 0);
    }
}

}  // namespace
}  // namespace amptrain::kernels
