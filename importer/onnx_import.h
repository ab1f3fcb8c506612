// ONNX ModelProto -> ir::Graph.
//
// The input is untrusted: every size, count, name and path is checked and a
// malformed file gives a Status naming the problem (tensor, node, op, opset),
// never a crash. onnx's checker and shape inference are never called.
//
// What import does, in order:
//   1. parse (protobuf, total-bytes limit raised to 2 GiB);
//   2. validate: IR version 3..14, default-domain opset 11..28, every node's
//      op supported (`unsupported op 'Foo' (domain '', opset 17) in node
//      'foo_1'`), names unique and resolvable, no cycle (nodes may come in
//      any order), bounded attribute lists, sane strings;
//   3. build the IR: initializers (a graph input that is also an initializer
//      is an initializer), graph inputs with their declared types, nodes,
//      value_info types of intermediate values, Constant nodes normalized to
//      a "value" tensor attribute;
//   4. rewrite older-opset encodings into the canonical form of
//      ir/op_schema.h (importer/opset_adapters.h);
//   5. InferShapes; optional constant folding and Identity removal. Folding
//      keeps every float initializer and the nodes that carry its data
//      (ir::FoldOptions::keep_float_initializers) unless asked otherwise, so
//      that any imported graph can be trained: Transpose(W) -> MatMul and
//      Gather(table, constant indices) stay, and W and table remain
//      parameters; shape arithmetic folds;
//   6. ir::Verify.
// graph.info() keeps ir_version, opset (the imported one), producer, model
// version, doc, domain, metadata_props, the graph name and other opset imports.
#pragma once

#include <memory>
#include <string>

#include "ir/graph.h"
#include "ir/status.h"

namespace amptrain::importer {

struct ImportOptions {
  bool fold_constants = true;    // ir::FoldConstants after shape inference
  // false: folding may consume float initializers too (Transpose(W) becomes a
  // constant W^T and W is gone), which freezes them in a graph that is then
  // trained: for inference only (the executor folds such nodes per plan anyway).
  bool keep_float_initializers = true;
  bool remove_identity = true;   // see RemoveIdentityNodes
};

// Reads `path`; external data resolves against the file's folder.
StatusOr<std::unique_ptr<ir::Graph>> ImportModelFile(const std::string& path, const ImportOptions& opts = {});
// model_dir: the folder external data paths are resolved against ("" = no external data allowed).
StatusOr<std::unique_ptr<ir::Graph>> ImportModelBytes(const std::string& bytes, const std::string& model_dir,
                                                      const ImportOptions& opts = {});

// Replaces uses of each Identity's output with its input and removes the
// node. When the output is a graph output the graph output keeps its name:
// the input value is renamed to it, unless the input is a graph input, an
// initializer or itself a graph output, in which case the Identity stays.
StatusOr<bool> RemoveIdentityNodes(ir::Graph& graph);

}  // namespace amptrain::importer
