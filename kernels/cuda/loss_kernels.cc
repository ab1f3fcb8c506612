// CUDA SoftmaxCrossEntropyLoss(scores, labels, weights?) -> loss, log_prob?
// and SoftmaxCrossEntropyLossGrad(dloss, log_prob, labels, weights?) ->
// dscores (launchers: loss.cu), with kernels/cpu/loss.cc's checks, shapes
// and definitions. One difference: a label outside [0, C) that is not
// ignore_index gives NaN for its sample instead of an error, since reading
// the labels on the host would stall every step.
// MeanSquaredError(pred, target) -> scalar mean((pred - target)^2) and
// MeanSquaredErrorGrad(dloss, pred, target) -> dloss * 2 * (pred - target) /
// numel: kernels/cpu/grad_misc.cc's double arithmetic (the sum in a fixed
// order of partials, not the CPU's 4096-element chunks), rounded once to
// float and then to the dtype as the CPU's Store.
#include "ir/infer/training_util.h"
#include "kernels/cuda/common.h"

namespace amptrain::kernels::cuda {

namespace {

// The loss geometry; `scores` is the input holding scores or log_prob.
StatusOr<LossShape> MakeShape(const KernelInit& init, size_t scores, size_t labels) {
  auto attrs = ir::ParseLossAttrs(*init.attrs);
  if (!attrs.ok()) return init.Error(attrs.status().message());
  LossShape s;
  s.reduction = attrs->reduction == ir::LossReduction::kNone  ? LossReduction::kNone
                : attrs->reduction == ir::LossReduction::kSum ? LossReduction::kSum
                                                              : LossReduction::kMean;
  s.has_ignore = attrs->ignore_index.has_value();
  s.ignore_index = attrs->ignore_index.value_or(0);
  s.label_smoothing = attrs->label_smoothing;
  const auto& d = init.inputs[scores].dims;
  if (d.size() < 2) return init.Error("scores must be [N, C, d...]");
  if (!ir::IsIndexType(init.inputs[labels].dtype)) return init.Error("labels must be int32 or int64");
  s.labels_int64 = init.inputs[labels].dtype == DType::kInt64;
  std::vector<int64_t> per_sample{d[0]};
  per_sample.insert(per_sample.end(), d.begin() + 2, d.end());
  if (init.inputs[labels].dims != per_sample) return init.Error("labels do not have shape [N, d...] of scores");
  s.n = d[0], s.c = d[1];
  for (size_t i = 2; i < d.size(); ++i) s.d *= d[i];
  const size_t weights = labels + 1;
  if (init.inputs.size() > weights && init.inputs[weights].present() &&
      init.inputs[weights].dims != std::vector<int64_t>{s.c})
    return init.Error("weights must have C = ", s.c, " elements");
  return s;
}

class LossKernel final : public Kernel {
 public:
  LossKernel(LossShape s, Elem t) : s_(s), t_(t) {}
  Status Run(KernelContext& ctx) override {
    const void* weights = ctx.inputs.size() > 2 ? ctx.inputs[2].data : nullptr;
    void* log_prob = ctx.outputs.size() > 1 ? ctx.outputs[1].data : nullptr;
    CUDA_CHECK(LaunchSoftmaxCrossEntropy(s_, t_, ctx.inputs[0].data, ctx.inputs[1].data, weights, ctx.outputs[0].data,
                                         log_prob, ctx.scratch, StreamOf(ctx)));
    return Status::Ok();
  }
  size_t scratch_bytes() const override { return LossScratchBytes(s_); }

 private:
  LossShape s_;
  Elem t_;
};

class LossGradKernel final : public Kernel {
 public:
  LossGradKernel(LossShape s, Elem t) : s_(s), t_(t) {}
  Status Run(KernelContext& ctx) override {
    const void* weights = ctx.inputs.size() > 3 ? ctx.inputs[3].data : nullptr;
    CUDA_CHECK(LaunchSoftmaxCrossEntropyGrad(s_, t_, ctx.inputs[0].data, ctx.inputs[1].data, ctx.inputs[2].data,
                                             weights, ctx.outputs[0].data, ctx.scratch, StreamOf(ctx)));
    return Status::Ok();
  }
  size_t scratch_bytes() const override { return 2 * sizeof(double); }

 private:
  LossShape s_;
  Elem t_;
};

StatusOr<std::unique_ptr<Kernel>> MakeLoss(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 3, 1, 2));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {2}, {0, 1}));
  AMP_ASSIGN_OR_RETURN(LossShape s, MakeShape(init, 0, 1));
  if (s.reduction == LossReduction::kMean && s.n * s.d == 0)
    return init.Error("the mean loss over an empty batch (", s.n, " samples) is undefined");
  return std::unique_ptr<Kernel>(std::make_unique<LossKernel>(s, *ElemOf(t)));
}

StatusOr<std::unique_ptr<Kernel>> MakeLossGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 3, 4, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {1, 3}, {0}));
  AMP_ASSIGN_OR_RETURN(LossShape s, MakeShape(init, 1, 2));
  const int64_t expected = s.reduction == LossReduction::kNone ? s.n * s.d : 1;
  if (init.inputs[0].num_elements() != expected) return init.Error("dloss must have ", expected, " elements");
  return std::unique_ptr<Kernel>(std::make_unique<LossGradKernel>(s, *ElemOf(t)));
}

class MseKernel final : public Kernel {
 public:
  MseKernel(Elem t, bool grad, int64_t n) : t_(t), grad_(grad), n_(n) {}
  Status Run(KernelContext& ctx) override {
    if (grad_)
      CUDA_CHECK(LaunchMseGrad(t_, ctx.inputs[0].data, ctx.inputs[1].data, ctx.inputs[2].data, ctx.outputs[0].data, n_,
                               StreamOf(ctx)));
    else
      CUDA_CHECK(LaunchMse(t_, ctx.inputs[0].data, ctx.inputs[1].data, ctx.outputs[0].data, n_, ctx.scratch,
                           StreamOf(ctx)));
    return Status::Ok();
  }
  size_t scratch_bytes() const override { return grad_ ? 0 : MseScratchBytes(); }

 private:
  Elem t_;
  bool grad_;
  int64_t n_;
};

StatusOr<std::unique_ptr<Kernel>> MakeMse(const KernelInit& init) {
  const bool grad = init.op == OpKind::kMeanSquaredErrorGrad;
  const size_t first = grad ? 1 : 0;
  AMP_RETURN_IF_ERROR(CheckArity(init, first + 2, first + 2, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {1, 2}, {0}));
  if (init.inputs[first].dims != init.inputs[first + 1].dims) return init.Error("pred and target differ in shape");
  if (grad && init.inputs[0].num_elements() != 1) return init.Error("dloss must be a scalar");
  const int64_t n = init.inputs[first].num_elements();
  if (init.outputs[0].num_elements() != (grad ? n : 1)) return init.Error("the output has the wrong size");
  return std::unique_ptr<Kernel>(std::make_unique<MseKernel>(*ElemOf(t), grad, n));
}

}  // namespace

void RegisterLoss(Registry& r) {
  r.Add(CudaEntry(OpKind::kSoftmaxCrossEntropyLoss, "cuda", MakeLoss));
  r.Add(CudaEntry(OpKind::kSoftmaxCrossEntropyLossGrad, "cuda", MakeLossGrad));
  r.Add(CudaEntry(OpKind::kMeanSquaredError, "cuda", MakeMse));
  r.Add(CudaEntry(OpKind::kMeanSquaredErrorGrad, "cuda", MakeMse));
}

}  // namespace amptrain::kernels::cuda
