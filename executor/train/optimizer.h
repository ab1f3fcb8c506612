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
// to float as PyTorch does with Python floats; elements are updated in fp32,
// one fused loop per parameter (OpenMP over elements).
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

#include "ir/status.h"
#include "ir/tensor.h"

namespace amptrain::executor::train {

struct OptimizerConfig {
  std::string kind = "adam";  // sgd | adam | adamw
  float lr = 1e-3f;           // the default; Step takes the scheduled lr
  float momentum = 0.9f;      // sgd only; 0 turns momentum off
  bool nesterov = false;      // sgd only; needs momentum > 0
  float weight_decay = 0.0f;  // L2 for sgd/adam, decoupled for adamw
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
};

class Optimizer {
 public:
  // Validates the config (kind, non-negative lr/decay/eps, betas in [0, 1),
  // nesterov only with momentum).
  static StatusOr<std::unique_ptr<Optimizer>> Create(const OptimizerConfig& config);

  // One update with learning rate `lr`. Every gradient must name a parameter
  // with the same dims; both fp32. Parameters without a gradient are left
  // unchanged (PyTorch's grad=None). Everything is checked before anything
  // changes: on error no parameter or slot has moved.
  Status Step(std::map<std::string, ir::Tensor>& params, const std::map<std::string, ir::Tensor>& grads, float lr);

  int64_t step_count() const { return step_count_; }
  const OptimizerConfig& config() const { return config_; }

  // Every slot tensor by name (sharing the optimizer's buffers); with
  // step_count() this is the whole state.
  std::map<std::string, ir::Tensor> StateTensors() const { return slots_; }
  // Replaces the state with deep copies of `slots`. Slot names must carry a
  // suffix this kind uses and be fp32; shapes are checked against the
  // parameters at the next Step.
  Status LoadState(const std::map<std::string, ir::Tensor>& slots, int64_t step_count);

 private:
  enum class Kind { kSgd, kAdam, kAdamW };
  Optimizer(const OptimizerConfig& config, Kind kind) : config_(config), kind_(kind) {}

  // The slot `name` for `param`; creates it zeroed when missing (*created = true).
  ir::Tensor& Slot(const std::string& name, const ir::Tensor& param, bool* created);
  void SgdStep(ir::Tensor& param, const ir::Tensor& grad, const std::string& name, float lr);
  void AdamStep(ir::Tensor& param, const ir::Tensor& grad, const std::string& name, float lr);

  OptimizerConfig config_;
  Kind kind_;
  int64_t step_count_ = 0;
  std::map<std::string, ir::Tensor> slots_;
};

}  // namespace amptrain::executor::train
