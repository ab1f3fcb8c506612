// The cast-insertion pass: makes the graph agree with the decisions.
//
// Nodes are visited in topological order. Each tied float input slot gets the
// node's dtype, a structural slot gets back the dtype it had in the original
// model, a pinned free slot gets its pin; a mismatch is fixed by a Cast, one
// per (value, dtype) and shared by every consumer. Then the node's output
// dtypes are re-derived from its rule (shapes are kept). Existing Cast nodes
// keep their target here; the elimination pass folds the chains this leaves
// (Cast(to=FLOAT) -> Cast(to=FLOAT16) becomes one Cast(to=FLOAT16)).
// A LayerNormalization computing low gets an explicit stash_type=1 (mean and
// inverse standard deviation computed and returned in fp32; ONNX's default).
// Graph I/O: with keep_io_types, inputs and outputs keep their dtypes (a Cast
// at the boundary; an output keeps its name, the value feeding its Cast is
// renamed "<name>_fp16"); otherwise fp32 inputs and outputs become low.
#include <map>

#include "amp/amp_internal.h"
#include "amp/passes.h"
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
using internal::SlotRole;
using ir::DType;
using ir::Value;

class Inserter {
 public:
  Inserter(const Policy& p, internal::CompiledPolicy c, const std::map<ir::NodeId, Decision>* d, Capability cap)
      : p_(p), c_(std::move(c)), decisions_(d), cap_(std::move(cap)) {}

  StatusOr<bool> Run(ir::Graph& g) {
    for (const ir::Node* n : g.nodes())
      for (size_t k = 0; k < n->num_outputs(); ++k) original_[n->output(k)] = n->output_info(k).type.dtype;
    bool changed = false;
    if (!p_.keep_io_types) {
      for (Value v : g.inputs()) {
        if (g.type(v).dtype != DType::kFloat32) continue;
        g.mutable_info(v).type.dtype = p_.low;
        changed = true;
      }
    }
    AMP_ASSIGN_OR_RETURN(auto order, g.TopologicalOrder());
    for (ir::Node* n : order) {
      if (n->op() == ir::OpKind::kConstant) continue;
      auto it = decisions_->find(n->id());
      if (it == decisions_->end()) return Internal(n->Describe(), ": no precision decision (run the assignment pass first)");
      const Decision& d = it->second;
      for (size_t s = 0; s < n->num_inputs(); ++s) {
        Value v = n->input(s);
        if (!v.valid()) continue;
        DType cur = g.type(v).dtype, want = cur;
        switch (internal::RoleOf(n->op(), s)) {
          case SlotRole::kStructural: want = original_.at(v); break;
          case SlotRole::kFree:
            if (auto pin = c_.PinFor(n->name(), s); pin && IsAmpFloat(cur)) want = *pin;
            break;
          case SlotRole::kTied:
            if (internal::KeepsBnParamsFp32(p_, n->op(), s, g.info().opset, cap_)) want = original_.at(v);
            else if (IsAmpFloat(cur) && IsAmpFloat(d.dtype)) want = d.dtype;
            break;
        }
        if (want == cur) continue;
        g.SetInput(n, s, CastOf(g, v, want));
        changed = true;
      }
      // A low LayerNormalization keeps fp32 statistics (ONNX: stash_type=1).
      if (n->op() == ir::OpKind::kLayerNormalization && ir::IsLowPrecision(d.dtype) &&
          (!n->attrs().Has("stash_type") || n->attrs().Int("stash_type", 1) != 1)) {
        n->attrs().Set("stash_type", int64_t{1});
        changed = true;
      }
      Status st = internal::RefreshOutputDTypes(g, n);
      if (!st.ok()) return st.WithContext("after AMP cast insertion");
    }
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      Value v = g.outputs()[i];
      DType cur = g.type(v).dtype, want = original_.at(v);
      if (!p_.keep_io_types && want == DType::kFloat32) want = p_.low;
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

  const Policy& p_;
  internal::CompiledPolicy c_;
  const std::map<ir::NodeId, Decision>* decisions_;
  Capability cap_;
  std::map<Value, DType> original_;
  std::map<std::pair<Value, DType>, Value> casts_;
};

}  // namespace

std::unique_ptr<ir::Pass> MakeInsertCastsPass(const Policy& policy, const std::map<ir::NodeId, Decision>* decisions,
                                              Capability capability) {
  return std::make_unique<ir::FunctionPass>("amp-insert-casts", [policy, decisions, capability](ir::Graph& g) -> StatusOr<bool> {
    AMP_ASSIGN_OR_RETURN(internal::CompiledPolicy compiled, internal::CompiledPolicy::Compile(policy));
    Inserter ins(policy, std::move(compiled), decisions, capability);
    return ins.Run(g);
  });
}

}  // namespace amptrain::amp
