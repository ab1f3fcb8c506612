// Bulk conversions between fp32 and the 2-byte float storage types (bf16,
// fp16), vectorized (F16C for fp16) and split over `threads` OpenMP threads.
// Rounding is the IEEE round-to-nearest-even of ir/dtype.h, NaN stays NaN,
// fp16 overflow goes to ±inf: the bits of ir::FloatToHalf/FloatToBFloat16
// and ir::HalfToFloat/BFloat16ToFloat for every input, NaN payloads included.
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

// The same on the calling thread only, for kernels that convert rows or
// planes inside their own parallel loops.
void WidenSpan(ir::DType src, const void* in, float* out, int64_t n);
void NarrowSpan(ir::DType dst, const float* in, void* out, int64_t n);

// out[i] = float(dst(in[i])): fp32 values rounded to a kFloat16 or kBFloat16
// `dst` and kept in fp32, the bits of narrowing then widening (NaN and
// overflow included). `out` may be `in`. For low-precision tensors stored
// widened (kernels::TensorSpec::holds).
void RoundToFloat(ir::DType dst, const float* in, float* out, int64_t n, int threads);
void RoundSpan(ir::DType dst, const float* in, float* out, int64_t n);

}  // namespace amptrain::kernels::cpu
