// Reference Dropout: inputs data, optional ratio (scalar, default 0.5),
// optional training_mode; outputs output and optional mask (bool).
//   KernelInit::training == false: output = data, mask all true. The
//     training_mode input is not consulted: the executor decides the mode
//     (kernels/kernel.h), so an inference session never drops. Likewise the
//     node's `seed` attribute is ignored in favour of KernelInit::seed.
//   training: element i is kept when u_i >= ratio, where u_i in [0, 1) comes
//     from splitmix64(seed, i), and kept elements are scaled by 1/(1-ratio);
//     seed = KernelInit::seed, mixed with KernelContext::seed when that is
//     non-zero (a fresh mask per training step).
//     The stream is counter-based (a pure function of seed and the element
//     index), so results are bitwise identical for any thread count, and
//     shared with the CUDA kernel (kernels/dropout_stream.h).
#include <omp.h>

#include <cstdint>

#include "kernels/cpu/nn_kernels.h"
#include "kernels/dropout_stream.h"

namespace amptrain::kernels::cpu::nn {

namespace {

template <class T>
class DropoutReference : public Kernel {
 public:
  explicit DropoutReference(const KernelInit& init)
      : desc_(init.Describe()), threads_(Threads(init)), training_(init.training), seed_(init.seed) {}

  Status Run(KernelContext& ctx) override {
    const T* x = ctx.inputs[0].as<const T>();
    T* y = ctx.outputs[0].as<T>();
    bool* mask = ctx.outputs.size() > 1 ? ctx.outputs[1].as<bool>() : nullptr;
    const int64_t n = ctx.inputs[0].num_elements();
    double ratio = 0.5;
    if (ctx.inputs.size() > 1 && ctx.inputs[1].data) {
      AMP_RETURN_IF_ERROR(DispatchFloat(ctx.inputs[1].dtype, [&](auto tag) {
        ratio = static_cast<double>(ctx.inputs[1].as<const typename decltype(tag)::type>()[0]);
        return Status::Ok();
      }));
    }
    if (!(ratio >= 0.0 && ratio < 1.0)) return InvalidArgument(desc_, ": ratio ", ratio, " is outside [0, 1)");
    if (!training_ || ratio == 0.0) {
      if (y != x)
        for (int64_t i = 0; i < n; ++i) y[i] = x[i];
      if (mask)
        for (int64_t i = 0; i < n; ++i) mask[i] = true;
      return Status::Ok();
    }
    const double scale = 1.0 / (1.0 - ratio);
    const uint64_t seed = DropoutSeed(seed_, ctx.seed);
#pragma omp parallel for num_threads(threads_) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const bool keep = DropoutUniform(seed, static_cast<uint64_t>(i)) >= ratio;
      y[i] = static_cast<T>(static_cast<Acc<T>>(keep ? static_cast<double>(x[i]) * scale : 0.0));
      if (mask) mask[i] = keep;
    }
    return Status::Ok();
  }

  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }

 private:
  std::string desc_;
  int threads_;
  bool training_;
  uint64_t seed_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> MakeDropoutReference(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 1, 3, 1, 2));
  if (init.outputs.size() > 1 && init.outputs[1].dtype != DType::kBool) return init.Error("mask output must be bool");
  if (init.inputs.size() > 1 && init.inputs[1].present() && init.inputs[1].num_elements() != 1)
    return init.Error("ratio must be a scalar");
  std::unique_ptr<Kernel> kernel;
  AMP_RETURN_IF_ERROR(DispatchFloat(init.inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernel = std::make_unique<DropoutReference<T>>(init);
    return Status::Ok();
  }));
  return kernel;
}

}  // namespace amptrain::kernels::cpu::nn
