// Reference BatchNormalizationGrad and LayerNormalizationGrad, statistics
// recomputed from X in double (biased variance), as the forward kernels
// (kernels/cpu/batchnorm.cc training mode, softmax.cc) compute them.
//
// With xhat = (x - mean) * inv, inv = 1 / sqrt(var + epsilon), M the count
// of one statistic:
//   BatchNormalizationGrad(dY, X [N, C, ...], scale [C]), per channel c over
//   N and the spatial dims:
//     dBias = sum dY, dScale = sum dY * xhat
//     dX = scale * inv / M * (M * dY - dBias - xhat * dScale)
//   scale (and so dScale, dBias) may have its own float dtype.
//   LayerNormalizationGrad(dY, X, scale), per row of X[:axis] over X[axis:]
//   with scale broadcast to X[axis:] (dScale, dBias reduced back to scale's
//   shape):
//     g = dY * scale; dX = inv * (g - mean(g) - xhat * mean(g * xhat))
//     dScale = sum over rows of dY * xhat, dBias = sum over rows of dY
// Work is split by channel (BN), by row for dX and by column block for
// dScale/dBias (LN); every sum has a fixed order.
#include <cmath>
#include <tuple>
#include <vector>

#include "ir/infer/infer_util.h"
#include "kernels/cpu/grad_kernels.h"

namespace amptrain::kernels::cpu::grad {

std::vector<double> ReadVector(const ir::TensorView& v) {
  std::vector<double> out(static_cast<size_t>(v.num_elements()));
  (void)DispatchFloat(v.dtype, [&](auto tag) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = Load(v.as<const typename decltype(tag)::type>()[i]);
    return Status::Ok();
  });
  return out;
}

void WriteVector(const ir::TensorView& v, const std::vector<double>& values) {
  if (!v.data) return;
  (void)DispatchFloat(v.dtype, [&](auto tag) {
    using P = typename decltype(tag)::type;
    for (size_t i = 0; i < values.size(); ++i) v.as<P>()[i] = Store<P>(values[i]);
    return Status::Ok();
  });
}

namespace {

template <class T>
class BatchNormGradReference : public Kernel {
 public:
  BatchNormGradReference(const KernelInit& init, double eps) : threads_(Threads(init)), eps_(eps) {
    const auto& x = init.inputs[1].dims;
    n_ = x[0], c_ = x[1], plane_ = SpatialSizeOf(x);
  }

  Status Run(KernelContext& ctx) override {
    const T* dy = ctx.inputs[0].as<const T>();
    const T* x = ctx.inputs[1].as<const T>();
    const std::vector<double> scale = ReadVector(ctx.inputs[2]);
    T* dx = ctx.outputs[0].as<T>();
    std::vector<double> dscale(c_), dbias(c_);
#pragma omp parallel for num_threads(threads_) schedule(dynamic)
    for (int64_t c = 0; c < c_; ++c)
      std::tie(dscale[c], dbias[c]) = BatchNormGradChannel(n_, plane_, eps_, scale[c], dy, x, dx, [&](int64_t n, int64_t i) {
        return (n * c_ + c) * plane_ + i;
      });
    if (ctx.outputs.size() > 1) WriteVector(ctx.outputs[1], dscale);
    if (ctx.outputs.size() > 2) WriteVector(ctx.outputs[2], dbias);
    return Status::Ok();
  }

 private:
  static int64_t SpatialSizeOf(const std::vector<int64_t>& x) {
    int64_t p = 1;
    for (size_t d = 2; d < x.size(); ++d) p *= x[d];
    return p;
  }

  int threads_;
  double eps_;
  int64_t n_ = 0, c_ = 0, plane_ = 1;
};

template <class T>
class LayerNormGradReference : public Kernel {
 public:
  LayerNormGradReference(const KernelInit& init, int64_t axis, double eps) : threads_(Threads(init)), eps_(eps) {
    const auto& x = init.inputs[1].dims;
    rows_ = 1, cols_ = 1;
    for (size_t d = 0; d < x.size(); ++d) (static_cast<int64_t>(d) < axis ? rows_ : cols_) *= x[d];
    const std::vector<int64_t> normalized(x.begin() + axis, x.end());
    const ir::BroadcastIndex index(init.inputs[2].dims, normalized);
    scale_size_ = init.inputs[2].num_elements();
    if (scale_size_ != cols_)
      for (int64_t j = 0; j < cols_; ++j) scale_map_.push_back(index(j));
  }

  Status Run(KernelContext& ctx) override {
    const T* dy = ctx.inputs[0].as<const T>();
    const T* x = ctx.inputs[1].as<const T>();
    const T* scale = ctx.inputs[2].as<const T>();
    T* dx = ctx.outputs[0].as<T>();
    std::vector<double> mean(rows_), inv(rows_);
#pragma omp parallel num_threads(threads_)
    {
      std::vector<double> g(cols_);
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows_; ++r) {
        const T* xr = x + r * cols_;
        const T* dyr = dy + r * cols_;
        double sum = 0.0, sq = 0.0;
        for (int64_t j = 0; j < cols_; ++j) sum += Load(xr[j]);
        mean[r] = sum / cols_;
        for (int64_t j = 0; j < cols_; ++j) sq += (Load(xr[j]) - mean[r]) * (Load(xr[j]) - mean[r]);
        inv[r] = 1.0 / std::sqrt(sq / cols_ + eps_);
        if (!dx) continue;
        double sg = 0.0, sgx = 0.0;
        for (int64_t j = 0; j < cols_; ++j) {
          g[j] = Load(dyr[j]) * Load(scale[scale_map_.empty() ? j : scale_map_[j]]);
          sg += g[j];
          sgx += g[j] * (Load(xr[j]) - mean[r]) * inv[r];
        }
        sg /= cols_, sgx /= cols_;
        for (int64_t j = 0; j < cols_; ++j)
          dx[r * cols_ + j] = Store<T>(inv[r] * (g[j] - sg - (Load(xr[j]) - mean[r]) * inv[r] * sgx));
      }
    }
    const bool want_scale = ctx.outputs.size() > 1 && ctx.outputs[1].data;
    const bool want_bias = ctx.outputs.size() > 2 && ctx.outputs[2].data;
    if (!want_scale && !want_bias) return Status::Ok();
    std::vector<double> dscale(cols_, 0.0), dbias(cols_, 0.0);
    constexpr int64_t kBlock = 256;
#pragma omp parallel for num_threads(threads_) schedule(static)
    for (int64_t j0 = 0; j0 < cols_; j0 += kBlock) {
      const int64_t j1 = std::min(cols_, j0 + kBlock);
      for (int64_t r = 0; r < rows_; ++r)
        for (int64_t j = j0; j < j1; ++j) {
          const double d = Load(dy[r * cols_ + j]);
          dbias[j] += d;
          dscale[j] += d * (Load(x[r * cols_ + j]) - mean[r]) * inv[r];
        }
    }
    if (want_scale) WriteVector(ctx.outputs[1], ToScaleShape(dscale));
    if (want_bias) WriteVector(ctx.outputs[2], ToScaleShape(dbias));
    return Status::Ok();
  }

 private:
  // Sums a per-column vector into scale's (broadcast) shape, in column order.
  std::vector<double> ToScaleShape(const std::vector<double>& per_column) const {
    if (scale_map_.empty()) return per_column;
    std::vector<double> out(scale_size_, 0.0);
    for (int64_t j = 0; j < cols_; ++j) out[scale_map_[j]] += per_column[j];
    return out;
  }

  int threads_;
  double eps_;
  int64_t rows_ = 1, cols_ = 1, scale_size_ = 0;
  std::vector<int64_t> scale_map_;  // column -> scale element, empty when scale has every column
};

Status CheckVectorOutputs(const KernelInit& init) {
  for (size_t o = 1; o < init.outputs.size(); ++o)
    if (init.outputs[o].dims != init.inputs[2].dims || !ir::IsFloat(init.outputs[o].dtype))
      return init.Error("output ", o, " must have scale's shape and a float dtype");
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> MakeBatchNormGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 3, 3, 1, 3));
  AMP_RETURN_IF_ERROR(CheckSameDType(init, 0, {1}));
  const auto& x = init.inputs[1].dims;
  if (x.size() < 2 || init.inputs[0].dims != x) return init.Error("dY and X must be the same [N, C, ...]");
  if (!ir::IsFloat(init.inputs[2].dtype) || init.inputs[2].dims != std::vector<int64_t>{x[1]})
    return init.Error("scale must be a float vector of ", x[1], " elements");
  AMP_RETURN_IF_ERROR(CheckVectorOutputs(init));
  AMP_ASSIGN_OR_RETURN(float eps, init.attrs->GetFloat("epsilon", 1e-5f));
  std::unique_ptr<Kernel> kernel;
  AMP_RETURN_IF_ERROR(DispatchFloat(init.inputs[0].dtype, [&](auto tag) {
    kernel = std::make_unique<BatchNormGradReference<typename decltype(tag)::type>>(init, eps);
    return Status::Ok();
  }));
  return kernel;
}

StatusOr<std::unique_ptr<Kernel>> MakeLayerNormGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 3, 3, 1, 3));
  AMP_RETURN_IF_ERROR(CheckSameDType(init, 0, {1, 2}));
  const auto& x = init.inputs[1].dims;
  if (x.empty() || init.inputs[0].dims != x) return init.Error("dY and X must have the same shape of rank >= 1");
  const int64_t rank = static_cast<int64_t>(x.size());
  AMP_ASSIGN_OR_RETURN(int64_t axis, init.attrs->GetInt("axis", -1));
  if (axis < -rank || axis >= rank) return OutOfRange(init.Describe(), ": axis ", axis, " is out of range for rank ", rank);
  if (axis < 0) axis += rank;
  const std::vector<int64_t> normalized(x.begin() + axis, x.end());
  auto b = ir::BroadcastShapes(ir::Shape::FromStatic(normalized), ir::Shape::FromStatic(init.inputs[2].dims));
  if (!b.ok() || b->static_dims() != normalized) return init.Error("scale does not broadcast to X[axis:]");
  AMP_RETURN_IF_ERROR(CheckVectorOutputs(init));
  AMP_ASSIGN_OR_RETURN(float eps, init.attrs->GetFloat("epsilon", 1e-5f));
  std::unique_ptr<Kernel> kernel;
  AMP_RETURN_IF_ERROR(DispatchFloat(init.inputs[0].dtype, [&](auto tag) {
    kernel = std::make_unique<LayerNormGradReference<typename decltype(tag)::type>>(init, axis, eps);
    return Status::Ok();
  }));
  return kernel;
}

}  // namespace amptrain::kernels::cpu::grad
