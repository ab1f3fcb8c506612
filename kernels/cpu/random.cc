// Random ops (ir/ops.def): RandomUniformLike, RandomNormalLike,
// RandomUniform, RandomNormal, Bernoulli. Every value comes from Dropout's
// counter-based stream (kernels/dropout_stream.h), so a run is a pure
// function of its seeds: bitwise the same for any thread count, on every
// device. Element i, with s = DropoutSeed(node seed, run seed):
//   uniform:   low + (high - low) * u(s, i)                        u in [0, 1)
//   normal:    mean + scale * sqrt(-2 ln(1 - u(s, 2i))) * cos(2 pi u(s, 2i+1))
//   Bernoulli: u(s, i) < P[i] ? 1 : 0   (P outside [0, 1] clamps: below 0 never,
//              above 1 always; NaN never)
// computed in double and rounded to float, then to the output dtype. The
// node seed is the ONNX `seed` attribute's bits where the model sets one,
// else KernelInit::seed (kernels/kernel_params.h). The run seed
// (KernelContext::seed) is the trainer's per-step seed: each training step
// draws fresh values, as PyTorch's do, while inference runs (run seed 0)
// repeat theirs. Unlike Dropout, these ops draw in inference too: the model
// asked for random values, not for a training-only mask.
#include <omp.h>

#include <cmath>
#include <cstdint>

#include "kernels/cpu/element.h"
#include "kernels/cpu/nn_kernels.h"
#include "kernels/cpu/register.h"
#include "kernels/dropout_stream.h"
#include "kernels/kernel_params.h"

namespace amptrain::kernels::cpu {

namespace {

using ir::OpKind;

// A double in the storage type T (float, Half, BFloat16, double, integers, bool).
template <class T> T FromDouble(double v) {
  if constexpr (std::is_same_v<T, bool>) return v != 0.0;
  else if constexpr (std::is_integral_v<T>) return static_cast<T>(v);
  else if constexpr (std::is_same_v<T, double>) return v;
  else return static_cast<T>(static_cast<float>(v));
}

template <class T>
class RandomKernel : public Kernel {
 public:
  RandomKernel(const KernelInit& init, const RandomParams& p) : threads_(nn::Threads(init)), p_(p) {}

  Status Run(KernelContext& ctx) override {
    T* y = ctx.outputs[0].as<T>();
    const int64_t n = ctx.outputs[0].num_elements();
    const uint64_t seed = DropoutSeed(p_.node_seed, ctx.seed);
    if (p_.kind == RandomKind::kBernoulli) {
      return DispatchFloat(ctx.inputs[0].dtype, [&](auto tag) {
        const auto* p = ctx.inputs[0].as<const typename decltype(tag)::type>();
#pragma omp parallel for num_threads(threads_) schedule(static)
        for (int64_t i = 0; i < n; ++i)
          y[i] = FromDouble<T>(DropoutUniform(seed, static_cast<uint64_t>(i)) < static_cast<double>(p[i]) ? 1.0 : 0.0);
        return Status::Ok();
      });
    }
    const bool normal = p_.kind == RandomKind::kNormal;
    const double a = p_.a, b = p_.b;
#pragma omp parallel for num_threads(threads_) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t k = static_cast<uint64_t>(i);
      double v;
      if (normal) {
        const double r = std::sqrt(-2.0 * std::log1p(-DropoutUniform(seed, 2 * k)));
        v = a + b * r * std::cos(2.0 * M_PI * DropoutUniform(seed, 2 * k + 1));
      } else {
        v = a + b * DropoutUniform(seed, k);
      }
      y[i] = FromDouble<T>(v);
    }
    return Status::Ok();
  }

 private:
  int threads_;
  RandomParams p_;
};

StatusOr<std::unique_ptr<Kernel>> MakeRandom(const KernelInit& init) {
  AMP_ASSIGN_OR_RETURN(const RandomParams p, ParseRandomParams(init));
  std::unique_ptr<Kernel> kernel;
  auto make = [&](auto tag) {
    kernel = std::make_unique<RandomKernel<typename decltype(tag)::type>>(init, p);
    return Status::Ok();
  };
  const DType t = init.outputs[0].dtype;
  if (p.kind == RandomKind::kBernoulli) AMP_RETURN_IF_ERROR(DispatchAll(t, make));
  else AMP_RETURN_IF_ERROR(DispatchFloat(t, make));
  return kernel;
}

}  // namespace

void RegisterReferenceRandom(Registry& r) {
  for (OpKind op : {OpKind::kRandomUniformLike, OpKind::kRandomNormalLike, OpKind::kRandomUniform,
                    OpKind::kRandomNormal, OpKind::kBernoulli})
    r.Add(KernelEntry{op, DeviceKind::kCpu, "reference", 0, {}, MakeRandom, nullptr});
}

}  // namespace amptrain::kernels::cpu
