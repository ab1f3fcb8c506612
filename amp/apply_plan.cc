// The cast pass (amp/plan.h): makes the graph agree with a precision plan.
//
// Nodes are visited in topological order. Each input slot gets the dtype the
// plan gives it (kKeep slots are left alone); a mismatch is fixed by a Cast,
// one per (value, dtype) and shared by every consumer. Then the node's output
// dtypes are re-derived from its rule (shapes are kept). Existing Cast nodes
// keep their target here; the elimination pass folds the chains this leaves
// (Cast(to=FLOAT) -> Cast(to=FLOAT16) becomes one Cast(to=FLOAT16)).
// A LayerNormalization computing low gets an explicit stash_type=1 (mean and
// inverse standard deviation computed and returned in fp32; ONNX's default).
// Graph I/O takes the plan's dtypes: an input is retyped, an output keeps its
// name behind a Cast (the value feeding it is renamed "<name>_<dtype>").
// Nothing here asks the policy or the capability: the plan is the only input.
#include <map>

#include "amp/amp_internal.h"
#include "amp/passes.h"
#include "amp/plan.h"
#include "ir/onnx_dtype.h"

namespace amptrain::amp {
namespace internal {

StatusOr<ir::DType> CastTarget(const ir::Node& cast) {
  AMP_ASSIGN_OR_RETURN(int64_t to, cast.attrs().GetInt("to", 0));
  ir::DType t = ir::DTypeFromOnnx(to);
  if (t == ir::DType::kUndefined) return Unimplemented(cast.Describe(), ": cast to ONNX data type ", to);
  return t;
}

const char* ShortName(ir::DType t) {
  switch (t) {
    case ir::DType::kFloat32: return "fp32";
    case ir::DType::kFloat16: return "fp16";
    case ir::DType::kBFloat16: return "bf16";
    default: return "cast";
  }
}

ir::Value AddCast(ir::Graph& g, ir::Value v, ir::DType to) {
  std::string name = g.UniqueName(StrCat(g.name(v), "_", ShortName(to)));
  ir::Node* c = g.AddNode(ir::OpKind::kCast, {v}, 1, name, {name});
  c->attrs().Set("to", static_cast<int64_t>(ir::OnnxFromDType(to)));
  ir::TensorType t = g.type(v);
  t.dtype = to;
  c->mutable_output_info(0).type = std::move(t);
  return c->output(0);
}

int CountCasts(const ir::Graph& g) {
  int n = 0;
  for (const ir::Node* node : g.nodes()) n += node->op() == ir::OpKind::kCast;
  return n;
}

Status RefreshOutputDTypes(ir::Graph& g, ir::Node* node) {
  std::vector<ir::TensorType> before;
  for (size_t k = 0; k < node->num_outputs(); ++k) before.push_back(node->output_info(k).type);
  AMP_RETURN_IF_ERROR(g.InferNode(node));
  for (size_t k = 0; k < node->num_outputs(); ++k) {
    ir::DType dt = node->output_info(k).type.dtype;
    if (before[k].has_shape) {
      node->mutable_output_info(k).type = before[k];
      node->mutable_output_info(k).type.dtype = dt;
    }
  }
  return Status::Ok();
}

}  // namespace internal

namespace {

using internal::IsAmpFloat;
using ir::DType;
using ir::Value;

class PlanApplier {
 public:
  explicit PlanApplier(const PrecisionPlan& plan) : plan_(plan) {}

  StatusOr<bool> Run(ir::Graph& g) {
    if (plan_.graph_inputs.size() != g.inputs().size() || plan_.graph_outputs.size() != g.outputs().size())
      return Internal("the precision plan was made for another graph (", plan_.graph_inputs.size(), " inputs, ",
                      plan_.graph_outputs.size(), " outputs; the graph has ", g.inputs().size(), " and ",
                      g.outputs().size(), ")");
    bool changed = false;
    for (size_t i = 0; i < g.inputs().size(); ++i) {
      Value v = g.inputs()[i];
      if (g.type(v).dtype == plan_.graph_inputs[i]) continue;
      g.mutable_info(v).type.dtype = plan_.graph_inputs[i];
      changed = true;
    }
    AMP_ASSIGN_OR_RETURN(auto order, g.TopologicalOrder());
    for (ir::Node* n : order) {
      if (n->op() == ir::OpKind::kConstant) continue;
      const NodePlan* np = plan_.Find(n->id());
      if (!np || np->inputs.size() != n->num_inputs())
        return Internal(n->Describe(), ": not in the precision plan (plan the graph first)");
      for (size_t s = 0; s < n->num_inputs(); ++s) {
        const SlotPlan& sp = np->inputs[s];
        Value v = n->input(s);
        if (!v.valid() || sp.rule == SlotRule::kKeep || g.type(v).dtype == sp.dtype) continue;
        g.SetInput(n, s, CastOf(g, v, sp.dtype));
        changed = true;
      }
      // A low LayerNormalization keeps fp32 statistics (ONNX: stash_type=1).
      if (n->op() == ir::OpKind::kLayerNormalization && ir::IsLowPrecision(np->decision.dtype) &&
          (!n->attrs().Has("stash_type") || n->attrs().Int("stash_type", 1) != 1)) {
        n->attrs().Set("stash_type", int64_t{1});
        changed = true;
      }
      Status st = internal::RefreshOutputDTypes(g, n);
      if (!st.ok()) return st.WithContext("after AMP cast insertion");
    }
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      Value v = g.outputs()[i];
      DType cur = g.type(v).dtype, want = plan_.graph_outputs[i];
      if (cur == want || !IsAmpFloat(cur) || !IsAmpFloat(want)) continue;
      std::string name = g.name(v);
      AMP_RETURN_IF_ERROR(g.RenameValue(v, g.UniqueName(StrCat(name, "_", internal::ShortName(cur)))));
      ir::Node* c = g.AddNode(ir::OpKind::kCast, {v}, 1, g.UniqueName(name + "_cast"), {name});
      c->attrs().Set("to", static_cast<int64_t>(ir::OnnxFromDType(want)));
      c->mutable_output_info(0).type = g.type(v);
      c->mutable_output_info(0).type.dtype = want;
      g.SetOutput(i, c->output(0));
      changed = true;
    }
    return changed;
  }

 private:
  Value CastOf(ir::Graph& g, Value v, DType to) {
    auto key = std::make_pair(v, to);
    auto it = casts_.find(key);
    if (it != casts_.end()) return it->second;
    Value c = internal::AddCast(g, v, to);
    casts_[key] = c;
    return c;
  }

  const PrecisionPlan& plan_;
  std::map<std::pair<Value, DType>, Value> casts_;
};

}  // namespace

std::unique_ptr<ir::Pass> MakeApplyPlanPass(const PrecisionPlan* plan) {
  return std::make_unique<ir::FunctionPass>("amp-apply-plan", [plan](ir::Graph& g) -> StatusOr<bool> {
    return PlanApplier(*plan).Run(g);
  });
}

}  // namespace amptrain::amp
