// Internal to the reference kernels of the training ops (kernels/cpu/loss.cc,
// grad_conv.cc, grad_pool.cc, grad_norm.cc, grad_misc.cc, grad_scatter.cc):
// their factories, registered by kernels/cpu/training_register.cc, and shared
// helpers. Semantics of every op: autodiff/grad_ops.md.
//
// All take float32/float64/float16/bfloat16 (the storage type T). Elementwise
// math runs in Acc<T> (float for the 2-byte types); every sum accumulates in
// double in an order that does not depend on the thread count, so results
// are bitwise reproducible. Outputs the graph does not use arrive with
// data == nullptr and are not computed.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/cpu/element.h"
#include "kernels/kernel.h"

namespace amptrain::kernels::cpu::grad {

inline int Threads(const KernelInit& init) { return init.threads > 1 ? init.threads : 1; }

template <class T> inline double Load(T v) { return static_cast<double>(static_cast<Acc<T>>(v)); }
template <class T> inline T Store(double v) { return static_cast<T>(static_cast<Acc<T>>(v)); }

// One channel of BatchNormalizationGrad in double, two-pass (mean, then
// variance, then sum dy and sum dy * xhat), over (n, i) in that order with
// at(n, i) the flat index of sample n's element i; dX (when given) =
// scale inv / M (M dy - sum dy - xhat sum dy xhat), rounded once. The
// reference kernel's arithmetic, which the direct kernel takes for small
// channels (direct_batchnorm.cc kExactCount). Returns {dScale, dB}.
template <class TG, class TX, class TD, class At>
std::pair<double, double> BatchNormGradChannel(int64_t n, int64_t plane, double eps, double scale, const TG* dy,
                                               const TX* x, TD* dx, At at) {
  auto each = [&](auto&& fn) {
    for (int64_t s = 0; s < n; ++s)
      for (int64_t i = 0; i < plane; ++i) fn(at(s, i));
  };
  const double count = static_cast<double>(n * plane);
  double sum = 0.0, sq = 0.0, sdy = 0.0, sdyx = 0.0;
  each([&](int64_t e) { sum += Load(x[e]); });
  const double mean = sum / count;
  each([&](int64_t e) {
    const double d = Load(x[e]) - mean;
    sq += d * d;
  });
  const double inv = 1.0 / std::sqrt(sq / count + eps);
  each([&](int64_t e) {
    const double g = Load(dy[e]);
    sdy += g;
    sdyx += g * (Load(x[e]) - mean) * inv;
  });
  if (dx) {
    const double a = scale * inv / count;
    each([&](int64_t e) { dx[e] = Store<TD>(a * (count * Load(dy[e]) - sdy - (Load(x[e]) - mean) * inv * sdyx)); });
  }
  return {sdyx, sdy};
}

// A float tensor's values as doubles (Load), and doubles stored into one
// (Store; a view without data is left alone): parameter vectors such as a
// normalization's Scale and its gradient.
std::vector<double> ReadVector(const ir::TensorView& v);
void WriteVector(const ir::TensorView& v, const std::vector<double>& values);

using kernels::CheckArity;
// Error unless the present inputs listed have input `ref`'s dtype.
Status CheckSameDType(const KernelInit& init, size_t ref, const std::vector<size_t>& inputs);
// The forward op's view of a backward op whose forward inputs start at
// input `first`: inputs = init.inputs[first..], outputs = {init.inputs[0]}
// (dY has the forward output's type). Shares init's attributes.
KernelInit ForwardInit(const KernelInit& init, size_t first);

// Sum of fn(i) for i in [0, n), in double, over fixed chunks summed in order
// (the same bits for any thread count).
template <class Fn>
double DeterministicSum(int64_t n, int threads, Fn&& fn) {
  constexpr int64_t kChunk = 1 << 12;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partial(static_cast<size_t>(chunks), 0.0);
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1 && chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    double s = 0.0;
    for (int64_t i = c * kChunk, end = std::min(n, (c + 1) * kChunk); i < end; ++i) s += fn(i);
    partial[static_cast<size_t>(c)] = s;
  }
  double total = 0.0;
  for (double p : partial) total += p;
  return total;
}

using Factory = StatusOr<std::unique_ptr<Kernel>> (*)(const KernelInit&);

StatusOr<std::unique_ptr<Kernel>> MakeSoftmaxCrossEntropyLoss(const KernelInit& init);      // loss.cc
StatusOr<std::unique_ptr<Kernel>> MakeSoftmaxCrossEntropyLossGrad(const KernelInit& init);  // loss.cc
StatusOr<std::unique_ptr<Kernel>> MakeConvGrad(const KernelInit& init);                     // grad_conv.cc
StatusOr<std::unique_ptr<Kernel>> MakePoolGrad(const KernelInit& init);                     // grad_pool.cc: Max/Average
StatusOr<std::unique_ptr<Kernel>> MakeBatchNormGrad(const KernelInit& init);                // grad_norm.cc
StatusOr<std::unique_ptr<Kernel>> MakeLayerNormGrad(const KernelInit& init);                // grad_norm.cc
// grad_misc.cc: ReluGrad, GeluGrad, DropoutGrad, SoftmaxGrad, LogSoftmaxGrad,
// MeanSquaredError, MeanSquaredErrorGrad (dispatch on init.op).
StatusOr<std::unique_ptr<Kernel>> MakeMiscGrad(const KernelInit& init);
StatusOr<std::unique_ptr<Kernel>> MakeGatherGrad(const KernelInit& init);    // grad_scatter.cc
StatusOr<std::unique_ptr<Kernel>> MakeReduceSumTo(const KernelInit& init);   // grad_scatter.cc

}  // namespace amptrain::kernels::cpu::grad
