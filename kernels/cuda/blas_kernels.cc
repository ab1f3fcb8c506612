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

namespace amptrain::kernels::cuda {

namespace {

struct GemmPlan {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool ta = false, tb = false;
  float alpha = 1.0f, beta = 0.0f;
  // Batch element i reads A at a_off[i] and B at b_off[i] (elements).
  std::vector<int64_t> a_off{0}, b_off{0};
  bool strided = true;  // a_off[i] = i * a_stride, b_off[i] = i * b_stride
  int64_t a_stride = 0, b_stride = 0;
  std::optional<Broadcast> c;  // Gemm's C, broadcast into Y before the product
};

cudaDataType_t CudaType(DType t) {
  return t == DType::kFloat16 ? CUDA_R_16F : t == DType::kBFloat16 ? CUDA_R_16BF : CUDA_R_32F;
}

class GemmKernel final : public Kernel {
 public:
  GemmKernel(GemmPlan p, DType t) : p_(std::move(p)), t_(t), elem_(*ElemOf(t)), size_(ir::DTypeSize(t)) {}

  Status Run(KernelContext& ctx) override {
    const cudaStream_t stream = StreamOf(ctx);
    AMP_ASSIGN_OR_RETURN(cublasHandle_t h, CublasHandle(stream));
    AMP_ASSIGN_OR_RETURN(const CublasApi* blas, Cublas());
    const auto* a = static_cast<const std::byte*>(ctx.inputs[0].data);
    const auto* b = static_cast<const std::byte*>(ctx.inputs[1].data);
    auto* y = static_cast<std::byte*>(ctx.outputs[0].data);
    float beta = 0.0f;
    if (p_.c) {
      CUDA_CHECK(LaunchBroadcastCopy(elem_, ctx.inputs[2].data, y, p_.m * p_.n, *p_.c, stream));
      beta = p_.beta;
    }
    if (p_.m == 0 || p_.n == 0) return Status::Ok();
    if (p_.k == 0) {  // an empty sum: Y = beta * C, or 0
      if (!p_.c) CUDA_CHECK(cudaMemsetAsync(y, 0, ctx.outputs[0].nbytes(), stream));
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
  DType t_;
  Elem elem_;
  size_t size_;
};

// PlanGemm and PlanMatMul repeat kernels/cpu/gemm.cc's checks and batch
// offsets; they belong in one device-neutral planner once kernels/ has one.
StatusOr<GemmPlan> PlanGemm(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 3, 1, 1));
  const auto& ad = init.inputs[0].dims;
  const auto& bd = init.inputs[1].dims;
  if (ad.size() != 2 || bd.size() != 2) return init.Error("A and B must be 2-D");
  GemmPlan p;
  p.ta = init.attrs->Int("transA", 0) != 0, p.tb = init.attrs->Int("transB", 0) != 0;
  AMP_ASSIGN_OR_RETURN(p.alpha, init.attrs->GetFloat("alpha", 1.0f));
  AMP_ASSIGN_OR_RETURN(p.beta, init.attrs->GetFloat("beta", 1.0f));
  p.m = p.ta ? ad[1] : ad[0];
  p.k = p.ta ? ad[0] : ad[1];
  p.n = p.tb ? bd[0] : bd[1];
  if ((p.tb ? bd[1] : bd[0]) != p.k) return init.Error("inner dimensions differ");
  if (init.inputs.size() > 2 && init.inputs[2].present()) {
    const auto& cd = init.inputs[2].dims;
    if (cd.size() > 2) return init.Error("C must have rank <= 2");
    const int64_t cm = cd.size() == 2 ? cd[0] : 1, cn = cd.empty() ? 1 : cd.back();
    if ((cm != 1 && cm != p.m) || (cn != 1 && cn != p.n)) return init.Error("C does not broadcast to [M, N]");
    Broadcast c;
    c.rank = 2;
    c.out_dims[0] = p.m, c.out_dims[1] = p.n;
    c.a_strides[0] = cm == 1 ? 0 : cn;
    c.a_strides[1] = cn == 1 ? 0 : 1;
    p.c = c;
  }
  return p;
}

StatusOr<GemmPlan> PlanMatMul(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 2, 1, 1));
  std::vector<int64_t> ad = init.inputs[0].dims, bd = init.inputs[1].dims;
  if (ad.empty() || bd.empty()) return init.Error("operands must have rank >= 1");
  if (ad.size() == 1) ad.insert(ad.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  GemmPlan p;
  p.m = ad[ad.size() - 2], p.k = ad.back(), p.n = bd.back();
  if (bd[bd.size() - 2] != p.k) return init.Error("inner dimensions differ");
  const size_t rank = std::max(ad.size(), bd.size()) - 2;
  std::vector<int64_t> out(rank), a_stride(rank, 0), b_stride(rank, 0);
  int64_t as = p.m * p.k, bs = p.k * p.n;
  for (size_t i = rank; i-- > 0;) {
    const size_t from_end = rank - i;
    const int64_t da = from_end <= ad.size() - 2 ? ad[ad.size() - 2 - from_end] : 1;
    const int64_t db = from_end <= bd.size() - 2 ? bd[bd.size() - 2 - from_end] : 1;
    if (da != db && da != 1 && db != 1) return init.Error("batch dims do not broadcast");
    out[i] = std::max(da, db);
    a_stride[i] = da == 1 ? 0 : as;
    b_stride[i] = db == 1 ? 0 : bs;
    as *= da, bs *= db;
  }
  p.batch = 1;
  for (int64_t d : out) p.batch *= d;
  p.a_off.assign(static_cast<size_t>(p.batch), 0), p.b_off.assign(static_cast<size_t>(p.batch), 0);
  for (int64_t bi = 0; bi < p.batch; ++bi)
    for (size_t i = rank, rest = static_cast<size_t>(bi); i-- > 0; rest /= static_cast<size_t>(out[i])) {
      p.a_off[bi] += static_cast<int64_t>(rest % static_cast<size_t>(out[i])) * a_stride[i];
      p.b_off[bi] += static_cast<int64_t>(rest % static_cast<size_t>(out[i])) * b_stride[i];
    }
  // One strided batched call when the offsets step evenly (no broadcast, or
  // one operand shared by every batch element).
  p.a_stride = p.batch > 1 ? p.a_off[1] : 0;
  p.b_stride = p.batch > 1 ? p.b_off[1] : 0;
  for (int64_t bi = 0; bi < p.batch && p.strided; ++bi)
    p.strided = p.a_off[bi] == bi * p.a_stride && p.b_off[bi] == bi * p.b_stride;
  return p;
}

StatusOr<std::unique_ptr<Kernel>> MakeGemm(const KernelInit& init) {
  const DType t = init.inputs.empty() ? DType::kUndefined : init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {1, 2}, {0}));
  AMP_ASSIGN_OR_RETURN(GemmPlan p, init.op == OpKind::kGemm ? PlanGemm(init) : PlanMatMul(init));
  if (p.batch * p.m * p.n != init.outputs[0].num_elements())
    return init.Error("output has ", init.outputs[0].num_elements(), " elements, expected ", p.batch * p.m * p.n);
  if (p.k == 0 && p.c && p.beta != 1.0f) return Unimplemented(init.Describe(), ": K = 0 with beta != 1 on CUDA");
  constexpr int64_t kIntMax = 2147483647;
  if (p.m > kIntMax || p.n > kIntMax || p.k > kIntMax || p.batch > kIntMax)
    return init.Error("a GEMM dimension exceeds cuBLAS's int range");
  return std::unique_ptr<Kernel>(std::make_unique<GemmKernel>(std::move(p), t));
}

}  // namespace

void RegisterBlas(Registry& r) {
  r.Add(CudaEntry(OpKind::kGemm, "cublas", MakeGemm));
  r.Add(CudaEntry(OpKind::kMatMul, "cublas", MakeGemm));
}

}  // namespace amptrain::kernels::cuda
