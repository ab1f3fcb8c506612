// Matrix products of fixed shapes for the direct kernels (direct_rnn.cc):
// oneDNN's sgemm (Gemm), and Product, a oneDNN matmul made once whose B may
// be packed once and reused over many calls.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "kernels/cpu/onednn_common.h"
#include "kernels/kernel.h"

namespace amptrain::kernels::cpu::direct {

// C = op(A) op(B) + beta C, row-major (ta, tb: 'N' or 'T'), on oneDNN's sgemm.
Status Gemm(char ta, char tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
            int64_t ldb, float beta, float* c, int64_t ldc);

// A product C (+)= A B of fixed shapes: a oneDNN matmul made at creation,
// A and B fp32 or bf16, C fp32, any strides. With `pack` B is reordered by
// SetB into the layout the primitive prefers, in the caller's scratch, and
// reused by every Run until the next SetB: oneDNN's sgemm packs B again at
// every call and allocates for it, which for a small A (the batch rows of one
// recurrent step) costs as much as the product. Without `pack` B is read
// where it is. The scratchpad is the caller's scratch too. Where oneDNN has
// no fp32 matmul for the shapes, Run falls back to Gemm; ok() is false where
// it has only its reference bf16 one (the caller then computes in fp32).
class Product {
 public:
  Product() = default;
  // A [m, k] with element (i, l) at i * a[0] + l * a[1]; B [k, n] with (l, j)
  // at l * b[0] + j * b[1]; C [m, n], rows ldc apart; `accumulate`: C += A B.
  Product(int64_t m, int64_t n, int64_t k, std::array<int64_t, 2> a, std::array<int64_t, 2> b, int64_t ldc,
          DType t, bool pack, bool accumulate);
  bool ok() const { return ok_ || m_ == 0 || n_ == 0 || k_ == 0; }
  // Scratch for the packed B and the scratchpad (64-byte aligned).
  size_t scratch_bytes() const { return packed_bytes_ + scratchpad_bytes_; }
  // The B of the next runs (with `pack`, reordered into `scratch` now).
  Status SetB(const void* b, void* scratch);
  Status Run(const void* a, float* c);

 private:
  int64_t m_ = 0, n_ = 0, k_ = 0;
  std::array<int64_t, 2> a_{}, b_{};
  int64_t ldc_ = 0;
  bool accumulate_ = false, pack_b_ = false, ok_ = false;
  dnnl::matmul matmul_;
  dnnl::reorder pack_;
  onednn::ExecArgs args_, pack_args_;
  size_t packed_bytes_ = 0, scratchpad_bytes_ = 0;
  dnnl::stream stream_;
  const void* b_data_ = nullptr;
  std::byte* scratch_ = nullptr;
};

}  // namespace amptrain::kernels::cpu::direct
