// The taps of a 1-D resample (Resize's nearest/linear/cubic, every
// coordinate transform, exclude_outside, antialias, tf_crop_and_resize's
// extrapolation), shared by the CPU reference (kernels/cpu/pad_resize.cc,
// which resamples with them) and the CUDA kernel (kernels/cuda/
// pad_resize_kernels.cc, which computes them at plan time and uploads them):
// one computation, so both sample the same sources with the same weights.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ir/infer/shape_params.h"

namespace amptrain::kernels {

// One output position of a 1-D resample: taps (source index, clamped to
// [0, in), and weight), or `extrapolate` (tf_crop_and_resize outside the
// input: no taps, the extrapolation value).
struct ResizeTaps {
  std::vector<int64_t> index;
  std::vector<double> weight;
  bool extrapolate = false;
};

// The taps of output position x of `out` over `in` sources along an axis of
// scale `scale` and roi [r0, r1].
ResizeTaps ComputeResizeTaps(const ir::ResizeAttrs& a, int64_t x, int64_t in, int64_t out, double scale, double r0,
                             double r1);

// One axis of a resample: the elements before and after it, and the taps of
// each of its `out` positions over `in` sources. `dims` holds the axis's
// current size (in for the forward, out for the adjoint); only the others
// are read.
struct ResizeAxisTaps {
  int64_t outer = 1, inner = 1;
  std::vector<ResizeTaps> taps;
};

ResizeAxisTaps ResizeTapsOfAxis(const ir::ResizeAttrs& a, const ir::ResizeGeometry& g,
                                const std::vector<int64_t>& dims, size_t axis, int64_t in, int64_t out);

}  // namespace amptrain::kernels
