// The element loops of the fused optimizer-step kernels (step_kernels.cc),
// on fp32 spans, vectorized for AVX-512 or AVX2 when the CPU has it (chosen
// at run time) and scalar otherwise. Every path performs the same IEEE
// operations in the same order on every element (multiplies and adds are
// never fused: the build passes -ffp-contract=off), so the results are the
// bits of the scalar formulas of executor/train/optimizer.h on any CPU.
#pragma once

#include <cstdint>

#include "ir/dtype.h"

namespace amptrain::kernels::cpu {

// Adam/AdamW for one span. Per element, in this order:
//   p = p*decay                      (apply_decay: AdamW's decoupled decay)
//   g = g*inv_scale, then g*clip     (each skipped when it is 1)
//   g = g + l2*p                     (l2 != 0: Adam's L2 decay)
//   m = m*beta1 + omb1*g;  v = v*beta2 + (omb2*g)*g
//   p = p + (neg_step*m) / (sqrt(v)/bc2_sqrt + eps)
struct AdamScalars {
  float beta1, beta2, omb1, omb2, eps, l2;
  bool apply_decay;
  float decay, neg_step, bc2_sqrt, inv_scale, clip;
};
void AdamSpan(const AdamScalars& s, float* p, const float* g, float* m, float* v, int64_t n);
// The same for fp32 parameters whose gradients are `g_dtype` (fp32, fp16 or
// bf16: O1/O2's low gradients, widened exactly in registers) and, when `low`
// is set, a copy of the updated parameters in `low_dtype` (fp16 or bf16,
// rounded to nearest even in registers as NarrowSpan rounds): the bits of
// widening g first and narrowing p afterwards, in one pass.
void AdamSpan(const AdamScalars& s, float* p, const void* g, ir::DType g_dtype, float* m, float* v, void* low,
              ir::DType low_dtype, int64_t n);

// SGD for one span. Per element: g = g*inv_scale, then g*clip (each skipped
// when 1); d = g + wd*p (wd != 0); with momentum, b = first ? d : buf*mom + d,
// buf = b, d = nesterov ? d + mom*b : b; then p = p + neg_lr*d.
struct SgdScalars {
  float momentum, weight_decay;
  bool nesterov, first;
  float neg_lr, inv_scale, clip;
};
void SgdSpan(const SgdScalars& s, float* p, const float* g, float* buf, int64_t n);

// Whether any g[i] or g[i]*inv_scale (inv_scale != 1) is inf or NaN, and
// the sum of the squares of the g[i]*inv_scale in double. The squares are
// exact in double; only the order of the additions depends on the path.
struct GradStats {
  bool nonfinite = false;
  double sum_squares = 0.0;

  // Those of this span followed by `o`'s.
  void Add(const GradStats& o) {
    nonfinite = nonfinite || o.nonfinite;
    sum_squares += o.sum_squares;
  }
};
GradStats GradStatsSpan(const float* g, float inv_scale, int64_t n);
// The same for fp32, fp16 or bf16 gradients, 2-byte ones widened exactly in
// registers: the statistics, sums in the same order, of the widened values.
GradStats GradStatsSpan(const void* g, ir::DType dtype, float inv_scale, int64_t n);

}  // namespace amptrain::kernels::cpu
