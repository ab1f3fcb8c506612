// CUDA Kernel classes of the normalizations (launchers: norm.cu), with the
// checks and definitions of the CPU reference kernels (kernels/cpu/softmax.cc,
// grad_misc.cc, grad_norm.cc):
//   Softmax, LogSoftmax(X) -> Y along `axis` (default -1, opset-13 semantics)
//   SoftmaxGrad, LogSoftmaxGrad(dY, Y) -> dX along `axis`
//   LayerNormalization(X, Scale, B?) -> Y, Mean?, InvStdDev? over X[axis:]
//     (default -1, epsilon 1e-5); Scale and B broadcast to X[axis:] (up to
//     rank 8); Mean/InvStdDev in the stash dtype (fp32, fp16 or bf16; the
//     entry declines float64).
//   LayerNormalizationGrad(dY, X, Scale) -> dX, dScale?, dBias?: Scale with
//     every element of X[axis:] (the entry declines a broadcast Scale, which
//     the CPU kernel sums back to its shape); unused outputs are skipped.
// Float arithmetic where the CPU uses double: results agree to rounding.
#include "kernels/cuda/common.h"

namespace amptrain::kernels::cuda {

namespace {

// `axis` (default -1) of a rank-`rank` tensor, normalized to [0, rank).
StatusOr<int64_t> Axis(const KernelInit& init, size_t rank) {
  AMP_ASSIGN_OR_RETURN(int64_t axis, init.attrs->GetInt("axis", -1));
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return OutOfRange(init.Describe(), ": axis ", axis, " is out of range for rank ", r);
  return axis < 0 ? axis + r : axis;
}

SoftmaxShape Lanes(const std::vector<int64_t>& dims, int64_t axis) {
  SoftmaxShape s;
  for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d)
    (d < axis ? s.outer : d == axis ? s.n : s.inner) *= dims[static_cast<size_t>(d)];
  return s;
}

class SoftmaxKernel final : public Kernel {
 public:
  SoftmaxKernel(Elem t, bool log, SoftmaxShape s) : t_(t), log_(log), s_(s) {}
  Status Run(KernelContext& ctx) override {
    CUDA_CHECK(LaunchSoftmax(t_, log_, ctx.inputs[0].data, ctx.outputs[0].data, s_, StreamOf(ctx)));
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }

 private:
  Elem t_;
  bool log_;
  SoftmaxShape s_;
};

StatusOr<std::unique_ptr<Kernel>> MakeSoftmax(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 1, 1, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {}, {0}));
  const std::vector<int64_t>& dims = init.inputs[0].dims;
  if (dims.empty()) return init.Error("input must have rank >= 1");
  if (init.outputs[0].dims != dims) return init.Error("output dims differ from the input's");
  AMP_ASSIGN_OR_RETURN(const int64_t axis, Axis(init, dims.size()));
  return std::unique_ptr<Kernel>(
      std::make_unique<SoftmaxKernel>(*ElemOf(t), init.op == OpKind::kLogSoftmax, Lanes(dims, axis)));
}

class SoftmaxGradKernel final : public Kernel {
 public:
  SoftmaxGradKernel(Elem t, bool log, SoftmaxShape s) : t_(t), log_(log), s_(s) {}
  Status Run(KernelContext& ctx) override {
    CUDA_CHECK(LaunchSoftmaxGrad(t_, log_, ctx.inputs[0].data, ctx.inputs[1].data, ctx.outputs[0].data, s_,
                                 StreamOf(ctx)));
    return Status::Ok();
  }

 private:
  Elem t_;
  bool log_;
  SoftmaxShape s_;
};

StatusOr<std::unique_ptr<Kernel>> MakeSoftmaxGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 2, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {1}, {0}));
  const std::vector<int64_t>& dims = init.inputs[1].dims;
  if (dims.empty() || init.inputs[0].dims != dims) return init.Error("dY and Y must have the same shape of rank >= 1");
  if (init.outputs[0].dims != dims) return init.Error("output dims differ from Y's");
  AMP_ASSIGN_OR_RETURN(const int64_t axis, Axis(init, dims.size()));
  return std::unique_ptr<Kernel>(
      std::make_unique<SoftmaxGradKernel>(*ElemOf(t), init.op == OpKind::kLogSoftmaxGrad, Lanes(dims, axis)));
}

// Rows and columns of X split at `axis`, and Scale/B's strides over X[axis:]
// (rank 0 when both have every element of X[axis:] in order).
StatusOr<LayerNormShape> NormShape(const KernelInit& init, const std::vector<int64_t>& x, int64_t axis, size_t scale,
                                   size_t bias) {
  LayerNormShape s;
  for (int64_t d = 0; d < static_cast<int64_t>(x.size()); ++d) (d < axis ? s.rows : s.cols) *= x[static_cast<size_t>(d)];
  AMP_ASSIGN_OR_RETURN(const float eps, init.attrs->GetFloat("epsilon", 1e-5f));
  s.epsilon = eps;
  const std::vector<int64_t> normalized(x.begin() + axis, x.end());
  const bool has_bias = bias < init.inputs.size() && init.inputs[bias].present();
  bool in_order = init.inputs[scale].num_elements() == s.cols;
  if (has_bias) in_order = in_order && init.inputs[bias].num_elements() == s.cols;
  for (size_t i : {scale, bias}) {
    if (i == bias && !has_bias) continue;
    if (!BroadcastsTo(init.inputs[i].dims, normalized))
      return init.Error("input ", i, " does not broadcast to X[axis:]");
  }
  if (in_order) return s;
  if (normalized.size() > static_cast<size_t>(kMaxRank))
    return init.Error("a broadcast scale or bias over rank ", normalized.size(), " is over ", kMaxRank);
  s.scale_bc.rank = static_cast<int>(normalized.size());
  for (size_t d = 0; d < normalized.size(); ++d) s.scale_bc.out_dims[d] = normalized[d];
  BroadcastStrides(init.inputs[scale].dims, normalized, s.scale_bc.a_strides);
  if (has_bias) BroadcastStrides(init.inputs[bias].dims, normalized, s.scale_bc.b_strides);
  return s;
}

class LayerNormKernel final : public Kernel {
 public:
  LayerNormKernel(Elem t, Elem stash, LayerNormShape s) : t_(t), stash_(stash), s_(s) {}
  Status Run(KernelContext& ctx) override {
    const void* bias = ctx.inputs.size() > 2 ? ctx.inputs[2].data : nullptr;
    void* mean = ctx.outputs.size() > 1 ? ctx.outputs[1].data : nullptr;
    void* inv = ctx.outputs.size() > 2 ? ctx.outputs[2].data : nullptr;
    CUDA_CHECK(LaunchLayerNorm(t_, ctx.inputs[0].data, ctx.inputs[1].data, bias, ctx.outputs[0].data, stash_, mean,
                               inv, s_, StreamOf(ctx)));
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }

 private:
  Elem t_, stash_;
  LayerNormShape s_;
};

// The stash dtype of LayerNormalization's outputs 1 and 2 (fp32 when absent).
std::optional<Elem> StashOf(const KernelInit& init) {
  std::optional<Elem> stash = Elem::kF32;
  for (size_t o = 1; o < init.outputs.size(); ++o)
    if (init.outputs[o].present()) stash = ElemOf(init.outputs[o].dtype);
  if (init.outputs.size() > 2 && init.outputs[1].present() && init.outputs[2].present() &&
      init.outputs[1].dtype != init.outputs[2].dtype)
    return std::nullopt;
  return stash;
}

StatusOr<std::unique_ptr<Kernel>> MakeLayerNorm(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 3, 1, 3));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {1, 2}, {0}));
  const std::vector<int64_t>& x = init.inputs[0].dims;
  if (x.empty()) return init.Error("input must have rank >= 1");
  if (init.outputs[0].dims != x) return init.Error("output dims differ from the input's");
  AMP_ASSIGN_OR_RETURN(const int64_t axis, Axis(init, x.size()));
  const std::optional<Elem> stash = StashOf(init);
  if (!stash) return init.Error("outputs 1 and 2 must have one float32, float16 or bfloat16 stash dtype");
  AMP_ASSIGN_OR_RETURN(LayerNormShape s, NormShape(init, x, axis, 1, 2));
  for (size_t o = 1; o < init.outputs.size(); ++o)
    if (init.outputs[o].present() && init.outputs[o].num_elements() != s.rows)
      return init.Error("output ", o, " must have one element per row of X[:axis]");
  return std::unique_ptr<Kernel>(std::make_unique<LayerNormKernel>(*ElemOf(t), *stash, s));
}

class LayerNormGradKernel final : public Kernel {
 public:
  LayerNormGradKernel(Elem t, LayerNormShape s) : t_(t), s_(s) {}
  Status Run(KernelContext& ctx) override {
    void* dscale = ctx.outputs.size() > 1 ? ctx.outputs[1].data : nullptr;
    void* dbias = ctx.outputs.size() > 2 ? ctx.outputs[2].data : nullptr;
    CUDA_CHECK(LaunchLayerNormGrad(t_, ctx.inputs[0].data, ctx.inputs[1].data, ctx.inputs[2].data,
                                   ctx.outputs[0].data, dscale, dbias, s_, ctx.scratch, StreamOf(ctx)));
    return Status::Ok();
  }
  size_t scratch_bytes() const override { return LayerNormGradScratchBytes(s_); }

 private:
  Elem t_;
  LayerNormShape s_;
};

StatusOr<std::unique_ptr<Kernel>> MakeLayerNormGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 3, 3, 1, 3));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {1, 2}, {0}));
  const std::vector<int64_t>& x = init.inputs[1].dims;
  if (x.empty() || init.inputs[0].dims != x) return init.Error("dY and X must have the same shape of rank >= 1");
  AMP_ASSIGN_OR_RETURN(const int64_t axis, Axis(init, x.size()));
  AMP_ASSIGN_OR_RETURN(const LayerNormShape s, NormShape(init, x, axis, 2, 3));
  if (s.scale_bc.rank != 0) return init.Error("a scale broadcast to X[axis:] is not supported on CUDA");
  for (size_t o = 1; o < init.outputs.size(); ++o)
    if (init.outputs[o].dims != init.inputs[2].dims || init.outputs[o].dtype != t)
      return init.Error("output ", o, " must have scale's shape and dtype");
  return std::unique_ptr<Kernel>(std::make_unique<LayerNormGradKernel>(*ElemOf(t), s));
}

}  // namespace

void RegisterNorm(Registry& r) {
  for (OpKind op : {OpKind::kSoftmax, OpKind::kLogSoftmax}) r.Add(CudaEntry(op, "cuda", MakeSoftmax));
  for (OpKind op : {OpKind::kSoftmaxGrad, OpKind::kLogSoftmaxGrad}) r.Add(CudaEntry(op, "cuda", MakeSoftmaxGrad));
  KernelEntry ln = CudaEntry(OpKind::kLayerNormalization, "cuda", MakeLayerNorm);
  ln.accepts = [](const KernelInit& init) { return StashOf(init).has_value(); };
  r.Add(std::move(ln));
  KernelEntry grad = CudaEntry(OpKind::kLayerNormalizationGrad, "cuda", MakeLayerNormGrad);
  // Scale with every element of X[axis:] (rank >= 1 and a valid axis are the factory's errors).
  grad.accepts = [](const KernelInit& init) {
    if (init.inputs.size() < 3 || init.inputs[1].dims.empty()) return true;
    const auto& x = init.inputs[1].dims;
    const int64_t rank = static_cast<int64_t>(x.size());
    StatusOr<int64_t> axis = init.attrs->GetInt("axis", -1);
    if (!axis.ok() || *axis < -rank || *axis >= rank) return true;
    int64_t cols = 1;
    for (int64_t d = *axis < 0 ? *axis + rank : *axis; d < rank; ++d) cols *= x[static_cast<size_t>(d)];
    return init.inputs[2].num_elements() == cols;
  };
  grad.skips_unused_outputs = true;  // dX, dScale, dBias: each only when asked
  r.Add(std::move(grad));
}

}  // namespace amptrain::kernels::cuda
