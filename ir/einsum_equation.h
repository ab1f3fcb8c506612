// An Einsum equation parsed against its inputs' ranks: one label per dim,
// "..." expanded to labels of its own, the implicit output ("ij,jk" = "ij,jk->ik":
// the labels used once, in alphabetical order, after the ellipsis dims) made
// explicit. Used by Einsum's shape rule and by the importer's lowering.
#pragma once

#include <string>
#include <vector>

#include "ir/status.h"

namespace amptrain::ir {

struct EinsumEquation {
  std::vector<std::string> inputs;  // labels per input dim ("..." as '0', '1', ...)
  std::string output;
};

// Fails with a message naming the equation and what is wrong (the caller adds
// the node).
StatusOr<EinsumEquation> ParseEinsum(const std::string& equation, const std::vector<size_t>& ranks);

}  // namespace amptrain::ir
