// oneDNN MaxPoolGrad 2-D, fp32 and bf16, plain nchw. oneDNN's max-pooling
// backward needs the workspace (argmax) of a forward_training run, which the
// graph does not keep: Run recomputes the forward pooling of X into scratch
// (dst and workspace), then runs the backward. The recompute costs one
// forward pool per step, far less than the conv around it. ceil_mode
// becomes extra right padding as in kernels/cpu/onednn_pool.cc. Dilated
// pools (reference-only in oneDNN 2.6) fall back to the reference kernel.
#include <algorithm>

#include "kernels/cpu/conv_geometry.h"
#include "kernels/cpu/grad_kernels.h"
#include "kernels/cpu/onednn_grad.h"

namespace amptrain::kernels::cpu::onednn {

namespace {

class MaxPoolGradKernel : public Kernel {
 public:
  MaxPoolGradKernel(std::string describe, const dnnl::pooling_v2_forward::primitive_desc& fwd,
                    const dnnl::pooling_v2_backward::primitive_desc& bwd, dnnl::memory::desc x, dnnl::memory::desc y)
      : describe_(std::move(describe)), fwd_(fwd), bwd_(bwd), x_(x), y_(y), ws_(fwd.workspace_desc()),
        stream_(Engine()) {}

  size_t scratch_bytes() const override { return DstBytes() + ws_.get_size(); }

  Status Run(KernelContext& ctx) override {
    if (!ctx.outputs[0].data) return Status::Ok();
    auto* scratch = static_cast<std::byte*>(ctx.scratch);
    try {
      dnnl::memory ws(ws_, Engine(), scratch + DstBytes());
      fwd_.execute(stream_, {{DNNL_ARG_SRC, dnnl::memory(x_, Engine(), ctx.inputs[1].data)},
                             {DNNL_ARG_DST, dnnl::memory(y_, Engine(), scratch)},
                             {DNNL_ARG_WORKSPACE, ws}});
      bwd_.execute(stream_, {{DNNL_ARG_DIFF_DST, dnnl::memory(y_, Engine(), ctx.inputs[0].data)},
                             {DNNL_ARG_WORKSPACE, ws},
                             {DNNL_ARG_DIFF_SRC, dnnl::memory(x_, Engine(), ctx.outputs[0].data)}});
      stream_.wait();
    } catch (const dnnl::error& e) {
      return Internal(describe_, ": oneDNN execution failed: ", e.what());
    }
    return Status::Ok();
  }

 private:
  size_t DstBytes() const { return (y_.get_size() + 63) / 64 * 64; }

  std::string describe_;
  dnnl::pooling_v2_forward fwd_;
  dnnl::pooling_v2_backward bwd_;
  dnnl::memory::desc x_, y_, ws_;
  dnnl::stream stream_;
};

StatusOr<std::unique_ptr<Kernel>> MakeMaxPoolGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(grad::CheckArity(init, 2, 2, 1, 1));
  AMP_RETURN_IF_ERROR(grad::CheckSameDType(init, 0, {1}));
  const DType t = init.inputs[0].dtype;
  const auto& y = init.inputs[0].dims;
  const auto& x = init.inputs[1].dims;
  if (x.size() != 4 || y.size() != 4) return init.Error("oneDNN MaxPoolGrad takes 2-D pools only");
  AMP_ASSIGN_OR_RETURN(ir::WindowGeometry g, ResolveWindow(grad::ForwardInit(init, 1), {}, false));
  dnnl::memory::dims pr(2);
  for (size_t d = 0; d < 2; ++d)
    pr[d] = std::max((y[d + 2] - 1) * g.strides[d] + g.extent(d) - x[d + 2] - g.pads_begin[d], int64_t{0});
  return Guarded(init, [&]() -> StatusOr<std::unique_ptr<Kernel>> {
    const dnnl::memory::desc src = PlainDesc(x, t), dst = PlainDesc(y, t);
    const dnnl::memory::dims strides = Dims(g.strides), kernel = Dims(g.kernel), pl = Dims(g.pads_begin);
    const dnnl::memory::dims dil = Dilations(g.dilations);
    const auto alg = dnnl::algorithm::pooling_max;
    dnnl::pooling_v2_forward::primitive_desc fwd(
        dnnl::pooling_v2_forward::desc(dnnl::prop_kind::forward_training, alg, src, dst, strides, kernel, dil, pl, pr),
        Engine());
    dnnl::pooling_v2_backward::primitive_desc bwd(
        dnnl::pooling_v2_backward::desc(alg, src, dst, strides, kernel, dil, pl, pr), Engine(), fwd);
    if (IsReferenceImpl(fwd) || IsReferenceImpl(bwd))
      return Unimplemented(init.Describe(), ": oneDNN has only its reference pooling here");
    return std::unique_ptr<Kernel>(new MaxPoolGradKernel(init.Describe(), fwd, bwd, src, dst));
  });
}

}  // namespace

void RegisterOneDnnPoolGrad(Registry& r) { AddOneDnn(r, OpKind::kMaxPoolGrad, MakeMaxPoolGrad); }

}  // namespace amptrain::kernels::cpu::onednn
