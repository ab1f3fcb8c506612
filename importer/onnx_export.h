// ir::Graph -> ONNX ModelProto.
//
// Writes initializers (raw_data, little-endian), graph inputs and outputs in
// the graph's order and with their names, nodes in the graph's stable
// topological order with attributes in name order, Constant nodes as
// Constant nodes, value_info (shapes, symbolic dims as dim_param) for every
// other value with a known dtype, the opset (ExportOptions.opset or the
// graph's), ir_version and the model metadata of graph.info(). The same
// graph always gives the same bytes.
//
// Canonical-form inputs that the target opset spells as attributes are
// written back as attributes (importer/opset_adapters.h); that needs them to
// be constants, and fails naming the node otherwise. The graph itself is not
// changed (the exporter works on a copy).
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph.h"
#include "ir/status.h"

namespace amptrain::importer {

struct ExportOptions {
  int64_t opset = 0;  // 0: write graph.info().opset (the imported one)
};

// Ok when the exporter can write `opset` (the importer's range, 11..28);
// otherwise an error naming the range.
Status CheckWritableOpset(int64_t opset);

StatusOr<std::string> ExportModelBytes(const ir::Graph& graph, const ExportOptions& opts = {});

// Atomic: writes PATH.tmp-XXXX in the same folder, fsyncs, renames over PATH,
// fsyncs the folder. No partial file on error.
Status ExportModelFile(const ir::Graph& graph, const std::string& path, const ExportOptions& opts = {});

}  // namespace amptrain::importer
