// Models that take their batch on another axis than the first: PyTorch's
// RNNs and nn.Transformer(Encoder) default to batch_first=False, so their
// exports read [T, B, ...]. The data sets (npy rows, images) are [N, ...]
// and batched along their first axis; `train --batch-axis` rewrites the model
// so that such an input takes [B, T, ...] and a Transpose gives the model its
// own layout back, then undoes that on the trained model before export:
//   before:  x [T, B, F] ──▶ model
//   during:  x [B, T, F] ──▶ Transpose(perm 1, 0, 2) "<x>/batch_axis" ──▶ model
// The outputs are left as they are: the loss reads the logits as they come
// ([B, K] from a head on one step; a per-step [T, B, K] output needs its
// labels in that layout).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"

namespace amptrain::executor::train {

// A data input that takes its batch at `axis` (0: the first, as it is).
struct BatchAxis {
  std::string input;
  int64_t axis = 0;
};

// The inputs of `--batch-axis` values: "AXIS" (every data input of rank
// above AXIS) or "NAME=AXIS"; 0 keeps an input as it is. Errors name an
// unknown input, an axis outside the input's rank, a malformed value, or an
// input named twice.
StatusOr<std::vector<BatchAxis>> ParseBatchAxes(const std::vector<std::string>& specs, const ir::Graph& model);

// The inputs whose export says where their batch is: a static first dim and
// a later dim whose symbolic name is the first dim of an output (PyTorch's
// dynamic_axes {1: "batch"} on [T, B] ids with logits [B, K]).
std::vector<BatchAxis> DetectBatchAxes(const ir::Graph& model);

// Each listed input of `model` takes its batch first (see above).
Status MoveBatchAxesFirst(ir::Graph& model, const std::vector<BatchAxis>& axes);

// The inverse of MoveBatchAxesFirst on a graph that came from it (the trained
// model): each input takes its own layout again and its Transpose goes.
Status RestoreBatchAxes(ir::Graph& model, const std::vector<BatchAxis>& axes);

}  // namespace amptrain::executor::train
