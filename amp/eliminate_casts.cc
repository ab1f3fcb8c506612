// The cast-elimination pass: removes casts without changing any value.
//
// Rules, applied until nothing changes:
//   dead       a Cast nobody reads is removed.
//   identity   Cast(x: T -> T) is replaced by x.
//   chain      Cast(Cast(x: A -> B) -> C) reads x directly when A -> B is
//              exact (fp16/bf16 -> fp32, ints -> wider, ...), or when A is an
//              integer, B fp32/fp64 and C fp16 (both paths round the same).
//              So fp16 -> fp32 -> fp16 folds to nothing, while fp32 -> fp16
//              -> fp32 (a rounding the policy decided) is kept.
//   merge      two Casts of one value to one dtype become one.
//   sink       M(Cast(x: A -> B)) -> Cast(-> A), M a data-movement op
//              (Reshape, Flatten, Transpose, Slice, Concat, Squeeze,
//              Unsqueeze) and A -> B exact, becomes M(x) in A: the casts
//              around M disappear (also through a chain of such ops).
//   hoist      M(x) whose readers are all Cast(-> C), where x already has a
//              Cast(x -> C), becomes M(Cast(x -> C)): one cast fewer.
// Movement ops commute with casts exactly, so both rewrites keep values.
// A Cast whose output is a graph output keeps its name and is never folded
// away (it may still be retargeted by "chain").
#include <map>

#include "amp/amp_internal.h"
#include "amp/passes.h"

namespace amptrain::amp {
namespace {

using ir::DType;
using ir::Node;
using ir::OpKind;
using ir::Value;

bool Exact(DType a, DType b) {
  auto in = [](DType t, std::initializer_list<DType> set) {
    for (DType s : set) if (s == t) return true;
    return false;
  };
  if (a == b) return true;
  switch (b) {
    case DType::kFloat64:
      return in(a, {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt32, DType::kInt8, DType::kUInt8,
                    DType::kBool});
    case DType::kFloat32: return in(a, {DType::kFloat16, DType::kBFloat16, DType::kInt8, DType::kUInt8, DType::kBool});
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kInt32: return in(a, {DType::kInt8, DType::kUInt8, DType::kBool});
    case DType::kInt64: return in(a, {DType::kInt32, DType::kInt8, DType::kUInt8, DType::kBool});
    default: return false;
  }
}

bool FoldableChain(DType a, DType b, DType c) {
  if (Exact(a, b)) return true;
  return (ir::IsInteger(a) || a == DType::kBool) && (b == DType::kFloat32 || b == DType::kFloat64) &&
         c == DType::kFloat16;
}

bool IsMovement(OpKind op) {
  switch (op) {
    case OpKind::kReshape: case OpKind::kFlatten: case OpKind::kTranspose: case OpKind::kSlice:
    case OpKind::kConcat: case OpKind::kSqueeze: case OpKind::kUnsqueeze: return true;
    default: return false;
  }
}

std::vector<size_t> DataSlots(const Node& m) {
  if (m.op() != OpKind::kConcat) return {0};
  std::vector<size_t> s(m.num_inputs());
  for (size_t i = 0; i < s.size(); ++i) s[i] = i;
  return s;
}

class Eliminator {
 public:
  explicit Eliminator(ir::Graph& g) : g_(g) {}

  StatusOr<bool> Run() {
    bool any = false;
    for (int round = 0; round < 1000; ++round) {
      AMP_ASSIGN_OR_RETURN(bool changed, Round());
      if (!changed) return any;
      any = true;
    }
    return Internal("AMP cast elimination did not converge");
  }

 private:
  Node* CastProducer(Value v) {
    Node* p = g_.producer(v);
    return p && p->op() == OpKind::kCast ? p : nullptr;
  }

  StatusOr<bool> Round() {
    bool changed = false;
    std::map<std::pair<Value, DType>, Node*> first_cast;
    for (Node* n : g_.nodes()) {
      if (n->op() != OpKind::kCast) continue;
      Value out = n->output(0);
      bool is_output = g_.is_graph_output(out);
      if (g_.uses(out).empty() && !is_output) {
        AMP_RETURN_IF_ERROR(g_.RemoveNode(n));
        changed = true;
        continue;
      }
      AMP_ASSIGN_OR_RETURN(DType c, internal::CastTarget(*n));
      Value x = n->input(0);
      if (Node* p = CastProducer(x)) {
        AMP_ASSIGN_OR_RETURN(DType b, internal::CastTarget(*p));
        if (FoldableChain(g_.type(p->input(0)).dtype, b, c)) {
          g_.SetInput(n, 0, p->input(0));
          x = p->input(0);
          changed = true;
        }
      }
      if (g_.type(x).dtype == c && !is_output) {
        g_.ReplaceAllUsesWith(out, x);
        AMP_RETURN_IF_ERROR(g_.RemoveNode(n));
        changed = true;
        continue;
      }
      auto [it, inserted] = first_cast.emplace(std::make_pair(x, c), n);
      if (!inserted) {
        Node* keep = it->second;
        Node* drop = n;
        if (is_output) std::swap(keep, drop);
        if (g_.is_graph_output(drop->output(0))) continue;
        g_.ReplaceAllUsesWith(drop->output(0), keep->output(0));
        it->second = keep;
        AMP_RETURN_IF_ERROR(g_.RemoveNode(drop));
        changed = true;
      }
    }
    for (Node* m : g_.nodes()) {
      if (!IsMovement(m->op()) || g_.is_graph_output(m->output(0))) continue;
      AMP_ASSIGN_OR_RETURN(bool sunk, Sink(m));
      if (!sunk) {
        AMP_ASSIGN_OR_RETURN(sunk, Hoist(m));
      }
      changed = changed || sunk;
    }
    return changed;
  }

  // Whether every reader of `v` is a Cast to `a`, or a single-input movement
  // op (not a graph output) whose readers are so in turn.
  StatusOr<bool> EndsInCastsTo(ir::Value v, DType a) {
    const auto& uses = g_.uses(v);
    if (uses.empty()) return false;
    for (const ir::Use& u : uses) {
      Node* q = g_.node(u.node);
      if (q->op() == OpKind::kCast) {
        AMP_ASSIGN_OR_RETURN(DType c, internal::CastTarget(*q));
        if (c != a) return false;
      } else if (IsMovement(q->op()) && q->op() != OpKind::kConcat && u.slot == 0 &&
                 !g_.is_graph_output(q->output(0))) {
        AMP_ASSIGN_OR_RETURN(bool ok, EndsInCastsTo(q->output(0), a));
        if (!ok) return false;
      } else {
        return false;
      }
    }
    return true;
  }

  // Re-derives the dtypes of `m` and of the movement ops below it.
  Status RefreshChain(Node* m) {
    AMP_RETURN_IF_ERROR(internal::RefreshOutputDTypes(g_, m));
    for (const ir::Use& u : g_.uses(m->output(0))) {
      Node* q = g_.node(u.node);
      if (IsMovement(q->op())) AMP_RETURN_IF_ERROR(RefreshChain(q));
    }
    return Status::Ok();
  }

  // M(Cast(x: A -> B), ...) whose readers end in Cast(-> A) through movement
  // ops: M and those ops run in A.
  StatusOr<bool> Sink(Node* m) {
    DType a = DType::kUndefined;
    std::vector<Value> sources;
    for (size_t s : DataSlots(*m)) {
      Node* p = CastProducer(m->input(s));
      if (!p) return false;
      AMP_ASSIGN_OR_RETURN(DType b, internal::CastTarget(*p));
      DType src = g_.type(p->input(0)).dtype;
      if (!Exact(src, b) || (a != DType::kUndefined && src != a)) return false;
      a = src;
      sources.push_back(p->input(0));
    }
    AMP_ASSIGN_OR_RETURN(bool ends, EndsInCastsTo(m->output(0), a));
    if (!ends) return false;
    std::vector<size_t> slots = DataSlots(*m);
    for (size_t i = 0; i < slots.size(); ++i) g_.SetInput(m, slots[i], sources[i]);
    AMP_RETURN_IF_ERROR(RefreshChain(m));
    return true;  // the final readers are now identity casts, removed next round
  }

  // M(x) read only by Cast(-> C) while x already has a Cast(x -> C) elsewhere.
  StatusOr<bool> Hoist(Node* m) {
    if (m->op() == OpKind::kConcat) return false;
    Value x = m->input(0);
    const auto& uses = g_.uses(m->output(0));
    if (uses.empty()) return false;
    DType c = DType::kUndefined;
    for (const ir::Use& u : uses) {
      const Node* q = g_.node(u.node);
      if (q->op() != OpKind::kCast) return false;
      AMP_ASSIGN_OR_RETURN(DType t, internal::CastTarget(*q));
      if (c != DType::kUndefined && t != c) return false;
      c = t;
    }
    if (!internal::IsAmpFloat(c) || !internal::IsAmpFloat(g_.type(x).dtype)) return false;
    for (const ir::Use& u : g_.uses(x)) {
      Node* other = g_.node(u.node);
      if (other == m || other->op() != OpKind::kCast) continue;
      AMP_ASSIGN_OR_RETURN(DType t, internal::CastTarget(*other));
      if (t != c) continue;
      g_.SetInput(m, 0, other->output(0));
      AMP_RETURN_IF_ERROR(internal::RefreshOutputDTypes(g_, m));
      return true;  // the readers are now identity casts, removed next round
    }
    return false;
  }

  ir::Graph& g_;
};

}  // namespace

std::unique_ptr<ir::Pass> MakeEliminateCastsPass() {
  return std::make_unique<ir::FunctionPass>("amp-eliminate-casts",
                                            [](ir::Graph& g) -> StatusOr<bool> { return Eliminator(g).Run(); });
}

}  // namespace amptrain::amp
