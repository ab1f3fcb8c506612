// Pieces shared by the shape rules of the training ops (ir/infer/loss.cc,
// grad.cc) and their CPU kernels (kernels/cpu/loss.cc, grad_*.cc), so the
// attribute decoding of a rule and its kernel cannot disagree.
#pragma once

#include <cstdint>
#include <optional>

#include "ir/infer/infer_util.h"

namespace amptrain::ir {

// ---- SoftmaxCrossEntropyLoss(+Grad) attributes ------------------------------
enum class LossReduction { kMean, kSum, kNone };

struct LossAttrs {
  LossReduction reduction = LossReduction::kMean;
  std::optional<int64_t> ignore_index;  // absent: every label counts
  double label_smoothing = 0.0;         // in [0, 1]
};

// Decodes reduction (mean|sum|none, default mean), ignore_index and
// label_smoothing. Messages do not name the node: callers prefix them.
StatusOr<LossAttrs> ParseLossAttrs(const Attributes& attrs);

inline bool IsIndexType(DType t) { return t == DType::kInt32 || t == DType::kInt64; }

// ---- Rule helpers -------------------------------------------------------------
// The common refinement of two shapes that must agree (same rank, equal static
// dims; a static dim wins over a symbol, a named symbol over an unknown one).
// Error "<what> has shape b, expected a" otherwise.
StatusOr<Shape> MergeShapes(const InferContext& ctx, const Shape& a, const Shape& b, const char* what);

}  // namespace amptrain::ir
