// CUDA Kernel classes of Dropout and its gradient (launchers: dropout.cu),
// with the contracts and the bits of the CPU reference kernels
// (kernels/cpu/dropout.cc, grad_misc.cc):
//   Dropout(data, ratio?, training_mode?) -> output, mask? (bool)
//     training (KernelInit::training) and ratio > 0: element i kept when
//     DropoutUniform(seed, i) >= ratio, scaled by 1 / (1 - ratio) in double;
//     seed = DropoutSeed(KernelInit::seed, KernelContext::seed)
//     (kernels/dropout_stream.h). Otherwise output = data, mask all true.
//     training_mode and the node's seed attribute are not read.
//   DropoutGrad(dY, mask, ratio?) -> dX = mask ? dY * float(1 / (1 - ratio)) : 0
//     in float, rounded once.
// The ratio (default 0.5) is read as the CPU reads it, the stored value
// exactly as a double, but at plan time: the entries decline a ratio that
// is not a plan-time constant (the model builders and the importer make it
// one), since reading it from device memory each run would cost a host
// round trip. A ratio outside [0, 1) is an error at creation (the CPU: at
// the run).
// The random ops (RandomUniformLike, RandomNormalLike, RandomUniform,
// RandomNormal, Bernoulli) draw from the same stream with the CPU's
// parameters (kernels/kernel_params.h, ParseRandomParams) into fp32, fp16 or
// bf16 (Bernoulli also into int8, uint8, int32, int64 and bool) from an
// fp32, fp16 or bf16 P; float64 stays on the CPU.
#include "kernels/cuda/common.h"
#include "kernels/dropout_stream.h"
#include "kernels/kernel_params.h"

namespace amptrain::kernels::cuda {

namespace {

// Whether input i, the ratio, is absent or known at plan time.
bool RatioKnown(const KernelInit& init, size_t i) {
  return i >= init.inputs.size() || !init.inputs[i].present() || init.inputs[i].value != nullptr;
}

// The ratio input i (RatioKnown), 0.5 when absent.
StatusOr<double> Ratio(const KernelInit& init, size_t i) {
  if (i >= init.inputs.size() || !init.inputs[i].present()) return 0.5;
  const TensorSpec& r = init.inputs[i];
  if (!ir::IsFloat(r.dtype) || r.num_elements() != 1) return init.Error("ratio must be a float scalar");
  if (!r.value) return init.Error("ratio is not known at plan time");
  const double ratio = r.value->GetAsDouble(0);
  if (!(ratio >= 0.0 && ratio < 1.0)) return init.Error("ratio ", ratio, " is outside [0, 1)");
  return ratio;
}

class DropoutKernel final : public Kernel {
 public:
  DropoutKernel(Elem t, bool drops, double ratio, uint64_t seed)
      : t_(t), drops_(drops), ratio_(ratio), scale_(1.0 / (1.0 - ratio)), seed_(seed) {}

  Status Run(KernelContext& ctx) override {
    bool* mask = ctx.outputs.size() > 1 ? static_cast<bool*>(ctx.outputs[1].data) : nullptr;
    const int64_t n = ctx.inputs[0].num_elements();
    const cudaStream_t stream = StreamOf(ctx);
    if (!drops_) {
      AMP_RETURN_IF_ERROR(CopyInputToOutput(ctx));
      if (mask && n > 0) CUDA_CHECK(cudaMemsetAsync(mask, 1, static_cast<size_t>(n) * sizeof(bool), stream));
      return Status::Ok();
    }
    CUDA_CHECK(LaunchDropout(t_, ctx.inputs[0].data, ctx.outputs[0].data, mask, n, DropoutSeed(seed_, ctx.seed),
                             ratio_, scale_, stream));
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }

 private:
  Elem t_;
  bool drops_;  // training with ratio > 0; else the identity
  double ratio_, scale_;
  uint64_t seed_;
};

StatusOr<std::unique_ptr<Kernel>> MakeDropout(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 1, 3, 1, 2));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {}, {0}));
  if (init.outputs.size() > 1 && init.outputs[1].dtype != DType::kBool) return init.Error("mask output must be bool");
  for (const TensorSpec& out : init.outputs)
    if (out.dims != init.inputs[0].dims) return init.Error("output dims differ from the input's");
  AMP_ASSIGN_OR_RETURN(const double ratio, Ratio(init, 1));
  return std::unique_ptr<Kernel>(
      std::make_unique<DropoutKernel>(*ElemOf(t), init.training && ratio != 0.0, ratio, init.seed));
}

class DropoutGradKernel final : public Kernel {
 public:
  DropoutGradKernel(Elem t, float scale) : t_(t), scale_(scale) {}
  Status Run(KernelContext& ctx) override {
    CUDA_CHECK(LaunchDropoutGrad(t_, ctx.inputs[0].data, static_cast<const bool*>(ctx.inputs[1].data),
                                 ctx.outputs[0].data, ctx.outputs[0].num_elements(), scale_, StreamOf(ctx)));
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }

 private:
  Elem t_;
  float scale_;
};

StatusOr<std::unique_ptr<Kernel>> MakeDropoutGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 3, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {}, {0}));
  if (init.inputs[1].dtype != DType::kBool) return init.Error("mask must be bool");
  if (init.inputs[1].dims != init.inputs[0].dims || init.outputs[0].dims != init.inputs[0].dims)
    return init.Error("dY, mask and dX differ in shape");
  AMP_ASSIGN_OR_RETURN(const double ratio, Ratio(init, 2));
  const float scale = static_cast<float>(1.0 / (1.0 - ratio));
  return std::unique_ptr<Kernel>(std::make_unique<DropoutGradKernel>(*ElemOf(t), scale));
}

class RandomKernel final : public Kernel {
 public:
  RandomKernel(const RandomParams& p, Num t, Elem p_t) : p_(p), t_(t), p_t_(p_t) {}
  Status Run(KernelContext& ctx) override {
    const RandomDraw draw = p_.kind == RandomKind::kUniform  ? RandomDraw::kUniform
                            : p_.kind == RandomKind::kNormal ? RandomDraw::kNormal
                                                             : RandomDraw::kBernoulli;
    const void* prob = draw == RandomDraw::kBernoulli ? ctx.inputs[0].data : nullptr;
    CUDA_CHECK(LaunchRandom(draw, t_, ctx.outputs[0].data, ctx.outputs[0].num_elements(),
                            DropoutSeed(p_.node_seed, ctx.seed), p_.a, p_.b, p_t_, prob, StreamOf(ctx)));
    return Status::Ok();
  }

 private:
  RandomParams p_;
  Num t_;
  Elem p_t_;
};

// The launcher's output type and P's type (fp32 when there is no P), or an
// error naming the dtype the CUDA kernel does not take.
StatusOr<std::pair<Num, Elem>> RandomTypes(const KernelInit& init) {
  if (init.outputs.size() != 1) return init.Error("expects one output");
  const DType out = init.outputs[0].dtype;
  if (init.op != OpKind::kBernoulli) {
    if (!ElemOf(out)) return init.Error("output of ", ir::DTypeName(out), " is not supported");
    return std::pair{*NumOf(out), Elem::kF32};
  }
  if (init.inputs.size() != 1) return init.Error("expects one input");
  const std::optional<Elem> p = ElemOf(init.inputs[0].dtype);
  if (!p) return init.Error("P of ", ir::DTypeName(init.inputs[0].dtype), " is not supported");
  std::optional<Num> t = NumOf(out);
  if (out == DType::kBool || out == DType::kUInt8) t = Num::kU8;  // bool: one byte, 0 or 1
  if (out == DType::kInt8) t = Num::kI8;
  if (!t) return init.Error("output of ", ir::DTypeName(out), " is not supported");
  return std::pair{*t, *p};
}

StatusOr<std::unique_ptr<Kernel>> MakeRandom(const KernelInit& init) {
  AMP_ASSIGN_OR_RETURN(const RandomParams p, ParseRandomParams(init));
  AMP_ASSIGN_OR_RETURN(const auto types, RandomTypes(init));
  return std::unique_ptr<Kernel>(std::make_unique<RandomKernel>(p, types.first, types.second));
}

}  // namespace

void RegisterDropout(Registry& r) {
  KernelEntry dropout = CudaEntry(OpKind::kDropout, "cuda", MakeDropout);
  dropout.accepts = [](const KernelInit& init) { return RatioKnown(init, 1); };
  r.Add(std::move(dropout));
  KernelEntry grad = CudaEntry(OpKind::kDropoutGrad, "cuda", MakeDropoutGrad);
  grad.accepts = [](const KernelInit& init) { return RatioKnown(init, 2); };
  r.Add(std::move(grad));
  // Keyed on the output dtype (the *Like ops read only X's shape).
  for (OpKind op : {OpKind::kRandomUniformLike, OpKind::kRandomNormalLike, OpKind::kRandomUniform,
                    OpKind::kRandomNormal, OpKind::kBernoulli}) {
    KernelEntry e = CudaEntry(op, "cuda", MakeRandom, 10, {});
    e.accepts = [](const KernelInit& init) { return RandomTypes(init).ok(); };
    r.Add(std::move(e));
  }
}

}  // namespace amptrain::kernels::cuda
