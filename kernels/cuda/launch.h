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
  kRelu, kLeakyRelu, kSigmoid, kSilu, kTanh, kExp, kLog, kSqrt, kNeg, kAbs, kReciprocal, kErf, kGelu, kGeluTanh,
  kHardSigmoid, kHardSwish, kFloor, kCeil, kSign, kClip, kSin, kCos,
};
// y[i] = f(x[i]); alpha: LeakyRelu's slope, HardSigmoid's alpha, Clip's
// lower bound; beta: HardSigmoid's beta, Clip's upper bound. kSin, kCos: in
// double, rounded to float (then to t), the correctly rounded float result
// but for double rounding (the CPU's glibc sinf/cosf are not always: about
// 1% of fp32 inputs differ in the last bit).
cudaError_t LaunchUnary(UnaryOp op, Elem t, const void* x, void* y, int64_t n, float alpha, float beta,
                        cudaStream_t stream);

enum class BinaryOp : int {
  kAdd, kSub, kMul, kDiv, kMax, kMin,
  // Backward ops, (dY, b) -> dX, operands of one shape (no broadcast):
  kReluGrad,      // b = Y: dY where Y > 0, else 0
  kTanhGrad,      // b = Y: dY (1 - Y)(1 + Y)
  kSigmoidGrad,   // b = Y: dY Y (1 - Y)
  kGeluGrad,      // b = X: dY * (Phi(x) + x phi(x))
  kGeluTanhGrad,  // b = X: the tanh approximation's derivative
  kErfGrad,       // b = X: UnaryGrad of Erf, dY 2/sqrt(pi) e^(-x^2)
  kSiluGrad,      // b = X: dY (s + x s (1 - s)), s = sigmoid(x)
  kHardSwishGrad, // b = X: UnaryGrad of HardSwish, 0 / dY (x / 3 + 1/2) / dY at -3 and 3
};
// Output element i (row-major over out_dims) reads a at sum_d idx_d *
// a_strides[d] and b likewise; a stride 0 broadcasts that dim.
struct Broadcast {
  int rank = 0;
  int64_t out_dims[kMaxRank] = {};
  int64_t a_strides[kMaxRank] = {};
  int64_t b_strides[kMaxRank] = {};
  int64_t c_strides[kMaxRank] = {};  // a third operand (Where's condition)
};
// `bc` null: a, b and y all have n elements in the same layout.
cudaError_t LaunchBinary(BinaryOp op, Elem t, const void* a, const void* b, void* y, int64_t n, const Broadcast* bc,
                         cudaStream_t stream);

// Equal, Less, Greater (LaunchCompare, below with the other Num launchers).
enum class CompareOp : int { kEqual, kLess, kGreater };

// Pow(a, b) of the CPU kernel: a of t, b of te (any float Elem), y of t:
// y = b == 2 ? a * a : powf(a, b) in float. `bc` as for LaunchBinary.
cudaError_t LaunchPow(Elem t, Elem te, const void* a, const void* b, void* y, int64_t n, const Broadcast* bc,
                      cudaStream_t stream);

// Where: y[i] = cond[ic] ? a[ia] : b[ib] with the offsets of i under bc's
// c_strides, a_strides and b_strides (`bc` null: one layout), elements of
// elem_bytes = 1, 2, 4 or 8 bytes (any dtype).
cudaError_t LaunchWhere(size_t elem_bytes, const bool* cond, const void* a, const void* b, void* y, int64_t n,
                        const Broadcast* bc, cudaStream_t stream);

// y[i] = x[offset of i under bc's a_strides]: a strided copy of elements of
// elem_bytes = 1, 2, 4 or 8 bytes (any dtype). A broadcast (Gemm's C,
// Expand: strides 0), a permutation (Transpose) or a slice (x at the first
// element, strides step * stride, possibly negative).
cudaError_t LaunchBroadcastCopy(size_t elem_bytes, const void* x, void* y, int64_t n, const Broadcast& bc,
                                cudaStream_t stream);

// Gather along one axis, data viewed as [outer, dim, inner] and y as
// [outer, n_idx, inner]: y[o, j, i] = x[o, idx[j] (+ dim when negative), i].
// An index outside [-dim, dim) (the CPU kernel's error) gives `bad` (the
// dtype's NaN bits for floats) for its slice: no host read of the indices.
struct GatherShape {
  int64_t outer = 1, dim = 1, inner = 1, n_idx = 0;
  bool idx_int64 = true;
};
cudaError_t LaunchGather(size_t elem_bytes, const void* x, const void* idx, void* y, const GatherShape& g,
                         uint64_t bad, cudaStream_t stream);
// GatherGrad: dx [outer, dim, inner] = zeros with dy [outer, n_idx, inner]'s
// slices added at their index, each row summing its slices in index order
// (a stable counting sort in one block, then one thread per element): the
// same bits on every run. Any bad index makes every element NaN.
size_t GatherGradScratchBytes(const GatherShape& g);
cudaError_t LaunchGatherGrad(Elem t, const void* dy, const void* idx, void* dx, const GatherShape& g, void* scratch,
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
// kSum: scale * the sum; kMax: the maximum (NaN propagates, -inf when
// empty); kL2: sqrtf of the sum of squares.
enum class ReduceOp : int { kSum, kMax, kL2 };
cudaError_t LaunchReduce(ReduceOp op, Elem t, const void* x, void* y, const Reduction& r, float scale,
                         cudaStream_t stream);
inline cudaError_t LaunchReduceSum(Elem t, const void* x, void* y, const Reduction& r, float scale,
                                   cudaStream_t stream) {
  return LaunchReduce(ReduceOp::kSum, t, x, y, r, scale, stream);
}

// ---- Softmax, LayerNormalization and their gradients (kernels/cpu/softmax.cc,
// grad_misc.cc, grad_norm.cc have the definitions; float here, double there) ----

// Lanes of n elements at stride inner: x viewed as [outer, n, inner].
struct SoftmaxShape {
  int64_t outer = 1, n = 1, inner = 1;
};
// log: y = x - max - log(sum exp(x - max)); else exp(x - max) / sum. y may alias x.
cudaError_t LaunchSoftmax(Elem t, bool log, const void* x, void* y, const SoftmaxShape& s, cudaStream_t stream);
// log: dx = dy - exp(y) * sum(dy); else dx = y * (dy - sum(dy * y)).
cudaError_t LaunchSoftmaxGrad(Elem t, bool log, const void* dy, const void* y, void* dx, const SoftmaxShape& s,
                              cudaStream_t stream);

// Rows of cols elements. scale/bias[j] of column j at the offset of j under
// scale_bc's a_strides (bias: b_strides) over the normalized dims; rank 0:
// they have the cols elements in order.
struct LayerNormShape {
  int64_t rows = 1, cols = 1;
  float epsilon = 1e-5f;
  Broadcast scale_bc;
};
// Y = (X - mean) * inv_std * scale + bias (bias may be null), biased
// variance; mean and inv_std per row in `stash` (either may be null).
cudaError_t LaunchLayerNorm(Elem t, const void* x, const void* scale, const void* bias, void* y, Elem stash,
                            void* mean, void* inv_std, const LayerNormShape& s, cudaStream_t stream);
// dX (may be null), dScale and dBias (scale has the cols elements; either
// may be null) from the statistics recomputed from X.
size_t LayerNormGradScratchBytes(const LayerNormShape& s);
cudaError_t LaunchLayerNormGrad(Elem t, const void* dy, const void* x, const void* scale, void* dx, void* dscale,
                                void* dbias, const LayerNormShape& s, void* scratch, cudaStream_t stream);

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

// MeanSquaredError: loss[0] = sum((p - t)^2) / n, the squares and the sum in
// double (a fixed grid of partial sums, then one block sums them in order),
// rounded to float and then to t, as kernels/cpu/grad_misc.cc. `scratch`
// holds MseScratchBytes(). n may be 0 (NaN, as the CPU's 0 / 0).
size_t MseScratchBytes();
cudaError_t LaunchMse(Elem t, const void* p, const void* target, void* loss, int64_t n, void* scratch,
                      cudaStream_t stream);
// MeanSquaredErrorGrad: dx[i] = (2 * dloss / n) * (p[i] - t[i]) in double,
// rounded to float and then to t; dloss is the device scalar.
cudaError_t LaunchMseGrad(Elem t, const void* dloss, const void* p, const void* target, void* dx, int64_t n,
                          cudaStream_t stream);

// ---- integer and bool elementwise ops (kernels/cpu/unary.cc, binary.cc) ----

// Element types of the ops that also take integers.
enum class Num : int { kF32, kF16, kBF16, kI8, kU8, kI32, kI64 };
// Not: y[i] = x[i] ? 0 : 1 over bytes (bool). y may alias x.
cudaError_t LaunchNot(const uint8_t* x, uint8_t* y, int64_t n, cudaStream_t stream);
// Mod: floats in float, fmod ? fmodf(a, b) : a - floor(a / b) * b as
// ir::FloorMod (exact); integers as the CPU's Remainder (x mod 0 = 0, x mod
// -1 = 0, floor_mod takes the divisor's sign). `bc` as for LaunchBinary.
cudaError_t LaunchMod(Num t, bool fmod, const void* a, const void* b, void* y, int64_t n, const Broadcast* bc,
                      cudaStream_t stream);
// y[i] = a op b as bool, for Equal, Less, Greater on any Num: fp16/bf16
// widened to float (as the CPU compares them), the others exact in their
// type (bool: Equal on the bytes, as kU8). `bc` as for LaunchBinary.
cudaError_t LaunchCompare(CompareOp op, Num t, const void* a, const void* b, bool* y, int64_t n,
                           const Broadcast* bc, cudaStream_t stream);
// Add, Sub, Mul, Div, Max, Min (op) on kI64, kI32, kI8, kU8 (t) as
// kernels/cpu/binary.cc: Add/Sub/Mul wrap (two's complement, through the
// unsigned type); Div truncates toward zero, x / 0 = 0 and x / -1 is the
// wrapping negation (INT_MIN / -1 = INT_MIN). `bc` as for LaunchBinary;
// any other op or t is cudaErrorInvalidValue.
cudaError_t LaunchIntBinary(BinaryOp op, Num t, const void* a, const void* b, void* y, int64_t n,
                            const Broadcast* bc, cudaStream_t stream);

// The dtypes of LaunchCastAny.
enum class CastType : int { kF32, kF16, kBF16, kF64, kI64, kI32, kI8, kU8, kBool };
// y[i] = to(from(x[i])) with kernels/cpu/cast.cc's rules, bit for bit:
// float -> integer truncates toward zero and saturates at the integer's
// range, NaN -> 0; -> bool is x != 0 (NaN -> true), a bool input is any
// nonzero byte; -> fp16/bf16 goes through float (an integer or a double is
// rounded to float first, then to nearest even, as the CPU's Half(float)),
// fp16 overflow -> +-inf; integer -> integer wraps; NaNs keep the CPU's
// payload bits (ir/dtype.h's conversions, x86's float <-> double).
// from == to is cudaErrorInvalidValue (the kernel copies).
cudaError_t LaunchCastAny(CastType from, CastType to, const void* x, void* y, int64_t n, cudaStream_t stream);

// ---- values known at plan time, fills and ranges ----

// y[0, n) = the element `bits` (elem_bytes = 1, 2, 4 or 8, low bytes of bits).
cudaError_t LaunchFill(size_t elem_bytes, uint64_t bits, void* y, int64_t n, cudaStream_t stream);
// Range: y[i] = start + A(i) * delta in A (float for kF32/kF16/kBF16, the
// integer type otherwise), start and delta the device scalars of t.
cudaError_t LaunchRange(Num t, const void* start, const void* delta, void* y, int64_t n, cudaStream_t stream);

// ---- Pad, Resize, ResizeGrad (kernels/cpu/pad_resize.cc) ----

enum class PadKind : int { kConstant, kReflect, kEdge, kWrap };
struct PadShape {
  int rank = 0;
  PadKind mode = PadKind::kConstant;
  int64_t out_dims[kMaxRank] = {}, in_dims[kMaxRank] = {}, in_strides[kMaxRank] = {}, begin[kMaxRank] = {};
};
// y (out_dims) from x: each dim's source index as the CPU's PadSource;
// a constant-mode pad position takes *value (value null: zero bits).
cudaError_t LaunchPad(size_t elem_bytes, const void* x, const void* value, void* y, int64_t n, const PadShape& s,
                      cudaStream_t stream);
// PadGrad: dx (in_dims, n elements) from dy (out_dims): each dx element sums
// in double the dy elements whose PadSource is its position, in increasing
// dy order (the CPU's order, so the CPU's bits), rounded once.
cudaError_t LaunchPadGrad(Elem t, const void* dy, void* dx, int64_t n, const PadShape& s, cudaStream_t stream);

// One resampling pass over a [outer, in, inner] double tensor, in place of
// the CPU's ResampleAxis: out position x reads taps[x] (count[x] of at most
// `width` (index, weight) pairs: 4 for cubic, more for antialiased
// down-sampling; count -1: extrapolate with `extrapolation`) and sums
// acc = start + w_0 * s_0 + w_1 * s_1 ... in tap order in double.
struct ResamplePass {
  int64_t outer = 1, in = 1, out = 1, inner = 1, width = 4;
  const int32_t* count = nullptr;   // [out]
  const int64_t* index = nullptr;   // [out * width]
  const double* weight = nullptr;   // [out * width]
  double extrapolation = 0.0;
};
cudaError_t LaunchResample(const ResamplePass& p, const double* src, double* dst, cudaStream_t stream);
// The adjoint of one pass (ResizeGrad): source position s of [outer, in,
// inner] sums, from 0.0 in the CPU's order (output position, then tap), the
// entries [offsets[s], offsets[s + 1]) of (position, weight): w * dst.
struct ResampleAdjoint {
  int64_t outer = 1, in = 1, out = 1, inner = 1;
  const int64_t* offsets = nullptr;  // [in + 1]
  const int64_t* position = nullptr;
  const double* weight = nullptr;
};
cudaError_t LaunchResampleAdjoint(const ResampleAdjoint& p, const double* dst, double* src, cudaStream_t stream);
// x of t widened to double (through float); double narrowed to float, then t.
cudaError_t LaunchToDouble(Elem t, const void* x, double* y, int64_t n, cudaStream_t stream);
cudaError_t LaunchFromDouble(Elem t, const double* x, void* y, int64_t n, cudaStream_t stream);

// ---- GatherND, ScatterND and their gradients (kernels/cpu/scatter_nd.cc) ----

// The big tensor (GatherND's data, ScatterND's data/output, the gradients'
// dX/dY) as rows of `size` elements (one slice each); int64 index tuple j
// of k coordinates names row key(j) = (j / per_batch) * slab_rows + sum_d
// idx_d * stride[d] (negative coordinates wrap), or `rows` when one is
// outside [-in[d], in[d]) (the CPU's OutOfRange error).
struct NDShape {
  int k = 0;
  int64_t in[kMaxRank] = {}, stride[kMaxRank] = {};  // stride in rows
  int64_t size = 1, slab_rows = 1, per_batch = 1, count = 0, rows = 0;
};
// GatherND: y[j * size + e] = x[key(j) * size + e], `bad` (NaN bits for
// floats, else 0) for a bad tuple. Any element of 1/2/4/8 bytes.
cudaError_t LaunchGatherND(size_t elem_bytes, const void* x, const int64_t* idx, void* y, const NDShape& s,
                           uint64_t bad, cudaStream_t stream);
// The others sort the tuples stably by row first (one block, a counting
// sort, as GatherGrad), so each output element is one thread that visits
// its row's tuples in tuple order: the CPU's order, no atomics.
size_t NDScratchBytes(const NDShape& s);
// GatherNDGrad: dx = zeros plus, per row, its tuples' dy slices summed in
// tuple order in float, rounded once; any bad tuple makes all of dx NaN.
cudaError_t LaunchGatherNDGrad(Elem t, const void* dy, const int64_t* idx, void* dx, const NDShape& s, void* scratch,
                               cudaStream_t stream);
// ScatterND: y = x (skipped when y aliases x), then each targeted row combines
// its tuples' update slices in tuple order: kNone keeps the last one (bytes
// of elem_bytes, `t` unused); kAdd/kMul/kMax/kMin compute in the CPU's Acc
// type (float for the three floats) and round to t at every step. Any bad
// tuple makes every element of y `bad`.
enum class ScatterOp : int { kNone, kAdd, kMul, kMax, kMin };
cudaError_t LaunchScatterND(ScatterOp op, Num t, size_t elem_bytes, const void* x, const int64_t* idx,
                            const void* updates, void* y, const NDShape& s, uint64_t bad, void* scratch,
                            cudaStream_t stream);
// ScatterNDGrad: dupdates (may be null) = GatherND of dy; ddata (may be null)
// = dy with every targeted row zeroed (zero_targets: reduction none) or dy.
// Any bad tuple makes both all `bad`.
cudaError_t LaunchScatterNDGrad(size_t elem_bytes, const void* dy, const int64_t* idx, void* ddata, void* dupdates,
                                bool zero_targets, const NDShape& s, uint64_t bad, void* scratch, cudaStream_t stream);

// ---- GatherElements, ScatterElements and their gradients (kernels/cpu/select.cc,
// scatter_nd.cc; elements.cu) ----

// Data (`rows` elements, row-major, data_strides) and indices (idx_dims,
// `count` elements) of one rank, indices no larger than data off the axis:
// index element e (row-major over idx_dims) targets the data element at e's
// coordinates with the one at `axis` replaced by idx[e] (+ dim when
// negative); an index outside [-dim, dim) (the CPU's OutOfRange error)
// targets `rows` (bad). Int32 or int64 indices.
struct ElementsShape {
  int rank = 0, axis = 0;
  int64_t idx_dims[kMaxRank] = {}, data_strides[kMaxRank] = {};
  int64_t dim = 1, count = 0, rows = 0;
  bool idx_int64 = true;
};
// GatherElements: y[e] = x[target(e)], `bad` (NaN bits for floats, else 0)
// for a bad index. Any element of 1/2/4/8 bytes.
cudaError_t LaunchGatherElements(size_t elem_bytes, const void* x, const void* idx, void* y, const ElementsShape& s,
                                 uint64_t bad, cudaStream_t stream);
// The others sort the index elements stably by target (one block, sort.cuh,
// as GatherGrad), then one thread per data element visits its index
// elements in increasing e: the CPU's order, no atomics. `scratch` holds
// ElementsScratchBytes(s).
size_t ElementsScratchBytes(const ElementsShape& s);
// GatherElementsGrad: dx = zeros, then per data element dy of its index
// elements added in order in float, rounded to t after every addition (the
// CPU's dx[off] = T(float(dx[off]) + float(dy[e]))). A bad index makes all
// of dx NaN.
cudaError_t LaunchGatherElementsGrad(Elem t, const void* dy, const void* idx, void* dx, const ElementsShape& s,
                                     void* scratch, cudaStream_t stream);
// ScatterElements: y = x (skipped when y aliases x), then each targeted
// element combines its updates in order as LaunchScatterND (kNone: the last
// wins, bytes of elem_bytes; the others in the CPU's Acc type, rounded to t
// at every step; fp32/fp16/bf16, int32, int64). A bad index makes every
// element of y `bad`.
cudaError_t LaunchScatterElements(ScatterOp op, Num t, size_t elem_bytes, const void* x, const void* idx,
                                  const void* updates, void* y, const ElementsShape& s, uint64_t bad, void* scratch,
                                  cudaStream_t stream);
// ScatterElementsGrad: dupdates (may be null) = GatherElements of dy; ddata
// (may be null) = dy with every targeted element zeroed (zero_targets:
// reduction none) or dy. A bad index makes both all `bad`.
cudaError_t LaunchScatterElementsGrad(size_t elem_bytes, const void* dy, const void* idx, void* ddata,
                                      void* dupdates, bool zero_targets, const ElementsShape& s, uint64_t bad,
                                      void* scratch, cudaStream_t stream);

// ---- ArgMax, ArgMin (kernels/cpu/select.cc; reduce.cu) ----

// x of t viewed as [outer, n, inner]: y[o * inner + i] = the position along
// n of the first (last: select_last) maximum (max) or minimum of lane (o, i);
// the first NaN wins over everything (the CPU stops there). n == 0 gives 0.
cudaError_t LaunchArgExtremum(Num t, bool max, bool select_last, const void* x, int64_t* y, int64_t outer,
                              int64_t n, int64_t inner, cudaStream_t stream);

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

// ---- random ops (kernels/cpu/random.cc has the definition) ----

enum class RandomDraw : int { kUniform, kNormal, kBernoulli };
// Element i of y (type t) from the stream of kernels/dropout_stream.h, in
// double, rounded to float and then to t (integers: converted exactly, as
// the CPU's static_cast; bool as kU8):
//   kUniform:   a + b * u(seed, i)
//   kNormal:    a + b * sqrt(-2 log1p(-u(seed, 2i))) * cos(2 pi u(seed, 2i + 1))
//   kBernoulli: u(seed, i) < p[i] ? 1 : 0, p of type p_t (null otherwise)
cudaError_t LaunchRandom(RandomDraw draw, Num t, void* y, int64_t n, uint64_t seed, double a, double b, Elem p_t,
                         const void* p, cudaStream_t stream);

}  // namespace amptrain::kernels::cuda
