// cuDNN MaxPool, AveragePool, GlobalAveragePool, MaxPoolGrad and
// AveragePoolGrad over NCHW, 2-D, fp32/fp16/bf16, with the CPU kernels'
// contracts (kernels/cpu/pool.cc, grad_pool.cc): the pooling ops' kernel_shape,
// strides, pads, auto_pad, ceil_mode and count_include_pad, computed in fp32
// and rounded once; NaN propagates through max pooling.
//
// Declined (the entries' accepts), where cuDNN's pooling cannot give the
// CPU's result: spatial ranks other than 2, dilations, pads whose begin and
// end differ, a pad as large as the window, a ceil_mode that changes the
// output size (cuDNN's output is the floor one, and the CPU's divisor of a
// window overhanging the end differs), MaxPool's Indices output, empty
// tensors and dims beyond int. Without an overhang, cuDNN's
// AVERAGE_COUNT_INCLUDE_PADDING divides by the window size and
// AVERAGE_COUNT_EXCLUDE_PADDING by the in-input taps: the CPU's divisors.
//
// Channels-last (TensorSpec::channels_last): X and Y (dY, X, dX) stored NHWC
// together (channels_last_together), given to cuDNN as NHWC descriptors;
// GlobalAveragePool's Y ([N, C, 1, 1]) reads the same either way.
//
// Max pooling uses CUDNN_POOLING_MAX_DETERMINISTIC. Ties within a window are
// broken by cuDNN (the CPU: the first maximum in scan order), which matters
// for MaxPoolGrad only. The gradients take (dY, X) and cuDNN's backward also
// wants Y: the forward pooling is recomputed into the kernel's scratch.
#include <string>

#include "kernels/cpu/conv_geometry.h"
#include "kernels/cuda/cudnn_common.h"

namespace amptrain::kernels::cuda {

namespace {

struct PoolShape {
  DType t = DType::kFloat32;
  Dims4 x, y;
  int kh = 1, kw = 1, ph = 0, pw = 0, sh = 1, sw = 1;
  cudnnPoolingMode_t mode = CUDNN_POOLING_MAX_DETERMINISTIC;
  bool nhwc = false;
};

// The pooling of forward init `fwd` (X [N, C, H, W] -> Y) for cuDNN, or why
// cuDNN cannot do it (Unimplemented); other errors are the node's.
StatusOr<PoolShape> PlanPool(const KernelInit& fwd, OpKind op) {
  const auto& x = fwd.inputs[0].dims;
  const auto& y = fwd.outputs[0].dims;
  auto decline = [&](const char* why) -> Status { return Unimplemented(fwd.Describe(), ": cuDNN pooling: ", why); };
  if (x.size() != 4 || y.size() != 4) return decline("only 2-D pooling");
  for (const auto* d : {&x, &y})
    for (int64_t v : *d)
      if (v <= 0) return decline("empty tensors");
  if (!FitsInt(x) || !FitsInt(y)) return decline("dims beyond int");
  if (y[0] != x[0] || y[1] != x[1]) return fwd.Error("Y must be [N, C, out...] of X's N and C");
  PoolShape s;
  s.t = fwd.inputs[0].dtype;
  s.x = ToDims4(x), s.y = ToDims4(y);
  if (op == OpKind::kGlobalAveragePool) {
    if (y[2] != 1 || y[3] != 1) return fwd.Error("Y must be [N, C, 1, 1]");
    s.kh = s.x.h, s.kw = s.x.w;
    s.mode = CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    return s;
  }
  AMP_ASSIGN_OR_RETURN(ir::WindowGeometry g, cpu::ResolveWindow(fwd, {}, false));
  for (size_t d = 0; d < 2; ++d) {
    if (g.dilations[d] != 1) return decline("dilations");
    if (g.pads_begin[d] != g.pads_end[d]) return decline("asymmetric pads");
    if (g.pads_begin[d] >= g.kernel[d]) return decline("a pad as large as the window");
    if (g.kernel[d] > x[d + 2] + 2 * g.pads_begin[d]) return decline("a window larger than the padded input");
    if ((x[d + 2] + 2 * g.pads_begin[d] - g.kernel[d]) / g.strides[d] + 1 != y[d + 2])
      return decline("ceil_mode with a window overhanging the end");
  }
  s.kh = static_cast<int>(g.kernel[0]), s.kw = static_cast<int>(g.kernel[1]);
  s.ph = static_cast<int>(g.pads_begin[0]), s.pw = static_cast<int>(g.pads_begin[1]);
  s.sh = static_cast<int>(g.strides[0]), s.sw = static_cast<int>(g.strides[1]);
  const bool is_max = op == OpKind::kMaxPool || op == OpKind::kMaxPoolGrad;
  if (!is_max) {
    AMP_ASSIGN_OR_RETURN(int64_t include_pad, fwd.attrs->GetInt("count_include_pad", 0));
    s.mode = include_pad != 0 ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                              : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
  }
  return s;
}

// True unless PlanPool declines (other errors are left to the factory).
bool Fits(const KernelInit& fwd, OpKind op) {
  if (fwd.inputs.empty() || fwd.outputs.empty() || !fwd.attrs) return true;
  if (op == OpKind::kMaxPool && fwd.outputs.size() > 1) return false;  // Indices
  StatusOr<PoolShape> s = PlanPool(fwd, op);
  return s.ok() || s.status().code() != StatusCode::kUnimplemented;
}

// The descriptors of one pooling, made at the first Run.
struct PoolDescs {
  TensorDesc x, y;
  PoolDesc pool;
  bool made = false;
  Status Make(const PoolShape& s) {
    if (made) return Status::Ok();
    AMP_RETURN_IF_ERROR(SetTensor4d(x, s.t, s.x, s.nhwc));
    AMP_RETURN_IF_ERROR(SetTensor4d(y, s.t, s.y, s.nhwc));
    AMP_RETURN_IF_ERROR(pool.Make());
    CUDNN_CHECK(cudnnSetPooling2dDescriptor(pool.get(), s.mode, CUDNN_PROPAGATE_NAN, s.kh, s.kw, s.ph, s.pw, s.sh,
                                            s.sw));
    made = true;
    return Status::Ok();
  }
};

// The pooling ops (X) -> Y, and their gradients (dY, X) -> dX with Y
// recomputed into scratch.
class PoolKernel final : public Kernel {
 public:
  PoolKernel(PoolShape s, bool grad) : s_(s), grad_(grad) {}

  Status Run(KernelContext& ctx) override {
    AMP_ASSIGN_OR_RETURN(cudnnHandle_t h, CudnnHandle(StreamOf(ctx)));
    AMP_RETURN_IF_ERROR(d_.Make(s_));
    const float one = 1.0f, zero = 0.0f;
    const void* x = ctx.inputs[grad_ ? 1 : 0].data;
    void* y = grad_ ? ctx.scratch : ctx.outputs[0].data;
    CUDNN_CHECK(cudnnPoolingForward(h, d_.pool.get(), &one, d_.x.get(), x, &zero, d_.y.get(), y));
    if (grad_)
      CUDNN_CHECK(cudnnPoolingBackward(h, d_.pool.get(), &one, d_.y.get(), y, d_.y.get(), ctx.inputs[0].data,
                                       d_.x.get(), x, &zero, d_.x.get(), ctx.outputs[0].data));
    return Status::Ok();
  }
  size_t scratch_bytes() const override {
    return grad_ ? static_cast<size_t>(s_.y.n) * s_.y.c * s_.y.h * s_.y.w * ir::DTypeSize(s_.t) : 0;
  }

 private:
  PoolShape s_;
  bool grad_;
  PoolDescs d_;
};

StatusOr<std::unique_ptr<Kernel>> MakePool(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 1, 1, 1, 1));
  AMP_RETURN_IF_ERROR(CheckDTypes(init, init.inputs[0].dtype, {}, {0}));
  AMP_ASSIGN_OR_RETURN(PoolShape s, PlanPool(init, init.op));
  AMP_ASSIGN_OR_RETURN(s.nhwc, ChannelsLastTogether(init, {&init.inputs[0], &init.outputs[0]}));
  return std::unique_ptr<Kernel>(std::make_unique<PoolKernel>(s, false));
}

StatusOr<std::unique_ptr<Kernel>> MakePoolGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 2, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {1}, {0}));
  if (init.outputs[0].dims != init.inputs[1].dims) return init.Error("dX must have X's dims");
  AMP_ASSIGN_OR_RETURN(PoolShape s, PlanPool(ForwardOf(init, 1), init.op));
  AMP_ASSIGN_OR_RETURN(s.nhwc, ChannelsLastTogether(init, {&init.inputs[0], &init.inputs[1], &init.outputs[0]}));
  return std::unique_ptr<Kernel>(std::make_unique<PoolKernel>(s, true));
}

}  // namespace

void RegisterCudnnPool(Registry& r) {
  for (OpKind op : {OpKind::kMaxPool, OpKind::kAveragePool, OpKind::kGlobalAveragePool}) {
    KernelEntry e = CudaEntry(op, "cudnn", MakePool);
    e.accepts = [op](const KernelInit& init) { return Fits(init, op); };
    e.channels_last_inputs = 0b1;  // X
    // GlobalAveragePool's Y is [N, C, 1, 1]: the same bytes in either layout.
    e.channels_last_outputs = op == OpKind::kGlobalAveragePool ? 0u : 0b1u;
    e.channels_last_together = op != OpKind::kGlobalAveragePool;
    r.Add(std::move(e));
  }
  for (OpKind op : {OpKind::kMaxPoolGrad, OpKind::kAveragePoolGrad}) {
    KernelEntry e = CudaEntry(op, "cudnn", MakePoolGrad);
    e.accepts = [op](const KernelInit& init) { return init.inputs.size() < 2 || Fits(ForwardOf(init, 1), op); };
    e.channels_last_inputs = 0b11;  // dY, X
    e.channels_last_outputs = 0b1;  // dX
    e.channels_last_together = true;
    r.Add(std::move(e));
  }
}

}  // namespace amptrain::kernels::cuda
