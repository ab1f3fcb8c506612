// The labels of SoftmaxCrossEntropyLoss and its gradient, read and checked
// once for the reference (loss.cc) and the direct kernels (direct_loss.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/status.h"
#include "ir/tensor.h"

namespace amptrain::kernels::cpu {

// `count` int32 or int64 labels of `v` as int64, or an OutOfRange error
// naming `describe`, the first label outside [0, classes) that is not
// `ignore_index`, and its position.
inline StatusOr<std::vector<int64_t>> ReadLossLabels(const ir::TensorView& v, int64_t count, int64_t classes,
                                                     const std::optional<int64_t>& ignore_index,
                                                     const std::string& describe) {
  std::vector<int64_t> y(static_cast<size_t>(count));
  for (size_t i = 0; i < y.size(); ++i) {
    y[i] = v.dtype == ir::DType::kInt64 ? v.as<const int64_t>()[i] : v.as<const int32_t>()[i];
    if ((y[i] < 0 || y[i] >= classes) && !(ignore_index && y[i] == *ignore_index))
      return OutOfRange(describe, ": label ", y[i], " at position ", i, " is outside [0, ", classes, ")");
  }
  return y;
}

}  // namespace amptrain::kernels::cpu
