// Sliding-window geometry of Conv, ConvTranspose and the pools: the one
// place that turns ONNX's kernel_shape/strides/dilations/pads/auto_pad/
// ceil_mode/output_padding/output_shape into output sizes and concrete
// begin/end pads. Used by the shape rules (ir/infer/nn.cc) and by every CPU
// kernel (kernels/cpu/conv*.cc, pool.cc, onednn_*.cc), so both agree.
//
// Per spatial dim, with dk = (kernel-1)*dilation + 1:
//   NOTSET      out = floor((in + pb + pe - dk) / s) + 1   (ceil with ceil_mode,
//               dropping a last window that would start in the end padding)
//   VALID       out = floor((in - dk) / s) + 1, pads 0
//   SAME_UPPER  out = ceil(in / s), total = max(0, (out-1)*s + dk - in),
//               pb = total/2, pe = total - pb (SAME_LOWER: the extra one at the begin)
// ConvTranspose (no output_shape):
//   out = s*(in-1) + output_padding + dk - pb - pe; SAME_*: out = in*s
// ConvTranspose with output_shape (and no explicit pads): total = s*(in-1) +
//   output_padding + dk - out; SAME_UPPER pb = floor(total/2), otherwise
//   pb = total - floor(total/2) (ONNX reference; total may be negative).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/attribute.h"
#include "ir/status.h"

namespace amptrain::ir {

class Tensor;

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

struct WindowGeometry {
  AutoPad auto_pad = AutoPad::kNotSet;
  bool ceil_mode = false;
  bool explicit_pads = false;   // the node has a `pads` attribute
  std::vector<int64_t> kernel;  // spatial kernel sizes
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads_begin;  // resolved by Resolve*()
  std::vector<int64_t> pads_end;
  // ConvTranspose only.
  std::vector<int64_t> output_padding;
  std::vector<int64_t> output_shape;  // empty when not given

  size_t rank() const { return kernel.size(); }
  int64_t extent(size_t d) const { return (kernel[d] - 1) * dilations[d] + 1; }

  // Output sizes of a forward window op (Conv, pools) for static input
  // sizes; fills pads_begin/pads_end. Fails when a window does not fit.
  StatusOr<std::vector<int64_t>> Resolve(const std::vector<int64_t>& in);
  // Output sizes of ConvTranspose; fills pads_begin/pads_end.
  StatusOr<std::vector<int64_t>> ResolveTransposed(const std::vector<int64_t>& in);
};

// Decodes the attributes of a window op with `spatial_rank` spatial dims.
// `kernel` comes from the weights (Conv/ConvTranspose) or is empty to read
// the required kernel_shape attribute (pools); a kernel_shape attribute that
// disagrees with the weights is an error. Messages do not name the node:
// callers prefix them.
StatusOr<WindowGeometry> DecodeWindow(const Attributes& attrs, size_t spatial_rank, const std::vector<int64_t>& kernel,
                                      bool transposed = false);

// Col2Im(x [N, C prod(block), L], image_shape, block_shape): the blocks'
// window (kernel = block_shape; strides, dilations, pads from the
// attributes), the image sizes and the number of block positions per dim,
// whose product L must be. image_shape and block_shape must be known (1-D
// int64 of one length).
struct Col2ImGeometry {
  WindowGeometry window;
  std::vector<int64_t> image, counts;
  int64_t block_elements = 1, positions = 1;  // prod(block_shape), prod(counts) = L
};
StatusOr<Col2ImGeometry> DecodeCol2Im(const Attributes& attrs, const Tensor* image_shape,
                                      const Tensor* block_shape);

}  // namespace amptrain::ir
