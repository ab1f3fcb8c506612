#include "executor/session.h"

#include <omp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "executor/optimize.h"
#include "ir/verifier.h"

namespace amptrain::executor {

using ir::Tensor;
using ir::TensorType;
using ir::TensorView;

namespace {

// "x:float32[2,3];y:int64[]": the cache key of a plan, followed by the
// values of the inputs the plan is specialized on ("shape=[2,-1]").
std::string Signature(const std::map<std::string, TensorType>& types, const std::map<std::string, Tensor>& values) {
  std::string key;
  for (const auto& [name, type] : types) key += StrCat(name, ":", type.ToString(), ";");
  for (const auto& [name, t] : values) {
    key += name + "=[";
    for (int64_t i = 0; i < t.num_elements(); ++i) key += StrCat(i ? "," : "", t.GetAsDouble(i));
    key += "];";
  }
  return key;
}

bool AllInputsStatic(const ir::Graph& graph) {
  for (ir::Value v : graph.inputs()) {
    const TensorType& t = graph.type(v);
    if (!t.has_shape || !t.shape.is_static()) return false;
  }
  return true;
}

}  // namespace

InferenceSession::InferenceSession(std::unique_ptr<ir::Graph> graph, SessionOptions opts)
    : graph_(std::move(graph)), opts_(std::move(opts)) {
  threads_ = opts_.threads > 0 ? opts_.threads : std::max(1, omp_get_num_procs());
  bound_.resize(graph_->inputs().size());
  for (const Tensor& t : bound_) bound_inputs_.push_back(&t);
}

StatusOr<std::unique_ptr<InferenceSession>> InferenceSession::Create(std::unique_ptr<ir::Graph> graph,
                                                                     SessionOptions opts) {
  if (!graph) return InvalidArgument("no graph given");
  if (opts.threads < 0) return InvalidArgument("threads must be >= 0, got ", opts.threads);
  std::shared_ptr<kernels::Device> device = opts.device_instance;
  if (!device) {
    AMP_ASSIGN_OR_RETURN(device, kernels::OpenDevice({opts.device, opts.device_index}));
  }
  opts.device = device->kind();
  opts.device_index = device->index();
  AMP_RETURN_IF_ERROR(ir::Verify(*graph));
  std::unique_ptr<InferenceSession> session(new InferenceSession(std::move(graph), std::move(opts)));
  session->device_ = std::move(device);
  AMP_ASSIGN_OR_RETURN(session->run_context_, session->device_->NewRunContext(session->threads_));
  if (session->opts_.optimize && !session->opts_.training) {
    std::unique_ptr<ir::Graph> clone = session->graph_->Clone();
    AMP_ASSIGN_OR_RETURN(bool changed, OptimizeForInference(*clone));
    if (changed) session->run_graph_ = std::move(clone);
  }
  session->shape_inputs_ = ShapeInputs(session->run_graph());
  AMP_RETURN_IF_ERROR(session->MakeProbe());
  if (AllInputsStatic(*session->graph_) && session->shape_inputs_.empty() && !session->probe_) {
    std::map<std::string, TensorType> types;
    for (ir::Value v : session->graph_->inputs()) types[session->graph_->name(v)] = session->graph_->type(v);
    AMP_ASSIGN_OR_RETURN(CachedPlan * cached, session->PlanFor(types, {}));
    session->last_plan_ = &cached->plan;
  }
  return session;
}

Status InferenceSession::MakeProbe() {
  std::vector<const ir::Node*> nodes = ValueDependentNodes(run_graph());
  if (nodes.empty()) return Status::Ok();
  if (!on_host())
    return Unimplemented(nodes[0]->Describe(), ": a shape that depends on the data (NonZero) runs on the CPU only, not on ",
                         device_->Describe());
  std::unique_ptr<ir::Graph> probe = run_graph().Clone();
  probe->ClearOutputs();
  for (const ir::Node* n : nodes) {
    counted_.push_back(run_graph().name(n->output(0)));
    probe->AddOutput(n->input(0));  // Clone keeps ids, so the Value is the clone's too
  }
  probe->RemoveDeadNodes();
  SessionOptions o = opts_;
  o.optimize = false;  // run_graph() is optimized already
  o.profile = false;
  o.device_instance = device_;
  AMP_ASSIGN_OR_RETURN(probe_, Create(std::move(probe), std::move(o)));
  spdlog::debug("value-dependent shapes: {} NonZero node(s), counted by a probe of {} nodes", nodes.size(),
                probe_->graph().num_nodes());
  return Status::Ok();
}

StatusOr<std::map<std::string, int64_t>> InferenceSession::MeasureCounts(const std::map<std::string, Tensor>& inputs,
                                                                         const RunOptions& run) {
  std::map<std::string, int64_t> counts;
  if (!probe_) return counts;
  RunOptions probe_run;
  probe_run.seed = run.seed;  // the same node ids and seed: random nodes before a NonZero draw the same values
  AMP_ASSIGN_OR_RETURN(std::vector<Tensor> values, probe_->Run(inputs, probe_run));
  for (size_t k = 0; k < counted_.size(); ++k) {
    int64_t n = 0;
    for (int64_t i = 0; i < values[k].num_elements(); ++i) {
      const double v = values[k].GetAsDouble(i);
      n += v != 0.0 || std::isnan(v);
    }
    counts[counted_[k]] = n;
  }
  return counts;
}

StatusOr<InferenceSession::CachedPlan*> InferenceSession::PlanFor(const std::map<std::string, TensorType>& types,
                                                                  const std::map<std::string, Tensor>& values,
                                                                  const std::map<std::string, int64_t>& counts) {
  std::string key = Signature(types, values);
  for (const auto& [name, n] : counts) key += StrCat(name, "#", n, ";");
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second.get();

  PlanOptions options;
  options.device = opts_.device;
  options.kernel_impl = opts_.kernel_impl;
  options.reference_ops = opts_.reference_ops;
  options.training = opts_.training;
  options.threads = threads_;
  options.fuse_widened_casts = opts_.fuse_widened_casts;
  options.channels_last = opts_.channels_last;
  options.winograd = opts_.winograd;
  omp_set_num_threads(threads_);  // oneDNN primitives fix their thread count when created
  StatusOr<Plan> built = BuildPlan(run_graph(), types, options, &values, &counts);
  if (!built.ok() && !counts.empty()) {
    std::string what;
    for (const auto& [name, n] : counts) what += StrCat(what.empty() ? "" : ", ", n, " for '", name, "'");
    return built.status().WithContext(StrCat("planning for the nonzero counts of these inputs (", what, ")"));
  }
  AMP_ASSIGN_OR_RETURN(Plan plan, std::move(built));
  auto cached = std::make_unique<CachedPlan>();
  cached->plan = std::move(plan);
  cached->counts = counts;
  AMP_RETURN_IF_ERROR(Arena(cached->plan.peak_bytes).status());
  spdlog::debug("planned for {}: {} kernels, arena {} bytes", key, cached->plan.steps.size(), cached->plan.peak_bytes);

  if (plans_.size() >= kMaxCachedPlans) {
    if (last_plan_ == &plans_[plan_order_.front()]->plan) last_plan_ = nullptr;
    if (bound_plan_ == plans_[plan_order_.front()].get()) bound_plan_ = nullptr;
    plans_.erase(plan_order_.front());
    plan_order_.erase(plan_order_.begin());
  }
  plan_order_.push_back(key);
  return (plans_[key] = std::move(cached)).get();
}

StatusOr<std::byte*> InferenceSession::Arena(size_t bytes) {
  if (arena_ && arena_bytes_ >= bytes) return arena_.get();
  arena_.reset();
  arena_bytes_ = 0;
  StatusOr<kernels::DeviceBuffer> arena = device_->Allocate(bytes);
  if (!arena.ok()) return arena.status().WithContext("allocating the arena");
  arena_ = std::move(*arena);
  arena_bytes_ = bytes;
  return arena_.get();
}

void InferenceSession::ReleaseMemory() {
  arena_.reset();
  arena_bytes_ = 0;
  outputs_.Release();
}

StatusOr<std::vector<Tensor>> InferenceSession::Run(const std::map<std::string, Tensor>& inputs) {
  return Run(inputs, RunOptions{});
}

StatusOr<std::vector<Tensor>> InferenceSession::Run(const std::map<std::string, Tensor>& inputs,
                                                    const RunOptions& run) {
  std::map<std::string, TensorType> types;
  for (const auto& [name, t] : inputs) {
    if (t.empty()) return InvalidArgument("input '", name, "' is an empty tensor");
    types[name] = TensorType::Of(t.dtype(), t.dims());
  }
  std::map<std::string, Tensor> values;
  for (const std::string& name : shape_inputs_) {
    auto it = inputs.find(name);
    if (it == inputs.end()) continue;  // CheckInputTypes reports the missing input
    if (it->second.num_elements() > ir::kMaxPropagatedElements)
      return InvalidArgument("input '", name, "' decides output shapes but has ", it->second.num_elements(),
                             " elements (at most ", ir::kMaxPropagatedElements, ")");
    values[name] = it->second;
  }
  AMP_ASSIGN_OR_RETURN(auto counts, MeasureCounts(inputs, run));
  AMP_ASSIGN_OR_RETURN(CachedPlan * cached, PlanFor(types, values, counts));
  Plan& plan = cached->plan;
  AMP_ASSIGN_OR_RETURN(std::byte * arena, Arena(plan.peak_bytes));

  // Graph outputs get tensors of their own (from the pool: stale contents,
  // which the kernels overwrite).
  std::vector<Tensor> owned(plan.slots.size());
  for (size_t i = 0; i < plan.slots.size(); ++i) {
    if (plan.slots[i].storage != Storage::kOutput) continue;
    AMP_ASSIGN_OR_RETURN(owned[i], outputs_.Take(plan.slots[i].dtype, plan.slots[i].dims));
  }
  std::vector<const Tensor*> input_tensors(graph_->inputs().size(), nullptr);
  for (size_t i = 0; i < input_tensors.size(); ++i) {
    auto it = inputs.find(graph_->name(graph_->inputs()[i]));
    if (it != inputs.end()) input_tensors[i] = &it->second;
  }
  if (on_host()) {
    AMP_RETURN_IF_ERROR(PrepareViews(*cached, input_tensors, arena, owned));
    AMP_RETURN_IF_ERROR(Execute(*cached, run));
  } else {
    // The inputs go into the plan's device buffers, the kernels run there,
    // and the outputs come back into the host tensors.
    if (run.observer) return Unimplemented("the step observer reads host memory; it cannot watch a ", device_->Describe(), " run");
    if (!cached->device_io) AMP_RETURN_IF_ERROR(MakeDeviceSlots(*cached, /*io=*/true));
    std::vector<const Tensor*> device_inputs(input_tensors.size(), nullptr);
    for (size_t k = 0; k < plan.inputs.size(); ++k) {
      const int slot = plan.inputs[k];
      if (slot < 0 || !input_tensors[k]) continue;
      Tensor& dev = cached->device_slots[static_cast<size_t>(slot)];
      AMP_RETURN_IF_ERROR(device_->CopyToDevice(dev.raw(), input_tensors[k]->raw(), dev.nbytes(), run_context_));
      device_inputs[k] = &dev;
    }
    AMP_RETURN_IF_ERROR(PrepareViews(*cached, device_inputs, arena, cached->device_slots));
    AMP_RETURN_IF_ERROR(Execute(*cached, run));
    for (size_t i = 0; i < plan.slots.size(); ++i)
      if (plan.slots[i].storage == Storage::kOutput)
        AMP_RETURN_IF_ERROR(
            device_->CopyToHost(owned[i].raw(), cached->device_slots[i].raw(), owned[i].nbytes(), run_context_));
    AMP_RETURN_IF_ERROR(device_->Synchronize(run_context_));
  }

  std::vector<Tensor> outputs;
  outputs.reserve(plan.outputs.size());
  for (int o : plan.outputs) {
    const Slot& slot = plan.slots[o];
    if (slot.storage == Storage::kOutput) outputs.push_back(owned[o]);
    else if (slot.storage == Storage::kInput) outputs.push_back(inputs.at(slot.name).Clone());
    else outputs.push_back(slot.constant.Clone());
  }
  last_plan_ = &plan;
  return outputs;
}

Status InferenceSession::PrepareViews(CachedPlan& cp, const std::vector<const Tensor*>& inputs, std::byte* arena,
                                      const std::vector<Tensor>& slot_outputs) {
  Plan& plan = cp.plan;
  if (cp.views.empty() && !plan.slots.empty()) {
    cp.views.resize(plan.slots.size());
    for (size_t i = 0; i < plan.slots.size(); ++i) {
      const Slot& slot = plan.slots[i];
      if (slot.storage == Storage::kAbsent) continue;
      cp.views[i] = TensorView{nullptr, slot.dtype, slot.dims};
      if (slot.storage == Storage::kConstant) cp.views[i].data = const_cast<void*>(slot.constant.raw());
    }
    cp.contexts.resize(plan.steps.size());
    for (size_t s = 0; s < plan.steps.size(); ++s) {
      kernels::KernelContext& ctx = cp.contexts[s];
      for (int i : plan.steps[s].inputs) ctx.inputs.push_back(i >= 0 ? cp.views[i] : TensorView{});
      for (int o : plan.steps[s].outputs) ctx.outputs.push_back(cp.views[o]);
      ctx.run = &run_context_;
    }
  }
  for (size_t k = 0; k < plan.inputs.size(); ++k) {
    const int slot = plan.inputs[k];
    if (slot >= 0) cp.views[slot].data = inputs[k] ? const_cast<void*>(inputs[k]->raw()) : nullptr;
  }
  for (size_t i = 0; i < plan.slots.size(); ++i) {
    const Slot& slot = plan.slots[i];
    if (slot.storage == Storage::kArena) cp.views[i].data = arena + plan.buffers[slot.buffer].offset;
    else if (slot.storage == Storage::kOutput) cp.views[i].data = const_cast<void*>(slot_outputs[i].raw());
    else if (slot.storage == Storage::kConstant && !cp.device_slots.empty()) cp.views[i].data = cp.device_slots[i].raw();
  }
  for (size_t i = 0; i < plan.slots.size(); ++i)  // views of inputs, constants and outputs: their memory
    if (plan.slots[i].storage == Storage::kAlias) cp.views[i].data = cp.views[plan.slots[i].alias_of].data;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& step = plan.steps[s];
    kernels::KernelContext& ctx = cp.contexts[s];
    for (size_t j = 0; j < step.inputs.size(); ++j)
      if (step.inputs[j] >= 0) ctx.inputs[j].data = cp.views[step.inputs[j]].data;
    for (size_t j = 0; j < step.outputs.size(); ++j) ctx.outputs[j].data = cp.views[step.outputs[j]].data;
    ctx.scratch = step.scratch_buffer >= 0 ? arena + plan.buffers[step.scratch_buffer].offset : nullptr;
  }
  return Status::Ok();
}

Status InferenceSession::Execute(CachedPlan& cp, const RunOptions& run) {
  omp_set_num_threads(threads_);
  for (size_t s = 0; s < cp.plan.steps.size(); ++s) {
    Step& step = cp.plan.steps[s];
    kernels::KernelContext& ctx = cp.contexts[s];
    ctx.seed = run.seed;
    const auto start = opts_.profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    Status status = step.kernel->Run(ctx);
    if (status.ok() && opts_.profile && !on_host()) status = device_->Synchronize(run_context_);
    if (!status.ok()) return status.WithContext(StrCat("while running ", step.node->Describe()));
    if (opts_.profile)
      profile_.Add(step, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    if (run.observer) run.observer(*step.node, ctx.outputs);
  }
  return Status::Ok();
}

Status InferenceSession::MakeDeviceSlots(CachedPlan& cp, bool io) {
  const Plan& plan = cp.plan;
  const bool constants = cp.device_slots.empty();
  cp.device_slots.resize(plan.slots.size());
  for (size_t i = 0; i < plan.slots.size(); ++i) {
    const Slot& slot = plan.slots[i];
    const bool want = slot.storage == Storage::kConstant ? constants
                                                         : io && (slot.storage == Storage::kInput ||
                                                                  slot.storage == Storage::kOutput);
    if (!want) continue;
    AMP_ASSIGN_OR_RETURN(size_t bytes, Tensor::NBytes(slot.dtype, slot.dims));
    AMP_ASSIGN_OR_RETURN(kernels::DeviceBuffer buffer, device_->Allocate(std::max<size_t>(bytes, 1)));
    AMP_ASSIGN_OR_RETURN(cp.device_slots[i], Tensor::OverBuffer(slot.dtype, slot.dims, std::move(buffer)));
    if (slot.storage == Storage::kConstant)
      AMP_RETURN_IF_ERROR(device_->CopyToDevice(cp.device_slots[i].raw(), slot.constant.raw(), bytes, run_context_));
  }
  AMP_RETURN_IF_ERROR(device_->Synchronize(run_context_));
  cp.device_io = cp.device_io || io;
  return Status::Ok();
}

Status InferenceSession::BindInput(const std::string& name, const Tensor& tensor) {
  const int index = InputIndex(name);
  if (index < 0) return InvalidArgument("the model has no input '", name, "' to bind");
  const ir::DType want = graph_->type(graph_->inputs()[static_cast<size_t>(index)]).dtype;
  if (tensor.dtype() != want)
    return InvalidArgument("input '", name, "' is ", ir::DTypeName(want), "; cannot bind a ",
                           ir::DTypeName(tensor.dtype()), " tensor to it");
  BindInput(index, tensor);
  return Status::Ok();
}

int InferenceSession::InputIndex(const std::string& name) const {
  const auto& inputs = graph_->inputs();
  for (size_t i = 0; i < inputs.size(); ++i)
    if (graph_->name(inputs[i]) == name) return static_cast<int>(i);
  return -1;
}

StatusOr<InferenceSession::CachedPlan*> InferenceSession::BoundPlan(const RunOptions& run) {
  std::map<std::string, int64_t> counts;
  if (probe_) {
    std::map<std::string, Tensor> inputs;
    for (size_t k = 0; k < bound_.size(); ++k) {
      if (bound_[k].empty())
        return InvalidArgument("RunBound: input '", graph_->name(graph_->inputs()[k]), "' is not bound");
      inputs[graph_->name(graph_->inputs()[k])] = bound_[k];
    }
    AMP_ASSIGN_OR_RETURN(counts, MeasureCounts(inputs, run));
  }
  if (bound_plan_ && bound_plan_->counts == counts) {
    const Plan& plan = bound_plan_->plan;
    bool same = shape_inputs_.empty();
    for (size_t k = 0; same && k < bound_.size(); ++k) {
      const int slot = plan.inputs[k];
      same = slot < 0 || (bound_[k].dtype() == plan.slots[slot].dtype && bound_[k].dims() == plan.slots[slot].dims);
    }
    if (same) return bound_plan_;
  }
  std::map<std::string, TensorType> types;
  std::map<std::string, Tensor> values;
  for (size_t k = 0; k < bound_.size(); ++k) {
    const std::string& name = graph_->name(graph_->inputs()[k]);
    if (bound_[k].empty()) return InvalidArgument("RunBound: input '", name, "' is not bound");
    types[name] = TensorType::Of(bound_[k].dtype(), bound_[k].dims());
    if (std::find(shape_inputs_.begin(), shape_inputs_.end(), name) != shape_inputs_.end()) values[name] = bound_[k];
  }
  AMP_ASSIGN_OR_RETURN(bound_plan_, PlanFor(types, values, counts));
  return bound_plan_;
}

Status InferenceSession::MakeBoundOutputs(CachedPlan& cp) {
  const Plan& plan = cp.plan;
  cp.slot_outputs.assign(plan.slots.size(), Tensor());
  cp.outputs.assign(plan.outputs.size(), Tensor());
  for (size_t k = 0; k < plan.outputs.size(); ++k) {
    const int o = plan.outputs[k];
    const Slot& slot = plan.slots[o];
    if (slot.storage != Storage::kOutput) continue;
    if (cp.slot_outputs[o].empty()) {
      for (const auto& [key, other] : plans_)  // another plan's buffer for this output, if it fits
        if (other.get() != &cp && k < other->outputs.size() && other->outputs[k].dtype() == slot.dtype &&
            other->outputs[k].dims() == slot.dims) {
          cp.slot_outputs[o] = other->outputs[k];
          break;
        }
    }
    if (cp.slot_outputs[o].empty()) {
      AMP_ASSIGN_OR_RETURN(cp.slot_outputs[o], device_tensors().Zeros(slot.dtype, slot.dims));
    }
    cp.outputs[k] = cp.slot_outputs[o];
  }
  return Status::Ok();
}

StatusOr<const std::vector<Tensor>*> InferenceSession::RunBound(const RunOptions& run) {
  if (run.observer && !on_host())
    return Unimplemented("the step observer reads host memory; it cannot watch a ", device_->Describe(), " run");
  AMP_ASSIGN_OR_RETURN(CachedPlan * cached, BoundPlan(run));
  Plan& plan = cached->plan;
  AMP_ASSIGN_OR_RETURN(std::byte * arena, Arena(plan.peak_bytes));
  if (!on_host() && cached->device_slots.empty()) AMP_RETURN_IF_ERROR(MakeDeviceSlots(*cached, /*io=*/false));
  if (cached->outputs.size() != plan.outputs.size()) AMP_RETURN_IF_ERROR(MakeBoundOutputs(*cached));
  AMP_RETURN_IF_ERROR(PrepareViews(*cached, bound_inputs_, arena, cached->slot_outputs));
  AMP_RETURN_IF_ERROR(Execute(*cached, run));
  // Outputs that no step computes: the bound input or the constant itself.
  for (size_t k = 0; k < plan.outputs.size(); ++k) {
    const Slot& slot = plan.slots[plan.outputs[k]];
    if (slot.storage == Storage::kInput) cached->outputs[k] = bound_[static_cast<size_t>(InputIndex(slot.name))];
    else if (slot.storage == Storage::kConstant)
      cached->outputs[k] = on_host() ? slot.constant : cached->device_slots[plan.outputs[k]];
  }
  last_plan_ = &plan;
  return &cached->outputs;
}

}  // namespace amptrain::executor
