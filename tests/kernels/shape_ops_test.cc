// Reference kernels of the shape family against hand-computed values (ONNX
// spec examples where they exist). Output dims come from the op's shape rule,
// so every case also checks rule and kernel agree. Each case runs twice:
// parameter inputs known at kernel creation, and only at run time.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "ir/graph.h"
#include "kernels/cpu/register.h"

namespace amptrain::kernels {
namespace {

using ir::Tensor;

Tensor I64(std::vector<int64_t> v, std::vector<int64_t> dims) { return Tensor::Int64s(v, std::move(dims)); }
Tensor I64(std::vector<int64_t> v) { int64_t n = static_cast<int64_t>(v.size()); return Tensor::Int64s(v, {n}); }
Tensor F32(std::vector<float> v, std::vector<int64_t> dims) { return Tensor::Floats(v, std::move(dims)); }
Tensor Iota(std::vector<int64_t> dims, float start = 0) {
  Tensor t = *Tensor::Zeros(DType::kFloat32, dims);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = start + static_cast<float>(i);
  return t;
}
Tensor Typed(DType dt, std::vector<double> v, std::vector<int64_t> dims) {
  Tensor f = *Tensor::Zeros(DType::kFloat64, dims);
  for (size_t i = 0; i < v.size(); ++i) f.data<double>()[i] = v[i];
  Tensor t = *Tensor::Zeros(dt, dims);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    double x = f.data<double>()[i];
    switch (dt) {
      case DType::kFloat32: t.data<float>()[i] = static_cast<float>(x); break;
      case DType::kFloat16: t.data<uint16_t>()[i] = ir::FloatToHalf(static_cast<float>(x)); break;
      case DType::kBFloat16: t.data<uint16_t>()[i] = ir::FloatToBFloat16(static_cast<float>(x)); break;
      case DType::kFloat64: t.data<double>()[i] = x; break;
      case DType::kInt64: t.data<int64_t>()[i] = static_cast<int64_t>(x); break;
      case DType::kInt32: t.data<int32_t>()[i] = static_cast<int32_t>(x); break;
      case DType::kInt8: t.data<int8_t>()[i] = static_cast<int8_t>(x); break;
      case DType::kUInt8: case DType::kBool: t.data<uint8_t>()[i] = static_cast<uint8_t>(x); break;
      default: break;
    }
  }
  return t;
}

std::vector<double> Values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.num_elements(); ++i) v.push_back(t.GetAsDouble(i));
  return v;
}

class ShapeOps : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    cpu::RegisterReferenceShape(registry_);
    cpu::RegisterReferenceSpectral(registry_);
  }

  // Infers output types with the op's rule, creates the reference kernel
  // (parameter values visible at creation when GetParam()), runs it.
  StatusOr<std::vector<Tensor>> Run(OpKind op, std::vector<Tensor> inputs, ir::Attributes attrs = {},
                                    size_t num_outputs = 1) {
    ir::InferContext ictx;
    ictx.attrs = &attrs;
    for (const Tensor& t : inputs) {
      ictx.inputs.push_back(t.empty() ? ir::TensorType{} : ir::TensorType::Of(t.dtype(), t.dims()));
      ictx.values.push_back(t.empty() ? nullptr : &t);
    }
    ictx.outputs.resize(num_outputs);
    ictx.output_values.resize(num_outputs);
    AMP_RETURN_IF_ERROR(ir::Schema(op).infer(ictx));
    KernelInit init;
    init.op = op;
    init.attrs = &attrs;
    init.node_name = "test";
    for (size_t i = 0; i < inputs.size(); ++i)
      init.inputs.push_back(TensorSpec{inputs[i].dtype(), inputs[i].dims(), GetParam() && i > 0 ? &inputs[i] : nullptr});
    std::vector<Tensor> outs;
    KernelContext ctx;
    for (const ir::TensorType& t : ictx.outputs) {
      if (!t.shape.is_static()) return Internal("rule left a dynamic output ", t.ToString());
      init.outputs.push_back(TensorSpec{t.dtype, t.shape.static_dims(), nullptr});
      AMP_ASSIGN_OR_RETURN(Tensor o, Tensor::Zeros(t.dtype, t.shape.static_dims()));
      outs.push_back(o);
      ctx.outputs.push_back(ir::TensorView::Of(outs.back()));
    }
    for (Tensor& t : inputs) ctx.inputs.push_back(t.empty() ? ir::TensorView{} : ir::TensorView::Of(t));
    AMP_ASSIGN_OR_RETURN(auto kernel, registry_.Create(init, "reference"));
    AMP_RETURN_IF_ERROR(kernel->Run(ctx));
    // Value propagation, when the rule did it, must agree with the kernel.
    for (size_t i = 0; i < outs.size(); ++i)
      if (!ictx.output_values[i].empty() && !(ictx.output_values[i] == outs[i]))
        return Internal("propagated value of output ", i, " differs from the kernel's");
    return outs;
  }
  Tensor Run1(OpKind op, std::vector<Tensor> inputs, ir::Attributes attrs = {}) {
    auto r = Run(op, std::move(inputs), std::move(attrs));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? (*r)[0] : Tensor();
  }
  Registry registry_;
};

ir::Attributes Attr(const std::string& name, ir::AttrValue v) {
  ir::Attributes a;
  a.Set(name, std::move(v));
  return a;
}

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST_P(ShapeOps, ReshapeZeroAndMinusOne) {
  Tensor y = Run1(OpKind::kReshape, {Iota({2, 3, 4}), I64({2, 0, 1, -1})});
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 3, 1, 4}));
  EXPECT_EQ(Values(y), Values(Iota({24})));
  Tensor z = Run1(OpKind::kReshape, {Iota({0, 3, 4}), I64({3, 4, 0})}, Attr("allowzero", int64_t{1}));
  EXPECT_EQ(z.dims(), (std::vector<int64_t>{3, 4, 0}));
}

TEST_P(ShapeOps, FlattenSqueezeUnsqueeze) {
  EXPECT_EQ(Run1(OpKind::kFlatten, {Iota({2, 3, 4})}, Attr("axis", int64_t{-1})).dims(), (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(Run1(OpKind::kFlatten, {Iota({2, 3})}, Attr("axis", int64_t{0})).dims(), (std::vector<int64_t>{1, 6}));
  EXPECT_EQ(Run1(OpKind::kUnsqueeze, {Iota({3, 4}), I64({0, -1})}).dims(), (std::vector<int64_t>{1, 3, 4, 1}));
  EXPECT_EQ(Run1(OpKind::kSqueeze, {Iota({1, 3, 1}), I64({-1})}).dims(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(Run1(OpKind::kSqueeze, {Iota({1, 3, 1})}).dims(), (std::vector<int64_t>{3}));
  EXPECT_FALSE(Run(OpKind::kSqueeze, {Iota({2, 3}), I64({0})}).ok());
}

TEST_P(ShapeOps, TransposeEveryDtype) {
  // x[i][j][k] = 100i + 10j + k, perm [1, 2, 0] -> y[j][k][i].
  std::vector<double> xs, want;
  for (int i = 0; i < 2; ++i) for (int j = 0; j < 3; ++j) for (int k = 0; k < 4; ++k) xs.push_back(100 * i + 10 * j + k);
  for (int j = 0; j < 3; ++j) for (int k = 0; k < 4; ++k) for (int i = 0; i < 2; ++i) want.push_back(100 * i + 10 * j + k);
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt64, DType::kInt32}) {
    Tensor y = Run1(OpKind::kTranspose, {Typed(dt, xs, {2, 3, 4})}, Attr("perm", std::vector<int64_t>{1, 2, 0}));
    EXPECT_EQ(y.dims(), (std::vector<int64_t>{3, 4, 2})) << ir::DTypeName(dt);
    EXPECT_EQ(Values(y), Values(Typed(dt, want, {3, 4, 2}))) << ir::DTypeName(dt);
  }
  for (DType dt : {DType::kInt8, DType::kUInt8, DType::kBool}) {
    Tensor y = Run1(OpKind::kTranspose, {Typed(dt, {1, 0, 0, 1, 1, 0}, {2, 3})});
    EXPECT_EQ(Values(y), (std::vector<double>{1, 1, 0, 1, 0, 0})) << ir::DTypeName(dt);
  }
}

TEST_P(ShapeOps, TransposeLargeUsesThreadsCorrectly) {
  Tensor x = Iota({300, 257});
  Tensor y = Run1(OpKind::kTranspose, {x});
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{257, 300}));
  for (int64_t j = 0; j < 257; j += 17)
    for (int64_t i = 0; i < 300; i += 13) ASSERT_EQ(y.data<float>()[j * 300 + i], x.data<float>()[i * 257 + j]);
}

// Permutations whose last two output dims are the source's last dim and a
// strided one run as tiles (shape_kernels.h, TiledTranspose): every element
// against the definition, with edge tiles and permuted batch dims.
TEST_P(ShapeOps, TransposeOfTheLastTwoAxesInTiles) {
  using V = std::vector<int64_t>;
  for (const auto& [dims, perm] : {std::pair{V{3, 45, 70}, V{0, 2, 1}}, std::pair{V{2, 3, 40, 33}, V{0, 1, 3, 2}},
                                   std::pair{V{4, 5, 9, 10}, V{1, 0, 3, 2}}, std::pair{V{70, 45}, V{1, 0}}}) {
    const Tensor x = Iota(dims);
    for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kInt64}) {
      std::vector<double> xs = Values(x);
      for (double& v : xs) v = std::fmod(v, 2000.0);  // exact in fp16
      Tensor y = Run1(OpKind::kTranspose, {Typed(dt, xs, dims)}, Attr("perm", perm));
      V out(dims.size()), stride(dims.size(), 1);
      for (size_t d = 0; d < dims.size(); ++d) out[d] = dims[perm[d]];
      for (size_t d = dims.size() - 1; d-- > 0;) stride[d] = stride[d + 1] * dims[d + 1];
      ASSERT_EQ(y.dims(), out);
      const std::vector<double> got = Values(y);
      for (int64_t o = 0; o < y.num_elements(); ++o) {
        int64_t rem = o, src = 0;
        for (size_t d = out.size(); d-- > 0;) {
          src += rem % out[d] * stride[perm[d]];
          rem /= out[d];
        }
        ASSERT_EQ(got[o], xs[src]) << ir::DTypeName(dt) << " element " << o;
      }
    }
  }
}

TEST_P(ShapeOps, ConcatAndSplit) {
  Tensor a = Typed(DType::kInt32, {1, 2, 3, 4}, {2, 2}), b = Typed(DType::kInt32, {5, 6}, {2, 1});
  Tensor c = Run1(OpKind::kConcat, {a, b}, Attr("axis", int64_t{-1}));
  EXPECT_EQ(Values(c), (std::vector<double>{1, 2, 5, 3, 4, 6}));
  auto parts = Run(OpKind::kSplit, {Iota({7}, 1)}, Attr("num_outputs", int64_t{4}), 4);  // opset 18 uneven
  ASSERT_TRUE(parts.ok()) << parts.status().ToString();
  EXPECT_EQ(Values((*parts)[0]), (std::vector<double>{1, 2}));
  EXPECT_EQ(Values((*parts)[3]), (std::vector<double>{7}));
  auto sized = Run(OpKind::kSplit, {Iota({2, 6}, 1), I64({2, 4})}, Attr("axis", int64_t{1}), 2);
  ASSERT_TRUE(sized.ok()) << sized.status().ToString();
  EXPECT_EQ(Values((*sized)[0]), (std::vector<double>{1, 2, 7, 8}));
  EXPECT_EQ(Values((*sized)[1]), (std::vector<double>{3, 4, 5, 6, 9, 10, 11, 12}));
}

TEST_P(ShapeOps, SliceNegativeStepsAndClamping) {
  Tensor x = Iota({10});
  EXPECT_EQ(Values(Run1(OpKind::kSlice, {x, I64({8}), I64({1}), I64({0}), I64({-3})})), (std::vector<double>{8, 5, 2}));
  EXPECT_EQ(Values(Run1(OpKind::kSlice, {x, I64({-1}), I64({kMin}), I64({0}), I64({-4})})), (std::vector<double>{9, 5, 1}));
  EXPECT_EQ(Run1(OpKind::kSlice, {x, I64({1000}), I64({1000})}).num_elements(), 0);
  EXPECT_EQ(Values(Run1(OpKind::kSlice, {x, I64({7}), I64({1000})})), (std::vector<double>{7, 8, 9}));
  // 3x4 iota, rows 1.., cols -3..-1 via negative axes.
  Tensor y = Run1(OpKind::kSlice, {Iota({3, 4}), I64({1, -3}), I64({kMax, -1}), I64({0, -1})});
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Values(y), (std::vector<double>{5, 6, 9, 10}));
  // ONNX test_slice_neg_steps pattern on a small tensor: x[4:0:-1, 3:0:-2].
  Tensor z = Run1(OpKind::kSlice, {Iota({5, 4}), I64({4, 3}), I64({0, 0}), I64({0, 1}), I64({-1, -2})});
  EXPECT_EQ(Values(z), (std::vector<double>{19, 17, 15, 13, 11, 9, 7, 5}));
  EXPECT_FALSE(Run(OpKind::kSlice, {x, I64({0}), I64({5}), I64({0}), I64({0})}).ok());
}

TEST_P(ShapeOps, GatherNegativeAndScalarIndices) {
  Tensor x = Iota({3, 4});
  Tensor y = Run1(OpKind::kGather, {x, Typed(DType::kInt32, {-1, 0}, {2})}, Attr("axis", int64_t{1}));
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(Values(y), (std::vector<double>{3, 0, 7, 4, 11, 8}));
  Tensor s = Run1(OpKind::kGather, {x, I64({-2}, {})});
  EXPECT_EQ(s.dims(), (std::vector<int64_t>{4}));
  EXPECT_EQ(Values(s), (std::vector<double>{4, 5, 6, 7}));
  Tensor m = Run1(OpKind::kGather, {x, I64({2, 0, 1, 1}, {2, 2})});
  EXPECT_EQ(m.dims(), (std::vector<int64_t>{2, 2, 4}));
  EXPECT_EQ(m.GetAsDouble(4), 0);
}

TEST_P(ShapeOps, GatherOutOfRangeIsAnError) {
  if (GetParam()) {  // known at plan time: the rule refuses
    EXPECT_FALSE(Run(OpKind::kGather, {Iota({3}), I64({3})}).ok());
  }
}

// NonZero: [rank, N] indices in row-major order; -0.0 is zero, NaN is not;
// every dtype (bool masks are what PyTorch's x[mask] exports).
TEST_P(ShapeOps, NonZeroIndicesInRowMajorOrder) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor y = Run1(OpKind::kNonZero, {Typed(DType::kFloat32, {0, 2, -0.0, 0, nan, 5}, {2, 3})});
  EXPECT_EQ(y.dtype(), DType::kInt64);
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Values(y), (std::vector<double>{0, 1, 1, 1, 1, 2}));  // (0, 1), (1, 1), (1, 2)
  for (DType dt : {DType::kBool, DType::kInt64, DType::kInt32, DType::kUInt8, DType::kBFloat16, DType::kFloat16,
                   DType::kFloat64}) {
    Tensor b = Run1(OpKind::kNonZero, {Typed(dt, {1, 0, 0, 1}, {4})});
    EXPECT_EQ(Values(b), (std::vector<double>{0, 3})) << ir::DTypeName(dt);
  }
  EXPECT_EQ(Run1(OpKind::kNonZero, {Typed(DType::kFloat32, {0, 0}, {2})}).dims(), (std::vector<int64_t>{1, 0}));
}

TEST_P(ShapeOps, ExpandAndTile) {
  Tensor y = Run1(OpKind::kExpand, {Iota({3, 1}), I64({2, 1, 4})});
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 3, 4}));
  std::vector<double> want;  // the size-1 last dim repeated: each input value fills a row of 4
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b) want.insert(want.end(), 4, b);
  EXPECT_EQ(Values(y), want);
  Tensor t = Run1(OpKind::kTile, {Iota({2, 2}), I64({2, 1})});
  EXPECT_EQ(Values(t), (std::vector<double>{0, 1, 2, 3, 0, 1, 2, 3}));
  Tensor u = Run1(OpKind::kTile, {Typed(DType::kFloat16, {1, 2}, {2}), I64({3})});
  EXPECT_EQ(Values(u), (std::vector<double>{1, 2, 1, 2, 1, 2}));
}

TEST_P(ShapeOps, ShapeConstantOfShapeRangeConstant) {
  ir::Attributes a;
  a.Set("start", int64_t{-3});
  a.Set("end", int64_t{-1});
  EXPECT_EQ(Values(Run1(OpKind::kShape, {Iota({2, 3, 4, 5})}, a)), (std::vector<double>{3, 4}));
  EXPECT_EQ(Values(Run1(OpKind::kShape, {Iota({2, 3})}, Attr("start", int64_t{-10}))), (std::vector<double>{2, 3}));
  Tensor c = Run1(OpKind::kConstantOfShape, {I64({2, 3})}, Attr("value", Typed(DType::kInt32, {7}, {1})));
  EXPECT_EQ(c.dtype(), DType::kInt32);
  EXPECT_EQ(Values(c), std::vector<double>(6, 7));
  EXPECT_EQ(Run1(OpKind::kConstantOfShape, {I64({2})}).dtype(), DType::kFloat32);
  EXPECT_EQ(Values(Run1(OpKind::kRange, {I64({10}, {}), I64({4}, {}), I64({-3}, {})})), (std::vector<double>{10, 7}));
  Tensor r = Run1(OpKind::kRange, {Typed(DType::kFloat16, {1}, {}), Typed(DType::kFloat16, {5}, {}), Typed(DType::kFloat16, {2}, {})});
  EXPECT_EQ(r.dtype(), DType::kFloat16);
  EXPECT_EQ(Values(r), (std::vector<double>{1, 3}));
  EXPECT_EQ(Values(Run1(OpKind::kConstant, {}, Attr("value", F32({1.5f, 2.5f}, {2})))), (std::vector<double>{1.5, 2.5}));
}

TEST_P(ShapeOps, PadModes) {
  Tensor x = Typed(DType::kInt32, {1, 2, 3}, {3});
  auto pad = [&](const char* mode, std::vector<int64_t> pads) {
    return Values(Run1(OpKind::kPad, {x, I64(std::move(pads))}, Attr("mode", std::string(mode))));
  };
  EXPECT_EQ(pad("constant", {2, 1}), (std::vector<double>{0, 0, 1, 2, 3, 0}));
  EXPECT_EQ(pad("reflect", {2, 2}), (std::vector<double>{3, 2, 1, 2, 3, 2, 1}));
  EXPECT_EQ(pad("edge", {2, 2}), (std::vector<double>{1, 1, 1, 2, 3, 3, 3}));
  EXPECT_EQ(pad("wrap", {2, 2}), (std::vector<double>{2, 3, 1, 2, 3, 1, 2}));
  EXPECT_EQ(pad("constant", {-1, 1}), (std::vector<double>{2, 3, 0}));
  // Constant value and axes (opset 18): pad only the last axis of a 2x2.
  ir::Attributes none;
  Tensor y = Run1(OpKind::kPad, {Iota({2, 2}, 1), I64({1, 0}), F32({1.5f}, {}), I64({-1})}, none);
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Values(y), (std::vector<double>{1.5, 1, 2, 1.5, 3, 4}));
  // Reflect on two axes (ONNX's reflect pads both ends of each axis).
  Tensor z = Run1(OpKind::kPad, {Iota({2, 3}), I64({1, 1, 1, 1})}, Attr("mode", std::string("reflect")));
  EXPECT_EQ(z.dims(), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(Values(z), (std::vector<double>{4, 3, 4, 5, 4, 1, 0, 1, 2, 1, 4, 3, 4, 5, 4, 1, 0, 1, 2, 1}));
}

// PadGrad adds each output's gradient to the input position Pad read it
// from: x = [a b c] padded by (2, 1) reads [c b a b c b] (reflect), [a a a b
// c c] (edge), [b c a b c a] (wrap); dY = 1..6.
TEST_P(ShapeOps, PadGradFoldsTheBorderBack) {
  auto grad = [&](const char* mode, std::vector<int64_t> pads, std::vector<int64_t> x_dims, Tensor dy) {
    Tensor shape = I64(std::move(x_dims));
    return Run1(OpKind::kPadGrad, {std::move(dy), shape, I64(std::move(pads))}, Attr("mode", std::string(mode)));
  };
  Tensor dy = Iota({6}, 1);
  EXPECT_EQ(Values(grad("reflect", {2, 1}, {3}, dy)), (std::vector<double>{3, 2 + 4 + 6, 1 + 5}));
  EXPECT_EQ(Values(grad("edge", {2, 1}, {3}, dy)), (std::vector<double>{1 + 2 + 3, 4, 5 + 6}));
  EXPECT_EQ(Values(grad("wrap", {2, 1}, {3}, dy)), (std::vector<double>{3 + 6, 1 + 4, 2 + 5}));
  EXPECT_EQ(Values(grad("constant", {2, 1}, {3}, dy)), (std::vector<double>{3, 4, 5}));
  // Cropping: x = [a b c d], pads (-1, 1) reads [b c d 0]; a takes nothing.
  EXPECT_EQ(Values(grad("constant", {-1, 1}, {4}, Iota({4}, 1))), (std::vector<double>{0, 1, 2, 3}));
  // Two axes: a 2x2 reflected by one on every side is 4x4, whose rows (and
  // columns) 0..3 read x's rows 1, 0, 1, 0; each input takes four outputs.
  Tensor two = grad("reflect", {1, 1, 1, 1}, {2, 2}, Iota({4, 4}, 1));
  EXPECT_EQ(two.dims(), (std::vector<int64_t>{2, 2}));
  // x[0][0] takes outputs (1,1), (1,3), (3,1), (3,3) = 6 + 8 + 14 + 16.
  EXPECT_EQ(Values(two), (std::vector<double>{6 + 8 + 14 + 16, 5 + 7 + 13 + 15, 2 + 4 + 10 + 12, 1 + 3 + 9 + 11}));
  // Low-precision dY: summed wide, rounded once, dtype kept.
  for (DType t : {DType::kFloat16, DType::kBFloat16}) {
    Tensor low = grad("edge", {2, 1}, {3}, Typed(t, {1, 2, 3, 4, 5, 6}, {6}));
    EXPECT_EQ(low.dtype(), t);
    EXPECT_EQ(Values(low), (std::vector<double>{6, 4, 11}));
  }
}

// DFT's four modes on x = [1, 2, 3, 4], whose spectrum is [10, -2+2i, -2, -2-2i]
// (every sum exact in fp32 and in bf16): the full transform of the real
// input, RFFT's first L/2 + 1 bins, the inverse of the full spectrum, IRFFT
// back from the bins; dft_length pads (the zero-padded spectrum's DC bin is
// still 10) and truncates; axis 1 of three signal dims.
TEST_P(ShapeOps, DftModes) {
  auto dft = [&](Tensor x, int64_t inverse, int64_t onesided, Tensor length = Tensor(), int64_t axis = 1) {
    ir::Attributes a;
    a.Set("inverse", inverse);
    a.Set("onesided", onesided);
    return Run1(OpKind::kDFT, {std::move(x), std::move(length), I64({axis}, {})}, std::move(a));
  };
  const Tensor x = Iota({1, 4, 1}, 1);
  Tensor full = dft(x, 0, 0);
  EXPECT_EQ(full.dims(), (std::vector<int64_t>{1, 4, 2}));
  EXPECT_EQ(Values(full), (std::vector<double>{10, 0, -2, 2, -2, 0, -2, -2}));
  Tensor half = dft(x, 0, 1);
  EXPECT_EQ(half.dims(), (std::vector<int64_t>{1, 3, 2}));
  EXPECT_EQ(Values(half), (std::vector<double>{10, 0, -2, 2, -2, 0}));
  EXPECT_EQ(Values(dft(full, 1, 0)), (std::vector<double>{1, 0, 2, 0, 3, 0, 4, 0}));
  Tensor back = dft(half, 1, 1);
  EXPECT_EQ(back.dims(), (std::vector<int64_t>{1, 4, 1}));
  EXPECT_EQ(Values(back), (std::vector<double>{1, 2, 3, 4}));
  Tensor padded = dft(x, 0, 0, I64({6}, {}));
  EXPECT_EQ(padded.dims(), (std::vector<int64_t>{1, 6, 2}));
  EXPECT_EQ(Values(padded)[0], 10);
  EXPECT_EQ(Values(dft(x, 0, 0, I64({2}, {}))), (std::vector<double>{3, 0, -1, 0}));  // [1, 2] alone
  for (DType t : {DType::kFloat16, DType::kBFloat16, DType::kFloat64}) {
    Tensor low = dft(Typed(t, {1, 2, 3, 4}, {1, 4, 1}), 0, 1);
    EXPECT_EQ(low.dtype(), t);
    EXPECT_EQ(Values(low), (std::vector<double>{10, 0, -2, 2, -2, 0}));
  }
  // Along axis 1 of [2, 4, 3, 1]: each of the 2 x 3 signals is transformed alone.
  Tensor many = *Tensor::Zeros(DType::kFloat32, {2, 4, 3, 1});
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t n = 0; n < 4; ++n)
      for (int64_t c = 0; c < 3; ++c) many.data<float>()[(b * 4 + n) * 3 + c] = static_cast<float>((n + 1) * (c + 1) + b);
  Tensor spectra = dft(many, 0, 1);
  ASSERT_EQ(spectra.dims(), (std::vector<int64_t>{2, 3, 3, 2}));
  // Signal (b, c) is (c + 1) [1, 2, 3, 4] + b: DC = 10 (c + 1) + 4 b, bin 1 = (c + 1)(-2 + 2i).
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t c = 0; c < 3; ++c) {
      const std::vector<double> v = Values(spectra);
      EXPECT_EQ(v[static_cast<size_t>(((b * 3 + 0) * 3 + c) * 2)], 10.0 * static_cast<double>(c + 1) + 4.0 * static_cast<double>(b));
      EXPECT_EQ(v[static_cast<size_t>(((b * 3 + 1) * 3 + c) * 2 + 1)], 2.0 * static_cast<double>(c + 1));
    }
  // The last dim is [re, im], never the axis; a complex input has no RFFT.
  ir::Attributes rfft;
  rfft.Set("onesided", int64_t{1});
  EXPECT_FALSE(Run(OpKind::kDFT, {x, Tensor(), I64({2}, {})}).ok());
  EXPECT_FALSE(Run(OpKind::kDFT, {full, Tensor(), I64({1}, {})}, rfft).ok());
}

// Random complex signals of power-of-two lengths (the radix-2 FFT), of short
// other ones (the direct sums) and of long ones, 97 a prime (Bluestein's chirp
// transform), forward and inverse, against sums written here in
// double: every fp32 output within 2^-22 of the largest magnitude (the
// rounding to fp32 itself is 2^-24 of the value).
TEST_P(ShapeOps, DftMatchesItsSumsAtEveryLength) {
  for (int64_t len : {1, 2, 8, 64, 512, 5, 12, 60, 65, 97, 100, 300}) {
    for (int64_t inverse : {0, 1}) {
      SCOPED_TRACE(StrCat("length ", len, " inverse ", inverse));
      Tensor x = *Tensor::Zeros(DType::kFloat32, {3, len, 2});
      uint32_t state = 7 + static_cast<uint32_t>(len);
      for (int64_t e = 0; e < x.num_elements(); ++e) {
        state = state * 1664525u + 1013904223u;
        x.data<float>()[e] = static_cast<float>(state >> 8) / static_cast<float>(1 << 24) - 0.5f;
      }
      ir::Attributes a;
      a.Set("inverse", inverse);
      Tensor y = Run1(OpKind::kDFT, {x, Tensor(), I64({1}, {})}, a);
      ASSERT_EQ(y.dims(), x.dims());
      const double sign = inverse ? 1.0 : -1.0, scale = inverse ? 1.0 / static_cast<double>(len) : 1.0;
      for (int64_t b = 0; b < 3; ++b) {
        std::vector<double> want;
        double biggest = 0.0;
        for (int64_t k = 0; k < len; ++k) {
          double sr = 0.0, si = 0.0;
          for (int64_t n = 0; n < len; ++n) {
            const double t = sign * 2.0 * M_PI * static_cast<double>((k * n) % len) / static_cast<double>(len);
            const double re = x.data<float>()[(b * len + n) * 2], im = x.data<float>()[(b * len + n) * 2 + 1];
            sr += re * std::cos(t) - im * std::sin(t);
            si += re * std::sin(t) + im * std::cos(t);
          }
          want.push_back(sr * scale);
          want.push_back(si * scale);
          biggest = std::max({biggest, std::abs(sr * scale), std::abs(si * scale)});
        }
        for (int64_t e = 0; e < 2 * len; ++e)
          EXPECT_NEAR(y.data<float>()[b * 2 * len + e], want[static_cast<size_t>(e)], biggest * 0x1p-22) << "element " << e;
      }
    }
  }
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

TEST_P(ShapeOps, ResizeNearestUpsampleScales) {  // test_resize_upsample_scales_nearest
  Tensor y = Run1(OpKind::kResize, {Iota({1, 1, 2, 2}, 1), Tensor(), F32({1, 1, 2, 3}, {4})},
                  Attr("mode", std::string("nearest")));
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{1, 1, 4, 6}));
  EXPECT_EQ(Values(y), (std::vector<double>{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}));
}

TEST_P(ShapeOps, ResizeNearestDownsampleAndSizes) {
  // test_resize_downsample_scales_nearest: [1,2,3,4;5,6,7,8] scales 0.6 -> [1, 3].
  Tensor y = Run1(OpKind::kResize, {Iota({1, 1, 2, 4}, 1), Tensor(), F32({1, 1, 0.6f, 0.6f}, {4})},
                  Attr("mode", std::string("nearest")));
  EXPECT_EQ(Values(y), (std::vector<double>{1, 3}));
  // test_resize_upsample_sizes_nearest_round_prefer_ceil_asymmetric, first row of 8 from a 4x4 iota+1.
  ir::Attributes a;
  a.Set("mode", std::string("nearest"));
  a.Set("coordinate_transformation_mode", std::string("asymmetric"));
  a.Set("nearest_mode", std::string("round_prefer_ceil"));
  Tensor z = Run1(OpKind::kResize, {Iota({1, 1, 4, 4}, 1), Tensor(), Tensor(), I64({1, 1, 8, 8})}, a);
  std::vector<double> v = Values(z);
  ExpectNear(std::vector<double>(v.begin(), v.begin() + 8), {1, 2, 2, 3, 3, 4, 4, 4});
}

TEST_P(ShapeOps, ResizeLinear) {
  ir::Attributes a = Attr("mode", std::string("linear"));
  // test_resize_upsample_scales_linear
  Tensor y = Run1(OpKind::kResize, {Iota({1, 1, 2, 2}, 1), Tensor(), F32({1, 1, 2, 2}, {4})}, a);
  ExpectNear(Values(y), {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4});
  // test_resize_downsample_scales_linear
  Tensor d = Run1(OpKind::kResize, {Iota({1, 1, 2, 4}, 1), Tensor(), F32({1, 1, 0.6f, 0.6f}, {4})}, a);
  ExpectNear(Values(d), {2.6666665, 4.3333331});
  // test_resize_downsample_scales_linear_align_corners
  a.Set("coordinate_transformation_mode", std::string("align_corners"));
  Tensor c = Run1(OpKind::kResize, {Iota({1, 1, 2, 4}, 1), Tensor(), F32({1, 1, 0.6f, 0.6f}, {4})}, a);
  ExpectNear(Values(c), {1, 3.142857});
  // test_resize_downsample_sizes_linear_pytorch_half_pixel
  a.Set("coordinate_transformation_mode", std::string("pytorch_half_pixel"));
  Tensor p = Run1(OpKind::kResize, {Iota({1, 1, 4, 4}, 1), Tensor(), Tensor(), I64({1, 1, 3, 1})}, a);
  ExpectNear(Values(p), {1.6666666, 7, 12.333333});
}

TEST_P(ShapeOps, ResizeTfCropAndResizeExtrapolation) {  // test_resize_tf_crop_and_resize_extrapolation_value
  ir::Attributes a = Attr("mode", std::string("linear"));
  a.Set("coordinate_transformation_mode", std::string("tf_crop_and_resize"));
  a.Set("extrapolation_value", 10.0f);
  Tensor y = Run1(OpKind::kResize,
                  {Iota({1, 1, 4, 4}, 1), F32({0, 0, 0.4f, 0.6f, 1, 1, 1.2f, 1.7f}, {8}), Tensor(), I64({1, 1, 3, 3})}, a);
  ExpectNear(Values(y), {7.6, 10, 10, 12.4, 10, 10, 10, 10, 10}, 1e-4);
}

TEST_P(ShapeOps, ResizeCubicKeepsConstantsAndFp16) {
  Tensor x = Typed(DType::kFloat16, std::vector<double>(16, 3.0), {1, 1, 4, 4});
  Tensor y = Run1(OpKind::kResize, {x, Tensor(), F32({1, 1, 2, 2}, {4})}, Attr("mode", std::string("cubic")));
  EXPECT_EQ(y.dtype(), DType::kFloat16);
  ExpectNear(Values(y), std::vector<double>(64, 3.0), 1e-3);
}

// antialias=1 as PyTorch's exporter writes F.interpolate(..., antialias=True)
// (exclude_outside=1, half_pixel; bicubic with a = -0.5). The oracle is
// PyTorch's own float64 result for this input (1..24 with two outliers).
TEST_P(ShapeOps, ResizeAntialiasMatchesPyTorch) {
  std::vector<float> v(24);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i + 1);
  v[8] = -7, v[18] = 30;
  const Tensor x = F32(v, {1, 1, 4, 6});
  ir::Attributes a = Attr("antialias", int64_t{1});
  a.Set("exclude_outside", int64_t{1});
  a.Set("mode", std::string("linear"));
  Tensor y = Run1(OpKind::kResize, {x, Tensor(), Tensor(), I64({1, 1, 2, 3})}, a);
  ExpectNear(Values(y), {5.020408163, 5.214285714, 9.571428571, 17.12244898, 16.357142857, 19.0}, 1e-5);
  a.Set("mode", std::string("cubic"));
  a.Set("cubic_coeff_a", -0.5f);
  y = Run1(OpKind::kResize, {x, Tensor(), Tensor(), I64({1, 1, 3, 2})}, a);
  ExpectNear(Values(y), {1.925629291, 5.431350114, 8.65843353, 12.864545523, 21.533210888, 21.619294231}, 1e-5);
  // Up-sampling and nearest ignore it: the same values as without.
  for (const char* mode : {"linear", "nearest"}) {
    ir::Attributes plain = Attr("mode", std::string(mode));
    ir::Attributes aa = plain;
    aa.Set("antialias", int64_t{1});
    const std::vector<Tensor> in{x, Tensor(), F32({1, 1, 1.5f, 2}, {4})};
    EXPECT_EQ(Values(Run1(OpKind::kResize, in, aa)), Values(Run1(OpKind::kResize, in, plain))) << mode;
  }
}

TEST_P(ShapeOps, ResizeAntialiasMustBe0Or1) {
  auto r = Run(OpKind::kResize, {Iota({1, 1, 2, 2}), Tensor(), F32({1, 1, 2, 2}, {4})}, Attr("antialias", int64_t{2}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("antialias must be 0 or 1"), std::string::npos) << r.status().message();
}

INSTANTIATE_TEST_SUITE_P(Params, ShapeOps, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "KnownAtCreation" : "KnownAtRun"; });

}  // namespace
}  // namespace amptrain::kernels
