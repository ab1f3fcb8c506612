// oneDNN BatchNormalization, fp32 data and params, plain layout, rank 2..5.
//   inference (given mean/var): use_global_stats | use_scale | use_shift.
//   training (KernelInit::training, training_mode=1 or 3 outputs):
//     forward_training computes the batch mean and biased variance into
//     scratch; Run then writes the running-stat outputs (when present) as the
//     reference kernel defines them (kernels/cpu/batchnorm.cc):
//       running = input * momentum + batch * (1 - momentum)   (biased var)
#include "kernels/cpu/onednn_common.h"

namespace amptrain::kernels::cpu::onednn {

namespace {

class BatchNormTrainKernel : public Kernel {
 public:
  BatchNormTrainKernel(std::string describe, const dnnl::batch_normalization_forward::primitive_desc& pd,
                       dnnl::memory::desc data, dnnl::memory::desc vec, int64_t channels, float momentum)
      : describe_(std::move(describe)), fwd_(pd), data_(data), vec_(vec), c_(channels), momentum_(momentum),
        stream_(Engine()) {}

  size_t scratch_bytes() const override { return 2 * VecBytes(); }  // batch mean, batch variance

  Status Run(KernelContext& ctx) override {
    auto mem = [](const dnnl::memory::desc& d, void* p) { return dnnl::memory(d, Engine(), p); };
    auto* mean = static_cast<float*>(ctx.scratch);
    auto* var = reinterpret_cast<float*>(static_cast<std::byte*>(ctx.scratch) + VecBytes());
    try {
      fwd_.execute(stream_, {{DNNL_ARG_SRC, mem(data_, ctx.inputs[0].data)}, {DNNL_ARG_DST, mem(data_, ctx.outputs[0].data)},
                             {DNNL_ARG_SCALE, mem(vec_, ctx.inputs[1].data)}, {DNNL_ARG_SHIFT, mem(vec_, ctx.inputs[2].data)},
                             {DNNL_ARG_MEAN, mem(vec_, mean)}, {DNNL_ARG_VARIANCE, mem(vec_, var)}});
      stream_.wait();
    } catch (const dnnl::error& e) {
      return Internal(describe_, ": oneDNN execution failed: ", e.what());
    }
    const float m = momentum_;
    for (int k = 1; k < 3; ++k) {
      if (ctx.outputs.size() <= static_cast<size_t>(k) || !ctx.outputs[k].data) continue;
      const float* in = ctx.inputs[2 + k].as<const float>();
      const float* batch = k == 1 ? mean : var;
      float* out = ctx.outputs[k].as<float>();
      for (int64_t c = 0; c < c_; ++c) out[c] = in[c] * m + batch[c] * (1.0f - m);
    }
    return Status::Ok();
  }

 private:
  size_t VecBytes() const { return (vec_.get_size() + 63) / 64 * 64; }

  std::string describe_;
  dnnl::batch_normalization_forward fwd_;
  dnnl::memory::desc data_, vec_;
  int64_t c_;
  float momentum_;
  dnnl::stream stream_;
};

StatusOr<std::unique_ptr<Kernel>> MakeBatchNorm(const KernelInit& init) {
  if (!init.attrs || init.inputs.size() != 5 || init.outputs.size() == 2 || init.outputs.size() > 3)
    return init.Error("oneDNN BN takes 5 inputs and 1 or 3 outputs");
  const bool training = init.training || init.attrs->Int("training_mode", 0) != 0 || init.outputs.size() == 3;
  const auto& x = init.inputs[0].dims;
  if (x.size() < 2 || x.size() > 5) return init.Error("rank");
  // Inference takes fp32 or bf16 X/Y with fp32 scale/B/mean/var (oneDNN keeps
  // the per-channel vectors in f32; AMP O2 writes exactly that form);
  // training takes fp32 only.
  const DType data_type = init.inputs[0].dtype;
  if (data_type != DType::kFloat32 && (training || data_type != DType::kBFloat16))
    return init.Error("oneDNN BN takes fp32 data (bf16 in inference)");
  for (size_t i = 1; i < 5; ++i)
    if (init.inputs[i].dtype != DType::kFloat32) return init.Error("oneDNN BN takes fp32 scale/B/mean/var");
  for (size_t k = 0; k < init.outputs.size(); ++k)
    if (init.outputs[k].dtype != (k == 0 ? data_type : DType::kFloat32)) return init.Error("output dtype");
  AMP_ASSIGN_OR_RETURN(float eps, init.attrs->GetFloat("epsilon", 1e-5f));
  AMP_ASSIGN_OR_RETURN(float momentum, init.attrs->GetFloat("momentum", 0.9f));
  if (training) {
    return Guarded(init, [&]() -> StatusOr<std::unique_ptr<Kernel>> {
      dnnl::memory::desc data = PlainDesc(x, DType::kFloat32), vec = PlainDesc({x[1]}, DType::kFloat32);
      auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
      dnnl::batch_normalization_forward::primitive_desc pd(
          dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, data, eps, flags), Engine());
      if (IsReferenceImpl(pd)) return Unimplemented(init.Describe(), ": oneDNN has only its reference here");
      return std::unique_ptr<Kernel>(new BatchNormTrainKernel(init.Describe(), pd, data, vec, x[1], momentum));
    });
  }
  return Guarded(init, [&]() -> StatusOr<std::unique_ptr<Kernel>> {
    dnnl::memory::desc data = PlainDesc(x, data_type), vec = PlainDesc({x[1]}, DType::kFloat32);
    auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
                 dnnl::normalization_flags::use_shift;
    dnnl::batch_normalization_forward::desc desc(dnnl::prop_kind::forward_inference, data, eps, flags);
    dnnl::batch_normalization_forward::primitive_desc pd(desc, UserScratchpad(), Engine());
    if (IsReferenceImpl(pd)) return Unimplemented(init.Describe(), ": oneDNN has only its reference here");
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
  AddOneDnn(r, OpKind::kBatchNormalization, MakeBatchNorm, {DType::kFloat32, DType::kBFloat16});
}

}  // namespace amptrain::kernels::cpu::onednn
