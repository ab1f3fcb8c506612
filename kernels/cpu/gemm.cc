// Reference Gemm and MatMul on the shared plan (kernels/gemm_plan.h),
// accumulated in double.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/nn_kernels.h"
#include "kernels/gemm_plan.h"

namespace amptrain::kernels::cpu::nn {

namespace {

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

}  // namespace

StatusOr<std::unique_ptr<Kernel>> MakeGemmReference(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckSameDType(init, 1, init.inputs.size()));
  auto plan = PlanGemmOrMatMul(init);
  if (!plan.ok()) return plan.status();
  std::unique_ptr<Kernel> kernel;
  AMP_RETURN_IF_ERROR(DispatchFloat(init.inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernel = std::make_unique<GemmReference<T>>(std::move(*plan), Threads(init));
    return Status::Ok();
  }));
  return kernel;
}

}  // namespace amptrain::kernels::cpu::nn
