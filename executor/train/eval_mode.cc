#include "executor/train/eval_mode.h"

#include <cmath>
#include <optional>

#include <spdlog/spdlog.h>

#include "ir/infer/infer_util.h"
#include "ir/pass.h"

namespace amptrain::executor::train {

using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::Value;

namespace {

// The probability that `cmp` (Less, Greater, LessOrEqual, GreaterOrEqual)
// is true when one operand is uniform random numbers (RandomUniformLike or
// RandomUniform, [low, high)) and the other a constant scalar; nullopt for
// any other comparison. Its random producer is returned in `random`.
std::optional<double> MaskProbability(const Graph& g, const Node& cmp, const Node** random) {
  for (size_t r = 0; r < 2; ++r) {
    const Node* u = g.producer(cmp.input(r));
    if (u->op() != OpKind::kRandomUniformLike && u->op() != OpKind::kRandomUniform) continue;
    const ir::Tensor* c = g.ConstantValue(cmp.input(1 - r));
    if (!c || c->num_elements() != 1) return std::nullopt;
    const double low = u->attrs().Float("low", 0.0f), high = u->attrs().Float("high", 1.0f);
    if (!(high > low)) return std::nullopt;
    // P(u < c) (the same as P(u <= c) for a continuous u).
    const double below = std::clamp((c->GetAsDouble(0) - low) / (high - low), 0.0, 1.0);
    const bool u_first = r == 0;
    const bool less = cmp.op() == OpKind::kLess || cmp.op() == OpKind::kLessOrEqual;
    *random = u;
    return less == u_first ? below : 1.0 - below;
  }
  return std::nullopt;
}

// The reader of `v` when it has exactly one and `v` is no graph output.
Node* SoleReader(Graph& g, Value v) {
  if (g.is_graph_output(v) || g.uses(v).size() != 1) return nullptr;
  return g.node(g.uses(v)[0].node);
}

// `mask` (the float mask, whose expectation is p) as the exporters use it:
// Div(mask, p) (or Mul(mask, 1/p) where p/p rounds to 1), then Mul with x of
// the result's type. That Mul is then x: its readers read x, and true is
// returned (the rest becomes dead); false leaves the graph unchanged.
bool BypassScaledMask(Graph& g, Value mask, double p) {
  Node* scale = SoleReader(g, mask);
  if (!scale || scale->input(0) != mask || scale->num_inputs() != 2) return false;
  const ir::Tensor* k = g.ConstantValue(scale->input(1));
  if (!k || k->num_elements() != 1) return false;
  const float pf = static_cast<float>(p), kf = static_cast<float>(k->GetAsDouble(0));
  const bool unit = scale->op() == OpKind::kDiv ? pf == kf : scale->op() == OpKind::kMul && pf * kf == 1.0f;
  if (!unit) return false;
  Node* mul = SoleReader(g, scale->output(0));
  if (!mul || mul->op() != OpKind::kMul) return false;
  const Value x = mul->input(mul->input(0) == scale->output(0) ? 1 : 0);
  // The same type, dims as known (symbolic ones by name): the product broadcast nothing into x.
  const ir::TensorType &xt = g.type(x), &yt = g.type(mul->output(0));
  if (x == scale->output(0) || g.is_graph_output(mul->output(0)) || !xt.has_shape || xt.ToString() != yt.ToString())
    return false;
  g.ReplaceAllUsesWith(mul->output(0), x);
  return true;
}

// Inference mode for the random masks that a training export computes with
// ops: torchvision's StochasticDepth (and any dropout written by hand) is,
// in both exporters, `x * Cast(Less(RandomUniformLike(T), p)) / p`. Each
// float Cast (or CastLike) of such a comparison becomes its expectation,
// the probability p of true, of the comparison's shape: x * p / p = x, what
// the module computes in eval mode. Where the mask is scaled by 1/p and
// multiplied into x (StochasticDepth, timm's DropPath, dynamo's dropout), the
// product's readers read x itself and the chain goes. Random nodes left in
// the graph are named in a warning: their outputs vary from run to run.
Status ExpectedRandomMasks(Graph& g) {
  std::vector<Node*> comparisons;
  for (Node* n : g.nodes())
    if (n->op() == OpKind::kLess || n->op() == OpKind::kGreater || n->op() == OpKind::kLessOrEqual ||
        n->op() == OpKind::kGreaterOrEqual)
      comparisons.push_back(n);
  int replaced = 0;
  for (Node* cmp : comparisons) {
    const Node* random = nullptr;
    const std::optional<double> p = MaskProbability(g, *cmp, &random);
    if (!p) continue;
    std::vector<Node*> casts;
    for (const ir::Use& u : g.uses(cmp->output(0))) {
      Node* reader = g.node(u.node);
      if ((reader->op() == OpKind::kCast || reader->op() == OpKind::kCastLike) && u.slot == 0 &&
          ir::IsFloat(g.type(reader->output(0)).dtype))
        casts.push_back(reader);
    }
    for (Node* cast : casts) {
      if (BypassScaledMask(g, cast->output(0), *p)) {
        ++replaced;
        continue;
      }
      const ir::DType dtype = g.type(cast->output(0)).dtype;
      AMP_ASSIGN_OR_RETURN(ir::Tensor value, ir::Tensor::Zeros(dtype, {}));
      ir::SetElementFromDouble(value, 0, *p);
      const std::string base = cast->name() + "/expectation";
      Node* constant = g.AddNode(OpKind::kConstant, {}, 1, g.UniqueName(base));
      constant->attrs().Set("value", std::move(value));
      AMP_RETURN_IF_ERROR(g.InferNode(constant));
      // The mask's shape: the RandomUniformLike's input's, or RandomUniform's attribute.
      Value shape;
      if (random->op() == OpKind::kRandomUniformLike) {
        Node* of = g.AddNode(OpKind::kShape, {random->input(0)}, 1, g.UniqueName(base + "/Shape"));
        AMP_RETURN_IF_ERROR(g.InferNode(of));
        shape = of->output(0);
      } else {
        AMP_ASSIGN_OR_RETURN(std::vector<int64_t> dims, random->attrs().GetInts("shape"));
        Node* dims_node = g.AddNode(OpKind::kConstant, {}, 1, g.UniqueName(base + "/shape"));
        dims_node->attrs().Set("value", ir::Tensor::Int64s(dims, {static_cast<int64_t>(dims.size())}));
        AMP_RETURN_IF_ERROR(g.InferNode(dims_node));
        shape = dims_node->output(0);
      }
      Node* expand = g.AddNode(OpKind::kExpand, {constant->output(0), shape}, 1, g.UniqueName(base + "/Expand"));
      AMP_RETURN_IF_ERROR(g.InferNode(expand));
      const std::string name = g.name(cast->output(0));
      g.ReplaceAllUsesWith(cast->output(0), expand->output(0));
      AMP_RETURN_IF_ERROR(g.RemoveNode(cast));
      AMP_RETURN_IF_ERROR(g.RenameValue(expand->output(0), name));
      ++replaced;
    }
  }
  // The masks' chains go; initializers stay (the eval graph turns its state
  // names into inputs, and a float scalar that scaled a mask is one).
  if (replaced > 0) g.RemoveDeadNodes(/*keep_initializers=*/true);
  if (replaced > 0) spdlog::debug("inference mode: {} random masks replaced by their expectation", replaced);
  for (const Node* n : g.nodes())
    if (ir::Schema(n->op()).family == "random")
      spdlog::warn("inference mode: {} still draws random numbers (not a dropout mask amptrain recognizes): "
                   "its outputs vary from run to run",
                   n->Describe());
  return Status::Ok();
}

}  // namespace

// Inference mode: BatchNormalization with training_mode 0 and a single
// output; random masks replaced by their expectation (ExpectedRandomMasks).
Status ToEvalMode(Graph& g) {
  AMP_RETURN_IF_ERROR(ExpectedRandomMasks(g));
  for (Node* n : g.nodes()) {
    if (n->op() != OpKind::kBatchNormalization) continue;
    for (size_t k = 1; k < n->num_outputs(); ++k)
      if (!n->uses(k).empty() || g.is_graph_output(n->output(k)))
        return FailedPrecondition(n->Describe(), ": its running-statistics output '", g.name(n->output(k)),
                                  "' is used, so it cannot run in inference mode for evaluation");
    Node* bn = n;
    if (n->num_outputs() > 1) {
      bn = g.AddNode(n->op(), n->inputs(), 1, n->name());
      bn->attrs() = n->attrs();
      std::string name = g.name(n->output(0));
      g.ReplaceAllUsesWith(n->output(0), bn->output(0));
      AMP_RETURN_IF_ERROR(g.RemoveNode(n));
      AMP_RETURN_IF_ERROR(g.RenameValue(bn->output(0), name));
    }
    bn->attrs().Set("training_mode", int64_t{0});
    AMP_RETURN_IF_ERROR(g.InferNode(bn));
  }
  return Status::Ok();
}

Status ToInferenceMode(Graph& g) {
  AMP_RETURN_IF_ERROR(ToEvalMode(g));
  for (Node* n : g.nodes()) {
    if (n->op() != OpKind::kDropout) continue;
    if (n->num_outputs() > 1 && (!n->uses(1).empty() || g.is_graph_output(n->output(1))))
      return FailedPrecondition(n->Describe(), ": its mask output is used, so it cannot be removed for inference");
    Value y = n->output(0), x = n->input(0);
    if (g.is_graph_output(y)) continue;  // keeps the output's name; an inference session makes it the identity
    g.ReplaceAllUsesWith(y, x);
    AMP_RETURN_IF_ERROR(g.RemoveNode(n));
  }
  g.RemoveDeadNodes();
  return Status::Ok();
}

}  // namespace amptrain::executor::train
