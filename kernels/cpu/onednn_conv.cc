// oneDNN Conv 2-D, fp32 and bf16 (bf16 src/weights, fp32 accumulation, bf16
// dst): groups (incl. depthwise), dilations, strides, asymmetric pads (oneDNN
// padding_l/padding_r), bias fused. Src/dst stay plain nchw. A constant
// weight is reordered once into the layout oneDNN picks for it. Other ranks,
// and configurations for which oneDNN only has its reference implementation,
// fall back to the reference kernel.
#include "kernels/cpu/conv_geometry.h"
#include "kernels/cpu/onednn_common.h"

namespace amptrain::kernels::cpu::onednn {

namespace {

StatusOr<std::unique_ptr<Kernel>> MakeConv(const KernelInit& init) {
  if (!init.attrs || init.inputs.size() < 2 || init.outputs.size() != 1)
    return init.Error("expects inputs X, W[, B] and one output");
  const DType t = init.inputs[0].dtype;
  const auto& x = init.inputs[0].dims;
  const auto& w = init.inputs[1].dims;
  const bool has_bias = init.inputs.size() > 2 && init.inputs[2].present();
  if (x.size() != 4 || w.size() != 4) return init.Error("oneDNN conv takes 2-D convolutions only");
  if (init.inputs[1].dtype != t || (has_bias && init.inputs[2].dtype != t)) return init.Error("mixed dtypes");
  AMP_ASSIGN_OR_RETURN(int64_t group, init.attrs->GetInt("group", 1));
  if (group < 1 || w[0] % group != 0 || x[1] != w[1] * group) return init.Error("channels do not match group");
  AMP_ASSIGN_OR_RETURN(ir::WindowGeometry g, ResolveWindow(init, {w[2], w[3]}, false));
  const auto& y = init.outputs[0].dims;
  return Guarded(init, [&]() -> StatusOr<std::unique_ptr<Kernel>> {
    using tag = dnnl::memory::format_tag;
    dnnl::memory::desc src = PlainDesc(x, t), dst = PlainDesc(y, t);
    std::vector<int64_t> wdims = group == 1 ? w : std::vector<int64_t>{group, w[0] / group, w[1], w[2], w[3]};
    dnnl::memory::desc w_plain = PlainDesc(wdims, t);
    const ir::Tensor* wval = init.inputs[1].value;
    const bool reorder = wval && wval->dtype() == t;
    dnnl::memory::desc w_any = reorder ? dnnl::memory::desc(Dims(wdims), DataType(t), tag::any) : w_plain;
    dnnl::memory::dims strides = Dims(g.strides), dil = {g.dilations[0] - 1, g.dilations[1] - 1};
    dnnl::memory::dims pl = Dims(g.pads_begin), pr = Dims(g.pads_end);
    auto prop = dnnl::prop_kind::forward_inference;
    auto alg = dnnl::algorithm::convolution_direct;
    auto desc = has_bias ? dnnl::convolution_forward::desc(prop, alg, src, w_any, PlainDesc({w[0]}, t), dst, strides,
                                                           dil, pl, pr)
                         : dnnl::convolution_forward::desc(prop, alg, src, w_any, dst, strides, dil, pl, pr);
    dnnl::convolution_forward::primitive_desc pd(desc, Engine());
    if (IsReferenceImpl(pd)) return Unimplemented(init.Describe(), ": oneDNN has only its reference convolution here");
    std::vector<Binding> bind = {{DNNL_ARG_SRC, Binding::kInput, 0, src}, {DNNL_ARG_DST, Binding::kOutput, 0, dst}};
    std::vector<dnnl::memory> owned;
    if (reorder) {
      owned.push_back(ReorderConstant(*wval, w_plain, pd.weights_desc()));
      bind.push_back({DNNL_ARG_WEIGHTS, Binding::kOwned, 0, {}});
    } else {
      bind.push_back({DNNL_ARG_WEIGHTS, Binding::kInput, 1, w_plain});
    }
    if (has_bias) bind.push_back({DNNL_ARG_BIAS, Binding::kInput, 2, PlainDesc({w[0]}, t)});
    return std::unique_ptr<Kernel>(
        new PrimitiveKernel(init.Describe(), dnnl::convolution_forward(pd), std::move(bind), std::move(owned)));
  });
}

}  // namespace

void RegisterOneDnnConv(Registry& r) { r.Add(OneDnnEntry(OpKind::kConv, MakeConv)); }

}  // namespace amptrain::kernels::cpu::onednn
