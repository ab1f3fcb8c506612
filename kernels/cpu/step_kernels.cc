// The fused optimizer-step kernels (ir/ops.def, "Optimizer-step ops"), CPU:
// GradCheck (inf/NaN and the square sums of the unscaled gradients, one read
// of each gradient) and SgdStep/AdamStep (unscale, clip and update in one
// pass over each parameter). Gradients are never written: they are unscaled
// and clipped in registers, so a skipped step leaves them as backward wrote
// them. The formulas are PyTorch 1.13's, operation for operation, as in
// executor/train/optimizer.h; the scalars (step size, bias corrections) come
// from the caller, computed in double and rounded to float as PyTorch does.
//
// Parameters and gradients are float32 (fp32 masters), or float16/bfloat16
// (O3: weights stored low), read into float, updated in float arithmetic and
// rounded once when stored. Optimizer state is always float32.
#include <cmath>

#include "kernels/cpu/element.h"
#include "kernels/cpu/register.h"

namespace amptrain::kernels::cpu {

namespace {

// Below this many elements a tensor is handled by one thread.
constexpr int64_t kParallelMin = 1 << 14;

// The gradient as the update sees it: unscaled, then clipped (two roundings,
// as unscale-then-clip on stored fp32 gradients gives).
inline float Effective(float g, float inv_scale, float clip) {
  if (inv_scale != 1.0f) g = g * inv_scale;
  if (clip != 1.0f) g = g * clip;
  return g;
}

template <class T>
class GradCheckKernel : public Kernel {
 public:
  Status Run(KernelContext& ctx) override {
    const size_t k = ctx.inputs.size() - 1;
    const float scale = *ctx.inputs[k].as<float>();
    const float inv = static_cast<float>(1.0 / static_cast<double>(scale));
    double* stats = ctx.outputs[0].as<double>();
    for (size_t i = 0; i < k; ++i) {
      const T* g = ctx.inputs[i].as<T>();
      const int64_t n = ctx.inputs[i].num_elements();
      bool bad = false;
      double sum = 0.0;
#pragma omp parallel for reduction(|| : bad) reduction(+ : sum) schedule(static) if (n >= kParallelMin)
      for (int64_t j = 0; j < n; ++j) {
        const float v = static_cast<float>(g[j]);
        const float r = inv == 1.0f ? v : v * inv;
        bad = bad || !std::isfinite(v) || !std::isfinite(r);
        sum += static_cast<double>(r) * static_cast<double>(r);
      }
      stats[2 * i] = bad ? 1.0 : 0.0;
      stats[2 * i + 1] = sum;
    }
    return Status::Ok();
  }
};

template <class T>
class SgdStepKernel : public Kernel {
 public:
  explicit SgdStepKernel(const ir::Attributes& a)
      : momentum_(a.Float("momentum", 0.0f)),
        weight_decay_(a.Float("weight_decay", 0.0f)),
        nesterov_(a.Int("nesterov", 0) != 0) {}

  Status Run(KernelContext& ctx) override {
    const float* h = ctx.inputs.back().as<float>();
    const float neg_lr = -h[0], inv = h[1], clip = h[2];
    const bool first = h[3] != 0.0f;
    const float wd = weight_decay_, mom = momentum_;
    const bool nesterov = nesterov_;
    for (size_t i = 0; i + 1 < ctx.inputs.size(); i += 3) {
      T* p = ctx.inputs[i].as<T>();
      const T* g = ctx.inputs[i + 1].as<T>();
      float* buf = ctx.inputs[i + 2].as<float>();
      const int64_t n = ctx.inputs[i].num_elements();
      if (mom == 0.0f) {
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
        for (int64_t j = 0; j < n; ++j) {
          const float pj = static_cast<float>(p[j]);
          const float gj = Effective(static_cast<float>(g[j]), inv, clip);
          const float d = wd != 0.0f ? gj + wd * pj : gj;
          p[j] = static_cast<T>(pj + neg_lr * d);
        }
        continue;
      }
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
      for (int64_t j = 0; j < n; ++j) {
        const float pj = static_cast<float>(p[j]);
        const float gj = Effective(static_cast<float>(g[j]), inv, clip);
        float d = wd != 0.0f ? gj + wd * pj : gj;
        const float b = first ? d : buf[j] * mom + d;
        buf[j] = b;
        d = nesterov ? d + mom * b : b;
        p[j] = static_cast<T>(pj + neg_lr * d);
      }
    }
    return Status::Ok();
  }

 private:
  float momentum_, weight_decay_;
  bool nesterov_;
};

template <class T>
class AdamStepKernel : public Kernel {
 public:
  explicit AdamStepKernel(const ir::Attributes& a)
      : b1_(a.Float("beta1", 0.9f)),
        b2_(a.Float("beta2", 0.999f)),
        eps_(a.Float("eps", 1e-8f)),
        l2_(a.Int("decoupled", 0) != 0 ? 0.0f : a.Float("weight_decay", 0.0f)),
        decoupled_(a.Int("decoupled", 0) != 0 && a.Float("weight_decay", 0.0f) != 0.0f) {
    one_minus_b1_ = static_cast<float>(1.0 - static_cast<double>(b1_));
    one_minus_b2_ = static_cast<float>(1.0 - static_cast<double>(b2_));
  }

  Status Run(KernelContext& ctx) override {
    const float* h = ctx.inputs.back().as<float>();
    const float neg_step_size = h[0], bc2_sqrt = h[1], decay = h[2], inv = h[3], clip = h[4];
    const float b1 = b1_, b2 = b2_, eps = eps_, l2 = l2_, omb1 = one_minus_b1_, omb2 = one_minus_b2_;
    const bool apply_decay = decoupled_;
    for (size_t i = 0; i + 1 < ctx.inputs.size(); i += 4) {
      T* p = ctx.inputs[i].as<T>();
      const T* g = ctx.inputs[i + 1].as<T>();
      float* m = ctx.inputs[i + 2].as<float>();
      float* v = ctx.inputs[i + 3].as<float>();
      const int64_t n = ctx.inputs[i].num_elements();
#pragma omp parallel for schedule(static) if (n >= kParallelMin)
      for (int64_t j = 0; j < n; ++j) {
        float pj = static_cast<float>(p[j]);
        if (apply_decay) pj = pj * decay;
        float gj = Effective(static_cast<float>(g[j]), inv, clip);
        if (l2 != 0.0f) gj = gj + l2 * pj;
        const float mj = m[j] * b1 + omb1 * gj;
        const float vj = v[j] * b2 + omb2 * gj * gj;
        m[j] = mj;
        v[j] = vj;
        const float denom = std::sqrt(vj) / bc2_sqrt + eps;
        p[j] = static_cast<T>(pj + neg_step_size * mj / denom);
      }
    }
    return Status::Ok();
  }

 private:
  float b1_, b2_, eps_, l2_, one_minus_b1_ = 0, one_minus_b2_ = 0;
  bool decoupled_;
};

// Every parameter of a group has the dims of its gradient and state.
Status CheckGroupDims(const KernelInit& init, size_t per) {
  for (size_t i = 0; i + 1 < init.inputs.size(); i += per)
    for (size_t s = i + 1; s < i + per; ++s)
      if (init.inputs[s].present() && init.inputs[s].dims != init.inputs[i].dims)
        return init.Error("input ", s, " does not have the dims of parameter input ", i);
  return Status::Ok();
}

template <template <class> class K>
StatusOr<std::unique_ptr<Kernel>> MakeStep(const KernelInit& init, size_t per) {
  if (!init.attrs) return init.Error("no attributes");
  AMP_RETURN_IF_ERROR(CheckGroupDims(init, per));
  if (per == 3 && init.attrs->Float("momentum", 0.0f) != 0.0f)
    for (size_t i = 2; i + 1 < init.inputs.size(); i += 3)
      if (!init.inputs[i].present()) return init.Error("SGD with momentum needs a momentum buffer for input ", i - 2);
  if (init.inputs.back().num_elements() < static_cast<int64_t>(per + 1))
    return init.Error("the hyper-parameter input has ", init.inputs.back().num_elements(), " values");
  std::unique_ptr<Kernel> k;
  Status st = DispatchFloat(KeyDType(init), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, double>) {
      return init.Error("float64 parameters are not trained");
    } else {
      k = std::make_unique<K<T>>(*init.attrs);
      return Status::Ok();
    }
  });
  if (!st.ok()) return st;
  return k;
}

StatusOr<std::unique_ptr<Kernel>> MakeGradCheck(const KernelInit& init) {
  std::unique_ptr<Kernel> k;
  Status st = DispatchFloat(KeyDType(init), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    k = std::make_unique<GradCheckKernel<T>>();
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return k;
}

}  // namespace

void RegisterStepKernels(Registry& r) {
  const std::vector<DType> dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  r.Add({OpKind::kGradCheck, Device::kCpu, "fused", 0, {DType::kFloat32, DType::kFloat16, DType::kBFloat16,
                                                        DType::kFloat64},
         MakeGradCheck, nullptr});
  r.Add({OpKind::kSgdStep, Device::kCpu, "fused", 0, dtypes,
         [](const KernelInit& init) { return MakeStep<SgdStepKernel>(init, 3); }, nullptr});
  r.Add({OpKind::kAdamStep, Device::kCpu, "fused", 0, dtypes,
         [](const KernelInit& init) { return MakeStep<AdamStepKernel>(init, 4); }, nullptr});
}

}  // namespace amptrain::kernels::cpu
