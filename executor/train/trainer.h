// Trainer: fp32 or mixed-precision training of an imported classifier (or
// regressor), one step at a time.
//
//   AMP_ASSIGN_OR_RETURN(auto trainer, Trainer::Create(*model, config));
//   AMP_ASSIGN_OR_RETURN(StepResult r, trainer->Step(images, labels));   // forward+backward+update
//   AMP_ASSIGN_OR_RETURN(EvalResult e, trainer->Evaluate(test_batches));
//   AMP_ASSIGN_OR_RETURN(auto trained, trainer->TrainedModel());          // same graph, trained values
//
// Create builds the training graph once (executor/train/train_graph.h) and
// one InferenceSession in training mode; it plans once per batch shape and
// reuses that plan for every later step. The state lives outside the graph:
// fp32 master parameters and BN running statistics (by initializer name, deep
// copies of the model's values), the optimizer and its slots, the step count.
//
// A step: run the session with {images, labels, params..., running stats...}
// (tensors passed by handle, no copies) and the run seed
// StepSeed(config.seed, step) for Dropout -> loss, logits, gradients,
// running-stat updates -> optional clipping by global norm -> optimizer step
// with the scheduled rate LrSchedule::At(lr_step) -> the running-stat updates
// become the new running statistics. Kernels are deterministic, so a step is
// a pure function of (state, batch, step): a run resumed from a checkpoint
// reproduces the uninterrupted one bitwise.
//
// Mixed precision (config.graph.amp at O1/O2): the training graph computes
// in the policy's low type with fp32 master parameters (O3: parameters and
// BN statistics stored in the low type, updated in fp32 arithmetic and
// rounded once per step; evaluation and export read them widened); the backward seed is
// the loss_scale input. With a loss scaler (config.loss_scaler) the step
// feeds its scale; the registry's GradCheck kernel reads every gradient once
// for inf/NaN (GradientChecker), the fused step kernels unscale, clip and
// update in one pass per parameter group (Optimizer::GradScaling), and an
// overflowing step is skipped: no parameter,
// optimizer moment or BN running statistic changes, the LR schedule does not
// advance (it counts applied steps), and the scaler backs off. Gradient
// clipping sees the unscaled gradients. Without a scaler a non-finite
// gradient is never applied either: the step is skipped with a warning.
//
// Errors: a model that does not fit (see train_graph.h), a batch whose type
// does not fit the model's input, labels out of range (the loss kernel names
// the label), a non-finite loss without loss scaling (the step is not
// applied), a scaler stuck overflowing (LossScalerConfig::max_consecutive_overflows):
// that error names the first node producing inf/NaN and the policy line
// that keeps it in fp32 (executor/train/overflow.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "executor/data/dataset.h"
#include "executor/session.h"
#include "executor/train/accuracy.h"
#include "executor/train/checkpoint.h"
#include "executor/train/loss_scaler.h"
#include "executor/train/lr_schedule.h"
#include "executor/train/optimizer.h"
#include "executor/train/overflow.h"
#include "executor/train/train_graph.h"
#include "ir/graph.h"
#include "ir/status.h"

namespace amptrain::executor::train {

struct TrainConfig {
  TrainGraphOptions graph;      // loss, label smoothing, num_classes (checked against the model)
  OptimizerConfig optimizer;
  LrScheduleConfig schedule;
  double clip_grad_norm = 0.0;  // > 0: clip gradients to this global L2 norm
  uint64_t seed = 0;            // Dropout masks: StepSeed(seed, step)
  int threads = 0;              // 0 = all cores
  std::string kernel_impl;      // "" = best kernels, "reference" = reference kernels only
  bool channels_last = true;    // SessionOptions::channels_last (off only to measure against it)
  // Loss scaling: unset = none (scale 1); dynamic = false is a static scale.
  std::optional<LossScalerConfig> loss_scaler;
  bool profile = false;         // time every kernel of the training step (profile())
  // Observe every step for the first node producing inf/NaN (StepResult::site).
  // Without it, provenance runs only when needed: a skipped step at the
  // scaler's floor, or the stuck-scale error (one observed re-run of the step).
  bool debug_overflow = false;
  // Restore() refuses a checkpoint written under another precision plan unless set.
  bool force_plan_mismatch = false;
  // Low copies of the master weights for the forward, kept by the optimizer
  // step (TrainGraphOptions::low_weights); unset: where the CPU computes the
  // low type natively (bf16 faster than fp32).
  std::optional<bool> low_weights;
  // Fault injection (tests): called with each step's gradients, as backward
  // wrote them (scaled), before the all-finite check; it may change values.
  // On a device the hook gets host copies, copied back after it.
  std::function<void(int64_t step, std::map<std::string, ir::Tensor>& grads)> gradient_hook;
  // Where the step runs and the state lives (kernels::OpenDevice); null: the
  // CPU. On a device without host memory (a GPU) the parameters, low copies,
  // BN statistics, optimizer slots, loss scale and batch are device buffers:
  // a step uploads the batch, runs forward, backward, the all-finite check
  // and the optimizer there, and copies back the loss, the logits (for
  // accuracy) and the check's 16 bytes per gradient. Checkpoints, export and
  // evaluation read host copies (HostModelState, HostOptimizerState).
  std::shared_ptr<kernels::Device> device;
};

struct StepResult {
  double loss = 0.0;      // the mean over `labelled`
  int64_t correct = 0;    // top-1 hits in the batch (cross-entropy only)
  int64_t count = 0;      // batch size
  int64_t labelled = 0;   // what the loss averages: the labels that are not ignore_index
                          // (per sample, token or pixel); MSE: the batch size
  float lr = 0.0f;      // the rate applied
  double grad_norm = -1.0;  // the global norm before clipping; -1 when not clipping
  bool applied = true;      // false: inf/NaN gradients, the step changed nothing
  float loss_scale = 1.0f;  // the scale this step ran with
  int64_t skipped_steps = 0;  // steps skipped so far in this run (and restored ones)
  std::string overflow;     // the first non-finite gradient of a skipped step
  std::optional<OverflowSite> site;  // where inf/NaN first appeared, when observed
};

struct EvalResult {
  double loss = 0.0;      // mean over the labels (per sample, token or pixel) that are not ignore_index
  double accuracy = 0.0;  // top-1 over the same labels, in [0, 1] (cross-entropy only)
  int64_t count = 0;      // samples
  int64_t labelled = 0;   // labels counted (= count for one label per sample)
};

// The per-step Dropout seed: a splitmix64 hash of (seed, step).
uint64_t StepSeed(uint64_t seed, int64_t step);

class Trainer {
 public:
  static StatusOr<std::unique_ptr<Trainer>> Create(const ir::Graph& model, const TrainConfig& config);

  // One training step on a batch: a tensor per data input of the model (by
  // name; "" for the only one), each converted to the input's dtype
  // (float32 -> fp16/bf16, int64 -> int32, ...), labels int64 [B]
  // (cross-entropy) or float targets (mse). A batch that does not feed
  // every data input exactly once is an error naming the inputs.
  StatusOr<StepResult> Step(const data::Batch& batch);
  // The same for a model with one data input: images float32 [B, ...].
  StatusOr<StepResult> Step(const ir::Tensor& images, const ir::Tensor& labels);
  // Whether Step would take a batch like this one (its inputs' names and
  // dtypes): the error Step would give, before any step runs.
  Status CheckInputs(const data::Batch& batch) const;

  // Loss and top-1 accuracy over the rest of the current epoch of `batches`
  // (BN uses running statistics, Dropout is off), with the current state.
  StatusOr<EvalResult> Evaluate(data::BatchIterator& batches);

  int64_t step() const { return step_; }
  // The loss scaler, nullptr without loss scaling.
  const LossScaler* scaler() const { return scaler_ ? &*scaler_ : nullptr; }
  // What the AMP passes did to the training graph; nullptr in fp32.
  const amp::Report* amp_report() const { return train_.amp_report ? &*train_.amp_report : nullptr; }
  // SHA-256 of the precision plan (every node's dtype); "" in fp32.
  const std::string& precision_plan_hash() const { return plan_hash_; }
  int64_t lr_step() const { return lr_step_; }
  const TrainConfig& config() const { return config_; }
  const Optimizer& optimizer() const { return *optimizer_; }
  const std::vector<std::string>& param_names() const { return train_.params; }
  // The model output the loss reads, and the model's data inputs.
  const std::string& logits_output() const { return train_.logits; }
  const std::vector<std::string>& data_inputs() const { return train_.data_inputs; }
  // Every initializer: trained, frozen, BN statistic, or untrained and why (train_graph.h).
  const ParameterReport& parameter_report() const { return train_.parameters; }
  // The parameters (device tensors when training on a device: dims and
  // dtypes only; HostModelState for values).
  const std::map<std::string, ir::Tensor>& params() const { return params_; }
  // Parameters and BN running statistics by initializer name (shared
  // buffers; device tensors when training on a device).
  std::map<std::string, ir::Tensor> ModelState() const;
  // ModelState() on the host: the same buffers on the CPU, copies from a device.
  StatusOr<std::map<std::string, ir::Tensor>> HostModelState() const;
  // The optimizer's slots on the host (Optimizer::HostStateTensors).
  StatusOr<std::map<std::string, ir::Tensor>> HostOptimizerState() const { return optimizer_->HostStateTensors(); }
  // HostModelState() with fp16/bf16 tensors (O3) widened to fp32 exactly:
  // what export and the fp32 evaluation graph read.
  StatusOr<std::map<std::string, ir::Tensor>> Fp32ModelState() const;
  // Where the step runs (the training session's device).
  const kernels::Device& device() const { return *session_->device(); }

  // Replaces the whole state (parameters, running statistics, optimizer slots
  // and step, step count, lr position) from a checkpoint after checking that
  // its tensors fit the model (CheckCompatible); on error nothing changes.
  Status Restore(const LoadedCheckpoint& ckpt);
  // The checkpoint state of this trainer (step, lr_step, optimizer_step);
  // the caller adds epoch, data cursor and config.
  TrainerState State() const;

  // The imported model with the trained parameters and running statistics;
  // with `inference`, in inference mode (ToInferenceMode) for deployment.
  StatusOr<std::unique_ptr<ir::Graph>> TrainedModel(bool inference = false) const;
  // Kernel timings of the training steps (TrainConfig::profile).
  const Profile& profile() const { return session_->profile(); }
  void ResetProfile() { session_->profile().Reset(); }
  // The training plan of the latest step (kernels and their implementations), nullptr before.
  const Plan* train_plan() const { return session_->last_plan(); }

 private:
  Trainer() = default;
  StatusOr<std::map<std::string, ir::Tensor>> Feeds(const TrainGraph& g, const data::Batch& batch,
                                                    float loss_scale = 1.0f) const;
  Status CreateEvalSession();
  // Keeps the imported values of the trained parameters once, not twice
  // (4 bytes per parameter: 17 MB for SimpleCNN, 45 MB for ResNet-18):
  // model_'s initializer of an fp32 master shares the master's buffer, and
  // one whose parameter is stored low (O3) loses its fp32 value. Every use
  // of model_ puts the trained state in those places (export, evaluation),
  // so what they hold between steps is never read. Called whenever params_
  // gets new buffers (Create, Restore).
  void ShareModelWeights();
  // Re-runs the step's forward and backward (on the inputs still bound) with
  // an observer: where inf/NaN first appeared.
  StatusOr<std::optional<OverflowSite>> Diagnose(uint64_t seed);
  // Binds the step's inputs to the training session (InferenceSession::
  // BindInput): the state (parameters, low copies, statistics: their current
  // buffers, so a Restore needs no other call), the loss scale and the batch.
  // A batch already in the inputs' dtypes and layouts is read in place; one
  // that is not (or names its inputs otherwise) goes through BatchFeeds'
  // conversions and checks.
  Status BindStep(const data::Batch& batch, float loss_scale);
  // The session input positions and gradient outputs of state_bindings_,
  // data_input_index_, grads_ (once, after the session is made).
  Status PrepareBindings();
  // Drops the batch's bindings after a step, so that the batch iterator can
  // write the next batch into the same buffers.
  void UnbindBatch();
  // On a device: the tensors of `feeds` (a data input, the labels) copied into
  // device buffers kept per input and reused while dims and dtype stay.
  StatusOr<const ir::Tensor*> Staged(size_t slot, const ir::Tensor& host);
  // The model's state as the training graph reads it (params_, stats_,
  // low_weights_) from host values: on the device, uploaded.
  Status SetState(const std::map<std::string, ir::Tensor>& params, const std::map<std::string, ir::Tensor>& stats);
  // The step's statistics updates (graph outputs, fp32) into stats_.
  Status StoreStats(const std::vector<ir::Tensor>& outs);

  TrainConfig config_;
  std::unique_ptr<ir::Graph> model_;            // the imported model, for export and evaluation;
                                                // its trained parameters' values are params_ (ShareModelWeights)
  TrainGraph train_, eval_;                     // names (their graphs moved into the sessions)
  std::unique_ptr<InferenceSession> session_, eval_session_;
  std::map<std::string, ir::TensorType> input_types_;  // data input -> declared type (the same in both graphs)
  std::map<std::string, int> out_index_;        // training graph output name -> index
  std::map<std::string, int> eval_out_index_;
  std::map<std::string, ir::Tensor> params_;    // fp32 masters
  std::map<std::string, ir::Tensor> stats_;     // BN running statistics
  std::map<std::string, ir::Tensor> low_weights_;  // fp16/bf16 copies of masters, by param (low_weights)
  // What each step binds, by session input position (BindStep).
  struct StateBinding {
    int input = -1;
    const ir::Tensor* tensor = nullptr;  // a value of params_, stats_ or low_weights_
  };
  std::vector<StateBinding> state_bindings_;
  std::vector<int> data_input_index_;  // per train_.data_inputs
  int target_index_ = -1, loss_scale_index_ = -1;
  ir::Tensor loss_scale_;               // the f32 scalar bound to loss_scale
  ir::Tensor loss_scale_host_;          // its value on the host (loss_scale_ itself there)
  DeviceTensors dev_;                   // the training session's device and run context
  std::vector<ir::Tensor> staged_;      // on a device: the batch's buffers, per data input then labels
  ir::Tensor logits_host_;              // on a device: the logits copied back for accuracy
  // The step's gradients by parameter: the session's output buffers, entries
  // made once and repointed each step (grad_outputs_: entry, output index).
  std::map<std::string, ir::Tensor> grads_;
  std::vector<std::pair<ir::Tensor*, int>> grad_outputs_;
  GradientChecker grad_checker_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<LrSchedule> schedule_;
  int64_t step_ = 0, lr_step_ = 0;
  std::optional<LossScaler> scaler_;
  int64_t skipped_without_scaler_ = 0;
  bool diagnosed_at_floor_ = false;  // this run of overflows at the floor was diagnosed
  std::string plan_hash_;
};

// Loss and top-1 accuracy of a model as it is, whatever its float types (an
// fp16/bf16 export included): inference mode and the loss head
// (BuildEvalGraph), the model's initializers as constants. Images come as
// float32 and are rounded to the model's input type when that is fp16/bf16
// (integer inputs are converted as Trainer::Step does);
// low-precision logits are read through an fp32 Cast.
class Evaluator {
 public:
  // `device`: where the model runs (null: the CPU); batches are copied there.
  static StatusOr<std::unique_ptr<Evaluator>> Create(const ir::Graph& model, const TrainGraphOptions& opts,
                                                     int threads = 0, const std::string& kernel_impl = "",
                                                     std::shared_ptr<kernels::Device> device = nullptr);
  StatusOr<EvalResult> Evaluate(data::BatchIterator& batches);

 private:
  Evaluator() = default;
  TrainGraph eval_;
  std::unique_ptr<InferenceSession> session_;
  std::map<std::string, int> out_index_;
  std::map<std::string, ir::TensorType> input_types_;
  int64_t ignore_index_ = autodiff::kDefaultIgnoreIndex;
};

}  // namespace amptrain::executor::train
