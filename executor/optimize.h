// Inference graph optimizations, run by InferenceSession on its private clone
// of the caller's graph when SessionOptions::optimize is set (never when
// training: the rewrites are exact only for inference-mode BN and drop the
// intermediate values a backward pass would read). The caller's graph, and so
// `amptrain export`, never sees their result.
//
// FoldBatchNormPass: an inference-mode BatchNormalization (one output,
// training_mode 0) whose X is the only use of a Conv output, with constant
// Conv weight/bias and constant BN parameters, all float32, becomes part of
// the Conv:
//     s  = scale / sqrt(var + epsilon)            (per output channel m)
//     W' = W[m, ...] * s[m]      B' = (B - mean) * s + bn_B   (B = 0 if absent)
//   before:  x ─▶ Conv(W, B) ─▶ c ─▶ BatchNormalization(scale, bn_B, mean, var) ─▶ y
//   after:   x ─▶ Conv(W', B') ─▶ y'          (users of y now read y')
// W' and B' are new initializers (computed in double, stored as float32).
//
// FuseConvPass: a Conv whose output has one use and is not a graph output,
// followed by Relu, or by Add with a second input of the same type as the
// Conv output (no broadcasting), optionally followed by Relu (again: one use,
// not a graph output), becomes one FusedConv (ir/ops.def):
//   before:  x ─▶ Conv ─▶ c ─▶ Add(c, z) ─▶ a ─▶ Relu ─▶ y
//   after:   x ─▶ FusedConv(x, W, B, z; activation="Relu") ─▶ y'
//   before:  x ─▶ Conv ─▶ c ─▶ Relu ─▶ y
//   after:   x ─▶ FusedConv(x, W, B; activation="Relu") ─▶ y'
// The fused node keeps the Conv's name and attributes.
#pragma once

#include <string>

#include "ir/graph.h"
#include "ir/pass.h"

namespace amptrain::executor {

class FoldBatchNormPass : public ir::Pass {
 public:
  std::string name() const override { return "fold-batchnorm"; }
  StatusOr<bool> Run(ir::Graph& graph) override;
};

class FuseConvPass : public ir::Pass {
 public:
  std::string name() const override { return "fuse-conv"; }
  StatusOr<bool> Run(ir::Graph& graph) override;
};

// FoldBatchNormPass then FuseConvPass, verifying the graph after each; true
// when anything changed.
StatusOr<bool> OptimizeForInference(ir::Graph& graph);

}  // namespace amptrain::executor
