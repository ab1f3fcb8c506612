// Loss heads attached by the trainer (and the `grad` CLI) to a forward graph.
//
//   AttachCrossEntropy:      logits [N, C], or per position [N, C, d...] (classes
//                            first: PyTorch's CrossEntropyLoss layout, segmentation)
//                            or [N, d..., C] (classes last: a transformer's
//                            per-token logits)
//                            + new graph input "labels" int64 [N] (or [N, d...])
//                            -> SoftmaxCrossEntropyLoss(reduction=mean, ignore_index)
//                            -> loss (scalar: the mean over the labels that are
//                            not ignore_index), log_prob
//                            Classes last: logits -> Reshape [-1, C] and labels
//                            -> Reshape [-1] before the loss (rows, not a
//                            Transpose of the logits; the same mean).
//   AttachMeanSquaredError:  prediction + new graph input "targets" (prediction's type)
//                            -> MeanSquaredError -> loss (scalar)
// The loss is appended as a graph output named "loss" (made unique when taken);
// the new input's name is in LossHead::target_input.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"

namespace amptrain::autodiff {

struct LossHead {
  ir::Value loss;
  ir::Value logits;
  std::string target_input;  // graph input added: "labels" int64 [batch] or "targets"
  int64_t class_axis = 1;    // cross-entropy: the axis of the logits that holds the classes
};

// PyTorch's CrossEntropyLoss default, also the Hugging Face convention for
// padding and prompt tokens.
inline constexpr int64_t kDefaultIgnoreIndex = -100;

// Where the classes are in logits of rank > 2.
enum class ClassAxis {
  kAuto,   // from label_dims: the layout whose other dims are the labels'
  kFirst,  // [N, C, d...]
  kLast,   // [N, d..., C]
};

struct CrossEntropyOptions {
  float label_smoothing = 0.0f;  // in [0, 1]
  ClassAxis class_axis = ClassAxis::kAuto;
  // The labels of one sample, when known ({} for one label per sample,
  // {T} per token, {H, W} per pixel). kAuto needs them for logits of rank
  // > 2 whose layout the dims do not settle (both or neither fit); with
  // them, the logits must fit them.
  std::optional<std::vector<int64_t>> label_dims;
  int64_t ignore_index = kDefaultIgnoreIndex;  // labels equal to it count in neither loss nor accuracy
};

// SoftmaxCrossEntropyLoss, reduction mean. Errors name the logits and their
// shape: not float, rank < 2, labels that fit neither layout or both.
StatusOr<LossHead> AttachCrossEntropy(ir::Graph& g, ir::Value logits, const CrossEntropyOptions& options);
StatusOr<LossHead> AttachCrossEntropy(ir::Graph& g, ir::Value logits, float label_smoothing = 0.0f);

// The class axis of `logits` (rank >= 2) under `options`, resolved as
// AttachCrossEntropy resolves it: 1 for rank 2.
StatusOr<int64_t> ResolveClassAxis(const ir::TensorType& logits, const std::string& name,
                                   const CrossEntropyOptions& options);
StatusOr<LossHead> AttachMeanSquaredError(ir::Graph& g, ir::Value prediction);

}  // namespace amptrain::autodiff
