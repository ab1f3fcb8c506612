#include "executor/train/optimizer.h"

#include <cmath>
#include <cstring>

namespace amptrain::executor::train {

using ir::DType;
using ir::Tensor;

namespace {

constexpr const char* kMomentumSuffix = ".momentum_buffer";
constexpr const char* kExpAvgSuffix = ".exp_avg";
constexpr const char* kExpAvgSqSuffix = ".exp_avg_sq";

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string DimsString(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += StrCat(i ? "," : "", dims[i]);
  return s + "]";
}

}  // namespace

StatusOr<std::unique_ptr<Optimizer>> Optimizer::Create(const OptimizerConfig& c) {
  Kind kind;
  if (c.kind == "sgd") {
    kind = Kind::kSgd;
  } else if (c.kind == "adam") {
    kind = Kind::kAdam;
  } else if (c.kind == "adamw") {
    kind = Kind::kAdamW;
  } else {
    return InvalidArgument("unknown optimizer '", c.kind, "' (expected sgd, adam or adamw)");
  }
  auto finite_non_negative = [](float v) { return std::isfinite(v) && v >= 0.0f; };
  if (!finite_non_negative(c.lr)) return InvalidArgument("optimizer ", c.kind, ": lr must be finite and >= 0, got ", c.lr);
  if (!finite_non_negative(c.weight_decay))
    return InvalidArgument("optimizer ", c.kind, ": weight_decay must be finite and >= 0, got ", c.weight_decay);
  if (kind == Kind::kSgd) {
    if (!finite_non_negative(c.momentum))
      return InvalidArgument("optimizer sgd: momentum must be finite and >= 0, got ", c.momentum);
    if (c.nesterov && c.momentum == 0.0f) return InvalidArgument("optimizer sgd: nesterov needs a momentum > 0");
  } else {
    for (float beta : {c.beta1, c.beta2})
      if (!(beta >= 0.0f && beta < 1.0f))
        return InvalidArgument("optimizer ", c.kind, ": betas must be in [0, 1), got ", c.beta1, ", ", c.beta2);
    if (!finite_non_negative(c.eps)) return InvalidArgument("optimizer ", c.kind, ": eps must be finite and >= 0, got ", c.eps);
  }
  return std::unique_ptr<Optimizer>(new Optimizer(c, kind));
}

Status Optimizer::Step(std::map<std::string, Tensor>& params, const std::map<std::string, Tensor>& grads, float lr) {
  if (!std::isfinite(lr) || lr < 0.0f) return InvalidArgument("optimizer ", config_.kind, ": lr must be finite and >= 0, got ", lr);
  for (const auto& [name, grad] : grads) {
    auto it = params.find(name);
    if (it == params.end()) return NotFound("optimizer ", config_.kind, ": gradient '", name, "' names no parameter");
    const Tensor& p = it->second;
    if (p.dtype() != DType::kFloat32 || grad.dtype() != DType::kFloat32)
      return Unimplemented("optimizer ", config_.kind, ": parameter '", name, "' is ", ir::DTypeName(p.dtype()),
                           " with a ", ir::DTypeName(grad.dtype()), " gradient; only float32 masters are updated");
    if (p.dims() != grad.dims())
      return InvalidArgument("optimizer ", config_.kind, ": parameter '", name, "' has dims ", DimsString(p.dims()),
                             " but its gradient has ", DimsString(grad.dims()));
    for (const char* suffix : {kMomentumSuffix, kExpAvgSuffix, kExpAvgSqSuffix}) {
      auto slot = slots_.find(name + suffix);
      if (slot != slots_.end() && slot->second.dims() != p.dims())
        return InvalidArgument("optimizer ", config_.kind, ": slot '", slot->first, "' has dims ",
                               DimsString(slot->second.dims()), " but parameter '", name, "' has ", DimsString(p.dims()));
    }
  }
  ++step_count_;
  for (const auto& [name, grad] : grads) {
    Tensor& p = params.at(name);
    if (kind_ == Kind::kSgd) {
      SgdStep(p, grad, name, lr);
    } else {
      AdamStep(p, grad, name, lr);
    }
  }
  return Status::Ok();
}

Tensor& Optimizer::Slot(const std::string& name, const Tensor& param, bool* created) {
  auto it = slots_.find(name);
  *created = it == slots_.end();
  if (*created) it = slots_.emplace(name, *Tensor::Zeros(DType::kFloat32, param.dims())).first;
  return it->second;
}

void Optimizer::SgdStep(Tensor& param, const Tensor& grad, const std::string& name, float lr) {
  const int64_t n = param.num_elements();
  float* p = param.data<float>();
  const float* g = grad.data<float>();
  const float wd = config_.weight_decay, mom = config_.momentum, neg_lr = -lr;
  if (mom == 0.0f) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      float d = wd != 0.0f ? g[i] + wd * p[i] : g[i];
      p[i] = p[i] + neg_lr * d;
    }
    return;
  }
  bool first = false;
  float* buf = Slot(name + kMomentumSuffix, param, &first).data<float>();
  const bool nesterov = config_.nesterov;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    float d = wd != 0.0f ? g[i] + wd * p[i] : g[i];
    float b = first ? d : buf[i] * mom + d;
    buf[i] = b;
    if (nesterov) d = d + mom * b; else d = b;
    p[i] = p[i] + neg_lr * d;
  }
}

void Optimizer::AdamStep(Tensor& param, const Tensor& grad, const std::string& name, float lr) {
  const int64_t n = param.num_elements();
  float* p = param.data<float>();
  const float* g = grad.data<float>();
  bool created = false;
  float* m = Slot(name + kExpAvgSuffix, param, &created).data<float>();
  float* v = Slot(name + kExpAvgSqSuffix, param, &created).data<float>();

  const double beta1 = config_.beta1, beta2 = config_.beta2, t = static_cast<double>(step_count_);
  const float b1 = config_.beta1, b2 = config_.beta2, eps = config_.eps;
  const float one_minus_b1 = static_cast<float>(1.0 - beta1), one_minus_b2 = static_cast<float>(1.0 - beta2);
  const double step_size = static_cast<double>(lr) / (1.0 - std::pow(beta1, t));
  const float neg_step_size = static_cast<float>(-step_size);
  const float bc2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(beta2, t)));
  const bool decoupled = kind_ == Kind::kAdamW;
  const float l2 = decoupled ? 0.0f : config_.weight_decay;
  const float decay = static_cast<float>(1.0 - static_cast<double>(lr) * config_.weight_decay);
  const bool apply_decay = decoupled && config_.weight_decay != 0.0f;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    float pi = apply_decay ? p[i] * decay : p[i];
    float gi = l2 != 0.0f ? g[i] + l2 * pi : g[i];
    float mi = m[i] * b1 + one_minus_b1 * gi;
    float vi = v[i] * b2 + one_minus_b2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    float denom = std::sqrt(vi) / bc2_sqrt + eps;
    p[i] = pi + neg_step_size * mi / denom;
  }
}

Status Optimizer::LoadState(const std::map<std::string, Tensor>& slots, int64_t step_count) {
  if (step_count < 0) return InvalidArgument("optimizer ", config_.kind, ": negative step count ", step_count);
  std::map<std::string, Tensor> copies;
  for (const auto& [name, t] : slots) {
    bool known = kind_ == Kind::kSgd ? EndsWith(name, kMomentumSuffix)
                                     : EndsWith(name, kExpAvgSuffix) || EndsWith(name, kExpAvgSqSuffix);
    if (!known) return InvalidArgument("optimizer ", config_.kind, ": unexpected state slot '", name, "'");
    if (t.dtype() != DType::kFloat32)
      return InvalidArgument("optimizer ", config_.kind, ": state slot '", name, "' is ", ir::DTypeName(t.dtype()),
                             ", expected float32");
    copies.emplace(name, t.Clone());
  }
  slots_ = std::move(copies);
  step_count_ = step_count;
  return Status::Ok();
}

}  // namespace amptrain::executor::train
