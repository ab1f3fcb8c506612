// Model-local functions (ModelProto.functions) inlined on the proto before
// any other pass reads it (detail::InlineFunctions). TorchScript's
// export_modules_as_functions=True writes one function per module class
// (the model itself included), onnxscript one per @script function:
//
//   graph:  y = __main__.Block<slope = 0.1>(x, w)        (node "Block_0")
//   function __main__.Block(X, W) => (Y), attribute slope:
//     h = Conv(X, W)                                     (node "Conv_1")
//     Y = LeakyRelu<alpha: float = @slope>(h)            (node "LeakyRelu_2")
// becomes
//   graph:  Block_0/h = Conv(x, w)                       (node "Block_0/Conv_1")
//           y = LeakyRelu<alpha = 0.1>(Block_0/h)        (node "Block_0/LeakyRelu_2")
//
// - A node calls a function when its (domain, op_type, overload) is a
//   function's (domain, name, overload). Calls in function bodies and in
//   subgraphs (If / Loop / Scan attributes) at any depth are inlined too;
//   a function that reaches itself is an error naming the cycle.
// - Formal inputs read the call's actual inputs ("" where the call leaves
//   one out); formal outputs are written under the call's output names, or
//   stay internal where the call leaves them out. An output that no body
//   node computes (it is a formal input) becomes an Identity.
// - Every other value and node of the body is renamed "<call node>/<name>",
//   unique across the graph and its subgraphs (ProtoEditor).
// - An attribute with ref_attr_name takes the call's attribute of that name,
//   else the function's default (attribute_proto, IR 9), else it is dropped
//   (the op's own default applies).
// - A function's ops are read at the model's default-domain opset: one that
//   imports another version is refused, not converted.
// Afterwards model.functions is empty and the opset imports of the
// functions' own domains that no node uses any more are gone, so the later
// passes, the IR and the exporter never see a function.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <google/protobuf/unknown_field_set.h>

#include "importer/import_internal.h"
#include "ir/status.h"

namespace amptrain::importer::detail {

namespace {

// Nested calls deeper than this are refused: module trees go a few levels
// deep; a crafted chain of thousands must not exhaust the stack.
constexpr int kMaxCallDepth = 64;
// A few KB of functions that call each other twice per level would make
// billions of nodes: the nodes inlining makes are counted before any is
// copied (at most kMaxNodes, the graph's own limit), the bytes it copies
// (attributes the calls hand down included) as they are.
constexpr int64_t kTooMany = int64_t{kMaxNodes} + 1;
constexpr int64_t kMaxCopiedBytes = INT_MAX;

// Fields of IR 9 and 10 that the onnx 1.12 protos compiled here lack;
// parsing keeps them as unknown fields.
constexpr int kNodeOverload = 8;             // NodeProto.overload (IR 10)
constexpr int kFunctionAttributeProto = 11;  // FunctionProto.attribute_proto (IR 9)
constexpr int kFunctionOverload = 13;        // FunctionProto.overload (IR 10)

// The payloads of `m`'s unknown length-delimited fields numbered `number`.
std::vector<std::string> UnknownBytes(const google::protobuf::Message& m, int number) {
  std::vector<std::string> out;
  const google::protobuf::UnknownFieldSet& fields = m.GetReflection()->GetUnknownFields(m);
  for (int i = 0; i < fields.field_count(); ++i) {
    const google::protobuf::UnknownField& f = fields.field(i);
    if (f.number() == number && f.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      out.push_back(f.length_delimited());
  }
  return out;
}

std::string Overload(const google::protobuf::Message& m, int number) {
  std::vector<std::string> v = UnknownBytes(m, number);
  return v.empty() ? std::string() : v.back();  // a repeated optional field: the last one counts
}

std::string Key(const std::string& domain, const std::string& name, const std::string& overload) {
  return StrCat(IsDefaultDomain(domain) ? "" : domain, "\n", name, "\n", overload);
}

int64_t DefaultOpset(const google::protobuf::RepeatedPtrField<onnx::OperatorSetIdProto>& imports) {
  for (const auto& o : imports)
    if (IsDefaultDomain(o.domain())) return o.version();
  return 0;
}

// The names `attrs` refer to with ref_attr_name, in subgraphs too.
void CollectRefs(const google::protobuf::RepeatedPtrField<onnx::AttributeProto>& attrs,
                 std::unordered_set<std::string>& refs) {
  for (const auto& a : attrs) {
    if (!a.ref_attr_name().empty()) refs.insert(a.ref_attr_name());
    const auto visit = [&](const onnx::GraphProto& g) {
      for (const auto& n : g.node()) CollectRefs(n.attribute(), refs);
    };
    if (a.has_g()) visit(a.g());
    for (const auto& sub : a.graphs()) visit(sub);
  }
}

// The domains `g`'s nodes use, in subgraphs too.
void CollectDomains(const onnx::GraphProto& g, std::unordered_set<std::string>& domains) {
  for (const auto& n : g.node()) {
    domains.insert(n.domain());
    for (const auto& a : n.attribute()) {
      if (a.has_g()) CollectDomains(a.g(), domains);
      for (const auto& sub : a.graphs()) CollectDomains(sub, domains);
    }
  }
}

struct Function {
  const onnx::FunctionProto* proto = nullptr;
  std::string label;  // "__main__.Block", for messages
  std::unordered_map<std::string, onnx::AttributeProto> defaults;  // attribute_proto, by name
  std::unordered_set<std::string> refs;                            // attribute names the body reads
  bool open = false;       // on the call chain of Planned now
  int64_t planned = -1;    // the nodes a call of it makes, once Planned knows
};

// Old name -> new name of the values a copied body (or one of its
// subgraphs) reads and defines.
using Scope = std::unordered_map<std::string, std::string>;

class FunctionInliner {
 public:
  explicit FunctionInliner(onnx::ModelProto& model)
      : model_(model), edit_(*model.mutable_graph()), opset_(DefaultOpset(model.opset_import())) {}

  Status Run() {
    for (const auto& f : model_.functions()) {
      Function fn;
      fn.proto = &f;
      const std::string overload = Overload(f, kFunctionOverload);
      fn.label = StrCat(f.domain().empty() ? "" : f.domain() + ".", f.name(), overload.empty() ? "" : ":", overload);
      for (const std::string& bytes : UnknownBytes(f, kFunctionAttributeProto)) {
        onnx::AttributeProto a;
        if (!a.ParseFromString(bytes)) return InvalidArgument("function '", fn.label, "' has a corrupt attribute_proto");
        fn.defaults[a.name()] = std::move(a);
      }
      for (const auto& n : f.node()) CollectRefs(n.attribute(), fn.refs);
      const std::string label = fn.label;
      if (!functions_.emplace(Key(f.domain(), f.name(), overload), std::move(fn)).second)
        return InvalidArgument("function '", label, "' is defined twice");
    }
    AMP_ASSIGN_OR_RETURN(int64_t planned, Planned(model_.graph().node(), ""));
    if (planned >= kTooMany)
      return InvalidArgument("inlining the model's functions makes more than ", kMaxNodes, " nodes");
    AMP_RETURN_IF_ERROR(InlineGraph(*model_.mutable_graph()));
    std::unordered_set<std::string> used, function_domains;
    CollectDomains(model_.graph(), used);
    for (const auto& f : model_.functions())
      if (!IsDefaultDomain(f.domain())) function_domains.insert(f.domain());
    model_.clear_functions();
    auto* imports = model_.mutable_opset_import();
    for (int i = imports->size() - 1; i >= 0; --i) {
      const std::string& d = imports->Get(i).domain();
      if (function_domains.count(d) && !used.count(d)) imports->DeleteSubrange(i, 1);
    }
    return Status::Ok();
  }

 private:
  Function* Callee(const onnx::NodeProto& n) {
    auto it = functions_.find(Key(n.domain(), n.op_type(), Overload(n, kNodeOverload)));
    return it == functions_.end() ? nullptr : &it->second;
  }

  // The nodes that inlining the calls among `nodes` gives, subgraphs
  // included (at most kTooMany, which is too many); refuses recursion
  // and deep nesting. `where` (" of function 'F'") follows node labels.
  StatusOr<int64_t> Planned(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes, const std::string& where) {
    int64_t total = 0;
    for (int i = 0; i < nodes.size(); ++i) {
      const onnx::NodeProto& n = nodes.Get(i);
      int64_t count = 1;
      if (Function* f = Callee(n)) {
        AMP_ASSIGN_OR_RETURN(count, Planned(*f, NodeLabel(n, i) + where));
      } else {
        for (const auto& a : n.attribute()) {
          if (a.has_g()) {
            AMP_ASSIGN_OR_RETURN(int64_t sub, Planned(a.g().node(), where));
            count = std::min(count + sub, kTooMany);
          }
          for (const auto& g : a.graphs()) {
            AMP_ASSIGN_OR_RETURN(int64_t sub, Planned(g.node(), where));
            count = std::min(count + sub, kTooMany);
          }
        }
      }
      total = std::min(total + count, kTooMany);
    }
    return total;
  }

  // The nodes a call of `f` (`label`) makes: its body's, and an Identity per
  // output at most.
  StatusOr<int64_t> Planned(Function& f, const std::string& label) {
    if (f.planned >= 0) return f.planned;
    if (f.open) {
      std::string cycle;
      bool on = false;
      for (const Function* c : chain_) {
        on = on || c == &f;
        if (on) cycle += c->label + " -> ";
      }
      return InvalidArgument("function '", f.label, "' calls itself (", cycle, f.label, ") in ", label);
    }
    if (static_cast<int>(chain_.size()) >= kMaxCallDepth)
      return Unimplemented(label, ": function calls nest more than ", kMaxCallDepth, " deep");
    f.open = true;
    chain_.push_back(&f);
    StatusOr<int64_t> body = Planned(f.proto->node(), StrCat(" of function '", f.label, "'"));
    chain_.pop_back();
    f.open = false;
    if (!body.ok()) return body.status();
    f.planned = std::min(*body + f.proto->output_size(), kTooMany);
    return f.planned;
  }

  // Replaces the calls among `g`'s nodes by their bodies, in place, and
  // inlines the calls in its nodes' subgraphs.
  Status InlineGraph(onnx::GraphProto& g) {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    for (int i = 0; i < g.node_size(); ++i) {
      onnx::NodeProto& n = *g.mutable_node(i);
      Function* f = Callee(n);
      if (!f) {
        AMP_RETURN_IF_ERROR(InlineSubgraphs(n));
        *nodes.Add() = std::move(n);
        continue;
      }
      const std::string label = NodeLabel(n, i);
      for (const auto& a : n.attribute())
        if (!a.ref_attr_name().empty())
          return InvalidArgument(label, " (function '", f->label, "'): attribute '", a.name(),
                                 "' refers to attribute '", a.ref_attr_name(), "' outside a function");
      std::vector<onnx::NodeProto> body;
      AMP_RETURN_IF_ERROR(Expand(n, label, *f, body));
      for (auto& b : body) *nodes.Add() = std::move(b);
    }
    g.mutable_node()->Swap(&nodes);
    return Status::Ok();
  }

  Status InlineSubgraphs(onnx::NodeProto& n) {
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) AMP_RETURN_IF_ERROR(InlineGraph(*a.mutable_g()));
      for (auto& sub : *a.mutable_graphs()) AMP_RETURN_IF_ERROR(InlineGraph(sub));
    }
    return Status::Ok();
  }

  // Appends the nodes that `call` (named `label` in messages), a call of
  // `f`, stands for to `out` (Planned has refused recursion).
  Status Expand(const onnx::NodeProto& call, const std::string& label, const Function& f,
                std::vector<onnx::NodeProto>& out) {
    const onnx::FunctionProto& fp = *f.proto;
    const std::string what = StrCat(label, " (function '", f.label, "')");
    if (call.input_size() > fp.input_size() || call.output_size() > fp.output_size())
      return InvalidArgument(what, " has ", call.input_size(), " inputs and ", call.output_size(),
                             " outputs; the function has ", fp.input_size(), " and ", fp.output_size());
    const int64_t opset = DefaultOpset(fp.opset_import());
    if (opset != 0 && opset_ != 0 && opset != opset_)
      return Unimplemented(what, ": the function imports default-domain opset ", opset, ", the model ", opset_,
                           "; amptrain does not convert a function's ops to the model's opset");
    const std::string prefix = (call.name().empty() ? call.op_type() : call.name()) + "/";
    AMP_ASSIGN_OR_RETURN(Scope scope, BindValues(call, f, prefix));
    AMP_RETURN_IF_ERROR(CopyBody(call, f, prefix, scope, out));
    // Outputs no body node computes: the formal inputs they are, copied.
    for (int k = 0; k < call.output_size(); ++k) {
      const std::string &formal = fp.output(k), &actual = call.output(k);
      if (actual.empty() || scope.at(formal) == actual) continue;
      if (scope.at(formal).empty())
        return InvalidArgument(what, ": output '", formal, "' is the function's input, which the call leaves out");
      onnx::NodeProto id;
      id.set_op_type("Identity");
      id.set_name(edit_.Fresh(StrCat(prefix, "output_", k)));
      id.add_input(scope.at(formal));
      id.add_output(actual);
      AMP_RETURN_IF_ERROR(Count(id, what));
      out.push_back(std::move(id));
    }
    return Status::Ok();
  }

  // The scope of `f`'s body in `call`: formal inputs -> the call's inputs
  // ("" where left out), the first formal output of each computed value ->
  // the call's output, every other value the body computes -> a fresh name.
  StatusOr<Scope> BindValues(const onnx::NodeProto& call, const Function& f, const std::string& prefix) {
    const onnx::FunctionProto& fp = *f.proto;
    Scope scope;
    for (int k = 0; k < fp.input_size(); ++k) scope[fp.input(k)] = k < call.input_size() ? call.input(k) : "";
    std::unordered_set<std::string> computed;
    for (const auto& n : fp.node())
      for (const auto& o : n.output())
        if (!o.empty() && (!computed.insert(o).second || scope.count(o)))
          return InvalidArgument("function '", f.label, "' defines value '", o, "' twice");
    for (int k = 0; k < call.output_size(); ++k)
      if (!call.output(k).empty() && computed.count(fp.output(k)) && !scope.count(fp.output(k)))
        scope[fp.output(k)] = call.output(k);
    for (const auto& n : fp.node())
      for (const auto& o : n.output())
        if (!o.empty() && !scope.count(o)) scope[o] = edit_.Fresh(prefix + o);
    for (const auto& o : fp.output())
      if (!scope.count(o))
        return InvalidArgument("function '", f.label, "': output '", o, "' is neither an input nor computed");
    return scope;
  }

  // Copies `f`'s body nodes into `out`, renamed by `scope`, their
  // attributes bound to `call`'s, calls among them expanded.
  Status CopyBody(const onnx::NodeProto& call, const Function& f, const std::string& prefix, const Scope& scope,
                  std::vector<onnx::NodeProto>& out) {
    for (const auto& body_node : f.proto->node()) {
      Function* callee = Callee(body_node);
      onnx::NodeProto n;
      if (callee) {
        // A call is read, never written: of its attributes only those the
        // callee reads are copied (TorchScript passes every module
        // attribute down, weights as tensors).
        n.set_op_type(body_node.op_type());
        n.set_domain(body_node.domain());
        n.set_name(body_node.name());
        *n.mutable_input() = body_node.input();
        *n.mutable_output() = body_node.output();
        for (const auto& a : body_node.attribute())
          if (callee->refs.count(a.name())) *n.add_attribute() = a;
      } else {
        n = body_node;
      }
      AMP_RETURN_IF_ERROR(Rewrite(n, call, f, prefix, scope));
      const std::string label = StrCat("node '", n.name(), "'");
      AMP_RETURN_IF_ERROR(Count(n, label));
      if (callee) {
        AMP_RETURN_IF_ERROR(Expand(n, label, *callee, out));
        continue;
      }
      AMP_RETURN_IF_ERROR(InlineSubgraphs(n));
      out.push_back(std::move(n));
    }
    return Status::Ok();
  }

  // Renames `n`, a copy of a node of `f`'s body or of a subgraph in it, and
  // its values by `scope`, and binds its attributes to `call`'s.
  Status Rewrite(onnx::NodeProto& n, const onnx::NodeProto& call, const Function& f, const std::string& prefix,
                 const Scope& scope) {
    const std::string original = n.name().empty() ? n.op_type() : n.name();
    for (auto& in : *n.mutable_input()) {
      if (in.empty()) continue;
      auto it = scope.find(in);
      if (it == scope.end())
        return InvalidArgument("node '", original, "' of function '", f.label, "' reads '", in,
                               "', which is neither an input of the function nor a value it computes");
      in = it->second;
    }
    for (auto& o : *n.mutable_output())
      if (!o.empty()) o = scope.at(o);
    n.set_name(edit_.Fresh(prefix + original));
    google::protobuf::RepeatedPtrField<onnx::AttributeProto> attrs;
    for (auto& a : *n.mutable_attribute()) {
      if (a.ref_attr_name().empty()) {
        if (a.has_g()) AMP_RETURN_IF_ERROR(RewriteSubgraph(*a.mutable_g(), call, f, prefix, scope));
        for (auto& sub : *a.mutable_graphs()) AMP_RETURN_IF_ERROR(RewriteSubgraph(sub, call, f, prefix, scope));
        *attrs.Add() = std::move(a);
        continue;
      }
      // The call's value (its subgraphs read the caller's scope, as they
      // are), else the function's default (read in the body's scope).
      onnx::AttributeProto value;
      if (const onnx::AttributeProto* given = FindAttr(call, a.ref_attr_name())) {
        value = *given;
      } else if (auto d = f.defaults.find(a.ref_attr_name()); d != f.defaults.end()) {
        value = d->second;
        if (value.has_g()) AMP_RETURN_IF_ERROR(RewriteSubgraph(*value.mutable_g(), call, f, prefix, scope));
        for (auto& sub : *value.mutable_graphs()) AMP_RETURN_IF_ERROR(RewriteSubgraph(sub, call, f, prefix, scope));
      } else {
        continue;
      }
      value.set_name(a.name());
      value.clear_ref_attr_name();
      *attrs.Add() = std::move(value);
    }
    n.mutable_attribute()->Swap(&attrs);
    return Status::Ok();
  }

  // A subgraph of a copied body node: its own values get fresh names (they
  // shadow the body's), what it reads from the body is renamed by `scope`.
  Status RewriteSubgraph(onnx::GraphProto& g, const onnx::NodeProto& call, const Function& f,
                         const std::string& prefix, Scope scope) {
    for (auto& v : *g.mutable_input()) v.set_name(scope[v.name()] = edit_.Fresh(prefix + v.name()));
    for (auto& t : *g.mutable_initializer()) t.set_name(scope[t.name()] = edit_.Fresh(prefix + t.name()));
    for (const auto& n : g.node())
      for (const auto& o : n.output())
        if (!o.empty()) scope[o] = edit_.Fresh(prefix + o);
    for (auto& n : *g.mutable_node()) AMP_RETURN_IF_ERROR(Rewrite(n, call, f, prefix, scope));
    for (auto& v : *g.mutable_output()) {
      auto it = scope.find(v.name());
      if (it == scope.end())
        return InvalidArgument("a subgraph in function '", f.label, "' has output '", v.name(),
                               "', which it neither computes nor reads from the function");
      v.set_name(it->second);
    }
    g.clear_value_info();  // type hints under the old names
    return Status::Ok();
  }

  // Counts the bytes of a copied node against the limit.
  Status Count(const onnx::NodeProto& n, const std::string& label) {
    copied_bytes_ += static_cast<int64_t>(n.ByteSizeLong());
    if (copied_bytes_ > kMaxCopiedBytes)
      return InvalidArgument("inlining the model's functions copies more than ", kMaxCopiedBytes, " bytes (at ",
                             label, ")");
    return Status::Ok();
  }

  onnx::ModelProto& model_;
  ProtoEditor edit_;
  const int64_t opset_;  // the model's default-domain opset; 0 where it imports none
  std::unordered_map<std::string, Function> functions_;  // by Key
  std::vector<const Function*> chain_;                    // Planned's functions, outermost first
  int64_t copied_bytes_ = 0;
};

}  // namespace

Status InlineFunctions(onnx::ModelProto& model) {
  if (model.functions_size() == 0 || !model.has_graph()) return Status::Ok();
  return FunctionInliner(model).Run();
}

}  // namespace amptrain::importer::detail
