// InferenceSession: runs a graph on concrete inputs.
//
//   AMP_ASSIGN_OR_RETURN(auto session, InferenceSession::Create(std::move(graph)));
//   AMP_ASSIGN_OR_RETURN(std::vector<ir::Tensor> outs, session->Run({{"x", x}}));
//
// Plans (executor/plan.h) are built per input-shape signature and cached, so a
// new batch size re-plans once and later runs with it reuse the plan. All
// plans share one arena, sized for the largest run so far and allocated on
// the session's device (kernels/device.h): a training epoch's shorter last
// batch does not hold a second arena. A graph whose inputs are all static is
// planned in Create, so that unsupported ops fail there. Run(inputs) returns
// fresh tensors owned by the caller; when the same value is listed twice as a
// graph output, both entries share one buffer. Run is not thread-safe: one
// Run at a time per session.
//
// Persistent buffers (training): the trainer binds the tensors that live
// across steps (parameters, their low copies, BN statistics, the batch and
// the loss scale) once, and RunBound() reads them in place and writes the
// outputs into the session's own buffers, one set per plan, kept from run to
// run (outputs of equal dtype and dims, such as the gradients, share one
// buffer across plans). After the first run of a plan a bound run allocates
// nothing: no map, no tensor, no view; every kernel call gets the session's
// RunContext.
//
//   AMP_RETURN_IF_ERROR(session->BindInput("w", w));           // once
//   AMP_ASSIGN_OR_RETURN(const std::vector<ir::Tensor>* outs, session->RunBound());
//
// Value-dependent shapes: a NonZero whose input is not a constant has an
// output size only the data tells. For such graphs Create also makes a
// probe, a session of the nodes those inputs depend on, whose outputs are
// the inputs of the NonZeros. Every Run and RunBound first runs the probe
// on the same inputs and seed, counts the nonzero elements, and plans for
// those counts (they are part of the plan's cache key, beside the input
// shapes); the NonZero kernel checks that its input still has the count.
// The probe's nodes thus run twice per step, which is nothing for a mask of
// token ids (BART's <eos> selection). Such graphs run on host memory only.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "executor/device_tensors.h"
#include "executor/output_pool.h"
#include "executor/plan.h"
#include "executor/profile.h"
#include "ir/graph.h"
#include "ir/status.h"
#include "ir/tensor.h"
#include "kernels/kernel.h"

namespace amptrain::executor {

struct SessionOptions {
  kernels::DeviceKind device = kernels::DeviceKind::kCpu;
  int device_index = 0;     // cuda:N
  // A device already open (the trainer's, or kernels::StagedCpuDevice() in
  // tests); when set it wins over `device` and `device_index`.
  std::shared_ptr<kernels::Device> device_instance;
  int threads = 0;          // 0 = all cores
  bool training = false;    // kernels in training mode (Dropout drops, BN uses batch statistics)
  std::string kernel_impl;  // "" = best, "reference" = reference kernels only
  std::set<ir::OpKind> reference_ops;  // PlanOptions::reference_ops
  // Times every step into profile() (executor/profile.h).
  bool profile = false;
  // Runs the inference graph optimizations (executor/optimize.h) on a clone of
  // the graph; graph() stays the caller's. Ignored (off) when `training`.
  bool optimize = true;
  // Cast fusion for storage-only kernels (executor/plan.h); off only to
  // compare against it.
  bool fuse_widened_casts = true;
  // Channels-last activations between kernels that take them (executor/plan.h);
  // off only to compare against it.
  bool channels_last = true;
  // Winograd for the inference convolutions that take it (KernelInit::winograd).
  bool winograd = true;
};

// Called after each executed node with its output views (absent optional
// outputs have data == nullptr); the views alias the arena and are valid only
// during the call. The trainer's overflow provenance uses it.
using StepObserver = std::function<void(const ir::Node& node, const std::vector<ir::TensorView>& outputs)>;

// Per-run options.
struct RunOptions {
  uint64_t seed = 0;  // seed of random kernels for this run (kernels::KernelContext::seed)
  StepObserver observer;  // empty: none
};

class InferenceSession {
 public:
  static StatusOr<std::unique_ptr<InferenceSession>> Create(std::unique_ptr<ir::Graph> graph,
                                                            SessionOptions opts = {});

  // Inputs by graph input name: all required, no others, dtype exactly the
  // model's, shape fitting its static dims. Outputs in graph output order.
  StatusOr<std::vector<ir::Tensor>> Run(const std::map<std::string, ir::Tensor>& inputs);
  StatusOr<std::vector<ir::Tensor>> Run(const std::map<std::string, ir::Tensor>& inputs, const RunOptions& run);

  // Graph input `name` is `tensor` at every later bound run, read in place:
  // its values may change between runs (the caller writes them), and binding
  // a tensor of other dims re-plans at the next run. Checks the name and the
  // dtype (exactly the model's) now, the shape at the run.
  Status BindInput(const std::string& name, const ir::Tensor& tensor);
  // The same by input position (graph().inputs() order), for callers that
  // rebind every step: no lookup, no check until the run.
  int InputIndex(const std::string& name) const;  // -1 when no input has that name
  void BindInput(int index, const ir::Tensor& tensor) { bound_[static_cast<size_t>(index)] = tensor; }
  // A run on the bound inputs (every input must be bound). The outputs, in
  // graph output order, are the session's buffers: valid until the next run
  // and overwritten by it, so a caller that keeps a value copies it. On a
  // device without host memory the bound inputs are device tensors (made
  // with device_tensors()), the outputs are too, and the run is queued on
  // run_context()'s stream (device_tensors().Download synchronises).
  StatusOr<const std::vector<ir::Tensor>*> RunBound(const RunOptions& run = {});

  // The device the session runs on, and the context of its runs: state that
  // lives across runs is made and copied with device_tensors().
  const std::shared_ptr<kernels::Device>& device() const { return device_; }
  const kernels::RunContext& run_context() const { return run_context_; }
  DeviceTensors device_tensors() const { return DeviceTensors{device_, &run_context_}; }

  // The caller's graph (never optimized); its outputs match Run's.
  const ir::Graph& graph() const { return *graph_; }
  // The graph that runs: graph() or its optimized clone.
  const ir::Graph& run_graph() const { return run_graph_ ? *run_graph_ : *graph_; }
  // Step timings since creation or the last reset (SessionOptions::profile).
  Profile& profile() { return profile_; }
  const Profile& profile() const { return profile_; }
  // The plan of the latest successful Run (or of Create's eager plan); nullptr before.
  const Plan* last_plan() const { return last_plan_; }
  int threads() const { return threads_; }  // the kernels' thread count (resolved: >= 1)
  // Frees the arena (the plans stay; the next Run allocates it again). The
  // trainer calls it on its training session before evaluating, so that the
  // training and the evaluation arenas are never held at once.
  void ReleaseMemory();

 private:
  struct CachedPlan {
    Plan plan;
    std::map<std::string, int64_t> counts;  // the value-dependent sizes it was planned for
    // Built at the plan's first run, then only their data pointers change:
    // a view per slot and a kernel context per step.
    std::vector<ir::TensorView> views;
    std::vector<kernels::KernelContext> contexts;
    std::vector<ir::Tensor> slot_outputs;  // RunBound's buffers, per kOutput slot
    std::vector<ir::Tensor> outputs;       // RunBound's outputs, graph output order
    // On a device without host memory, per slot, made once: the constants
    // uploaded, and (for Run) device buffers that the inputs are copied into
    // and the outputs copied out of (tensors over device memory, never read
    // here). Bound runs need only the constants.
    std::vector<ir::Tensor> device_slots;
    bool device_io = false;  // device_slots has Run's input and output buffers
  };
  static constexpr size_t kMaxCachedPlans = 8;

  InferenceSession(std::unique_ptr<ir::Graph> graph, SessionOptions opts);
  // probe_ and counted_, where run_graph() has value-dependent nodes.
  Status MakeProbe();
  // `values`: the inputs named by shape_inputs_ (see executor::ShapeInputs).
  // `counts`: the value-dependent sizes (NonZero counts, by output name).
  StatusOr<CachedPlan*> PlanFor(const std::map<std::string, ir::TensorType>& types,
                                const std::map<std::string, ir::Tensor>& values,
                                const std::map<std::string, int64_t>& counts = {});
  // The value-dependent sizes for these inputs: the probe's run (empty
  // without value-dependent nodes).
  StatusOr<std::map<std::string, int64_t>> MeasureCounts(const std::map<std::string, ir::Tensor>& inputs,
                                                         const RunOptions& run);
  // The arena, at least `bytes` long: grown by freeing the old one first.
  StatusOr<std::byte*> Arena(size_t bytes);
  // The plan for the bound inputs' types (the previous one while they match).
  StatusOr<CachedPlan*> BoundPlan(const RunOptions& run);
  // Points the views of `cp` at `inputs` (graph input order), the arena and
  // `slot_outputs` (a tensor per kOutput slot), building them at first use.
  Status PrepareViews(CachedPlan& cp, const std::vector<const ir::Tensor*>& inputs, std::byte* arena,
                      const std::vector<ir::Tensor>& slot_outputs);
  // Runs every step of `cp` on its prepared views.
  Status Execute(CachedPlan& cp, const RunOptions& run);
  // cp.device_slots: the constants uploaded (once), and with `io` the input
  // and output buffers allocated.
  Status MakeDeviceSlots(CachedPlan& cp, bool io);
  bool on_host() const { return device_->host_memory(); }
  // RunBound's per-slot output buffers of `cp`: shared with another plan's
  // output of the same position, dtype and dims, else allocated once.
  Status MakeBoundOutputs(CachedPlan& cp);

  std::unique_ptr<ir::Graph> graph_;
  std::unique_ptr<ir::Graph> run_graph_;  // optimized clone; null when not optimizing
  SessionOptions opts_;
  std::shared_ptr<kernels::Device> device_;
  kernels::RunContext run_context_;
  Profile profile_;
  int threads_ = 1;
  std::vector<std::string> shape_inputs_;                     // inputs whose values decide shapes
  // Value-dependent shapes: the outputs of the NonZero nodes whose count only
  // the data tells (ValueDependentNodes), and the probe, a session of the
  // nodes their inputs depend on, whose outputs are those inputs.
  std::vector<std::string> counted_;
  std::unique_ptr<InferenceSession> probe_;
  std::map<std::string, std::unique_ptr<CachedPlan>> plans_;  // by input-shape (and shape-input value) signature
  std::vector<std::string> plan_order_;                       // oldest first, for eviction
  const Plan* last_plan_ = nullptr;
  std::shared_ptr<std::byte> arena_;
  size_t arena_bytes_ = 0;
  OutputPool outputs_;  // the graph outputs' buffers, reused from run to run
  std::vector<ir::Tensor> bound_;                  // per graph input; empty = unbound
  CachedPlan* bound_plan_ = nullptr;               // the plan of the last bound run
  std::vector<const ir::Tensor*> bound_inputs_;    // &bound_[k], for PrepareViews (bound_ never resizes)
};

}  // namespace amptrain::executor
