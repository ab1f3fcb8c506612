#include <algorithm>
// Schedule, shape specialization and kernel creation; the memory plan is in
// executor/memory_plan.cc.
#include "executor/plan.h"

#include <spdlog/spdlog.h>

#include <unordered_set>

namespace amptrain::executor {

using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::Tensor;
using ir::TensorType;
using ir::Value;

int Plan::SlotOf(Value v) const {
  auto it = slot_of.find(v);
  return it == slot_of.end() ? -1 : it->second;
}

Status CheckInputTypes(const Graph& graph, const std::map<std::string, TensorType>& input_types) {
  std::unordered_set<std::string> names;
  for (Value v : graph.inputs()) {
    const std::string& name = graph.name(v);
    names.insert(name);
    auto it = input_types.find(name);
    if (it == input_types.end()) return InvalidArgument("missing input '", name, "'");
    const TensorType& want = graph.type(v);
    const TensorType& got = it->second;
    if (got.dtype != want.dtype)
      return InvalidArgument("input '", name, "' has dtype ", ir::DTypeName(got.dtype), ", the model expects ",
                             ir::DTypeName(want.dtype));
    if (!got.has_shape || !got.shape.is_static())
      return InvalidArgument("input '", name, "' needs a concrete shape, got ", got.ToString());
    if (!want.has_shape) continue;
    if (got.shape.rank() != want.shape.rank())
      return InvalidArgument("input '", name, "' has shape ", got.shape.ToString(), " of rank ", got.shape.rank(),
                             ", the model expects ", want.shape.ToString());
    for (size_t d = 0; d < want.shape.rank(); ++d)
      if (want.shape[d].is_static() && want.shape[d].value != got.shape[d].value)
        return InvalidArgument("input '", name, "' has shape ", got.shape.ToString(), ", the model expects ",
                               want.shape.ToString(), " (dim ", d, ")");
  }
  for (const auto& [name, type] : input_types)
    if (!names.count(name)) return InvalidArgument("unknown input '", name, "' (not an input of the model)");
  return Status::Ok();
}

namespace {

// "[2,3] [3] -> [2,3]": a kernel's input and output dims, for the debug log
// (an absent optional input is "-", a channels-last one ends in "nhwc").
std::string Shapes(const kernels::KernelInit& init) {
  auto list = [](const std::vector<kernels::TensorSpec>& specs) {
    std::string s;
    for (const kernels::TensorSpec& t : specs) {
      if (!s.empty()) s += ' ';
      if (!t.present()) {
        s += '-';
        continue;
      }
      s += '[';
      for (size_t d = 0; d < t.dims.size(); ++d) s += StrCat(d ? "," : "", t.dims[d]);
      s += t.channels_last ? "]nhwc" : "]";
    }
    return s;
  };
  return StrCat(list(init.inputs), " -> ", list(init.outputs));
}

// What shape specialization learns: a concrete type per value, the values
// known at plan time, and the nodes that still have to run.
struct Specialized {
  std::map<Value, TensorType> types;
  std::map<Value, Tensor> values;
  std::vector<const Node*> schedule;
  size_t folded = 0;
};

// Nodes some graph output depends on.
std::unordered_set<ir::NodeId> LiveNodes(const Graph& graph) {
  std::unordered_set<ir::NodeId> live;
  std::vector<ir::NodeId> stack;
  for (Value v : graph.outputs()) stack.push_back(v.node);
  while (!stack.empty()) {
    ir::NodeId id = stack.back();
    stack.pop_back();
    if (!live.insert(id).second) continue;
    for (Value in : graph.node(id)->inputs())
      if (in.valid()) stack.push_back(in.node);
  }
  return live;
}

// Runs one node's shape rule with the specialized types and known values.
// `counts` (optional): the value-dependent sizes the caller measured, by
// NonZero output name (InferenceSession counts them; ValueDependentNodes).
Status InferOne(const Graph& graph, const Node* node, Specialized& s, const std::map<std::string, int64_t>* counts) {
  ir::InferContext ctx;
  ctx.node = node;
  ctx.attrs = &node->attrs();
  ctx.opset = static_cast<int>(graph.info().opset);
  for (Value in : node->inputs()) {
    if (!in.valid()) {
      ctx.inputs.emplace_back();
      ctx.values.push_back(nullptr);
      continue;
    }
    auto t = s.types.find(in);
    if (t == s.types.end()) return Internal(node->Describe(), ": input '", graph.name(in), "' has no type");
    ctx.inputs.push_back(t->second);
    auto v = s.values.find(in);
    ctx.values.push_back(v == s.values.end() ? nullptr : &v->second);
  }
  ctx.outputs.resize(node->num_outputs());
  ctx.output_values.resize(node->num_outputs());
  for (size_t i = 0; i < node->num_outputs(); ++i) ctx.outputs[i] = node->output_info(i).type;
  AMP_RETURN_IF_ERROR(node->schema().infer(ctx));
  if (node->op() == OpKind::kNonZero && ctx.output_values[0].empty() && ctx.outputs[0].has_shape) {
    const std::string& name = graph.name(node->output(0));
    if (!counts || !counts->count(name))
      return InvalidArgument(node->Describe(), ": the count of nonzero elements is not known when planning");
    ctx.outputs[0].shape[1] = ir::Dim::Static(counts->at(name));
  }

  bool all_known = node->num_outputs() > 0;
  for (const Tensor& t : ctx.output_values) all_known = all_known && !t.empty();
  for (size_t i = 0; i < node->num_outputs(); ++i) {
    Value out = node->output(i);
    const Tensor& known = ctx.output_values[i];
    if (!known.empty()) {
      s.values[out] = known;
      s.types[out] = TensorType::Of(known.dtype(), known.dims());
      continue;
    }
    const TensorType& t = ctx.outputs[i];
    if (t.dtype != ir::DType::kUndefined && (!t.has_shape || !t.shape.is_static()))
      return InvalidArgument(node->Describe(), ": output '", graph.name(out), "' has no static shape (", t.ToString(),
                             ") for these input shapes");
    if (t.dtype == ir::DType::kUndefined && (!graph.uses(out).empty() || graph.is_graph_output(out)))
      return InvalidArgument(node->Describe(), ": output '", graph.name(out), "' has no dtype");
    s.types[out] = t;
  }
  if (all_known) ++s.folded;
  else s.schedule.push_back(node);
  return Status::Ok();
}

StatusOr<Specialized> Specialize(const Graph& graph, const std::map<std::string, TensorType>& input_types,
                                 const std::map<std::string, Tensor>* input_values,
                                 const std::map<std::string, int64_t>* counts) {
  Specialized s;
  for (Value v : graph.inputs()) {
    s.types[v] = input_types.at(graph.name(v));
    if (!input_values) continue;
    auto it = input_values->find(graph.name(v));
    if (it != input_values->end()) s.values[v] = it->second;
  }
  for (Value v : graph.initializers()) {
    const Tensor* t = graph.ConstantValue(v);
    if (!t) return InvalidArgument("initializer '", graph.name(v), "' has no value");
    s.types[v] = TensorType::Of(t->dtype(), t->dims());
    s.values[v] = *t;
  }
  AMP_ASSIGN_OR_RETURN(auto order, graph.TopologicalOrder());
  std::unordered_set<ir::NodeId> live = LiveNodes(graph);
  for (const Node* node : order) {
    if (!live.count(node->id())) continue;
    if (node->op() == OpKind::kConstant) {
      const Tensor* t = graph.ConstantValue(node->output(0));
      if (!t) return InvalidArgument(node->Describe(), ": has no value");
      s.types[node->output(0)] = TensorType::Of(t->dtype(), t->dims());
      s.values[node->output(0)] = *t;
      continue;
    }
    AMP_RETURN_IF_ERROR(InferOne(graph, node, s, counts));
  }
  return s;
}

StatusOr<Slot> MakeSlot(const Graph& graph, Value v, const TensorType& type, Storage storage) {
  Slot slot;
  slot.value = v;
  slot.name = graph.name(v);
  slot.dtype = type.dtype;
  slot.storage = storage;
  if (storage == Storage::kAbsent) return slot;
  slot.dims = type.shape.static_dims();
  int64_t n = 0;
  constexpr int64_t kMaxElements = (int64_t{1} << 46) / 8;
  const bool overflows = !ir::CheckedNumElements(slot.dims, &n);
  if (overflows || n > kMaxElements) {
    const Node* producer = graph.producer(v);
    return InvalidArgument("value '", slot.name, "'", producer ? " (output of " + producer->Describe() + ")" : "",
                           " of shape ", type.shape.ToString(), " is too large: ",
                           overflows ? std::string("its element count overflows int64")
                                     : StrCat(n, " elements, more than the limit of 2^43"));
  }
  slot.bytes = static_cast<size_t>(n) * ir::DTypeSize(type.dtype);
  return slot;
}

// Creates the slots of the plan: inputs, step inputs/outputs, graph outputs.
Status BuildSlots(const Graph& graph, const Specialized& s, Plan& plan) {
  auto add = [&](Value v, Storage storage) -> StatusOr<int> {
    AMP_ASSIGN_OR_RETURN(Slot slot, MakeSlot(graph, v, s.types.at(v), storage));
    if (storage == Storage::kConstant) slot.constant = s.values.at(v);
    int index = static_cast<int>(plan.slots.size());
    plan.slots.push_back(std::move(slot));
    plan.slot_of[v] = index;
    return index;
  };
  // A value read by a step or output that no step defines: input or constant.
  auto source = [&](Value v) -> StatusOr<int> {
    int existing = plan.SlotOf(v);
    if (existing >= 0) return existing;
    if (!s.values.count(v)) return Internal("value '", graph.name(v), "' is neither computed nor known");
    return add(v, Storage::kConstant);
  };
  for (Value v : graph.inputs()) {
    AMP_ASSIGN_OR_RETURN(int index, add(v, Storage::kInput));
    plan.inputs.push_back(index);
  }
  for (const Node* node : s.schedule) {
    Step step;
    step.node = node;
    for (Value in : node->inputs()) {
      if (!in.valid()) {
        step.inputs.push_back(-1);
        continue;
      }
      AMP_ASSIGN_OR_RETURN(int index, source(in));
      step.inputs.push_back(index);
    }
    for (size_t i = 0; i < node->num_outputs(); ++i) {
      Value out = node->output(i);
      Storage storage = graph.is_graph_output(out) ? Storage::kOutput : Storage::kArena;
      if (s.types.at(out).dtype == ir::DType::kUndefined) storage = Storage::kAbsent;
      AMP_ASSIGN_OR_RETURN(int index, add(out, storage));
      step.outputs.push_back(index);
    }
    plan.steps.push_back(std::move(step));
  }
  for (Value v : graph.outputs()) {
    AMP_ASSIGN_OR_RETURN(int index, source(v));
    plan.outputs.push_back(index);
  }
  return Status::Ok();
}

kernels::TensorSpec SpecOf(const Plan& plan, int slot, bool widened) {
  kernels::TensorSpec spec;
  if (slot < 0) return spec;
  const Slot& s = plan.slots[slot];
  if (s.storage == Storage::kAbsent) return spec;
  spec.dtype = s.dtype;
  spec.dims = s.dims;
  if (widened) spec.holds = s.holds;
  spec.channels_last = s.channels_last;
  if (s.storage == Storage::kConstant) spec.value = &s.constant;
  return spec;
}

const std::string kReference = "reference";

// Placement, then kernels: every step is checked against the device's
// registry before any kernel is made, and all the steps it lacks are named
// in one error (the first kMaxListed, then a count).
Status CreateKernels(Plan& plan, const PlanOptions& options) {
  constexpr size_t kMaxListed = 12;
  std::vector<Status> missing;
  size_t unsupported = 0;
  for (Step& step : plan.steps) {
    const std::string& impl =
        options.reference_ops.count(step.node->op()) ? kReference : options.kernel_impl;
    StatusOr<const kernels::KernelEntry*> entry =
        kernels::Registry::Global().Select(KernelInitOf(plan, step, options), impl);
    if (entry.ok()) {
      step.entry = *entry;
      continue;
    }
    if (++unsupported <= kMaxListed) missing.push_back(step.node->Annotate(entry.status()));
  }
  if (unsupported == 1) return missing[0];
  if (unsupported > 1) {
    std::string list;
    for (const Status& m : missing) list += StrCat("\n  ", m.message());
    if (unsupported > kMaxListed) list += StrCat("\n  ... and ", unsupported - kMaxListed, " more");
    return Unimplemented(unsupported, " of ", plan.steps.size(), " nodes have no ",
                         kernels::DeviceKindName(options.device), " kernel:", list);
  }
  for (Step& step : plan.steps) {
    const kernels::KernelInit init = KernelInitOf(plan, step, options);
    StatusOr<std::unique_ptr<kernels::Kernel>> kernel = step.entry->factory(init);
    if (!kernel.ok()) return step.node->Annotate(kernel.status());
    step.kernel = std::move(*kernel);
    step.impl = step.entry->impl;
    if (spdlog::should_log(spdlog::level::debug)) spdlog::debug("kernel {} {} -> {}", init.Describe(), Shapes(init), step.impl);
  }
  return Status::Ok();
}

// Outputs no node reads and that are no graph output, of kernels that skip
// such outputs (KernelEntry::skips_unused_outputs): absent, so the kernel
// gets data == nullptr and the arena holds nothing for them.
void DropUnusedOutputs(const Graph& graph, Plan& plan) {
  for (const Step& step : plan.steps) {
    if (!step.entry || !step.entry->skips_unused_outputs) continue;
    for (int o : step.outputs) {
      Slot& slot = plan.slots[o];
      if (slot.storage == Storage::kArena && graph.uses(slot.value).empty()) slot.storage = Storage::kAbsent;
    }
  }
}

}  // namespace

kernels::KernelInit KernelInitOf(const Plan& plan, const Step& step, const PlanOptions& options) {
  const bool widened = step.entry && step.entry->takes_widened;
  kernels::KernelInit init;
  init.op = step.node->op();
  init.attrs = &step.node->attrs();
  for (int i : step.inputs) init.inputs.push_back(SpecOf(plan, i, widened));
  for (int o : step.outputs) init.outputs.push_back(SpecOf(plan, o, widened));
  init.node_name = step.node->name();
  init.device = options.device;
  init.training = options.training;
  init.winograd = options.winograd;
  init.seed = options.seed + step.node->id();
  init.threads = options.threads;
  return init;
}

std::vector<const Node*> ValueDependentNodes(const Graph& graph) {
  std::unordered_set<ir::NodeId> live = LiveNodes(graph);
  std::vector<const Node*> nodes;
  for (const Node* n : graph.nodes())
    if (n->op() == OpKind::kNonZero && live.count(n->id()) && !graph.ConstantValue(n->input(0))) nodes.push_back(n);
  return nodes;
}

std::vector<std::string> ShapeInputs(const Graph& graph) {
  std::unordered_set<ir::NodeId> seen;
  std::vector<Value> stack;
  for (const Node* n : graph.nodes())
    for (size_t i = 0; i < n->num_inputs(); ++i)
      if (n->has_input(i) && n->schema().is_value_input(i)) stack.push_back(n->input(i));
  std::vector<std::string> names;
  while (!stack.empty()) {
    const Node* p = graph.producer(stack.back());
    stack.pop_back();
    if (!seen.insert(p->id()).second) continue;
    if (p->op() == OpKind::kInput) names.push_back(p->output_info(0).name);
    if (p->op() == OpKind::kShape) continue;  // its value depends on its input's type only
    for (Value in : p->inputs())
      if (in.valid()) stack.push_back(in);
  }
  std::sort(names.begin(), names.end());
  return names;
}

StatusOr<Plan> BuildPlan(const Graph& graph, const std::map<std::string, TensorType>& input_types,
                         const PlanOptions& options, const std::map<std::string, Tensor>* input_values,
                         const std::map<std::string, int64_t>* value_dependent_counts) {
  AMP_RETURN_IF_ERROR(CheckInputTypes(graph, input_types));
  if (graph.outputs().empty()) return InvalidArgument("the graph has no outputs");
  AMP_ASSIGN_OR_RETURN(Specialized s, Specialize(graph, input_types, input_values, value_dependent_counts));
  Plan plan;
  plan.folded_nodes = s.folded;
  AMP_RETURN_IF_ERROR(BuildSlots(graph, s, plan));
  AMP_RETURN_IF_ERROR(CreateKernels(plan, options));
  DropUnusedOutputs(graph, plan);
  // Layouts first: cast fusion weighs each fusion by the scratch of the
  // kernels it would make, which depends on their layouts.
  if (options.channels_last) AssignChannelsLast(plan, options);
  if (options.fuse_widened_casts) FuseWidenedCasts(plan, options);
  PlanMemory(plan, options.inplace);
  spdlog::debug("plan: {} kernels, {} folded nodes, arena {} bytes (most live at one step {}, without reuse {})",
                plan.steps.size(), plan.folded_nodes, plan.peak_bytes, plan.live_bytes, plan.naive_bytes);
  return plan;
}

}  // namespace amptrain::executor
