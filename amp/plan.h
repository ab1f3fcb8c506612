// Precision planning: a pure function from (graph, policy, capability) to a
// plan, and the pass that applies it.
//
// The plan says, for every node, the dtype it computes in and why, and for
// every input slot the dtype that slot reads once the plan is applied, and
// why. The cast pass (MakeApplyPlanPass) reads only the plan: it never asks
// the policy or the capability again. This is XLA's FloatSupport /
// FloatNormalization split: deciding is separate from rewriting.
//
//   PrecisionPlan plan = PlanPrecision(g, policy, capability);   // g unchanged
//   MakeApplyPlanPass(&plan)->Run(g);                             // Casts where a slot's dtype differs
//
// The rules that decide are in plan.cc's header comment.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "amp/policy.h"
#include "ir/graph.h"
#include "ir/pass.h"
#include "ir/status.h"

namespace amptrain::amp {

struct Capability;

// Why an input slot reads the dtype the plan gives it.
enum class SlotRule {
  kKeep,      // left as it is: not an fp32/fp16/bf16 value, a free slot without a pin, or a node
              // that computes in no AMP float type
  kCompute,   // a tied slot: reads the node's compute dtype
  kOriginal,  // a structural slot (shapes, indices, Resize scales), or BatchNormalization's
              // scale/B/mean/var kept fp32: the dtype of the original model
  kPinned,    // a policy pin
};
const char* SlotRuleName(SlotRule rule);

struct SlotPlan {
  ir::DType dtype = ir::DType::kUndefined;  // kUndefined with kKeep
  SlotRule rule = SlotRule::kKeep;
};

struct NodePlan {
  Decision decision;            // the dtype the node computes in, and why
  std::vector<SlotPlan> inputs;  // one per input slot (absent optional inputs: kKeep)
};

struct PrecisionPlan {
  Level level = Level::kO0;
  ir::DType low = ir::DType::kFloat16;
  std::map<ir::NodeId, NodePlan> nodes;   // every compute node (not Constants, Initializers)
  std::vector<ir::DType> graph_inputs;    // each graph input's dtype once applied
  std::vector<ir::DType> graph_outputs;   // each graph output's dtype once applied
  // Node overrides and pins whose pattern matched no node of the graph, as
  // written in the policy ("re:conv.*", "fc1 input 2"): the CLI warns about them.
  std::vector<std::string> unmatched;

  // nullptr when `id` has no plan (a Constant, or a node added after planning).
  const NodePlan* Find(ir::NodeId id) const;
};

// Plans `graph` under `policy` and `capability` without changing it. Errors:
// an invalid policy (unknown op, bad regex, bad dtype), or a pin that would
// change a structural slot, naming the node.
StatusOr<PrecisionPlan> PlanPrecision(const ir::Graph& graph, const Policy& policy, const Capability& capability);

// The cast pass: each slot whose planned dtype differs from the dtype it has
// gets a Cast (one per (value, dtype), shared by every consumer); then each
// node's output dtypes are re-derived from its rule (shapes kept). Graph
// inputs and outputs take the plan's dtypes (an output keeps its name: the
// value feeding its Cast is renamed "<name>_<dtype>"). A LayerNormalization
// computing low gets stash_type=1 (fp32 statistics). `plan` must outlive the
// pass and have been made from this graph.
std::unique_ptr<ir::Pass> MakeApplyPlanPass(const PrecisionPlan* plan);

}  // namespace amptrain::amp
