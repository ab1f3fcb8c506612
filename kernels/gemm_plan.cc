#include "kernels/gemm_plan.h"

#include <algorithm>

namespace amptrain::kernels {

namespace {

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
  p.a_sm = p.ta ? 1 : ad[1], p.a_sk = p.ta ? ad[1] : 1;
  p.b_sk = p.tb ? 1 : bd[1], p.b_sn = p.tb ? bd[1] : 1;
  if (init.inputs.size() > 2 && init.inputs[2].present()) {
    const auto& cd = init.inputs[2].dims;
    if (cd.size() > 2) return init.Error("C must have rank <= 2");
    const int64_t cm = cd.size() == 2 ? cd[0] : 1, cn = cd.empty() ? 1 : cd.back();
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
  return p;
}

}  // namespace

StatusOr<GemmPlan> PlanGemmOrMatMul(const KernelInit& init) {
  AMP_ASSIGN_OR_RETURN(GemmPlan p, init.op == OpKind::kGemm ? PlanGemm(init) : PlanMatMul(init));
  if (p.batch * p.m * p.n != init.outputs[0].num_elements())
    return init.Error("output has ", init.outputs[0].num_elements(), " elements, expected ", p.batch * p.m * p.n);
  p.a_stride = p.batch > 1 ? p.a_off[1] : 0;
  p.b_stride = p.batch > 1 ? p.b_off[1] : 0;
  for (int64_t bi = 0; bi < p.batch && p.strided; ++bi)
    p.strided = p.a_off[bi] == bi * p.a_stride && p.b_off[bi] == bi * p.b_stride;
  return p;
}

}  // namespace amptrain::kernels
