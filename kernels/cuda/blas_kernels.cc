// cuBLAS Gemm and MatMul with the CPU reference's contracts
// (kernels/cpu/gemm.cc): Gemm's transA/transB, alpha, beta and a C that
// broadcasts to [M, N]; MatMul's numpy semantics with broadcast batch dims.
// cublasGemmEx / cublasGemmStridedBatchedEx with CUBLAS_COMPUTE_32F: fp32
// accumulation everywhere, tensor cores for fp16/bf16, and no TF32 for fp32
// (the handle keeps CUBLAS_DEFAULT_MATH). Row-major Y = A B is computed as
// the column-major Y^T = B^T A^T, so no operand is copied.
#include "kernels/cuda/common.h"
#include "kernels/cuda/cublas_api.h"
#include "kernels/cuda/library.h"
#include "kernels/gemm_plan.h"

namespace amptrain::kernels::cuda {

namespace {

cudaDataType_t CudaType(DType t) {
  return t == DType::kFloat16 ? CUDA_R_16F : t == DType::kBFloat16 ? CUDA_R_16BF : CUDA_R_32F;
}

class GemmKernel final : public Kernel {
 public:
  GemmKernel(GemmPlan p, std::optional<Broadcast> c, DType t)
      : p_(std::move(p)), c_(c), t_(t), size_(ir::DTypeSize(t)) {}

  Status Run(KernelContext& ctx) override {
    const cudaStream_t stream = StreamOf(ctx);
    AMP_ASSIGN_OR_RETURN(cublasHandle_t h, CublasHandle(stream));
    AMP_ASSIGN_OR_RETURN(const CublasApi* blas, Cublas());
    const auto* a = static_cast<const std::byte*>(ctx.inputs[0].data);
    const auto* b = static_cast<const std::byte*>(ctx.inputs[1].data);
    auto* y = static_cast<std::byte*>(ctx.outputs[0].data);
    float beta = 0.0f;
    if (c_) {
      CUDA_CHECK(LaunchBroadcastCopy(size_, ctx.inputs[2].data, y, p_.m * p_.n, *c_, stream));
      beta = p_.beta;
    }
    if (p_.m == 0 || p_.n == 0) return Status::Ok();
    if (p_.k == 0) {  // an empty sum: Y = beta * C, or 0
      if (!c_) CUDA_CHECK(cudaMemsetAsync(y, 0, ctx.outputs[0].nbytes(), stream));
      return Status::Ok();
    }
    const cublasOperation_t opa = p_.ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = p_.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int m = static_cast<int>(p_.m), n = static_cast<int>(p_.n), k = static_cast<int>(p_.k);
    const int lda = static_cast<int>(p_.ta ? p_.m : p_.k), ldb = static_cast<int>(p_.tb ? p_.k : p_.n);
    const cudaDataType_t type = CudaType(t_);
    if (p_.strided) {
      CUBLAS_CHECK(blas->GemmStridedBatchedEx(h, opb, opa, n, m, k, &p_.alpha, b, type, ldb, p_.b_stride, a, type, lda,
                                              p_.a_stride, &beta, y, type, n, p_.m * p_.n,
                                              static_cast<int>(p_.batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      return Status::Ok();
    }
    for (int64_t i = 0; i < p_.batch; ++i)
      CUBLAS_CHECK(blas->GemmEx(h, opb, opa, n, m, k, &p_.alpha, b + p_.b_off[i] * size_, type, ldb,
                                a + p_.a_off[i] * size_, type, lda, &beta, y + i * p_.m * p_.n * size_, type, n,
                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return Status::Ok();
  }

 private:
  GemmPlan p_;
  std::optional<Broadcast> c_;  // Gemm's C, broadcast into Y before the product
  DType t_;
  size_t size_;
};

StatusOr<std::unique_ptr<Kernel>> MakeGemm(const KernelInit& init) {
  const DType t = init.inputs.empty() ? DType::kUndefined : init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {1, 2}, {0}));
  AMP_ASSIGN_OR_RETURN(GemmPlan p, PlanGemmOrMatMul(init));
  std::optional<Broadcast> c;
  if (p.has_c) {
    c.emplace();
    c->rank = 2;
    c->out_dims[0] = p.m, c->out_dims[1] = p.n;
    c->a_strides[0] = p.c_sm;
    c->a_strides[1] = p.c_sn;
  }
  if (p.k == 0 && c && p.beta != 1.0f) return Unimplemented(init.Describe(), ": K = 0 with beta != 1 on CUDA");
  constexpr int64_t kIntMax = 2147483647;
  if (p.m > kIntMax || p.n > kIntMax || p.k > kIntMax || p.batch > kIntMax)
    return init.Error("a GEMM dimension exceeds cuBLAS's int range");
  return std::unique_ptr<Kernel>(std::make_unique<GemmKernel>(std::move(p), c, t));
}

}  // namespace

void RegisterBlas(Registry& r) {
  r.Add(CudaEntry(OpKind::kGemm, "cublas", MakeGemm));
  r.Add(CudaEntry(OpKind::kMatMul, "cublas", MakeGemm));
}

}  // namespace amptrain::kernels::cuda
