// Direct BatchNormalization (training and inference) and
// BatchNormalizationGrad over NCHW, impl "direct": X/Y/dY/dX in fp32, fp16
// or bf16; scale/B/mean/var and their outputs in fp32 (the AMP plan keeps BN
// parameters and statistics fp32 at O1/O2) or in X's type (O3 stores them
// low: each is read as fp32 and written rounded once). Y, dY and dX may be
// fp32 beside a 2-byte X, and dX 2-byte beside an fp32 dY: the executor's
// cast fusion (KernelEntry::fuses_casts) lets O1's fp32 BatchNormalization
// read the low Conv output it would otherwise widen with a Cast, and write
// its low dX, rounded once, as the Cast of its gradient would. Semantics of the reference kernels
// (batchnorm.cc, grad_norm.cc): biased batch variance, running statistics
// input * momentum + batch * (1 - momentum), statistics recomputed from X in
// the backward.
//
// One channel per work item on OpenMP. Statistics take one pass: sums of
// x - K, (x - K)^2, dy and dy * (x - K) with K = the channel's first element
// (the shifted-data algorithm: no cancellation unless the mean is far from K
// in units of the standard deviation), in 16 fp32 lanes flushed into double
// every 2048 elements (kernels/cpu/batchnorm_lanes.inc gives the order). 2-byte
// data is widened and rounded in registers. Y and dX are one fp32 multiply-add
// per element (a multiply, then an add), rounded once. The loops are compiled
// for AVX-512, AVX2 and plain C++ from one source and give the same bits on
// each, so results do not depend on the CPU. Not bitwise equal to the
// reference (which sums in double, two-pass): tests/kernels/direct_test.cc
// bounds the difference. A gradient over at most 64 values per channel
// takes the reference's arithmetic (kExactCount). [N, C] inputs and 1-D
// planes of fewer than 16 elements go to the other kernels.
//
// Channels-last X, Y, dY and dX ([N, H, W, C], TensorSpec::channels_last;
// KernelEntry::channels_last_together): a 64-byte line of channels per work
// item for the sums (32 of 2-byte X, 16 of fp32), with every channel's
// additions in the plain kernel's order, so the statistics and every output
// have the plain kernel's bits; the affine pass runs over pixels.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_info.h"
#include "kernels/cpu/direct_kernels.h"
#include "kernels/cpu/float_convert.h"
#include "kernels/cpu/grad_kernels.h"
#include "kernels/cpu/lanes16.h"

namespace amptrain::kernels::cpu::direct {

namespace {

constexpr int64_t kFlushElements = 2048;

// A gradient over at most this many values per channel (batch 2 at a 1x1
// plane: the BatchNormalization of a squeeze-excitation block, the last
// stage of a small image) takes the reference's arithmetic: sums in double,
// dX = a (M dy - sum dy - xhat sum dy xhat) in double, rounded once; the
// same bits as the reference, cheap at this size. The affine fp32 form
// k1 dy + k2 x + k3 rounds k1, k2, k3 apart and leaves ~1e-7 of the terms
// where the exact dX sums to 0 over the channel, which the gradient of a
// bias or a shift before the BN is: two samples whose mean is exactly 0
// (zero-initialized BN biases upstream) give PyTorch, and now this kernel,
// an exact 0 there (timm's rexnet and ghostnetv2 at batch 2).
constexpr double kExactCount = 64;

struct Shape {
  int64_t n = 0, c = 0, plane = 0;
  double count() const { return static_cast<double>(n * plane); }
};

// Sums over one channel (see SumChannel).
struct ChannelSums {
  double d = 0.0, d2 = 0.0, dy = 0.0, dy_d = 0.0;
};

namespace portable {
using V = Lanes16Scalar;
#define AMP_LANES_TARGET
#include "kernels/cpu/batchnorm_lanes.inc"
#undef AMP_LANES_TARGET
}  // namespace portable

#if defined(__x86_64__)
namespace avx2 {
using V = Lanes16Avx2;
#define AMP_LANES_TARGET __attribute__((target("avx2,f16c")))
#include "kernels/cpu/batchnorm_lanes.inc"
#undef AMP_LANES_TARGET
}  // namespace avx2

namespace avx512 {
using V = Lanes16Avx512;
#define AMP_LANES_TARGET __attribute__((target("avx512f")))
#include "kernels/cpu/batchnorm_lanes.inc"
#undef AMP_LANES_TARGET
}  // namespace avx512
#endif

// The channel's first element: the shift K.
template <class T>
float First(const T* x, const Shape& s, int64_t c) {
  return static_cast<float>(x[c * s.plane]);
}

template <bool kGrad, class TX, class TG>
ChannelSums Sums(const Shape& s, int64_t c, const TX* x, const TG* dy) {
  const float k = First(x, s, c);
#if defined(__x86_64__)
  if (Cpu().vector512()) return avx512::SumChannel<kGrad>(s, c, x, dy, k);
  if (Cpu().vector256()) return avx2::SumChannel<kGrad>(s, c, x, dy, k);
#endif
  return portable::SumChannel<kGrad>(s, c, x, dy, k);
}

template <bool kZ, class TX, class TZ, class TO>
void Affine(const Shape& s, int64_t c, const TX* x, const TZ* z, float a, float b, float cz, TO* out) {
#if defined(__x86_64__)
  if (Cpu().vector512()) return avx512::AffineChannel<kZ>(s, c, x, z, a, b, cz, out);
  if (Cpu().vector256()) return avx2::AffineChannel<kZ>(s, c, x, z, a, b, cz, out);
#endif
  portable::AffineChannel<kZ>(s, c, x, z, a, b, cz, out);
}

// Channels-last work items: the channels of one 64-byte line of X (32 of a
// 2-byte type, 16 of fp32), so that no two items read the same lines.
template <class TX>
constexpr int kNhwcGroups = sizeof(TX) == 2 ? 2 : 1;
constexpr int kMaxNhwcChannels = 16 * kNhwcGroups<BFloat16>;

// Channels-last: the sums of channels [c0, c0 + 16 * kNhwcGroups<TX>) into
// out[] (zeroed here), shifts from the first pixel, written to k[].
template <bool kGrad, class TX, class TG>
void SumsNhwc(const Shape& s, int64_t c0, const TX* x, const TG* dy, float* k, ChannelSums* out) {
  constexpr int kG = kNhwcGroups<TX>;
  for (int64_t q = 0; q < 16 * kG; ++q) {
    k[q] = c0 + q < s.c ? static_cast<float>(x[c0 + q]) : 0.0f;
    out[q] = ChannelSums{};
  }
#if defined(__x86_64__)
  if (Cpu().vector512()) return avx512::SumChannelsNhwc<kGrad, kG>(s, c0, x, dy, k, out);
  if (Cpu().vector256()) return avx2::SumChannelsNhwc<kGrad, kG>(s, c0, x, dy, k, out);
#endif
  portable::SumChannelsNhwc<kGrad, kG>(s, c0, x, dy, k, out);
}

// Channels-last affine pass over all pixels, split among the threads.
template <bool kZ, class TX, class TZ, class TO>
void AffineNhwc(const Shape& s, int threads, const TX* x, const TZ* z, const float* a, const float* b, const float* cz,
                TO* out) {
  const int64_t pixels = s.n * s.plane;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t t = 0; t < threads; ++t) {
    const int64_t p0 = pixels * t / threads, p1 = pixels * (t + 1) / threads;
#if defined(__x86_64__)
    if (Cpu().vector512()) {
      avx512::AffinePixelsNhwc<kZ>(s.c, p0, p1, x, z, a, b, cz, out);
      continue;
    }
    if (Cpu().vector256()) {
      avx2::AffinePixelsNhwc<kZ>(s.c, p0, p1, x, z, a, b, cz, out);
      continue;
    }
#endif
    portable::AffinePixelsNhwc<kZ>(s.c, p0, p1, x, z, a, b, cz, out);
  }
}

// Element c of a per-channel vector, fp32 or a 2-byte float; and its store,
// rounded once. Per channel, so never on a hot path.
float VecAt(const ir::TensorView& v, int64_t c) {
  if (v.dtype == DType::kFloat32) return v.as<const float>()[c];
  float f;
  WidenSpan(v.dtype, static_cast<const std::byte*>(v.data) + c * DTypeSize(v.dtype), &f, 1);
  return f;
}
void SetVec(const ir::TensorView& v, int64_t c, double value) {
  const float f = static_cast<float>(value);
  if (v.dtype == DType::kFloat32) v.as<float>()[c] = f;
  else NarrowSpan(v.dtype, &f, static_cast<std::byte*>(v.data) + c * DTypeSize(v.dtype), 1);
}

template <class TX, class TY>
class BatchNormKernel final : public Kernel {
 public:
  BatchNormKernel(Shape s, bool training, double eps, double momentum, int threads, bool nhwc)
      : s_(s), training_(training), eps_(eps), momentum_(momentum), threads_(threads), nhwc_(nhwc) {
    if (nhwc_) a_.resize(static_cast<size_t>(s.c)), b_.resize(static_cast<size_t>(s.c));
  }

  Status Run(KernelContext& ctx) override {
    const TX* x = ctx.inputs[0].as<const TX>();
    TY* y = ctx.outputs[0].as<TY>();
    const ir::TensorView &scale = ctx.inputs[1], &bias = ctx.inputs[2];
    const ir::TensorView &in_mean = ctx.inputs[3], &in_var = ctx.inputs[4];
    const bool run_mean = ctx.outputs.size() > 1 && ctx.outputs[1].data;
    const bool run_var = ctx.outputs.size() > 2 && ctx.outputs[2].data;
    // Channel c's statistics -> its affine factors (and running statistics).
    auto channel = [&](int64_t c, const ChannelSums* sums, float first, double& a, double& b) {
      double mean = VecAt(in_mean, c), var = VecAt(in_var, c);
      if (training_) {
        const double d = sums->d / s_.count();
        mean = first + d;
        var = std::max(sums->d2 / s_.count() - d * d, 0.0);
        if (run_mean) SetVec(ctx.outputs[1], c, VecAt(in_mean, c) * momentum_ + mean * (1.0 - momentum_));
        if (run_var) SetVec(ctx.outputs[2], c, VecAt(in_var, c) * momentum_ + var * (1.0 - momentum_));
      }
      a = VecAt(scale, c) / std::sqrt(var + eps_), b = VecAt(bias, c) - mean * a;
    };
    if (nhwc_) {
      constexpr int64_t kItem = 16 * kNhwcGroups<TX>;
#pragma omp parallel for num_threads(threads_) schedule(static)
      for (int64_t c0 = 0; c0 < s_.c; c0 += kItem) {
        float k[kMaxNhwcChannels];
        ChannelSums sums[kMaxNhwcChannels];
        if (training_) SumsNhwc<false>(s_, c0, x, static_cast<const float*>(nullptr), k, sums);
        for (int64_t c = c0; c < std::min(c0 + kItem, s_.c); ++c) {
          double a, b;
          channel(c, &sums[c - c0], k[c - c0], a, b);
          a_[static_cast<size_t>(c)] = static_cast<float>(a), b_[static_cast<size_t>(c)] = static_cast<float>(b);
        }
      }
      AffineNhwc<false>(s_, threads_, x, static_cast<const float*>(nullptr), a_.data(), b_.data(), nullptr, y);
      return Status::Ok();
    }
#pragma omp parallel for num_threads(threads_) schedule(static)
    for (int64_t c = 0; c < s_.c; ++c) {
      ChannelSums sums;
      if (training_) sums = Sums<false>(s_, c, x, static_cast<const float*>(nullptr));
      double a, b;
      channel(c, &sums, First(x, s_, c), a, b);
      Affine<false>(s_, c, x, static_cast<const float*>(nullptr), static_cast<float>(a), static_cast<float>(b), 0.0f, y);
    }
    return Status::Ok();
  }

 private:
  Shape s_;
  bool training_;
  double eps_, momentum_;
  int threads_;
  bool nhwc_;
  std::vector<float> a_, b_;  // channels-last: per-channel factors of the affine pass
};

template <class TG, class TX, class TD>
class BatchNormGradKernel final : public Kernel {
 public:
  BatchNormGradKernel(Shape s, double eps, int threads, bool nhwc)
      : s_(s), eps_(eps), threads_(threads), nhwc_(nhwc) {
    if (nhwc_) k1_.resize(static_cast<size_t>(s.c)), k2_.resize(static_cast<size_t>(s.c)), k3_.resize(static_cast<size_t>(s.c));
  }

  Status Run(KernelContext& ctx) override {
    const TG* dy = ctx.inputs[0].as<const TG>();
    const TX* x = ctx.inputs[1].as<const TX>();
    const ir::TensorView& scale = ctx.inputs[2];
    TD* dx = ctx.outputs[0].as<TD>();
    const bool dscale = ctx.outputs.size() > 1 && ctx.outputs[1].data;
    const bool dbias = ctx.outputs.size() > 2 && ctx.outputs[2].data;
    const double count = s_.count();
    if (count <= kExactCount) {
#pragma omp parallel for num_threads(threads_) schedule(static)
      for (int64_t c = 0; c < s_.c; ++c) ExactChannel(ctx, c, dy, x, dx, dscale, dbias);
      return Status::Ok();
    }
    // Channel c's sums -> dScale, dB and the factors of dX = k1 * dy + k2 * x + k3.
    auto channel = [&](int64_t c, const ChannelSums& sums, float first, float& k1, float& k2, float& k3) {
      const double d = sums.d / count, mean = first + d;
      const double inv = 1.0 / std::sqrt(std::max(sums.d2 / count - d * d, 0.0) + eps_);
      const double sdyx = inv * (sums.dy_d - d * sums.dy);  // sum dy * xhat
      if (dscale) SetVec(ctx.outputs[1], c, sdyx);
      if (dbias) SetVec(ctx.outputs[2], c, sums.dy);
      // dX = scale * inv / M * (M * dy - sdy - xhat * sdyx).
      const double a = VecAt(scale, c) * inv / count;
      k1 = static_cast<float>(a * count), k2 = static_cast<float>(-a * inv * sdyx);
      k3 = static_cast<float>(-a * sums.dy + a * mean * inv * sdyx);
    };
    if (nhwc_) {
      constexpr int64_t kItem = 16 * kNhwcGroups<TX>;
#pragma omp parallel for num_threads(threads_) schedule(static)
      for (int64_t c0 = 0; c0 < s_.c; c0 += kItem) {
        float k[kMaxNhwcChannels];
        ChannelSums sums[kMaxNhwcChannels];
        SumsNhwc<true>(s_, c0, x, dy, k, sums);
        for (int64_t c = c0; c < std::min(c0 + kItem, s_.c); ++c) {
          const auto i = static_cast<size_t>(c);
          channel(c, sums[c - c0], k[c - c0], k1_[i], k2_[i], k3_[i]);
        }
      }
      if (dx) AffineNhwc<true>(s_, threads_, x, dy, k2_.data(), k3_.data(), k1_.data(), dx);
      return Status::Ok();
    }
#pragma omp parallel for num_threads(threads_) schedule(static)
    for (int64_t c = 0; c < s_.c; ++c) {
      float k1, k2, k3;
      channel(c, Sums<true>(s_, c, x, dy), First(x, s_, c), k1, k2, k3);
      if (dx) Affine<true>(s_, c, x, dy, k2, k3, k1, dx);
    }
    return Status::Ok();
  }

 private:
  // Channel c in the reference's arithmetic and bits (kExactCount), either layout.
  void ExactChannel(KernelContext& ctx, int64_t c, const TG* dy, const TX* x, TD* dx, bool dscale, bool dbias) const {
    const auto [sdyx, sdy] = grad::BatchNormGradChannel(
        s_.n, s_.plane, eps_, VecAt(ctx.inputs[2], c), dy, x, dx,
        [&](int64_t n, int64_t i) { return nhwc_ ? (n * s_.plane + i) * s_.c + c : (n * s_.c + c) * s_.plane + i; });
    if (dscale) SetVec(ctx.outputs[1], c, sdyx);
    if (dbias) SetVec(ctx.outputs[2], c, sdy);
  }

  Shape s_;
  double eps_;
  int threads_;
  bool nhwc_;
  std::vector<float> k1_, k2_, k3_;  // channels-last: per-channel factors of dX
};

// [N, C, spatial...] with planes of at least 16 elements; the listed
// inputs and outputs vectors of C, fp32 or all in X's type.
StatusOr<Shape> Check(const KernelInit& init, size_t x_input, const std::vector<size_t>& vec_inputs,
                      size_t first_vec_output) {
  const std::vector<int64_t>& x = init.inputs[x_input].dims;
  if (x.size() < 3) return init.Error("the direct BatchNormalization takes [N, C, spatial...]");
  Shape s{x[0], x[1], 1};
  for (size_t d = 2; d < x.size(); ++d) s.plane *= x[d];
  // [N, C] and short [N, C, L] inputs go to the other kernels; 2-D planes of
  // any size stay (ResNet's last stage at 2x2: a handful of tail elements per channel).
  if ((s.plane < 16 && x.size() < 4) || s.n * s.plane == 0) return init.Error("planes of fewer than 16 elements");
  const std::vector<int64_t> c = {x[1]};
  const DType vec = init.inputs[vec_inputs.front()].dtype;
  if (vec != DType::kFloat32 && vec != init.inputs[x_input].dtype)
    return init.Error("the parameters must be fp32 or X's type, not ", DTypeName(vec));
  for (size_t i : vec_inputs)
    if (init.inputs[i].dtype != vec || init.inputs[i].dims != c)
      return init.Error("input ", i, " must be a ", DTypeName(vec), " vector of ", x[1]);
  for (size_t o = first_vec_output; o < init.outputs.size(); ++o)
    if (init.outputs[o].present() && (init.outputs[o].dtype != vec || init.outputs[o].dims != c))
      return init.Error("output ", o, " must be a ", DTypeName(vec), " vector of ", x[1]);
  return s;
}

// fn(Tag<T>) for a tensor beside X (Y, dY, dX) of dtype `other`: X's own
// type TX, or fp32 (the far side of a fused Cast).
template <class TX, class Fn>
StatusOr<std::unique_ptr<Kernel>> WithSideType(Tag<TX> tx, DType x, DType other, Fn&& fn) {
  if (other == x) return fn(tx);
  if (other == DType::kFloat32) return fn(Tag<float>{});
  return Unimplemented("the direct BatchNormalization pairs ", DTypeName(x), " with ", DTypeName(x),
                       " or float32, not ", DTypeName(other));
}

StatusOr<std::unique_ptr<Kernel>> MakeBatchNorm(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(kernels::CheckArity(init, 5, 5, 1, 3));
  if (init.outputs.size() == 2) return init.Error("2 outputs; training mode has 3");
  const auto& x = init.inputs[0].dims;
  if (init.outputs[0].dims != x) return init.Error("Y must have X's dims");
  AMP_ASSIGN_OR_RETURN(Shape s, Check(init, 0, {1, 2, 3, 4}, 1));
  AMP_ASSIGN_OR_RETURN(float eps, init.attrs->GetFloat("epsilon", 1e-5f));
  AMP_ASSIGN_OR_RETURN(float momentum, init.attrs->GetFloat("momentum", 0.9f));
  AMP_ASSIGN_OR_RETURN(int64_t mode, init.attrs->GetInt("training_mode", 0));
  const bool training = init.training || mode != 0 || init.outputs.size() == 3;
  const bool nhwc = init.inputs[0].channels_last;
  if (init.outputs[0].channels_last != nhwc) return init.Error("X and Y in different layouts");
  const int threads = Threads(init);
  const DType x_type = init.inputs[0].dtype;
  return WithDType(x_type, [&](auto tx) {
    return WithSideType(tx, x_type, init.outputs[0].dtype, [&](auto ty) -> StatusOr<std::unique_ptr<Kernel>> {
      using K = BatchNormKernel<typename decltype(tx)::type, typename decltype(ty)::type>;
      return std::unique_ptr<Kernel>(new K(s, training, eps, momentum, threads, nhwc));
    });
  });
}

// dY and dX each in X's type or fp32.
StatusOr<std::unique_ptr<Kernel>> MakeBatchNormGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(kernels::CheckArity(init, 3, 3, 1, 3));
  const auto& x = init.inputs[1].dims;
  if (init.inputs[0].dims != x || init.outputs[0].dims != x) return init.Error("dY, X and dX must share dims");
  AMP_ASSIGN_OR_RETURN(Shape s, Check(init, 1, {2}, 1));
  AMP_ASSIGN_OR_RETURN(float eps, init.attrs->GetFloat("epsilon", 1e-5f));
  const bool nhwc = init.inputs[1].channels_last;
  if (init.inputs[0].channels_last != nhwc || init.outputs[0].channels_last != nhwc)
    return init.Error("dY, X and dX in different layouts");
  const int threads = Threads(init);
  const DType x_type = init.inputs[1].dtype;
  return WithDType(x_type, [&](auto tx) {
    return WithSideType(tx, x_type, init.inputs[0].dtype, [&](auto tg) {
      return WithSideType(tx, x_type, init.outputs[0].dtype, [&](auto td) -> StatusOr<std::unique_ptr<Kernel>> {
        using K = BatchNormGradKernel<typename decltype(tg)::type, typename decltype(tx)::type,
                                      typename decltype(td)::type>;
        return std::unique_ptr<Kernel>(new K(s, eps, threads, nhwc));
      });
    });
  });
}

}  // namespace

void RegisterDirectBatchNorm(Registry& r) {
  for (auto [op, factory] : {std::pair{OpKind::kBatchNormalization, &MakeBatchNorm},
                             std::pair{OpKind::kBatchNormalizationGrad, &MakeBatchNormGrad}}) {
    KernelEntry e = DirectEntry(op, factory);
    e.fuses_casts = true;
    // BatchNormalization: X and Y; its gradient: dY, X and dX.
    e.channels_last_inputs = op == OpKind::kBatchNormalization ? 0b1u : 0b11u;
    e.channels_last_outputs = 0b1;
    e.channels_last_together = true;
    r.Add(std::move(e));
  }
}

}  // namespace amptrain::kernels::cpu::direct
