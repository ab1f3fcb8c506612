// Helpers of the direct-kernel suites (direct_test.cc, direct_math_test.cc).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ir/tensor.h"

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

}  // namespace amptrain::kernels::testing
