// Checks of an untrusted ModelProto before any IR is built.
#include <algorithm>
#include <functional>
#include <optional>
#include <queue>
#include <unordered_map>

#include "importer/import_internal.h"
#include "importer/opset_adapters.h"
#include "importer/tensor_proto.h"
#include "ir/onnx_dtype.h"
#include "ir/rnn.h"

namespace amptrain::importer::detail {

namespace {

Status CheckName(const std::string& name, const std::string& what) {
  if (name.size() > kMaxNameLength)
    return InvalidArgument(what, " name is ", name.size(), " bytes long (limit ", kMaxNameLength, ")");
  if (name.find('\0') != std::string::npos) return InvalidArgument(what, " name contains a NUL byte");
  return Status::Ok();
}

int64_t DomainOpset(const ir::ModelInfo& info, const std::string& domain) {
  if (IsDefaultDomain(domain)) return info.opset;
  auto it = info.other_opsets.find(domain);
  return it == info.other_opsets.end() ? 0 : it->second;
}

ir::AttrType KindOf(const onnx::AttributeProto& a, bool* supported) {
  using A = onnx::AttributeProto;
  *supported = true;
  switch (a.type()) {
    case A::FLOAT: return ir::AttrType::kFloat;
    case A::INT: return ir::AttrType::kInt;
    case A::STRING: return ir::AttrType::kString;
    case A::TENSOR: return ir::AttrType::kTensor;
    case A::FLOATS: return ir::AttrType::kFloats;
    case A::INTS: return ir::AttrType::kInts;
    case A::STRINGS: return ir::AttrType::kStrings;
    case A::UNDEFINED:  // IR version 1 files: deduce from the field that is set
      if (a.has_f()) return ir::AttrType::kFloat;
      if (a.has_i()) return ir::AttrType::kInt;
      if (a.has_s()) return ir::AttrType::kString;
      if (a.has_t()) return ir::AttrType::kTensor;
      if (a.floats_size()) return ir::AttrType::kFloats;
      if (a.ints_size()) return ir::AttrType::kInts;
      if (a.strings_size()) return ir::AttrType::kStrings;
      break;
    default: break;
  }
  *supported = false;
  return ir::AttrType::kInt;
}

Status CheckAttribute(const onnx::AttributeProto& a, const std::string& op) {
  AMP_RETURN_IF_ERROR(CheckName(a.name(), "attribute"));
  if (a.name().empty()) return InvalidArgument("an attribute of op '", op, "' has no name");
  const std::string what = StrCat("attribute '", a.name(), "' of op '", op, "'");
  if (!a.ref_attr_name().empty()) return Unimplemented(what, " refers to a function attribute");
  using A = onnx::AttributeProto;
  if (a.type() == A::GRAPH || a.type() == A::GRAPHS || a.has_g() || a.graphs_size())
    return Unimplemented(what, " is a subgraph; subgraphs (If/Loop/Scan) are not supported");
  bool supported = false;
  KindOf(a, &supported);
  if (!supported) return Unimplemented(what, " has unsupported attribute type ", a.type());
  if (a.ints_size() > kMaxListLength || a.floats_size() > kMaxListLength || a.strings_size() > kMaxListLength)
    return InvalidArgument(what, " has a list of more than ", kMaxListLength, " elements");
  if (a.s().size() > kMaxStringLength) return InvalidArgument(what, " has a string longer than ", kMaxStringLength);
  for (const auto& s : a.strings())
    if (s.size() > kMaxStringLength) return InvalidArgument(what, " has a string longer than ", kMaxStringLength);
  return Status::Ok();
}

// Counts up to and including the last non-empty name.
int TrimmedCount(const google::protobuf::RepeatedPtrField<std::string>& names) {
  int n = names.size();
  while (n > 0 && names[n - 1].empty()) --n;
  return n;
}

Status CheckNode(const onnx::NodeProto& node, int index, const ir::ModelInfo& info, ir::OpKind* kind) {
  const std::string label = NodeLabel(node, index);
  AMP_RETURN_IF_ERROR(CheckName(node.name(), "node"));
  AMP_RETURN_IF_ERROR(CheckName(node.op_type(), "op type"));
  AMP_RETURN_IF_ERROR(CheckName(node.domain(), "domain"));
  std::optional<ir::OpKind> k;
  if (IsDefaultDomain(node.domain()) && !node.op_type().empty()) k = ir::FindOnnxOp(node.op_type());
  if (!k)
    return Unimplemented("unsupported op '", node.op_type(), "' (domain '", node.domain(), "', opset ",
                         DomainOpset(info, node.domain()), ") in ", label);
  if (OpSinceVersion(*k) > info.opset)
    return Unimplemented("unsupported op '", node.op_type(), "' (domain '", node.domain(), "', opset ", info.opset,
                         ") in ", label, ": the op needs opset ", OpSinceVersion(*k));
  *kind = *k;
  const ir::OpSchema& s = ir::Schema(*k);
  const std::string where = StrCat(s.name, " ", label);
  int nin = TrimmedCount(node.input()), nout = TrimmedCount(node.output());
  if (nin < s.min_inputs || (s.max_inputs >= 0 && nin > s.max_inputs))
    return InvalidArgument(where, " has ", nin, " inputs, expected ", s.min_inputs, "..", s.max_inputs);
  // The recurrent layers' last output in ir/ops.def is amptrain's internal reserve (ir/rnn.h), not ONNX's.
  const int max_outputs = ir::IsRecurrent(*k) ? static_cast<int>(ir::RecurrentOnnxOutputs(*k)) : s.max_outputs;
  if (nout < s.min_outputs || (max_outputs >= 0 && nout > max_outputs))
    return InvalidArgument(where, " has ", nout, " outputs, expected ", s.min_outputs, "..", max_outputs);
  if (nin > 0 && node.input(0).empty()) return InvalidArgument(where, ": input 0 is empty");
  // Output 0 may be left out (empty name) only where it is optional (the
  // recurrent layers' Y); some output must be named.
  if (nout == 0) return InvalidArgument(where, " has no named outputs");
  if (node.output(0).empty() && s.min_outputs > 0) return InvalidArgument(where, ": output 0 is empty");
  std::unordered_set<std::string> attr_names;
  for (const auto& a : node.attribute()) {
    Status st = CheckAttribute(a, node.op_type());
    if (!st.ok()) return st.WithContext(where);
    if (!attr_names.insert(a.name()).second)
      return InvalidArgument(where, ": attribute '", a.name(), "' is given twice");
  }
  return Status::Ok();
}

// Kahn's algorithm over node indices, lowest index first among ready nodes.
StatusOr<std::vector<int>> NodeOrder(const onnx::GraphProto& g) {
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < g.node_size(); ++i)
    for (const auto& o : g.node(i).output())
      if (!o.empty()) producer[o] = i;
  std::vector<int> pending(g.node_size(), 0);
  std::vector<std::vector<int>> consumers(g.node_size());
  for (int i = 0; i < g.node_size(); ++i) {
    for (const auto& in : g.node(i).input()) {
      auto it = in.empty() ? producer.end() : producer.find(in);
      if (it == producer.end()) continue;
      ++pending[i];
      consumers[it->second].push_back(i);
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int i = 0; i < g.node_size(); ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<int> order;
  order.reserve(g.node_size());
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int c : consumers[i])
      if (--pending[c] == 0) ready.push(c);
  }
  if (order.size() != static_cast<size_t>(g.node_size())) {
    for (int i = 0; i < g.node_size(); ++i)
      if (pending[i] > 0) return InvalidArgument("graph has a cycle through ", NodeLabel(g.node(i), i));
  }
  return order;
}

}  // namespace

std::string NodeLabel(const onnx::NodeProto& node, int index) {
  return node.name().empty() ? StrCat("node #", index) : StrCat("node '", node.name(), "'");
}

// Every op type of the graph that amptrain does not have, named at once: a
// user whose model needs three ops hears of all three, not one per attempt.
// A single missing type reads as CheckNode's error for it.
Status CheckAllOpsKnown(const onnx::GraphProto& g, const ir::ModelInfo& info) {
  struct Missing { int first, count; };
  std::vector<std::pair<std::string, Missing>> missing;  // in order of first use
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& node = g.node(i);
    if (IsDefaultDomain(node.domain()) && ir::FindOnnxOp(node.op_type())) continue;
    const std::string key = node.domain() + "\n" + node.op_type();
    auto it = std::find_if(missing.begin(), missing.end(), [&](const auto& m) { return m.first == key; });
    if (it == missing.end()) missing.push_back({key, {i, 1}});
    else ++it->second.count;
  }
  if (missing.size() < 2) return Status::Ok();
  std::string list;
  for (const auto& [key, m] : missing) {
    const auto& node = g.node(m.first);
    list += StrCat(list.empty() ? "" : "; ", "'", node.op_type(), "' (domain '", node.domain(), "', opset ",
                   DomainOpset(info, node.domain()), ") in ", NodeLabel(node, m.first),
                   m.count > 1 ? StrCat(" and ", m.count - 1, " more node", m.count > 2 ? "s" : "") : "");
  }
  return Unimplemented(missing.size(), " unsupported op types: ", list);
}

Status ReadModelInfo(const onnx::ModelProto& model, ir::ModelInfo* info) {
  // An empty file parses as an empty ModelProto; "IR version 0" would not say what is wrong.
  if (model.ByteSizeLong() == 0) return InvalidArgument("the model is empty (no ONNX fields: an empty or zeroed file?)");
  if (!model.has_graph() && model.ir_version() == 0)
    return InvalidArgument("not an ONNX model: no IR version and no graph");
  if (model.ir_version() < kMinIrVersion || model.ir_version() > kMaxIrVersion)
    return Unimplemented("ONNX IR version ", model.ir_version(), " is not supported (supported: ", kMinIrVersion,
                         "..", kMaxIrVersion, ")");
  bool have_default = false;
  for (const auto& op : model.opset_import()) {
    AMP_RETURN_IF_ERROR(CheckName(op.domain(), "opset domain"));
    if (IsDefaultDomain(op.domain())) {
      if (have_default) return InvalidArgument("the default-domain opset is imported twice");
      have_default = true;
      info->opset = op.version();
    } else if (!info->other_opsets.emplace(op.domain(), op.version()).second) {
      return InvalidArgument("opset domain '", op.domain(), "' is imported twice");
    }
  }
  if (!have_default) return InvalidArgument("the model imports no default-domain (ai.onnx) opset");
  if (info->opset < kMinOpset || info->opset > kMaxOpset)
    return Unimplemented("default-domain opset ", info->opset, " is not supported (supported: ", kMinOpset, "..",
                         kMaxOpset, ")");
  info->ir_version = model.ir_version();
  info->producer_name = model.producer_name();
  info->producer_version = model.producer_version();
  info->domain = model.domain();
  info->model_version = model.model_version();
  info->doc = model.doc_string();
  info->graph_name = model.graph().name();
  for (const auto& kv : model.metadata_props()) info->metadata.emplace_back(kv.key(), kv.value());
  return Status::Ok();
}

StatusOr<GraphPlan> ValidateGraph(const onnx::GraphProto& g, const ir::ModelInfo& info) {
  GraphPlan plan;
  if (g.sparse_initializer_size() > 0) return Unimplemented("sparse initializers are not supported");
  if (g.node_size() > kMaxNodes)
    return InvalidArgument("the graph has ", g.node_size(), " nodes, more than the limit of ", kMaxNodes);
  if (g.initializer_size() > kMaxNodes)
    return InvalidArgument("the graph has ", g.initializer_size(), " initializers, more than the limit of ", kMaxNodes);
  auto define = [&](const std::string& name, const std::string& what) -> Status {
    AMP_RETURN_IF_ERROR(CheckName(name, what));
    if (name.empty()) return InvalidArgument("a ", what, " has an empty name");
    if (!plan.names.insert(name).second) return InvalidArgument("value name '", name, "' is defined twice");
    return Status::Ok();
  };
  for (const auto& t : g.initializer()) {
    AMP_RETURN_IF_ERROR(define(t.name(), "initializer"));
    plan.initializers.insert(t.name());
  }
  std::unordered_set<std::string> inputs;
  for (const auto& in : g.input()) {
    if (!inputs.insert(in.name()).second) return InvalidArgument("graph input '", in.name(), "' is listed twice");
    if (!plan.initializers.count(in.name())) AMP_RETURN_IF_ERROR(define(in.name(), "graph input"));
  }
  plan.kinds.resize(g.node_size());
  AMP_RETURN_IF_ERROR(CheckAllOpsKnown(g, info));
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& node = g.node(i);
    AMP_RETURN_IF_ERROR(CheckNode(node, i, info, &plan.kinds[i]));
    for (const auto& o : node.output()) {
      if (o.empty()) continue;
      Status st = define(o, "node output");
      if (!st.ok()) return st.WithContext(StrCat(node.op_type(), " ", NodeLabel(node, i)));
    }
  }
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& node = g.node(i);
    for (int k = 0; k < node.input_size(); ++k) {
      const std::string& in = node.input(k);
      if (!in.empty() && !plan.names.count(in))
        return InvalidArgument(node.op_type(), " ", NodeLabel(node, i), ": input ", k, " '", in,
                               "' is not a graph input, initializer or node output");
    }
  }
  std::unordered_set<std::string> outputs;
  for (const auto& o : g.output()) {
    if (!plan.names.count(o.name())) return InvalidArgument("graph output '", o.name(), "' is never defined");
    if (!outputs.insert(o.name()).second) return InvalidArgument("graph output '", o.name(), "' is listed twice");
  }
  AMP_ASSIGN_OR_RETURN(plan.order, NodeOrder(g));
  return plan;
}

StatusOr<ir::TensorType> TypeFromProto(const onnx::TypeProto& type, const std::string& what) {
  if (type.value_case() != onnx::TypeProto::kTensorType)
    return Unimplemented(what, ": only tensor types are supported (type case ", type.value_case(), ")");
  const auto& tt = type.tensor_type();
  ir::TensorType out;
  out.dtype = ir::DTypeFromOnnx(tt.elem_type());
  if (out.dtype == ir::DType::kUndefined)
    return Unimplemented(what, ": ONNX element type ", ir::OnnxTypeName(tt.elem_type()), " is not supported");
  if (!tt.has_shape()) return out;
  if (tt.shape().dim_size() > kMaxRank)
    return InvalidArgument(what, ": rank ", tt.shape().dim_size(), " exceeds ", kMaxRank);
  out.has_shape = true;
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value()) {
      if (d.dim_value() < 0) return InvalidArgument(what, ": dim ", out.shape.rank(), " is negative (", d.dim_value(), ")");
      out.shape.dims().push_back(ir::Dim::Static(d.dim_value()));
    } else if (d.has_dim_param()) {
      AMP_RETURN_IF_ERROR(CheckName(d.dim_param(), StrCat(what, ": dim_param")));
      out.shape.dims().push_back(ir::Dim::Symbolic(d.dim_param()));
    } else {
      out.shape.dims().push_back(ir::Dim::Symbolic(""));
    }
  }
  return out;
}

StatusOr<ir::AttrValue> AttributeFromProto(const onnx::AttributeProto& a, const std::string& model_dir) {
  bool supported = false;
  switch (KindOf(a, &supported)) {
    case ir::AttrType::kFloat: return ir::AttrValue(a.f());
    case ir::AttrType::kInt: return ir::AttrValue(static_cast<int64_t>(a.i()));
    case ir::AttrType::kString: return ir::AttrValue(a.s());
    case ir::AttrType::kFloats: return ir::AttrValue(std::vector<float>(a.floats().begin(), a.floats().end()));
    case ir::AttrType::kInts: return ir::AttrValue(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
    case ir::AttrType::kStrings:
      return ir::AttrValue(std::vector<std::string>(a.strings().begin(), a.strings().end()));
    case ir::AttrType::kTensor: {
      auto t = TensorFromProto(a.t(), model_dir);
      if (!t.ok()) return t.status().WithContext(StrCat("attribute '", a.name(), "'"));
      return ir::AttrValue(std::move(t).value());
    }
  }
  return Internal("attribute '", a.name(), "' has no kind");
}

}  // namespace amptrain::importer::detail
