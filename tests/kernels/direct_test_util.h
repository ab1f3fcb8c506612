// Helpers of the direct-kernel suites (direct_test.cc, direct_math_test.cc).
#pragma once

#include <cstdint>
#include <cstring>

#include "ir/tensor.h"

namespace amptrain::kernels::testing {

inline bool SameBits(const ir::Tensor& a, const ir::Tensor& b) {
  return a.dtype() == b.dtype() && a.dims() == b.dims() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// Element i of an fp32, fp16 or bf16 tensor, as its bits.
inline uint32_t ElementBits(const ir::Tensor& t, int64_t i) {
  if (t.dtype() == ir::DType::kFloat32) return ir::FloatBits(t.data<float>()[i]);
  return t.data<uint16_t>()[i];
}

}  // namespace amptrain::kernels::testing
