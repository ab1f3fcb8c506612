// Reference ConvTranspose: X [N, C, in...], W [C, M/group, k...], optional
// B [M] -> Y [N, M, out...], any spatial rank. Written in gather form: output
// o receives X[i] * W[k] wherever o = i*s - pb + k*dil, i.e. the table entry
// of kernels/cpu/conv_geometry.h built with `transposed`, run by the Conv
// reference loop (MakeGatherConv in kernels/cpu/conv.cc). Pads,
// output_padding, output_shape and auto_pad are resolved by ir::WindowGeometry.
#include "kernels/cpu/conv_geometry.h"
#include "kernels/cpu/nn_kernels.h"

namespace amptrain::kernels::cpu::nn {

StatusOr<std::unique_ptr<Kernel>> MakeConvTransposeReference(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 3, 1, 1));
  AMP_RETURN_IF_ERROR(CheckSameDType(init, 1, 3));
  const auto& x = init.inputs[0].dims;
  const auto& w = init.inputs[1].dims;
  if (w.size() != x.size()) return init.Error("weight rank ", w.size(), " != input rank ", x.size());
  AMP_ASSIGN_OR_RETURN(int64_t group, init.attrs->GetInt("group", 1));
  if (group < 1 || x[1] % group != 0 || x[1] != w[0])
    return init.Error("channels: input ", x[1], ", weight [", w[0], ", ", w[1], ", ...], group ", group);
  if (init.inputs.size() > 2 && init.inputs[2].present() &&
      (init.inputs[2].dims.size() != 1 || init.inputs[2].dims[0] != w[1] * group))
    return init.Error("bias must have ", w[1] * group, " elements");
  AMP_ASSIGN_OR_RETURN(ir::WindowGeometry g, ResolveWindow(init, {w.begin() + 2, w.end()}, true));
  return MakeGatherConv(init, g, group, true);
}

}  // namespace amptrain::kernels::cpu::nn
