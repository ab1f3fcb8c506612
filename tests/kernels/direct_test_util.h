// Helpers of the direct-kernel suites (direct_test.cc, direct_batchnorm_test.cc,
// direct_math_test.cc).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "tests/kernels/grad_test_util.h"

namespace amptrain::kernels::testing {

inline bool SameBits(const ir::Tensor& a, const ir::Tensor& b) {
  return a.dtype() == b.dtype() && a.dims() == b.dims() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// The same bits, except that a NaN matches any NaN: where both operands of
// an arithmetic op are NaN, IEEE 754 leaves open which one's payload the
// result carries, and a compiler may commute the operands (x86 returns the
// first source's), so the payload is not part of Add's or Mul's contract.
inline bool SameBitsOrNaNs(const ir::Tensor& a, const ir::Tensor& b) {
  if (a.dtype() != b.dtype() || a.dims() != b.dims()) return false;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    const double x = a.GetAsDouble(i), y = b.GetAsDouble(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    if (std::memcmp(static_cast<const std::byte*>(a.raw()) + i * static_cast<int64_t>(ir::DTypeSize(a.dtype())),
                    static_cast<const std::byte*>(b.raw()) + i * static_cast<int64_t>(ir::DTypeSize(b.dtype())),
                    ir::DTypeSize(a.dtype())) != 0)
      return false;
  }
  return true;
}

// Element i of an fp32, fp16 or bf16 tensor, as its bits.
inline uint32_t ElementBits(const ir::Tensor& t, int64_t i) {
  if (t.dtype() == ir::DType::kFloat32) return ir::FloatBits(t.data<float>()[i]);
  return t.data<uint16_t>()[i];
}

// Random values in [-1, 1) of `t`, with every 7th element a copy of its
// neighbour (ties), and a few zeros, -0, +-inf and NaN when `specials`.
inline ir::Tensor Values(const std::vector<int64_t>& dims, uint32_t seed, ir::DType t, bool specials = true) {
  ir::Tensor x = gradtest::Random(dims, seed, t);
  const int64_t n = x.num_elements();
  const double inf = std::numeric_limits<double>::infinity();
  const double special[] = {0.0, -0.0, inf, -inf, std::numeric_limits<double>::quiet_NaN()};
  for (int64_t i = 1; i < n; ++i) {
    if (i % 7 == 0) ir::SetElementFromDouble(x, i, x.GetAsDouble(i - 1));
    if (specials && i % 53 == 0) ir::SetElementFromDouble(x, i, special[(i / 53) % 5]);
  }
  return x;
}

// Runs `op` on the direct kernel and on the reference (opt.impl is set for
// each) and checks every output but those in opt.unused: its error normalized
// by the reference's largest magnitude below tolerance(its dtype).
inline void ExpectDirectCloseToReference(const std::string& what, ir::OpKind op, const ir::Attributes& a,
                                         const std::vector<ir::Tensor>& in, gradtest::Options opt,
                                         double (*tolerance)(ir::DType)) {
  gradtest::Options ref = opt;
  opt.impl = "direct";
  ref.impl = "reference";
  auto got = gradtest::RunKernel(op, a, in, opt);
  ASSERT_TRUE(got.ok()) << what << ": " << got.status().ToString();
  auto want = gradtest::RunKernel(op, a, in, ref);
  ASSERT_TRUE(want.ok()) << what << ": " << want.status().ToString();
  for (size_t o = 0; o < want->size(); ++o) {
    if (o < opt.unused.size() && opt.unused[o]) continue;
    EXPECT_LT(gradtest::NormalizedError((*got)[o], (*want)[o]), tolerance((*want)[o].dtype()))
        << what << " output " << o << " " << ir::DTypeName(in[0].dtype());
  }
}

}  // namespace amptrain::kernels::testing
