#include "executor/session.h"

#include <omp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

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
}

StatusOr<std::unique_ptr<InferenceSession>> InferenceSession::Create(std::unique_ptr<ir::Graph> graph,
                                                                     SessionOptions opts) {
  if (!graph) return InvalidArgument("no graph given");
  if (opts.device != kernels::DeviceKind::kCpu)
    return Unimplemented("the inference session runs on the cpu only (", kernels::DeviceKindName(opts.device),
                         " requested)");
  if (opts.threads < 0) return InvalidArgument("threads must be >= 0, got ", opts.threads);
  AMP_RETURN_IF_ERROR(ir::Verify(*graph));
  std::unique_ptr<InferenceSession> session(new InferenceSession(std::move(graph), std::move(opts)));
  if (session->opts_.optimize && !session->opts_.training) {
    std::unique_ptr<ir::Graph> clone = session->graph_->Clone();
    AMP_ASSIGN_OR_RETURN(bool changed, OptimizeForInference(*clone));
    if (changed) session->run_graph_ = std::move(clone);
  }
  session->shape_inputs_ = ShapeInputs(session->run_graph());
  if (AllInputsStatic(*session->graph_) && session->shape_inputs_.empty()) {
    std::map<std::string, TensorType> types;
    for (ir::Value v : session->graph_->inputs()) types[session->graph_->name(v)] = session->graph_->type(v);
    AMP_ASSIGN_OR_RETURN(CachedPlan * cached, session->PlanFor(types, {}));
    session->last_plan_ = &cached->plan;
  }
  return session;
}

StatusOr<InferenceSession::CachedPlan*> InferenceSession::PlanFor(const std::map<std::string, TensorType>& types,
                                                                  const std::map<std::string, Tensor>& values) {
  std::string key = Signature(types, values);
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second.get();

  PlanOptions options;
  options.device = opts_.device;
  options.kernel_impl = opts_.kernel_impl;
  options.training = opts_.training;
  options.threads = threads_;
  options.fuse_widened_casts = opts_.fuse_widened_casts;
  options.channels_last = opts_.channels_last;
  omp_set_num_threads(threads_);  // oneDNN primitives fix their thread count when created
  AMP_ASSIGN_OR_RETURN(Plan plan, BuildPlan(run_graph(), types, options, &values));
  auto cached = std::make_unique<CachedPlan>();
  cached->plan = std::move(plan);
  AMP_RETURN_IF_ERROR(Arena(cached->plan.peak_bytes).status());
  spdlog::debug("planned for {}: {} kernels, arena {} bytes", key, cached->plan.steps.size(), cached->plan.peak_bytes);

  if (plans_.size() >= kMaxCachedPlans) {
    if (last_plan_ == &plans_[plan_order_.front()]->plan) last_plan_ = nullptr;
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
  arena_ = ir::AllocateAligned(bytes);
  if (!arena_) return Status(StatusCode::kOutOfRange, StrCat("out of memory allocating an arena of ", bytes, " bytes"));
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
  AMP_ASSIGN_OR_RETURN(CachedPlan * cached, PlanFor(types, values));
  Plan& plan = cached->plan;
  AMP_ASSIGN_OR_RETURN(std::byte * arena, Arena(plan.peak_bytes));

  // Views of every slot; graph outputs get tensors of their own (from the
  // pool: stale contents, which the kernels overwrite).
  std::vector<TensorView> views(plan.slots.size());
  std::vector<Tensor> owned(plan.slots.size());
  for (size_t i = 0; i < plan.slots.size(); ++i) {
    const Slot& slot = plan.slots[i];
    switch (slot.storage) {
      case Storage::kInput: views[i] = TensorView::Of(inputs.at(slot.name)); break;
      case Storage::kConstant: views[i] = TensorView::Of(slot.constant); break;
      case Storage::kArena: views[i] = TensorView{arena + plan.buffers[slot.buffer].offset, slot.dtype, slot.dims}; break;
      case Storage::kOutput: {
        AMP_ASSIGN_OR_RETURN(owned[i], outputs_.Take(slot.dtype, slot.dims));
        views[i] = TensorView::Of(owned[i]);
        break;
      }
      case Storage::kAbsent: break;
    }
  }

  omp_set_num_threads(threads_);
  for (Step& step : plan.steps) {
    kernels::KernelContext ctx;
    ctx.seed = run.seed;
    for (int i : step.inputs) ctx.inputs.push_back(i >= 0 ? views[i] : TensorView{});
    for (int o : step.outputs) ctx.outputs.push_back(views[o]);
    if (step.scratch_buffer >= 0) ctx.scratch = arena + plan.buffers[step.scratch_buffer].offset;
    const auto start = std::chrono::steady_clock::now();
    Status status = step.kernel->Run(ctx);
    if (!status.ok()) return status.WithContext(StrCat("while running ", step.node->Describe()));
    if (opts_.profile)
      profile_.Add(step, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    if (run.observer) run.observer(*step.node, ctx.outputs);
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

}  // namespace amptrain::executor
