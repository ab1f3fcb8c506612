// Kernel-side window geometry for the CPU conv/pool kernels: decodes and
// resolves the node's WindowGeometry (ir/infer/conv_geometry.h, shared with
// the shape rules) against the concrete shapes of a KernelInit, and builds
// the gather table the reference kernels loop over.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/infer/conv_geometry.h"
#include "kernels/kernel.h"

namespace amptrain::kernels::cpu {

// Window geometry of a node with input X = init.inputs[0] ([N, C, spatial...])
// and kernel sizes `kernel` (empty: the kernel_shape attribute); pads are
// resolved and the resulting output dims are checked against
// init.outputs[0].dims[2:]. Errors name the node. Input and output planes
// must have fewer than 2^31 elements (BuildWindowTable's offsets).
StatusOr<ir::WindowGeometry> ResolveWindow(const KernelInit& init, const std::vector<int64_t>& kernel, bool transposed);

// Gather table of a window op: entry [k * out_size + o] is the row-major
// offset, inside one [spatial...] input plane, of the element that kernel
// offset k (row-major over g.kernel) reads for output position o (row-major
// over out_dims), or -1 where that falls in the padding.
//   forward:     i_d = o_d * s_d - pb_d + k_d * dil_d
//   transposed:  i_d = (o_d + pb_d - k_d * dil_d) / s_d when divisible
// Offset is int64_t or int32_t; the reference conv/pool kernels use int32_t
// (half the memory, and the gather vectorizes ~3x faster), which
// ResolveWindow makes safe by rejecting planes of 2^31 or more elements.
template <class Offset = int64_t>
std::vector<Offset> BuildWindowTable(const ir::WindowGeometry& g, const std::vector<int64_t>& in_dims,
                                     const std::vector<int64_t>& out_dims, bool transposed);

// Product of dims[from:].
int64_t SpatialSize(const std::vector<int64_t>& dims, size_t from = 2);

// A 1-D window op (Conv, FusedConv, ConvGrad, ConvTranspose, the pools and
// their gradients; X [N, C, L]) as the 2-D one it is, for kernels that take
// 2-D only: [N, C, L] read as [N, C, 1, L] (the
// same bytes), so every rank-3 spec gets a unit dim at 2 and the window
// attributes a leading unit entry (kernel_shape, strides, dilations 1; pads
// and output_padding 0; output_shape 1). The lifted init points at `attrs`, which must outlive it;
// nullopt when `init` is not 1-D.
std::optional<KernelInit> LiftWindow1d(const KernelInit& init, ir::Attributes& attrs);

}  // namespace amptrain::kernels::cpu
