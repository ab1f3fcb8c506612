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
// rounded once when stored; fp32 masters may also take fp16/bf16 gradients
// (O1/O2 backward's own precision, widened exactly). Optimizer state is
// always float32.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/cpu/element.h"
#include "kernels/cpu/float_convert.h"
#include "kernels/cpu/register.h"
#include "kernels/cpu/step_math.h"
#include "kernels/step_group.h"

namespace amptrain::kernels::cpu {

namespace {

// Spans of this many elements are the unit of work: the threads take whole
// chunks, and GradCheck sums each chunk's squares alone and the chunks in
// order, so the sums do not depend on the thread count.
constexpr int64_t kChunk = 1 << 14;

template <class Fn>
void ForChunks(int64_t n, Fn&& fn) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  if (chunks <= 1) {  // no parallel region: libgomp makes (allocates) a team even for one thread
    if (chunks == 1) fn(0, 0, n);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) fn(c, c * kChunk, std::min(n, (c + 1) * kChunk));
}

// 2-byte parameters and gradients (O3) pass through fp32 blocks this long:
// widened, updated by the fp32 span, and the parameters narrowed back (the
// one rounding of the stored value). For SGD, a 2-byte gradient of an fp32
// master (O1/O2, the trainer's low gradients) is widened by block the same
// way and the parameter updated in place: widening is exact, so the update
// has the bits it would have from the gradient cast to fp32 first. Adam's
// loop widens such gradients, and rounds the low copy, in registers.
constexpr int64_t kBlock = 512;

// A parameter's optional low copy (AdamStep/SgdStep's low_i): rounded from
// the updated fp32 values block by block, while they are in cache.
struct LowCopy {
  void* data = nullptr;
  DType dtype = DType::kUndefined;
  std::byte* at(int64_t i) const { return static_cast<std::byte*>(data) + i * 2; }
};

LowCopy LowCopyOf(const ir::TensorView& v) { return v.data ? LowCopy{v.data, v.dtype} : LowCopy{}; }

// Runs update(p, g, first_state_offset, length) on fp32 views of p[b, e)
// and g[b, e), then refreshes low[b, e) when there is one.
template <class P, class G, class Update>
void UpdateRange(P* p, const G* g, const LowCopy& low, int64_t b, int64_t e, Update&& update) {
  if constexpr (std::is_same_v<P, float> && std::is_same_v<G, float>) {
    if (!low.data) return update(p + b, g + b, b, e - b);
  }
  float pf[kBlock], gf[kBlock];
  for (int64_t i = b; i < e; i += kBlock) {
    const int64_t len = std::min(kBlock, e - i);
    const float* gi = gf;
    if constexpr (std::is_same_v<G, float>) gi = g + i;
    else WidenSpan(StorageDType<G>(), g + i, gf, len);
    if constexpr (std::is_same_v<P, float>) {
      update(p + i, gi, i, len);
      if (low.data) NarrowSpan(low.dtype, p + i, low.at(i), len);
    } else {
      WidenSpan(StorageDType<P>(), p + i, pf, len);
      update(pf, gi, i, len);
      NarrowSpan(StorageDType<P>(), pf, p + i, len);
    }
  }
}

// The statistics of g[b, e), one chunk: 2-byte values are widened in
// registers, so that their sums are added as those of the same values in
// fp32 would be.
template <class T>
GradStats Stats(const T* g, float inv, int64_t b, int64_t e) {
  if constexpr (std::is_same_v<T, float>) {
    return GradStatsSpan(g + b, inv, e - b);
  } else if constexpr (std::is_same_v<T, double>) {
    GradStats s;
    for (int64_t j = b; j < e; ++j) {
      const float v = static_cast<float>(g[j]);
      const float r = inv == 1.0f ? v : v * inv;
      s.nonfinite = s.nonfinite || !std::isfinite(v) || !std::isfinite(r);
      s.sum_squares += static_cast<double>(r) * static_cast<double>(r);
    }
    return s;
  } else {
    return GradStatsSpan(g + b, StorageDType<T>(), inv, e - b);
  }
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
      parts_.assign(static_cast<size_t>((n + kChunk - 1) / kChunk), GradStats{});
      ForChunks(n, [&](int64_t c, int64_t b, int64_t e) {
        parts_[c] = Stats(g, inv, b, e);
      });
      GradStats total;
      for (const GradStats& part : parts_) total.Add(part);
      stats[2 * i] = total.nonfinite ? 1.0 : 0.0;
      stats[2 * i + 1] = total.sum_squares;
    }
    return Status::Ok();
  }

 private:
  std::vector<GradStats> parts_;  // one per chunk, kept to avoid reallocating
};

template <class T, class G>
class SgdStepKernel : public Kernel {
 public:
  explicit SgdStepKernel(const ir::Attributes& a)
      : momentum_(a.Float("momentum", 0.0f)),
        weight_decay_(a.Float("weight_decay", 0.0f)),
        nesterov_(a.Int("nesterov", 0) != 0) {}

  Status Run(KernelContext& ctx) override {
    const float* h = ctx.inputs.back().as<float>();
    SgdScalars s;
    s.momentum = momentum_;
    s.weight_decay = weight_decay_;
    s.nesterov = nesterov_;
    s.neg_lr = -h[0];
    s.inv_scale = h[1];
    s.clip = h[2];
    s.first = h[3] != 0.0f;
    for (size_t i = 0; i + 1 < ctx.inputs.size(); i += 4) {
      T* p = ctx.inputs[i].as<T>();
      const G* g = ctx.inputs[i + 1].as<G>();
      float* buf = s.momentum != 0.0f ? ctx.inputs[i + 2].as<float>() : nullptr;
      const LowCopy low = LowCopyOf(ctx.inputs[i + 3]);
      ForChunks(ctx.inputs[i].num_elements(), [&](int64_t, int64_t b, int64_t e) {
        UpdateRange(p, g, low, b, e, [&](float* pf, const float* gf, int64_t at, int64_t len) {
          SgdSpan(s, pf, gf, buf ? buf + at : nullptr, len);
        });
      });
    }
    return Status::Ok();
  }

 private:
  float momentum_, weight_decay_;
  bool nesterov_;
};

template <class T, class G>
class AdamStepKernel : public Kernel {
 public:
  explicit AdamStepKernel(const ir::Attributes& a) {
    s_.beta1 = a.Float("beta1", 0.9f);
    s_.beta2 = a.Float("beta2", 0.999f);
    s_.eps = a.Float("eps", 1e-8f);
    s_.l2 = a.Int("decoupled", 0) != 0 ? 0.0f : a.Float("weight_decay", 0.0f);
    s_.apply_decay = a.Int("decoupled", 0) != 0 && a.Float("weight_decay", 0.0f) != 0.0f;
    s_.omb1 = static_cast<float>(1.0 - static_cast<double>(s_.beta1));
    s_.omb2 = static_cast<float>(1.0 - static_cast<double>(s_.beta2));
  }

  Status Run(KernelContext& ctx) override {
    const float* h = ctx.inputs.back().as<float>();
    AdamScalars s = s_;
    s.neg_step = h[0];
    s.bc2_sqrt = h[1];
    s.decay = h[2];
    s.inv_scale = h[3];
    s.clip = h[4];
    for (size_t i = 0; i + 1 < ctx.inputs.size(); i += 5) {
      T* p = ctx.inputs[i].as<T>();
      const G* g = ctx.inputs[i + 1].as<G>();
      float* m = ctx.inputs[i + 2].as<float>();
      float* v = ctx.inputs[i + 3].as<float>();
      const LowCopy low = LowCopyOf(ctx.inputs[i + 4]);
      ForChunks(ctx.inputs[i].num_elements(), [&](int64_t, int64_t b, int64_t e) {
        if constexpr (std::is_same_v<T, float>) {
          AdamSpan(s, p + b, g + b, StorageDType<G>(), m + b, v + b, low.data ? low.at(b) : nullptr, low.dtype, e - b);
        } else {
          UpdateRange(p, g, low, b, e, [&](float* pf, const float* gf, int64_t at, int64_t len) {
            AdamSpan(s, pf, gf, m + at, v + at, len);
          });
        }
      });
    }
    return Status::Ok();
  }

 private:
  AdamScalars s_{};  // the attributes' part; Run adds the per-step scalars
};

template <template <class, class> class K>
StatusOr<std::unique_ptr<Kernel>> MakeStep(const KernelInit& init) {
  AMP_ASSIGN_OR_RETURN(const DType grad, CheckStepGroups(init));
  std::unique_ptr<Kernel> k;
  Status st = DispatchFloat(KeyDType(init), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, double>) {
      return init.Error("float64 parameters are not trained");
    } else if constexpr (std::is_same_v<T, float>) {
      if (grad == DType::kFloat16) k = std::make_unique<K<float, Half>>(*init.attrs);
      else if (grad == DType::kBFloat16) k = std::make_unique<K<float, BFloat16>>(*init.attrs);
      else k = std::make_unique<K<float, float>>(*init.attrs);
      return Status::Ok();
    } else {
      k = std::make_unique<K<T, T>>(*init.attrs);
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
  r.Add({OpKind::kGradCheck, DeviceKind::kCpu, "fused", 0, {DType::kFloat32, DType::kFloat16, DType::kBFloat16,
                                                        DType::kFloat64},
         MakeGradCheck, nullptr});
  r.Add({OpKind::kSgdStep, DeviceKind::kCpu, "fused", 0, dtypes,
         [](const KernelInit& init) { return MakeStep<SgdStepKernel>(init); }, nullptr});
  r.Add({OpKind::kAdamStep, DeviceKind::kCpu, "fused", 0, dtypes,
         [](const KernelInit& init) { return MakeStep<AdamStepKernel>(init); }, nullptr});
}

}  // namespace amptrain::kernels::cpu
