// Direct Erf and UnaryGrad of Erf (GELU's erf, exported by PyTorch as
// Div -> Erf -> Add -> Mul -> Mul), and Gelu and GeluGrad (the exact,
// erf-based GELU: opset 20's Gelu, and what amptrain's import makes of the
// exporters' erf pattern), fp32, fp16 and bf16: loops the compiler
// vectorizes, where the reference calls the C library's erf and exp once per
// element.
//   Gelu, GeluGrad: GeluSpan and GeluGradSpan below, in double on Erf; with
//             approximate = tanh (GPT-2's gelu_new), GeluTanhSpan and
//             GeluTanhGradSpan, in double on ExpNegative.
// Also Tanh, Sigmoid, Silu and SiluGrad (in double on ExpNegative, within
// one ulp of the exact value) and Pow with a constant exponent of 1 or 2 (the reference's
// bits), 3 or another multiple of 1/4 (in double, within one ulp; LRN's
// x^0.75 and x^-0.25): GPT-2's gelu_new is Pow, Tanh,
// Mul and Add; Llama's RMSNorm is Pow; the SiLU of Llama and EfficientNet,
// Sigmoid and Mul in the exports, is one Silu once fused (executor/optimize.h).
//   Erf(x):   in double, rounded once: |x| < 1: x R(x^2); 1 <= |x| < 3.93:
//             1 - e^(-x^2) Q(1/|x|), with R and Q polynomials fitted here to
//             erf(x)/x and erfc(x) e^(x^2) (relative error below 2.2e-9 in
//             double, measured on 2e6 points); |x| >= 3.93: 1 (erf rounds to
//             1 in fp32 from 3.92); the sign of x, -0 and NaN kept.
//   UnaryGrad(dY, X), op "Erf": dY 2/sqrt(pi) e^(-x^2), x^2 rounded to the
//             compute type as the reference does, the rest in double and
//             rounded once; e^(-x^2) is 0 beyond x^2 = 104, where the
//             reference's fp32 exp is 0 too.
//   e^y:      ExpNegative (kernels/cpu/direct_exp.h).
// Not the reference's bits: within one ulp of the correctly rounded value
// (DirectPath.ErfIsCorrectlyRoundedToAnUlp checks a dense sweep against
// double-precision erf and exp), where the C library's fp32 erf is within
// one or two. Each function is compiled for AVX-512, AVX2 and the baseline
// (target_clones); no fused multiply-add (-ffp-contract=off), so every CPU
// gives the same bits.
#include <algorithm>
#include <bit>
#include <cmath>

#include "kernels/cpu/direct_exp.h"
#include "kernels/cpu/direct_kernels.h"

namespace amptrain::kernels::cpu::direct {

namespace {

// erf(x)/x = R(x^2) on [0, 1]; erfc(x) e^(x^2) = Q(1/x) on [1, 3.93]
// (least squares on 4000 Chebyshev nodes, relative weights).
constexpr double kR[] = {1.1283791656893232,    -0.3761262556739935,    0.11283582247994337,  -0.02685369109978189,
                         0.005188098889539139,  -0.000800818932449196,  7.847259131675555e-05};
constexpr double kQ[] = {3.421312107866158e-05, 0.5635543383496372,  0.004459453325566187, -0.29248523725146436,
                         -0.045676799396800444, 0.8485038328238743,  -1.4493930961904549,  1.3507701404958743,
                         -0.7645058075527672,   0.24782904074786835, -0.03550650309871432};
constexpr double kTwoOverSqrtPi = 1.1283791670955126;
constexpr double kSqrtHalf = 0.70710678118654752;      // 1/sqrt(2)
constexpr double kInvSqrtTwoPi = 0.3989422804014327;  // 1/sqrt(2 pi)
inline double Erf(double x) {
  const double a = std::fabs(x), t = a * a;
  const int64_t ab = Bits(a);
  const double small = a * Horner<0>(kR, t);
  const double big = 1.0 - ExpNegative(t) * Horner<0>(kQ, 1.0 / Select(ab < Bits(1.0), 1.0, a));
  double r = Select(ab < Bits(1.0), small, Select(ab >= Bits(3.93), 1.0, big));
  r = Select(ab > kInfBits, a, r);  // NaN
  return std::copysign(r, x);
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void ErfSpan(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    y[i] = static_cast<float>(Erf(static_cast<double>(x[i])));
  }
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void ErfGradSpan(const float* dy, const float* x,
                                                                            float* dx, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float xf = x[i];
    const double t = static_cast<double>(xf * xf);  // rounded as the reference rounds it
    const int64_t tb = Bits(t);
    const double e = Select(tb > Bits(104.0), 0.0, ExpNegative(t));
    const double g = Select(tb > kInfBits, t, static_cast<double>(dy[i]) * (kTwoOverSqrtPi * e));
    dx[i] = static_cast<float>(g);
  }
}

// Gelu(x) = x/2 (1 + erf(x/sqrt 2)), in double, rounded once. Where
// |x|/sqrt 2 >= 3.93 (x <= -5.56: |gelu| < 3e-8) Erf is +-1 and the
// negative side gives -0, as the reference's fp32 erf does from about the
// same point.
__attribute__((target_clones("avx512f", "avx2", "default"))) void GeluSpan(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(x[i]);
    y[i] = static_cast<float>(0.5 * v * (1.0 + Erf(v * kSqrtHalf)));
  }
}

// GeluGrad(dY, X) = dY (Phi(x) + x phi(x)), Phi(x) = (1 + erf(x/sqrt 2))/2,
// phi(x) = e^(-x^2/2)/sqrt(2 pi), in double, rounded once; e^(-x^2/2) is 0
// beyond x^2/2 = 104 (x^2 in double: 0.5 x^2 of an fp32 x is exact).
__attribute__((target_clones("avx512f", "avx2", "default"))) void GeluGradSpan(const float* dy, const float* x,
                                                                             float* dx, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(x[i]), t = 0.5 * v * v;
    const double e = Select(Bits(t) > Bits(104.0), 0.0, ExpNegative(t));
    const double d = 0.5 * (1.0 + Erf(v * kSqrtHalf)) + v * (kInvSqrtTwoPi * e);
    dx[i] = static_cast<float>(static_cast<double>(dy[i]) * Select(Bits(t) > kInfBits, t, d));  // NaN x: NaN
  }
}

}  // namespace

// TanhSpan and SigmoidSpan are also the gates of the recurrent layers
// (direct_rnn.cc; declared in direct_kernels.h). y may be x.
// tanh(x) in double, rounded once: x (1 - x^2/3 + 2x^4/15 - 17x^6/315 +
// 62x^8/2835) below |x| = 1/16 (truncation below 1e-13 relative), else
// sign(x) (1 - t)/(1 + t), t = e^(-2|x|) (ExpNegative; 1 beyond |x| = 354,
// where tanh rounds to 1 in every float); NaN kept.
__attribute__((target_clones("avx512f", "avx2", "default"))) void TanhSpan(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(x[i]), a = std::fabs(v), z = v * v;
    const double series = v * (1.0 + z * (-1.0 / 3 + z * (2.0 / 15 + z * (-17.0 / 315 + z * (62.0 / 2835)))));
    const double t = ExpNegative(2.0 * a);
    const double far = std::copysign((1.0 - t) / (1.0 + t), v);
    const double r = Select(Bits(a) < Bits(0.0625), series, far);
    y[i] = static_cast<float>(Select(Bits(a) > kInfBits, v, r));  // NaN
  }
}

// sigmoid(x) = 1/(1 + e^-x) in double, rounded once: e = e^(-|x|), 1/(1 + e)
// for x >= 0, e/(1 + e) below (no overflow, no cancellation); NaN kept.
// Also gives e = e^(-|v|) and r = 1/(1 + e), for the derivative.
struct SigmoidParts {
  double s, e, r;
};
inline SigmoidParts Sigmoid(double v) {
  const double e = ExpNegative(std::fabs(v)), r = 1.0 / (1.0 + e);
  return {Select(Bits(v) >= 0, r, e * r), e, r};  // the sign bit: -0 takes e r = 1/2 as well
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void SigmoidSpan(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(x[i]);
    y[i] = static_cast<float>(Select(Bits(std::fabs(v)) > kInfBits, v, Sigmoid(v).s));  // NaN
  }
}

namespace {

// Silu(x) = x sigmoid(x) in double, rounded once: +inf gives +inf, -inf
// gives NaN (-inf * 0, as x * sigmoid(x) does in PyTorch), NaN kept.
//   SiluGrad(dY, X) = dY (s + x s (1 - s)), s (1 - s) = e r^2 for either
//   sign; NaN for an infinite or NaN x (x * 0), as PyTorch's silu_backward.
__attribute__((target_clones("avx512f", "avx2", "default"))) void SiluSpan(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(x[i]);
    const double limit = v * Select(Bits(v) >= 0, 1.0, 0.0);  // +inf: +inf; -inf: -inf * 0 = NaN; NaN
    y[i] = static_cast<float>(Select(Bits(std::fabs(v)) >= kInfBits, limit, v * Sigmoid(v).s));
  }
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void SiluGradSpan(const float* dy, const float* x,
                                                                             float* dx, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(x[i]);
    const SigmoidParts p = Sigmoid(v);
    const double d = p.s + v * (p.e * p.r * p.r);
    dx[i] = static_cast<float>(static_cast<double>(dy[i]) * Select(Bits(std::fabs(v)) >= kInfBits, v - v, d));
  }
}

// Gelu with approximate = tanh: 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x +
// 0.044715 x^3), computed as x sigmoid(2u) = x / (1 + e^(-2u)) (the same
// function, without the cancellation of 1 + tanh(u) for x below about -3:
// the tanh form rounds to -0 from x = -9.3 where this one keeps the tail),
// with e = e^(-2|u|): x / (1 + e) for u >= 0, x e / (1 + e) below; u and x^3
// in double (x^3 of an fp32 x cannot overflow there), rounded once. +inf
// gives +inf, -inf and NaN give NaN, as the tanh form does.
//   GeluGrad: sigmoid(2u) + x sigmoid(2u) (1 - sigmoid(2u)) 2 u'(x),
//   u'(x) = sqrt(2/pi) (1 + 3 * 0.044715 x^2), sigmoid (1 - sigmoid) = e / (1
//   + e)^2; NaN for an infinite or NaN x, as the tanh form.
constexpr double kSqrtTwoOverPi = 0.7978845608028654, kGeluCubic = 0.044715;
inline SigmoidParts SigmoidOfTwiceU(double v) { return Sigmoid(2.0 * (kSqrtTwoOverPi * (v + kGeluCubic * (v * v * v)))); }

__attribute__((target_clones("avx512f", "avx2", "default"))) void GeluTanhSpan(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(x[i]);
    const double g = v * SigmoidOfTwiceU(v).s;
    y[i] = static_cast<float>(Select(Bits(std::fabs(v)) >= kInfBits, 0.5 * v * (1.0 + std::copysign(1.0, v)), g));
  }
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void GeluTanhGradSpan(const float* dy, const float* x,
                                                                                 float* dx, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(x[i]);
    const SigmoidParts p = SigmoidOfTwiceU(v);
    const double d = p.s + v * (p.e * p.r * p.r) * (2.0 * kSqrtTwoOverPi * (1.0 + 3.0 * kGeluCubic * (v * v)));
    dx[i] = static_cast<float>(static_cast<double>(dy[i]) * Select(Bits(std::fabs(v)) >= kInfBits, v - v, d));
  }
}

// x^1: a copy (the exponent PowGrad gives x^2's derivative).
__attribute__((target_clones("avx512f", "avx2", "default"))) void CopySpan(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = x[i];
}

// x^2 as the reference computes it (one fp32 product); x^3 in double, rounded
// once (x^2 is exact in double; within one ulp of the correctly rounded cube).
__attribute__((target_clones("avx512f", "avx2", "default"))) void SquareSpan(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * x[i];
}
__attribute__((target_clones("avx512f", "avx2", "default"))) void CubeSpan(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(x[i]);
    y[i] = static_cast<float>(v * v * v);
  }
}

// x^(k/4) for a constant k/4 other than 1, 2 and 3, |k| <= 16 (LRN's x^0.75
// and its gradient's x^-0.25, x^0.5, x^-0.5, x^-1, ...): in double, from
// sqrt(x) and sqrt(sqrt(x)) and whole powers by products, a negative
// exponent as 1 / x^(|k|/4), rounded once: within one ulp of the correctly
// rounded value (double's few ulps are ~1e-16 relative). +0 and +inf follow
// (0^-0.25 = inf); a negative x, -0 and NaN take the C library's pow after
// (its special cases: NaN for a fractional power of a negative number,
// -inf's, the sign of -0). The input is read from a copy of each chunk, since
// the output may be the input (inplace_input).
// (The C library's sqrt sets errno for a negative argument, which keeps the
// compiler from vectorizing it; nothing here reads errno, and the negative
// values are recomputed after, so this file is compiled with -fno-math-errno:
// kernels/CMakeLists.txt.)
inline double QuarterPower(double v, int whole, int frac) {
  const double r = std::sqrt(v), r4 = std::sqrt(r);
  const double part = Select(frac == 1, r4, Select(frac == 2, r, Select(frac == 3, r * r4, 1.0)));
  const double v2 = v * v;
  return part * Select(whole == 1, v, Select(whole == 2, v2, Select(whole == 3, v2 * v, Select(whole == 4, v2 * v2, 1.0))));
}
__attribute__((target_clones("avx512f", "avx2", "default"))) void QuarterPowSpan(const float* x, float* y, int64_t n,
                                                                               int k) {
  const int q = k < 0 ? -k : k, whole = q / 4, frac = q % 4;
  constexpr int64_t kChunk = 1024;
  float in[kChunk];
  for (int64_t start = 0; start < n; start += kChunk) {
    const int64_t len = std::min(kChunk, n - start);
    std::copy(x + start, x + start + len, in);
    float* out = y + start;
    if (k < 0) {
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) out[i] = static_cast<float>(1.0 / QuarterPower(in[i], whole, frac));
    } else {
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) out[i] = static_cast<float>(QuarterPower(in[i], whole, frac));
    }
    for (int64_t i = 0; i < len; ++i)
      if (std::signbit(in[i]) || std::isnan(in[i])) out[i] = static_cast<float>(std::pow(static_cast<double>(in[i]), k / 4.0));
  }
}

enum class Fn {
  kErf, kErfGrad, kGelu, kGeluGrad, kGeluTanh, kGeluTanhGrad, kSilu, kSiluGrad, kTanh, kSigmoid, kCopy, kSquare, kCube,
  kQuarterPow
};

// The gradients read (dY, X).
bool ReadsDy(Fn fn) {
  return fn == Fn::kErfGrad || fn == Fn::kGeluGrad || fn == Fn::kGeluTanhGrad || fn == Fn::kSiluGrad;
}

// fp32 in place, fp16 and bf16 through fp32 rows (ForFloatChunks). The
// gradients read (dY, X); Pow's constant exponent input is not read.
class ErfKernel : public Kernel {
 public:
  ErfKernel(DType t, Fn fn, int threads, int quarters = 0) : t_(t), fn_(fn), threads_(threads), quarters_(quarters) {}

  Status Run(KernelContext& ctx) override {
    ForFloatChunks(t_, threads_, ctx.scratch, ctx.outputs[0].num_elements(), ctx.inputs[0].data,
                   binary() ? ctx.inputs[1].data : nullptr, ctx.outputs[0].data,
                   [&](const float* a, const float* b, float* y, int64_t, int64_t len) {
                     switch (fn_) {
                       case Fn::kErf: return ErfSpan(a, y, len);
                       case Fn::kErfGrad: return ErfGradSpan(a, b, y, len);
                       case Fn::kGelu: return GeluSpan(a, y, len);
                       case Fn::kGeluGrad: return GeluGradSpan(a, b, y, len);
                       case Fn::kGeluTanh: return GeluTanhSpan(a, y, len);
                       case Fn::kGeluTanhGrad: return GeluTanhGradSpan(a, b, y, len);
                       case Fn::kSilu: return SiluSpan(a, y, len);
                       case Fn::kSiluGrad: return SiluGradSpan(a, b, y, len);
                       case Fn::kTanh: return TanhSpan(a, y, len);
                       case Fn::kSigmoid: return SigmoidSpan(a, y, len);
                       case Fn::kCopy: return CopySpan(a, y, len);
                       case Fn::kSquare: return SquareSpan(a, y, len);
                       case Fn::kCube: return CubeSpan(a, y, len);
                       case Fn::kQuarterPow: return QuarterPowSpan(a, y, len, quarters_);
                     }
                   });
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }
  size_t scratch_bytes() const override { return FloatChunkScratch(t_, threads_, binary() ? 2 : 1); }

 private:
  bool binary() const { return ReadsDy(fn_); }
  DType t_;
  Fn fn_;
  int threads_;
  int quarters_;  // kQuarterPow: the exponent times 4
};

// An exponent k/4 with |k| <= 16 (QuarterPowSpan).
bool QuarterExponent(double v) { return std::fabs(v) <= 4.0 && std::floor(v * 4.0) == v * 4.0; }

// Pow's exponent when it is a constant scalar of 1, 2 or 3 (what PyTorch's
// `x ** 2`, `x.pow(3)` and GPT-2's gelu_new export, and 1 in x^2's
// gradient); other exponents decline.
StatusOr<Fn> PowFn(const KernelInit& init) {
  const TensorSpec& e = init.inputs[1];
  if (!e.value || e.value->num_elements() != 1)
    return Unimplemented(init.Describe(), ": the direct Pow takes a constant scalar exponent");
  const double v = e.value->GetAsDouble(0);
  if (v == 1.0) return Fn::kCopy;
  if (v == 2.0) return Fn::kSquare;
  if (v == 3.0) return Fn::kCube;
  if (QuarterExponent(v)) return Fn::kQuarterPow;
  return Unimplemented(init.Describe(), ": the direct Pow takes the exponents k/4, |k| <= 16");
}

StatusOr<std::unique_ptr<Kernel>> MakeErf(const KernelInit& init) {
  Fn fn = Fn::kErf;
  switch (init.op) {
    case OpKind::kErf: fn = Fn::kErf; break;
    case OpKind::kGelu: fn = Fn::kGelu; break;
    case OpKind::kGeluGrad: fn = Fn::kGeluGrad; break;
    case OpKind::kTanh: fn = Fn::kTanh; break;
    case OpKind::kSigmoid: fn = Fn::kSigmoid; break;
    case OpKind::kSilu: fn = Fn::kSilu; break;
    case OpKind::kSiluGrad: fn = Fn::kSiluGrad; break;
    case OpKind::kUnaryGrad: {
      AMP_ASSIGN_OR_RETURN(std::string op, init.attrs->GetString("op", ""));
      if (op != "Erf") return Unimplemented(init.Describe(), ": the direct UnaryGrad is Erf's only");
      fn = Fn::kErfGrad;
      break;
    }
    case OpKind::kPow: {
      if (init.inputs.size() != 2) return init.Error("unexpected arity");
      AMP_ASSIGN_OR_RETURN(fn, PowFn(init));
      break;
    }
    default: return Internal(init.Describe(), ": not a direct Erf-family op");
  }
  if (fn == Fn::kGelu || fn == Fn::kGeluGrad) {
    AMP_ASSIGN_OR_RETURN(std::string approximate, init.attrs->GetString("approximate", "none"));
    if (approximate == "tanh") fn = fn == Fn::kGelu ? Fn::kGeluTanh : Fn::kGeluTanhGrad;
    else if (approximate != "none") return init.Error("approximate '", approximate, "' is not one of none, tanh");
  }
  const size_t inputs = ReadsDy(fn) || init.op == OpKind::kPow ? 2 : 1;
  if (init.inputs.size() != inputs || init.outputs.size() != 1) return init.Error("unexpected arity");
  const TensorSpec& out = init.outputs[0];
  for (size_t k = 0; k < inputs; ++k) {
    if (init.op == OpKind::kPow && k == 1) continue;  // the exponent: a scalar of its own type
    if (init.inputs[k].dtype != out.dtype || init.inputs[k].dims != out.dims)
      return init.Error("inputs and output differ in dtype or shape");
  }
  if (out.dtype != DType::kFloat32 && !IsTwoByteFloat(out.dtype)) return init.Error("takes fp32, fp16 and bf16");
  const int quarters = fn == Fn::kQuarterPow ? static_cast<int>(init.inputs[1].value->GetAsDouble(0) * 4.0) : 0;
  return std::unique_ptr<Kernel>(new ErfKernel(out.dtype, fn, Threads(init), quarters));
}

}  // namespace

void RegisterDirectErf(Registry& r) {
  // Flat maps over operands of one shape: channels-last in and out alike
  // (EfficientNet's SiLUs between its convolutions; Pow's exponent is a scalar).
  for (OpKind op : {OpKind::kErf, OpKind::kGelu, OpKind::kSilu, OpKind::kTanh, OpKind::kSigmoid, OpKind::kPow})
    r.Add(ElementwiseChannelsLast(DirectEntry(op, MakeErf), 0b1, 0b1));
  for (OpKind op : {OpKind::kUnaryGrad, OpKind::kGeluGrad, OpKind::kSiluGrad})
    r.Add(ElementwiseChannelsLast(DirectEntry(op, MakeErf), 0b11, 0b1));
}

}  // namespace amptrain::kernels::cpu::direct
