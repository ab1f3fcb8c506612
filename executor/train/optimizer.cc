#include "executor/train/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "kernels/kernel.h"

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

StatusOr<std::unique_ptr<Optimizer>> Optimizer::Create(const OptimizerConfig& c, DeviceTensors device) {
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
  if (!device.on_host() && !device.run) return Internal("optimizer ", c.kind, ": a device without a run context");
  std::unique_ptr<Optimizer> opt(new Optimizer(c, kind, std::move(device)));
  ir::Attributes& a = opt->attrs_;
  if (kind == Kind::kSgd) {
    a.Set("momentum", c.momentum);
    a.Set("nesterov", int64_t{c.nesterov ? 1 : 0});
    a.Set("weight_decay", c.weight_decay);
  } else {
    a.Set("beta1", c.beta1);
    a.Set("beta2", c.beta2);
    a.Set("eps", c.eps);
    a.Set("weight_decay", c.weight_decay);
    a.Set("decoupled", int64_t{kind == Kind::kAdamW ? 1 : 0});
  }
  return opt;
}

bool Optimizer::Prepared::Matches(const std::map<std::string, Tensor>& params,
                                  const std::map<std::string, Tensor>& grads,
                                  const std::map<std::string, Tensor>* low_copies) const {
  if (!valid || grads.size() != fingerprint.size()) return false;
  size_t i = 0;
  for (const auto& [name, g] : grads) {
    auto p = params.find(name);
    if (p == params.end()) return false;
    const void* low = nullptr;
    if (low_copies) {
      auto it = low_copies->find(name);
      if (it != low_copies->end()) low = it->second.raw();
    }
    const Entry& e = fingerprint[i++];
    if (e.param != p->second.raw() || e.grad != g.raw() || e.low != low || e.grad_dtype != g.dtype() ||
        e.elements != g.num_elements() || p->second.num_elements() != g.num_elements())
      return false;
  }
  return true;
}

Status Optimizer::Step(std::map<std::string, Tensor>& params, const std::map<std::string, Tensor>& grads, float lr,
                       GradScaling scaling, std::map<std::string, Tensor>* low_copies) {
  if (!std::isfinite(lr) || lr < 0.0f) return InvalidArgument("optimizer ", config_.kind, ": lr must be finite and >= 0, got ", lr);
  if (!(std::isfinite(scaling.inv_scale) && scaling.inv_scale > 0.0f) ||
      !(std::isfinite(scaling.clip_coef) && scaling.clip_coef > 0.0f))
    return InvalidArgument("optimizer ", config_.kind, ": unscale factor ", scaling.inv_scale, " and clip coefficient ",
                           scaling.clip_coef, " must be finite and > 0");
  if (!prepared_.Matches(params, grads, low_copies)) AMP_RETURN_IF_ERROR(Prepare(params, grads, low_copies));
  ++step_count_;
  for (PreparedGroup& g : prepared_.groups) {
    SetHyper(g, lr, scaling);
    if (!dev_.on_host()) AMP_RETURN_IF_ERROR(dev_.CopyIn(g.hyper, g.hyper_host));
    AMP_RETURN_IF_ERROR(g.kernel->Run(g.ctx));
  }
  // SGD's momentum buffers exist now: the next step groups them as such.
  for (const PreparedGroup& g : prepared_.groups)
    if (g.first) prepared_.valid = false;
  return Status::Ok();
}

Status Optimizer::Prepare(std::map<std::string, Tensor>& params, const std::map<std::string, Tensor>& grads,
                          std::map<std::string, Tensor>* low_copies) {
  prepared_ = Prepared();
  for (const auto& [name, grad] : grads) {
    auto it = params.find(name);
    if (it == params.end()) return NotFound("optimizer ", config_.kind, ": gradient '", name, "' names no parameter");
    const Tensor& p = it->second;
    const bool low_grad = grad.dtype() == DType::kFloat16 || grad.dtype() == DType::kBFloat16;
    const bool trainable = p.dtype() == DType::kFloat32 || p.dtype() == DType::kFloat16 || p.dtype() == DType::kBFloat16;
    if (!trainable || (grad.dtype() != p.dtype() && !(p.dtype() == DType::kFloat32 && low_grad)))
      return Unimplemented("optimizer ", config_.kind, ": parameter '", name, "' is ", ir::DTypeName(p.dtype()),
                           " with a ", ir::DTypeName(grad.dtype()),
                           " gradient; parameters are float32, float16 or bfloat16 with a gradient of their dtype"
                           " (or float16/bfloat16 for float32 ones)");
    if (p.dims() != grad.dims())
      return InvalidArgument("optimizer ", config_.kind, ": parameter '", name, "' has dims ", DimsString(p.dims()),
                             " but its gradient has ", DimsString(grad.dims()));
    if (low_copies && low_copies->count(name)) {
      const Tensor& low = low_copies->at(name);
      if (p.dtype() != DType::kFloat32 || (low.dtype() != DType::kFloat16 && low.dtype() != DType::kBFloat16) ||
          low.dims() != p.dims())
        return InvalidArgument("optimizer ", config_.kind, ": the low copy of '", name, "' is ",
                               ir::TensorType::Of(low.dtype(), low.dims()).ToString(), "; it must be fp16 or bf16 of ",
                               DimsString(p.dims()), " for a float32 parameter");
    }
    for (const char* suffix : {kMomentumSuffix, kExpAvgSuffix, kExpAvgSqSuffix}) {
      auto slot = slots_.find(name + suffix);
      if (slot != slots_.end() && slot->second.dims() != p.dims())
        return InvalidArgument("optimizer ", config_.kind, ": slot '", slot->first, "' has dims ",
                               DimsString(slot->second.dims()), " but parameter '", name, "' has ", DimsString(p.dims()));
    }
  }
  // Parameter groups: one fused kernel call per (dtype, gradient dtype,
  // first step of its state) over every parameter in it (SGD's momentum
  // buffer starts as the first gradient).
  std::map<std::tuple<DType, DType, bool>, std::vector<std::string>> groups;
  const bool sgd_momentum = kind_ == Kind::kSgd && config_.momentum != 0.0f;
  for (const auto& [name, grad] : grads) {
    bool first = false;
    if (sgd_momentum) first = !slots_.count(name + kMomentumSuffix);
    groups[{params.at(name).dtype(), grad.dtype(), first}].push_back(name);
  }
  for (const auto& [key, names] : groups) {
    AMP_ASSIGN_OR_RETURN(PreparedGroup g, PrepareGroup(params, grads, low_copies, names, std::get<2>(key)));
    prepared_.groups.push_back(std::move(g));
  }
  for (const auto& [name, g] : grads) {
    Prepared::Entry e;
    e.param = params.at(name).raw();
    e.grad = g.raw();
    e.grad_dtype = g.dtype();
    e.elements = g.num_elements();
    if (low_copies && low_copies->count(name)) e.low = low_copies->at(name).raw();
    prepared_.fingerprint.push_back(e);
  }
  prepared_.valid = true;
  return Status::Ok();
}

StatusOr<Tensor*> Optimizer::Slot(const std::string& name, const Tensor& param) {
  auto it = slots_.find(name);
  if (it == slots_.end()) {
    AMP_ASSIGN_OR_RETURN(Tensor zeros, dev_.Zeros(DType::kFloat32, param.dims()));
    it = slots_.emplace(name, std::move(zeros)).first;
  }
  return &it->second;
}

StatusOr<Optimizer::PreparedGroup> Optimizer::PrepareGroup(std::map<std::string, Tensor>& params,
                                                           const std::map<std::string, Tensor>& grads,
                                                           std::map<std::string, Tensor>* low_copies,
                                                           const std::vector<std::string>& names, bool first) {
  const bool sgd = kind_ == Kind::kSgd;
  PreparedGroup group;
  group.first = first;
  kernels::KernelContext& ctx = group.ctx;
  kernels::KernelInit init;
  init.op = sgd ? ir::OpKind::kSgdStep : ir::OpKind::kAdamStep;
  init.attrs = &attrs_;
  init.node_name = StrCat(config_.kind, " step");
  for (const std::string& name : names) {
    Tensor& p = params.at(name);
    const Tensor& g = grads.at(name);
    std::vector<Tensor*> state;
    if (sgd) {
      Tensor* buf = nullptr;
      if (config_.momentum != 0.0f) {
        AMP_ASSIGN_OR_RETURN(buf, Slot(name + kMomentumSuffix, p));
      }
      state.push_back(buf);
    } else {
      for (const char* suffix : {kExpAvgSuffix, kExpAvgSqSuffix}) {
        AMP_ASSIGN_OR_RETURN(Tensor * slot, Slot(name + suffix, p));
        state.push_back(slot);
      }
    }
    ctx.inputs.push_back(ir::TensorView::Of(p));
    ctx.inputs.push_back(ir::TensorView::Of(g));
    init.inputs.push_back({p.dtype(), p.dims(), nullptr});
    init.inputs.push_back({g.dtype(), g.dims(), nullptr});
    for (Tensor* t : state) {
      ctx.inputs.push_back(t ? ir::TensorView::Of(*t) : ir::TensorView{});
      init.inputs.push_back(t ? kernels::TensorSpec{DType::kFloat32, t->dims(), nullptr} : kernels::TensorSpec{});
    }
    Tensor* low = nullptr;
    if (low_copies) {
      auto it = low_copies->find(name);
      if (it != low_copies->end()) low = &it->second;
    }
    ctx.inputs.push_back(low ? ir::TensorView::Of(*low) : ir::TensorView{});
    init.inputs.push_back(low ? kernels::TensorSpec{low->dtype(), low->dims(), nullptr} : kernels::TensorSpec{});
  }
  AMP_ASSIGN_OR_RETURN(group.hyper_host, Tensor::Zeros(DType::kFloat32, {sgd ? 4 : 5}));
  group.hyper = group.hyper_host;
  if (!dev_.on_host()) {
    AMP_ASSIGN_OR_RETURN(group.hyper, dev_.Upload(group.hyper_host));
  }
  ctx.inputs.push_back(ir::TensorView::Of(group.hyper));
  ctx.run = dev_.run;
  init.device = dev_.kind();
  init.inputs.push_back({DType::kFloat32, group.hyper.dims(), nullptr});
  // The kernel is made once per group layout (names and dtypes) and kept.
  std::string key = StrCat(ir::DTypeName(init.inputs[0].dtype), "/", ir::DTypeName(init.inputs[1].dtype),
                           first ? "+first" : "");
  const size_t per = sgd ? 4 : 5;  // inputs per parameter, its low copy last
  for (size_t i = 0; i < names.size(); ++i)
    key += StrCat("|", names[i], init.inputs[(i + 1) * per - 1].present() ? "+low" : "");
  auto it = kernels_.find(key);
  if (it == kernels_.end()) {
    AMP_ASSIGN_OR_RETURN(std::unique_ptr<kernels::Kernel> k, kernels::Registry::Global().Create(init));
    it = kernels_.emplace(key, std::move(k)).first;
  }
  group.kernel = it->second.get();
  return group;
}

void Optimizer::SetHyper(PreparedGroup& g, float lr, GradScaling scaling) const {
  float* h = g.hyper_host.data<float>();
  if (kind_ == Kind::kSgd) {
    h[0] = lr;
    h[1] = scaling.inv_scale;
    h[2] = scaling.clip_coef;
    h[3] = g.first ? 1.0f : 0.0f;
    return;
  }
  const double beta1 = config_.beta1, beta2 = config_.beta2, t = static_cast<double>(step_count_);
  const double step_size = static_cast<double>(lr) / (1.0 - std::pow(beta1, t));
  h[0] = static_cast<float>(-step_size);
  h[1] = static_cast<float>(std::sqrt(1.0 - std::pow(beta2, t)));
  h[2] = static_cast<float>(1.0 - static_cast<double>(lr) * config_.weight_decay);
  h[3] = scaling.inv_scale;
  h[4] = scaling.clip_coef;
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
    AMP_ASSIGN_OR_RETURN(Tensor copy, dev_.Upload(t));
    copies.emplace(name, std::move(copy));
  }
  slots_ = std::move(copies);
  step_count_ = step_count;
  prepared_ = Prepared();
  return Status::Ok();
}

StatusOr<std::map<std::string, Tensor>> Optimizer::HostStateTensors() const {
  std::map<std::string, Tensor> host;
  for (const auto& [name, t] : slots_) {
    AMP_ASSIGN_OR_RETURN(host[name], dev_.Download(t));
  }
  return host;
}

}  // namespace amptrain::executor::train
