// oneDNN MaxPool / AveragePool of 1 to 3 spatial dims (pooling_v2:
// dilations), fp32 and bf16, plain ncw / nchw / ncdhw (the direct kernels,
// kernels/cpu/direct_pool.cc, take the 1-D and 2-D ones first). ceil_mode
// becomes extra right padding so that oneDNN's floor formula yields ONNX's
// output size. AveragePool with count_include_pad would count that extra
// padding, so it is taken only when ceil_mode adds none; MaxPool with the
// Indices output, and dilated pools (oneDNN 2.6 has only its reference
// implementation for them), fall back to the reference kernel.
#include "kernels/cpu/onednn_common.h"

namespace amptrain::kernels::cpu::onednn {

namespace {

StatusOr<std::unique_ptr<Kernel>> MakePool(const KernelInit& init) {
  if (!init.attrs || init.inputs.size() != 1 || init.outputs.size() != 1)
    return init.Error("the Indices output is not supported by oneDNN pooling");
  const DType t = init.inputs[0].dtype;
  const auto& x = init.inputs[0].dims;
  const auto& y = init.outputs[0].dims;
  if (x.size() < 3 || x.size() > 5) return init.Error("oneDNN pooling takes 1-D, 2-D and 3-D pools");
  AMP_ASSIGN_OR_RETURN(PoolWindow w, ResolvePoolWindow(init, init.op == OpKind::kMaxPool, x, y));
  return Guarded(init, [&]() -> StatusOr<std::unique_ptr<Kernel>> {
    dnnl::memory::desc src = PlainDesc(x, t), dst = PlainDesc(y, t);
    dnnl::pooling_v2_forward::desc desc(dnnl::prop_kind::forward_inference, w.alg, src, dst, w.strides, w.kernel,
                                        w.dilations, w.pads_begin, w.pads_end);
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
