// oneDNN ConvGrad 2-D, fp32 and bf16: dX by convolution_backward_data, dW and
// dB by one convolution_backward_weights (bias diff included when the node
// has the dB output). Both primitive descriptors take the forward
// (forward_training) primitive_desc as their hint, built at creation. All
// tensors stay plain nchw/oihw (goihw with groups), so the executor's
// buffers are used without reorders. Outputs with data == nullptr: dX's
// primitive is skipped; dW or dB alone still run the weights primitive,
// writing the unused one into scratch. Other ranks, and configurations for
// which oneDNN has only its reference implementation, fall back to the
// reference kernel (kernels/cpu/grad_conv.cc).
#include <unordered_map>

#include "kernels/cpu/conv_geometry.h"
#include "kernels/cpu/grad_kernels.h"
#include "kernels/cpu/onednn_grad.h"

namespace amptrain::kernels::cpu::onednn {

namespace {

class ConvGradKernel : public Kernel {
 public:
  struct Parts {
    std::string describe;
    dnnl::convolution_backward_data data;
    dnnl::convolution_backward_weights weights;
    bool has_weights = false, has_bias = false;
    dnnl::memory::desc x, w, dy, b;
  };
  explicit ConvGradKernel(Parts p) : p_(std::move(p)), stream_(Engine()) {}

  size_t scratch_bytes() const override { return WeightBytes() + (p_.has_bias ? p_.b.get_size() : 0); }

  Status Run(KernelContext& ctx) override {
    auto mem = [](const dnnl::memory::desc& d, void* data) { return dnnl::memory(d, Engine(), data); };
    auto* scratch = static_cast<std::byte*>(ctx.scratch);
    void* dx = ctx.outputs[0].data;
    void* dw = ctx.outputs.size() > 1 ? ctx.outputs[1].data : nullptr;
    void* db = ctx.outputs.size() > 2 ? ctx.outputs[2].data : nullptr;
    try {
      if (dx)
        p_.data.execute(stream_, {{DNNL_ARG_DIFF_DST, mem(p_.dy, ctx.inputs[0].data)},
                                  {DNNL_ARG_WEIGHTS, mem(p_.w, ctx.inputs[2].data)},
                                  {DNNL_ARG_DIFF_SRC, mem(p_.x, dx)}});
      if (p_.has_weights && (dw || db)) {
        std::unordered_map<int, dnnl::memory> args = {
            {DNNL_ARG_SRC, mem(p_.x, ctx.inputs[1].data)},
            {DNNL_ARG_DIFF_DST, mem(p_.dy, ctx.inputs[0].data)},
            {DNNL_ARG_DIFF_WEIGHTS, mem(p_.w, dw ? dw : scratch)}};
        if (p_.has_bias) args.emplace(DNNL_ARG_DIFF_BIAS, mem(p_.b, db ? db : scratch + WeightBytes()));
        p_.weights.execute(stream_, args);
      }
      stream_.wait();
    } catch (const dnnl::error& e) {
      return Internal(p_.describe, ": oneDNN execution failed: ", e.what());
    }
    return Status::Ok();
  }

 private:
  size_t WeightBytes() const { return p_.has_weights ? (p_.w.get_size() + 63) / 64 * 64 : 0; }

  Parts p_;
  dnnl::stream stream_;
};

StatusOr<std::unique_ptr<Kernel>> MakeConvGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(grad::CheckArity(init, 3, 3, 1, 3));
  AMP_RETURN_IF_ERROR(grad::CheckSameDType(init, 0, {1, 2}));
  const DType t = init.inputs[0].dtype;
  const auto& dy = init.inputs[0].dims;
  const auto& x = init.inputs[1].dims;
  const auto& w = init.inputs[2].dims;
  if (x.size() != 4 || w.size() != 4 || dy.size() != 4) return init.Error("oneDNN ConvGrad takes 2-D convolutions only");
  AMP_ASSIGN_OR_RETURN(int64_t group, init.attrs->GetInt("group", 1));
  if (group < 1 || w[0] % group != 0 || x[1] != w[1] * group) return init.Error("channels do not match group");
  AMP_ASSIGN_OR_RETURN(ir::WindowGeometry g, ResolveWindow(grad::ForwardInit(init, 1), {w[2], w[3]}, false));
  return Guarded(init, [&]() -> StatusOr<std::unique_ptr<Kernel>> {
    ConvGradKernel::Parts p;
    p.describe = init.Describe();
    p.x = PlainDesc(x, t), p.dy = PlainDesc(dy, t), p.b = PlainDesc({w[0]}, t);
    p.w = PlainDesc(group == 1 ? w : std::vector<int64_t>{group, w[0] / group, w[1], w[2], w[3]}, t);
    p.has_weights = init.outputs.size() > 1;
    p.has_bias = init.outputs.size() > 2;
    const dnnl::memory::dims strides = Dims(g.strides), dil = {g.dilations[0] - 1, g.dilations[1] - 1};
    const dnnl::memory::dims pl = Dims(g.pads_begin), pr = Dims(g.pads_end);
    const auto alg = dnnl::algorithm::convolution_direct;
    dnnl::convolution_forward::desc fwd_desc(dnnl::prop_kind::forward_training, alg, p.x, p.w, p.b, p.dy, strides, dil,
                                             pl, pr);
    dnnl::convolution_forward::primitive_desc fwd(fwd_desc, Engine());
    dnnl::convolution_backward_data::primitive_desc data_pd(
        dnnl::convolution_backward_data::desc(alg, p.x, p.w, p.dy, strides, dil, pl, pr), Engine(), fwd);
    if (IsReferenceImpl(data_pd)) return Unimplemented(p.describe, ": oneDNN has only its reference backward-data conv");
    p.data = dnnl::convolution_backward_data(data_pd);
    if (p.has_weights) {
      auto desc = p.has_bias
                      ? dnnl::convolution_backward_weights::desc(alg, p.x, p.w, p.b, p.dy, strides, dil, pl, pr)
                      : dnnl::convolution_backward_weights::desc(alg, p.x, p.w, p.dy, strides, dil, pl, pr);
      dnnl::convolution_backward_weights::primitive_desc weights_pd(desc, Engine(), fwd);
      if (IsReferenceImpl(weights_pd))
        return Unimplemented(p.describe, ": oneDNN has only its reference backward-weights conv");
      p.weights = dnnl::convolution_backward_weights(weights_pd);
    }
    return std::unique_ptr<Kernel>(new ConvGradKernel(std::move(p)));
  });
}

}  // namespace

void RegisterOneDnnConvGrad(Registry& r) { AddOneDnn(r, OpKind::kConvGrad, MakeConvGrad); }

}  // namespace amptrain::kernels::cpu::onednn
