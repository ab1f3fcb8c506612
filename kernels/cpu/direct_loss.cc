// Direct SoftmaxCrossEntropyLoss and SoftmaxCrossEntropyLossGrad: fp32
// scores whose classes are contiguous ([N, C], or [N, C, 1...]: what the
// trainer's loss head gives, a language model's [batch*seq, vocab] rows
// included), no class weights, reduction mean or sum. The reference
// (kernels/cpu/loss.cc) calls the C library's exp in double once per score
// in each direction; a 2048 x 8192 batch of token logits took 55 ms forward
// and 42 ms backward there on 2 threads. Here each row is a few loops the
// compiler vectorizes, with the reference's formulas in double:
//   forward:  m = max_k x_k; lse = m + log(sum_k e^(x_k - m)) (the sum in
//             double, e^ by ExpNegative); log_prob_k = x_k - lse rounded
//             once; the loss terms as the reference forms them, summed in
//             row order as the reference sums them.
//   backward: p_k = e^(log_prob_k), ds_k = g (hard (p_k - [k == y]) +
//             soft (C p_k - 1)), rounded once.
// Not the reference's bits: ExpNegative is within 2e-15 of e^x and the row
// sum runs in another order, so a rounded value can differ from the
// reference's by one ulp where the exact value lies within ~1e-15 of a
// rounding boundary (DirectLoss tests in tests/kernels). A row holding NaN
// or an infinity (an fp16 overflow that loss scaling must see) is computed
// by the reference's scalar formulas, so non-finite values propagate as
// there. Cast fusion (KernelEntry::fuses_casts, executor/widened_casts.cc):
// the loss reads fp16/bf16 scores, each row widened exactly into fp32 first,
// and its gradient writes fp16/bf16 scores' gradients, each fp32 row rounded
// once more as a Cast would: a mixed-precision model's low logits go to the
// loss and come back without an fp32 copy of either (the same bits as the
// Casts). Anything else (class weights, reduction none, classes strided over
// d > 1 positions) is declined: the reference runs.
#include <cmath>
#include <cstring>
#include <vector>

#include "ir/infer/training_util.h"
#include "kernels/cpu/direct_exp.h"
#include "kernels/cpu/direct_kernels.h"
#include "kernels/cpu/float_convert.h"
#include "kernels/cpu/loss_labels.h"

namespace amptrain::kernels::cpu::direct {

namespace {

// sum_k e^(x_k - m) over a row, m = max_k x_k (finite, no NaN in x).
__attribute__((target_clones("avx512f", "avx2", "default"))) double SumExp(const float* x, int64_t c, float m) {
  double sum = 0.0;
  const double md = m;
#pragma omp simd reduction(+ : sum)
  for (int64_t k = 0; k < c; ++k) sum += ExpNegative(md - static_cast<double>(x[k]));
  return sum;
}

// log_prob_k = x_k - lse (may be null); returns sum_k (x_k - lse) in double.
__attribute__((target_clones("avx512f", "avx2", "default"))) double LogProb(const float* x, int64_t c, double lse,
                                                                          float* log_prob) {
  double total = 0.0;
  if (log_prob) {
#pragma omp simd reduction(+ : total)
    for (int64_t k = 0; k < c; ++k) {
      const double v = static_cast<double>(x[k]) - lse;
      log_prob[k] = static_cast<float>(v);
      total += v;
    }
  } else {
#pragma omp simd reduction(+ : total)
    for (int64_t k = 0; k < c; ++k) total += static_cast<double>(x[k]) - lse;
  }
  return total;
}

// The row's largest value, and whether it holds NaN or an infinity (x * 0
// is NaN for those and 0 for every finite x: one add per element).
__attribute__((target_clones("avx512f", "avx2", "default"))) float RowMax(const float* x, int64_t c, bool* finite) {
  float m = -INFINITY, zero = 0.0f;
#pragma omp simd reduction(max : m) reduction(+ : zero)
  for (int64_t k = 0; k < c; ++k) {
    m = x[k] > m ? x[k] : m;
    zero += x[k] * 0.0f;
  }
  *finite = zero == 0.0f;
  return m;
}

// ds_k = g (hard (p_k - [k == y]) + soft (C p_k - 1)), p_k = e^(log_prob_k);
// a finite log_prob row (others take the reference's formula).
__attribute__((target_clones("avx512f", "avx2", "default"))) void GradRow(const float* lp, int64_t c, int64_t label,
                                                                        double g, double hard, double soft,
                                                                        float* ds) {
  const double cd = static_cast<double>(c);
#pragma omp simd
  for (int64_t k = 0; k < c; ++k) {
    const double p = ExpNegative(-static_cast<double>(lp[k]));
    ds[k] = static_cast<float>(g * (hard * p + soft * (cd * p - 1.0)));
  }
  const double p = ExpNegative(-static_cast<double>(lp[label]));
  ds[label] = static_cast<float>(g * (hard * (p - 1.0) + soft * (cd * p - 1.0)));
}

// Whether a row holds only finite values.
__attribute__((target_clones("avx512f", "avx2", "default"))) bool AllFinite(const float* x, int64_t c) {
  float zero = 0.0f;
#pragma omp simd reduction(+ : zero)
  for (int64_t k = 0; k < c; ++k) zero += x[k] * 0.0f;
  return zero == 0.0f;
}

struct Plan {
  std::string describe;
  ir::LossAttrs attrs;
  int64_t n = 0, c = 0;
  int threads = 1;
  DType low = DType::kFloat32;  // the loss's scores or the gradient's output: fp32, or fp16/bf16 (cast fusion)
  bool widened() const { return low != DType::kFloat32; }
  bool ignored(int64_t y) const { return attrs.ignore_index && y == *attrs.ignore_index; }

  StatusOr<std::vector<int64_t>> Labels(const ir::TensorView& v) const {
    return ReadLossLabels(v, n, c, attrs.ignore_index, describe);
  }
  // The mean's denominator: the labels not ignored (every class weight is 1).
  double Counted(const std::vector<int64_t>& y) const {
    double total = 0.0;
    for (int64_t label : y) total += ignored(label) ? 0.0 : 1.0;
    return total;
  }
};

class LossKernel : public Kernel {
 public:
  explicit LossKernel(Plan p) : p_(std::move(p)) {}

  Status Run(KernelContext& ctx) override {
    AMP_ASSIGN_OR_RETURN(std::vector<int64_t> y, p_.Labels(ctx.inputs[1]));
    const char* s = static_cast<const char*>(ctx.inputs[0].data);
    const size_t row_bytes = static_cast<size_t>(p_.c) * ir::DTypeSize(p_.low);
    float* log_prob = ctx.outputs.size() > 1 ? ctx.outputs[1].as<float>() : nullptr;
    const int64_t n = p_.n, c = p_.c;
    const double eps = p_.attrs.label_smoothing;
    loss_.assign(static_cast<size_t>(n), 0.0);
#pragma omp parallel num_threads(p_.threads) if (p_.threads > 1 && n * c >= (int64_t{1} << 15))
    {
      std::vector<float> wide(p_.widened() ? static_cast<size_t>(c) : 0);
#pragma omp for schedule(static)
      for (int64_t i = 0; i < n; ++i) {
        const char* src = s + static_cast<size_t>(i) * row_bytes;
        const float* x = reinterpret_cast<const float*>(src);
        if (p_.widened()) {
          WidenSpan(p_.low, src, wide.data(), c);
          x = wide.data();
        }
        float* lp = log_prob ? log_prob + i * c : nullptr;
        bool finite = true;
        const float m = RowMax(x, c, &finite);
        double lse, smooth;
        if (finite) {
          lse = static_cast<double>(m) + std::log(SumExp(x, c, m));
          smooth = -LogProb(x, c, lse, lp);
        } else {  // the reference's formulas, so that inf and NaN propagate as there
          double mx = -INFINITY, sum = 0.0;
          for (int64_t k = 0; k < c; ++k) mx = std::fmax(mx, static_cast<double>(x[k]));
          for (int64_t k = 0; k < c; ++k) sum += std::exp(static_cast<double>(x[k]) - mx);
          lse = mx + std::log(sum);
          smooth = 0.0;
          for (int64_t k = 0; k < c; ++k) {
            const double v = static_cast<double>(x[k]) - lse;
            if (lp) lp[k] = static_cast<float>(v);
            smooth -= v;
          }
        }
        const int64_t label = y[i];
        loss_[i] = p_.ignored(label) ? 0.0 : (1.0 - eps) * (lse - static_cast<double>(x[label])) + eps / c * smooth;
      }
    }
    float* out = ctx.outputs[0].as<float>();
    if (!out) return Status::Ok();
    double total = 0.0;
    for (double l : loss_) total += l;
    if (p_.attrs.reduction == ir::LossReduction::kMean) total /= p_.Counted(y);
    out[0] = static_cast<float>(total);
    return Status::Ok();
  }

 private:
  Plan p_;
  std::vector<double> loss_;
};

class LossGradKernel : public Kernel {
 public:
  explicit LossGradKernel(Plan p) : p_(std::move(p)) {}

  Status Run(KernelContext& ctx) override {
    AMP_ASSIGN_OR_RETURN(std::vector<int64_t> y, p_.Labels(ctx.inputs[2]));
    const float* lp = ctx.inputs[1].as<const float>();
    char* ds = static_cast<char*>(ctx.outputs[0].data);
    const size_t row_bytes = static_cast<size_t>(p_.c) * ir::DTypeSize(p_.low);
    const int64_t n = p_.n, c = p_.c;
    const double eps = p_.attrs.label_smoothing;
    double g = static_cast<double>(ctx.inputs[0].as<const float>()[0]);
    if (p_.attrs.reduction == ir::LossReduction::kMean) g /= p_.Counted(y);
    const double hard = 1.0 - eps, soft = eps / c;
#pragma omp parallel num_threads(p_.threads) if (p_.threads > 1 && n * c >= (int64_t{1} << 15))
    {
      std::vector<float> wide(p_.widened() ? static_cast<size_t>(c) : 0);
#pragma omp for schedule(static)
      for (int64_t i = 0; i < n; ++i) {
        const float* row = lp + i * c;
        char* dst = ds + static_cast<size_t>(i) * row_bytes;
        float* out = p_.widened() ? wide.data() : reinterpret_cast<float*>(dst);
        const int64_t label = y[i];
        if (p_.ignored(label)) {
          std::memset(dst, 0, row_bytes);  // +0 in every float type
          continue;
        }
        if (AllFinite(row, c)) {
          GradRow(row, c, label, g, hard, soft, out);
        } else {  // the reference's formula: NaN stays NaN, e^-inf is 0
          for (int64_t k = 0; k < c; ++k) {
            const double p = std::exp(static_cast<double>(row[k]));
            out[k] = static_cast<float>(g * (hard * (p - (k == label ? 1.0 : 0.0)) + soft * (c * p - 1.0)));
          }
        }
        if (p_.widened()) NarrowSpan(p_.low, out, dst, c);
      }
    }
    return Status::Ok();
  }

 private:
  Plan p_;
};

// `scores`: the input holding the scores (or log_prob), `labels` the labels';
// declines what the reference alone takes.
// low_scores: the scores may be fp16/bf16 (the loss's, under cast fusion).
StatusOr<Plan> MakePlan(const KernelInit& init, size_t scores, size_t labels, bool low_scores) {
  Plan p;
  p.describe = init.Describe();
  p.threads = Threads(init);
  auto attrs = ir::ParseLossAttrs(*init.attrs);
  if (!attrs.ok()) return init.Error(attrs.status().message());
  p.attrs = *attrs;
  if (p.attrs.reduction == ir::LossReduction::kNone)
    return Unimplemented(init.Describe(), ": the direct loss sums its rows (reduction none: the reference)");
  const auto& s = init.inputs[scores].dims;
  const DType st = init.inputs[scores].dtype;
  if (st != DType::kFloat32 && !(low_scores && IsTwoByteFloat(st)))
    return Unimplemented(init.Describe(), ": the direct loss takes fp32 (or, fused, fp16/bf16) scores");
  if (low_scores) p.low = st;
  if (s.size() < 2 || !ir::IsIndexType(init.inputs[labels].dtype))
    return Unimplemented(init.Describe(), ": not [N, C] scores with integer labels (the reference says why)");
  for (size_t i = 2; i < s.size(); ++i)
    if (s[i] != 1) return Unimplemented(init.Describe(), ": classes strided over positions (the reference)");
  if (init.inputs[labels].num_elements() != s[0])
    return Unimplemented(init.Describe(), ": labels do not have one element per row (the reference says why)");
  if (init.inputs.size() > labels + 1 && init.inputs[labels + 1].present())
    return Unimplemented(init.Describe(), ": class weights (the reference)");
  p.n = s[0];
  p.c = s[1];
  if (p.n == 0 || p.c == 0) return Unimplemented(init.Describe(), ": an empty batch (the reference says why)");
  return p;
}

StatusOr<std::unique_ptr<Kernel>> MakeLoss(const KernelInit& init) {
  if (init.inputs.size() < 2 || init.outputs.empty()) return init.Error("unexpected arity");
  AMP_ASSIGN_OR_RETURN(Plan p, MakePlan(init, 0, 1, /*low_scores=*/true));
  for (const TensorSpec& out : init.outputs)
    if (out.dtype != DType::kFloat32) return Unimplemented(init.Describe(), ": the direct loss is fp32");
  return std::unique_ptr<Kernel>(new LossKernel(std::move(p)));
}

StatusOr<std::unique_ptr<Kernel>> MakeLossGrad(const KernelInit& init) {
  if (init.inputs.size() < 3 || init.outputs.size() != 1) return init.Error("unexpected arity");
  AMP_ASSIGN_OR_RETURN(Plan p, MakePlan(init, 1, 2, /*low_scores=*/false));
  if (init.inputs[0].dtype != DType::kFloat32 || init.inputs[0].num_elements() != 1)
    return Unimplemented(init.Describe(), ": the direct loss gradient takes an fp32 scalar dloss");
  const DType out = init.outputs[0].dtype;
  if (out != DType::kFloat32 && !IsTwoByteFloat(out))
    return Unimplemented(init.Describe(), ": the direct loss gradient writes fp32 (or, fused, fp16/bf16)");
  p.low = out;
  return std::unique_ptr<Kernel>(new LossGradKernel(std::move(p)));
}

}  // namespace

void RegisterDirectLoss(Registry& r) {
  // Listed for fp32; fp16/bf16 scores and gradients only through cast fusion.
  for (auto [op, factory] : {std::pair{OpKind::kSoftmaxCrossEntropyLoss, &MakeLoss},
                             std::pair{OpKind::kSoftmaxCrossEntropyLossGrad, &MakeLossGrad}}) {
    KernelEntry e = DirectEntry(op, factory, {DType::kFloat32});
    e.fuses_casts = true;
    r.Add(std::move(e));
  }
}

}  // namespace amptrain::kernels::cpu::direct
