// Internal to the direct CPU kernels (kernels/cpu/direct_*.cc): hand-written
// loops for the ops where oneDNN 2.6 on plain layouts, or the widened
// (convert, run fp32, convert back) path, is slow. They take fp32 and the
// 2-byte float types, convert 2-byte values in registers or thread-local
// rows, and give the same bits as the reference kernels unless a file's
// header says otherwise. impl "direct", priority 20: above oneDNN (10) and
// its widened twin (5); a configuration a kernel does not take is declined
// at creation and the next implementation runs.
#pragma once

#include <memory>

#include "kernels/cpu/element.h"
#include "kernels/kernel.h"

namespace amptrain::kernels::cpu::direct {

// fn(Tag<T>) for the storage type T of `t` (fp32, fp16, bf16).
template <class Fn>
StatusOr<std::unique_ptr<Kernel>> WithDType(DType t, Fn&& fn) {
  switch (t) {
    case DType::kFloat32: return fn(Tag<float>{});
    case DType::kFloat16: return fn(Tag<Half>{});
    case DType::kBFloat16: return fn(Tag<BFloat16>{});
    default: return Unimplemented("the direct kernels take fp32, fp16 and bf16, not ", ir::DTypeName(t));
  }
}

// new K<T>(args...) for the storage type T of `t`.
template <template <class> class K, class... Args>
StatusOr<std::unique_ptr<Kernel>> ForDType(DType t, Args&&... args) {
  return WithDType(t, [&](auto tag) -> StatusOr<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(new K<typename decltype(tag)::type>(std::forward<Args>(args)...));
  });
}

inline int Threads(const KernelInit& init) { return init.threads > 1 ? init.threads : 1; }

// Entry with impl "direct", priority 20, for fp32/fp16/bf16 (or `dtypes`);
// its `accepts` runs `factory`, so a declined configuration falls through.
KernelEntry DirectEntry(OpKind op, KernelFactory factory,
                        std::vector<DType> dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16});

void RegisterDirectPool(Registry& r);         // direct_pool.cc: MaxPool, AveragePool, GlobalAveragePool, MaxPoolGrad (2-D)
void RegisterDirectElementwise(Registry& r);  // direct_elementwise.cc: Relu, ReluGrad, Cast fp32 <-> 2-byte
void RegisterDirectBatchNorm(Registry& r);
void RegisterDirectDropout(Registry& r);      // direct_dropout.cc: Dropout (training), DropoutGrad
void RegisterDirectErf(Registry& r);          // direct_erf.cc: Erf, UnaryGrad of Erf (GELU)
void RegisterDirectReduce(Registry& r);       // direct_reduce.cc: ReduceSumTo (leading/trailing axes summed)    // direct_batchnorm.cc: BatchNormalization and its grad, fp32 params

}  // namespace amptrain::kernels::cpu::direct
