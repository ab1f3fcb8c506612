// Convert(): planning, the cast pass, cast elimination, then (for export,
// or always at O3) initializer conversion, with the verifier after each pass
// and a dtype-consistency check at the end; plus the report.
#include "amp/amp_internal.h"
#include "amp/passes.h"
#include "ir/verifier.h"

namespace amptrain::amp {
namespace {

Status RunPass(ir::Pass& pass, ir::Graph& g, bool verify) {
  StatusOr<bool> r = pass.Run(g);
  if (!r.ok()) return r.status().WithContext(StrCat("AMP pass ", pass.name()));
  if (!verify) return Status::Ok();
  Status st = ir::Verify(g);
  return st.ok() ? st : st.WithContext(StrCat("graph invalid after AMP pass ", pass.name()));
}

// The dtype a node computes in, read from the final graph: its first
// fp32/fp16/bf16 output, else the decision's dtype.
ir::DType ComputedDType(const ir::Graph& g, const ir::Node& n, const Decision& d) {
  if (d.reason == Reason::kNotFloat) return d.dtype;
  for (size_t k = 0; k < n.num_outputs(); ++k)
    if (internal::IsAmpFloat(g.type(n.output(k)).dtype)) return g.type(n.output(k)).dtype;
  return d.dtype;
}

}  // namespace

Status CheckDTypeConsistency(const ir::Graph& graph) {
  for (const ir::Node* n : graph.nodes()) {
    if (n->op() != ir::OpKind::kCast) continue;
    AMP_ASSIGN_OR_RETURN(ir::DType to, internal::CastTarget(*n));
    if (graph.type(n->output(0)).dtype != to)
      return Internal(n->Describe(), ": casts to ", ir::DTypeName(to), " but its output '", graph.name(n->output(0)),
                      "' is typed ", ir::DTypeName(graph.type(n->output(0)).dtype));
  }
  std::unique_ptr<ir::Graph> clone = graph.Clone();
  AMP_ASSIGN_OR_RETURN(auto order, clone->TopologicalOrder());
  for (ir::Node* n : order) {
    AMP_RETURN_IF_ERROR(clone->InferNode(n));
    for (size_t k = 0; k < n->num_outputs(); ++k) {
      ir::DType want = clone->type(n->output(k)).dtype;
      ir::DType have = graph.type(n->output(k)).dtype;
      if (want != have)
        return Internal(n->Describe(), ": output '", graph.name(n->output(k)), "' is typed ", ir::DTypeName(have),
                        " but its inputs give ", ir::DTypeName(want));
    }
  }
  return Status::Ok();
}

int64_t WeightBytes(const ir::Graph& graph) {
  int64_t total = 0;
  for (const ir::Node* n : graph.nodes()) {
    if (n->op() != ir::OpKind::kInitializer && n->op() != ir::OpKind::kConstant) continue;
    const ir::Tensor* t = graph.ConstantValue(n->output(0));
    if (t && ir::IsFloat(t->dtype())) total += static_cast<int64_t>(t->nbytes());
  }
  return total;
}

int64_t ActivationBytes(const ir::Graph& graph) {
  int64_t total = 0;
  for (const ir::Node* n : graph.nodes()) {
    if (n->op() == ir::OpKind::kInitializer || n->op() == ir::OpKind::kConstant) continue;
    for (size_t k = 0; k < n->num_outputs(); ++k) {
      const ir::TensorType& t = n->output_info(k).type;
      if (!t.has_shape) continue;
      int64_t elems = 1;
      for (const ir::Dim& d : t.shape.dims()) elems *= d.is_static() ? d.value : 1;
      total += elems * static_cast<int64_t>(ir::DTypeSize(t.dtype));
    }
  }
  return total;
}

StatusOr<Report> Convert(ir::Graph& graph, const Policy& policy, const ConvertOptions& options) {
  AMP_ASSIGN_OR_RETURN(PrecisionPlan plan, PlanPrecision(graph, policy, options.capability));
  return Convert(graph, policy, plan, options);
}

StatusOr<Report> Convert(ir::Graph& graph, const Policy& policy, const PrecisionPlan& plan,
                         const ConvertOptions& options) {
  Report r;
  r.level = policy.level;
  r.low = policy.low;
  const Capability& cap = options.capability;
  if (cap.opset_limits) r.opset = graph.info().opset;
  r.casts_original = internal::CountCasts(graph);
  r.weight_bytes_before = WeightBytes(graph);
  r.activation_bytes_fp32 = ActivationBytes(graph);

  r.unmatched_patterns = plan.unmatched;
  struct Original { ir::NodeId id; std::string name; ir::OpKind op; };
  std::vector<Original> original;  // the compute nodes of the input graph, in topological order
  AMP_ASSIGN_OR_RETURN(auto order, graph.TopologicalOrder());
  for (const ir::Node* n : order)
    if (n->op() != ir::OpKind::kConstant) original.push_back({n->id(), n->name(), n->op()});

  auto apply = MakeApplyPlanPass(&plan);
  AMP_RETURN_IF_ERROR(RunPass(*apply, graph, options.verify_each_pass));
  r.casts_inserted = internal::CountCasts(graph) - r.casts_original;
  auto eliminate = MakeEliminateCastsPass();
  AMP_RETURN_IF_ERROR(RunPass(*eliminate, graph, options.verify_each_pass));
  const bool weights_low = options.convert_initializers || policy.level == Level::kO3;
  auto inits = MakeConvertInitializersPass(policy, &r, /*constants_only=*/!weights_low,
                                           options.convert_initializers && options.low_copies_of_shared);
  AMP_RETURN_IF_ERROR(RunPass(*inits, graph, options.verify_each_pass));
  Status consistent = CheckDTypeConsistency(graph);
  if (!consistent.ok()) return consistent.WithContext("AMP conversion left inconsistent dtypes");

  r.casts_final = internal::CountCasts(graph);
  r.casts_removed = r.casts_original + r.casts_inserted - r.casts_final;
  r.weight_bytes_after = WeightBytes(graph);
  r.activation_bytes_after = ActivationBytes(graph);
  for (const Original& o : original) {
    const NodePlan* np = plan.Find(o.id);
    if (!np) return Internal("node '", o.name, "' is not in the precision plan");
    const Decision& d = np->decision;
    const ir::Node* n = graph.node(o.id);  // nullptr: an original Cast that was folded away
    NodeReport nr{o.name, std::string(ir::Schema(o.op).name), d.dtype, d.reason};
    if (n) nr.dtype = ComputedDType(graph, *n, d);
    if (d.reason == Reason::kUnsupportedLow && cap.opset_limits && (!cap.kernels || cap.kernels(o.op, policy.low)))
      nr.low_from_opset = FirstOpsetWithLow(o.op, policy.low);
    r.nodes.push_back(std::move(nr));
  }
  return r;
}

}  // namespace amptrain::amp
