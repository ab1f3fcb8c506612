// oneDNN BatchNormalizationGrad, fp32, plain layout, rank 2..5. oneDNN's
// backward needs the batch mean and variance, which the graph does not keep:
// Run recomputes them with a forward_training batch normalization into
// scratch, then runs backward (use_scale | use_shift, the oneDNN 2.6 flags
// with separate scale and shift tensors, so dScale and dBias land in their
// own buffers without packing). The forward's normalized output is not
// needed: it is written into dX, which the backward then overwrites. Both
// primitives take a shift argument (oneDNN 2.6 checks it is bound under
// use_shift even in backward, where it does not affect the result); it is
// bound to the scale buffer.
// dScale/dBias with data == nullptr go to scratch; a null dX (rare: X needs
// no gradient) uses a buffer allocated in Run.
#include <vector>

#include "kernels/cpu/grad_kernels.h"
#include "kernels/cpu/onednn_grad.h"

namespace amptrain::kernels::cpu::onednn {

namespace {

class BatchNormGradKernel : public Kernel {
 public:
  BatchNormGradKernel(std::string describe, const dnnl::batch_normalization_forward::primitive_desc& fwd,
                      const dnnl::batch_normalization_backward::primitive_desc& bwd, dnnl::memory::desc data,
                      dnnl::memory::desc vec)
      : describe_(std::move(describe)), fwd_(fwd), bwd_(bwd), data_(data), vec_(vec), stream_(Engine()) {}

  // mean, variance, and stand-ins for unused dScale, dBias.
  size_t scratch_bytes() const override { return 4 * VecBytes(); }

  Status Run(KernelContext& ctx) override {
    auto mem = [](const dnnl::memory::desc& d, void* p) { return dnnl::memory(d, Engine(), p); };
    auto* scratch = static_cast<std::byte*>(ctx.scratch);
    std::vector<float> own_dx;
    void* dx = ctx.outputs[0].data;
    if (!dx) {
      own_dx.resize(data_.get_size() / sizeof(float));
      dx = own_dx.data();
    }
    void* dscale = ctx.outputs.size() > 1 && ctx.outputs[1].data ? ctx.outputs[1].data : scratch + 2 * VecBytes();
    void* dshift = ctx.outputs.size() > 2 && ctx.outputs[2].data ? ctx.outputs[2].data : scratch + 3 * VecBytes();
    try {
      dnnl::memory x = mem(data_, ctx.inputs[1].data), scale = mem(vec_, ctx.inputs[2].data);
      dnnl::memory mean = mem(vec_, scratch), var = mem(vec_, scratch + VecBytes());
      fwd_.execute(stream_, {{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, mem(data_, dx)}, {DNNL_ARG_SCALE, scale},
                             {DNNL_ARG_SHIFT, scale}, {DNNL_ARG_MEAN, mean}, {DNNL_ARG_VARIANCE, var}});
      bwd_.execute(stream_, {{DNNL_ARG_SRC, x}, {DNNL_ARG_DIFF_DST, mem(data_, ctx.inputs[0].data)},
                             {DNNL_ARG_SCALE, scale}, {DNNL_ARG_SHIFT, scale}, {DNNL_ARG_MEAN, mean},
                             {DNNL_ARG_VARIANCE, var}, {DNNL_ARG_DIFF_SRC, mem(data_, dx)}, {DNNL_ARG_DIFF_SCALE, mem(vec_, dscale)},
                             {DNNL_ARG_DIFF_SHIFT, mem(vec_, dshift)}});
      stream_.wait();
    } catch (const dnnl::error& e) {
      return Internal(describe_, ": oneDNN execution failed: ", e.what());
    }
    return Status::Ok();
  }

 private:
  size_t VecBytes() const { return (vec_.get_size() + 63) / 64 * 64; }

  std::string describe_;
  dnnl::batch_normalization_forward fwd_;
  dnnl::batch_normalization_backward bwd_;
  dnnl::memory::desc data_, vec_;
  dnnl::stream stream_;
};

StatusOr<std::unique_ptr<Kernel>> MakeBatchNormGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(grad::CheckArity(init, 3, 3, 1, 3));
  const auto& x = init.inputs[1].dims;
  if (x.size() < 2 || x.size() > 5 || init.inputs[0].dims != x) return init.Error("rank");
  for (const TensorSpec& s : init.inputs)
    if (s.dtype != DType::kFloat32) return init.Error("oneDNN BatchNormalizationGrad takes fp32 only");
  for (const TensorSpec& s : init.outputs)
    if (s.dtype != DType::kFloat32) return init.Error("oneDNN BatchNormalizationGrad takes fp32 only");
  if (init.inputs[2].dims != std::vector<int64_t>{x[1]}) return init.Error("scale must have C elements");
  AMP_ASSIGN_OR_RETURN(float eps, init.attrs->GetFloat("epsilon", 1e-5f));
  return Guarded(init, [&]() -> StatusOr<std::unique_ptr<Kernel>> {
    const dnnl::memory::desc data = PlainDesc(x, DType::kFloat32), vec = PlainDesc({x[1]}, DType::kFloat32);
    const auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
    dnnl::batch_normalization_forward::primitive_desc fwd(
        dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, data, eps, flags), Engine());
    dnnl::batch_normalization_backward::primitive_desc bwd(
        dnnl::batch_normalization_backward::desc(dnnl::prop_kind::backward, data, data, eps, flags), Engine(), fwd);
    if (IsReferenceImpl(fwd) || IsReferenceImpl(bwd))
      return Unimplemented(init.Describe(), ": oneDNN has only its reference batch normalization here");
    return std::unique_ptr<Kernel>(new BatchNormGradKernel(init.Describe(), fwd, bwd, data, vec));
  });
}

}  // namespace

void RegisterOneDnnBatchNormGrad(Registry& r) {
  AddOneDnn(r, OpKind::kBatchNormalizationGrad, MakeBatchNormGrad, {DType::kFloat32});
}

}  // namespace amptrain::kernels::cpu::onednn
