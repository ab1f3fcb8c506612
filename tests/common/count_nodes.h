// How many live nodes of a graph do `op` (tests of graph rewrites).
#pragma once

#include <cstddef>

#include "ir/graph.h"

namespace amptrain::testing {

inline size_t CountNodes(const ir::Graph& g, ir::OpKind op) {
  size_t n = 0;
  for (const ir::Node* node : g.nodes()) n += node->op() == op;
  return n;
}

}  // namespace amptrain::testing
