// Precision planning (amp/plan.h): a Decision (dtype + reason) for every
// node, then the dtype every input slot reads.
//
// Nodes are visited in topological order with the dtype each value will have
// once the plan is applied ("planned" dtypes), so follow ops see the decided
// dtypes of their producers. Rules, later ones winning:
//   1. level: O0 fp32; O1 allow -> low, deny -> fp32, follow -> widest;
//      O2 everything low but deny; O3 everything low. BatchNormalization at
//      O2 (opset >= 15) runs X/Y low with fp32 scale/B/mean/var (Apex's
//      keep_batchnorm_fp32; PRECISION.md "statistics/params stay fp32"); at
//      opset < 15 ONNX ties them, so BN stays fp32 there.
//   2. the policy's op lists (fp32_ops, low_ops).
//   3. node overrides (exact or regex, the last match wins).
//   4. a pin of a tied input slot decides the node's dtype (a pin of a free
//      slot only changes that input; a pin that would change a structural
//      slot is an error).
//   5. low precision that ONNX cannot express for the op at the model's opset
//      falls back to fp32 (kUnsupportedLow).
//   6. O2 only, after every node has a decision and rule 8 has run: an
//      "island" (a connected set of nodes that are low only by the level,
//      kLevelAll, and are not allowlist compute: follow ops,
//      BatchNormalization, LayerNormalization, Erf, Gelu; allowlist compute
//      only when it is the model's last layer) that reads at least one
//      non-constant fp32 value, reads no non-constant low value and feeds
//      no node computing low (nor a low graph output) would only round
//      values between two Casts: it runs fp32
//      (kRoundingOnly). E.g. bf16 at opset < 22: Conv and the pools cannot
//      run bf16, so ResNet's BN/Relu/Add between them stay fp32 instead of
//      rounding the residual stream after every Conv. Demoting such an island
//      removes its entry and exit Casts and never adds one (its constants
//      stay fp32, it has no low neighbour to cast for); an island touching a
//      low neighbour keeps the level's low dtype.
//   7. O1 only, after every node has a decision: a follow op that the level
//      left fp32 (kFollow) runs low (kLowReaders) when it commutes with
//      rounding (it selects, compares or moves values: Relu, Clip, MaxPool
//      over windows that do not overlap without its Indices output, the
//      layout ops) and every reader
//      of its float outputs computes low or is moved low itself; it is not
//      a graph output. Its low result equals the rounding of its fp32 one,
//      which its readers took anyway, so the forward values do not change;
//      the Cast moves in front of it, where the producer (BatchNormalization
//      in a CNN) can write the low value itself. Its gradient moves values
//      without adding them, so it rounds nothing either. PyTorch's autocast
//      and MindSpore's O1 (ReLU on its allowlist) run these ops low too.
//   8. O1/O2, with rule 7 and before rule 6: a denylist op (kLevelDeny) that the capability
//      computes in fp32 inside its low kernel (Capability::
//      computes_fp32_inside: ReduceMean, ReduceSum; in training also
//      BatchNormalization, whose statistics and parameters stay fp32) runs low (kFp32Inside)
//      when all its non-constant float inputs are planned low and every
//      reader computes low: the Cast pair around it would widen its inputs
//      exactly and round its result for the readers anyway. A
//      squeeze-excitation block's ReduceMean (the dynamo export's global
//      pooling) then costs no Casts, as GlobalAveragePool does. A chain of
//      such ops is decided together (ReduceL2 then ReduceMean: the value
//      between them is low when both run low).
// O2 also moves three denylist ops to low (docs/PRECISION_CHOICES.md):
// LayerNormalization at opset >= 17 (low X/Scale/B/Y, statistics in fp32:
// the cast pass sets stash_type=1; below 17 the op does not exist and its
// decomposition's ReduceMean/Pow stay fp32), Erf (bounded output) and Gelu
// (x * Phi(x): |output| <= |input|, the opset-20 op the dynamo exporter writes).
// Follow = the widest planned dtype among the node's non-constant tied float
// inputs (constants are cast to match, they do not promote); graph inputs
// count as fp32 with keep_io_types, as low otherwise. A float initializer of
// rank >= 1 promotes like a computed value (PromotingWeight), as an fp32
// nn.Parameter does in PyTorch's autocast (a dimensioned tensor; rank-0
// constants are its wrapped scalars, which do not): ConvNeXt's layer scale
// (gamma = 1e-6, subnormal in fp16) multiplies in fp32, not in fp16. The
// exception is the bias Add of a Linear that the exporter split into MatMul
// + Add: PyTorch's linear adds its bias in the low type. Nodes without a tied
// fp32/fp16/bf16 input (Shape, integer arithmetic, float64 math) are
// kNotFloat and are not touched; comparison ops (Equal, Less, ...) are
// kNotFloat but unify their inputs to the widest type.
// If/Loop/Scan never reach here: the importer refuses them.
#include <functional>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "amp/plan.h"

#include "amp/amp_internal.h"
#include "amp/passes.h"

namespace amptrain::amp {
namespace internal {

using ir::DType;
using ir::OpKind;

SlotRole RoleOf(OpKind op, size_t slot) {
  switch (op) {
    case OpKind::kCast:
    case OpKind::kShape: return SlotRole::kFree;
    case OpKind::kPow: return slot == 1 ? SlotRole::kFree : SlotRole::kTied;
    case OpKind::kDropout: return slot == 0 ? SlotRole::kTied : SlotRole::kStructural;
    case OpKind::kResize: return slot == 0 ? SlotRole::kTied : SlotRole::kStructural;
    default: break;
  }
  return ir::Schema(op).is_value_input(slot) ? SlotRole::kStructural : SlotRole::kTied;
}

// The first opset at which the ONNX schema of `op` lists tensor(bfloat16)
// among the types of its float input (built with the onnx 1.23 package:
// onnx.defs.get_schema(op, opset) for every op of ir/ops.def). 0: never.
int Bf16MinOpset(OpKind op) {
  switch (op) {
    case OpKind::kTopK: return 24;
    case OpKind::kConv:
    case OpKind::kConvTranspose:
    case OpKind::kMaxPool:
    case OpKind::kAveragePool:
    case OpKind::kGlobalAveragePool:
    case OpKind::kHardSigmoid:
    case OpKind::kHardSwish:
    case OpKind::kRNN:
    case OpKind::kGRU:
    case OpKind::kLSTM:
    case OpKind::kGridSample:
    case OpKind::kSin:
    case OpKind::kCos:
    case OpKind::kTan:
    case OpKind::kAsin:
    case OpKind::kAcos:
    case OpKind::kAtan:
    case OpKind::kSinh:
    case OpKind::kCosh:
    case OpKind::kAsinh:
    case OpKind::kAcosh:
    case OpKind::kAtanh:
    case OpKind::kRound:
    case OpKind::kSoftplus:
    case OpKind::kElu:
    case OpKind::kSelu:
    case OpKind::kMish: return 22;
    case OpKind::kGelu: return 20;
    case OpKind::kLayerNormalization: return 17;
    case OpKind::kLeakyRelu:
    case OpKind::kPRelu:
    case OpKind::kWhere: return 16;
    case OpKind::kCumSum:
    case OpKind::kTrilu: return 14;
    case OpKind::kBatchNormalization: return 14;
    case OpKind::kNot:
    case OpKind::kCelu:
    case OpKind::kConstantOfShape:
    case OpKind::kRange: return 0;
    default: return 13;
  }
}

// The same for tensor(float16), where an op's schema came without it: 1 for
// every op that has had it from its first opset on.
int Fp16MinOpset(OpKind op) {
  switch (op) {
    case OpKind::kCumSum: return 14;
    case OpKind::kCelu: return 0;  // float32 only, to this day
    default: return 1;
  }
}

bool KeepsBnParamsFp32(const Policy& policy, OpKind op, size_t slot, int64_t opset, const Capability& cap) {
  return op == OpKind::kBatchNormalization && slot >= 1 && (opset >= 15 || !cap.opset_limits) &&
         policy.level != Level::kO3;
}

bool SupportsLow(OpKind op, DType low, int64_t opset, const Capability& cap) {
  if (cap.kernels && !cap.kernels(op, low)) return false;
  if (!cap.opset_limits) return true;
  int64_t since = FirstOpsetWithLow(op, low);
  return since != 0 && opset >= since;
}

}  // namespace internal

int64_t FirstOpsetWithLow(ir::OpKind op, ir::DType low) {
  if (ir::Schema(op).onnx_type.empty()) return 1;
  return low == ir::DType::kFloat16 ? internal::Fp16MinOpset(op) : internal::Bf16MinOpset(op);
}

namespace {

using internal::IsAmpFloat;
using internal::SlotRole;
using ir::DType;
using ir::Node;
using ir::PrecisionClass;
using ir::Value;

DType Widest(DType a, DType b) {
  if (a == DType::kUndefined) return b;
  if (a == b) return a;
  return DType::kFloat32;  // fp16 vs bf16, or either vs fp32
}

class Assigner {
 public:
  Assigner(const Policy& p, const internal::CompiledPolicy& c, const Capability& cap)
      : p_(p), c_(c), cap_(cap) {}

  StatusOr<PrecisionPlan> Run(const ir::Graph& g) {
    AMP_ASSIGN_OR_RETURN(auto order, g.TopologicalOrder());
    AMP_RETURN_IF_ERROR(Plan(g, order));
    if (p_.level == Level::kO1 || p_.level == Level::kO2) {
      moved_low_ = LowWhereReadersAreLow(g, order);
      // Only the chosen nodes and their (low) readers see other dtypes.
      if (!moved_low_.empty()) AMP_RETURN_IF_ERROR(Plan(g, order));
    }
    if (p_.level == Level::kO2) {
      // After rule 8: an island reading a value that rule 8 made low is not
      // rounding-only, and no reader of such a value is demoted.
      rounding_only_ = RoundingOnlyIslands(g, order);
      // Demoted nodes change planned dtypes: decide again (only kNotFloat
      // decisions read them at O2, and no island can grow from that).
      if (!rounding_only_.empty()) AMP_RETURN_IF_ERROR(Plan(g, order));
    }
    PrecisionPlan plan;
    plan.level = p_.level;
    plan.low = p_.low;
    for (const Node* n : order) {
      if (n->op() == ir::OpKind::kConstant) continue;
      NodePlan np;
      np.decision = decisions_.at(n->id());
      for (size_t s = 0; s < n->num_inputs(); ++s) np.inputs.push_back(PlanSlot(g, *n, s, np.decision));
      plan.nodes.emplace(n->id(), std::move(np));
    }
    for (Value v : g.inputs()) plan.graph_inputs.push_back(IoDType(g.type(v).dtype));
    for (Value v : g.outputs()) plan.graph_outputs.push_back(IoDType(g.type(v).dtype));
    plan.unmatched = c_.Unmatched(g);
    return plan;
  }

 private:
  // A graph input's or output's dtype: fp32 becomes low without keep_io_types.
  DType IoDType(DType t) const { return !p_.keep_io_types && t == DType::kFloat32 ? p_.low : t; }

  // The dtype slot `s` of `n` reads under decision `d`, and why.
  SlotPlan PlanSlot(const ir::Graph& g, const Node& n, size_t s, const Decision& d) const {
    if (!n.has_input(s)) return {};
    DType orig = g.type(n.input(s)).dtype;
    switch (internal::RoleOf(n.op(), s)) {
      case SlotRole::kStructural: return {orig, SlotRule::kOriginal};
      case SlotRole::kFree:
        if (auto pin = c_.PinFor(n.name(), s); pin && IsAmpFloat(orig)) return {*pin, SlotRule::kPinned};
        return {};
      case SlotRole::kTied:
        if (internal::KeepsBnParamsFp32(p_, n.op(), s, g.info().opset, cap_)) return {orig, SlotRule::kOriginal};
        if (IsAmpFloat(orig) && IsAmpFloat(d.dtype)) return {d.dtype, SlotRule::kCompute};
        return {};
    }
    return {};
  }

  Status Plan(const ir::Graph& g, const std::vector<const Node*>& order) {
    decisions_.clear();
    planned_.clear();
    for (Value v : g.inputs())
      if (!p_.keep_io_types && g.type(v).dtype == DType::kFloat32) planned_[v] = p_.low;
    for (const Node* n : order) {
      if (n->op() == ir::OpKind::kConstant) continue;
      AMP_ASSIGN_OR_RETURN(Decision d, Decide(g, *n));
      decisions_[n->id()] = d;
      for (size_t k = 0; k < n->num_outputs(); ++k) {
        DType orig = g.type(n->output(k)).dtype;
        bool keeps = !IsAmpFloat(orig) || d.reason == Reason::kNotFloat || n->op() == ir::OpKind::kCast ||
                     !OutputFollowsDecision(*n, k);
        if (!keeps) planned_[n->output(k)] = d.dtype;
      }
    }
    return Status::Ok();
  }

  // Outputs whose dtype follows the node's decision: not the statistics of
  // LayerNormalization (mean, inverse std) and BatchNormalization (running
  // mean and variance), which stay fp32.
  static bool OutputFollowsDecision(const Node& n, size_t k) {
    return k == 0 || (n.op() != ir::OpKind::kLayerNormalization && n.op() != ir::OpKind::kBatchNormalization);
  }

  // Tied float input slots whose dtype follows the node's decision.
  bool FollowsDecision(const ir::Graph& g, const Node& n, size_t s) const {
    return n.has_input(s) && internal::RoleOf(n.op(), s) == SlotRole::kTied && IsAmpFloat(g.type(n.input(s)).dtype) &&
           !internal::KeepsBnParamsFp32(p_, n.op(), s, g.info().opset, cap_);
  }

  bool ComputesLow(const Node& n) const {
    auto it = decisions_.find(n.id());
    return it != decisions_.end() && it->second.reason != Reason::kNotFloat && ir::IsLowPrecision(it->second.dtype);
  }

  // Rule 6: the nodes of the islands whose low precision would only round.
  std::unordered_set<ir::NodeId> RoundingOnlyIslands(const ir::Graph& g, const std::vector<const Node*>& order) const {
    // Allowlist compute joins an island only as a model's last layer (its
    // outputs are graph outputs and nothing else): a classifier head after an
    // fp32 reduction would otherwise cost a Cast on each side for one small GEMM.
    auto only_graph_outputs = [&](const Node& n) {
      for (size_t k = 0; k < n.num_outputs(); ++k)
        if (!g.uses(n.output(k)).empty()) return false;
      return true;
    };
    auto member = [&](const Node& n) {
      auto it = decisions_.find(n.id());
      return it != decisions_.end() && it->second.reason == Reason::kLevelAll &&
             (n.schema().precision != PrecisionClass::kAllow || only_graph_outputs(n));
    };
    std::unordered_map<ir::NodeId, size_t> index;  // member -> union-find slot
    for (const Node* n : order)
      if (member(*n)) index.emplace(n->id(), index.size());
    std::vector<size_t> parent(index.size());
    std::iota(parent.begin(), parent.end(), 0);
    auto find = [&](size_t i) {
      while (parent[i] != i) i = parent[i] = parent[parent[i]];
      return i;
    };
    for (const Node* n : order) {
      auto self = index.find(n->id());
      if (self == index.end()) continue;
      for (size_t s = 0; s < n->num_inputs(); ++s) {
        if (!FollowsDecision(g, *n, s)) continue;
        auto prod = index.find(n->input(s).node);
        if (prod != index.end()) parent[find(prod->second)] = find(self->second);
      }
    }
    std::vector<char> reads_fp32(index.size(), 0), touches_low(index.size(), 0);
    for (const Node* n : order) {
      auto self = index.find(n->id());
      if (self == index.end()) continue;
      size_t root = find(self->second);
      for (size_t s = 0; s < n->num_inputs(); ++s) {
        if (!FollowsDecision(g, *n, s) || index.count(n->input(s).node) || g.ConstantValue(n->input(s))) continue;
        (ir::IsLowPrecision(Planned(g, n->input(s))) ? touches_low : reads_fp32)[root] = 1;
      }
      for (size_t k = 0; k < n->num_outputs(); ++k) {
        Value v = n->output(k);
        if (g.is_graph_output(v) && !p_.keep_io_types) touches_low[root] = 1;
        for (const ir::Use& u : g.uses(v)) {
          const Node* c = g.node(u.node);
          if (!index.count(c->id()) && FollowsDecision(g, *c, u.slot) && ComputesLow(*c)) touches_low[root] = 1;
        }
      }
    }
    std::unordered_set<ir::NodeId> out;
    for (const auto& [id, i] : index)
      if (reads_fp32[find(i)] && !touches_low[find(i)]) out.insert(id);
    return out;
  }

  // Rule 7: the op's low result is the rounding of its fp32 result for any
  // inputs (rounding is monotonic and these ops only select, compare or move
  // values), and its gradient adds nothing up (a MaxPool whose windows
  // overlap sums the gradients of a shared input).
  static bool CommutesWithRounding(const Node& n) {
    switch (n.op()) {
      case ir::OpKind::kRelu:
      case ir::OpKind::kClip:
      case ir::OpKind::kIdentity:
      case ir::OpKind::kFlatten:
      case ir::OpKind::kReshape:
      case ir::OpKind::kTranspose:
      case ir::OpKind::kConcat:
      case ir::OpKind::kSplit:
      case ir::OpKind::kSlice:
      case ir::OpKind::kSqueeze:
      case ir::OpKind::kUnsqueeze: return true;
      case ir::OpKind::kMaxPool: {
        // Its Indices output (return_indices=True, MaxUnpool) is not a value:
        // two inputs that round to the same low value tie, and the index of
        // the first may differ from the fp32 maximum's.
        if (n.num_outputs() > 1) return false;
        std::vector<int64_t> k = n.attrs().Ints("kernel_shape"), st = n.attrs().Ints("strides");
        std::vector<int64_t> dil = n.attrs().Ints("dilations");
        if (k.empty()) return false;
        for (size_t i = 0; i < k.size(); ++i) {
          int64_t stride = i < st.size() ? st[i] : 1, d = i < dil.size() ? dil[i] : 1;
          if (d != 1 || stride < k[i]) return false;
        }
        return true;
      }
      default: return false;
    }
  }

  // Rule 8's op test: a denylist op whose low kernel computes in fp32 inside.
  bool Fp32InsideOp(const ir::Graph& g, const Node& n) const {
    auto it = decisions_.find(n.id());
    return it != decisions_.end() && it->second.reason == Reason::kLevelDeny && cap_.computes_fp32_inside &&
           cap_.computes_fp32_inside(n.op()) && internal::SupportsLow(n.op(), p_.low, g.info().opset, cap_);
  }

  // Input `s` of `n` is read low: planned low, or (`chain`) the output of
  // another rule-8 op, low if that one is (a ReduceL2 feeding a ReduceMean:
  // ConvNeXt-V2's global response norm; SKNet's ReduceSum then ReduceMean).
  bool ReadsLow(const ir::Graph& g, const Node& n, size_t s, const std::function<bool(const Node&)>& chain) const {
    if (ir::IsLowPrecision(Planned(g, n.input(s)))) return true;
    const Node* producer = g.producer(n.input(s));
    return producer && n.input(s) == producer->output(0) && chain(*producer);
  }

  // Rule 8: a rule-8 op reading only low values (see ReadsLow).
  bool Fp32InsideCandidate(const ir::Graph& g, const Node& n, const std::function<bool(const Node&)>& chain) const {
    if (!Fp32InsideOp(g, n)) return false;
    bool any = false;
    for (size_t s = 0; s < n.num_inputs(); ++s) {
      if (!FollowsDecision(g, n, s) || g.ConstantValue(n.input(s))) continue;
      if (!ReadsLow(g, n, s, chain)) return false;
      any = true;
    }
    return any;
  }

  // Every reader of n's float outputs computes low or is in `moved`; none is
  // a graph output; at least one reader.
  bool ReadersLow(const ir::Graph& g, const Node& n, const std::unordered_map<ir::NodeId, Reason>& moved) const {
    bool any_reader = false;
    for (size_t k = 0; k < n.num_outputs(); ++k) {
      Value v = n.output(k);
      if (!IsAmpFloat(g.type(v).dtype) || !OutputFollowsDecision(n, k)) continue;
      if (g.is_graph_output(v)) return false;
      for (const ir::Use& u : g.uses(v)) {
        const Node* c = g.node(u.node);
        any_reader = true;
        if (!FollowsDecision(g, *c, u.slot) || (!moved.count(c->id()) && !ComputesLow(*c))) return false;
      }
    }
    return any_reader;
  }

  // Rules 7 and 8: the nodes that run low because every reader takes them
  // low, with the reason. Reverse topological order: a reader is decided
  // before its producer. A rule-8 op reading another one's output counts it
  // low on trust; the trust is checked afterwards, and a node that lost its
  // ground leaves the set with whatever relied on it (until nothing changes).
  std::unordered_map<ir::NodeId, Reason> LowWhereReadersAreLow(const ir::Graph& g,
                                                               const std::vector<const Node*>& order) const {
    std::unordered_map<ir::NodeId, Reason> out;
    auto trusted = [&](const Node& p) { return Fp32InsideOp(g, p); };
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const Node& n = **it;
      auto dit = decisions_.find(n.id());
      if (dit == decisions_.end()) continue;  // a Constant
      const Decision& d = dit->second;
      Reason why;
      if (p_.level == Level::kO1 && d.reason == Reason::kFollow && d.dtype == DType::kFloat32 &&
          CommutesWithRounding(n) && internal::SupportsLow(n.op(), p_.low, g.info().opset, cap_))
        why = Reason::kLowReaders;
      else if (Fp32InsideCandidate(g, n, trusted))
        why = Reason::kFp32Inside;
      else
        continue;
      if (ReadersLow(g, n, out)) out.emplace(n.id(), why);
    }
    auto moved = [&](const Node& p) { return out.count(p.id()) > 0; };
    for (bool changed = true; changed;) {
      changed = false;
      for (const Node* n : order) {
        auto it = out.find(n->id());
        if (it == out.end()) continue;
        if ((it->second == Reason::kFp32Inside && !Fp32InsideCandidate(g, *n, moved)) || !ReadersLow(g, *n, out)) {
          out.erase(it);
          changed = true;
        }
      }
    }
    return out;
  }

  DType Planned(const ir::Graph& g, Value v) const {
    auto it = planned_.find(v);
    return it != planned_.end() ? it->second : g.type(v).dtype;
  }

  // Input `s` of `n` is a float initializer of rank >= 1 that is not the
  // bias of a MatMul/Gemm/Conv output (Add(MatMul(x, W), b), the split
  // Linear). Only O1 asks: O0 is fp32 throughout, O2/O3 do not follow.
  bool PromotingWeight(const ir::Graph& g, const Node& n, size_t s) const {
    if (p_.level != Level::kO1) return false;
    const Value v = n.input(s);
    const Node* producer = g.producer(v);
    if (!producer || producer->op() != ir::OpKind::kInitializer || g.type(v).shape.rank() < 1) return false;
    if (n.op() == ir::OpKind::kAdd && n.num_inputs() == 2) {
      const Node* other = g.producer(n.input(1 - s));
      if (other && (other->op() == ir::OpKind::kMatMul || other->op() == ir::OpKind::kGemm ||
                    other->op() == ir::OpKind::kConv))
        return false;
    }
    return true;
  }

  StatusOr<Decision> Decide(const ir::Graph& g, const Node& n) {
    DType widest = DType::kUndefined, widest_const = DType::kUndefined;
    bool any_float = false;
    for (size_t s = 0; s < n.num_inputs(); ++s) {
      Value v = n.input(s);
      if (!v.valid()) continue;
      SlotRole role = internal::RoleOf(n.op(), s);
      std::optional<DType> pin = c_.PinFor(n.name(), s);
      if (pin && role == SlotRole::kStructural && *pin != g.type(v).dtype)
        return InvalidArgument(n.Describe(), ": input ", s, " ('", g.name(v), "') is a structural ",
                               ir::DTypeName(g.type(v).dtype), " input; a pin cannot change it to ",
                               ir::DTypeName(*pin));
      if (role != SlotRole::kTied || !IsAmpFloat(g.type(v).dtype) ||
          internal::KeepsBnParamsFp32(p_, n.op(), s, g.info().opset, cap_))
        continue;
      any_float = true;
      DType t = Planned(g, v);
      if (g.ConstantValue(v) && !PromotingWeight(g, n, s)) widest_const = Widest(widest_const, t);
      else widest = Widest(widest, t);
    }
    DType out0 = n.num_outputs() > 0 ? g.type(n.output(0)).dtype : DType::kUndefined;
    if (!any_float) return Decision{out0, Reason::kNotFloat};
    if (widest == DType::kUndefined) widest = widest_const;
    const ir::OpSchema& schema = n.schema();
    if (schema.precision == PrecisionClass::kNone) return Decision{widest, Reason::kNotFloat};

    // A scatter that adds or multiplies accumulates like ReduceSum: float32
    // (ONNX Runtime's CPU provider has no fp16 ScatterElements with add either).
    PrecisionClass cls = schema.precision;
    if (n.op() == ir::OpKind::kScatterElements || n.op() == ir::OpKind::kScatterND) {
      const std::string reduction = n.attrs().Str("reduction", "none");
      if (reduction == "add" || reduction == "mul") cls = PrecisionClass::kDeny;
    }
    Decision d = LevelDecision(cls, widest);
    if (p_.level == Level::kO2 && n.op() == ir::OpKind::kBatchNormalization &&
        internal::KeepsBnParamsFp32(p_, n.op(), 1, g.info().opset, cap_))
      d = {p_.low, Reason::kLevelAll};
    if (p_.level == Level::kO2 && (n.op() == ir::OpKind::kErf || n.op() == ir::OpKind::kGelu ||
                                   (n.op() == ir::OpKind::kLayerNormalization && g.info().opset >= 17)))
      d = {p_.low, Reason::kLevelAll};
    if (rounding_only_.count(n.id())) d = {DType::kFloat32, Reason::kRoundingOnly};
    if (auto m = moved_low_.find(n.id()); m != moved_low_.end()) d = {p_.low, m->second};
    std::string op(schema.onnx_type);
    if (p_.fp32_ops.count(op)) d = {DType::kFloat32, Reason::kCustomDeny};
    if (p_.low_ops.count(op)) d = {p_.low, Reason::kCustomAllow};
    if (auto o = c_.OverrideFor(n.name())) d = {*o, Reason::kNodeOverride};
    for (size_t s = 0; s < n.num_inputs(); ++s)
      if (internal::RoleOf(n.op(), s) == SlotRole::kTied && n.has_input(s))
        if (auto pin = c_.PinFor(n.name(), s)) d = {*pin, Reason::kNodeOverride};
    if (ir::IsLowPrecision(d.dtype) && !internal::SupportsLow(n.op(), d.dtype, g.info().opset, cap_))
      d = {DType::kFloat32, Reason::kUnsupportedLow};
    return d;
  }

  Decision LevelDecision(PrecisionClass cls, DType widest) const {
    switch (p_.level) {
      case Level::kO0:
        if (cls == PrecisionClass::kFollow) return {widest, Reason::kFollow};
        return {DType::kFloat32, Reason::kLevelFp32};
      case Level::kO1:
        if (cls == PrecisionClass::kAllow) return {p_.low, Reason::kLevelAllow};
        if (cls == PrecisionClass::kDeny) return {DType::kFloat32, Reason::kLevelDeny};
        return {widest, Reason::kFollow};
      case Level::kO2:
        if (cls == PrecisionClass::kDeny) return {DType::kFloat32, Reason::kLevelDeny};
        return {p_.low, Reason::kLevelAll};
      case Level::kO3: return {p_.low, Reason::kLevelAll};
    }
    return {DType::kFloat32, Reason::kLevelFp32};
  }

  const Policy& p_;
  const internal::CompiledPolicy& c_;
  const Capability& cap_;
  std::unordered_map<ir::NodeId, Decision> decisions_;
  std::unordered_map<Value, DType, ir::ValueHash> planned_;
  std::unordered_set<ir::NodeId> rounding_only_;  // rule 6, filled after the first plan
  std::unordered_map<ir::NodeId, Reason> moved_low_;  // rules 7 and 8, filled after the first plan
};

}  // namespace

bool Capability::OnnxRuntimeComputesFp32Inside(ir::OpKind op) {
  switch (op) {
    case ir::OpKind::kReduceMean:
    case ir::OpKind::kReduceSum:
    case ir::OpKind::kReduceL2:
    case ir::OpKind::kSoftmax:
    case ir::OpKind::kLogSoftmax: return true;
    default: return false;
  }
}

bool Capability::TrainingComputesFp32Inside(ir::OpKind op) {
  return op == ir::OpKind::kReduceMean || op == ir::OpKind::kReduceSum || op == ir::OpKind::kBatchNormalization;
}

const char* SlotRuleName(SlotRule rule) {
  switch (rule) {
    case SlotRule::kKeep: return "keep";
    case SlotRule::kCompute: return "compute";
    case SlotRule::kOriginal: return "original";
    case SlotRule::kPinned: return "pinned";
  }
  return "?";
}

const NodePlan* PrecisionPlan::Find(ir::NodeId id) const {
  auto it = nodes.find(id);
  return it == nodes.end() ? nullptr : &it->second;
}

StatusOr<PrecisionPlan> PlanPrecision(const ir::Graph& graph, const Policy& policy, const Capability& capability) {
  AMP_ASSIGN_OR_RETURN(internal::CompiledPolicy compiled, internal::CompiledPolicy::Compile(policy));
  return Assigner(policy, compiled, capability).Run(graph);
}

}  // namespace amptrain::amp
