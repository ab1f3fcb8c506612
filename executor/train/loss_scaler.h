// Loss scaling for fp16 training (PRECISION.md, "Loss scaling"): the
// backward seed is scale(); after backward, UnscaleAndCheck multiplies every
// gradient by 1/scale and detects inf/NaN in the same pass; Update(found_inf)
// then says whether the optimizer step applies and moves the scale.
//
// Dynamic (PyTorch GradScaler semantics plus a floor and a ceiling):
//   overflow: scale = max(scale * backoff_factor, min_scale), tracker = 0, step skipped
//   clean:    tracker += 1; when tracker == growth_interval:
//             scale = min(scale * growth_factor, max_scale) (never lowered by the
//             ceiling: a scale that starts above it only backs off), tracker = 0
// Static: the scale never moves; overflowing steps are skipped.
// Stuck guard: after max_consecutive_overflows overflows in a row (0 = never)
// Update returns FailedPrecondition naming the first overflowing gradient of
// the run of overflows, instead of letting the scale collapse silently.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include <nlohmann/json_fwd.hpp>

#include "executor/device_tensors.h"
#include "ir/status.h"
#include "ir/tensor.h"
#include "kernels/kernel.h"

namespace amptrain::executor::train {

struct LossScalerConfig {
  bool dynamic = true;
  float init_scale = 65536.0f;   // 2^16; may exceed max_scale (it then only backs off)
  float growth_factor = 2.0f;
  float backoff_factor = 0.5f;
  int64_t growth_interval = 2000;
  float min_scale = 1.0f;
  float max_scale = 16777216.0f;  // 2^24
  int64_t max_consecutive_overflows = 100;
};

// The result of GradientChecker::Check.
struct OverflowCheck {
  bool found_inf = false;
  std::string first_overflow;  // the first gradient (name order) holding inf/NaN
  double sum_squares = 0.0;    // of every unscaled gradient element (fp64), for clipping
};

// The all-finite check of a step: the GradCheck kernels of the registry
// (kernels/cpu/step_kernels.cc), one call per gradient dtype, read every
// gradient once. Unscaling is by 1/scale computed as PyTorch does (double
// reciprocal rounded to float; skipped when it is 1); an element is bad when
// it is inf/NaN before or after. The gradients are not written: the step
// kernels unscale them in registers (Optimizer::GradScaling).
class GradientChecker {
 public:
  // Where the gradients live and the GradCheck kernels run (default: the
  // host); on a device the per-gradient results are copied back once per check.
  void SetDevice(DeviceTensors device) {
    dev_ = std::move(device);
    fingerprint_.clear();
  }
  StatusOr<OverflowCheck> Check(const std::map<std::string, ir::Tensor>& grads, float scale);

  // 1/scale as the unscale uses it.
  static float InverseScale(float scale) { return static_cast<float>(1.0 / static_cast<double>(scale)); }

 private:
  // The kernel calls are made once per set of gradient buffers (the
  // trainer's persistent ones) and reused while the same buffers come:
  // a check then allocates nothing.
  struct Group {  // one GradCheck call: the gradients of one dtype
    kernels::Kernel* kernel = nullptr;  // owned by kernels_
    kernels::KernelContext ctx;
    ir::Tensor stats;       // float64 [k, 2]: (any inf/NaN, sum of squares) per gradient
    ir::Tensor stats_host;  // stats on the host (stats itself there)
    ir::Tensor scratch;     // the kernel's scratch_bytes(), on the device
  };
  struct Row {  // a gradient, in name order: its group and row
    std::string name;
    size_t group;
    int64_t row;
  };
  bool Matches(const std::map<std::string, ir::Tensor>& grads) const;
  Status Prepare(const std::map<std::string, ir::Tensor>& grads);

  std::map<std::string, std::unique_ptr<kernels::Kernel>> kernels_;  // by dtype and gradient layout
  std::vector<Group> groups_;
  std::vector<Row> order_;
  std::vector<std::tuple<const void*, ir::DType, int64_t>> fingerprint_;  // per gradient, name order
  ir::Tensor scale_;       // float32 scalar, the scale of this check (what the kernels read)
  ir::Tensor scale_host_;  // written by Check; scale_ itself on the host
  DeviceTensors dev_;
};

class LossScaler {
 public:
  // Validates the config: finite init/min/max scales > 0 with min <= max,
  // growth_factor >= 1, backoff_factor in (0, 1), growth_interval >= 1,
  // max_consecutive_overflows >= 0.
  static StatusOr<LossScaler> Create(const LossScalerConfig& config);

  float scale() const { return scale_; }
  int64_t growth_tracker() const { return growth_tracker_; }
  int64_t skipped_steps() const { return skipped_steps_; }
  int64_t consecutive_overflows() const { return consecutive_overflows_; }

  // Records one step's outcome; true when the optimizer step applies.
  // `first_overflow` names the overflowing gradient (or node) for the guard.
  StatusOr<bool> Update(bool found_inf, const std::string& first_overflow = "");

  // {"dynamic", "scale", "growth_tracker", "skipped_steps",
  //  "consecutive_overflows", "first_overflow"} for the trainer state.
  nlohmann::json StateJson() const;
  // Restores StateJson's output exactly; validates every field.
  Status LoadStateJson(const nlohmann::json& state);

 private:
  explicit LossScaler(const LossScalerConfig& config) : config_(config), scale_(config.init_scale) {}

  LossScalerConfig config_;
  float scale_;
  int64_t growth_tracker_ = 0;
  int64_t skipped_steps_ = 0;
  int64_t consecutive_overflows_ = 0;
  std::string first_overflow_;  // of the current run of overflows
};

}  // namespace amptrain::executor::train
