// e^(-t) in double, as loops the compiler vectorizes (direct_erf.cc,
// direct_loss.cc): 2^k p(r), r = -t - k ln 2, p the degree-11 Taylor
// polynomial (|r| <= ln2/2: truncation 1e-15), 2^k built in the exponent
// bits, k by the round-to-nearest shifter 1.5 * 2^52. Relative error below
// 2e-15 against the correctly rounded value, so a float rounded from it is
// the float rounded from the exact value except within 2e-15 of a rounding
// boundary.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace amptrain::kernels::cpu::direct {

// 1 / i!, i = 0..11: e^r's Taylor polynomial.
constexpr double kInvFact[] = {1.0,         1.0,          1.0 / 2,       1.0 / 6,
                               1.0 / 24,    1.0 / 120,    1.0 / 720,     1.0 / 5040,
                               1.0 / 40320, 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800};

// c[0] + t (c[1] + t (c[2] + ...)), unrolled at compile time (a loop left
// in the element loop would keep it from vectorizing).
template <size_t I, size_t N>
inline double Horner(const double (&c)[N], double t) {
  if constexpr (I + 1 == N) return c[I];
  else return c[I] + t * Horner<I + 1>(c, t);
}

// The selects below compare non-negative doubles (and NaN) as the int64 of
// their bits, which orders them the same way, with NaN above +inf, and blend
// the bits: with floating-point compares and ?:, GCC keeps branches (an
// operation that may trap is not moved out of one) and the loop stays scalar.
inline int64_t Bits(double v) { return std::bit_cast<int64_t>(v); }
inline double Select(bool c, double a, double b) {
  const int64_t m = -static_cast<int64_t>(c);
  return std::bit_cast<double>((m & Bits(a)) | (~m & Bits(b)));
}
inline const int64_t kInfBits = Bits(INFINITY);

// e^(-t) for t > -700 (a small negative t gives e^|t|): e^-708 beyond t = 708,
// which rounds to 0 in every 2- and 4-byte float. NaN is the caller's to
// keep (it comes out as e^-708).
inline double ExpNegative(double t) {
  const double y = -std::bit_cast<double>(std::min(Bits(t), Bits(708.0)));
  constexpr double kShifter = 0x1.8p52, kLog2e = 1.4426950408889634, kLn2Hi = 0x1.62e42fefa39efp-1,
                   kLn2Lo = 0x1.abc9e3b39803fp-56;
  const double kd = y * kLog2e + kShifter;
  const uint64_t bits = std::bit_cast<uint64_t>(kd);
  const double k = kd - kShifter;
  const double r = (y - k * kLn2Hi) - k * kLn2Lo;
  const double p = Horner<0>(kInvFact, r);
  // The low bits of kd hold k: (k + 1023) << 52 is 2^k.
  return p * std::bit_cast<double>((bits + 1023) << 52);
}

}  // namespace amptrain::kernels::cpu::direct
