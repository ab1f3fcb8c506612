// Reference BatchNormalization. X [N, C, ...]; scale, B, input_mean,
// input_var [C] (params may have their own float dtypes, opset 15).
//   inference: Y = scale * (X - input_mean) / sqrt(input_var + eps) + B
//   training (KernelInit::training, training_mode=1, or 3 outputs): mean and
//     var are the batch statistics over N and the spatial dims, the variance
//     biased (divided by the count) for normalization; running outputs are
//       running_mean = input_mean * momentum + mean * (1 - momentum)
//       running_var  = input_var  * momentum + var  * (1 - momentum)
//     with the *biased* var, as the ONNX spec and ONNX Runtime do. (PyTorch
//     updates its running_var with the unbiased var; models trained here and
//     in PyTorch therefore differ by a factor count/(count-1) in that update.)
#include <omp.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/nn_kernels.h"

namespace amptrain::kernels::cpu::nn {

namespace {

std::vector<double> ReadParam(const ir::TensorView& v) {
  std::vector<double> out(v.num_elements());
  (void)DispatchFloat(v.dtype, [&](auto tag) {
    using P = typename decltype(tag)::type;
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(v.as<const P>()[i]);
    return Status::Ok();
  });
  return out;
}

void WriteParam(const ir::TensorView& v, const std::vector<double>& values) {
  (void)DispatchFloat(v.dtype, [&](auto tag) {
    using P = typename decltype(tag)::type;
    for (size_t i = 0; i < values.size(); ++i) v.as<P>()[i] = static_cast<P>(static_cast<Acc<P>>(values[i]));
    return Status::Ok();
  });
}

template <class T>
class BatchNormReference : public Kernel {
 public:
  BatchNormReference(const KernelInit& init, bool training, double eps, double momentum)
      : threads_(Threads(init)), training_(training), eps_(eps), momentum_(momentum) {
    const auto& x = init.inputs[0].dims;
    n_ = x[0], c_ = x[1];
    plane_ = 1;
    for (size_t d = 2; d < x.size(); ++d) plane_ *= x[d];
  }

  Status Run(KernelContext& ctx) override {
    const T* x = ctx.inputs[0].as<const T>();
    T* y = ctx.outputs[0].as<T>();
    std::vector<double> scale = ReadParam(ctx.inputs[1]), bias = ReadParam(ctx.inputs[2]);
    std::vector<double> mean = ReadParam(ctx.inputs[3]), var = ReadParam(ctx.inputs[4]);
    if (training_) {
      std::vector<double> bmean(c_), bvar(c_);
      const double count = static_cast<double>(n_ * plane_);
#pragma omp parallel for num_threads(threads_)
      for (int64_t c = 0; c < c_; ++c) {
        double sum = 0.0, sq = 0.0;
        for (int64_t n = 0; n < n_; ++n)
          for (int64_t i = 0, base = (n * c_ + c) * plane_; i < plane_; ++i) sum += static_cast<double>(x[base + i]);
        bmean[c] = sum / count;
        for (int64_t n = 0; n < n_; ++n)
          for (int64_t i = 0, base = (n * c_ + c) * plane_; i < plane_; ++i) {
            double d = static_cast<double>(x[base + i]) - bmean[c];
            sq += d * d;
          }
        bvar[c] = sq / count;  // biased
      }
      std::vector<double> run_mean(c_), run_var(c_);
      for (int64_t c = 0; c < c_; ++c) {
        run_mean[c] = mean[c] * momentum_ + bmean[c] * (1.0 - momentum_);
        run_var[c] = var[c] * momentum_ + bvar[c] * (1.0 - momentum_);
      }
      if (ctx.outputs.size() > 1 && ctx.outputs[1].data) WriteParam(ctx.outputs[1], run_mean);
      if (ctx.outputs.size() > 2 && ctx.outputs[2].data) WriteParam(ctx.outputs[2], run_var);
      mean = std::move(bmean), var = std::move(bvar);
    }
#pragma omp parallel for collapse(2) num_threads(threads_)
    for (int64_t n = 0; n < n_; ++n)
      for (int64_t c = 0; c < c_; ++c) {
        const double a = scale[c] / std::sqrt(var[c] + eps_);
        const double b = bias[c] - mean[c] * a;
        for (int64_t i = 0, base = (n * c_ + c) * plane_; i < plane_; ++i)
          y[base + i] = static_cast<T>(static_cast<Acc<T>>(static_cast<double>(x[base + i]) * a + b));
      }
    return Status::Ok();
  }

 private:
  int threads_;
  bool training_;
  double eps_, momentum_;
  int64_t n_ = 0, c_ = 0, plane_ = 1;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> MakeBatchNormReference(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 5, 5, 1, 3));
  if (init.outputs.size() == 2) return init.Error("2 outputs; training mode has 3 (Y, running_mean, running_var)");
  const auto& x = init.inputs[0].dims;
  if (x.size() < 2) return init.Error("input has rank ", x.size(), ", expected [N, C, ...]");
  for (size_t i = 1; i < 5; ++i) {
    if (!ir::IsFloat(init.inputs[i].dtype) || init.inputs[i].dims.size() != 1 || init.inputs[i].dims[0] != x[1])
      return init.Error("input ", i, " must be a float vector of ", x[1], " elements");
  }
  AMP_ASSIGN_OR_RETURN(float eps, init.attrs->GetFloat("epsilon", 1e-5f));
  AMP_ASSIGN_OR_RETURN(float momentum, init.attrs->GetFloat("momentum", 0.9f));
  AMP_ASSIGN_OR_RETURN(int64_t mode, init.attrs->GetInt("training_mode", 0));
  const bool training = init.training || mode != 0 || init.outputs.size() == 3;
  std::unique_ptr<Kernel> kernel;
  AMP_RETURN_IF_ERROR(DispatchFloat(init.inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernel = std::make_unique<BatchNormReference<T>>(init, training, eps, momentum);
    return Status::Ok();
  }));
  return kernel;
}

}  // namespace amptrain::kernels::cpu::nn
