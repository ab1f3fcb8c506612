// Optimizers over named fp32 master weights: SGD (momentum, Nesterov, L2
// weight decay), Adam (L2 weight decay) and AdamW (decoupled weight decay),
// with PyTorch 1.13's update formulas operation for operation
// (torch.optim.SGD/Adam/AdamW, foreach=False, dampening 0, amsgrad off):
//
//   SGD:   d = g + wd*p;  buf = d (first step) | momentum*buf + d;
//          d = nesterov ? d + momentum*buf : buf;  p = p - lr*d
//   Adam:  g = g + wd*p;  m = beta1*m + (1-beta1)*g;  v = beta2*v + (1-beta2)*g*g;
//          denom = sqrt(v)/sqrt(1-beta2^t) + eps;  p = p + (-lr/(1-beta1^t))*m/denom
//   AdamW: p = p*(1-lr*wd), then Adam without the L2 term.
//
// Scalars (bias corrections, step size) are computed in double and rounded
// to float as PyTorch does with Python floats; elements are updated in fp32
// by the fused step kernels of the kernel registry (ops SgdStep/AdamStep,
// kernels/cpu/step_kernels.cc), one call per parameter group (parameters of
// one dtype). The kernels unscale and clip each gradient in registers
// (GradScaling) and never write the gradients.
//
// Parameters are float32 masters, or float16/bfloat16 at O3 (weights stored
// low: read as float, updated in float, rounded once when stored); the
// state slots are float32 either way.
//
// State slots are fp32 tensors named "<param>.momentum_buffer" (SGD with
// momentum), "<param>.exp_avg" and "<param>.exp_avg_sq" (Adam/AdamW),
// created lazily at a parameter's first step. The bias-correction step t is
// the optimizer's step count (one per Step call, shared by all parameters),
// so every parameter should receive a gradient at every step.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "executor/device_tensors.h"
#include "ir/attribute.h"
#include "ir/status.h"
#include "ir/tensor.h"
#include "kernels/kernel.h"

namespace amptrain::executor::train {

struct OptimizerConfig {
  std::string kind = "adam";  // sgd | adam | adamw
  float lr = 1e-3f;           // the default; Step takes the scheduled lr
  float momentum = 0.9f;      // sgd only; 0 turns momentum off
  bool nesterov = false;      // sgd only; needs momentum > 0
  float weight_decay = 0.0f;  // L2 for sgd/adam, decoupled for adamw
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
};

// What the step kernels do to each gradient element before the update:
// g * inv_scale (the loss scaler's unscale), then * clip_coef (global-norm
// clipping), each rounded to float; 1 skips the multiply.
struct GradScaling {
  float inv_scale = 1.0f;
  float clip_coef = 1.0f;
};

class Optimizer {
 public:
  // Validates the config (kind, non-negative lr/decay/eps, betas in [0, 1),
  // nesterov only with momentum). `device`: where the parameters, gradients
  // and slots live and the step kernels run (default: the host); on a device
  // without host memory Step takes device tensors and the slots are made there.
  static StatusOr<std::unique_ptr<Optimizer>> Create(const OptimizerConfig& config, DeviceTensors device = {});

  using GradScaling = train::GradScaling;

  // One update with learning rate `lr`. Every gradient must name a parameter
  // with the same dims and dtype (float32, float16 or bfloat16), or be
  // float16/bfloat16 for a float32 parameter (AMP's fp32 master weights with
  // the backward's low gradients: the same update as from the gradient cast
  // to float32, without the copy). `low_copies` (optional): fp16/bf16 copies
  // of float32 parameters, by name, rewritten as the updated parameters
  // rounded (the low weights an AMP forward reads), in the same pass. Parameters
  // without a gradient are left unchanged (PyTorch's grad=None). Everything
  // is checked before anything changes: on error no parameter or slot has moved.
  Status Step(std::map<std::string, ir::Tensor>& params, const std::map<std::string, ir::Tensor>& grads, float lr,
              GradScaling scaling = {}, std::map<std::string, ir::Tensor>* low_copies = nullptr);

  int64_t step_count() const { return step_count_; }
  const OptimizerConfig& config() const { return config_; }

  // Every slot tensor by name (sharing the optimizer's buffers: device
  // tensors on a device); with step_count() this is the whole state.
  std::map<std::string, ir::Tensor> StateTensors() const { return slots_; }
  // The same on the host (copies of device slots; the slots themselves on the host).
  StatusOr<std::map<std::string, ir::Tensor>> HostStateTensors() const;
  // Replaces the state with deep copies of `slots` (host tensors; uploaded
  // to the device). Slot names must carry a suffix this kind uses and be
  // fp32; shapes are checked against the parameters at the next Step.
  Status LoadState(const std::map<std::string, ir::Tensor>& slots, int64_t step_count);

 private:
  enum class Kind { kSgd, kAdam, kAdamW };
  Optimizer(const OptimizerConfig& config, Kind kind, DeviceTensors device)
      : config_(config), kind_(kind), dev_(std::move(device)) {}

  // The slot `name` for `param`; created zeroed (fp32) when missing.
  StatusOr<ir::Tensor*> Slot(const std::string& name, const ir::Tensor& param);

  // One fused kernel call over a parameter group (one dtype; `first`: SGD
  // momentum buffers start now), made once: its kernel, its context over the
  // tensors' buffers and the hyperparameters a step rewrites.
  struct PreparedGroup {
    kernels::Kernel* kernel = nullptr;  // owned by kernels_
    kernels::KernelContext ctx;
    ir::Tensor hyper;       // what the kernel reads (on the device)
    ir::Tensor hyper_host;  // SetHyper writes here; `hyper` itself on the host
    bool first = false;
  };
  // The groups of the last Step, reused while the parameters, gradients and
  // low copies are the same buffers (the trainer's persistent ones): a step
  // then checks pointers, writes the hyperparameters and runs the kernels,
  // allocating nothing.
  struct Prepared {
    struct Entry {
      const void* param = nullptr;
      const void* grad = nullptr;
      const void* low = nullptr;
      ir::DType grad_dtype = ir::DType::kUndefined;
      int64_t elements = 0;
    };
    bool valid = false;
    std::vector<Entry> fingerprint;  // per gradient, in name order
    std::vector<PreparedGroup> groups;
    bool Matches(const std::map<std::string, ir::Tensor>& params, const std::map<std::string, ir::Tensor>& grads,
                 const std::map<std::string, ir::Tensor>* low_copies) const;
  };
  // Checks everything Step promises to check, then makes prepared_.
  Status Prepare(std::map<std::string, ir::Tensor>& params, const std::map<std::string, ir::Tensor>& grads,
                 std::map<std::string, ir::Tensor>* low_copies);
  StatusOr<PreparedGroup> PrepareGroup(std::map<std::string, ir::Tensor>& params,
                                       const std::map<std::string, ir::Tensor>& grads,
                                       std::map<std::string, ir::Tensor>* low_copies,
                                       const std::vector<std::string>& names, bool first);
  // The step kernels' hyperparameters of this step into `g.hyper`.
  void SetHyper(PreparedGroup& g, float lr, GradScaling scaling) const;

  OptimizerConfig config_;
  Kind kind_;
  DeviceTensors dev_;
  ir::Attributes attrs_;  // the step kernels' attributes, from config_
  int64_t step_count_ = 0;
  std::map<std::string, ir::Tensor> slots_;
  std::map<std::string, std::unique_ptr<kernels::Kernel>> kernels_;  // by group layout
  Prepared prepared_;
};

}  // namespace amptrain::executor::train
