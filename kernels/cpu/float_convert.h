// Bulk conversions between fp32 and the 2-byte float storage types (bf16,
// fp16), vectorized (F16C for fp16) and split over `threads` OpenMP threads.
// Rounding is the IEEE round-to-nearest-even of ir/dtype.h, NaN stays NaN,
// fp16 overflow goes to ±inf: the values of ir::FloatToHalf/FloatToBFloat16
// (NaN payloads aside).
#pragma once

#include <cstdint>

#include "ir/dtype.h"

namespace amptrain::kernels::cpu {

// True for kFloat16 and kBFloat16.
inline bool IsTwoByteFloat(ir::DType t) { return t == ir::DType::kFloat16 || t == ir::DType::kBFloat16; }

// out[i] = float(in[i]) for a kFloat16 or kBFloat16 `in`.
void WidenToFloat(ir::DType src, const void* in, float* out, int64_t n, int threads);
// out[i] = dst(in[i]) for a kFloat16 or kBFloat16 `out`.
void NarrowFromFloat(ir::DType dst, const float* in, void* out, int64_t n, int threads);

}  // namespace amptrain::kernels::cpu
