// Top-1 accuracy of a batch's logits, counted on the host after each step.
#pragma once

#include <cstdint>

#include "autodiff/loss.h"
#include "ir/tensor.h"

namespace amptrain::executor::train {

// Top-1 hits of fp32 (or fp16/bf16, widened exactly) logits against int64 labels: [B, K] against [B], or
// per position with the classes on `class_axis` ([B, K, d...] or
// [B, d..., K] against [B, d...]). The prediction is the first index of the
// largest logit (NaNs never win; a NaN first logit predicts class 0).
// Labels equal to `ignore_index` are not counted. Other shapes or types
// count nothing. On up to `threads` threads (0: OpenMP's default).
struct Hits {
  int64_t correct = 0;
  int64_t counted = 0;  // labels that are not ignore_index
};
Hits CountCorrect(const ir::Tensor& logits, const ir::Tensor& labels, int64_t class_axis = 1,
                  int64_t ignore_index = autodiff::kDefaultIgnoreIndex, int threads = 1);

}  // namespace amptrain::executor::train
