// FuseGelu and FuseSilu (executor/optimize.h): the exporters' GELU and SiLU
// decompositions become one Gelu or Silu node.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "executor/optimize.h"

namespace amptrain::executor {

using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::Value;

namespace {

constexpr double kSqrt2 = 1.4142135623730951, kSqrtHalf = 0.7071067811865476;
constexpr double kSqrtTwoOverPi = 0.7978845608028654, kCubic = 0.044715;

class GeluMatcher {
 public:
  GeluMatcher(Graph& g, const std::function<bool(const std::string&)>& constant_initializer)
      : g_(g), constant_initializer_(constant_initializer) {}

  // The pattern around `anchor` (an Erf or a Tanh) as {x, its nodes, the
  // value the Gelu replaces}; nullopt when it is not one.
  struct Match {
    Value x, y;
    std::vector<Node*> nodes;
    const char* approximate;
  };
  std::optional<Match> At(Node* anchor) {
    nodes_.clear();
    Value x;
    const char* approximate = anchor->op() == OpKind::kErf ? "none" : "tanh";
    if (anchor->op() == OpKind::kErf) {
      // Div(x, sqrt 2) or Mul(x, 1/sqrt 2) -> Erf
      Node* scale = Inner(anchor->input(0));
      if (!scale) return std::nullopt;
      if (scale->op() == OpKind::kDiv && Is(scale->input(1), kSqrt2)) x = scale->input(0);
      else if (scale->op() == OpKind::kMul) x = OtherThan(scale, kSqrtHalf);
      if (!x.valid()) return std::nullopt;
    } else {
      // Mul(Add(x, Mul(Pow(x, 3), 0.044715)), sqrt(2/pi)) -> Tanh
      Node* scale = Inner(anchor->input(0));
      if (!scale || scale->op() != OpKind::kMul) return std::nullopt;
      Node* sum = Inner(OtherThan(scale, kSqrtTwoOverPi));
      if (!sum || sum->op() != OpKind::kAdd) return std::nullopt;
      for (size_t i = 0; i < 2 && !x.valid(); ++i) {  // x + term, either order
        const size_t mark = nodes_.size();
        Node* term = Inner(sum->input(1 - i));
        Node* cube = term && term->op() == OpKind::kMul ? Inner(OtherThan(term, kCubic)) : nullptr;
        if (cube && cube->op() == OpKind::kPow && cube->input(0) == sum->input(i) && Is(cube->input(1), 3.0))
          x = sum->input(i);
        else nodes_.resize(mark);
      }
      if (!x.valid()) return std::nullopt;
    }
    nodes_.push_back(anchor);
    // 1 + f, then the product of x, 0.5 and 1 + f in any of the exporters' groupings.
    Node* plus = OnlyUser(anchor->output(0));
    if (!plus || plus->op() != OpKind::kAdd || !Is(plus->input(plus->input(0) == anchor->output(0) ? 1 : 0), 1.0))
      return std::nullopt;
    nodes_.push_back(plus);
    Node* m1 = OnlyUser(plus->output(0));
    if (!m1 || m1->op() != OpKind::kMul) return std::nullopt;
    nodes_.push_back(m1);
    const Value q = m1->input(m1->input(0) == plus->output(0) ? 1 : 0);
    Value y;
    if (q == x || Is(q, 0.5)) {  // (x * p) * 0.5, or (0.5 * p) * x
      Node* m2 = OnlyUser(m1->output(0));
      if (!m2 || m2->op() != OpKind::kMul) return std::nullopt;
      const Value r = m2->input(m2->input(0) == m1->output(0) ? 1 : 0);
      if (q == x ? !Is(r, 0.5) : r != x) return std::nullopt;
      nodes_.push_back(m2);
      y = m2->output(0);
    } else {  // (x * 0.5) * p
      Node* half = Inner(q);
      if (!half || half->op() != OpKind::kMul || OtherThan(half, 0.5) != x) return std::nullopt;
      y = m1->output(0);
    }
    if (g_.is_graph_output(y) || !ir::IsFloat(g_.type(x).dtype) || g_.type(x).dtype != g_.type(y).dtype)
      return std::nullopt;
    return Match{x, y, nodes_, approximate};
  }

 private:
  // The producer of `v` when it is read once, by the pattern (recorded).
  Node* Inner(Value v) {
    if (!v.valid() || g_.uses(v).size() != 1 || g_.is_graph_output(v)) return nullptr;
    Node* n = g_.producer(v);
    if (!n || n->op() == OpKind::kInitializer || n->op() == OpKind::kConstant || n->op() == OpKind::kInput)
      return nullptr;
    nodes_.push_back(n);
    return n;
  }
  Node* OnlyUser(Value v) {
    if (g_.uses(v).size() != 1 || g_.is_graph_output(v)) return nullptr;
    return g_.node(g_.uses(v)[0].node);
  }
  // Whether `v` is a one-element constant equal to `want` (to fp32 rounding),
  // from a Constant node or an initializer taken for a constant.
  bool Is(Value v, double want) const {
    if (!v.valid()) return false;
    const Node* p = g_.producer(v);
    if (!p || (p->op() != OpKind::kConstant &&
               !(p->op() == OpKind::kInitializer && constant_initializer_(g_.name(v)))))
      return false;
    const ir::Tensor* t = g_.ConstantValue(v);
    if (!t || t->num_elements() != 1 || !(ir::IsFloat(t->dtype()) || ir::IsInteger(t->dtype()))) return false;
    return std::abs(t->GetAsDouble(0) - want) <= 1e-6 * std::abs(want);
  }
  // The operand of binary `n` that is not the constant `c`, or none.
  Value OtherThan(const Node* n, double c) const {
    if (n->num_inputs() != 2) return Value{};
    if (Is(n->input(1), c)) return n->input(0);
    if (Is(n->input(0), c)) return n->input(1);
    return Value{};
  }

  Graph& g_;
  const std::function<bool(const std::string&)>& constant_initializer_;
  std::vector<Node*> nodes_;
};

// Removes `nodes`, each once nothing reads its outputs (all of them must get there).
Status RemoveUnread(Graph& g, std::vector<Node*> nodes) {
  while (!nodes.empty()) {
    auto unread = std::find_if(nodes.begin(), nodes.end(), [&](const Node* n) {
      for (size_t o = 0; o < n->num_outputs(); ++o)
        if (!n->uses(o).empty()) return false;
      return true;
    });
    if (unread == nodes.end()) return Internal("fusing an activation: a node of the pattern is still read");
    AMP_RETURN_IF_ERROR(g.RemoveNode(*unread));
    nodes.erase(unread);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<int> FuseGelu(Graph& g, const std::function<bool(const std::string&)>& constant_initializer) {
  AMP_ASSIGN_OR_RETURN(std::vector<Node*> order, g.TopologicalOrder());
  std::vector<Node*> anchors;
  for (Node* n : order)
    if (n->op() == OpKind::kErf || n->op() == OpKind::kTanh) anchors.push_back(n);
  GeluMatcher matcher(g, constant_initializer);
  int fused = 0;
  for (Node* anchor : anchors) {
    std::optional<GeluMatcher::Match> m = matcher.At(anchor);
    if (!m) continue;
    Node* gelu = g.AddNode(OpKind::kGelu, {m->x}, 1, anchor->name());
    gelu->attrs().Set("approximate", std::string(m->approximate));
    AMP_RETURN_IF_ERROR(g.InferNode(gelu));
    const std::string name = g.name(m->y);
    g.ReplaceAllUsesWith(m->y, gelu->output(0));
    // The pattern's nodes, readers before producers, then the Constant nodes only they read.
    std::vector<Node*> constants;
    for (const Node* n : m->nodes)
      for (Value v : n->inputs())
        if (v.valid() && g.producer(v)->op() == OpKind::kConstant) constants.push_back(g.producer(v));
    AMP_RETURN_IF_ERROR(RemoveUnread(g, m->nodes));
    std::vector<Node*> unread;
    for (Node* c : constants)
      if (g.uses(c->output(0)).empty() && std::find(unread.begin(), unread.end(), c) == unread.end()) unread.push_back(c);
    AMP_RETURN_IF_ERROR(RemoveUnread(g, unread));
    AMP_RETURN_IF_ERROR(g.RenameValue(gelu->output(0), name));
    ++fused;
  }
  return fused;
}

StatusOr<bool> FuseGeluPass::Run(Graph& g) {
  AMP_ASSIGN_OR_RETURN(int fused, FuseGelu(g, [](const std::string&) { return true; }));
  return fused > 0;
}

StatusOr<int> FuseSilu(Graph& g, const std::function<bool(const Node&)>& keep) {
  AMP_ASSIGN_OR_RETURN(std::vector<Node*> order, g.TopologicalOrder());
  std::vector<Node*> sigmoids;
  for (Node* n : order)
    if (n->op() == OpKind::kSigmoid) sigmoids.push_back(n);
  int fused = 0;
  for (Node* sigmoid : sigmoids) {
    const Value x = sigmoid->input(0), s = sigmoid->output(0);
    if (g.is_graph_output(s) || g.uses(s).size() != 1) continue;
    Node* mul = g.node(g.uses(s)[0].node);
    if (mul->op() != OpKind::kMul || mul->input(0) == mul->input(1)) continue;  // Mul(s, s) is no SiLU
    const Value y = mul->output(0);
    if (mul->input(mul->input(0) == s ? 1 : 0) != x || g.is_graph_output(y)) continue;
    if (!ir::IsFloat(g.type(x).dtype) || g.type(x).dtype != g.type(y).dtype || g.type(x).dtype != g.type(s).dtype)
      continue;
    if (keep && (keep(*sigmoid) || keep(*mul))) continue;
    Node* silu = g.AddNode(OpKind::kSilu, {x}, 1, mul->name());
    AMP_RETURN_IF_ERROR(g.InferNode(silu));
    const std::string name = g.name(y);
    g.ReplaceAllUsesWith(y, silu->output(0));
    AMP_RETURN_IF_ERROR(RemoveUnread(g, {mul, sigmoid}));
    AMP_RETURN_IF_ERROR(g.RenameValue(silu->output(0), name));
    ++fused;
  }
  return fused;
}

StatusOr<bool> FuseSiluPass::Run(Graph& g) {
  AMP_ASSIGN_OR_RETURN(int fused, FuseSilu(g, nullptr));
  return fused > 0;
}

}  // namespace amptrain::executor
