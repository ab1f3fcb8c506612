// oneDNN MaxPool / AveragePool 2-D (pooling_v2: dilations), fp32 and bf16,
// plain nchw. ceil_mode becomes extra right padding so that oneDNN's floor
// formula yields ONNX's output size. AveragePool with count_include_pad
// would count that extra padding, so it is taken only when ceil_mode adds
// none; MaxPool with the Indices output, and dilated pools (oneDNN 2.6 has
// only its reference implementation for them), fall back to the reference
// kernel.
#include <algorithm>

#include "kernels/cpu/conv_geometry.h"
#include "kernels/cpu/onednn_common.h"

namespace amptrain::kernels::cpu::onednn {

namespace {

StatusOr<std::unique_ptr<Kernel>> MakePool(const KernelInit& init) {
  if (!init.attrs || init.inputs.size() != 1 || init.outputs.size() != 1)
    return init.Error("the Indices output is not supported by oneDNN pooling");
  const DType t = init.inputs[0].dtype;
  const auto& x = init.inputs[0].dims;
  const auto& y = init.outputs[0].dims;
  if (x.size() != 4) return init.Error("oneDNN pooling takes 2-D pools only");
  AMP_ASSIGN_OR_RETURN(ir::WindowGeometry g, ResolveWindow(init, {}, false));
  const bool is_max = init.op == OpKind::kMaxPool;
  const bool include_pad = !is_max && init.attrs->Int("count_include_pad", 0) != 0;
  dnnl::memory::dims pr(2);
  for (size_t d = 0; d < 2; ++d) {
    int64_t needed = (y[d + 2] - 1) * g.strides[d] + g.extent(d) - x[d + 2] - g.pads_begin[d];
    if (include_pad && needed > g.pads_end[d]) return init.Error("ceil_mode overhang with count_include_pad");
    pr[d] = std::max(needed, int64_t{0});
  }
  auto alg = is_max        ? dnnl::algorithm::pooling_max
             : include_pad ? dnnl::algorithm::pooling_avg_include_padding
                           : dnnl::algorithm::pooling_avg_exclude_padding;
  return Guarded(init, [&]() -> StatusOr<std::unique_ptr<Kernel>> {
    dnnl::memory::desc src = PlainDesc(x, t), dst = PlainDesc(y, t);
    dnnl::pooling_v2_forward::desc desc(dnnl::prop_kind::forward_inference, alg, src, dst, Dims(g.strides),
                                        Dims(g.kernel), Dilations(g.dilations), Dims(g.pads_begin),
                                        pr);
    dnnl::pooling_v2_forward::primitive_desc pd(desc, UserScratchpad(), Engine());
    if (IsReferenceImpl(pd)) return Unimplemented(init.Describe(), ": oneDNN has only its reference pooling here");
    std::vector<Binding> bind = {{DNNL_ARG_SRC, Binding::kInput, 0, src}, {DNNL_ARG_DST, Binding::kOutput, 0, dst}};
    return std::unique_ptr<Kernel>(
        new PrimitiveKernel(init.Describe(), dnnl::pooling_v2_forward(pd), std::move(bind), {}));
  });
}

}  // namespace

void RegisterOneDnnPool(Registry& r) {
  AddOneDnn(r, OpKind::kMaxPool, MakePool);
  AddOneDnn(r, OpKind::kAveragePool, MakePool);
}

}  // namespace amptrain::kernels::cpu::onednn
