// Reference SoftmaxCrossEntropyLoss and SoftmaxCrossEntropyLossGrad.
//
// scores [N, C, d...] are viewed as [N, C, D] and labels [N, d...] as [N, D];
// one sample i = (n, d) with label y, class weights w (all 1 without the
// weights input), eps = label_smoothing:
//   log_prob[i, :] = log_softmax(scores[i, :])
//   loss_i = (1 - eps) * w_y * (-log_prob[i, y]) + eps / C * sum_c w_c * (-log_prob[i, c])
//   an ignored sample (y == ignore_index) has loss_i = 0 and weight 0
//   reduction none: loss_i; sum: sum_i loss_i; mean: sum_i loss_i / sum_i w_y
// With eps = 0 this is ONNX's definition; with eps > 0 it is PyTorch's
// CrossEntropyLoss(weight, ignore_index, label_smoothing=eps), including its
// normalization of the smoothing term by the target weights under mean.
// Gradient, with p = exp(log_prob) and W = sum_c w_c:
//   dscores[i, c] = g_i * ((1 - eps) * w_y * (p_c - [c == y]) + eps / C * (W * p_c - w_c))
//   g_i = dloss[i] (none), dloss (sum), dloss / sum_i w_y (mean); 0 when ignored.
// A label outside [0, C) that is not ignore_index is an OutOfRange error at
// run time naming the node, the label and its position.
#include <cmath>

#include "ir/infer/training_util.h"
#include "kernels/cpu/grad_kernels.h"
#include "kernels/cpu/loss_labels.h"

namespace amptrain::kernels::cpu::grad {

namespace {

struct LossPlan {
  std::string describe;
  ir::LossAttrs attrs;
  int64_t n = 0, c = 0, d = 1;
  int threads = 1;

  bool ignored(int64_t y) const { return attrs.ignore_index && y == *attrs.ignore_index; }

  // Labels as int64, or an OutOfRange error for the first bad one.
  StatusOr<std::vector<int64_t>> ReadLabels(const ir::TensorView& v) const {
    return ReadLossLabels(v, n * d, c, attrs.ignore_index, describe);
  }

  template <class T>
  std::vector<double> ReadWeights(const KernelContext& ctx, size_t input) const {
    std::vector<double> w(static_cast<size_t>(c), 1.0);
    if (ctx.inputs.size() > input && ctx.inputs[input].data)
      for (int64_t k = 0; k < c; ++k) w[k] = Load(ctx.inputs[input].as<const T>()[k]);
    return w;
  }

  // sum_i w_y over samples not ignored (the mean's denominator).
  double TargetWeight(const std::vector<int64_t>& y, const std::vector<double>& w) const {
    double total = 0.0;
    for (int64_t label : y) total += ignored(label) ? 0.0 : w[label];
    return total;
  }
};

template <class T>
class LossKernel : public Kernel {
 public:
  explicit LossKernel(LossPlan p) : p_(std::move(p)) {}

  Status Run(KernelContext& ctx) override {
    AMP_ASSIGN_OR_RETURN(std::vector<int64_t> y, p_.ReadLabels(ctx.inputs[1]));
    const std::vector<double> w = p_.template ReadWeights<T>(ctx, 2);
    const T* s = ctx.inputs[0].as<const T>();
    T* log_prob = ctx.outputs.size() > 1 ? ctx.outputs[1].as<T>() : nullptr;
    const int64_t samples = p_.n * p_.d, C = p_.c, D = p_.d;
    const double eps = p_.attrs.label_smoothing;
    std::vector<double> loss(static_cast<size_t>(samples));
#pragma omp parallel for num_threads(p_.threads) schedule(static)
    for (int64_t i = 0; i < samples; ++i) {
      const int64_t base = i / D * C * D + i % D;
      double mx = -INFINITY, sum = 0.0, smooth = 0.0;
      for (int64_t k = 0; k < C; ++k) mx = std::fmax(mx, Load(s[base + k * D]));
      for (int64_t k = 0; k < C; ++k) sum += std::exp(Load(s[base + k * D]) - mx);
      const double lse = mx + std::log(sum);
      for (int64_t k = 0; k < C; ++k) {
        const double lp = Load(s[base + k * D]) - lse;
        if (log_prob) log_prob[base + k * D] = Store<T>(lp);
        smooth -= w[k] * lp;
      }
      const int64_t label = y[i];
      loss[i] = p_.ignored(label)
                    ? 0.0
                    : (1.0 - eps) * w[label] * (lse - Load(s[base + label * D])) + eps / C * smooth;
    }
    T* out = ctx.outputs[0].as<T>();
    if (!out) return Status::Ok();
    if (p_.attrs.reduction == ir::LossReduction::kNone) {
      for (int64_t i = 0; i < samples; ++i) out[i] = Store<T>(loss[i]);
      return Status::Ok();
    }
    double total = 0.0;
    for (double l : loss) total += l;
    if (p_.attrs.reduction == ir::LossReduction::kMean) total /= p_.TargetWeight(y, w);
    out[0] = Store<T>(total);
    return Status::Ok();
  }

 private:
  LossPlan p_;
};

template <class T>
class LossGradKernel : public Kernel {
 public:
  explicit LossGradKernel(LossPlan p) : p_(std::move(p)) {}

  Status Run(KernelContext& ctx) override {
    AMP_ASSIGN_OR_RETURN(std::vector<int64_t> y, p_.ReadLabels(ctx.inputs[2]));
    const std::vector<double> w = p_.template ReadWeights<T>(ctx, 3);
    const T* dloss = ctx.inputs[0].as<const T>();
    const T* lp = ctx.inputs[1].as<const T>();
    T* ds = ctx.outputs[0].as<T>();
    const int64_t samples = p_.n * p_.d, C = p_.c, D = p_.d;
    const double eps = p_.attrs.label_smoothing;
    double w_sum = 0.0;
    for (double v : w) w_sum += v;
    double scalar_g = Load(dloss[0]);
    if (p_.attrs.reduction == ir::LossReduction::kMean) scalar_g /= p_.TargetWeight(y, w);
    const bool per_sample = p_.attrs.reduction == ir::LossReduction::kNone;
#pragma omp parallel for num_threads(p_.threads) schedule(static)
    for (int64_t i = 0; i < samples; ++i) {
      const int64_t base = i / D * C * D + i % D, label = y[i];
      if (p_.ignored(label)) {
        for (int64_t k = 0; k < C; ++k) ds[base + k * D] = Store<T>(0.0);
        continue;
      }
      const double g = per_sample ? Load(dloss[i]) : scalar_g;
      const double hard = (1.0 - eps) * w[label], soft = eps / C;
      for (int64_t k = 0; k < C; ++k) {
        const double p = std::exp(Load(lp[base + k * D]));
        const double v = hard * (p - (k == label ? 1.0 : 0.0)) + soft * (w_sum * p - w[k]);
        ds[base + k * D] = Store<T>(g * v);
      }
    }
    return Status::Ok();
  }

 private:
  LossPlan p_;
};

// `scores` is the input holding scores or log_prob, `labels` the labels input.
StatusOr<LossPlan> MakePlan(const KernelInit& init, size_t scores, size_t labels) {
  LossPlan p;
  p.describe = init.Describe();
  p.threads = Threads(init);
  auto attrs = ir::ParseLossAttrs(*init.attrs);
  if (!attrs.ok()) return init.Error(attrs.status().message());
  p.attrs = *attrs;
  const auto& s = init.inputs[scores].dims;
  if (s.size() < 2) return init.Error("scores must be [N, C, d...]");
  if (!ir::IsIndexType(init.inputs[labels].dtype)) return init.Error("labels must be int32 or int64");
  std::vector<int64_t> per_sample{s[0]};
  per_sample.insert(per_sample.end(), s.begin() + 2, s.end());
  if (init.inputs[labels].dims != per_sample) return init.Error("labels do not have shape [N, d...] of scores");
  p.n = s[0], p.c = s[1];
  for (size_t i = 2; i < s.size(); ++i) p.d *= s[i];
  const size_t weights = labels + 1;
  if (init.inputs.size() > weights && init.inputs[weights].present() &&
      init.inputs[weights].dims != std::vector<int64_t>{p.c})
    return init.Error("weights must have C = ", p.c, " elements");
  return p;
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> MakeSoftmaxCrossEntropyLoss(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 3, 1, 2));
  AMP_RETURN_IF_ERROR(CheckSameDType(init, 0, {2}));
  AMP_ASSIGN_OR_RETURN(LossPlan plan, MakePlan(init, 0, 1));
  if (plan.attrs.reduction == ir::LossReduction::kMean && plan.n * plan.d == 0)
    return init.Error("the mean loss over an empty batch (", init.inputs[0].dims.empty() ? 0 : init.inputs[0].dims[0],
                      " samples) is undefined");
  std::unique_ptr<Kernel> kernel;
  AMP_RETURN_IF_ERROR(DispatchFloat(init.inputs[0].dtype, [&](auto tag) {
    kernel = std::make_unique<LossKernel<typename decltype(tag)::type>>(std::move(plan));
    return Status::Ok();
  }));
  return kernel;
}

StatusOr<std::unique_ptr<Kernel>> MakeSoftmaxCrossEntropyLossGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 3, 4, 1, 1));
  AMP_RETURN_IF_ERROR(CheckSameDType(init, 0, {1, 3}));
  AMP_ASSIGN_OR_RETURN(LossPlan plan, MakePlan(init, 1, 2));
  const int64_t expected = plan.attrs.reduction == ir::LossReduction::kNone ? plan.n * plan.d : 1;
  if (init.inputs[0].num_elements() != expected) return init.Error("dloss must have ", expected, " elements");
  std::unique_ptr<Kernel> kernel;
  AMP_RETURN_IF_ERROR(DispatchFloat(init.inputs[0].dtype, [&](auto tag) {
    kernel = std::make_unique<LossGradKernel<typename decltype(tag)::type>>(std::move(plan));
    return Status::Ok();
  }));
  return kernel;
}

}  // namespace amptrain::kernels::cpu::grad
