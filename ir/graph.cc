#include "ir/graph.h"

#include <algorithm>
#include <queue>

namespace amptrain::ir {

std::string Node::Describe() const { return StrCat(schema().name, " node '", name_, "'"); }

Status Node::Annotate(const Status& s) const {
  if (s.ok()) return s;
  const std::string who = Describe();
  if (s.message().find(who) != std::string::npos) return s;
  return s.WithContext(who);
}

std::unique_ptr<Graph> Graph::Clone() const {
  auto g = std::make_unique<Graph>();
  g->info_ = info_;
  g->nodes_.resize(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i]) g->nodes_[i] = std::make_unique<Node>(*nodes_[i]);
  g->live_nodes_ = live_nodes_;
  g->inputs_ = inputs_;
  g->initializers_ = initializers_;
  g->outputs_ = outputs_;
  g->names_ = names_;
  g->value_by_name_ = value_by_name_;
  return g;
}

std::string Graph::UniqueName(const std::string& base) {
  std::string b = base.empty() ? "v" : base;
  if (!names_.count(b)) return b;
  for (size_t i = 1;; ++i) {
    std::string c = StrCat(b, "_", i);
    if (!names_.count(c)) return c;
  }
}

Node* Graph::NewNode(OpKind op, std::string name, size_t num_outputs, std::vector<std::string> output_names) {
  auto n = std::make_unique<Node>();
  n->id_ = static_cast<NodeId>(nodes_.size());
  n->op_ = op;
  if (name.empty()) name = StrCat(Schema(op).name, "_", n->id_);
  n->name_ = std::move(name);
  n->outputs_.resize(num_outputs);
  for (size_t i = 0; i < num_outputs; ++i) {
    std::string want = i < output_names.size() && !output_names[i].empty() ? output_names[i]
                                                                          : StrCat(n->name_, ":", i);
    std::string unique = UniqueName(want);
    names_.insert(unique);
    value_by_name_[unique] = Value{n->id_, static_cast<uint32_t>(i)};
    n->outputs_[i].info.name = std::move(unique);
  }
  Node* raw = n.get();
  nodes_.push_back(std::move(n));
  ++live_nodes_;
  return raw;
}

Value Graph::AddInput(const std::string& name, TensorType type) {
  Node* n = NewNode(OpKind::kInput, name, 1, {name});
  n->outputs_[0].info.type = std::move(type);
  inputs_.push_back(n->output(0));
  return n->output(0);
}

Value Graph::AddInitializer(const std::string& name, Tensor value) {
  Node* n = NewNode(OpKind::kInitializer, name, 1, {name});
  n->outputs_[0].info.type = TensorType::Of(value.dtype(), value.dims());
  n->attrs_.Set("value", std::move(value));
  initializers_.push_back(n->output(0));
  return n->output(0);
}

Node* Graph::AddNode(OpKind op, std::vector<Value> inputs, size_t num_outputs, std::string name,
                     std::vector<std::string> output_names) {
  Node* n = NewNode(op, std::move(name), num_outputs, std::move(output_names));
  n->inputs_ = std::move(inputs);
  for (size_t i = 0; i < n->inputs_.size(); ++i)
    if (n->inputs_[i].valid()) AddUse(n->inputs_[i], Use{n->id_, static_cast<uint32_t>(i)});
  return n;
}

void Graph::AddOutput(Value v) { outputs_.push_back(v); }

void Graph::AddUse(Value v, Use u) { nodes_[v.node]->outputs_[v.index].uses.push_back(u); }

void Graph::RemoveUse(Value v, Use u) {
  auto& uses = nodes_[v.node]->outputs_[v.index].uses;
  auto it = std::find(uses.begin(), uses.end(), u);
  if (it != uses.end()) uses.erase(it);
}

void Graph::SetInput(Node* node, size_t slot, Value v) {
  if (slot >= node->inputs_.size()) node->inputs_.resize(slot + 1);
  Value old = node->inputs_[slot];
  Use u{node->id_, static_cast<uint32_t>(slot)};
  if (old.valid()) RemoveUse(old, u);
  node->inputs_[slot] = v;
  if (v.valid()) AddUse(v, u);
}

void Graph::ReplaceAllUsesWith(Value from, Value to) {
  if (from == to) return;
  std::vector<Use> uses = nodes_[from.node]->outputs_[from.index].uses;
  for (const Use& u : uses) SetInput(nodes_[u.node].get(), u.slot, to);
  for (Value& o : outputs_)
    if (o == from) o = to;
}

void Graph::SetOutput(size_t i, Value v) { outputs_[i] = v; }

bool Graph::is_graph_output(Value v) const { return std::find(outputs_.begin(), outputs_.end(), v) != outputs_.end(); }

Status Graph::RemoveNode(Node* node) {
  for (size_t i = 0; i < node->num_outputs(); ++i) {
    if (!node->outputs_[i].uses.empty() || is_graph_output(node->output(i)))
      return FailedPrecondition("cannot remove ", node->Describe(), ": output '", node->outputs_[i].info.name,
                                "' is still used");
  }
  for (size_t s = 0; s < node->inputs_.size(); ++s)
    if (node->inputs_[s].valid()) RemoveUse(node->inputs_[s], Use{node->id_, static_cast<uint32_t>(s)});
  for (auto& o : node->outputs_) {
    names_.erase(o.info.name);
    value_by_name_.erase(o.info.name);
  }
  auto drop = [&](std::vector<Value>& list) {
    list.erase(std::remove_if(list.begin(), list.end(), [&](Value v) { return v.node == node->id_; }), list.end());
  };
  drop(inputs_);
  drop(initializers_);
  nodes_[node->id_].reset();
  --live_nodes_;
  return Status::Ok();
}

size_t Graph::RemoveDeadNodes(bool keep_initializers) {
  std::vector<bool> live(nodes_.size(), false);
  std::vector<NodeId> stack;
  for (Value v : outputs_) stack.push_back(v.node);
  for (Value v : inputs_) stack.push_back(v.node);  // graph inputs always stay
  if (keep_initializers)
    for (Value v : initializers()) stack.push_back(v.node);
  while (!stack.empty()) {
    NodeId id = stack.back();
    stack.pop_back();
    if (live[id]) continue;
    live[id] = true;
    for (Value in : nodes_[id]->inputs_)
      if (in.valid() && !live[in.node]) stack.push_back(in.node);
  }
  size_t removed = 0;
  // Consumers must go before producers; repeat until nothing more can go.
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = nodes_.size(); i-- > 0;) {
      if (!nodes_[i] || live[i]) continue;
      if (RemoveNode(nodes_[i].get()).ok()) {
        ++removed;
        progress = true;
      }
    }
  }
  return removed;
}

Status Graph::RenameValue(Value v, const std::string& name) {
  ValueInfo& vi = mutable_info(v);
  if (vi.name == name) return Status::Ok();
  if (names_.count(name)) return InvalidArgument("value name '", name, "' is already used");
  names_.erase(vi.name);
  value_by_name_.erase(vi.name);
  vi.name = name;
  names_.insert(name);
  value_by_name_[name] = v;
  return Status::Ok();
}

const Tensor* Graph::ConstantValue(Value v) const {
  const Node* n = producer(v);
  if (!n || (n->op_ != OpKind::kInitializer && n->op_ != OpKind::kConstant)) return nullptr;
  auto it = n->attrs_.all().find("value");
  if (it == n->attrs_.all().end()) return nullptr;
  return std::get_if<Tensor>(&it->second);
}

Value Graph::FindValue(const std::string& name) const {
  auto it = value_by_name_.find(name);
  return it == value_by_name_.end() ? Value{} : it->second;
}

std::vector<Node*> Graph::nodes() {
  std::vector<Node*> out;
  out.reserve(live_nodes_);
  for (auto& n : nodes_)
    if (n) out.push_back(n.get());
  return out;
}

std::vector<const Node*> Graph::nodes() const {
  std::vector<const Node*> out;
  out.reserve(live_nodes_);
  for (const auto& n : nodes_)
    if (n) out.push_back(n.get());
  return out;
}

StatusOr<std::vector<const Node*>> Graph::TopologicalOrder() const {
  // Kahn's algorithm with a min-heap on NodeId: deterministic, creation order first.
  std::vector<int> pending(nodes_.size(), 0);
  std::priority_queue<NodeId, std::vector<NodeId>, std::greater<>> ready;
  for (const auto& n : nodes_) {
    if (!n) continue;
    for (Value in : n->inputs_) if (in.valid()) ++pending[n->id_];
    if (pending[n->id_] == 0) ready.push(n->id_);
  }
  std::vector<const Node*> order;
  order.reserve(live_nodes_);
  size_t visited = 0;
  while (!ready.empty()) {
    NodeId id = ready.top();
    ready.pop();
    ++visited;
    const Node* n = nodes_[id].get();
    if (n->op_ != OpKind::kInput && n->op_ != OpKind::kInitializer) order.push_back(n);
    for (const auto& o : n->outputs_)
      for (const Use& u : o.uses)
        if (--pending[u.node] == 0) ready.push(u.node);
  }
  if (visited != live_nodes_) return InvalidArgument("graph has a cycle");
  return order;
}

StatusOr<std::vector<Node*>> Graph::TopologicalOrder() {
  AMP_ASSIGN_OR_RETURN(auto order, static_cast<const Graph*>(this)->TopologicalOrder());
  std::vector<Node*> out;
  out.reserve(order.size());
  for (const Node* n : order) out.push_back(nodes_[n->id_].get());
  return out;
}

Status Graph::InferNode(Node* node, std::vector<Tensor>* values,
                        const std::unordered_map<Value, Tensor, ValueHash>* known) {
  InferContext ctx;
  ctx.node = node;
  ctx.attrs = &node->attrs_;
  ctx.opset = static_cast<int>(info_.opset);
  for (Value in : node->inputs_) {
    ctx.inputs.push_back(in.valid() ? type(in) : TensorType{});
    const Tensor* value = in.valid() ? ConstantValue(in) : nullptr;
    if (!value && known && in.valid()) {
      auto it = known->find(in);
      if (it != known->end()) value = &it->second;
    }
    ctx.values.push_back(value);
    ctx.sym_values.push_back(in.valid() && info(in).sym_value ? &*info(in).sym_value : nullptr);
  }
  ctx.outputs.resize(node->num_outputs());
  ctx.output_values.resize(node->num_outputs());
  ctx.output_sym_values.resize(node->num_outputs());
  for (size_t i = 0; i < node->num_outputs(); ++i) ctx.outputs[i] = node->outputs_[i].info.type;
  AMP_RETURN_IF_ERROR(node->Annotate(node->schema().infer(ctx)));
  for (size_t i = 0; i < node->num_outputs(); ++i) {
    node->outputs_[i].info.type = std::move(ctx.outputs[i]);
    node->outputs_[i].info.sym_value = std::move(ctx.output_sym_values[i]);
  }
  if (values) *values = std::move(ctx.output_values);
  return Status::Ok();
}

Status Graph::InferShapes() {
  AMP_ASSIGN_OR_RETURN(auto order, TopologicalOrder());
  std::unordered_map<Value, Tensor, ValueHash> known;
  for (Node* n : order) {
    std::vector<Tensor> values;
    AMP_RETURN_IF_ERROR(InferNode(n, &values, &known));
    for (size_t i = 0; i < values.size(); ++i)
      if (!values[i].empty()) known.emplace(n->output(i), std::move(values[i]));
  }
  return Status::Ok();
}

}  // namespace amptrain::ir
