#include "executor/train/train_graph.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "amp/amp_internal.h"
#include "amp/name_pattern.h"
#include "autodiff/autodiff.h"
#include "autodiff/loss.h"
#include "autodiff/training_graph.h"
#include "executor/optimize.h"
#include "executor/train/constant_like.h"
#include "executor/train/eval_mode.h"
#include "ir/infer/infer_util.h"
#include "ir/infer/quantize.h"
#include "ir/onnx_dtype.h"
#include "ir/pass.h"
#include "kernels/kernel.h"

namespace amptrain::executor::train {

using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::Value;

namespace {

autodiff::CrossEntropyOptions CrossEntropy(const TrainGraphOptions& opts) {
  autodiff::CrossEntropyOptions o;
  o.label_smoothing = opts.label_smoothing;
  o.class_axis = opts.class_axis;
  o.label_dims = opts.label_dims;
  o.ignore_index = opts.ignore_index;
  return o;
}

// The output the loss reads: `opts.output` when given, else the model's only
// output, else its only float output of the loss's rank (cross-entropy:
// 2 for logits [batch, classes], 2 + the labels' rank per sample for labels
// [batch, d...]). Several candidates are an error naming them.
StatusOr<Value> LossOutput(const Graph& g, const TrainGraphOptions& opts) {
  if (g.outputs().empty()) return InvalidArgument("the model has no output");
  std::string names;
  for (Value v : g.outputs()) names += StrCat(names.empty() ? "" : ", ", "'", g.name(v), "' ", g.type(v).ToString());
  if (!opts.output.empty()) {
    for (Value v : g.outputs())
      if (g.name(v) == opts.output) return v;
    return InvalidArgument("--output '", opts.output, "' is not an output of the model; its outputs are ", names);
  }
  if (g.outputs().size() == 1) return g.outputs()[0];
  const size_t logits_rank = 2 + (opts.label_dims ? opts.label_dims->size() : 0);
  std::vector<Value> candidates;
  for (Value v : g.outputs()) {
    const ir::TensorType& t = g.type(v);
    if (ir::IsFloat(t.dtype) && (opts.loss != "cross_entropy" || (t.has_shape && t.shape.rank() == logits_rank)))
      candidates.push_back(v);
  }
  if (candidates.size() == 1) return candidates[0];
  return InvalidArgument("the model has ", g.outputs().size(), " outputs (", names, ") and ",
                         candidates.size() == 0 ? "none" : StrCat(candidates.size()), " of them ",
                         opts.loss != "cross_entropy" ? "are float tensors"
                         : logits_rank == 2           ? "look like logits [batch, classes]"
                                                      : StrCat("are float tensors of rank ", logits_rank, " (logits)"),
                         "; name the one to train with --output NAME");
}

// The model's data inputs and the output the loss reads, checked against the loss.
StatusOr<Value> CheckModel(const Graph& g, const TrainGraphOptions& opts) {
  if (g.inputs().empty()) return InvalidArgument("the model has no data input (every input has an initializer)");
  AMP_ASSIGN_OR_RETURN(Value output, LossOutput(g, opts));
  const ir::TensorType& out = g.type(output);
  const std::string& name = g.name(output);
  if (!ir::IsFloat(out.dtype))
    return InvalidArgument("the model's output '", name, "' is ", ir::DTypeName(out.dtype), ", not a float tensor");
  if (opts.loss == "cross_entropy") {
    if (!out.has_shape || out.shape.rank() < 2 || (!opts.label_dims && out.shape.rank() != 2))
      return InvalidArgument("the model's output '", name, "' has shape ", out.ToString(),
                             "; cross-entropy training needs logits [batch, classes]",
                             out.has_shape && out.shape.rank() > 2 ? " (or labels with one class per position)" : "");
    AMP_ASSIGN_OR_RETURN(const int64_t axis, autodiff::ResolveClassAxis(out, name, CrossEntropy(opts)));
    const ir::Dim& k = out.shape.dims()[axis];
    if (opts.num_classes > 0 && k.is_static() && opts.classes_at_least && k.value < opts.num_classes)
      return InvalidArgument("the model's output '", name, "' has ", k.value, " classes ", out.ToString(),
                             " but the labels go up to ", opts.num_classes - 1);
    if (opts.num_classes > 0 && k.is_static() && !opts.classes_at_least && k.value != opts.num_classes)
      return InvalidArgument("the model's output '", name, "' has ", k.value, " classes ", out.ToString(),
                             " but the dataset has ", opts.num_classes, " classes");
    if (!k.is_static()) return InvalidArgument("the model's output '", name, "' has no static class dimension");
  } else if (opts.loss != "mse") {
    return InvalidArgument("unknown loss '", opts.loss, "' (cross_entropy or mse)");
  }
  if (!(opts.label_smoothing >= 0.0f && opts.label_smoothing < 1.0f))
    return InvalidArgument("label smoothing must be in [0, 1), got ", opts.label_smoothing);
  return output;
}

std::vector<std::string> InputNames(const Graph& g) {
  std::vector<std::string> names;
  for (Value v : g.inputs()) names.push_back(g.name(v));
  return names;
}

StatusOr<autodiff::LossHead> AttachLoss(Graph& g, Value logits, const TrainGraphOptions& opts) {
  if (opts.loss == "mse") return autodiff::AttachMeanSquaredError(g, logits);
  return autodiff::AttachCrossEntropy(g, logits, CrossEntropy(opts));
}

int64_t Elements(const Graph& g, Value v) {
  const ir::TensorType& t = g.type(v);
  return t.has_shape && t.shape.is_static() ? t.shape.num_elements() : 0;
}

std::string ElementCount(const std::vector<ParameterReport::Entry>& entries, const char* what) {
  int64_t n = 0;
  for (const ParameterReport::Entry& e : entries) n += e.elements;
  return StrCat(entries.size(), " ", what, " (", n, " elements)");
}

}  // namespace

std::vector<std::string> ParameterReport::Lines() const {
  std::vector<std::string> lines{StrCat("parameters: ", ElementCount(trained, "trained"), ", ",
                                        ElementCount(frozen, "frozen"), ", ",
                                        ElementCount(statistics, "BN running statistics"), ", ", untrained.size(),
                                        " other initializers not trained")};
  // One line per reason, in order of first appearance.
  std::vector<std::pair<std::string, std::string>> by_reason;
  for (const auto* list : {&frozen, &untrained})
    for (const Entry& e : *list) {
      auto it = std::find_if(by_reason.begin(), by_reason.end(), [&](const auto& r) { return r.first == e.reason; });
      if (it == by_reason.end()) by_reason.emplace_back(e.reason, e.name);
      else it->second += ", " + e.name;
    }
  for (const auto& [reason, names] : by_reason) lines.push_back(StrCat("not trained (", reason, "): ", names));
  return lines;
}

ParameterReport ReportParameters(const Graph& g, const autodiff::BackwardResult& backward,
                                 const std::set<std::string>& frozen, const std::set<std::string>& statistics,
                                 const std::map<std::string, std::string>& constant_like) {
  ParameterReport r;
  for (const std::string& name : backward.names) {
    Value v = g.FindValue(name);
    if (g.producer(v)->op() == OpKind::kInitializer) r.trained.push_back({name, Elements(g, v), ""});
  }
  for (const auto& [name, why] : backward.untrained) {
    ParameterReport::Entry e{name, Elements(g, g.FindValue(name)), ""};
    if (statistics.count(name)) {
      r.statistics.push_back(std::move(e));
    } else if (frozen.count(name)) {
      e.reason = "frozen by --freeze";
      r.frozen.push_back(std::move(e));
    } else if (auto it = constant_like.find(name); it != constant_like.end()) {
      e.reason = it->second;
      r.untrained.push_back(std::move(e));
    } else {
      e.reason = why == autodiff::NoGradient::kNotFloat ? "integer or bool initializers are not parameters"
                                                        : autodiff::NoGradientReason(why);
      r.untrained.push_back(std::move(e));
    }
  }
  return r;
}

StatusOr<std::set<std::string>> ResolveFreeze(const Graph& g, const std::vector<std::string>& patterns,
                                              const std::set<std::string>& statistics) {
  std::set<std::string> frozen;
  for (const std::string& p : patterns) {
    const bool is_regex = p.rfind("re:", 0) == 0;
    const std::string text = is_regex ? p.substr(3) : p;
    AMP_ASSIGN_OR_RETURN(amp::internal::NamePattern pattern,
                         amp::internal::NamePattern::Compile(text, is_regex, StrCat("freeze pattern '", p, "'")));
    if (!is_regex) {
      Value v = g.FindValue(text);
      if (!v.valid() || g.producer(v)->op() != OpKind::kInitializer)
        return InvalidArgument("freeze pattern '", p, "': the model has no initializer of that name");
      if (statistics.count(text))
        return InvalidArgument("freeze pattern '", p,
                               "': a BatchNormalization running statistic, updated from batch statistics and "
                               "never trained; freezing applies to parameters");
      if (!ir::IsFloat(g.type(v).dtype))
        return InvalidArgument("freeze pattern '", p, "': an ", ir::DTypeName(g.type(v).dtype),
                               " initializer; only float initializers are parameters");
    }
    size_t matched = 0;
    for (Value v : g.initializers()) {
      const std::string& name = g.name(v);
      if (!ir::IsFloat(g.type(v).dtype) || statistics.count(name) || !pattern.Matches(name)) continue;
      frozen.insert(name);
      ++matched;
    }
    if (matched == 0)
      return InvalidArgument("freeze pattern '", p, "' matches no parameter (float initializer, BN running "
                             "statistics excluded) of the model");
  }
  return frozen;
}

Status InitializerToInput(Graph& g, const std::string& name) {
  Value init = g.FindValue(name);
  if (!init.valid() || g.producer(init)->op() != OpKind::kInitializer)
    return InvalidArgument("'", name, "' is not an initializer of the model");
  ir::TensorType type = g.type(init);
  AMP_RETURN_IF_ERROR(g.RenameValue(init, g.UniqueName(name + ".initializer")));
  Value input = g.AddInput(name, type);
  g.ReplaceAllUsesWith(init, input);
  return g.RemoveNode(g.producer(init));
}

StatusOr<amp::Report> ApplyTrainingPrecision(Graph& g, const amp::Policy& policy, bool for_export) {
  amp::Policy p = policy;
  p.keep_io_types = true;  // the logits stay fp32: the loss and its gradient are fp32
  amp::ConvertOptions co;
  // O1/O2: fp32 masters, cast at their low-precision consumers. O3: weights
  // (BN parameters and statistics included) stored in the low type, no master.
  co.convert_initializers = policy.level == amp::Level::kO3;
  co.low_copies_of_shared = false;  // a copy of a parameter would not train with it
  co.capability = amp::Capability::Training([](ir::OpKind op, ir::DType t) {
    return kernels::Registry::Global().Supports(op, kernels::DeviceKind::kCpu, t);
  });
  co.capability.opset_limits = for_export;
  return amp::Convert(g, p, co);
}

// O1/O2: the gradient of an fp32 master weight comes out of the backward
// low (the weight's Cast to fp16/bf16 has a Cast back as its gradient). The
// gradient output becomes that low value and the Cast back goes: the
// optimizer and the gradient check widen it in registers instead (exact), and
// the fp32 copy is neither written nor read.
//   before: dW':bf16 ─▶ Cast(fp32) ─▶ W_grad (graph output)
//   after:  dW':bf16 (graph output; TrainGraph::grads names it)
Status LowGradients(Graph& g, TrainGraph& t) {
  for (const std::string& param : t.params) {
    const Value grad = g.FindValue(t.grads.at(param));
    Node* cast = grad.valid() ? g.producer(grad) : nullptr;
    if (!cast || cast->op() != OpKind::kCast || !g.uses(grad).empty()) continue;
    const Value low = cast->input(0);
    const ir::DType from = g.type(low).dtype;
    if ((from != ir::DType::kFloat16 && from != ir::DType::kBFloat16) || g.type(grad).dtype != ir::DType::kFloat32 ||
        g.type(g.FindValue(param)).dtype != ir::DType::kFloat32 || g.is_graph_output(low))
      continue;
    const std::vector<Value>& outs = g.outputs();
    const size_t at = static_cast<size_t>(std::find(outs.begin(), outs.end(), grad) - outs.begin());
    if (at == outs.size() || std::count(outs.begin(), outs.end(), grad) != 1) continue;
    g.SetOutput(at, low);
    AMP_RETURN_IF_ERROR(g.RemoveNode(cast));
    t.grads[param] = g.name(low);
  }
  return Status::Ok();
}

// O1-O3: the model's logits are fp16/bf16 and the AMP pass casts them to an
// fp32 graph output (keep_io_types) that the loss reads. The loss reads the
// low logits instead, through its own Cast right before the
// SoftmaxCrossEntropyLoss (after the rows Reshape of per-token logits), and
// the low logits become the output the top-1 count reads (the arg-max of an
// exactly widened value is the same). Cast fusion then lets the direct loss
// read the low logits and its gradient write the low scores' gradient: no
// fp32 copy of the logits or of their gradient (a language model's [tokens,
// vocab] rows: 4 bytes per logit each way). The same loss and gradient bits.
//   before: L:bf16 ─▶ Cast ─▶ logits:f32 (output) ─▶ [Reshape rows] ─▶ SCE
//   after:  L:bf16 (output) ─▶ [Reshape rows] ─▶ Cast ─▶ SCE
Status LowLogits(Graph& g, TrainGraph& t) {
  const Value logits = g.FindValue(t.logits);
  Node* cast = logits.valid() ? g.producer(logits) : nullptr;
  if (!cast || cast->op() != OpKind::kCast || g.type(logits).dtype != ir::DType::kFloat32) return Status::Ok();
  const Value low = cast->input(0);
  if (!ir::IsLowPrecision(g.type(low).dtype) || g.is_graph_output(low)) return Status::Ok();
  const std::vector<ir::Use>& uses = g.uses(logits);
  if (uses.size() != 1 || std::count(g.outputs().begin(), g.outputs().end(), logits) != 1) return Status::Ok();
  Node* reader = g.node(uses[0].node);
  Node* loss = reader;
  if (reader->op() == OpKind::kReshape) {
    const std::vector<ir::Use>& rows = g.uses(reader->output(0));
    if (uses[0].slot != 0 || rows.size() != 1 || g.is_graph_output(reader->output(0))) return Status::Ok();
    loss = g.node(rows[0].node);
  }
  if (loss->op() != OpKind::kSoftmaxCrossEntropyLoss || loss->input(0) != (reader == loss ? logits : reader->output(0)))
    return Status::Ok();
  if (reader != loss) {
    g.SetInput(reader, 0, low);
    AMP_RETURN_IF_ERROR(g.InferNode(reader));
  }
  const std::string name = g.UniqueName("loss/scores_fp32");
  Node* widen = g.AddNode(OpKind::kCast, {reader != loss ? reader->output(0) : low}, 1, name, {name});
  widen->attrs().Set("to", static_cast<int64_t>(ir::OnnxFromDType(ir::DType::kFloat32)));
  AMP_RETURN_IF_ERROR(g.InferNode(widen));
  g.SetInput(loss, 0, widen->output(0));
  const std::vector<Value>& outs = g.outputs();
  g.SetOutput(static_cast<size_t>(std::find(outs.begin(), outs.end(), logits) - outs.begin()), low);
  AMP_RETURN_IF_ERROR(g.RemoveNode(cast));
  t.accuracy_output = g.name(low);
  return Status::Ok();
}

// Input i of two nodes is the same value: the same Value, both absent, or
// equal constants.
bool SameInput(const Graph& g, const Node& a, const Node& b, size_t i) {
  if (a.has_input(i) != b.has_input(i)) return false;
  if (!a.has_input(i) || a.input(i) == b.input(i)) return true;
  const ir::Tensor *x = g.ConstantValue(a.input(i)), *y = g.ConstantValue(b.input(i));
  return x && y && *x == *y;
}

// A quantization-aware model's QuantizeLinear -> DequantizeLinear pairs
// become FakeQuantize, whose gradient is the straight-through estimator
// (the integer value between them has none). A pair fuses where the
// DequantizeLinear reads the QuantizeLinear's output with the same scale,
// zero point, axis and block size, into x's float type.
//   before: x ─▶ QuantizeLinear(s, zp) ─▶ q:int8 ─▶ DequantizeLinear(s, zp) ─▶ y
//   after:  x ─▶ FakeQuantize(s, zp)[qmin, qmax] ─▶ y, mask
Status FuseFakeQuantize(Graph& g) {
  std::vector<ir::NodeId> pairs;
  for (const Node* n : g.nodes())
    if (n->op() == OpKind::kDequantizeLinear) pairs.push_back(n->id());
  for (ir::NodeId id : pairs) {
    Node* dq = g.node(id);
    Node* q = g.producer(dq->input(0));
    if (!q || q->op() != OpKind::kQuantizeLinear || !SameInput(g, *q, *dq, 1) || !SameInput(g, *q, *dq, 2) ||
        q->attrs().Int("axis", 1) != dq->attrs().Int("axis", 1) ||
        q->attrs().Int("block_size", 0) != dq->attrs().Int("block_size", 0) ||
        g.type(q->input(0)).dtype != g.type(dq->output(0)).dtype)
      continue;
    AMP_ASSIGN_OR_RETURN(auto range, ir::QuantRange(g.type(q->output(0)).dtype));
    std::vector<Value> in{q->input(0), q->input(1)};
    if (q->has_input(2)) in.push_back(q->input(2));
    Node* f = g.AddNode(OpKind::kFakeQuantize, in, 2, g.UniqueName(dq->name() + "/fake_quantize"));
    f->attrs().Set("axis", q->attrs().Int("axis", 1));
    f->attrs().Set("block_size", q->attrs().Int("block_size", 0));
    f->attrs().Set("qmin", range.first);
    f->attrs().Set("qmax", range.second);
    AMP_RETURN_IF_ERROR(g.InferNode(f));
    const std::string name = g.name(dq->output(0));
    g.ReplaceAllUsesWith(dq->output(0), f->output(0));
    AMP_RETURN_IF_ERROR(g.RemoveNode(dq));
    AMP_RETURN_IF_ERROR(g.RenameValue(f->output(0), name));
    if (g.uses(q->output(0)).empty() && !g.is_graph_output(q->output(0))) AMP_RETURN_IF_ERROR(g.RemoveNode(q));
  }
  return Status::Ok();
}

// O1/O2: a master weight's Cast to fp16/bf16 (one per weight and type)
// becomes a graph input, "<weight>.<type>", that the trainer feeds with a low
// copy which the optimizer rewrites as it updates the master: the forward
// reads the same rounded values without a Cast pass over every weight.
//   before: W:fp32 (input) ─▶ Cast(bf16) ─▶ W':bf16 ─▶ Conv, ConvGrad
//   after:  W.bf16:bf16 (input; TrainGraph::low_weights) ─▶ Conv, ConvGrad
Status LowWeights(Graph& g, TrainGraph& t) {
  for (const std::string& param : t.params) {
    const Value w = g.FindValue(param);
    if (!w.valid() || g.type(w).dtype != ir::DType::kFloat32) continue;
    std::vector<Node*> casts;
    for (const ir::Use& u : g.uses(w)) {
      Node* n = g.node(u.node);
      const ir::DType to = n->op() == OpKind::kCast ? g.type(n->output(0)).dtype : ir::DType::kUndefined;
      if ((to == ir::DType::kFloat16 || to == ir::DType::kBFloat16) && !g.is_graph_output(n->output(0)))
        casts.push_back(n);
    }
    if (casts.size() != 1) continue;
    Node* cast = casts[0];
    const ir::TensorType type = g.type(cast->output(0));
    const std::string name = g.UniqueName(StrCat(param, ".", ir::DTypeName(type.dtype)));
    const Value copy = g.AddInput(name, type);
    g.ReplaceAllUsesWith(cast->output(0), copy);
    AMP_RETURN_IF_ERROR(g.RemoveNode(cast));
    t.low_weights[param] = name;
  }
  return Status::Ok();
}

// ReLU after the max pooling it feeds: max and ReLU commute (ReLU is
// monotone), so MaxPool(Relu(x)) = Relu(MaxPool(x)) element for element,
// but the ReLU and its gradient then run on the pooled tensor (a quarter of
// the elements at 2x2 stride 2; SimpleCNN's blocks, VGG's, ResNet's stem).
// The gradients are the same too: where a window's maximum is positive the
// first maximum is the same element either way and both masks pass it;
// where it is not, both give the window zero. The one difference: a window
// of negative numbers and -0 pools to -0 where the original gave +0.
// Only a Relu whose single reader is that MaxPool (no Indices output, not a
// graph output).
//   before: x ─▶ Relu ─▶ r ─▶ MaxPool ─▶ p ─▶ ...
//   after:  x ─▶ MaxPool ─▶ p ─▶ Relu ─▶ r ─▶ ...   (r now pooled; same node names)
Status ReluAfterMaxPool(Graph& g) {
  AMP_ASSIGN_OR_RETURN(std::vector<Node*> order, g.TopologicalOrder());
  for (Node* relu : order) {
    if (relu->op() != OpKind::kRelu || relu->num_outputs() != 1) continue;
    const Value r = relu->output(0);
    const auto& uses = g.uses(r);
    if (uses.size() != 1 || g.is_graph_output(r)) continue;
    Node* pool = g.node(uses[0].node);
    if (pool->op() != OpKind::kMaxPool || pool->num_outputs() != 1 || uses[0].slot != 0) continue;
    const Value p = pool->output(0);
    if (g.is_graph_output(p)) continue;
    const Value x = relu->input(0);
    g.ReplaceAllUsesWith(p, r);  // p's readers read the Relu's output
    g.SetInput(pool, 0, x);
    g.SetInput(relu, 0, p);
    AMP_RETURN_IF_ERROR(g.InferNode(pool));
    AMP_RETURN_IF_ERROR(g.InferNode(relu));
  }
  return Status::Ok();
}

namespace {

// Whether an AMP policy sets the precision of one of `ops`, the op types an
// activation's decomposition is made of: then it stays unfused, so that the
// policy (one file for `convert` and `train`) means the same nodes in both.
bool PolicyNamesOps(const std::optional<amp::Policy>& policy, std::initializer_list<const char*> ops) {
  if (!policy) return false;
  for (const char* op : ops)
    if (policy->fp32_ops.count(op) || policy->low_ops.count(op)) return true;
  return false;
}

bool PolicyNamesGeluParts(const std::optional<amp::Policy>& policy) {
  return PolicyNamesOps(policy, {"Erf", "Tanh", "Pow", "Mul", "Add", "Div"});
}

// Whether a node's name matches a pattern of the policy's node overrides or
// pins (the planner's CompiledPolicy): a fusion leaves such a node as it is,
// for the policy to find. Null without a policy.
StatusOr<std::function<bool(const ir::Node&)>> PolicyNamedNodes(const std::optional<amp::Policy>& policy) {
  if (!policy) return std::function<bool(const ir::Node&)>();
  AMP_ASSIGN_OR_RETURN(amp::internal::CompiledPolicy compiled, amp::internal::CompiledPolicy::Compile(*policy));
  return std::function<bool(const ir::Node&)>([c = std::move(compiled)](const ir::Node& n) {
    auto named = [&](const auto& entry) { return entry.pattern.Matches(n.name()); };
    return std::any_of(c.overrides.begin(), c.overrides.end(), named) || std::any_of(c.pins.begin(), c.pins.end(), named);
  });
}

}  // namespace

namespace {

// TrainGraphOptions::input_dims: each named input's dims after the batch's
// set (a static dim must already equal the given one), then every shape
// inferred again.
Status FixInputDims(Graph& g, const std::map<std::string, std::vector<int64_t>>& input_dims) {
  if (input_dims.empty()) return Status::Ok();
  for (const auto& [name, dims] : input_dims) {
    Value v = g.FindValue(name);
    if (!v.valid() || g.producer(v)->op() != OpKind::kInput) return InvalidArgument("the model has no input '", name, "'");
    ir::TensorType& t = g.mutable_info(v).type;
    if (!t.has_shape || t.shape.rank() != dims.size() + 1)
      return InvalidArgument("input '", name, "' (", t.ToString(), ") does not have ", dims.size() + 1, " dims");
    for (size_t i = 0; i < dims.size(); ++i) {
      ir::Dim& d = t.shape[i + 1];
      if (d.is_static() && d.value != dims[i])
        return InvalidArgument("input '", name, "' is ", t.ToString(), "; it cannot take dim ", i + 1, " = ", dims[i]);
      d = ir::Dim::Static(dims[i]);
    }
  }
  return g.InferShapes();
}

}  // namespace

StatusOr<TrainGraph> BuildTrainGraph(const Graph& model, const TrainGraphOptions& opts) {
  AMP_ASSIGN_OR_RETURN(Value output, CheckModel(model, opts));
  TrainGraph t;
  t.graph = model.Clone();
  Graph& g = *t.graph;
  AMP_RETURN_IF_ERROR(FixInputDims(g, opts.input_dims));
  t.data_inputs = InputNames(g);
  t.logits = g.name(output);

  // One pipeline, the verifier after each step (ir::PassManager).
  autodiff::TrainingGraphInfo mode;
  autodiff::LossHead head;
  Value seed;
  autodiff::BackwardResult backward;
  ir::PassManager pm;
  pm.set_verify(true);
  auto step = [&pm](const char* name, std::function<Status(Graph&)> fn) {
    pm.Add(std::make_unique<ir::FunctionPass>(name, [fn = std::move(fn)](Graph& graph) -> StatusOr<bool> {
      AMP_RETURN_IF_ERROR(fn(graph));
      return true;
    }));
  };
  std::set<std::string> frozen, stats;
  std::map<std::string, std::string> constant_like;
  step("training-mode", [&](Graph& graph) -> Status {
    AMP_ASSIGN_OR_RETURN(mode, autodiff::ToTrainingMode(graph, autodiff::TrainingGraphOptions{opts.dropout}));
    for (const auto& [stat, update] : mode.bn_updates) stats.insert(stat);
    AMP_ASSIGN_OR_RETURN(frozen, ResolveFreeze(graph, opts.freeze, stats));
    if (!opts.train_all) constant_like = ConstantLikeInitializers(graph);
    return Status::Ok();
  });
  step("fake-quantize", FuseFakeQuantize);
  if (!PolicyNamesGeluParts(opts.amp)) {
    step("fuse-gelu", [&](Graph& graph) -> Status {
      // Constants only: a scalar initializer is one unless --train-all trains it.
      return FuseGelu(graph, [&](const std::string& name) { return constant_like.count(name) > 0; }).status();
    });
  }
  if (!PolicyNamesOps(opts.amp, {"Sigmoid", "Mul"})) {
    step("fuse-silu", [&](Graph& graph) -> Status {
      AMP_ASSIGN_OR_RETURN(auto named, PolicyNamedNodes(opts.amp));
      return FuseSilu(graph, named).status();
    });
  }
  if (!PolicyNamesOps(opts.amp, {"MatMul", "Transpose"})) {
    step("fuse-transposed-weights", [&](Graph& graph) -> Status {
      AMP_ASSIGN_OR_RETURN(auto named, PolicyNamedNodes(opts.amp));
      return FuseTransposedWeights(graph, named).status();
    });
  }
  if (opts.relu_after_max_pool) step("relu-after-max-pool", ReluAfterMaxPool);
  if (opts.amp && opts.amp->level != amp::Level::kO0) {
    // Planning, cast insertion and elimination (amp::Convert verifies after each of its own passes too).
    step("amp-precision", [&](Graph& graph) -> Status {
      AMP_ASSIGN_OR_RETURN(t.amp_report, ApplyTrainingPrecision(graph, *opts.amp, opts.amp_for_export));
      return Status::Ok();
    });
  }
  step("loss-head", [&](Graph& graph) -> Status {
    AMP_ASSIGN_OR_RETURN(head, AttachLoss(graph, graph.FindValue(t.logits), opts));
    if (graph.type(head.loss).dtype != ir::DType::kFloat32)
      return Internal("the loss is ", ir::DTypeName(graph.type(head.loss).dtype), "; the loss head must be float32");
    t.target_input = head.target_input;
    t.class_axis = head.class_axis;
    t.loss = graph.name(head.loss);
    return Status::Ok();
  });
  if (opts.amp && opts.amp->level != amp::Level::kO0 && opts.loss == "cross_entropy")
    step("low-logits", [&](Graph& graph) { return LowLogits(graph, t); });
  step("loss-scale-input", [&](Graph& graph) -> Status {
    t.loss_scale = graph.UniqueName("loss_scale");
    seed = graph.AddInput(t.loss_scale, ir::TensorType::Of(ir::DType::kFloat32, std::vector<int64_t>{}));
    return Status::Ok();
  });
  step("backward", [&](Graph& graph) -> Status {
    autodiff::BackwardOptions options;
    options.frozen = frozen;
    for (const auto& [name, why] : constant_like) options.frozen.insert(name);
    for (const auto& [stat, update] : mode.bn_updates) {
      options.frozen.insert(stat);
      t.running_stats.push_back(stat);
      t.stat_updates[stat] = update;
    }
    AMP_ASSIGN_OR_RETURN(backward, autodiff::BuildBackward(graph, head.loss, seed, options));
    t.parameters = ReportParameters(graph, backward, frozen, stats, constant_like);
    if (backward.names.empty())
      return InvalidArgument(
          "the model has no trainable (float) initializer that reaches the loss",
          frozen.empty() ? "" : StrCat(" besides the ", frozen.size(), " frozen ones"),
          constant_like.empty() ? "" : StrCat(" and ", constant_like.size(), " taken for constants (--train-all)"));
    return Status::Ok();
  });
  step("state-inputs", [&](Graph& graph) -> Status {
    for (const std::string& name : backward.names) {
      if (graph.producer(graph.FindValue(name))->op() != OpKind::kInitializer) continue;  // only initializers are state
      t.params.push_back(name);
      t.grads[name] = graph.name(backward.grads.at(name));
    }
    for (const std::string& name : t.params) AMP_RETURN_IF_ERROR(InitializerToInput(graph, name));
    for (const std::string& name : t.running_stats) AMP_RETURN_IF_ERROR(InitializerToInput(graph, name));
    return Status::Ok();
  });
  if (opts.low_gradients && opts.amp && (opts.amp->level == amp::Level::kO1 || opts.amp->level == amp::Level::kO2))
    step("low-gradients", [&](Graph& graph) { return LowGradients(graph, t); });
  if (opts.low_weights && opts.amp && (opts.amp->level == amp::Level::kO1 || opts.amp->level == amp::Level::kO2))
    step("low-weights", [&](Graph& graph) { return LowWeights(graph, t); });
  AMP_RETURN_IF_ERROR(pm.Run(g).status());
  return t;
}

StatusOr<TrainGraph> BuildEvalGraph(const Graph& model, const TrainGraphOptions& opts,
                                    const std::vector<std::string>& state_names) {
  AMP_ASSIGN_OR_RETURN(Value output, CheckModel(model, opts));
  TrainGraph t;
  t.graph = model.Clone();
  Graph& g = *t.graph;
  AMP_RETURN_IF_ERROR(FixInputDims(g, opts.input_dims));
  t.data_inputs = InputNames(g);
  t.logits = g.name(output);
  AMP_RETURN_IF_ERROR(ToEvalMode(g));
  Value logits = g.FindValue(t.logits);
  if (g.type(logits).dtype != ir::DType::kFloat32) {
    // A mixed-precision model whose logits are fp16/bf16: the loss and the
    // top-1 count read an fp32 copy.
    std::string name = g.UniqueName(t.logits + ".fp32");
    Node* cast = g.AddNode(OpKind::kCast, {logits}, 1, name, {name});
    cast->attrs().Set("to", static_cast<int64_t>(ir::OnnxFromDType(ir::DType::kFloat32)));
    AMP_RETURN_IF_ERROR(g.InferNode(cast));
    g.AddOutput(cast->output(0));
    logits = cast->output(0);
    t.logits = name;
  }
  AMP_ASSIGN_OR_RETURN(autodiff::LossHead head, AttachLoss(g, logits, opts));
  t.target_input = head.target_input;
  t.class_axis = head.class_axis;
  t.loss = g.name(head.loss);
  for (const std::string& name : state_names) AMP_RETURN_IF_ERROR(InitializerToInput(g, name));
  return t;
}

StatusOr<std::unique_ptr<Graph>> WithInitializers(const Graph& model, const std::map<std::string, ir::Tensor>& values) {
  std::unique_ptr<Graph> g = model.Clone();
  for (const auto& [name, value] : values) {
    Value v = g->FindValue(name);
    Node* n = v.valid() ? g->producer(v) : nullptr;
    if (!n || n->op() != OpKind::kInitializer)
      return InvalidArgument("'", name, "' is not an initializer of the model");
    const ir::TensorType& type = g->type(v);
    if (type.dtype != value.dtype() || !type.has_shape || !(type.shape == ir::Shape::FromStatic(value.dims())))
      return InvalidArgument("initializer '", name, "' is ", type.ToString(), " in the model but ",
                             ir::TensorType::Of(value.dtype(), value.dims()).ToString(), " in the trained state");
    n->attrs().Set("value", value);
  }
  return g;
}

}  // namespace amptrain::executor::train
