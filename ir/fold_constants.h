// FoldConstants: replaces every node whose outputs all have propagated
// values (see InferContext::output_values) by Constant nodes, then removes
// the nodes nothing depends on any more.
//
// Before (x: float32[2,3,4,4], a torch-1.13 flatten):
//   s = Shape(x); d = Gather(s, 0); u = Unsqueeze(d, [0]); c = Concat(u, [-1]); y = Reshape(x, c)
// After:
//   c = Constant([2,-1]); y = Reshape(x, c)
//
// The Constant takes over the replaced output's *name*, so graph outputs and
// later lookups by name survive. Nodes are visited in topological order, so
// a chain folds in one run. Values only flow through ops whose rules
// propagate them and only up to kMaxPropagatedElements elements; a node
// whose output depends on a symbolic dim (Shape of [batch,3]) stays. One
// exception: Gather(Shape(x), constant indices) folds when the dims it picks
// are static (E = q.size(-1) in PyTorch's attention exports, x [seq, batch, E]),
// so index arithmetic on them folds and Slice bounds become constants.
//
// FoldOptions::keep_float_initializers (the importer's default): a graph that
// may be trained keeps every float initializer and every node that carries
// one's data toward a graph output, because those initializers are
// parameters (or BatchNormalization running statistics) whose values change
// every step. A node is kept when it reads the data of a float initializer
// or of a kept node (Shape reads only the type) and some graph output
// depends on its result other than as a shape argument (an input slot
// marked as a value input in ir/ops.def: Reshape's shape, Slice's starts,
// Resize's scales, ...). Float initializers nothing uses stay too. Shape
// arithmetic still folds:
//   W: float[4,3] initializer, x: float[2,3]
//   t = Transpose(W); y = MatMul(x, t)          t stays (folded, W would be lost)
//   s = Shape(W); r = Reshape(x, Concat(s[1:], [-1]))   the shape chain folds
#pragma once

#include "ir/pass.h"

namespace amptrain::ir {

struct FoldOptions {
  bool keep_float_initializers = false;  // see above
};

class FoldConstants : public Pass {
 public:
  explicit FoldConstants(FoldOptions options = {}) : options_(options) {}
  std::string name() const override { return "fold-constants"; }
  // True when a node was folded or removed. Fails only when a shape rule fails.
  StatusOr<bool> Run(Graph& graph) override;

 private:
  FoldOptions options_;
};

}  // namespace amptrain::ir
