#include "ir/verifier.h"

#include <algorithm>
#include <unordered_set>

namespace amptrain::ir {

namespace {

Status CheckValue(const Graph& g, Value v, const std::string& where) {
  const Node* p = g.producer(v);
  if (!p) return Internal(where, " refers to a removed node");
  if (v.index >= p->num_outputs()) return Internal(where, " refers to output ", v.index, " of ", p->Describe());
  return Status::Ok();
}

}  // namespace

Status Verify(const Graph& g) {
  std::unordered_set<std::string> names;
  for (const Node* n : g.nodes()) {
    const OpSchema& s = n->schema();
    int nin = static_cast<int>(n->num_inputs());
    int nout = static_cast<int>(n->num_outputs());
    if (nin > 0 && !n->has_input(0) && n->op() != OpKind::kInput && n->op() != OpKind::kInitializer)
      return InvalidArgument(n->Describe(), ": input 0 is missing");
    if (nin < s.min_inputs || (s.max_inputs >= 0 && nin > s.max_inputs))
      return InvalidArgument(n->Describe(), " has ", nin, " inputs, expected ", s.min_inputs, "..", s.max_inputs);
    if (nout < s.min_outputs || (s.max_outputs >= 0 && nout > s.max_outputs))
      return InvalidArgument(n->Describe(), " has ", nout, " outputs, expected ", s.min_outputs, "..", s.max_outputs);
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      Value in = n->input(i);
      if (!in.valid()) continue;
      AMP_RETURN_IF_ERROR(CheckValue(g, in, StrCat(n->Describe(), " input ", i)));
      const auto& uses = g.uses(in);
      if (std::find(uses.begin(), uses.end(), Use{n->id(), static_cast<uint32_t>(i)}) == uses.end())
        return Internal(n->Describe(), " input ", i, " is missing from the use list of '", g.name(in), "'");
    }
    for (size_t o = 0; o < n->num_outputs(); ++o) {
      const std::string& name = n->output_info(o).name;
      if (name.empty()) return InvalidArgument(n->Describe(), " output ", o, " has no name");
      if (!names.insert(name).second) return InvalidArgument("value name '", name, "' is defined twice");
      for (const Use& u : n->uses(o)) {
        const Node* c = g.node(u.node);
        if (!c || c->input(u.slot) != n->output(o))
          return Internal("stale use of '", name, "' by node ", u.node, " slot ", u.slot);
      }
    }
  }
  for (Value v : g.outputs()) AMP_RETURN_IF_ERROR(CheckValue(g, v, "graph output"));
  for (Value v : g.inputs())
    if (!g.producer(v) || g.producer(v)->op() != OpKind::kInput) return Internal("graph input list is stale");
  for (Value v : g.initializers())
    if (!g.producer(v) || g.producer(v)->op() != OpKind::kInitializer) return Internal("initializer list is stale");
  return g.TopologicalOrder().status();
}

}  // namespace amptrain::ir
