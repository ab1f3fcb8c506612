// ONNX ModelProto -> ir::Graph: parsing and graph construction.
#include <algorithm>
#include <climits>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "importer/import_internal.h"
#include "importer/onnx_import.h"
#include "importer/opset_adapters.h"
#include "importer/tensor_proto.h"
#include "ir/fold_constants.h"
#include "ir/verifier.h"

namespace amptrain::importer {

namespace {

using detail::GraphPlan;

// Constant's one value attribute as a tensor.
StatusOr<ir::Tensor> ConstantValue(const onnx::NodeProto& node, const std::string& model_dir) {
  if (node.attribute_size() != 1) return InvalidArgument("needs exactly one value attribute, has ", node.attribute_size());
  const onnx::AttributeProto& a = node.attribute(0);
  const std::string& k = a.name();
  if (k == "sparse_value" || k == "value_string" || k == "value_strings")
    return Unimplemented("attribute '", k, "' is not supported");
  AMP_ASSIGN_OR_RETURN(ir::AttrValue v, detail::AttributeFromProto(a, model_dir));
  auto wrong = [&] { return InvalidArgument("attribute '", k, "' has type ", ir::AttrTypeName(ir::TypeOf(v))); };
  if (k == "value") {
    if (auto* t = std::get_if<ir::Tensor>(&v)) return *t;
    return wrong();
  }
  if (k == "value_float") {
    if (auto* f = std::get_if<float>(&v)) return ir::Tensor::Floats({*f}, {});
    return wrong();
  }
  if (k == "value_floats") {
    if (auto* f = std::get_if<std::vector<float>>(&v)) return ir::Tensor::Floats(*f, {static_cast<int64_t>(f->size())});
    return wrong();
  }
  if (k == "value_int") {
    if (auto* i = std::get_if<int64_t>(&v)) return ir::Tensor::Int64s({*i}, {});
    return wrong();
  }
  if (k == "value_ints") {
    if (auto* i = std::get_if<std::vector<int64_t>>(&v))
      return ir::Tensor::Int64s(*i, {static_cast<int64_t>(i->size())});
    return wrong();
  }
  return InvalidArgument("unknown attribute '", k, "'");
}

class Builder {
 public:
  Builder(const onnx::GraphProto& proto, GraphPlan plan, const std::string& model_dir, ir::Graph& g)
      : proto_(proto), plan_(std::move(plan)), model_dir_(model_dir), g_(g) {}

  Status Build() {
    for (const auto& t : proto_.initializer()) {
      AMP_ASSIGN_OR_RETURN(ir::Tensor value, TensorFromProto(t, model_dir_));
      AMP_RETURN_IF_ERROR(Define(t.name(), g_.AddInitializer(t.name(), std::move(value))));
    }
    for (const auto& in : proto_.input()) {
      if (plan_.initializers.count(in.name())) continue;  // keep_initializers_as_inputs exports
      const std::string what = StrCat("graph input '", in.name(), "'");
      if (!in.has_type()) return InvalidArgument(what, " has no type");
      AMP_ASSIGN_OR_RETURN(ir::TensorType type, detail::TypeFromProto(in.type(), what));
      AMP_RETURN_IF_ERROR(Define(in.name(), g_.AddInput(in.name(), std::move(type))));
    }
    for (int i : plan_.order) {
      const onnx::NodeProto& node = proto_.node(i);
      Status s = AddNode(node, plan_.kinds[i]);
      if (!s.ok())
        return s.WithContext(StrCat(ir::Schema(plan_.kinds[i]).name, " ", detail::NodeLabel(node, i)));
    }
    for (const auto& vi : proto_.value_info()) {
      auto it = values_.find(vi.name());
      if (it == values_.end() || !vi.has_type()) continue;  // a hint about nothing we hold
      AMP_ASSIGN_OR_RETURN(ir::TensorType type, detail::TypeFromProto(vi.type(), StrCat("value_info '", vi.name(), "'")));
      declared_.emplace_back(vi.name(), std::move(type));
    }
    for (const auto& out : proto_.output()) {
      g_.AddOutput(values_.at(out.name()));
      if (!out.has_type()) continue;
      AMP_ASSIGN_OR_RETURN(ir::TensorType type,
                           detail::TypeFromProto(out.type(), StrCat("graph output '", out.name(), "'")));
      declared_.emplace_back(out.name(), std::move(type));
    }
    return Status::Ok();
  }

  // Declared (value_info / graph output) types by value name.
  const std::vector<std::pair<std::string, ir::TensorType>>& declared() const { return declared_; }

 private:
  Status Define(const std::string& name, ir::Value v) {
    if (g_.name(v) != name) return Internal("value '", name, "' was renamed to '", g_.name(v), "'");
    values_[name] = v;
    return Status::Ok();
  }

  // A fresh name for an unnamed (absent optional) output.
  std::string FreshName(const std::string& base) {
    std::string name = base;
    for (int k = 1; plan_.names.count(name) || g_.FindValue(name).valid(); ++k) name = StrCat(base, "_", k);
    plan_.names.insert(name);
    return name;
  }

  Status AddNode(const onnx::NodeProto& node, ir::OpKind kind) {
    int nin = node.input_size(), nout = node.output_size();
    while (nin > 0 && node.input(nin - 1).empty()) --nin;
    while (nout > 0 && node.output(nout - 1).empty()) --nout;
    std::vector<ir::Value> inputs;
    for (int k = 0; k < nin; ++k) inputs.push_back(node.input(k).empty() ? ir::Value{} : values_.at(node.input(k)));
    std::vector<std::string> names;
    std::string base = node.name().empty() ? node.op_type() : node.name();
    for (int k = 0; k < nout; ++k)
      names.push_back(node.output(k).empty() ? FreshName(StrCat(base, ":", k)) : node.output(k));
    ir::Node* n = g_.AddNode(kind, std::move(inputs), static_cast<size_t>(nout), node.name(), names);
    n->set_doc(node.doc_string());
    for (int k = 0; k < nout; ++k) AMP_RETURN_IF_ERROR(Define(names[k], n->output(k)));
    if (kind == ir::OpKind::kConstant) {
      AMP_ASSIGN_OR_RETURN(ir::Tensor value, ConstantValue(node, model_dir_));
      n->attrs().Set("value", std::move(value));
      return Status::Ok();
    }
    for (const auto& a : node.attribute()) {
      auto v = detail::AttributeFromProto(a, model_dir_);
      if (!v.ok()) return v.status();
      n->attrs().Set(a.name(), std::move(v).value());
    }
    return Status::Ok();
  }

  const onnx::GraphProto& proto_;
  GraphPlan plan_;
  const std::string& model_dir_;
  ir::Graph& g_;
  std::unordered_map<std::string, ir::Value> values_;
  std::vector<std::pair<std::string, ir::TensorType>> declared_;
};

// Declared shapes are hints from an untrusted file: they only name dims the
// rules left unknown (dim_param symbols); static sizes always come from the
// rules, so a wrong value_info cannot mislead memory planning.
void MergeDeclaredSymbols(ir::Graph& g, const std::vector<std::pair<std::string, ir::TensorType>>& declared) {
  for (const auto& [name, type] : declared) {
    ir::Value v = g.FindValue(name);
    if (!v.valid() || !type.has_shape) continue;
    ir::TensorType& cur = g.mutable_info(v).type;
    if (!cur.has_shape || cur.shape.rank() != type.shape.rank()) continue;
    for (size_t i = 0; i < cur.shape.rank(); ++i) {
      ir::Dim& d = cur.shape[i];
      if (!d.is_static() && d.symbol.empty() && !type.shape[i].is_static()) d.symbol = type.shape[i].symbol;
    }
  }
}

// Inferred shapes keep the rank limit of declared ones: Expand with a 1-D
// shape input of 101 entries gave a rank-101 value that the exporter wrote
// and the importer then refused.
Status CheckInferredRanks(const ir::Graph& g) {
  for (const ir::Node* n : g.nodes())
    for (size_t i = 0; i < n->num_outputs(); ++i) {
      const ir::TensorType& t = n->output_info(i).type;
      if (t.has_shape && t.shape.rank() > static_cast<size_t>(detail::kMaxRank))
        return InvalidArgument("node '", n->name(), "' (", ir::Schema(n->op()).onnx_type, "): output ", i,
                               " has rank ", t.shape.rank(), ", more than ", detail::kMaxRank);
    }
  return Status::Ok();
}

// Whether `v` is a zero scalar from a Constant node, possibly through Casts
// (CastLike included): never an initializer, which a user may train.
bool IsConstantZeroScalar(const ir::Graph& g, ir::Value v) {
  for (int hops = 0; hops < 3 && v.valid(); ++hops) {
    const ir::Node* p = g.producer(v);
    if (p->op() == ir::OpKind::kCast || p->op() == ir::OpKind::kCastLike) {
      v = p->input(0);
      continue;
    }
    const ir::Tensor* t = p->op() == ir::OpKind::kConstant ? g.ConstantValue(v) : nullptr;
    return t && t->num_elements() == 1 && (ir::IsFloat(t->dtype()) || ir::IsInteger(t->dtype())) &&
           t->GetAsDouble(0) == 0.0;
  }
  return false;
}

// torch.onnx's dynamo exporter (PyTorch 2.x, optimize=False) writes the
// missing bias of a bias-free Conv3d as Expand(CastLike(0, X),
// Concat(Shape(W)[:1], [2])): zeros of shape [M, 2], which no Conv takes
// (ONNX Runtime refuses it too). A bias that is an Expand of a zero scalar
// adds nothing whatever its shape, so such a Conv is imported without it,
// and the Expand's chain, now unread, goes too.
Status DropExpandedZeroBiases(ir::Graph& g) {
  std::vector<ir::Node*> unread;
  for (ir::Node* n : g.nodes()) {
    if ((n->op() != ir::OpKind::kConv && n->op() != ir::OpKind::kConvTranspose) || !n->has_input(2)) continue;
    ir::Node* expand = g.producer(n->input(2));
    if (expand->op() != ir::OpKind::kExpand || !IsConstantZeroScalar(g, expand->input(0))) continue;
    g.SetInput(n, 2, ir::Value{});
    unread.push_back(expand);
  }
  while (!unread.empty()) {
    ir::Node* n = unread.back();
    unread.pop_back();
    if (n->op() == ir::OpKind::kInput || n->op() == ir::OpKind::kInitializer) continue;
    bool read = false;
    for (size_t o = 0; o < n->num_outputs(); ++o) read = read || !n->uses(o).empty() || g.is_graph_output(n->output(o));
    if (read) continue;
    std::vector<ir::Node*> producers;
    for (ir::Value in : n->inputs())
      if (in.valid()) producers.push_back(g.producer(in));
    AMP_RETURN_IF_ERROR(g.RemoveNode(n));
    unread.insert(unread.end(), producers.begin(), producers.end());
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<ir::Graph>> Import(const onnx::ModelProto& model, const std::string& model_dir,
                                             const ImportOptions& opts) {
  auto graph = std::make_unique<ir::Graph>();
  AMP_RETURN_IF_ERROR(detail::ReadModelInfo(model, &graph->info()));
  if (!model.has_graph()) return InvalidArgument("the model has no graph");
  AMP_ASSIGN_OR_RETURN(GraphPlan plan, detail::ValidateGraph(model.graph(), graph->info()));
  Builder builder(model.graph(), std::move(plan), model_dir, *graph);
  AMP_RETURN_IF_ERROR(builder.Build());
  AMP_RETURN_IF_ERROR(UpgradeToCanonical(*graph, graph->info().opset));
  AMP_RETURN_IF_ERROR(DropExpandedZeroBiases(*graph));
  // A model of opset 7-10 is now the opset-11 model it equals, and is
  // exported and converted as one.
  graph->info().opset = std::max(graph->info().opset, detail::kMinExportOpset);
  AMP_RETURN_IF_ERROR(graph->InferShapes());
  AMP_RETURN_IF_ERROR(LowerCastLike(*graph).status());
  AMP_RETURN_IF_ERROR(PinRandomDTypes(*graph));
  AMP_RETURN_IF_ERROR(LowerComposites(*graph).status());
  AMP_RETURN_IF_ERROR(CheckInferredRanks(*graph));
  MergeDeclaredSymbols(*graph, builder.declared());
  if (opts.fold_constants)
    AMP_RETURN_IF_ERROR(ir::FoldConstants({.keep_float_initializers = opts.keep_float_initializers}).Run(*graph).status());
  if (opts.remove_identity) AMP_RETURN_IF_ERROR(RemoveIdentityNodes(*graph).status());
  AMP_RETURN_IF_ERROR(ir::Verify(*graph));
  return graph;
}

// The values that are `probe`'s outputs, imported and folded as the model
// itself would be: a tensor where folding left a constant.
StatusOr<std::vector<std::optional<ir::Tensor>>> DecideConstants(const onnx::ModelProto& probe,
                                                                 const std::string& model_dir) {
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> g, Import(probe, model_dir, ImportOptions{}));
  std::vector<std::optional<ir::Tensor>> out;
  for (ir::Value v : g->outputs()) {
    const ir::Tensor* t = g->ConstantValue(v);
    out.push_back(t ? std::optional<ir::Tensor>(*t) : std::nullopt);
  }
  return out;
}

}  // namespace

StatusOr<bool> RemoveIdentityNodes(ir::Graph& g) {
  bool changed = false;
  for (ir::Node* n : g.nodes()) {
    if (n->op() != ir::OpKind::kIdentity) continue;
    ir::Value in = n->input(0), out = n->output(0);
    std::string keep_name;
    if (g.is_graph_output(out)) {
      ir::OpKind p = g.producer(in)->op();
      if (p == ir::OpKind::kInput || p == ir::OpKind::kInitializer || g.is_graph_output(in)) continue;
      keep_name = g.name(out);
    }
    g.ReplaceAllUsesWith(out, in);
    AMP_RETURN_IF_ERROR(g.RemoveNode(n));
    if (!keep_name.empty()) AMP_RETURN_IF_ERROR(g.RenameValue(in, keep_name));
    changed = true;
  }
  return changed;
}

StatusOr<std::unique_ptr<ir::Graph>> ImportModelBytes(const std::string& bytes, const std::string& model_dir,
                                                      const ImportOptions& opts) {
  if (bytes.size() > static_cast<size_t>(INT_MAX)) return InvalidArgument("model exceeds 2 GiB");
  google::protobuf::io::ArrayInputStream stream(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetTotalBytesLimit(INT_MAX);
  onnx::ModelProto model;
  if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    return InvalidArgument("not a valid ONNX ModelProto (truncated or corrupt protobuf)");
  // Functions first: their bodies hold legacy ops, control flow and
  // sequences like the graph does, for the passes below to rewrite.
  AMP_RETURN_IF_ERROR(detail::InlineFunctions(model));
  AMP_RETURN_IF_ERROR(detail::UpgradeLegacyOps(model));
  AMP_RETURN_IF_ERROR(detail::InlineStaticControlFlow(model, [&](const onnx::ModelProto& probe) {
    return DecideConstants(probe, model_dir);
  }));
  if (model.has_graph()) {
    AMP_RETURN_IF_ERROR(detail::LowerStaticSequences(*model.mutable_graph(), model_dir));
    AMP_RETURN_IF_ERROR(detail::LowerSequenceSplits(*model.mutable_graph(), model_dir));
  }
  return Import(model, model_dir, opts);
}

StatusOr<std::unique_ptr<ir::Graph>> ImportModelFile(const std::string& path, const ImportOptions& opts) {
  AMP_ASSIGN_OR_RETURN(std::string bytes, detail::ReadWholeFile(path, "model"));
  auto g = ImportModelBytes(bytes, detail::ParentDir(path), opts);
  if (!g.ok()) return g.status().WithContext(StrCat("importing '", path, "'"));
  return g;
}

}  // namespace amptrain::importer
