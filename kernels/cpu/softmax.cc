// Reference kernels of Softmax, LogSoftmax (opset-13 semantics: normalize
// along `axis`, default -1) and LayerNormalization. All accumulate in double.
//   Softmax:    y = exp(x - max) / sum(exp(x - max))   (no overflow at x = 1000)
//   LogSoftmax: y = x - max - log(sum(exp(x - max)))
//   LayerNormalization(X, Scale, B?) over X[axis:]:
//     Y = (X - mean) * inv_std * Scale + B,  inv_std = 1 / sqrt(var + epsilon)
//     with the biased variance; outputs 1 and 2 (Mean, InvStdDev), when
//     present, have the stash dtype and shape X[:axis] + [1] * (rank - axis).
#include <cmath>

#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/elementwise.h"

namespace amptrain::kernels::cpu {

namespace {

StatusOr<int64_t> NormalizedAxis(const KernelInit& init, int64_t def) {
  AMP_ASSIGN_OR_RETURN(int64_t axis, AttrsOf(init).GetInt("axis", def));
  const int64_t rank = static_cast<int64_t>(init.inputs[0].dims.size());
  if (axis < -rank || axis >= rank)
    return Status(StatusCode::kOutOfRange, StrCat(init.Describe(), ": axis ", axis, " is out of range for rank ", rank));
  return axis < 0 ? axis + rank : axis;
}

int64_t Product(const std::vector<int64_t>& d, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= d[i];
  return p;
}

template <class T>
class SoftmaxKernel final : public Kernel {
 public:
  SoftmaxKernel(const KernelInit& init, int64_t axis, bool log)
      : outer_(Product(init.inputs[0].dims, 0, static_cast<size_t>(axis))),
        n_(init.inputs[0].dims[static_cast<size_t>(axis)]),
        inner_(Product(init.inputs[0].dims, static_cast<size_t>(axis) + 1, init.inputs[0].dims.size())),
        log_(log), threads_(Threads(init)) {}

  Status Run(KernelContext& ctx) override {
    const T* x = ctx.inputs[0].as<const T>();
    T* y = ctx.outputs[0].as<T>();
    const int64_t lanes = outer_ * inner_;
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && lanes * n_ >= kParallelMinElements)
    for (int64_t lane = 0; lane < lanes; ++lane) {
      const int64_t base = lane / inner_ * n_ * inner_ + lane % inner_;
      double mx = -INFINITY;
      for (int64_t j = 0; j < n_; ++j) mx = std::fmax(mx, static_cast<double>(static_cast<Acc<T>>(x[base + j * inner_])));
      double sum = 0.0;
      for (int64_t j = 0; j < n_; ++j) sum += std::exp(static_cast<double>(static_cast<Acc<T>>(x[base + j * inner_])) - mx);
      const double log_sum = std::log(sum);
      for (int64_t j = 0; j < n_; ++j) {
        double v = static_cast<double>(static_cast<Acc<T>>(x[base + j * inner_])) - mx;
        y[base + j * inner_] = static_cast<T>(static_cast<Acc<T>>(log_ ? v - log_sum : std::exp(v) / sum));
      }
    }
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }

 private:
  int64_t outer_, n_, inner_;
  bool log_;
  int threads_;
};

// Index of each normalized-shape element in a Scale/B tensor broadcast to
// it; empty when the tensor already has the normalized element order.
std::vector<int64_t> BroadcastMap(const std::vector<int64_t>& in, const std::vector<int64_t>& normalized) {
  if (Product(in, 0, in.size()) == Product(normalized, 0, normalized.size())) return {};
  const int64_t n = Product(normalized, 0, normalized.size());
  std::vector<int64_t> map(static_cast<size_t>(n));
  BroadcastPlan plan({in}, normalized);
  plan.ForEachRun(1, [&](int64_t o, const int64_t* off, int64_t len) {
    for (int64_t j = 0; j < len; ++j) map[static_cast<size_t>(o + j)] = off[0] + j * plan.inner_stride(0);
  });
  return map;
}

void StoreStat(const ir::TensorView& t, int64_t i, double v) {
  switch (t.dtype) {
    case DType::kFloat32: t.as<float>()[i] = static_cast<float>(v); break;
    case DType::kFloat64: t.as<double>()[i] = v; break;
    case DType::kFloat16: t.as<Half>()[i] = Half(static_cast<float>(v)); break;
    case DType::kBFloat16: t.as<BFloat16>()[i] = BFloat16(static_cast<float>(v)); break;
    default: break;  // rejected at creation
  }
}

template <class T>
class LayerNormKernel final : public Kernel {
 public:
  LayerNormKernel(const KernelInit& init, int64_t axis, double epsilon)
      : rows_(Product(init.inputs[0].dims, 0, static_cast<size_t>(axis))),
        cols_(Product(init.inputs[0].dims, static_cast<size_t>(axis), init.inputs[0].dims.size())),
        epsilon_(epsilon), threads_(Threads(init)) {
    std::vector<int64_t> normalized(init.inputs[0].dims.begin() + axis, init.inputs[0].dims.end());
    scale_map_ = BroadcastMap(init.inputs[1].dims, normalized);
    if (init.inputs.size() > 2 && init.inputs[2].present()) bias_map_ = BroadcastMap(init.inputs[2].dims, normalized);
  }

  Status Run(KernelContext& ctx) override {
    const T* x = ctx.inputs[0].as<const T>();
    const T* scale = ctx.inputs[1].as<const T>();
    const T* bias = ctx.inputs.size() > 2 ? ctx.inputs[2].as<const T>() : nullptr;
    T* y = ctx.outputs[0].as<T>();
    const ir::TensorView* mean_out = ctx.outputs.size() > 1 && ctx.outputs[1].data ? &ctx.outputs[1] : nullptr;
    const ir::TensorView* inv_out = ctx.outputs.size() > 2 && ctx.outputs[2].data ? &ctx.outputs[2] : nullptr;
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && rows_ > 1 && rows_ * cols_ >= kParallelMinElements)
    for (int64_t r = 0; r < rows_; ++r) {
      const T* xr = x + r * cols_;
      double sum = 0.0, sq = 0.0;
      for (int64_t c = 0; c < cols_; ++c) sum += static_cast<double>(static_cast<Acc<T>>(xr[c]));
      const double mean = sum / static_cast<double>(cols_);
      for (int64_t c = 0; c < cols_; ++c) {
        double d = static_cast<double>(static_cast<Acc<T>>(xr[c])) - mean;
        sq += d * d;
      }
      const double inv = 1.0 / std::sqrt(sq / static_cast<double>(cols_) + epsilon_);
      for (int64_t c = 0; c < cols_; ++c) {
        double s = static_cast<Acc<T>>(scale[scale_map_.empty() ? c : scale_map_[static_cast<size_t>(c)]]);
        double b = bias ? static_cast<double>(static_cast<Acc<T>>(bias[bias_map_.empty() ? c : bias_map_[static_cast<size_t>(c)]])) : 0.0;
        y[r * cols_ + c] = static_cast<T>(static_cast<Acc<T>>((static_cast<double>(static_cast<Acc<T>>(xr[c])) - mean) * inv * s + b));
      }
      if (mean_out) StoreStat(*mean_out, r, mean);
      if (inv_out) StoreStat(*inv_out, r, inv);
    }
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }

 private:
  int64_t rows_, cols_;
  double epsilon_;
  int threads_;
  std::vector<int64_t> scale_map_, bias_map_;
};

StatusOr<std::unique_ptr<Kernel>> CreateSoftmax(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 1, 1));
  if (init.inputs[0].dims.empty()) return init.Error("input must have rank >= 1");
  AMP_ASSIGN_OR_RETURN(int64_t axis, NormalizedAxis(init, -1));
  std::unique_ptr<Kernel> out;
  AMP_RETURN_IF_ERROR(DispatchFloat(init.inputs[0].dtype, [&](auto tag) {
    out = std::make_unique<SoftmaxKernel<typename decltype(tag)::type>>(init, axis, init.op == OpKind::kLogSoftmax);
    return Status::Ok();
  }));
  return out;
}

StatusOr<std::unique_ptr<Kernel>> CreateLayerNorm(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 1));
  if (init.inputs[0].dims.empty()) return init.Error("input must have rank >= 1");
  AMP_ASSIGN_OR_RETURN(int64_t axis, NormalizedAxis(init, -1));
  AMP_ASSIGN_OR_RETURN(float epsilon, AttrsOf(init).GetFloat("epsilon", 1e-5f));
  for (size_t i = 1; i < init.inputs.size(); ++i)
    if (init.inputs[i].present() && init.inputs[i].dtype != init.inputs[0].dtype)
      return init.Error("input ", i, " has dtype ", ir::DTypeName(init.inputs[i].dtype), ", expected X's");
  for (size_t o = 1; o < init.outputs.size(); ++o)
    if (init.outputs[o].present() && !ir::IsFloat(init.outputs[o].dtype))
      return init.Error("output ", o, " must have a float stash dtype");
  std::unique_ptr<Kernel> out;
  AMP_RETURN_IF_ERROR(DispatchFloat(init.inputs[0].dtype, [&](auto tag) {
    out = std::make_unique<LayerNormKernel<typename decltype(tag)::type>>(init, axis, static_cast<double>(epsilon));
    return Status::Ok();
  }));
  return out;
}

}  // namespace

void RegisterReferenceNorm(Registry& r) {
  r.Add(ReferenceEntry(OpKind::kSoftmax, FloatDTypes(), CreateSoftmax));
  r.Add(ReferenceEntry(OpKind::kLogSoftmax, FloatDTypes(), CreateSoftmax));
  r.Add(ReferenceEntry(OpKind::kLayerNormalization, FloatDTypes(), CreateLayerNorm));
}

}  // namespace amptrain::kernels::cpu
