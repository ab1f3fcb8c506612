// The direct kernels that are not the reference's bits (kernels/cpu/
// direct_erf.cc, direct_loss.cc, direct_layernorm.cc), in fp32, bf16 and fp16 where they take
// them: Erf, Gelu, Tanh, Sigmoid, Silu and Pow x^3 within one ulp of the exact
// value, SoftmaxCrossEntropyLoss and its gradient, LayerNormalization and its
// gradient within one ulp of the reference; specials as the reference gives them, the same bits on 1 and 2
// threads, the registry's pick, and what they decline. (The bit-exact direct
// kernels: direct_test.cc.)
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <random>

#include "tests/kernels/direct_test_util.h"
#include "tests/kernels/grad_test_util.h"
#include "tests/kernels/kernel_paths.h"

namespace amptrain::kernels::testing {
namespace {

using gradtest::Options;
using gradtest::RunKernel;
using ir::Attributes;
using ir::Tensor;

class DirectMath : public ::testing::TestWithParam<KernelPath> {};
INSTANTIATE_DIRECT_PATHS(DirectMath);

// One unit in the last place of `t` at v (its subnormal step below the normal range).
double Ulp(DType t, double v) {
  const int digits = t == DType::kFloat32 ? 24 : t == DType::kFloat16 ? 11 : 8;
  const int min_exp = t == DType::kFloat16 ? -14 : -126;
  int e = 0;
  std::frexp(v, &e);  // v = m 2^e, 0.5 <= |m| < 1
  return std::ldexp(1.0, std::max(e - 1, min_exp) - (digits - 1));
}

// What a sweep takes from the reference rather than the exact value: NaN
// where either has NaN, and where `special`, the reference's value and sign
// (zeros, infinities). True when the element was checked here.
bool CheckedAgainstReference(double xv, double have, double want_ref, bool special) {
  if (std::isnan(have) || std::isnan(want_ref)) {
    EXPECT_EQ(std::isnan(have), std::isnan(want_ref)) << "x = " << xv;
    return true;
  }
  if (!special) return false;
  EXPECT_EQ(have, want_ref) << "x = " << xv;
  EXPECT_EQ(std::signbit(have), std::signbit(want_ref)) << "x = " << xv;
  return true;
}

// Erf and Erf's UnaryGrad (direct_erf.cc: polynomials and exp in double)
// within one ulp of the exact value (double-precision erf and exp of the
// same input) over a dense sweep, the specials as the reference gives
// them, the same bits on 1 and 2 threads, and the registry's pick.
TEST_P(DirectMath, ErfIsCorrectlyRoundedToAnUlp) {
  const DType t = GetParam().dtype;
  const int64_t n = 200003;
  Tensor x = *Tensor::Zeros(t, {n}), dy = *Tensor::Zeros(t, {n});
  for (int64_t i = 0; i < n; ++i) {
    const double u = -6.0 + 12.0 * static_cast<double>(i) / static_cast<double>(n - 1);
    ir::SetElementFromDouble(x, i, i % 5 == 0 ? std::ldexp(u, -20) : u);  // some tiny ones too
    ir::SetElementFromDouble(dy, i, 1.0 + 0.25 * std::sin(static_cast<double>(i)));
  }
  const double inf = std::numeric_limits<double>::infinity();
  const double special[] = {0.0, -0.0, inf, -inf, std::numeric_limits<double>::quiet_NaN(), 1.0, 3.93, -3.92, 10.2, 9.0};
  for (size_t k = 0; k < std::size(special); ++k) ir::SetElementFromDouble(x, static_cast<int64_t>(k), special[k]);
  Attributes grad;
  grad.Set("op", std::string("Erf"));
  Options one{.impl = "direct", .threads = 1}, two{.impl = "direct", .threads = 2}, any{.impl = ""};
  for (bool backward : {false, true}) {
    const OpKind op = backward ? OpKind::kUnaryGrad : OpKind::kErf;
    const Attributes& a = backward ? grad : Attributes{};
    const std::vector<Tensor> in = backward ? std::vector<Tensor>{dy, x} : std::vector<Tensor>{x};
    auto got = RunKernel(op, a, in, two), got1 = RunKernel(op, a, in, one), picked = RunKernel(op, a, in, any);
    auto ref = RunKernel(op, a, in, Options{});
    ASSERT_TRUE(got.ok() && got1.ok() && picked.ok() && ref.ok()) << got.status().ToString();
    EXPECT_TRUE(SameBits((*got)[0], (*got1)[0])) << "1 and 2 threads differ";
    EXPECT_TRUE(SameBits((*got)[0], (*picked)[0])) << "the registry's pick is not the direct kernel";
    int64_t worst_at = -1;
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double xv = x.GetAsDouble(i), have = (*got)[0].GetAsDouble(i);
      const float xf = static_cast<float>(xv);
      const double exact = backward ? dy.GetAsDouble(i) * 1.1283791670955126 *
                                          std::exp(-static_cast<double>(xf * xf))  // x^2 rounded as the kernels do
                                    : std::erf(xv);
      if (std::isnan(exact) || std::isnan(have)) {
        EXPECT_EQ(std::isnan(exact), std::isnan(have)) << "x = " << xv;
        EXPECT_EQ(std::isnan(have), std::isnan((*ref)[0].GetAsDouble(i))) << "x = " << xv << ": NaN where the reference has none";
        continue;
      }
      const double err = std::abs(have - exact) / Ulp(t, exact);
      if (err > worst) worst = err, worst_at = i;
    }
    EXPECT_LE(worst, 1.0) << (backward ? "UnaryGrad" : "Erf") << " at x = " << x.GetAsDouble(worst_at);
    // Signed zeros and infinities: the reference's bits.
    for (int64_t k = 0; k < 4; ++k)
      EXPECT_EQ(std::signbit((*got)[0].GetAsDouble(k)), std::signbit((*ref)[0].GetAsDouble(k))) << "x = " << special[k];
  }
}

// The direct kernel's output for `in` (two threads) and the reference's,
// after checking that one thread gives the same bits and that the registry
// picks the direct kernel; nullopt (a failure recorded) when a run fails.
std::optional<std::pair<Tensor, Tensor>> DirectAndReference(OpKind op, const Attributes& a, const std::vector<Tensor>& in) {
  Options direct{.impl = "direct"}, one{.impl = "direct", .threads = 1}, any{.impl = ""};
  auto got = RunKernel(op, a, in, direct), got1 = RunKernel(op, a, in, one), picked = RunKernel(op, a, in, any);
  auto ref = RunKernel(op, a, in, Options{});
  if (!got.ok() || !got1.ok() || !picked.ok() || !ref.ok()) {
    ADD_FAILURE() << ir::Schema(op).name << ": " << got.status().ToString();
    return std::nullopt;
  }
  EXPECT_TRUE(SameBits((*got)[0], (*got1)[0])) << "1 and 2 threads differ";
  EXPECT_TRUE(SameBits((*got)[0], (*picked)[0])) << "the registry's pick is not the direct kernel";
  return std::make_pair(std::move((*got)[0]), std::move((*ref)[0]));
}

// GELU's sweep: x over [-half_width, half_width] in n steps, its first five
// replaced by 0, -0, inf, -inf and NaN; dY (for the gradient) 1 + sin(i)/4.
std::pair<Tensor, Tensor> GeluSweep(DType t, int64_t n, double half_width) {
  Tensor x = *Tensor::Zeros(t, {n}), dy = *Tensor::Zeros(t, {n});
  for (int64_t i = 0; i < n; ++i) {
    ir::SetElementFromDouble(x, i, -half_width + 2.0 * half_width * static_cast<double>(i) / static_cast<double>(n - 1));
    ir::SetElementFromDouble(dy, i, 1.0 + 0.25 * std::sin(static_cast<double>(i)));
  }
  const double inf = std::numeric_limits<double>::infinity();
  const double special[] = {0.0, -0.0, inf, -inf, std::numeric_limits<double>::quiet_NaN()};
  for (size_t k = 0; k < std::size(special); ++k) ir::SetElementFromDouble(x, static_cast<int64_t>(k), special[k]);
  return {std::move(x), std::move(dy)};
}

// Gelu and GeluGrad (the exact, erf-based GELU; direct_erf.cc) within one
// ulp of the exact value in double over a dense sweep for x > -5.5 (below,
// where |gelu| < 1.2e-7, within 1.2e-7: 1 + erf cancels to 0 from x = -5.56,
// here as in the reference's fp32 erf; GeluGrad within an ulp of its terms'
// size where they cancel); NaN where the reference has NaN; the same bits on 1 and 2
// threads; the registry's pick; the tanh approximation declined.
TEST_P(DirectMath, GeluIsCorrectlyRoundedToAnUlp) {
  const DType t = GetParam().dtype;
  const int64_t n = 120007;
  const auto [x, dy] = GeluSweep(t, n, 8.0);
  for (bool backward : {false, true}) {
    const OpKind op = backward ? OpKind::kGeluGrad : OpKind::kGelu;
    const std::vector<Tensor> in = backward ? std::vector<Tensor>{dy, x} : std::vector<Tensor>{x};
    auto runs = DirectAndReference(op, {}, in);
    ASSERT_TRUE(runs);
    const auto& [got, ref] = *runs;
    double worst = 0, worst_x = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double xv = x.GetAsDouble(i), have = got.GetAsDouble(i);
      const double cdf = 0.5 * std::erfc(-xv / std::sqrt(2.0));
      const double exact = backward ? dy.GetAsDouble(i) * (cdf + xv * std::exp(-0.5 * xv * xv) / std::sqrt(2 * M_PI))
                                    : xv * cdf;
      const double want_ref = ref.GetAsDouble(i);
      if (std::isnan(have) || std::isnan(want_ref)) {
        EXPECT_EQ(std::isnan(have), std::isnan(want_ref)) << "x = " << xv;
        continue;
      }
      if (xv <= -5.5) {  // |exact| < 1.2e-7 here, and 0 is within that of it
        EXPECT_LE(std::abs(have - exact), 1.2e-7) << "x = " << xv;
        continue;
      }
      // GeluGrad's two terms cancel at its zero (x = -0.7518): there one ulp
      // of the terms' size is what any fp32 evaluation can promise.
      const double size = backward ? std::abs(dy.GetAsDouble(i)) *
                                         (cdf + std::abs(xv) * std::exp(-0.5 * xv * xv) / std::sqrt(2 * M_PI))
                                   : std::abs(exact);
      const double err = std::abs(have - exact) / std::max(Ulp(t, exact), Ulp(t, size));
      if (err > worst) worst = err, worst_x = xv;
    }
    EXPECT_LE(worst, 1.0) << (backward ? "GeluGrad" : "Gelu") << " at x = " << worst_x;
  }
}

// Gelu with approximate = tanh (GPT-2's gelu_new; direct_erf.cc evaluates it
// as x sigmoid(2u)) and its gradient within one ulp of the exact value
// (long double) over a dense sweep, the far negative tail included, where
// the reference's 1 + tanh(u) cancels to 0; infinities and NaN as the
// reference gives them; the same bits on 1 and 2 threads; the registry's pick.
TEST_P(DirectMath, GeluTanhIsCorrectlyRoundedToAnUlp) {
  const DType t = GetParam().dtype;
  const int64_t n = 120011;
  const auto [x, dy] = GeluSweep(t, n, 12.0);
  Attributes a;
  a.Set("approximate", std::string("tanh"));
  Options direct{.impl = "direct"};
  for (bool backward : {false, true}) {
    const OpKind op = backward ? OpKind::kGeluGrad : OpKind::kGelu;
    const std::vector<Tensor> in = backward ? std::vector<Tensor>{dy, x} : std::vector<Tensor>{x};
    auto runs = DirectAndReference(op, a, in);
    ASSERT_TRUE(runs);
    const auto& [got, ref] = *runs;
    double worst = 0, worst_x = 0;
    for (int64_t i = 0; i < n; ++i) {
      const long double xv = x.GetAsDouble(i);
      const double have = got.GetAsDouble(i);
      if (!std::isfinite(static_cast<double>(xv))) {  // +inf: +inf forward; -inf, NaN: NaN (the reference's)
        const double want = ref.GetAsDouble(i);
        EXPECT_TRUE(std::isnan(want) ? std::isnan(have) : have == want) << "x = " << static_cast<double>(xv);
        continue;
      }
      const long double u = 0.7978845608028654L * (xv + 0.044715L * xv * xv * xv);
      const long double e = std::exp(-2.0L * u), s = 1.0L / (1.0L + e);  // sigmoid(2u)
      const long double du = 0.7978845608028654L * (1.0L + 3.0L * 0.044715L * xv * xv);
      const long double slope = s + xv * s * (1.0L - s) * 2.0L * du;
      const double exact = static_cast<double>(backward ? dy.GetAsDouble(i) * slope : xv * s);
      // The gradient's two terms cancel at its zero (x = -0.75): one ulp of the terms' size there.
      const double size =
          backward ? static_cast<double>(std::abs(dy.GetAsDouble(i)) * (s + std::abs(xv) * s * (1.0L - s) * 2.0L * du))
                   : std::abs(exact);
      const double err = std::abs(have - exact) / std::max(Ulp(t, exact), Ulp(t, size));
      if (err > worst) worst = err, worst_x = static_cast<double>(xv);
    }
    EXPECT_LE(worst, 1.0) << (backward ? "GeluGrad" : "Gelu") << " (tanh) at x = " << worst_x;
  }
  Attributes bad;
  bad.Set("approximate", std::string("cubic"));
  EXPECT_FALSE(RunKernel(OpKind::kGelu, bad, {x}, direct).ok());
}

// Tanh and Sigmoid (in double on ExpNegative) and Pow with a constant
// exponent of 3 within one ulp of the exact value over a dense sweep, Pow's
// x^1 and x^2 the reference's bits; NaN, infinities and signed zeros as the reference gives them; other
// exponents, and an exponent that is not a constant, declined.
TEST_P(DirectMath, TanhSigmoidAndSmallPowersWithinAnUlp) {
  const DType t = GetParam().dtype;
  const int64_t n = 100003;
  Tensor x = *Tensor::Zeros(t, {n});
  for (int64_t i = 0; i < n; ++i) {
    const double u = -12.0 + 24.0 * static_cast<double>(i) / static_cast<double>(n - 1);
    ir::SetElementFromDouble(x, i, i % 7 == 0 ? std::ldexp(u, -18) : u);  // tiny ones too (the series)
  }
  const double inf = std::numeric_limits<double>::infinity();
  const double special[] = {0.0, -0.0, inf, -inf, std::numeric_limits<double>::quiet_NaN()};
  for (size_t k = 0; k < std::size(special); ++k) ir::SetElementFromDouble(x, static_cast<int64_t>(k), special[k]);
  auto exponent = [](double e) {
    Tensor c = *Tensor::Zeros(DType::kFloat32, {});
    ir::SetElementFromDouble(c, 0, e);
    return c;
  };
  Options direct{.impl = "direct"}, one{.impl = "direct", .threads = 1}, any{.impl = ""};
  // tanh, sigmoid, x^1, x^2, x^3
  const OpKind ops[] = {OpKind::kTanh, OpKind::kSigmoid, OpKind::kPow, OpKind::kPow, OpKind::kPow};
  const char* names[] = {"Tanh", "Sigmoid", "x^1", "x^2", "x^3"};
  for (int which = 0; which < 5; ++which) {
    const OpKind op = ops[which];
    const bool pow = op == OpKind::kPow;
    const std::vector<Tensor> in = pow ? std::vector<Tensor>{x, exponent(which - 1)} : std::vector<Tensor>{x};
    Options d = direct, d1 = one, a = any;
    if (pow) d.constant_inputs = d1.constant_inputs = a.constant_inputs = 0b10;
    auto got = RunKernel(op, {}, in, d), got1 = RunKernel(op, {}, in, d1), picked = RunKernel(op, {}, in, a);
    auto ref = RunKernel(op, {}, in, Options{});
    ASSERT_TRUE(got.ok() && got1.ok() && picked.ok() && ref.ok()) << names[which] << ": " << got.status().ToString();
    EXPECT_TRUE(SameBits((*got)[0], (*got1)[0])) << "1 and 2 threads differ";
    EXPECT_TRUE(SameBits((*got)[0], (*picked)[0])) << "the registry's pick is not the direct kernel";
    if (which == 2 || which == 3) {
      EXPECT_TRUE(SameBits((*got)[0], (*ref)[0])) << names[which] << " is not the reference's";
      continue;
    }
    double worst = 0, worst_x = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double xv = x.GetAsDouble(i), have = (*got)[0].GetAsDouble(i), want_ref = (*ref)[0].GetAsDouble(i);
      if (CheckedAgainstReference(xv, have, want_ref, std::isinf(xv) || xv == 0)) continue;
      const double exact = which == 0   ? std::tanh(xv)
                           : which == 1 ? 1.0 / (1.0 + std::exp(-xv))
                                        : static_cast<double>(static_cast<long double>(xv) * xv * xv);
      if (std::isinf(have) && std::isinf(want_ref)) continue;  // an fp16 cube past 65504
      const double err = std::abs(have - exact) / Ulp(t, exact);
      if (err > worst) worst = err, worst_x = xv;
    }
    EXPECT_LE(worst, 1.0) << names[which] << " at x = " << worst_x;
  }
  Options d = direct;
  d.constant_inputs = 0b10;
  EXPECT_FALSE(RunKernel(OpKind::kPow, {}, {x, exponent(2.3)}, d).ok());
  EXPECT_FALSE(RunKernel(OpKind::kPow, {}, {x, exponent(4.25)}, d).ok());
  EXPECT_FALSE(RunKernel(OpKind::kPow, {}, {x, exponent(2.0)}, direct).ok()) << "a run-time exponent";
}

// Pow with a constant exponent k/4 (LRN's 0.75 and its gradient's -0.25,
// square roots, reciprocals) within one ulp of the exact value (long double
// powl) over values from tiny to huge, negative ones too (NaN for a
// fractional power); the zeros, the infinities and NaN as the reference gives them; the same bits on
// 1 and 2 threads and in place; the registry's pick.
TEST_P(DirectMath, QuarterPowersWithinAnUlp) {
  const DType t = GetParam().dtype;
  const int64_t n = 60001;
  Tensor x = *Tensor::Zeros(t, {n});
  for (int64_t i = 0; i < n; ++i) {
    const double u = std::ldexp(1.0 + static_cast<double>(i % 1000) / 1000.0, static_cast<int>(i % 61) - 30);
    ir::SetElementFromDouble(x, i, i % 11 == 0 ? -u : u);
  }
  const double inf = std::numeric_limits<double>::infinity();
  const double special[] = {0.0, -0.0, inf, -inf, std::numeric_limits<double>::quiet_NaN(), 1.0, -1.0};
  for (size_t k = 0; k < std::size(special); ++k) ir::SetElementFromDouble(x, static_cast<int64_t>(k), special[k]);
  for (double e : {0.75, -0.25, 0.5, -0.5, -1.0, 1.25, -2.75, 4.0, 0.0}) {
    SCOPED_TRACE(e);
    Tensor c = *Tensor::Zeros(DType::kFloat32, {});
    ir::SetElementFromDouble(c, 0, e);
    Options direct{.impl = "direct", .constant_inputs = 0b10}, one = direct, any{.impl = "", .constant_inputs = 0b10};
    one.threads = 1;
    auto got = RunKernel(OpKind::kPow, {}, {x, c}, direct), got1 = RunKernel(OpKind::kPow, {}, {x, c}, one);
    auto picked = RunKernel(OpKind::kPow, {}, {x, c}, any), ref = RunKernel(OpKind::kPow, {}, {x, c}, Options{});
    Options over = direct;
    over.in_place = true;
    auto in_place = RunKernel(OpKind::kPow, {}, {x, c}, over);
    ASSERT_TRUE(got.ok() && got1.ok() && picked.ok() && ref.ok() && in_place.ok()) << got.status().ToString();
    EXPECT_TRUE(SameBits((*got)[0], (*got1)[0])) << "1 and 2 threads differ";
    EXPECT_TRUE(SameBits((*got)[0], (*in_place)[0])) << "in place (the output over the input) differs";
    EXPECT_TRUE(SameBits((*got)[0], (*picked)[0])) << "the registry's pick is not the direct kernel";
    double worst = 0, worst_x = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double xv = x.GetAsDouble(i), have = (*got)[0].GetAsDouble(i), want_ref = (*ref)[0].GetAsDouble(i);
      const bool special = std::isinf(have) || std::isinf(want_ref) || xv == 0 || std::isinf(xv) || have == 0 || want_ref == 0;
      if (CheckedAgainstReference(xv, have, want_ref, special)) continue;
      const double exact = static_cast<double>(std::pow(static_cast<long double>(xv), static_cast<long double>(e)));
      const double err = std::abs(have - exact) / Ulp(t, exact);
      if (err > worst) worst = err, worst_x = xv;
    }
    EXPECT_LE(worst, 1.0) << "x^" << e << " at x = " << worst_x;
  }
}

// Silu and SiluGrad (x sigmoid(x) and its derivative, in double on
// ExpNegative) within one ulp of the exact value (long double) over a dense
// sweep, tiny values included; SiluGrad within an ulp of its terms' size at
// its zero (x = -1.2785, where s and x s (1 - s) cancel); the infinities,
// NaN and signed zeros as the reference gives them; the same bits on 1 and
// 2 threads; the registry's pick.
TEST_P(DirectMath, SiluAndItsGradientWithinAnUlp) {
  const DType t = GetParam().dtype;
  const int64_t n = 100019;
  auto [x, dy] = GeluSweep(t, n, 20.0);
  for (int64_t i = 5; i < n; i += 7) ir::SetElementFromDouble(x, i, std::ldexp(x.GetAsDouble(i), -18));
  for (bool backward : {false, true}) {
    const OpKind op = backward ? OpKind::kSiluGrad : OpKind::kSilu;
    const std::vector<Tensor> in = backward ? std::vector<Tensor>{dy, x} : std::vector<Tensor>{x};
    auto runs = DirectAndReference(op, {}, in);
    ASSERT_TRUE(runs);
    const auto& [got, ref] = *runs;
    double worst = 0, worst_x = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double xd = x.GetAsDouble(i), have = got.GetAsDouble(i), want_ref = ref.GetAsDouble(i);
      if (std::isnan(have) || std::isnan(want_ref) || std::isinf(xd) || xd == 0) {
        EXPECT_TRUE(std::isnan(want_ref) ? std::isnan(have) : have == want_ref) << "x = " << xd;
        if (!std::isnan(want_ref)) {
          EXPECT_EQ(std::signbit(have), std::signbit(want_ref)) << "x = " << xd;
        }
        continue;
      }
      const long double xv = xd, s = 1.0L / (1.0L + std::exp(-xv)), g = dy.GetAsDouble(i);
      const double exact = static_cast<double>(backward ? g * (s + xv * s * (1.0L - s)) : xv * s);
      const double size = backward ? static_cast<double>(std::abs(g) * (s + std::abs(xv) * s * (1.0L - s)))
                                   : std::abs(exact);
      const double err = std::abs(have - exact) / std::max(Ulp(t, exact), Ulp(t, size));
      if (err > worst) worst = err, worst_x = xd;
    }
    EXPECT_LE(worst, 1.0) << (backward ? "SiluGrad" : "Silu") << " at x = " << worst_x;
  }
}

// SoftmaxCrossEntropyLoss and its gradient on fp32 rows (direct_loss.cc):
// not the reference's bits (exp by polynomial, the row sum in another
// order) but within one ulp of them everywhere, the loss too; the same bits
// on 1 and 2 threads; rows holding inf or NaN as the reference computes
// them, bit for bit; ignored labels; label smoothing.
struct LossCase {
  Tensor scores, labels;
  Attributes attrs;
};

LossCase LossInputs(int64_t n, int64_t c, uint32_t seed, double smoothing) {
  LossCase k{gradtest::Random({n, c}, seed, DType::kFloat32, -8.0, 8.0), *Tensor::Zeros(DType::kInt64, {n}), {}};
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < n; ++i) k.labels.data<int64_t>()[i] = i % 5 == 3 ? -100 : static_cast<int64_t>(rng() % c);
  k.attrs.Set("reduction", std::string("mean"));
  k.attrs.Set("ignore_index", int64_t{-100});
  if (smoothing > 0) k.attrs.Set("label_smoothing", static_cast<float>(smoothing));
  return k;
}

// The largest distance in ulps between a and b, element by element (NaN must match NaN).
double WorstUlps(const Tensor& a, const Tensor& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    const double x = a.GetAsDouble(i), y = b.GetAsDouble(i);
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) return INFINITY;
      continue;
    }
    if (x != y) worst = std::max(worst, std::abs(x - y) / Ulp(DType::kFloat32, y));
  }
  return worst;
}

TEST(DirectLoss, WithinAnUlpOfTheReference) {
  for (double smoothing : {0.0, 0.1}) {
    LossCase k = LossInputs(37, 1000, 81, smoothing);
    Options direct{.impl = "direct", .num_outputs = 2}, one = direct, any = direct, ref{.num_outputs = 2};
    one.threads = 1;
    any.impl = "";
    auto got = RunKernel(OpKind::kSoftmaxCrossEntropyLoss, k.attrs, {k.scores, k.labels}, direct);
    auto got1 = RunKernel(OpKind::kSoftmaxCrossEntropyLoss, k.attrs, {k.scores, k.labels}, one);
    auto picked = RunKernel(OpKind::kSoftmaxCrossEntropyLoss, k.attrs, {k.scores, k.labels}, any);
    auto want = RunKernel(OpKind::kSoftmaxCrossEntropyLoss, k.attrs, {k.scores, k.labels}, ref);
    ASSERT_TRUE(got.ok() && got1.ok() && picked.ok() && want.ok()) << got.status().ToString();
    for (int o = 0; o < 2; ++o) {
      EXPECT_TRUE(SameBits((*got)[o], (*got1)[o])) << "1 and 2 threads differ, output " << o;
      EXPECT_TRUE(SameBits((*got)[o], (*picked)[o])) << "the registry's pick is not the direct kernel";
      EXPECT_LE(WorstUlps((*got)[o], (*want)[o]), 1.0) << "output " << o << ", smoothing " << smoothing;
    }
    // The gradient of the reference's log_prob, at a scale that is not 1.
    const std::vector<Tensor> in = {Tensor::Floats({1.7f}, {}), (*want)[1], k.labels};
    auto grad = RunKernel(OpKind::kSoftmaxCrossEntropyLossGrad, k.attrs, in, Options{.impl = "direct"});
    auto grad1 = RunKernel(OpKind::kSoftmaxCrossEntropyLossGrad, k.attrs, in, Options{.impl = "direct", .threads = 1});
    auto grad_ref = RunKernel(OpKind::kSoftmaxCrossEntropyLossGrad, k.attrs, in, Options{});
    ASSERT_TRUE(grad.ok() && grad1.ok() && grad_ref.ok()) << grad.status().ToString();
    EXPECT_TRUE(SameBits((*grad)[0], (*grad1)[0])) << "1 and 2 threads differ";
    EXPECT_LE(WorstUlps((*grad)[0], (*grad_ref)[0]), 1.0) << "smoothing " << smoothing;
    for (int64_t i = 3; i < 37; i += 5)  // ignored rows: zero
      for (int64_t j = 0; j < 1000; ++j) ASSERT_EQ((*grad)[0].GetAsDouble(i * 1000 + j), 0.0);
  }
}

TEST(DirectLoss, RowsWithInfOrNaNAsTheReference) {
  LossCase k = LossInputs(6, 50, 82, 0.0);
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  ir::SetElementFromDouble(k.scores, 0 * 50 + 7, inf);   // an overflowed fp16 logit
  ir::SetElementFromDouble(k.scores, 1 * 50 + 9, -inf);
  ir::SetElementFromDouble(k.scores, 2 * 50 + 1, nan);
  k.labels.data<int64_t>()[0] = 7;
  Options direct{.impl = "direct", .num_outputs = 2}, ref{.num_outputs = 2};
  auto got = RunKernel(OpKind::kSoftmaxCrossEntropyLoss, k.attrs, {k.scores, k.labels}, direct);
  auto want = RunKernel(OpKind::kSoftmaxCrossEntropyLoss, k.attrs, {k.scores, k.labels}, ref);
  ASSERT_TRUE(got.ok() && want.ok()) << got.status().ToString();
  EXPECT_TRUE(std::isnan((*got)[0].GetAsDouble(0)));
  for (int64_t e = 0; e < 3 * 50; ++e)  // the three rows, bit for bit
    EXPECT_EQ(ElementBits((*got)[1], e), ElementBits((*want)[1], e)) << "log_prob element " << e;
  const std::vector<Tensor> in = {Tensor::Floats({1.0f}, {}), (*want)[1], k.labels};
  auto grad = RunKernel(OpKind::kSoftmaxCrossEntropyLossGrad, k.attrs, in, Options{.impl = "direct"});
  auto grad_ref = RunKernel(OpKind::kSoftmaxCrossEntropyLossGrad, k.attrs, in, Options{});
  ASSERT_TRUE(grad.ok() && grad_ref.ok());
  for (int64_t e = 0; e < 3 * 50; ++e)
    EXPECT_EQ(ElementBits((*grad)[0], e), ElementBits((*grad_ref)[0], e)) << "gradient element " << e;
}

TEST(DirectLoss, DeclinesWhatTheReferenceTakesAndNamesABadLabel) {
  LossCase k = LossInputs(4, 10, 83, 0.0);
  Options direct{.impl = "direct", .num_outputs = 2}, any = direct;
  any.impl = "";
  Attributes none = k.attrs;
  none.Set("reduction", std::string("none"));
  Tensor strided = gradtest::Random({4, 10, 3}, 84, DType::kFloat32);
  Tensor strided_labels = *Tensor::Zeros(DType::kInt64, {4, 3});
  Tensor weights = Tensor::Floats(std::vector<float>(10, 0.5f), {10});
  const std::vector<std::pair<Attributes, std::vector<Tensor>>> declined = {
      {none, {k.scores, k.labels}},
      {k.attrs, {strided, strided_labels}},
      {k.attrs, {k.scores, k.labels, weights}},
      {k.attrs, {gradtest::Random({4, 10}, 85, DType::kFloat16), k.labels}}};
  for (const auto& [a, in] : declined) {
    EXPECT_FALSE(RunKernel(OpKind::kSoftmaxCrossEntropyLoss, a, in, direct).ok());
    EXPECT_TRUE(RunKernel(OpKind::kSoftmaxCrossEntropyLoss, a, in, any).ok());
  }
  k.labels.data<int64_t>()[2] = 10;
  auto bad = RunKernel(OpKind::kSoftmaxCrossEntropyLoss, k.attrs, {k.scores, k.labels}, direct);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("label 10 at position 2 is outside [0, 10)"), std::string::npos)
      << bad.status().ToString();
}

// LayerNormalization and LayerNormalizationGrad (direct_layernorm.cc): the
// row sums in eight lanes instead of one after another, so within one ulp
// of the reference (of the storage type), not its bits; the same bits on 1
// and 2 threads; the registry's pick; broadcast parameters and the forward's
// statistics outputs declined. Rows of a large mean and a small spread (20 +-
// 0.05, what follows ReLU6 or a deep net's residual sum) as well as centred
// ones; row lengths that are and are not a multiple of the eight lanes.
double WorstUlpsOf(DType t, const Tensor& a, const Tensor& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    const double x = a.GetAsDouble(i), y = b.GetAsDouble(i);
    if (x != y) worst = std::max(worst, std::abs(x - y) / Ulp(t, y));
  }
  return worst;
}

TEST_P(DirectMath, LayerNormWithinAnUlpOfTheReference) {
  const DType t = GetParam().dtype;
  const struct {
    std::vector<int64_t> dims;
    int64_t axis;
    double centre, spread;
    bool bias;
  } cases[] = {
      {{64, 128}, -1, 0.0, 2.0, true},     // a transformer's rows
      {{3, 37, 130}, -1, 20.0, 0.05, true},  // a tail of 130: 16 lanes of 8, then 2
      {{5, 4, 6}, 1, 0.0, 1.0, false},       // normalized over [4, 6], no B
      {{9, 3}, -1, -3.0, 0.5, true},         // rows shorter than the lanes
  };
  for (const auto& c : cases) {
    const int64_t cols = c.dims.back() * (c.axis == 1 ? c.dims[1] : 1);
    const std::vector<int64_t> pdims = c.axis == 1 ? std::vector<int64_t>{c.dims[1], c.dims[2]} : std::vector<int64_t>{cols};
    Tensor x = gradtest::Random(c.dims, 91, t, c.centre - c.spread, c.centre + c.spread);
    Tensor scale = gradtest::Random(pdims, 92, t, 0.5, 1.5), bias = gradtest::Random(pdims, 93, t);
    Tensor dy = gradtest::Random(c.dims, 94, t);
    Attributes a;
    a.Set("axis", c.axis);
    a.Set("epsilon", 1e-5f);
    std::vector<Tensor> fwd_in = {x, scale};
    if (c.bias) fwd_in.push_back(bias);
    const std::string name = ir::Shape::FromStatic(c.dims).ToString();
    auto got = RunKernel(OpKind::kLayerNormalization, a, fwd_in, Options{.impl = "direct"});
    auto got1 = RunKernel(OpKind::kLayerNormalization, a, fwd_in, Options{.impl = "direct", .threads = 1});
    auto picked = RunKernel(OpKind::kLayerNormalization, a, fwd_in, Options{.impl = ""});
    auto want = RunKernel(OpKind::kLayerNormalization, a, fwd_in, Options{});
    ASSERT_TRUE(got.ok() && got1.ok() && picked.ok() && want.ok()) << name << ": " << got.status().ToString();
    EXPECT_TRUE(SameBits((*got)[0], (*got1)[0])) << name << ": 1 and 2 threads differ";
    EXPECT_TRUE(SameBits((*got)[0], (*picked)[0])) << name << ": the registry's pick is not the direct kernel";
    EXPECT_LE(WorstUlpsOf(t, (*got)[0], (*want)[0]), 1.0) << name;

    const std::vector<Tensor> bwd_in = {dy, x, scale};
    Options direct{.impl = "direct", .num_outputs = 3}, one = direct, ref{.num_outputs = 3};
    one.threads = 1;
    auto grad = RunKernel(OpKind::kLayerNormalizationGrad, a, bwd_in, direct);
    auto grad1 = RunKernel(OpKind::kLayerNormalizationGrad, a, bwd_in, one);
    auto grad_ref = RunKernel(OpKind::kLayerNormalizationGrad, a, bwd_in, ref);
    ASSERT_TRUE(grad.ok() && grad1.ok() && grad_ref.ok()) << name << ": " << grad.status().ToString();
    for (int o = 0; o < 3; ++o) {
      EXPECT_TRUE(SameBits((*grad)[o], (*grad1)[o])) << name << ": 1 and 2 threads differ, output " << o;
      EXPECT_LE(WorstUlpsOf(t, (*grad)[o], (*grad_ref)[o]), 1.0) << name << ", gradient output " << o;
    }
  }
  // Declined, so the reference runs them: a broadcast Scale, the Mean and InvStdDev outputs.
  Tensor x = gradtest::Random({4, 16}, 95, t);
  Attributes a;
  EXPECT_FALSE(RunKernel(OpKind::kLayerNormalization, a, {x, gradtest::Random({1}, 96, t)}, Options{.impl = "direct"}).ok());
  EXPECT_TRUE(RunKernel(OpKind::kLayerNormalization, a, {x, gradtest::Random({1}, 96, t)}, Options{.impl = ""}).ok());
  const std::vector<Tensor> full = {x, gradtest::Random({16}, 97, t)};
  EXPECT_FALSE(RunKernel(OpKind::kLayerNormalization, a, full, Options{.impl = "direct", .num_outputs = 3}).ok());
  EXPECT_TRUE(RunKernel(OpKind::kLayerNormalization, a, full, Options{.impl = "", .num_outputs = 3}).ok());
}

}  // namespace
}  // namespace amptrain::kernels::testing
