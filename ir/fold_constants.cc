#include "ir/fold_constants.h"

namespace amptrain::ir {

namespace {

// Replaces `node` by one Constant per output, keeping the output names.
Status ReplaceByConstants(Graph& graph, Node* node, std::vector<Tensor>& values) {
  std::vector<std::string> names;
  std::vector<Value> constants;
  for (size_t i = 0; i < node->num_outputs(); ++i) {
    names.push_back(graph.name(node->output(i)));
    Node* c = graph.AddNode(OpKind::kConstant, {}, 1, graph.UniqueName(StrCat(node->name(), "_folded")));
    c->mutable_output_info(0).type = TensorType::Of(values[i].dtype(), values[i].dims());
    c->attrs().Set("value", std::move(values[i]));
    graph.ReplaceAllUsesWith(node->output(i), c->output(0));
    constants.push_back(c->output(0));
  }
  AMP_RETURN_IF_ERROR(graph.RemoveNode(node));
  for (size_t i = 0; i < constants.size(); ++i) AMP_RETURN_IF_ERROR(graph.RenameValue(constants[i], names[i]));
  return Status::Ok();
}

}  // namespace

StatusOr<bool> FoldConstants::Run(Graph& graph) {
  AMP_ASSIGN_OR_RETURN(std::vector<Node*> order, graph.TopologicalOrder());
  bool changed = false;
  for (Node* node : order) {
    if (node->op() == OpKind::kConstant) continue;
    std::vector<Tensor> values;
    AMP_RETURN_IF_ERROR(graph.InferNode(node, &values));
    bool all_known = values.size() == node->num_outputs();
    for (const Tensor& v : values) all_known = all_known && !v.empty();
    if (!all_known) continue;
    AMP_RETURN_IF_ERROR(ReplaceByConstants(graph, node, values));
    changed = true;
  }
  if (graph.RemoveDeadNodes() > 0) changed = true;
  return changed;
}

}  // namespace amptrain::ir
