#include "executor/train/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace amptrain::executor::train {

StatusOr<LrSchedule> LrSchedule::Create(const LrScheduleConfig& c) {
  if (c.kind != "constant" && c.kind != "step" && c.kind != "warmup_cosine")
    return InvalidArgument("unknown lr schedule '", c.kind, "' (expected constant, step or warmup_cosine)");
  if (!std::isfinite(c.base_lr) || c.base_lr < 0.0f)
    return InvalidArgument("lr schedule ", c.kind, ": base_lr must be finite and >= 0, got ", c.base_lr);
  if (c.kind == "step") {
    if (c.step_size < 1) return InvalidArgument("lr schedule step: step_size must be >= 1, got ", c.step_size);
    if (!std::isfinite(c.gamma) || c.gamma < 0.0f)
      return InvalidArgument("lr schedule step: gamma must be finite and >= 0, got ", c.gamma);
  }
  if (c.kind == "warmup_cosine") {
    if (c.warmup_steps < 0 || c.total_steps <= c.warmup_steps)
      return InvalidArgument("lr schedule warmup_cosine: need 0 <= warmup_steps < total_steps, got ", c.warmup_steps,
                             " and ", c.total_steps);
    if (!(c.min_lr >= 0.0f && c.min_lr <= c.base_lr))
      return InvalidArgument("lr schedule warmup_cosine: need 0 <= min_lr <= base_lr, got ", c.min_lr);
  }
  return LrSchedule(c);
}

float LrSchedule::At(int64_t step) const {
  const LrScheduleConfig& c = config_;
  step = std::max<int64_t>(step, 0);
  const double base = c.base_lr;
  if (c.kind == "step") return static_cast<float>(base * std::pow(static_cast<double>(c.gamma), step / c.step_size));
  if (c.kind == "warmup_cosine") {
    if (step < c.warmup_steps) return static_cast<float>(base * static_cast<double>(step + 1) / c.warmup_steps);
    if (step >= c.total_steps) return c.min_lr;
    double q = static_cast<double>(step - c.warmup_steps) / static_cast<double>(c.total_steps - c.warmup_steps);
    return static_cast<float>(c.min_lr + (base - c.min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * q)));
  }
  return c.base_lr;
}

}  // namespace amptrain::executor::train
