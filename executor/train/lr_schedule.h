// Learning-rate schedules as pure functions of the applied-step index, so a
// resumed run gets exactly the rates it would have had (the index is saved
// in the trainer state; skipped overflow steps do not advance it).
//
//   constant:      lr(s) = base_lr
//   step:          lr(s) = base_lr * gamma^floor(s / step_size)
//   warmup_cosine: lr(s) = base_lr * (s + 1) / warmup_steps             for s < warmup_steps
//                  lr(s) = min_lr + (base_lr - min_lr) * (1 + cos(pi * q)) / 2
//                          with q = (s - warmup_steps) / (total_steps - warmup_steps)
//                  for warmup_steps <= s < total_steps, and min_lr from total_steps on.
//
// `s` is the 0-based index of the step about to run. Computed in double,
// returned as float.
#pragma once

#include <cstdint>
#include <string>

#include "ir/status.h"

namespace amptrain::executor::train {

struct LrScheduleConfig {
  std::string kind = "constant";  // constant | step | warmup_cosine
  float base_lr = 1e-3f;
  int64_t step_size = 1;          // step
  float gamma = 0.1f;             // step
  int64_t warmup_steps = 0;       // warmup_cosine
  int64_t total_steps = 1;        // warmup_cosine; > warmup_steps
  float min_lr = 0.0f;            // warmup_cosine; <= base_lr
};

class LrSchedule {
 public:
  // Validates the config: known kind, finite base_lr >= 0, step_size >= 1,
  // gamma >= 0, 0 <= warmup_steps < total_steps, 0 <= min_lr <= base_lr.
  static StatusOr<LrSchedule> Create(const LrScheduleConfig& config);

  // The rate for applied-step index `step` (negative indexes count as 0).
  float At(int64_t step) const;
  const LrScheduleConfig& config() const { return config_; }

 private:
  explicit LrSchedule(const LrScheduleConfig& config) : config_(config) {}
  LrScheduleConfig config_;
};

}  // namespace amptrain::executor::train
