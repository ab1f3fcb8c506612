// The IR: Graph, Node, Value.
//
// A Value is a (node, output#) handle. Graph inputs and initializers are
// source nodes of kind Input / Initializer, so every Value has a producer.
// Uses are tracked by the graph and change only through its rewrite API
// (SetInput, ReplaceAllUsesWith, RemoveNode, SetOutput): callers never edit
// two indices that must agree.
//
//   Graph g;
//   Value x = g.AddInput("x", TensorType::Of(DType::kFloat32, {1, 4}));
//   Node* relu = g.AddNode(OpKind::kRelu, {x});
//   g.AddOutput(relu->output(0));
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/attribute.h"
#include "ir/op_schema.h"
#include "ir/shape.h"
#include "ir/status.h"
#include "ir/tensor.h"

namespace amptrain::ir {

using NodeId = uint32_t;
inline constexpr NodeId kNoNode = 0xffffffffu;

struct Value {
  NodeId node = kNoNode;
  uint32_t index = 0;

  bool valid() const { return node != kNoNode; }
  bool operator==(const Value& o) const { return node == o.node && index == o.index; }
  bool operator!=(const Value& o) const { return !(*this == o); }
  bool operator<(const Value& o) const { return node != o.node ? node < o.node : index < o.index; }
};

struct ValueHash {
  size_t operator()(const Value& v) const { return (static_cast<size_t>(v.node) << 20) ^ v.index; }
};

// A consumer of a value: input `slot` of node `node`.
struct Use {
  NodeId node;
  uint32_t slot;
  bool operator==(const Use& o) const { return node == o.node && slot == o.slot; }
};

struct ValueInfo {
  std::string name;   // unique in the graph; the ONNX tensor name
  TensorType type;
  std::string doc;
  // A small integer tensor's elements as dims (ir/shape.h SymInt), where
  // shape inference could tell: Shape's output and the shape arithmetic on
  // it. Set by InferNode; empty otherwise.
  std::optional<std::vector<SymInt>> sym_value;
};

class Node {
 public:
  NodeId id() const { return id_; }
  OpKind op() const { return op_; }
  const OpSchema& schema() const { return Schema(op_); }
  std::string_view op_name() const { return schema().name; }
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  size_t num_inputs() const { return inputs_.size(); }
  Value input(size_t i) const { return i < inputs_.size() ? inputs_[i] : Value{}; }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i].valid(); }
  const std::vector<Value>& inputs() const { return inputs_; }

  size_t num_outputs() const { return outputs_.size(); }
  Value output(size_t i) const { return Value{id_, static_cast<uint32_t>(i)}; }
  const ValueInfo& output_info(size_t i) const { return outputs_[i].info; }
  ValueInfo& mutable_output_info(size_t i) { return outputs_[i].info; }
  const std::vector<Use>& uses(size_t output) const { return outputs_[output].uses; }

  Attributes& attrs() { return attrs_; }
  const Attributes& attrs() const { return attrs_; }
  // Non-empty for ops of another domain (kept only by the importer for errors).
  const std::string& domain() const { return domain_; }
  const std::string& doc() const { return doc_; }
  void set_doc(std::string doc) { doc_ = std::move(doc); }

  // "Conv node 'conv1'"
  std::string Describe() const;
  // `s` with Describe() in front, unless its message already names this node
  // (helpers such as attribute getters report without knowing the node).
  Status Annotate(const Status& s) const;

 private:
  friend class Graph;
  struct Output {
    ValueInfo info;
    std::vector<Use> uses;
  };
  NodeId id_ = kNoNode;
  OpKind op_ = OpKind::kIdentity;
  std::string name_;
  std::string domain_;
  std::string doc_;
  std::vector<Value> inputs_;
  std::vector<Output> outputs_;
  Attributes attrs_;
};

// Model-level facts the exporter writes back unchanged.
struct ModelInfo {
  int64_t ir_version = 8;
  int64_t opset = 17;                                  // default ("" / ai.onnx) domain
  std::map<std::string, int64_t> other_opsets;         // e.g. ai.onnx.ml
  std::string producer_name, producer_version, domain, doc, graph_name = "main";
  int64_t model_version = 0;
  std::vector<std::pair<std::string, std::string>> metadata;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;
  // Deep copy (same ids, names, attributes; tensors shared, they are immutable by convention).
  std::unique_ptr<Graph> Clone() const;

  ModelInfo& info() { return info_; }
  const ModelInfo& info() const { return info_; }

  // ---- building ----
  Value AddInput(const std::string& name, TensorType type);
  Value AddInitializer(const std::string& name, Tensor value);
  // A node with `num_outputs` outputs named `<node name>:<i>` (made unique)
  // unless names are given. An empty node name gets "<Op>_<id>".
  Node* AddNode(OpKind op, std::vector<Value> inputs, size_t num_outputs = 1, std::string name = "",
                std::vector<std::string> output_names = {});
  void AddOutput(Value v);

  // ---- rewriting ----
  void SetInput(Node* node, size_t slot, Value v);       // slot may be == num_inputs() to append
  void ReplaceAllUsesWith(Value from, Value to);         // graph outputs included
  void SetOutput(size_t i, Value v);
  void ClearOutputs() { outputs_.clear(); }
  // Removes a node whose outputs have no uses and are not graph outputs.
  Status RemoveNode(Node* node);
  // Removes nodes (and unused initializers, unless `keep_initializers`) that
  // no graph output depends on. Returns the count.
  size_t RemoveDeadNodes(bool keep_initializers = false);
  // Renames a value; fails when the name is taken.
  Status RenameValue(Value v, const std::string& name);

  // ---- queries ----
  Node* node(NodeId id) { return id < nodes_.size() ? nodes_[id].get() : nullptr; }
  const Node* node(NodeId id) const { return id < nodes_.size() ? nodes_[id].get() : nullptr; }
  Node* producer(Value v) { return node(v.node); }
  const Node* producer(Value v) const { return node(v.node); }
  const ValueInfo& info(Value v) const { return nodes_[v.node]->outputs_[v.index].info; }
  ValueInfo& mutable_info(Value v) { return nodes_[v.node]->outputs_[v.index].info; }
  const TensorType& type(Value v) const { return info(v).type; }
  const std::string& name(Value v) const { return info(v).name; }
  const std::vector<Use>& uses(Value v) const { return nodes_[v.node]->outputs_[v.index].uses; }
  bool is_graph_output(Value v) const;
  // The tensor of an Initializer/Constant producer, nullptr otherwise.
  const Tensor* ConstantValue(Value v) const;
  Value FindValue(const std::string& name) const;      // invalid Value if absent

  // Live nodes in creation order (sources included).
  std::vector<Node*> nodes();
  std::vector<const Node*> nodes() const;
  size_t num_nodes() const { return live_nodes_; }
  const std::vector<Value>& inputs() const { return inputs_; }
  const std::vector<Value>& initializers() const { return initializers_; }
  const std::vector<Value>& outputs() const { return outputs_; }
  // Compute nodes (not Input/Initializer) in a topological order that is
  // stable: among ready nodes, creation order wins. Fails on a cycle.
  StatusOr<std::vector<Node*>> TopologicalOrder();
  StatusOr<std::vector<const Node*>> TopologicalOrder() const;

  std::string UniqueName(const std::string& base);

  // Runs every node's shape/dtype rule in topological order, using constant
  // inputs and the values earlier rules propagated (shape arithmetic: a
  // Slice bound computed from Constants, a Reshape target built from Shape)
  // where known. Overwrites output types; the graph itself is not changed.
  Status InferShapes();
  // One node's rule with the current input types; fills its outputs. When
  // `values` is given it receives the propagated output values (empty
  // Tensors where unknown), see InferContext. `known` (optional) holds
  // values of non-constant inputs.
  Status InferNode(Node* node, std::vector<Tensor>* values = nullptr,
                   const std::unordered_map<Value, Tensor, ValueHash>* known = nullptr);

 private:
  Node* NewNode(OpKind op, std::string name, size_t num_outputs, std::vector<std::string> output_names);
  void AddUse(Value v, Use u);
  void RemoveUse(Value v, Use u);

  ModelInfo info_;
  std::vector<std::unique_ptr<Node>> nodes_;  // index == NodeId; nullptr once removed
  size_t live_nodes_ = 0;
  std::vector<Value> inputs_, initializers_, outputs_;
  std::unordered_set<std::string> names_;     // value and node names in use
  std::unordered_map<std::string, Value> value_by_name_;
};

template <class... A>
Status InferContext::Error(const A&... a) const {
  return InvalidArgument(node ? node->Describe() : std::string("node"), ": ", a...);
}

}  // namespace amptrain::ir
