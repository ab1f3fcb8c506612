// Structural checks of a Graph: handles point at live nodes, use lists agree
// with inputs, input/output counts fit the op table, names are unique, the
// graph is acyclic, graph outputs exist. Runs after every pass in tests.
#pragma once

#include "ir/graph.h"

namespace amptrain::ir {

Status Verify(const Graph& graph);

}  // namespace amptrain::ir
