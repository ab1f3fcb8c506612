// Global-norm gradient clipping (torch.nn.utils.clip_grad_norm_ with
// norm_type 2), on unscaled gradients: the squared norm of all gradients
// together is accumulated in fp64, and when norm > max_norm every gradient
// is multiplied by max_norm / (norm + 1e-6). float32, float16 and bfloat16
// gradients are accepted (low-precision ones are widened to accumulate and
// rounded back when scaled).
//
// A non-finite norm (an inf or NaN gradient) is reported, not applied: the
// gradients stay untouched and `first_nonfinite` names the first offending
// gradient in name order; the caller skips or fails the step.
#pragma once

#include <map>
#include <string>

#include "ir/status.h"
#include "ir/tensor.h"

namespace amptrain::executor::train {

struct ClipResult {
  double norm = 0.0;            // the global L2 norm before clipping
  bool finite = true;           // false: some gradient holds inf/NaN, nothing changed
  bool clipped = false;         // true: gradients were scaled down
  std::string first_nonfinite;  // set when !finite
};

// The global L2 norm of `grads` (fp64 accumulation); first_nonfinite as above.
StatusOr<ClipResult> GlobalGradNorm(const std::map<std::string, ir::Tensor>& grads);

// torch.nn.utils.clip_grad_norm_'s factor: max_norm / (norm + 1e-6); the
// gradients are scaled by it when it is below 1.
inline double ClipCoefficient(double norm, double max_norm) { return max_norm / (norm + 1e-6); }

// Clips in place to `max_norm` (finite, > 0) and returns the norm it saw.
StatusOr<ClipResult> ClipGradNorm(std::map<std::string, ir::Tensor>& grads, double max_norm);

}  // namespace amptrain::executor::train
