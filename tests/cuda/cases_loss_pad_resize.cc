// CUDA-against-CPU cases: losses, padding, tiling, resizing, integer and plan-time ops (see op_cases.h).
#include <cmath>
#include <limits>

#include "tests/cuda/op_cases.h"

namespace amptrain::kernels::devtest {

namespace {

// The ends of integer dtype t.
std::pair<int64_t, int64_t> Ends(DType t) {
  switch (t) {
    case DType::kInt64: return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
    case DType::kInt32: return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    case DType::kInt8: return {-128, 127};
    default: return {0, 255};  // uint8
  }
}

// x[i] = v, v within x's integer dtype (int64, int32, int8, uint8).
void Put(Tensor& x, int64_t i, int64_t v) {
  switch (x.dtype()) {
    case DType::kInt64: x.data<int64_t>()[i] = v; break;
    case DType::kInt32: x.data<int32_t>()[i] = static_cast<int32_t>(v); break;
    case DType::kInt8: x.data<int8_t>()[i] = static_cast<int8_t>(v); break;
    default: x.data<uint8_t>()[i] = static_cast<uint8_t>(v); break;
  }
}

// Random integers in [lo, hi) of integer dtype t, the dtype's ends at every
// 7th element (alternately the lowest and the highest), then `fixed`.
Tensor IntsWithEnds(DType t, std::vector<int64_t> dims, int64_t lo, int64_t hi, std::mt19937& rng,
                    std::vector<std::pair<int64_t, int64_t>> fixed = {}) {
  Tensor x = RandomInts(t, std::move(dims), lo, hi, rng);
  const auto [low, high] = Ends(t);
  for (int64_t i = 0; i < x.num_elements(); i += 7) Put(x, i, (i / 7) % 2 ? high : low);
  for (const auto& [i, v] : fixed) Put(x, i, v);
  return x;
}

// Random values of t in [lo, hi) with `special` at the first elements (rounded to t).
Tensor WithSpecials(DType t, std::vector<int64_t> dims, double lo, double hi, const std::vector<double>& special,
                    std::mt19937& rng) {
  Tensor x = Random(t, std::move(dims), rng, lo, hi);
  for (size_t i = 0; i < special.size(); ++i) ir::SetElementFromDouble(x, static_cast<int64_t>(i), special[i]);
  return x;
}

// Integer Add/Sub/Mul/Div/Max/Min (the lowerings' index arithmetic) and Cast
// between the floats, float64, the integers and bool: exact operations, so
// byte for byte (NaNs included: the CUDA kernel writes the CPU's payloads).
// The test dtype is the float side of the casts and unused elsewhere.
void AddIntegerArithmeticAndCastCases(std::vector<Case>& c) {
  auto exact = [](Case k) {
    k.same_bytes = true;
    return k;
  };
  using Maker = std::function<Tensor(std::mt19937&)>;
  auto inputs = [](std::vector<Maker> makers) {
    return [makers](DType, std::mt19937& rng) {
      std::vector<Tensor> in;
      for (const Maker& m : makers) in.push_back(m(rng));
      return in;
    };
  };
  auto ends = [](DType t, Ints dims, int64_t lo, int64_t hi, std::vector<std::pair<int64_t, int64_t>> fixed = {}) {
    return Maker([=](std::mt19937& rng) { return IntsWithEnds(t, dims, lo, hi, rng, fixed); });
  };
  auto ints = [](DType t, Ints dims, int64_t lo, int64_t hi) {
    return Maker([=](std::mt19937& rng) { return RandomInts(t, dims, lo, hi, rng); });
  };
  const DType i64 = DType::kInt64, i32 = DType::kInt32, i8 = DType::kInt8, u8 = DType::kUInt8;
  const int64_t min64 = std::numeric_limits<int64_t>::min();
  // Add/Sub/Mul wrap at the ends (MAX + MAX, MIN - MAX, products past 2^31).
  c.push_back(exact(Case{"AddInt64WrapBroadcast", OpKind::kAdd, NoAttrs,
                         inputs({ends(i64, {4, 1, 17}, -1000000, 1000000), ends(i64, {33, 1}, -1000000, 1000000)})}));
  c.push_back(exact(Case{"SubInt64WrapBroadcast", OpKind::kSub, NoAttrs,
                         inputs({ends(i64, {6, 40}, -1000000, 1000000), ends(i64, {40}, -1000000, 1000000)})}));
  c.push_back(exact(Case{"SubInt64ScalarOne", OpKind::kSub, NoAttrs,
                         inputs({ends(i64, {9}, -20, 20), [](std::mt19937&) { return Tensor::Int64s({1}, {}); }})}));
  c.push_back(exact(Case{"MulInt32Wrap", OpKind::kMul, NoAttrs,
                         inputs({ends(i32, {6, 40}, -100000, 100000), ends(i32, {40}, -100000, 100000)})}));
  c.push_back(exact(Case{"MulInt64WrapBroadcast", OpKind::kMul, NoAttrs,
                         inputs({ends(i64, {4, 1, 17}, -5000000000, 5000000000), ends(i64, {33, 1}, -5000000000, 5000000000)})}));
  c.push_back(exact(Case{"AddInt8Wrap", OpKind::kAdd, NoAttrs, inputs({ints(i8, {6, 40}, -128, 128), ints(i8, {6, 40}, -128, 128)})}));
  c.push_back(exact(Case{"SubUInt8Wrap", OpKind::kSub, NoAttrs, inputs({ints(u8, {6, 40}, 0, 256), ints(u8, {40}, 0, 256)})}));
  c.push_back(exact(Case{"MulUInt8Wrap", OpKind::kMul, NoAttrs, inputs({ints(u8, {6, 40}, 0, 256), ints(u8, {}, 0, 256)})}));
  c.push_back(exact(Case{"MulInt8Wrap", OpKind::kMul, NoAttrs, inputs({ints(i8, {6, 40}, -128, 128), ints(i8, {6, 40}, -128, 128)})}));
  // Div: truncation toward zero with either sign, x / 0 = 0, MIN / -1 = MIN
  // (column 1 divides the lowest value by -1, column 2 by 0).
  c.push_back(exact(Case{"DivInt64", OpKind::kDiv, NoAttrs,
                         inputs({ends(i64, {6, 40}, -1000, 1000, {{1, min64}, {41, min64}}),
                                 ends(i64, {40}, -5, 6, {{0, 7}, {1, -1}, {2, 0}})})}));
  c.push_back(exact(Case{"DivInt32Broadcast", OpKind::kDiv, NoAttrs,
                         inputs({ends(i32, {4, 1, 17}, -50, 50), ints(i32, {33, 1}, -4, 5)})}));
  c.push_back(exact(Case{"DivInt8", OpKind::kDiv, NoAttrs,
                         inputs({ends(i8, {6, 40}, -128, 128, {{1, -128}}), ends(i8, {40}, -4, 5, {{0, 3}, {1, -1}, {2, 0}})})}));
  c.push_back(exact(Case{"DivUInt8", OpKind::kDiv, NoAttrs, inputs({ints(u8, {6, 40}, 0, 256), ints(u8, {40}, 0, 9)})}));
  c.push_back(exact(Case{"MaxInt64Broadcast", OpKind::kMax, NoAttrs,
                         inputs({ends(i64, {4, 1, 17}, -9, 10), ends(i64, {33, 1}, -9, 10)})}));
  c.push_back(exact(Case{"MinInt32", OpKind::kMin, NoAttrs, inputs({ends(i32, {6, 40}, -9, 10), ends(i32, {6, 40}, -9, 10)})}));
  c.push_back(exact(Case{"MaxInt8", OpKind::kMax, NoAttrs, inputs({ints(i8, {6, 40}, -128, 128), ints(i8, {40}, -128, 128)})}));
  c.push_back(exact(Case{"MinUInt8", OpKind::kMin, NoAttrs, inputs({ints(u8, {6, 40}, 0, 256), ints(u8, {}, 0, 256)})}));

  // Cast. to(t): the attribute for dtype t; to_test: the test dtype.
  auto to = [](DType t) { return [t](DType) { return Attr("to", int64_t{ir::OnnxFromDType(t)}); }; };
  auto to_test = [](DType t) { return Attr("to", int64_t{ir::OnnxFromDType(t)}); };
  auto from = [](Maker m) { return [m](DType, std::mt19937& rng) { return std::vector<Tensor>{m(rng)}; }; };
  // Integers to the test dtype: through float as the CPU (2^30 + 2^22 + 1 is
  // 2^30 in bf16, not 2^30 + 2^23), fp16 ties to even (2049, 2051), 65520
  // and beyond to inf, 2^53 + 1 and the int64 ends.
  const std::vector<std::pair<int64_t, int64_t>> wide = {
      {1, (int64_t{1} << 30) + (1 << 22) + 1}, {2, -((int64_t{1} << 30) + (1 << 22) + 1)}, {3, 2049}, {4, 2051},
      {5, 65504}, {6, 65519}, {8, 65520}, {9, 70000}, {10, -70000}, {11, (int64_t{1} << 24) + 1},
      {12, (int64_t{1} << 53) + 1}, {13, int64_t{1} << 62}, {15, -1}, {16, 0}, {17, 16777219}};
  c.push_back(exact(Case{"CastInt64ToTestDType", OpKind::kCast, to_test, from(ends(i64, {3, 50}, -1000000, 1000000, wide))}));
  std::vector<std::pair<int64_t, int64_t>> wide32;
  for (const auto& [i, v] : wide)
    if (v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max()) wide32.push_back({i, v});
  c.push_back(exact(Case{"CastInt32ToTestDType", OpKind::kCast, to_test, from(ends(i32, {3, 50}, -1000000, 1000000, wide32))}));
  c.push_back(exact(Case{"CastInt8ToTestDType", OpKind::kCast, to_test, from(ints(i8, {4, 64}, -128, 128))}));
  c.push_back(exact(Case{"CastUInt8ToTestDType", OpKind::kCast, to_test, from(ints(u8, {4, 64}, 0, 256))}));
  // Bools: any nonzero byte is true (bytes 2 and 255 planted).
  auto bools = Maker([](std::mt19937& rng) {
    Tensor m = Mask({4, 33}, rng);
    m.data<uint8_t>()[3] = 2;
    m.data<uint8_t>()[10] = 255;
    return m;
  });
  c.push_back(exact(Case{"CastBoolToTestDType", OpKind::kCast, to_test, from(bools)}));
  c.push_back(exact(Case{"CastBoolToInt64", OpKind::kCast, to(i64), from(bools)}));
  c.push_back(exact(Case{"CastBoolToUInt8", OpKind::kCast, to(u8), from(bools)}));
  // The test dtype to integers: truncation toward zero, saturation at the
  // ends (fp16 holds everything past 65504 as inf), NaN -> 0.
  auto floats = [](std::vector<double> special, double lo, double hi) {
    return [special, lo, hi](DType t, std::mt19937& rng) {
      return std::vector<Tensor>{WithSpecials(t, {3, 60}, lo, hi, special, rng)};
    };
  };
  const std::vector<double> common = {NAN, INFINITY, -INFINITY, -0.0, 0.5, -0.5, 0.99, -1.99, 3e38, -3e38};
  auto plus = [common](std::vector<double> more) {
    std::vector<double> v = common;
    v.insert(v.end(), more.begin(), more.end());
    return v;
  };
  c.push_back(exact(Case{"CastTestDTypeToInt64", OpKind::kCast, to(i64),
                         floats(plus({9.3e18, -9.3e18, 9223372036854775808.0, -9223372036854775808.0, 4.6e18, 1e10,
                                      -1e10, 65519.0}),
                                -70000, 70000)}));
  c.push_back(exact(Case{"CastTestDTypeToInt32", OpKind::kCast, to(i32),
                         floats(plus({2147483520.0, 2147483648.0, -2147483648.0, -2147483904.0, 1e10, -1e10}), -70000,
                                70000)}));
  c.push_back(exact(Case{"CastTestDTypeToInt8", OpKind::kCast, to(i8),
                         floats(plus({127.5, 126.9, -128.5, -129.0, -127.9}), -300, 300)}));
  c.push_back(exact(Case{"CastTestDTypeToUInt8", OpKind::kCast, to(u8),
                         floats(plus({-0.9, 255.5, 256.0, 254.99}), -300, 300)}));
  c.push_back(exact(Case{"CastTestDTypeToBool", OpKind::kCast, to(DType::kBool),
                         [](DType t, std::mt19937& rng) {
                           Tensor x = WithSpecials(t, {3, 60}, -2, 2, {NAN, INFINITY, -INFINITY, -0.0, 1e-30, 6e-8}, rng);
                           for (int64_t i = 6; i < x.num_elements(); i += 5) ir::SetElementFromDouble(x, i, 0.0);
                           return std::vector<Tensor>{x};
                         }}));
  // float64: to the test dtype through float (1 + 2^-11 + 2^-40 is 1 in
  // fp16, 1 + 2^-8 + 2^-40 is 1 in bf16), NaN and inf, beyond float's range;
  // the test dtype to float64 exactly; float64 <-> int64.
  const double ulp40 = std::ldexp(1.0, -40);
  c.push_back(exact(Case{"CastFloat64ToTestDType", OpKind::kCast, to_test,
                         [ulp40](DType, std::mt19937& rng) {
                           return std::vector<Tensor>{WithSpecials(
                               DType::kFloat64, {3, 40}, -70000, 70000,
                               {NAN, -NAN, INFINITY, -INFINITY, -0.0, 1.0 + std::ldexp(1.0, -11) + ulp40,
                                1.0 + std::ldexp(1.0, -8) + ulp40, 1e300, -1e300, 1e-50, 65519.99, 65520.0,
                                0.1, 1.0 / 3.0},
                               rng)};
                         }}));
  c.push_back(exact(Case{"CastTestDTypeToFloat64", OpKind::kCast, to(DType::kFloat64),
                         floats({NAN, INFINITY, -INFINITY, -0.0, 1e-30}, -70000, 70000)}));
  c.push_back(exact(Case{"CastFloat64ToInt64", OpKind::kCast, to(i64),
                         [](DType, std::mt19937& rng) {
                           return std::vector<Tensor>{WithSpecials(
                               DType::kFloat64, {3, 40}, -1e17, 1e17,
                               {NAN, INFINITY, -INFINITY, 9.3e18, -9.3e18, 9223372036854775808.0,
                                -9223372036854775808.0, 9223372036854774784.0, 4503599627370495.5, -7.9, -0.0},
                               rng)};
                         }}));
  c.push_back(exact(Case{"CastInt64ToFloat64", OpKind::kCast, to(DType::kFloat64),
                         from(ends(i64, {3, 50}, -1000000, 1000000, wide))}));
  // Integer to integer: wraps (two's complement), sign-extends; -> bool is x != 0.
  c.push_back(exact(Case{"CastInt64ToInt32Wrap", OpKind::kCast, to(i32),
                         from(ends(i64, {3, 50}, -1000000000000, 1000000000000))}));
  c.push_back(exact(Case{"CastInt32ToInt64", OpKind::kCast, to(i64), from(ends(i32, {3, 50}, -1000000, 1000000))}));
  c.push_back(exact(Case{"CastInt64ToInt8Wrap", OpKind::kCast, to(i8), from(ends(i64, {3, 50}, -1000000, 1000000))}));
  c.push_back(exact(Case{"CastInt32ToUInt8Wrap", OpKind::kCast, to(u8), from(ends(i32, {3, 50}, -1000, 1000))}));
  c.push_back(exact(Case{"CastUInt8ToInt8", OpKind::kCast, to(i8), from(ints(u8, {4, 64}, 0, 256))}));
  c.push_back(exact(Case{"CastInt8ToInt64", OpKind::kCast, to(i64), from(ints(i8, {4, 64}, -128, 128))}));
  c.push_back(exact(Case{"CastInt64ToBool", OpKind::kCast, to(DType::kBool), from(ends(i64, {3, 50}, -3, 3))}));
  c.push_back(exact(Case{"CastUInt8ToBool", OpKind::kCast, to(DType::kBool), from(ints(u8, {4, 64}, 0, 3))}));
}

}  // namespace

// Added with the trainer on CUDA: MeanSquaredError(+Grad), Pad, Tile, Resize(+Grad),
// Not, Mod, integer/bool compares, Shape, ConstantOfShape, Constant, Range;
// later GatherND/ScatterND, GatherElements/ScatterElements and their grads,
// the integer arithmetic and the casts beyond fp32/fp16/bf16 (above).
// Data movement, Not, Mod, compares and the plan-time values byte for byte;
// the float math by normalised error (Resize runs the CPU's double
// arithmetic in the CPU's order, so it should match bitwise too).
void AddLossPadResizeIntegerCases(std::vector<Case>& c) {
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
  // PadGrad(dY, x_shape, pads, axes?): both sides sum in double in dY order,
  // so the bits match.
  auto pad_grad = [](Ints dy, Ints x, Ints pads, Ints axes) {
    return [=](DType t, std::mt19937& rng) {
      std::vector<Tensor> in{Random(t, dy, rng), IntVector(x), IntVector(pads)};
      if (!axes.empty()) in.push_back(IntVector(axes));
      return in;
    };
  };
  c.push_back(exact(Case{"PadGradReflect", OpKind::kPadGrad, mode("reflect"),
                         pad_grad({2, 11, 12}, {2, 5, 6}, {0, 3, 4, 0, 3, 2}, {}), 1, {false, true, true}}));
  c.push_back(exact(Case{"PadGradEdgeAxes", OpKind::kPadGrad, mode("edge"),
                         pad_grad({2, 5, 4, 8}, {2, 3, 4, 5}, {2, 1, 1, 1}, {-1, 1}), 1, {false, true, true, true}}));
  c.push_back(exact(Case{"PadGradWrapWide", OpKind::kPadGrad, mode("wrap"),
                         pad_grad({10, 15}, {3, 4}, {2, 5, 5, 6}, {}), 1, {false, true, true}}));
  c.push_back(exact(Case{"PadGradConstantCrop", OpKind::kPadGrad, NoAttrs,
                         pad_grad({4, 7}, {4, 6}, {1, -2, -1, 3}, {}), 1, {false, true, true}}));
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
  c.push_back(Case{"ResizeCubicAntialiasDown", OpKind::kResize,
                   attrs({{"mode", std::string("cubic")}, {"antialias", int64_t{1}}, {"exclude_outside", int64_t{1}}}),
                   resize({1, 2, 11, 12}, {1, 1, 0.4f, 0.75f}, {}), 1, params});
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
  c.push_back(Case{"ResizeGradLinearAntialias", OpKind::kResizeGrad,
                   attrs({{"mode", std::string("linear")}, {"antialias", int64_t{1}}}),
                   resize_grad({2, 3, 4, 3}, {2, 3, 10, 7}, {}, {2, 3, 4, 3}), 1, grad_params});
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

  AddIntegerArithmeticAndCastCases(c);

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

  // GatherElements/ScatterElements and their gradients: int64 and int32
  // indices in [-lo, hi) (negative ones wrap), many repeats per target,
  // indices smaller than the data off the axis, more index elements than a
  // tile of the sort (256). The sums and combines run in the CPU's order
  // with its per-step rounding: bitwise, except add/mul (normalised error,
  // as ScatterNDAdd) and NaN payloads (fp16/bf16 NaNs may come back with
  // other bits, so those cases are judged by normalised error, which
  // compares NaN positions).
  // el(data, idx, lo, hi, updates?): data (or dY) of the test dtype, indices, updates.
  auto el = [](Ints data, Ints idx, int64_t lo, int64_t hi, DType idx_t, bool updates, DType data_t = DType::kUndefined) {
    return [=](DType t, std::mt19937& rng) {
      const DType dt = data_t == DType::kUndefined ? t : data_t;
      auto values = [&](Ints d) { return ir::IsFloat(dt) ? Random(dt, d, rng, -2, 2) : RandomInts(dt, d, -9, 10, rng); };
      std::vector<Tensor> in{values(data), Indices(idx_t, idx, lo, hi, rng)};
      if (updates) in.push_back(values(idx));
      return in;
    };
  };
  auto axis_attrs = [](int64_t axis, std::string reduction = "") {
    return [=](DType) {
      ir::Attributes a = Attr("axis", axis);
      if (!reduction.empty()) a.Set("reduction", reduction);
      return a;
    };
  };
  c.push_back(exact(Case{"GatherElementsAxis1", OpKind::kGatherElements, axis_attrs(1),
                         el({4, 9, 5}, {4, 12, 5}, -9, 9, DType::kInt64, false)}));
  c.push_back(exact(Case{"GatherElementsSmallerIndicesInt32", OpKind::kGatherElements, axis_attrs(-1),
                         el({6, 7}, {4, 10}, -7, 7, DType::kInt32, false)}));
  c.push_back(exact(Case{"GatherElementsAxis0Int64Data", OpKind::kGatherElements, axis_attrs(0),
                         el({5, 3}, {8, 2}, -5, 5, DType::kInt64, false, DType::kInt64)}));
  // GatherElementsGrad(dY, indices, data_shape).
  auto el_grad = [el](Ints dy, int64_t lo, int64_t hi, DType idx_t, Ints data) {
    return [=](DType t, std::mt19937& rng) {
      std::vector<Tensor> in = el(dy, dy, lo, hi, idx_t, false)(t, rng);
      in.push_back(IntVector(data));
      return in;
    };
  };
  c.push_back(exact(Case{"GatherElementsGradAxis1", OpKind::kGatherElementsGrad, axis_attrs(1),
                         el_grad({4, 30, 5}, -9, 9, DType::kInt64, {4, 9, 5}), 1, {false, false, true}}));
  c.push_back(exact(Case{"GatherElementsGradSmallerInt32", OpKind::kGatherElementsGrad, axis_attrs(-1),
                         el_grad({3, 40}, -6, 6, DType::kInt32, {5, 6}), 1, {false, false, true}}));
  c.push_back(exact(Case{"GatherElementsGradAxis0Tiles", OpKind::kGatherElementsGrad, axis_attrs(0),
                         el_grad({300, 4}, -10, 10, DType::kInt64, {10, 4}), 1, {false, false, true}}));
  // ScatterElements: none (the last duplicate wins), add, mul, max, min.
  c.push_back(exact(Case{"ScatterElementsDuplicates", OpKind::kScatterElements, axis_attrs(1),
                         el({5, 8}, {5, 6}, -3, 3, DType::kInt64, true)}));
  c.push_back(exact(Case{"ScatterElementsNoneInt32IndicesInt64Data", OpKind::kScatterElements, axis_attrs(0),
                         el({6, 4}, {9, 3}, -6, 6, DType::kInt32, true, DType::kInt64)}));
  c.push_back(Case{"ScatterElementsAdd", OpKind::kScatterElements, axis_attrs(1, "add"),
                   el({4, 9, 5}, {4, 30, 5}, -9, 9, DType::kInt64, true)});
  c.push_back(Case{"ScatterElementsAddTiles", OpKind::kScatterElements, axis_attrs(0, "add"),
                   el({10, 4}, {300, 4}, -10, 10, DType::kInt32, true)});
  c.push_back(Case{"ScatterElementsMul", OpKind::kScatterElements, axis_attrs(-1, "mul"),
                   [](DType t, std::mt19937& rng) {
                     return std::vector<Tensor>{Random(t, {6, 7}, rng, 0.5, 1.5), Indices(DType::kInt64, {6, 12}, -7, 7, rng),
                                                Random(t, {6, 12}, rng, 0.5, 1.5)};
                   }});
  c.push_back(exact(Case{"ScatterElementsMax", OpKind::kScatterElements, axis_attrs(1, "max"),
                         el({5, 8}, {5, 20}, -8, 8, DType::kInt64, true)}));
  c.push_back(exact(Case{"ScatterElementsMinAxis0", OpKind::kScatterElements, axis_attrs(0, "min"),
                         el({6, 4}, {20, 4}, -6, 6, DType::kInt32, true)}));
  // NaN in the data and in the updates: max keeps a NaN it holds and takes a NaN update.
  c.push_back(Case{"ScatterElementsMaxNaN", OpKind::kScatterElements, axis_attrs(1, "max"),
                   [el](DType t, std::mt19937& rng) {
                     std::vector<Tensor> in = el({5, 8}, {5, 20}, -8, 8, DType::kInt64, true)(t, rng);
                     for (int64_t i = 0; i < in[0].num_elements(); i += 9) ir::SetElementFromDouble(in[0], i, NAN);
                     for (int64_t i = 3; i < in[2].num_elements(); i += 11) ir::SetElementFromDouble(in[2], i, NAN);
                     return in;
                   }});
  c.push_back(exact(Case{"ScatterElementsMinInt32", OpKind::kScatterElements, axis_attrs(1, "min"),
                         el({4, 6}, {4, 15}, -6, 6, DType::kInt64, true, DType::kInt32)}));
  c.push_back(exact(Case{"ScatterElementsMulInt64", OpKind::kScatterElements, axis_attrs(0, "mul"),
                         el({3, 5}, {6, 5}, -3, 3, DType::kInt64, true, DType::kInt64)}));
  // ScatterElementsGrad(dY, indices) -> dData, dUpdates.
  c.push_back(exact(Case{"ScatterElementsGradNone", OpKind::kScatterElementsGrad, axis_attrs(1),
                         el({5, 8}, {5, 6}, -3, 3, DType::kInt64, false), 2}));
  c.push_back(exact(Case{"ScatterElementsGradAddInt32", OpKind::kScatterElementsGrad, axis_attrs(0, "add"),
                         el({6, 4}, {9, 3}, -6, 6, DType::kInt32, false), 2}));
  Case grad_no_updates{"ScatterElementsGradNoneNoDUpdates", OpKind::kScatterElementsGrad, axis_attrs(-1),
                       el({4, 9}, {3, 20}, -9, 9, DType::kInt64, false), 2};
  grad_no_updates.unused = {false, true};
  c.push_back(exact(grad_no_updates));

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

}  // namespace amptrain::kernels::devtest
