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
// whose output depends on a symbolic dim (Shape of [batch,3]) stays.
#pragma once

#include "ir/pass.h"

namespace amptrain::ir {

class FoldConstants : public Pass {
 public:
  std::string name() const override { return "fold-constants"; }
  // True when a node was folded or removed. Fails only when a shape rule fails.
  StatusOr<bool> Run(Graph& graph) override;
};

}  // namespace amptrain::ir
