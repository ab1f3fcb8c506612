// The geometry of DFT (ir/ops.def), shared by its shape rule, its kernels and
// its gradient rule, so that the three read the attributes one way.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/attribute.h"
#include "ir/shape.h"
#include "ir/status.h"
#include "ir/tensor.h"

namespace amptrain::ir {

struct DftGeometry {
  int64_t axis = 0;        // in [0, rank - 1): never the trailing [re, im] axis
  int64_t n = -1;          // the input's length along axis (-1: symbolic)
  int64_t length = -1;     // L, the transform's length (-1: not known before run time)
  int64_t out_len = -1;    // the output's length along axis (-1: not known)
  int64_t in_parts = 1;    // 1: real input, 2: complex
  int64_t out_parts = 2;   // 1: a real output (IRFFT)
  bool inverse = false;
  bool onesided = false;

  bool rfft() const { return onesided && !inverse; }
  bool irfft() const { return onesided && inverse; }
};

// Decodes DFT's attributes and inputs. `dims` are the input's (-1 where
// symbolic); `dft_length` and `axis` are those inputs' values where known
// (nullptr: absent or not constant; an absent axis is -2). Errors name what
// is wrong, without the node (callers add it).
StatusOr<DftGeometry> DecodeDft(const Attributes& attrs, const std::vector<int64_t>& dims, bool has_dft_length,
                                const Tensor* dft_length, bool has_axis, const Tensor* axis);

// The output dims of a decoded DFT (-1 where not known).
std::vector<int64_t> DftOutputDims(const DftGeometry& g, const std::vector<int64_t>& dims);

// STFT's frame length W (ir/ops.def), shared by its shape rule and its
// lowering: frame_length's value, else the window's length, else (neither
// given) the signal's length; -1 where that is not known before run time.
// Errors: a frame_length that is not one value >= 1, or that differs from
// the window's length. `window` is null when absent.
StatusOr<int64_t> StftFrameLength(bool has_frame_length, const Tensor* frame_length, const TensorType* window,
                                  const Shape& signal);

}  // namespace amptrain::ir
