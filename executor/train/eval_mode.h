// Evaluation and inference mode for a training export: what PyTorch's
// model.eval() changes, done on the graph.
#pragma once

#include "ir/graph.h"
#include "ir/status.h"

namespace amptrain::executor::train {

// Evaluation mode, as BuildEvalGraph uses it: BatchNormalization with
// training_mode 0 and a single output, and random masks made of ops replaced
// by their expectation (see ToInferenceMode). Dropout nodes stay (an
// inference session runs them as the identity). Fails naming the node when a
// BN running-stat output is used.
Status ToEvalMode(ir::Graph& g);

// Inference mode for export: BatchNormalization with training_mode 0 and one
// output, Dropout nodes removed (their users read the input), and random
// masks made of ops (StochasticDepth: Cast(Less(RandomUniformLike(T), p)))
// replaced by their expectation p, of the mask's shape, as BuildEvalGraph
// does; other random nodes stay, with a warning. Fails naming the node when a
// BN running-stat or Dropout mask output is used.
Status ToInferenceMode(ir::Graph& g);

}  // namespace amptrain::executor::train
