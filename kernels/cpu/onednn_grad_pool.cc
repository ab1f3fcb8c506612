// oneDNN MaxPoolGrad and AveragePoolGrad of 1 to 3 spatial dims, fp32 and
// bf16, plain ncw / nchw / ncdhw (the direct kernels take the 1-D and 2-D
// ones first). oneDNN's max-pooling backward needs the workspace (argmax) of
// a forward_training run, which the graph does not keep: Run recomputes the
// forward pooling of X into scratch (dst and workspace), then runs the
// backward. The recompute costs one forward pool per step, far less than the
// conv around it. The window is the forward kernels' (ResolvePoolWindow:
// ceil_mode as extra right padding; an average counting padding declines
// that overhang). Dilated pools (reference-only in oneDNN 2.6) fall back to
// the reference kernel.
#include <unordered_map>

#include "kernels/cpu/grad_kernels.h"
#include "kernels/cpu/onednn_grad.h"

namespace amptrain::kernels::cpu::onednn {

namespace {

// MaxPoolGrad recomputes the forward into scratch (dst, then the workspace)
// and runs the backward from that workspace; AveragePoolGrad (no workspace)
// runs the backward alone (its forward primitive is never made).
class PoolGradKernel : public Kernel {
 public:
  PoolGradKernel(std::string describe, const dnnl::pooling_v2_forward::primitive_desc& fwd,
                 const dnnl::pooling_v2_backward::primitive_desc& bwd, dnnl::memory::desc x, dnnl::memory::desc y,
                 bool max)
      : describe_(std::move(describe)), fwd_(max ? dnnl::pooling_v2_forward(fwd) : dnnl::pooling_v2_forward()),
        bwd_(bwd), x_(x), y_(y),
        ws_(max ? fwd.workspace_desc() : dnnl::memory::desc()), max_(max), stream_(Engine()) {}

  size_t scratch_bytes() const override { return max_ ? DstBytes() + ws_.get_size() : 0; }

  Status Run(KernelContext& ctx) override {
    if (!ctx.outputs[0].data) return Status::Ok();
    auto* scratch = static_cast<std::byte*>(ctx.scratch);
    try {
      std::unordered_map<int, dnnl::memory> args = {
          {DNNL_ARG_DIFF_DST, dnnl::memory(y_, Engine(), ctx.inputs[0].data)},
          {DNNL_ARG_DIFF_SRC, dnnl::memory(x_, Engine(), ctx.outputs[0].data)}};
      if (max_) {
        dnnl::memory ws(ws_, Engine(), scratch + DstBytes());
        fwd_.execute(stream_, {{DNNL_ARG_SRC, dnnl::memory(x_, Engine(), ctx.inputs[1].data)},
                               {DNNL_ARG_DST, dnnl::memory(y_, Engine(), scratch)},
                               {DNNL_ARG_WORKSPACE, ws}});
        args.emplace(DNNL_ARG_WORKSPACE, ws);
      }
      bwd_.execute(stream_, args);
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
  bool max_;
  dnnl::stream stream_;
};

StatusOr<std::unique_ptr<Kernel>> MakePoolGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(grad::CheckArity(init, 2, 2, 1, 1));
  AMP_RETURN_IF_ERROR(grad::CheckSameDType(init, 0, {1}));
  const DType t = init.inputs[0].dtype;
  const auto& y = init.inputs[0].dims;
  const auto& x = init.inputs[1].dims;
  if (x.size() < 3 || x.size() > 5 || y.size() != x.size())
    return init.Error("oneDNN pooling gradients take 1-D, 2-D and 3-D pools");
  const bool max = init.op == OpKind::kMaxPoolGrad;
  AMP_ASSIGN_OR_RETURN(PoolWindow w, ResolvePoolWindow(grad::ForwardInit(init, 1), max, x, y));
  return Guarded(init, [&]() -> StatusOr<std::unique_ptr<Kernel>> {
    const dnnl::memory::desc src = PlainDesc(x, t), dst = PlainDesc(y, t);
    dnnl::pooling_v2_forward::primitive_desc fwd(
        dnnl::pooling_v2_forward::desc(dnnl::prop_kind::forward_training, w.alg, src, dst, w.strides, w.kernel,
                                       w.dilations, w.pads_begin, w.pads_end),
        Engine());
    dnnl::pooling_v2_backward::primitive_desc bwd(
        dnnl::pooling_v2_backward::desc(w.alg, src, dst, w.strides, w.kernel, w.dilations, w.pads_begin, w.pads_end),
        Engine(), fwd);
    if (IsReferenceImpl(fwd) || IsReferenceImpl(bwd))
      return Unimplemented(init.Describe(), ": oneDNN has only its reference pooling here");
    return std::unique_ptr<Kernel>(new PoolGradKernel(init.Describe(), fwd, bwd, src, dst, max));
  });
}

}  // namespace

void RegisterOneDnnPoolGrad(Registry& r) {
  AddOneDnn(r, OpKind::kMaxPoolGrad, MakePoolGrad);
  AddOneDnn(r, OpKind::kAveragePoolGrad, MakePoolGrad);
}

}  // namespace amptrain::kernels::cpu::onednn
