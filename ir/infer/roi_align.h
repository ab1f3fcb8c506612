// RoiAlign's attributes (ir/ops.def), decoded once for its shape rule, its
// kernels and its gradient rule.
#pragma once

#include <cstdint>

#include "ir/attribute.h"
#include "ir/status.h"

namespace amptrain::ir {

struct RoiAlignParams {
  bool max = false;          // mode max (else avg)
  int64_t height = 1, width = 1;
  int64_t sampling_ratio = 0;  // 0: ceil(roi size / output size) samples per bin side
  float spatial_scale = 1.0f;
  bool half_pixel = true;    // coordinate_transformation_mode (opset 16's default)
};

// Errors name the attribute and its value.
StatusOr<RoiAlignParams> DecodeRoiAlign(const Attributes& attrs);

}  // namespace amptrain::ir
