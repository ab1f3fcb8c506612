// QuantizeLinear / DequantizeLinear / FakeQuantize (ir/ops.def): their
// attributes and the layout of scale and zero point, decoded once for the
// shape rules, the kernels (kernels/cpu/quantize.cc) and the train graph's
// fusion of a quantize-dequantize pair (executor/train/train_graph.cc).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/attribute.h"
#include "ir/dtype.h"
#include "ir/status.h"

namespace amptrain::ir {

// How scale (and zero point) map onto the data: one value (per tensor), one
// per index of `axis` (per axis, scale [C]), or one per block of block_size
// along `axis` (blocked, scale of the data's rank).
struct QuantLayout {
  enum Kind { kPerTensor, kPerAxis, kBlocked } kind = kPerTensor;
  int64_t axis = 0;        // normalized into [0, rank)
  int64_t block_size = 0;  // kBlocked
};

// The layout of a scale of `scale_dims` over data of `data_dims`, from the
// axis (default 1) and block_size (default 0) attributes; errors name what
// does not fit.
StatusOr<QuantLayout> DecodeQuantLayout(const Attributes& attrs, const std::vector<int64_t>& data_dims,
                                        const std::vector<int64_t>& scale_dims);

// The integer range of a quantized dtype (int8 [-128, 127], uint8 [0, 255],
// int32 its own); error for other dtypes.
StatusOr<std::pair<int64_t, int64_t>> QuantRange(DType t);

// QuantizeLinear's output dtype: the zero point's, else the output_dtype
// attribute (opset 21), else uint8.
StatusOr<DType> QuantizedDType(const Attributes& attrs, DType zero_point);

}  // namespace amptrain::ir
