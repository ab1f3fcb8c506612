// Loss heads attached by the trainer (and the `grad` CLI) to a forward graph.
//
//   AttachCrossEntropy:      logits [N, C] (or [N, C, d...])
//                            + new graph input "labels" int64 [N] (or [N, d...])
//                            -> SoftmaxCrossEntropyLoss(reduction=mean) -> loss (scalar), log_prob
//   AttachMeanSquaredError:  prediction + new graph input "targets" (prediction's type)
//                            -> MeanSquaredError -> loss (scalar)
// The loss is appended as a graph output named "loss" (made unique when taken);
// the new input's name is in LossHead::target_input.
#pragma once

#include <string>

#include "ir/graph.h"
#include "ir/status.h"

namespace amptrain::autodiff {

struct LossHead {
  ir::Value loss;
  ir::Value logits;
  std::string target_input;  // graph input added: "labels" int64 [batch] or "targets"
};

StatusOr<LossHead> AttachCrossEntropy(ir::Graph& g, ir::Value logits, float label_smoothing = 0.0f);  // SoftmaxCrossEntropyLoss, reduction mean
StatusOr<LossHead> AttachMeanSquaredError(ir::Graph& g, ir::Value prediction);

}  // namespace amptrain::autodiff
