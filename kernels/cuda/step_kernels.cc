// CUDA GradCheck, SgdStep and AdamStep (launchers: step.cu): the inputs,
// outputs, attributes and per-element formulas of kernels/cpu/step_kernels.cc
// (ir/ops.def, "Optimizer-step ops"). Every tensor, the scale and the
// hyper-parameters included, is device memory; one launch per parameter.
#include "kernels/cuda/common.h"
#include "kernels/step_group.h"

namespace amptrain::kernels::cuda {

namespace {

class GradCheckKernel final : public Kernel {
 public:
  explicit GradCheckKernel(Elem t) : t_(t) {}
  Status Run(KernelContext& ctx) override {
    const size_t k = ctx.inputs.size() - 1;
    const float* scale = ctx.inputs[k].as<const float>();
    double* stats = ctx.outputs[0].as<double>();
    for (size_t i = 0; i < k; ++i)  // the partials in scratch are reused in stream order
      CUDA_CHECK(LaunchGradCheck(t_, ctx.inputs[i].data, ctx.inputs[i].num_elements(), scale, stats + 2 * i,
                                 ctx.scratch, StreamOf(ctx)));
    return Status::Ok();
  }
  size_t scratch_bytes() const override { return GradCheckScratchBytes(); }

 private:
  Elem t_;
};

StatusOr<std::unique_ptr<Kernel>> MakeGradCheck(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, static_cast<size_t>(-1), 1, 1));
  const DType t = init.inputs[0].dtype;
  for (size_t i = 0; i + 1 < init.inputs.size(); ++i)
    if (init.inputs[i].dtype != t) return init.Error("gradient ", i, " is not ", ir::DTypeName(t), " as the first");
  if (init.inputs.back().dtype != DType::kFloat32 || init.inputs.back().num_elements() != 1)
    return init.Error("the scale must be a float32 scalar");
  const int64_t k = static_cast<int64_t>(init.inputs.size()) - 1;
  if (init.outputs[0].dtype != DType::kFloat64 || init.outputs[0].num_elements() != 2 * k)
    return init.Error("stats must be float64 [", k, ", 2]");
  return std::unique_ptr<Kernel>(std::make_unique<GradCheckKernel>(*ElemOf(t)));
}

// The low copy of a group: its Elem and data (null when absent).
std::pair<Elem, void*> Low(const ir::TensorView& v) {
  if (!v.data) return {Elem::kF32, nullptr};
  return {v.dtype == DType::kFloat16 ? Elem::kF16 : Elem::kBF16, v.data};
}

class SgdKernel final : public Kernel {
 public:
  SgdKernel(SgdAttrs a, Elem p, Elem g) : a_(a), p_(p), g_(g) {}
  Status Run(KernelContext& ctx) override {
    const float* hyper = ctx.inputs.back().as<const float>();
    for (size_t i = 0; i + 1 < ctx.inputs.size(); i += 4) {
      float* buf = a_.momentum != 0.0f ? ctx.inputs[i + 2].as<float>() : nullptr;
      const auto [low_t, low] = Low(ctx.inputs[i + 3]);
      CUDA_CHECK(LaunchSgd(a_, hyper, p_, ctx.inputs[i].data, g_, ctx.inputs[i + 1].data, buf, low_t, low,
                           ctx.inputs[i].num_elements(), StreamOf(ctx)));
    }
    return Status::Ok();
  }

 private:
  SgdAttrs a_;
  Elem p_, g_;
};

class AdamKernel final : public Kernel {
 public:
  AdamKernel(AdamAttrs a, Elem p, Elem g) : a_(a), p_(p), g_(g) {}
  Status Run(KernelContext& ctx) override {
    const float* hyper = ctx.inputs.back().as<const float>();
    for (size_t i = 0; i + 1 < ctx.inputs.size(); i += 5) {
      const auto [low_t, low] = Low(ctx.inputs[i + 4]);
      CUDA_CHECK(LaunchAdam(a_, hyper, p_, ctx.inputs[i].data, g_, ctx.inputs[i + 1].data,
                            ctx.inputs[i + 2].as<float>(), ctx.inputs[i + 3].as<float>(), low_t, low,
                            ctx.inputs[i].num_elements(), StreamOf(ctx)));
    }
    return Status::Ok();
  }

 private:
  AdamAttrs a_;
  Elem p_, g_;
};

StatusOr<std::unique_ptr<Kernel>> MakeSgd(const KernelInit& init) {
  AMP_ASSIGN_OR_RETURN(const DType g, CheckStepGroups(init));
  SgdAttrs a;
  a.momentum = init.attrs->Float("momentum", 0.0f);
  a.weight_decay = init.attrs->Float("weight_decay", 0.0f);
  a.nesterov = init.attrs->Int("nesterov", 0) != 0;
  return std::unique_ptr<Kernel>(std::make_unique<SgdKernel>(a, *ElemOf(KeyDType(init)), *ElemOf(g)));
}

StatusOr<std::unique_ptr<Kernel>> MakeAdam(const KernelInit& init) {
  AMP_ASSIGN_OR_RETURN(const DType g, CheckStepGroups(init));
  const ir::Attributes& at = *init.attrs;
  AdamAttrs a;
  a.beta1 = at.Float("beta1", 0.9f);
  a.beta2 = at.Float("beta2", 0.999f);
  a.eps = at.Float("eps", 1e-8f);
  const bool decoupled = at.Int("decoupled", 0) != 0;
  a.l2 = decoupled ? 0.0f : at.Float("weight_decay", 0.0f);
  a.apply_decay = decoupled && at.Float("weight_decay", 0.0f) != 0.0f;
  a.omb1 = static_cast<float>(1.0 - static_cast<double>(a.beta1));
  a.omb2 = static_cast<float>(1.0 - static_cast<double>(a.beta2));
  return std::unique_ptr<Kernel>(std::make_unique<AdamKernel>(a, *ElemOf(KeyDType(init)), *ElemOf(g)));
}

}  // namespace

void RegisterSteps(Registry& r) {
  r.Add(CudaEntry(OpKind::kGradCheck, "fused", MakeGradCheck, 0));
  r.Add(CudaEntry(OpKind::kSgdStep, "fused", MakeSgd, 0));
  r.Add(CudaEntry(OpKind::kAdamStep, "fused", MakeAdam, 0));
}

}  // namespace amptrain::kernels::cuda
