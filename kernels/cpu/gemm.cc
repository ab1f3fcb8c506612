// Reference Gemm and MatMul, both as one strided batched product
//   Y[b, m, n] = alpha * sum_k A(b, m, k) * B(b, k, n) + beta * C(m, n)
// accumulated in double.
//   Gemm:   A [M, K] or [K, M] (transA), B [K, N] or [N, K] (transB), optional
//           C broadcast to [M, N]; one batch.
//   MatMul: numpy matmul; 1-D operands are promoted, batch dims broadcast
//           (each batch element's A and B offsets are precomputed).
#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/nn_kernels.h"

namespace amptrain::kernels::cpu::nn {

namespace {

struct GemmPlan {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  std::vector<int64_t> a_off{0}, b_off{0};  // per batch element
  int64_t a_sm = 0, a_sk = 0, b_sk = 0, b_sn = 0;
  double alpha = 1.0, beta = 0.0;
  bool has_c = false;
  int64_t c_sm = 0, c_sn = 0;  // 0 on broadcast dims
};

template <class T>
class GemmReference : public Kernel {
 public:
  GemmReference(GemmPlan plan, int threads) : p_(std::move(plan)), threads_(threads) {}

  Status Run(KernelContext& ctx) override {
    const T* a = ctx.inputs[0].as<const T>();
    const T* b = ctx.inputs[1].as<const T>();
    const T* c = p_.has_c ? ctx.inputs[2].as<const T>() : nullptr;
    T* y = ctx.outputs[0].as<T>();
#pragma omp parallel num_threads(threads_)
    {
      std::vector<double> acc(p_.n);
#pragma omp for collapse(2) schedule(static)
      for (int64_t bi = 0; bi < p_.batch; ++bi) {
        for (int64_t i = 0; i < p_.m; ++i) {
          const T* ab = a + p_.a_off[bi] + i * p_.a_sm;
          const T* bb = b + p_.b_off[bi];
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t kk = 0; kk < p_.k; ++kk) {
            const double av = static_cast<double>(ab[kk * p_.a_sk]);
            const T* brow = bb + kk * p_.b_sk;
            for (int64_t j = 0; j < p_.n; ++j) acc[j] += av * static_cast<double>(brow[j * p_.b_sn]);
          }
          T* yr = y + (bi * p_.m + i) * p_.n;
          for (int64_t j = 0; j < p_.n; ++j) {
            double v = p_.alpha * acc[j];
            if (c) v += p_.beta * static_cast<double>(c[i * p_.c_sm + j * p_.c_sn]);
            yr[j] = static_cast<T>(static_cast<Acc<T>>(v));
          }
        }
      }
    }
    return Status::Ok();
  }

 private:
  GemmPlan p_;
  int threads_;
};

StatusOr<GemmPlan> PlanGemm(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 3, 1, 1));
  const auto& ad = init.inputs[0].dims;
  const auto& bd = init.inputs[1].dims;
  if (ad.size() != 2 || bd.size() != 2) return init.Error("A and B must be 2-D");
  GemmPlan p;
  const bool ta = init.attrs->Int("transA", 0) != 0, tb = init.attrs->Int("transB", 0) != 0;
  AMP_ASSIGN_OR_RETURN(float alpha, init.attrs->GetFloat("alpha", 1.0f));
  AMP_ASSIGN_OR_RETURN(float beta, init.attrs->GetFloat("beta", 1.0f));
  p.alpha = alpha, p.beta = beta;
  p.m = ta ? ad[1] : ad[0];
  p.k = ta ? ad[0] : ad[1];
  p.n = tb ? bd[0] : bd[1];
  if ((tb ? bd[1] : bd[0]) != p.k) return init.Error("inner dimensions differ");
  p.a_sm = ta ? 1 : ad[1], p.a_sk = ta ? ad[1] : 1;
  p.b_sk = tb ? 1 : bd[1], p.b_sn = tb ? bd[1] : 1;
  if (init.inputs.size() > 2 && init.inputs[2].present()) {
    const auto& cd = init.inputs[2].dims;
    if (cd.size() > 2) return init.Error("C must have rank <= 2");
    int64_t cm = cd.size() == 2 ? cd[0] : 1, cn = cd.empty() ? 1 : cd.back();
    if ((cm != 1 && cm != p.m) || (cn != 1 && cn != p.n)) return init.Error("C does not broadcast to [M, N]");
    p.has_c = true;
    p.c_sm = cm == 1 ? 0 : cn;
    p.c_sn = cn == 1 ? 0 : 1;
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
  p.a_sm = p.k, p.a_sk = 1, p.b_sk = p.n, p.b_sn = 1;
  // Broadcast batch dims, right-aligned.
  const size_t rank = std::max(ad.size(), bd.size()) - 2;
  std::vector<int64_t> out(rank), a_stride(rank, 0), b_stride(rank, 0);
  int64_t as = p.m * p.k, bs = p.k * p.n;
  for (size_t i = rank; i-- > 0;) {
    size_t from_end = rank - i;
    int64_t da = from_end <= ad.size() - 2 ? ad[ad.size() - 2 - from_end] : 1;
    int64_t db = from_end <= bd.size() - 2 ? bd[bd.size() - 2 - from_end] : 1;
    if (da != db && da != 1 && db != 1) return init.Error("batch dims do not broadcast");
    out[i] = std::max(da, db);
    a_stride[i] = da == 1 ? 0 : as;
    b_stride[i] = db == 1 ? 0 : bs;
    as *= da, bs *= db;
  }
  p.batch = 1;
  for (int64_t d : out) p.batch *= d;
  p.a_off.assign(p.batch, 0), p.b_off.assign(p.batch, 0);
  for (int64_t bi = 0; bi < p.batch; ++bi) {
    for (size_t i = rank, rest = bi; i-- > 0; rest /= out[i]) {
      p.a_off[bi] += static_cast<int64_t>(rest % out[i]) * a_stride[i];
      p.b_off[bi] += static_cast<int64_t>(rest % out[i]) * b_stride[i];
    }
  }
  return p;
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> MakeGemmReference(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckSameDType(init, 1, init.inputs.size()));
  auto plan = init.op == OpKind::kGemm ? PlanGemm(init) : PlanMatMul(init);
  if (!plan.ok()) return plan.status();
  if (plan->batch * plan->m * plan->n != init.outputs[0].num_elements())
    return init.Error("output has ", init.outputs[0].num_elements(), " elements, expected ",
                      plan->batch * plan->m * plan->n);
  std::unique_ptr<Kernel> kernel;
  AMP_RETURN_IF_ERROR(DispatchFloat(init.inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernel = std::make_unique<GemmReference<T>>(std::move(*plan), Threads(init));
    return Status::Ok();
  }));
  return kernel;
}

}  // namespace amptrain::kernels::cpu::nn
