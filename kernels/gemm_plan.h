// The shape plan of Gemm and MatMul, shared by every device's kernels
// (kernels/cpu/gemm.cc, kernels/cuda/blas_kernels.cc): one strided batched
// product
//   Y[b, m, n] = alpha * sum_k A(b, m, k) * B(b, k, n) + beta * C(m, n)
//   Gemm:   A [M, K] or [K, M] (transA), B [K, N] or [N, K] (transB), optional
//           C broadcast to [M, N]; one batch.
//   MatMul: numpy matmul; 1-D operands are promoted, batch dims broadcast
//           (each batch element's A and B offsets are precomputed).
// Checks the arity, ranks, inner and batch dims and C's broadcast, with
// errors naming the node.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernel.h"

namespace amptrain::kernels {

struct GemmPlan {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool ta = false, tb = false;  // Gemm's transA / transB (MatMul: none)
  float alpha = 1.0f, beta = 0.0f;
  std::vector<int64_t> a_off{0}, b_off{0};  // per batch element, in elements
  // Element strides of A(m, k) and B(k, n) within one batch element.
  int64_t a_sm = 0, a_sk = 0, b_sk = 0, b_sn = 0;
  bool has_c = false;
  int64_t c_sm = 0, c_sn = 0;  // C's strides over [M, N]; 0 on broadcast dims
  // a_off[i] = i * a_stride and b_off[i] = i * b_stride for every i: one
  // strided batched call covers the batch.
  bool strided = true;
  int64_t a_stride = 0, b_stride = 0;
};

// By init.op: Gemm or MatMul. Also checks that the output has batch * M * N elements.
StatusOr<GemmPlan> PlanGemmOrMatMul(const KernelInit& init);

}  // namespace amptrain::kernels
