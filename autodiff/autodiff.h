// The backward-graph builder.
//
//   AMP_ASSIGN_OR_RETURN(BackwardResult r, BuildBackward(g, loss, seed));
//   // r.grads["fc.weight"] is d(seed * loss)/d fc.weight, a value of g.
//
// What BuildBackward does:
//  1. checks that `loss` is a scalar (one element) and `seed` a scalar of its dtype;
//  2. resolves the values to differentiate (BackwardOptions) and keeps the
//     nodes that lie on a path from one of them to the loss through
//     differentiable input slots (ir::OpSchema::is_differentiable) of float
//     values; every other node is pruned (gets no backward);
//  3. walks those nodes in reverse topological order and runs one gradient
//     rule per node (autodiff/rules/*.cc). Gradients that meet at one forward
//     value are summed in one place (a chain of Add nodes, in a fixed order);
//     each input slot gets at most one gradient per node;
//  4. gives every differentiated value its own gradient value named
//     "<name>_grad" (made unique) and appends it as a graph output, in `names` order;
//  5. lists every other initializer in `untrained` with the reason, so that
//     a caller can say which parameters a step leaves alone, and why.
// Backward nodes are named "grad/<forward node name>/<Op>_<k>". The result is
// deterministic: the same graph gives the same backward graph.
//
// Errors: a non-scalar loss, an unknown or non-float wrt name, a node without
// a rule (Unimplemented "no gradient rule for <Op> node '<name>'"), or a rule
// that cannot handle the node's attributes (names the node and op).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"

namespace amptrain::autodiff {

struct BackwardOptions {
  // Names of initializers and/or graph inputs to differentiate. Empty = every float initializer
  // that reaches the loss through differentiable input slots (ir::OpSchema::is_differentiable).
  std::vector<std::string> wrt;
  std::set<std::string> frozen;   // never differentiated (honoured even when listed in wrt)
};

// Why an initializer gets no gradient (BackwardResult::untrained).
enum class NoGradient : uint8_t {
  kFrozen,             // named in BackwardOptions::frozen
  kNotRequested,       // BackwardOptions::wrt is given and does not name it
  kNotFloat,           // an integer or bool initializer
  kUnused,             // the loss does not depend on it
  kNotDifferentiable,  // the loss depends on it only through inputs without a gradient
                       // (indices, shapes, comparisons, Clip bounds): its gradient is structurally zero
};
// A phrase for logs: "the loss does not depend on it".
const char* NoGradientReason(NoGradient why);

struct BackwardResult {
  std::vector<std::string> names;              // differentiated values, in graph order (initializers, then inputs)
  std::map<std::string, ir::Value> grads;      // name -> gradient value (same dtype and shape as the value)
  // Every initializer not in `names`, in graph order, with the reason.
  std::vector<std::pair<std::string, NoGradient>> untrained;
};

// Appends to `graph` the backward of the scalar `loss`, seeded with `seed` (a scalar Value of the
// loss dtype: e.g. a graph input "loss_scale" for loss scaling, or a Constant 1).
// A value listed in opts.wrt that does not reach the loss gets a zero gradient.
StatusOr<BackwardResult> BuildBackward(ir::Graph& graph, ir::Value loss, ir::Value seed,
                                       const BackwardOptions& opts = {});

}  // namespace amptrain::autodiff
