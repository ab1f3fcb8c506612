// Direct Dropout (training mode) and DropoutGrad, fp32, fp16 and bf16: the
// reference's formulas and bits (kernels/cpu/dropout.cc, grad_misc.cc), in
// loops the compiler vectorizes. A transformer layer drops four times per
// step; the reference's per-element loop was a sixth of an O2 bf16 step.
//   Dropout: element i is kept when DropoutUniform(seed, i) >= ratio
//     (kernels/dropout_stream.h), compared here as integers: the uniform is
//     w 2^-53 with w = splitmix64(...) >> 11, so it is >= ratio exactly when
//     w >= ceil(ratio 2^53), which is exact in double. Kept elements are
//     x / (1 - ratio) computed in double and rounded to fp32 (then to the
//     2-byte type, as the reference does); the mask output is optional.
//   DropoutGrad(dY, mask, ratio?): mask ? dY * fp32(1 / (1 - ratio)) : 0 in
//     fp32.
// fp16 and bf16 go through fp32 rows (ForFloatChunks). Selects are blends
// of bits (see direct_erf.cc) so that the element loops vectorize; each is
// compiled for AVX-512, AVX2 and the baseline (target_clones).
// Inference-mode Dropout is a copy: the reference runs it; a ratio of 0
// copies here too.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "kernels/cpu/direct_kernels.h"
#include "kernels/dropout_stream.h"

namespace amptrain::kernels::cpu::direct {

namespace {

inline float SelectOrZero(bool keep, float v) {
  return std::bit_cast<float>(std::bit_cast<uint32_t>(v) & (0u - static_cast<uint32_t>(keep)));
}

// splitmix64 of (seed, index) >> 11: DropoutUniform's 53 random bits.
inline int64_t UniformBits(uint64_t seed, uint64_t index) {
  uint64_t z = seed + (index + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<int64_t>(z >> 11);
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void DropSpan(const float* x, float* y, bool* mask,
                                                                         int64_t n, uint64_t seed, uint64_t first,
                                                                         int64_t threshold, double scale) {
  if (mask) {
    for (int64_t i = 0; i < n; ++i) {
      const bool keep = UniformBits(seed, first + static_cast<uint64_t>(i)) >= threshold;
      y[i] = SelectOrZero(keep, static_cast<float>(static_cast<double>(x[i]) * scale));
      mask[i] = keep;
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const bool keep = UniformBits(seed, first + static_cast<uint64_t>(i)) >= threshold;
      y[i] = SelectOrZero(keep, static_cast<float>(static_cast<double>(x[i]) * scale));
    }
  }
}

__attribute__((target_clones("avx512f", "avx2", "default"))) void DropGradSpan(const float* dy, const bool* mask,
                                                                             float* dx, int64_t n, float scale) {
  const auto* m = reinterpret_cast<const uint8_t*>(mask);  // bytes: the loop vectorizes
  for (int64_t i = 0; i < n; ++i) dx[i] = SelectOrZero(m[i] != 0, dy[i] * scale);
}

// The ratio input's value (default 0.5), checked as the reference checks it.
StatusOr<double> Ratio(const KernelContext& ctx, size_t input, const std::string& describe) {
  double ratio = 0.5;
  if (ctx.inputs.size() > input && ctx.inputs[input].data) {
    const ir::TensorView& r = ctx.inputs[input];
    switch (r.dtype) {
      case DType::kFloat32: ratio = r.as<const float>()[0]; break;
      case DType::kFloat64: ratio = r.as<const double>()[0]; break;
      case DType::kFloat16: ratio = ir::HalfToFloat(r.as<const uint16_t>()[0]); break;
      case DType::kBFloat16: ratio = ir::BFloat16ToFloat(r.as<const uint16_t>()[0]); break;
      default: return InvalidArgument(describe, ": ratio must be a float scalar");
    }
  }
  if (!(ratio >= 0.0 && ratio < 1.0)) return InvalidArgument(describe, ": ratio ", ratio, " is outside [0, 1)");
  return ratio;
}

class DropoutKernel : public Kernel {
 public:
  DropoutKernel(const KernelInit& init, bool grad)
      : describe_(init.Describe()), t_(init.outputs[0].dtype), grad_(grad), threads_(Threads(init)), seed_(init.seed) {}

  Status Run(KernelContext& ctx) override {
    AMP_ASSIGN_OR_RETURN(const double ratio, Ratio(ctx, grad_ ? 2 : 1, describe_));
    const int64_t n = ctx.outputs[0].num_elements();
    if (ratio == 0.0 && !grad_) {  // nothing dropped: the reference's copy, bit for bit
      if (ctx.outputs[0].data != ctx.inputs[0].data)
        std::memcpy(ctx.outputs[0].data, ctx.inputs[0].data, static_cast<size_t>(n) * ir::DTypeSize(t_));
      if (ctx.outputs.size() > 1 && ctx.outputs[1].data) std::memset(ctx.outputs[1].data, 1, static_cast<size_t>(n));
      return Status::Ok();
    }
    const double scale = 1.0 / (1.0 - ratio);
    const float scale_f = static_cast<float>(scale);
    const uint64_t seed = DropoutSeed(seed_, ctx.seed);
    const int64_t threshold = static_cast<int64_t>(std::ceil(ratio * 0x1p53));
    const bool* mask_in = grad_ ? ctx.inputs[1].as<const bool>() : nullptr;
    bool* mask_out = !grad_ && ctx.outputs.size() > 1 ? ctx.outputs[1].as<bool>() : nullptr;
    ForFloatChunks(t_, threads_, ctx.scratch, n, ctx.inputs[0].data, nullptr, ctx.outputs[0].data,
                   [&](const float* x, const float*, float* y, int64_t i, int64_t len) {
                     if (grad_) DropGradSpan(x, mask_in + i, y, len, scale_f);
                     else DropSpan(x, y, mask_out ? mask_out + i : nullptr, len, seed, static_cast<uint64_t>(i), threshold, scale);
                   });
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }
  size_t scratch_bytes() const override { return FloatChunkScratch(t_, threads_, 1); }

 private:
  std::string describe_;
  DType t_;
  bool grad_;
  int threads_;
  uint64_t seed_;
};

StatusOr<std::unique_ptr<Kernel>> MakeDropout(const KernelInit& init) {
  const bool grad = init.op == OpKind::kDropoutGrad;
  if (!grad && !init.training) return Unimplemented(init.Describe(), ": inference Dropout is a copy (the reference)");
  if (init.inputs.empty() || init.outputs.empty()) return init.Error("needs an input and an output");
  const DType t = init.outputs[0].dtype;
  if (t != DType::kFloat32 && !IsTwoByteFloat(t)) return init.Error("takes fp32, fp16 and bf16");
  if (init.inputs[0].dtype != t || init.inputs[0].dims != init.outputs[0].dims)
    return init.Error("input 0 and output 0 differ in dtype or shape");
  if (grad && (init.inputs.size() < 2 || init.inputs[1].dtype != DType::kBool || init.inputs[1].dims != init.inputs[0].dims))
    return init.Error("DropoutGrad needs a bool mask of dY's shape");
  if (!grad && init.outputs.size() > 1 && init.outputs[1].dtype != DType::kBool) return init.Error("mask output must be bool");
  const size_t ratio_at = grad ? 2 : 1;
  if (init.inputs.size() > ratio_at && init.inputs[ratio_at].present() && init.inputs[ratio_at].num_elements() != 1)
    return init.Error("ratio must be a scalar");
  return std::unique_ptr<Kernel>(new DropoutKernel(init, grad));
}

}  // namespace

void RegisterDirectDropout(Registry& r) {
  r.Add(DirectEntry(OpKind::kDropout, MakeDropout));
  r.Add(DirectEntry(OpKind::kDropoutGrad, MakeDropout));
}

}  // namespace amptrain::kernels::cpu::direct
