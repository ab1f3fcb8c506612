#include "ir/fold_constants.h"

#include <algorithm>
#include <set>
#include <utility>

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

// Gather(Shape(x), constant indices) when the picked dims of x are static, though
// others are not: E = q.size(-1) in PyTorch's attention exports, where x has a
// symbolic batch. Empty when the node is not of that form.
Tensor GatherOfStaticDims(const Graph& g, const Node* n) {
  if (n->op() != OpKind::kGather || n->attrs().Int("axis", 0) != 0) return Tensor();
  const Node* shape = g.producer(n->input(0));
  const Tensor* indices = g.ConstantValue(n->input(1));
  if (shape->op() != OpKind::kShape || !indices || !IsInteger(indices->dtype())) return Tensor();
  const TensorType& x = g.type(shape->input(0));
  if (!x.has_shape) return Tensor();
  const int64_t r = static_cast<int64_t>(x.shape.rank());
  int64_t start = shape->attrs().Int("start", 0), end = shape->attrs().Int("end", r);
  start = std::clamp<int64_t>(start < 0 ? start + r : start, 0, r);
  end = std::clamp<int64_t>(end < 0 ? end + r : end, 0, r);
  const int64_t n_dims = std::max<int64_t>(end - start, 0);
  std::vector<int64_t> picked;
  for (int64_t i : indices->ToInt64Vector()) {
    if (i < -n_dims || i >= n_dims) return Tensor();  // the shape rule reports it
    const Dim& d = x.shape[static_cast<size_t>(start + (i < 0 ? i + n_dims : i))];
    if (!d.is_static()) return Tensor();
    picked.push_back(d.value);
  }
  return Tensor::Int64s(picked, indices->dims());
}

bool IsFloatInitializer(const Graph& g, Value v) {
  return v.valid() && g.producer(v)->op() == OpKind::kInitializer && IsFloat(g.type(v).dtype);
}

// The nodes that carry a float initializer's data toward a graph output
// (FoldOptions::keep_float_initializers); `order` is topological.
std::set<NodeId> FloatInitializerPaths(const Graph& g, const std::vector<Node*>& order) {
  // Nodes some graph output depends on other than through a value-input slot.
  std::set<NodeId> needed;
  for (Value v : g.outputs()) needed.insert(v.node);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node* n = *it;
    if (!needed.count(n->id())) continue;
    for (size_t i = 0; i < n->num_inputs(); ++i)
      if (n->has_input(i) && !n->schema().is_value_input(i)) needed.insert(n->input(i).node);
  }
  std::set<NodeId> kept;
  for (const Node* n : order) {
    if (!needed.count(n->id()) || n->op() == OpKind::kShape) continue;
    for (Value in : n->inputs())
      if (IsFloatInitializer(g, in) || (in.valid() && kept.count(in.node))) {
        kept.insert(n->id());
        break;
      }
  }
  return kept;
}

// Graph::RemoveDeadNodes, except that float initializers stay.
size_t RemoveDeadKeepingFloatInitializers(Graph& g) {
  NodeId end = 0;
  for (const Node* n : std::as_const(g).nodes()) end = std::max(end, n->id() + 1);
  std::vector<bool> live(end, false);
  std::vector<NodeId> stack;
  for (Value v : g.outputs()) stack.push_back(v.node);
  for (Value v : g.inputs()) stack.push_back(v.node);
  for (Value v : g.initializers())
    if (IsFloat(g.type(v).dtype)) stack.push_back(v.node);
  while (!stack.empty()) {
    NodeId id = stack.back();
    stack.pop_back();
    if (live[id]) continue;
    live[id] = true;
    for (Value in : g.node(id)->inputs())
      if (in.valid()) stack.push_back(in.node);
  }
  size_t removed = 0;
  for (bool progress = true; progress;) {  // consumers go before producers
    progress = false;
    std::vector<Node*> nodes = g.nodes();
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      if (live[(*it)->id()] || !g.RemoveNode(*it).ok()) continue;
      ++removed;
      progress = true;
    }
  }
  return removed;
}

}  // namespace

StatusOr<bool> FoldConstants::Run(Graph& graph) {
  AMP_ASSIGN_OR_RETURN(std::vector<Node*> order, graph.TopologicalOrder());
  std::set<NodeId> kept;
  if (options_.keep_float_initializers) kept = FloatInitializerPaths(graph, order);
  bool changed = false;
  for (Node* node : order) {
    if (node->op() == OpKind::kConstant) continue;
    std::vector<Tensor> values;
    AMP_RETURN_IF_ERROR(graph.InferNode(node, &values));  // kept nodes too: their inputs may have folded
    if (kept.count(node->id())) continue;
    bool all_known = values.size() == node->num_outputs();
    for (const Tensor& v : values) all_known = all_known && !v.empty();
    if (!all_known && node->num_outputs() == 1) {
      values.assign(1, GatherOfStaticDims(graph, node));
      all_known = !values[0].empty();
    }
    if (!all_known) continue;
    AMP_RETURN_IF_ERROR(ReplaceByConstants(graph, node, values));
    changed = true;
  }
  size_t removed =
      options_.keep_float_initializers ? RemoveDeadKeepingFloatInitializers(graph) : graph.RemoveDeadNodes();
  return changed || removed > 0;
}

}  // namespace amptrain::ir
