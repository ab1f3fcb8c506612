// Readable text dump of a Graph, one line per node:
//
//   graph main (opset 17, ir 8)
//     input  x: float32[batch,1,28,28]
//     init   fc.weight: float32[10,512]
//     %y = Gemm(%x, %fc.weight, %fc.bias) {transB=1} : float32[batch,10]  # fc
//     output %y
#pragma once

#include <string>

#include "ir/graph.h"

namespace amptrain::ir {

std::string PrintGraph(const Graph& graph);
std::string PrintAttrValue(const AttrValue& v);

}  // namespace amptrain::ir
