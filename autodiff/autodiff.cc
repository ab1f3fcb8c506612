#include "autodiff/autodiff.h"

#include <algorithm>

#include "autodiff/grad_context.h"

namespace amptrain::autodiff {

using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::OpKind;
using ir::Value;

namespace {

const RuleTable& Rules() {
  static const RuleTable table = [] {
    RuleTable t{};
    RegisterElementwiseRules(t);
    RegisterNNRules(t);
    RegisterLinalgRules(t);
    RegisterShapeRules(t);
    RegisterSpectralRules(t);
    return t;
  }();
  return table;
}

bool IsScalar(const ir::TensorType& t) { return t.has_shape && t.shape.num_elements() == 1; }

// The one place where gradients that meet at a forward value are summed.
class GradSums {
 public:
  explicit GradSums(Graph& g) : g_(g) {}
  void Add(Value v, Value grad) { parts_[v].push_back(grad); }
  // The total gradient of v (invalid when none reached it): a chain of Add
  // nodes in arrival order, built once.
  StatusOr<Value> Total(Value v) {
    auto it = parts_.find(v);
    if (it == parts_.end() || it->second.empty()) return Value{};
    std::vector<Value>& p = it->second;
    AMP_ASSIGN_OR_RETURN(Value stacked, StackedGathers(v, p));
    if (!stacked.valid()) AMP_RETURN_IF_ERROR(ConcatenateSlices(v, p));
    if (stacked.valid()) {
      p.assign(1, stacked);
      return stacked;
    }
    Value sum = p[0];
    for (size_t k = 1; k < p.size(); ++k) {
      Node* n = g_.AddNode(OpKind::kAdd, {sum, p[k]}, 1, StrCat("grad/", g_.name(v), "/sum_", k));
      AMP_RETURN_IF_ERROR(g_.InferNode(n).WithContext(StrCat("summing the gradients of '", g_.name(v), "'")));
      sum = n->output(0);
    }
    p.assign(1, sum);
    return sum;
  }

 private:
  // Parts that are all GatherGrads of v along one axis at distinct constant
  // scalar indices covering it (a packed projection split by Gather: how
  // TorchScript exports nn.MultiheadAttention's q, k and v) sum to their
  // dYs stacked along the axis in index order: one Concat, instead of a
  // zero-filled copy of v per part and the Adds between them. Invalid when
  // the parts are anything else.
  StatusOr<Value> StackedGathers(Value v, const std::vector<Value>& parts) {
    const ir::TensorType& vt = g_.type(v);
    if (parts.size() < 2 || !vt.has_shape) return Value{};
    const int64_t rank = static_cast<int64_t>(vt.shape.rank());
    int64_t axis = 0;
    std::vector<Value> by_index(parts.size());
    for (size_t k = 0; k < parts.size(); ++k) {
      const Node* n = g_.producer(parts[k]);
      if (n->op() != OpKind::kGatherGrad || !n->uses(0).empty()) return Value{};
      int64_t a = n->attrs().Int("axis", 0);
      if (a < 0) a += rank;
      if (a < 0 || a >= rank || (k > 0 && a != axis)) return Value{};
      axis = a;
      const ir::Dim& dim = vt.shape.dims()[static_cast<size_t>(a)];
      if (!dim.is_static() || dim.value != static_cast<int64_t>(parts.size())) return Value{};
      const ir::Tensor* idx = g_.ConstantValue(n->input(1));
      if (!idx || idx->num_elements() != 1 || !idx->dims().empty()) return Value{};
      int64_t i = static_cast<int64_t>(idx->GetAsDouble(0));
      if (i < 0) i += dim.value;
      if (i < 0 || i >= dim.value || by_index[static_cast<size_t>(i)].valid()) return Value{};
      by_index[static_cast<size_t>(i)] = n->input(0);
    }
    const std::string base = StrCat("grad/", g_.name(v), "/stack");
    auto emit = [&](OpKind op, std::vector<Value> in, ir::Attributes a, const std::string& name) -> StatusOr<Value> {
      Node* n = g_.AddNode(op, std::move(in), 1, name);
      n->attrs() = std::move(a);
      AMP_RETURN_IF_ERROR(g_.InferNode(n).WithContext(StrCat("stacking the gradients of '", g_.name(v), "'")));
      return n->output(0);
    };
    ir::Attributes value;
    value.Set("value", ir::Tensor::Int64s({axis}, {1}));
    AMP_ASSIGN_OR_RETURN(Value axes, emit(OpKind::kConstant, {}, std::move(value), base + "_axes"));
    std::vector<Value> slices;
    for (size_t k = 0; k < by_index.size(); ++k) {
      AMP_ASSIGN_OR_RETURN(Value u, emit(OpKind::kUnsqueeze, {by_index[k], axes}, {}, StrCat(base, "_", k)));
      slices.push_back(u);
    }
    ir::Attributes cat;
    cat.Set("axis", axis);
    return emit(OpKind::kConcat, std::move(slices), std::move(cat), base);
  }

  // The parts that are zero-filling Pads (SliceGrad's) along one axis whose
  // pieces tile that axis of v exactly (a packed projection split by Slice:
  // GPT-2's q, k and v; the two halves of rotary embeddings' rotate_half)
  // sum to the pieces concatenated in offset order: they become one Concat
  // in `parts` (where the first of them was), instead of a zero-filled copy
  // of v each and the Adds between them; the other parts are summed with it
  // as before. The values are the sum's (a -0 piece stays -0 where the Add
  // made it +0). Nothing changes when those Pads do not tile an axis.
  Status ConcatenateSlices(Value v, std::vector<Value>& parts) {
    const ir::TensorType& vt = g_.type(v);
    if (parts.size() < 2 || !vt.has_shape) return Status::Ok();
    const size_t rank = vt.shape.rank();
    int64_t axis = -1;
    std::vector<size_t> taken;                      // positions in parts
    std::vector<std::pair<int64_t, Value>> pieces;  // (offset along the axis, piece)
    for (size_t k = 0; k < parts.size(); ++k) {
      const Node* n = g_.producer(parts[k]);
      if (n->op() != OpKind::kPad || !n->uses(0).empty() || n->num_inputs() != 2 ||
          n->attrs().Str("mode", "constant") != "constant")
        continue;
      const ir::Tensor* pads = g_.ConstantValue(n->input(1));
      if (!pads || pads->num_elements() != static_cast<int64_t>(2 * rank)) continue;
      const std::vector<int64_t> pv = pads->ToInt64Vector();
      int64_t a = -1;
      bool one_axis = true;
      for (size_t d = 0; d < rank; ++d) {
        if (pv[d] < 0 || pv[rank + d] < 0) one_axis = false;
        if (pv[d] == 0 && pv[rank + d] == 0) continue;
        if (a >= 0) one_axis = false;
        a = static_cast<int64_t>(d);
      }
      if (!one_axis || a < 0) continue;
      if (axis >= 0 && a != axis) return Status::Ok();
      axis = a;
      taken.push_back(k);
      pieces.emplace_back(pv[static_cast<size_t>(a)], n->input(0));
    }
    if (pieces.size() < 2) return Status::Ok();
    const ir::Dim& dim = vt.shape.dims()[static_cast<size_t>(axis)];
    if (!dim.is_static()) return Status::Ok();
    std::sort(pieces.begin(), pieces.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    int64_t next = 0;
    std::vector<Value> in;
    for (const auto& [offset, piece] : pieces) {
      const ir::TensorType& t = g_.type(piece);
      if (offset != next || !t.has_shape || t.shape.rank() != rank) return Status::Ok();
      const ir::Dim& size = t.shape.dims()[static_cast<size_t>(axis)];
      if (!size.is_static()) return Status::Ok();
      next += size.value;
      in.push_back(piece);
    }
    if (next != dim.value) return Status::Ok();
    Node* cat = g_.AddNode(OpKind::kConcat, std::move(in), 1, StrCat("grad/", g_.name(v), "/concat"));
    cat->attrs().Set("axis", axis);
    AMP_RETURN_IF_ERROR(g_.InferNode(cat).WithContext(StrCat("concatenating the gradients of '", g_.name(v), "'")));
    std::vector<Value> rest;
    for (size_t k = 0; k < parts.size(); ++k) {
      if (k == taken[0]) rest.push_back(cat->output(0));
      else if (std::find(taken.begin(), taken.end(), k) == taken.end()) rest.push_back(parts[k]);
    }
    parts = std::move(rest);
    return Status::Ok();
  }

  Graph& g_;
  std::map<Value, std::vector<Value>> parts_;
};

// The values to differentiate, initializers first, then inputs, each in graph order.
StatusOr<std::vector<Value>> ResolveWrt(const Graph& g, const BackwardOptions& opts) {
  std::set<Value> chosen;
  if (opts.wrt.empty()) {
    for (Value v : g.initializers())
      if (ir::IsFloat(g.type(v).dtype)) chosen.insert(v);
  }
  for (const std::string& name : opts.wrt) {
    Value v = g.FindValue(name);
    if (!v.valid()) return NotFound("BuildBackward: no value named '", name, "' to differentiate");
    OpKind k = g.producer(v)->op();
    if (k != OpKind::kInitializer && k != OpKind::kInput)
      return InvalidArgument("BuildBackward: '", name, "' is neither an initializer nor a graph input");
    if (!ir::IsFloat(g.type(v).dtype))
      return InvalidArgument("BuildBackward: '", name, "' has dtype ", ir::DTypeName(g.type(v).dtype),
                             ", only float values have gradients");
    chosen.insert(v);
  }
  std::vector<Value> out;
  for (const auto* list : {&g.initializers(), &g.inputs()})
    for (Value v : *list)
      if (chosen.count(v) && !opts.frozen.count(g.name(v))) out.push_back(v);
  return out;
}

// Gives each differentiated value a gradient value of its own, named "<name>_grad".
Value OwnGradValue(Graph& g, Value v, Value grad, NodeId first_backward, std::set<Value>& taken) {
  if (grad.node < first_backward || taken.count(grad) || g.is_graph_output(grad)) {
    Node* n = g.AddNode(OpKind::kIdentity, {grad}, 1, StrCat("grad/", g.name(v), "/Identity"));
    g.mutable_info(n->output(0)).type = g.type(grad);
    grad = n->output(0);
  }
  taken.insert(grad);
  (void)g.RenameValue(grad, g.UniqueName(g.name(v) + "_grad"));
  return grad;
}

// Removes backward nodes whose outputs nothing uses (e.g. a rule's unused helper).
void RemoveUnusedBackward(Graph& g, NodeId first_backward) {
  NodeId last = first_backward;
  for (const Node* n : std::as_const(g).nodes()) last = std::max(last, n->id() + 1);
  for (NodeId id = last; id-- > first_backward;) {
    Node* n = g.node(id);
    if (!n) continue;
    bool used = false;
    for (size_t i = 0; i < n->num_outputs(); ++i) used = used || !n->uses(i).empty() || g.is_graph_output(n->output(i));
    if (!used) (void)g.RemoveNode(n);
  }
}

// Why the initializer `v` (not differentiated) gets no gradient. `upstream`:
// the nodes the loss depends on.
NoGradient WhyNoGradient(const Graph& g, Value v, const BackwardOptions& opts, const std::set<NodeId>& upstream) {
  if (!ir::IsFloat(g.type(v).dtype)) return NoGradient::kNotFloat;
  if (opts.frozen.count(g.name(v))) return NoGradient::kFrozen;
  if (!opts.wrt.empty() && std::find(opts.wrt.begin(), opts.wrt.end(), g.name(v)) == opts.wrt.end())
    return NoGradient::kNotRequested;
  return upstream.count(v.node) ? NoGradient::kNotDifferentiable : NoGradient::kUnused;
}

}  // namespace

const char* NoGradientReason(NoGradient why) {
  switch (why) {
    case NoGradient::kFrozen: return "frozen";
    case NoGradient::kNotRequested: return "not asked for";
    case NoGradient::kNotFloat: return "not a float tensor";
    case NoGradient::kUnused: return "the loss does not depend on it";
    case NoGradient::kNotDifferentiable:
      return "the loss depends on it only through inputs without a gradient, so its gradient is structurally zero";
  }
  return "?";
}

StatusOr<BackwardResult> BuildBackward(Graph& g, Value loss, Value seed, const BackwardOptions& opts) {
  if (!loss.valid() || !g.producer(loss)) return InvalidArgument("BuildBackward: invalid loss value");
  if (!seed.valid() || !g.producer(seed)) return InvalidArgument("BuildBackward: invalid seed value");
  const ir::TensorType& lt = g.type(loss);
  if (!IsScalar(lt) || !ir::IsFloat(lt.dtype))
    return InvalidArgument("BuildBackward: loss '", g.name(loss), "' must be a float scalar, got ", lt.ToString());
  const ir::TensorType& st = g.type(seed);
  if (!IsScalar(st) || st.dtype != lt.dtype)
    return InvalidArgument("BuildBackward: seed '", g.name(seed), "' must be a scalar of the loss dtype ",
                           ir::DTypeName(lt.dtype), ", got ", st.ToString());
  AMP_ASSIGN_OR_RETURN(std::vector<Value> wrt, ResolveWrt(g, opts));
  const std::vector<Value> initializers = g.initializers();
  AMP_ASSIGN_OR_RETURN(std::vector<Node*> order, g.TopologicalOrder());

  // Values that depend on a wrt value through differentiable float slots.
  std::set<Value> reach(wrt.begin(), wrt.end());
  for (Node* n : order) {
    bool hit = false;
    for (size_t i = 0; i < n->num_inputs(); ++i)
      hit = hit || (n->has_input(i) && n->schema().is_differentiable(i) && reach.count(n->input(i)));
    for (size_t o = 0; hit && o < n->num_outputs(); ++o)
      if (ir::IsFloat(g.type(n->output(o)).dtype)) reach.insert(n->output(o));
  }
  // Nodes the loss depends on.
  std::set<NodeId> upstream;
  std::vector<NodeId> stack{loss.node};
  while (!stack.empty()) {
    NodeId id = stack.back();
    stack.pop_back();
    if (!upstream.insert(id).second) continue;
    for (Value in : g.node(id)->inputs())
      if (in.valid()) stack.push_back(in.node);
  }

  NodeId first_backward = 0;
  for (const Node* n : std::as_const(g).nodes()) first_backward = std::max(first_backward, n->id() + 1);
  GradSums sums(g);
  if (reach.count(loss)) sums.Add(loss, seed);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* n = *it;
    if (!upstream.count(n->id())) continue;
    std::vector<Value> gouts(n->num_outputs());
    bool any_out = false;
    for (size_t o = 0; o < n->num_outputs(); ++o) {
      AMP_ASSIGN_OR_RETURN(gouts[o], sums.Total(n->output(o)));
      any_out = any_out || gouts[o].valid();
    }
    std::vector<bool> needs(n->num_inputs());
    bool any_in = false;
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      needs[i] = n->has_input(i) && n->schema().is_differentiable(i) && reach.count(n->input(i));
      any_in = any_in || needs[i];
    }
    if (!any_out || !any_in) continue;
    GradFn rule = Rules()[static_cast<size_t>(n->op())];
    if (!rule) return Unimplemented("no gradient rule for ", n->op_name(), " node '", n->name(), "'");
    GradContext ctx(g, *n, gouts, needs);
    AMP_RETURN_IF_ERROR(rule(ctx));
    AMP_RETURN_IF_ERROR(ctx.status());
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      Value grad = ctx.grads()[i];
      if (!needs[i] || !grad.valid()) continue;
      if (g.type(grad).dtype != g.type(n->input(i)).dtype)
        return Internal("gradient of ", n->Describe(), ": input ", i, " has dtype ",
                        ir::DTypeName(g.type(n->input(i)).dtype), " but its gradient ", ir::DTypeName(g.type(grad).dtype));
      sums.Add(n->input(i), grad);
    }
  }

  BackwardResult result;
  std::set<Value> taken;
  for (Value v : wrt) {
    AMP_ASSIGN_OR_RETURN(Value grad, sums.Total(v));
    if (!grad.valid()) {
      if (opts.wrt.empty()) continue;  // automatic choice: only values that reach the loss
      GradContext zeros(g, *g.producer(v), {}, {});
      grad = zeros.ZerosLike(v);
      AMP_RETURN_IF_ERROR(zeros.status());
    }
    grad = OwnGradValue(g, v, grad, first_backward, taken);
    g.AddOutput(grad);
    result.names.push_back(g.name(v));
    result.grads[g.name(v)] = grad;
  }
  for (Value v : initializers)
    if (!result.grads.count(g.name(v))) result.untrained.emplace_back(g.name(v), WhyNoGradient(g, v, opts, upstream));
  RemoveUnusedBackward(g, first_backward);
  return result;
}

}  // namespace amptrain::autodiff
