// The launchers of the small CUDA kernels (kernels/cuda/*.cu), in plain C++
// types so that the .cu files stay free of the ir headers and the Kernel
// classes (kernels/cuda/*_kernels.cc) stay free of device code.
//
// Data is fp32, fp16 or bf16 (Elem), read into float, computed in float and
// rounded once to nearest even when stored; sums accumulate in float, except
// GradCheck's sums of squares and the loss totals, which are double as on
// the CPU. Every launcher enqueues on `stream` and returns the launch's
// error (cudaGetLastError); none synchronizes. n == 0 launches nothing.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace amptrain::kernels::cuda {

enum class Elem : int { kF32 = 0, kF16 = 1, kBF16 = 2 };

// Up to this many dims after merging (the Kernel classes check it).
constexpr int kMaxRank = 8;

enum class UnaryOp : int {
  kRelu, kLeakyRelu, kSigmoid, kTanh, kExp, kLog, kSqrt, kNeg, kAbs, kReciprocal, kErf, kGelu, kGeluTanh,
};
// y[i] = f(x[i]); alpha: LeakyRelu's slope.
cudaError_t LaunchUnary(UnaryOp op, Elem t, const void* x, void* y, int64_t n, float alpha, cudaStream_t stream);

enum class BinaryOp : int {
  kAdd, kSub, kMul, kDiv, kMax, kMin,
  // Backward ops, (dY, b) -> dX, operands of one shape (no broadcast):
  kReluGrad,      // b = Y: dY where Y > 0, else 0
  kGeluGrad,      // b = X: dY * (Phi(x) + x phi(x))
  kGeluTanhGrad,  // b = X: the tanh approximation's derivative
};
// Output element i (row-major over out_dims) reads a at sum_d idx_d *
// a_strides[d] and b likewise; a stride 0 broadcasts that dim.
struct Broadcast {
  int rank = 0;
  int64_t out_dims[kMaxRank] = {};
  int64_t a_strides[kMaxRank] = {};
  int64_t b_strides[kMaxRank] = {};
};
// `bc` null: a, b and y all have n elements in the same layout.
cudaError_t LaunchBinary(BinaryOp op, Elem t, const void* a, const void* b, void* y, int64_t n, const Broadcast* bc,
                         cudaStream_t stream);

// y[i] = x[offset of i under bc's a_strides]: a broadcast copy (Gemm's C,
// Expand) of elements of elem_bytes = 1, 2, 4 or 8 bytes (any dtype).
cudaError_t LaunchBroadcastCopy(size_t elem_bytes, const void* x, void* y, int64_t n, const Broadcast& bc,
                                cudaStream_t stream);

// y[i] = to(from(x[i])): exact widening, round-to-nearest-even narrowing
// (fp32 beyond fp16's range becomes +-inf).
cudaError_t LaunchCast(Elem from, Elem to, const void* x, void* y, int64_t n, cudaStream_t stream);

// y[o] = scale * sum over the reduced index space of x[base(o) + offset(r)]:
// output o decomposes row-major over kept_dims, r over red_dims.
struct Reduction {
  int kept_rank = 0, red_rank = 0;
  int64_t kept_dims[kMaxRank] = {}, kept_strides[kMaxRank] = {};
  int64_t red_dims[kMaxRank] = {}, red_strides[kMaxRank] = {};
  int64_t outputs = 1, count = 1;
};
cudaError_t LaunchReduceSum(Elem t, const void* x, void* y, const Reduction& r, float scale, cudaStream_t stream);

// ---- Dropout (kernels/cpu/dropout.cc and grad_misc.cc have the definition) ----

// Training Dropout: element i is kept when DropoutUniform(seed, i) >= ratio
// (kernels/dropout_stream.h); y[i] = keep ? x[i] * scale : 0 in double,
// rounded to float and then to t (the CPU's two roundings); mask[i] = keep
// (mask may be null). y may alias x.
cudaError_t LaunchDropout(Elem t, const void* x, void* y, bool* mask, int64_t n, uint64_t seed, double ratio,
                          double scale, cudaStream_t stream);
// DropoutGrad: dx[i] = mask[i] ? dy[i] * scale : 0 in float, rounded once to t.
// dx may alias dy.
cudaError_t LaunchDropoutGrad(Elem t, const void* dy, const bool* mask, void* dx, int64_t n, float scale,
                              cudaStream_t stream);

// ---- fused optimizer steps (kernels/cpu/step_math.h has the formulas) ----

// GradCheck of one gradient: stats[0] = 1.0 if any g or g*inv (inv =
// float(1/double(*scale)), skipped when 1) is inf/NaN else 0.0; stats[1] =
// the sum of squares of g*inv in double. `scale` and `stats` are device
// pointers; `scratch` holds GradCheckScratchBytes(). Block partials are
// summed in a fixed order: the same bits on every run.
size_t GradCheckScratchBytes();
cudaError_t LaunchGradCheck(Elem t, const void* g, int64_t n, const float* scale, double* stats, void* scratch,
                            cudaStream_t stream);

// Adam/AdamW on one parameter. The per-step scalars come from the device
// hyper-parameter tensor (AdamStep's last input): hyper = {neg_step_size,
// bias_correction2_sqrt, decay, inv_scale, clip_coef}. p: kF32 (then g may be
// any Elem and low, if not null, kF16/kBF16) or kF16/kBF16 with g of p's Elem.
struct AdamAttrs {
  float beta1, beta2, omb1, omb2, eps, l2;
  bool apply_decay;
};
cudaError_t LaunchAdam(const AdamAttrs& a, const float* hyper, Elem p_t, void* p, Elem g_t, const void* g, float* m,
                       float* v, Elem low_t, void* low, int64_t n, cudaStream_t stream);

// SGD on one parameter; hyper = {lr, inv_scale, clip_coef, first_step};
// buf null without momentum. Elem rules as for LaunchAdam.
struct SgdAttrs {
  float momentum, weight_decay;
  bool nesterov;
};
cudaError_t LaunchSgd(const SgdAttrs& a, const float* hyper, Elem p_t, void* p, Elem g_t, const void* g, float* buf,
                      Elem low_t, void* low, int64_t n, cudaStream_t stream);

// ---- softmax cross-entropy (kernels/cpu/loss.cc has the definition) ----

enum class LossReduction : int { kNone, kSum, kMean };
struct LossShape {
  int64_t n = 0, c = 0, d = 1;  // scores [N, C, D], labels [N, D]
  bool has_ignore = false;
  int64_t ignore_index = 0;
  double label_smoothing = 0.0;
  LossReduction reduction = LossReduction::kMean;
  bool labels_int64 = true;
};
// Bytes of scratch both loss launchers need.
size_t LossScratchBytes(const LossShape& s);
// loss: [N, D] (kNone) or a scalar; log_prob: [N, C, D] or null; weights:
// [C] of t or null. A label outside [0, C) that is not ignored makes its
// sample's loss NaN (the CPU kernel's error needs a host read of the labels).
cudaError_t LaunchSoftmaxCrossEntropy(const LossShape& s, Elem t, const void* scores, const void* labels,
                                      const void* weights, void* loss, void* log_prob, void* scratch,
                                      cudaStream_t stream);
// dscores [N, C, D] from dloss ([N, D] for kNone, else a scalar) and log_prob.
// A bad label makes its sample's gradient NaN.
cudaError_t LaunchSoftmaxCrossEntropyGrad(const LossShape& s, Elem t, const void* dloss, const void* log_prob,
                                          const void* labels, const void* weights, void* dscores, void* scratch,
                                          cudaStream_t stream);

// ---- epilogues of the cuDNN kernels (kernels/cuda/cudnn_aux.cu) ----

// Over y [outer, channels, plane] in place: y = act(y + bias[c] + z), bias
// [channels] and z (y's shape) of t, either null; act = max(., 0) when relu.
// Conv's bias and FusedConv's residual and Relu, in one pass.
cudaError_t LaunchBiasAct(Elem t, void* y, const void* bias, const void* z, int64_t outer, int64_t channels,
                          int64_t plane, bool relu, cudaStream_t stream);

// BatchNormalization's running statistics, per channel (all fp32 [c]):
//   out_mean = in_mean * momentum + batch_mean * (1 - momentum)
//   out_var  = in_var * momentum + batch_var_unbiased * unbias * (1 - momentum)
// unbias = (count - 1) / count turns cuDNN's unbiased batch variance into
// the biased one the CPU kernels use. out_* may alias in_*.
cudaError_t LaunchBnRunningUpdate(int64_t c, const float* in_mean, const float* in_var, const float* batch_mean,
                                  const float* batch_var_unbiased, float* out_mean, float* out_var, float momentum,
                                  float unbias, cudaStream_t stream);

}  // namespace amptrain::kernels::cuda
