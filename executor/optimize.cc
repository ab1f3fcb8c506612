#include "executor/optimize.h"

#include <cmath>
#include <unordered_set>

#include "ir/verifier.h"

namespace amptrain::executor {

using ir::DType;
using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::Tensor;
using ir::Value;

namespace {

// The single consumer of `v`, or nullptr when it has several, none, or is a graph output.
Node* OnlyUser(Graph& g, Value v) {
  const auto& uses = g.uses(v);
  if (uses.size() != 1 || g.is_graph_output(v)) return nullptr;
  return g.node(uses[0].node);
}

// Same dtype and a shape that is provably equal: every dim static or a named symbol.
bool SameType(const ir::TensorType& a, const ir::TensorType& b) {
  if (a.dtype != b.dtype || !a.has_shape || !b.has_shape || !(a.shape == b.shape)) return false;
  for (const ir::Dim& d : a.shape.dims())
    if (!d.is_static() && d.symbol.empty()) return false;
  return true;
}

// The float32 constant behind input `i` of `n`, or nullptr.
const Tensor* Float32Constant(const Graph& g, const Node* n, size_t i) {
  if (!n->has_input(i)) return nullptr;
  const Tensor* t = g.ConstantValue(n->input(i));
  return t && t->dtype() == DType::kFloat32 ? t : nullptr;
}

// Folds `bn` into `conv` (preconditions checked by the caller). Returns false
// when the parameters do not fit (shapes), leaving the graph unchanged.
StatusOr<bool> FoldOne(Graph& g, Node* conv, Node* bn) {
  const Tensor* w = Float32Constant(g, conv, 1);
  const Tensor* b = Float32Constant(g, conv, 2);
  const Tensor* p[4];  // scale, B, mean, var
  for (size_t i = 0; i < 4; ++i)
    if (!(p[i] = Float32Constant(g, bn, i + 1))) return false;
  if (!w || (conv->has_input(2) && !b) || w->dims().empty()) return false;
  const int64_t m = w->dims()[0];
  for (const Tensor* t : p)
    if (t->num_elements() != m) return false;
  if (b && b->num_elements() != m) return false;
  AMP_ASSIGN_OR_RETURN(float eps, bn->attrs().GetFloat("epsilon", 1e-5f));

  AMP_ASSIGN_OR_RETURN(Tensor w2, Tensor::Zeros(DType::kFloat32, w->dims()));
  AMP_ASSIGN_OR_RETURN(Tensor b2, Tensor::Zeros(DType::kFloat32, {m}));
  const int64_t per = w->num_elements() / m;
  for (int64_t c = 0; c < m; ++c) {
    const double s = static_cast<double>(p[0]->data<float>()[c]) /
                     std::sqrt(static_cast<double>(p[3]->data<float>()[c]) + static_cast<double>(eps));
    for (int64_t k = 0; k < per; ++k)
      w2.data<float>()[c * per + k] = static_cast<float>(static_cast<double>(w->data<float>()[c * per + k]) * s);
    const double bias = b ? static_cast<double>(b->data<float>()[c]) : 0.0;
    b2.data<float>()[c] = static_cast<float>((bias - p[2]->data<float>()[c]) * s + p[1]->data<float>()[c]);
  }
  const std::string base = g.name(conv->input(1));
  Value wv = g.AddInitializer(g.UniqueName(base + "/bn_folded"), std::move(w2));
  Value bv = g.AddInitializer(g.UniqueName(base + "/bn_folded_bias"), std::move(b2));
  g.SetInput(conv, 1, wv);
  g.SetInput(conv, 2, bv);
  g.ReplaceAllUsesWith(bn->output(0), conv->output(0));
  AMP_RETURN_IF_ERROR(g.RemoveNode(bn));
  return true;
}

}  // namespace

StatusOr<bool> FoldBatchNormPass::Run(Graph& g) {
  bool changed = false;
  AMP_ASSIGN_OR_RETURN(std::vector<Node*> order, g.TopologicalOrder());
  for (Node* bn : order) {
    if (bn->op() != OpKind::kBatchNormalization || bn->num_outputs() != 1 || !bn->has_input(0)) continue;
    AMP_ASSIGN_OR_RETURN(int64_t training_mode, bn->attrs().GetInt("training_mode", 0));
    if (training_mode != 0) continue;
    Node* conv = g.producer(bn->input(0));
    if (conv->op() != OpKind::kConv || OnlyUser(g, conv->output(0)) != bn) continue;
    AMP_ASSIGN_OR_RETURN(bool folded, FoldOne(g, conv, bn));
    changed |= folded;
  }
  if (changed) g.RemoveDeadNodes();
  return changed;
}

StatusOr<bool> FuseConvPass::Run(Graph& g) {
  bool changed = false;
  AMP_ASSIGN_OR_RETURN(std::vector<Node*> order, g.TopologicalOrder());
  std::unordered_set<const Node*> removed;  // fused Adds and Relus, later in `order`: freed, never read
  for (Node* conv : order) {
    if (removed.count(conv) || conv->op() != OpKind::kConv) continue;
    std::vector<Node*> fused = {conv};  // the chain, first to last
    Value residual;
    Node* next = OnlyUser(g, conv->output(0));
    if (next && next->op() == OpKind::kAdd) {
      Value other = next->input(next->input(0) == conv->output(0) ? 1 : 0);
      if (other != conv->output(0) && SameType(g.type(other), g.type(conv->output(0)))) {
        residual = other;
        fused.push_back(next);
        next = OnlyUser(g, next->output(0));
      }
    }
    const bool relu = next && next->op() == OpKind::kRelu;
    if (relu) fused.push_back(next);
    if (fused.size() == 1) continue;

    std::vector<Value> inputs = {conv->input(0), conv->input(1), conv->input(2)};
    if (residual.valid()) inputs.push_back(residual);
    while (!inputs.back().valid()) inputs.pop_back();
    Node* f = g.AddNode(OpKind::kFusedConv, inputs, 1, conv->name());
    f->attrs() = conv->attrs();
    f->attrs().Set("activation", std::string(relu ? "Relu" : ""));
    f->mutable_output_info(0).type = g.type(fused.back()->output(0));
    AMP_RETURN_IF_ERROR(g.InferNode(f));
    g.ReplaceAllUsesWith(fused.back()->output(0), f->output(0));
    for (auto it = fused.rbegin(); it != fused.rend(); ++it) {
      removed.insert(*it);
      AMP_RETURN_IF_ERROR(g.RemoveNode(*it));
    }
    changed = true;
  }
  return changed;
}

StatusOr<bool> OptimizeForInference(Graph& graph) {
  ir::PassManager passes;
  passes.set_verify(true);
  passes.Add(std::make_unique<FuseGeluPass>());
  passes.Add(std::make_unique<FuseSiluPass>());
  passes.Add(std::make_unique<FoldBatchNormPass>());
  passes.Add(std::make_unique<FuseConvPass>());
  return passes.Run(graph);
}

}  // namespace amptrain::executor
