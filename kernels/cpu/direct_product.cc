// Gemm and Product (kernels/cpu/direct_product.h).
#include "kernels/cpu/direct_product.h"

#include <oneapi/dnnl/dnnl.h>

#include <string>

namespace amptrain::kernels::cpu::direct {

Status Gemm(char ta, char tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
            int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return Status::Ok();
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0 ? 0.0f : beta * c[i * ldc + j];
    return Status::Ok();
  }
  if (dnnl_sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc) != dnnl_success)
    return Internal("oneDNN sgemm failed (", m, "x", n, "x", k, ")");
  return Status::Ok();
}

Product::Product(int64_t m, int64_t n, int64_t k, std::array<int64_t, 2> a, std::array<int64_t, 2> b, int64_t ldc,
                 DType t, bool pack, bool accumulate)
    : m_(m), n_(n), k_(k), a_(a), b_(b), ldc_(ldc), accumulate_(accumulate), pack_b_(pack) {
  if (m == 0 || n == 0 || k == 0) return;
  try {
    using desc = dnnl::memory::desc;
    const auto dt = onednn::DataType(t);
    const desc a_desc({m, k}, dt, dnnl::memory::dims{a_[0], a_[1]});
    const desc b_desc({k, n}, dt, dnnl::memory::dims{b_[0], b_[1]});
    const desc c({m, n}, dnnl::memory::data_type::f32, dnnl::memory::dims{ldc, 1});
    const desc weights = pack ? desc({k, n}, dt, dnnl::memory::format_tag::any) : b_desc;
    dnnl::post_ops ops;
    if (accumulate) ops.append_sum(1.0f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_desc, weights, c), onednn::UserScratchpad(attr),
                                    onednn::Engine());
    if (t != DType::kFloat32 && std::string(pd.impl_info_str()).find("ref") != std::string::npos)
      return;  // oneDNN's reference bf16 matmul: ok() stays false
    if (pack) {
      pack_ = dnnl::reorder(dnnl::reorder::primitive_desc(onednn::Engine(), b_desc, onednn::Engine(),
                                                          pd.weights_desc(), onednn::UserScratchpad()));
      packed_bytes_ = (pd.weights_desc().get_size() + 63) / 64 * 64;
      pack_args_.Add(DNNL_ARG_FROM, b_desc);
      pack_args_.Add(DNNL_ARG_TO, pd.weights_desc());
    }
    matmul_ = dnnl::matmul(pd);
    scratchpad_bytes_ = (onednn::ScratchpadBytes(pd) + 63) / 64 * 64;
    args_.Add(DNNL_ARG_SRC, a_desc);
    args_.Add(DNNL_ARG_WEIGHTS, pd.weights_desc());
    args_.Add(DNNL_ARG_DST, c);
    args_.AddScratchpad(onednn::ScratchpadBytes(pd));
    stream_ = dnnl::stream(onednn::Engine());
  } catch (const dnnl::error&) {
    matmul_ = dnnl::matmul();
    packed_bytes_ = scratchpad_bytes_ = 0;
  }
  ok_ = matmul_ || t == DType::kFloat32;
}

Status Product::SetB(const void* b, void* scratch) {
  b_data_ = b;
  scratch_ = static_cast<std::byte*>(scratch);
  if (!matmul_ || !pack_b_) return Status::Ok();
  try {
    pack_args_.Set(0, const_cast<void*>(b));
    pack_args_.Set(1, scratch_);
    pack_args_.Execute(pack_, stream_);
  } catch (const dnnl::error& e) {
    return Internal("oneDNN reorder of a matmul's B failed: ", e.what());
  }
  return Status::Ok();
}

Status Product::Run(const void* a, float* c) {
  if (m_ == 0 || n_ == 0) return Status::Ok();
  if (!matmul_) {  // fp32 (ok()): A and B row-major or transposed
    const auto* fa = static_cast<const float*>(a);
    const auto* fb = static_cast<const float*>(b_data_);
    const char ta = a_[1] == 1 ? 'N' : 'T', tb = b_[1] == 1 ? 'N' : 'T';
    return Gemm(ta, tb, m_, n_, k_, fa, ta == 'N' ? a_[0] : a_[1], fb, tb == 'N' ? b_[0] : b_[1],
                accumulate_ ? 1.0f : 0.0f, c, ldc_);
  }
  try {
    args_.Set(0, const_cast<void*>(a));
    args_.Set(1, pack_b_ ? static_cast<void*>(scratch_) : const_cast<void*>(b_data_));
    args_.Set(2, c);
    args_.SetScratchpad(scratch_ + packed_bytes_);
    args_.Execute(matmul_, stream_);
  } catch (const dnnl::error& e) {
    return Internal("oneDNN matmul failed: ", e.what());
  }
  return Status::Ok();
}

}  // namespace amptrain::kernels::cpu::direct
