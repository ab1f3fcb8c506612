#include "autodiff/training_graph.h"

#include "ir/rnn.h"

namespace amptrain::autodiff {

using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::Value;

namespace {

// `old` replaced by a copy with `n` outputs; its outputs keep their names and users.
StatusOr<Node*> WithOutputs(Graph& g, Node* old, size_t n) {
  if (old->num_outputs() >= n) return old;
  Node* copy = g.AddNode(old->op(), old->inputs(), n, old->name());
  copy->attrs() = old->attrs();
  std::vector<std::string> names;
  for (size_t i = 0; i < old->num_outputs(); ++i) {
    names.push_back(g.name(old->output(i)));
    g.mutable_info(copy->output(i)).type = g.type(old->output(i));
    g.ReplaceAllUsesWith(old->output(i), copy->output(i));
  }
  AMP_RETURN_IF_ERROR(g.RemoveNode(old).WithContext("while putting the graph in training mode"));
  for (size_t i = 0; i < names.size(); ++i) AMP_RETURN_IF_ERROR(g.RenameValue(copy->output(i), names[i]));
  return copy;
}

Status TrainBatchNorm(Graph& g, Node* bn, TrainingGraphInfo& info) {
  AMP_ASSIGN_OR_RETURN(bn, WithOutputs(g, bn, 3));
  bn->attrs().Set("training_mode", int64_t{1});
  AMP_RETURN_IF_ERROR(g.InferNode(bn));
  for (size_t k = 1; k < 3; ++k) {
    Value stat = bn->input(k + 2), update = bn->output(k);
    // Statistics computed in the graph (PyTorch's track_running_stats=False
    // exports the batch's own mean and variance there) are no state: the
    // batch statistics are used and there is nothing to keep.
    if (g.producer(stat)->op() != OpKind::kInitializer) continue;
    if (!g.is_graph_output(update)) {
      AMP_RETURN_IF_ERROR(g.RenameValue(update, g.UniqueName(g.name(stat) + ".update")));
      g.AddOutput(update);
    }
    info.bn_updates[g.name(stat)] = g.name(update);
  }
  return Status::Ok();
}

Status TrainDropout(Graph& g, Node* d, bool enabled) {
  if (!enabled) {
    if (d->num_outputs() > 1 && (!d->uses(1).empty() || g.is_graph_output(d->output(1))))
      return FailedPrecondition(d->Describe(), ": cannot bypass it, its mask output is used");
    g.ReplaceAllUsesWith(d->output(0), d->input(0));
    return g.RemoveNode(d);
  }
  AMP_ASSIGN_OR_RETURN(d, WithOutputs(g, d, 2));
  AMP_ASSIGN_OR_RETURN(ir::Tensor on, ir::Tensor::Zeros(ir::DType::kBool, {}));
  *on.data<bool>() = true;
  Node* c = g.AddNode(OpKind::kConstant, {}, 1, d->name() + "/training_mode");
  c->attrs().Set("value", std::move(on));
  AMP_RETURN_IF_ERROR(g.InferNode(c));
  g.SetInput(d, 2, c->output(0));
  return g.InferNode(d);
}

// A recurrent layer gets its reserve output (ir/rnn.h), which its gradient
// reads instead of running the forward again.
Status TrainRecurrent(Graph& g, Node* n) {
  StatusOr<ir::RnnConfig> c = ir::ParseRnnConfig(n->op(), n->attrs());
  if (!c.ok()) return n->Annotate(c.status());
  AMP_ASSIGN_OR_RETURN(n, WithOutputs(g, n, c->reserve_output() + 1));
  return g.InferNode(n);
}

}  // namespace

StatusOr<TrainingGraphInfo> ToTrainingMode(Graph& g, const TrainingGraphOptions& opts) {
  TrainingGraphInfo info;
  std::vector<Node*> nodes = g.nodes();
  for (Node* n : nodes) {
    // Each rewrite may replace and free n: read its op once, before.
    const OpKind op = n->op();
    if (op == OpKind::kBatchNormalization) AMP_RETURN_IF_ERROR(TrainBatchNorm(g, n, info));
    else if (op == OpKind::kDropout) AMP_RETURN_IF_ERROR(TrainDropout(g, n, opts.dropout));
    else if (ir::IsRecurrent(op)) AMP_RETURN_IF_ERROR(TrainRecurrent(g, n));
  }
  return info;
}

}  // namespace amptrain::autodiff
