// oneDNN BatchNormalization, inference only (given mean/var: use_global_stats,
// use_scale, use_shift), fp32 data and params, plain layout, rank 2..5.
// Training mode (KernelInit::training, training_mode=1 or the running-stat
// outputs) falls back to the reference kernel.
#include "kernels/cpu/onednn_common.h"

namespace amptrain::kernels::cpu::onednn {

namespace {

StatusOr<std::unique_ptr<Kernel>> MakeBatchNorm(const KernelInit& init) {
  if (!init.attrs || init.inputs.size() != 5 || init.outputs.size() != 1)
    return init.Error("training-mode outputs are not supported by oneDNN BN");
  if (init.training || init.attrs->Int("training_mode", 0) != 0) return init.Error("training mode");
  const auto& x = init.inputs[0].dims;
  if (x.size() < 2 || x.size() > 5) return init.Error("rank");
  for (size_t i = 0; i < 5; ++i)
    if (init.inputs[i].dtype != DType::kFloat32) return init.Error("oneDNN BN takes fp32 only");
  AMP_ASSIGN_OR_RETURN(float eps, init.attrs->GetFloat("epsilon", 1e-5f));
  return Guarded(init, [&]() -> StatusOr<std::unique_ptr<Kernel>> {
    dnnl::memory::desc data = PlainDesc(x, DType::kFloat32), vec = PlainDesc({x[1]}, DType::kFloat32);
    auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
                 dnnl::normalization_flags::use_shift;
    dnnl::batch_normalization_forward::desc desc(dnnl::prop_kind::forward_inference, data, eps, flags);
    dnnl::batch_normalization_forward::primitive_desc pd(desc, Engine());
    std::vector<Binding> bind = {
        {DNNL_ARG_SRC, Binding::kInput, 0, data},     {DNNL_ARG_SCALE, Binding::kInput, 1, vec},
        {DNNL_ARG_SHIFT, Binding::kInput, 2, vec},    {DNNL_ARG_MEAN, Binding::kInput, 3, vec},
        {DNNL_ARG_VARIANCE, Binding::kInput, 4, vec}, {DNNL_ARG_DST, Binding::kOutput, 0, data}};
    return std::unique_ptr<Kernel>(
        new PrimitiveKernel(init.Describe(), dnnl::batch_normalization_forward(pd), std::move(bind), {}));
  });
}

}  // namespace

void RegisterOneDnnBatchNorm(Registry& r) {
  r.Add(OneDnnEntry(OpKind::kBatchNormalization, MakeBatchNorm, {DType::kFloat32}));
}

}  // namespace amptrain::kernels::cpu::onednn
