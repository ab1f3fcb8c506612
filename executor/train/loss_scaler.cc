#include "executor/train/loss_scaler.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

namespace amptrain::executor::train {

using ir::DType;
using ir::Tensor;

bool GradientChecker::Matches(const std::map<std::string, Tensor>& grads) const {
  if (fingerprint_.empty() || grads.size() != fingerprint_.size()) return false;
  size_t i = 0;
  for (const auto& [name, g] : grads) {
    const auto& [data, dtype, elements] = fingerprint_[i++];
    if (data != g.raw() || dtype != g.dtype() || elements != g.num_elements()) return false;
  }
  return true;
}

Status GradientChecker::Prepare(const std::map<std::string, Tensor>& grads) {
  groups_.clear();
  order_.clear();
  fingerprint_.clear();
  scale_host_ = Tensor::Scalar(1.0f);
  scale_ = scale_host_;
  if (!dev_.on_host()) {
    AMP_ASSIGN_OR_RETURN(scale_, dev_.Upload(scale_host_));
  }
  std::map<DType, std::vector<const std::pair<const std::string, Tensor>*>> by_dtype;
  for (const auto& entry : grads) by_dtype[entry.second.dtype()].push_back(&entry);
  std::map<std::string, std::pair<size_t, int64_t>> where;  // gradient -> (group, row)
  for (const auto& [dtype, members] : by_dtype) {
    Group group;
    kernels::KernelInit init;
    init.op = ir::OpKind::kGradCheck;
    init.device = dev_.kind();
    group.ctx.run = dev_.run;
    init.node_name = "gradient check";
    std::string key(ir::DTypeName(dtype));
    for (const auto* g : members) {
      init.inputs.push_back({dtype, g->second.dims(), nullptr});
      group.ctx.inputs.push_back(ir::TensorView::Of(g->second));
      key += "|" + g->first;
      where[g->first] = {groups_.size(), static_cast<int64_t>(group.ctx.inputs.size()) - 1};
    }
    init.inputs.push_back({DType::kFloat32, {}, nullptr});
    group.ctx.inputs.push_back(ir::TensorView::Of(scale_));
    const int64_t k = static_cast<int64_t>(members.size());
    init.outputs.push_back({DType::kFloat64, {k, 2}, nullptr});
    AMP_ASSIGN_OR_RETURN(group.stats_host, Tensor::Zeros(DType::kFloat64, {k, 2}));
    group.stats = group.stats_host;
    if (!dev_.on_host()) {
      AMP_ASSIGN_OR_RETURN(group.stats, dev_.Upload(group.stats_host));
    }
    group.ctx.outputs.push_back(ir::TensorView::Of(group.stats));
    auto it = kernels_.find(key);
    if (it == kernels_.end()) {
      AMP_ASSIGN_OR_RETURN(std::unique_ptr<kernels::Kernel> kernel, kernels::Registry::Global().Create(init));
      it = kernels_.emplace(key, std::move(kernel)).first;
    }
    group.kernel = it->second.get();
    if (const size_t bytes = group.kernel->scratch_bytes(); bytes > 0) {
      AMP_ASSIGN_OR_RETURN(group.scratch, dev_.Zeros(DType::kUInt8, {static_cast<int64_t>(bytes)}));
      group.ctx.scratch = group.scratch.raw();
    }
    groups_.push_back(std::move(group));
  }
  for (const auto& [name, g] : grads) {  // name order
    order_.push_back({name, where.at(name).first, where.at(name).second});
    fingerprint_.emplace_back(g.raw(), g.dtype(), g.num_elements());
  }
  return Status::Ok();
}

StatusOr<OverflowCheck> GradientChecker::Check(const std::map<std::string, Tensor>& grads, float scale) {
  if (!(scale > 0.0f) || !std::isfinite(scale))
    return InvalidArgument("loss scaler: cannot unscale by a scale of ", scale);
  if (!Matches(grads)) AMP_RETURN_IF_ERROR(Prepare(grads));
  *scale_host_.data<float>() = scale;
  if (!dev_.on_host()) AMP_RETURN_IF_ERROR(dev_.CopyIn(scale_, scale_host_));
  for (Group& g : groups_) AMP_RETURN_IF_ERROR(g.kernel->Run(g.ctx));
  if (!dev_.on_host())
    for (Group& g : groups_) AMP_RETURN_IF_ERROR(dev_.CopyOut(g.stats_host, g.stats));
  // Added in name order, so the norm does not depend on how the dtypes group.
  OverflowCheck check;
  for (const Row& row : order_) {
    const double* st = groups_[row.group].stats_host.data<double>() + 2 * row.row;
    check.sum_squares += st[1];
    if (st[0] != 0.0 && !check.found_inf) {
      check.found_inf = true;
      check.first_overflow = row.name;
    }
  }
  return check;
}

StatusOr<LossScaler> LossScaler::Create(const LossScalerConfig& c) {
  auto positive = [](float v) { return std::isfinite(v) && v > 0.0f; };
  if (!positive(c.init_scale) || !positive(c.min_scale) || !positive(c.max_scale) || c.min_scale > c.max_scale)
    return InvalidArgument("loss scaler: need finite scales > 0 with min_scale <= max_scale, got init ", c.init_scale,
                           ", min ", c.min_scale, ", max ", c.max_scale);
  if (!(std::isfinite(c.growth_factor) && c.growth_factor >= 1.0f))
    return InvalidArgument("loss scaler: growth_factor must be finite and >= 1, got ", c.growth_factor);
  if (!(c.backoff_factor > 0.0f && c.backoff_factor < 1.0f))
    return InvalidArgument("loss scaler: backoff_factor must be in (0, 1), got ", c.backoff_factor);
  if (c.growth_interval < 1) return InvalidArgument("loss scaler: growth_interval must be >= 1, got ", c.growth_interval);
  if (c.max_consecutive_overflows < 0)
    return InvalidArgument("loss scaler: max_consecutive_overflows must be >= 0, got ", c.max_consecutive_overflows);
  return LossScaler(c);
}

StatusOr<bool> LossScaler::Update(bool found_inf, const std::string& first_overflow) {
  if (!found_inf) {
    consecutive_overflows_ = 0;
    first_overflow_.clear();
    if (config_.dynamic && ++growth_tracker_ == config_.growth_interval) {
      if (scale_ < config_.max_scale) scale_ = std::min(scale_ * config_.growth_factor, config_.max_scale);
      growth_tracker_ = 0;
    }
    return true;
  }
  ++skipped_steps_;
  if (consecutive_overflows_++ == 0) first_overflow_ = first_overflow;
  if (config_.dynamic) {
    scale_ = std::max(scale_ * config_.backoff_factor, config_.min_scale);
    growth_tracker_ = 0;
  }
  if (config_.max_consecutive_overflows > 0 && consecutive_overflows_ >= config_.max_consecutive_overflows)
    return FailedPrecondition("loss scaler: ", consecutive_overflows_, " consecutive steps overflowed (scale now ",
                              scale_, ", ", config_.dynamic ? "dynamic" : "static", "); the first overflowing gradient was '",
                              first_overflow_.empty() ? "<unnamed>" : first_overflow_,
                              "': the gradients are inf/NaN at any scale, check the model and data");
  return false;
}

nlohmann::json LossScaler::StateJson() const {
  return nlohmann::json{{"dynamic", config_.dynamic},
                        {"scale", scale_},
                        {"growth_tracker", growth_tracker_},
                        {"skipped_steps", skipped_steps_},
                        {"consecutive_overflows", consecutive_overflows_},
                        {"first_overflow", first_overflow_}};
}

Status LossScaler::LoadStateJson(const nlohmann::json& s) {
  auto int_field = [&](const char* key, int64_t* out) -> Status {
    if (!s.contains(key) || !s[key].is_number_integer() || s[key].get<int64_t>() < 0)
      return InvalidArgument("loss scaler state: '", key, "' must be an integer >= 0");
    *out = s[key].get<int64_t>();
    return Status::Ok();
  };
  if (!s.is_object()) return InvalidArgument("loss scaler state: expected a JSON object");
  if (!s.contains("dynamic") || !s["dynamic"].is_boolean() || s["dynamic"].get<bool>() != config_.dynamic)
    return InvalidArgument("loss scaler state: 'dynamic' is missing or differs from the configured scaler (",
                           config_.dynamic ? "dynamic" : "static", ")");
  if (!s.contains("scale") || !s["scale"].is_number()) return InvalidArgument("loss scaler state: 'scale' must be a number");
  const float scale = s["scale"].get<float>();
  if (!std::isfinite(scale) || scale <= 0.0f) return InvalidArgument("loss scaler state: 'scale' must be finite and > 0");
  if (!s.contains("first_overflow") || !s["first_overflow"].is_string())
    return InvalidArgument("loss scaler state: 'first_overflow' must be a string");
  int64_t tracker = 0, skipped = 0, consecutive = 0;
  AMP_RETURN_IF_ERROR(int_field("growth_tracker", &tracker));
  AMP_RETURN_IF_ERROR(int_field("skipped_steps", &skipped));
  AMP_RETURN_IF_ERROR(int_field("consecutive_overflows", &consecutive));
  scale_ = scale;
  growth_tracker_ = tracker;
  skipped_steps_ = skipped;
  consecutive_overflows_ = consecutive;
  first_overflow_ = s["first_overflow"].get<std::string>();
  return Status::Ok();
}

}  // namespace amptrain::executor::train
