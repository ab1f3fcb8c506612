// Training mode for a forward graph, whatever mode it was exported in.
//
//   BatchNormalization(X, scale, B, mean, var) -> Y
//     becomes BatchNormalization[training_mode=1](...) -> Y, mean.update, var.update
//   with the two running-stat outputs appended as graph outputs named
//   "<mean initializer name>.update" / "<var initializer name>.update" (kept
//   as they are when already graph outputs) and listed in bn_updates;
//   statistics computed in the graph rather than initializers (PyTorch's
//   track_running_stats=False) are not state and get no outputs.
//   Dropout(X, ratio?) -> Y
//     becomes Dropout(X, ratio?, training_mode=true) -> Y, mask (opts.dropout),
//     or is bypassed: its users read X (opts.dropout == false).
// A node that needs more outputs is replaced by a copy with the same name,
// inputs and attributes; its first output keeps its value name.
#pragma once

#include <map>
#include <string>

#include "ir/graph.h"
#include "ir/status.h"

namespace amptrain::autodiff {

struct TrainingGraphOptions {
  bool dropout = true;  // false: Dropout nodes are bypassed (the `grad` CLI's "Dropout off")
};

// Puts a forward graph in training mode whatever mode it was exported in: every BatchNormalization
// gets training_mode=1 and 3 outputs (Y, running_mean, running_var); the running-stat outputs
// become graph outputs named "<running_mean initializer name>.update" etc. and are listed in
// `bn_updates` (initializer name -> output name) so the trainer can copy them back after a step.
// Dropout nodes get the training_mode input true and a mask output (needed by DropoutGrad), or are
// bypassed when opts.dropout is false. An eval-mode export whose BN was folded into Conv trains as is.
struct TrainingGraphInfo {
  std::map<std::string, std::string> bn_updates;
};
StatusOr<TrainingGraphInfo> ToTrainingMode(ir::Graph& g, const TrainingGraphOptions& opts = {});

}  // namespace amptrain::autodiff
