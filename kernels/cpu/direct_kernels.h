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

// new K<T>(args...) for the storage type T of `t` (fp32, fp16, bf16).
template <template <class> class K, class... Args>
StatusOr<std::unique_ptr<Kernel>> ForDType(DType t, Args&&... args) {
  switch (t) {
    case DType::kFloat32: return std::unique_ptr<Kernel>(new K<float>(std::forward<Args>(args)...));
    case DType::kFloat16: return std::unique_ptr<Kernel>(new K<Half>(std::forward<Args>(args)...));
    case DType::kBFloat16: return std::unique_ptr<Kernel>(new K<BFloat16>(std::forward<Args>(args)...));
    default: return Unimplemented("the direct kernels take fp32, fp16 and bf16, not ", ir::DTypeName(t));
  }
}

inline int Threads(const KernelInit& init) { return init.threads > 1 ? init.threads : 1; }

// Entry with impl "direct", priority 20, for fp32/fp16/bf16 (or `dtypes`);
// its `accepts` runs `factory`, so a declined configuration falls through.
KernelEntry DirectEntry(OpKind op, KernelFactory factory,
                        std::vector<DType> dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16});

void RegisterDirectPool(Registry& r);         // direct_pool.cc: MaxPool, AveragePool, MaxPoolGrad (2-D)
void RegisterDirectElementwise(Registry& r);  // direct_elementwise.cc: Relu, ReluGrad, Cast fp32 <-> 2-byte
void RegisterDirectBatchNorm(Registry& r);    // direct_batchnorm.cc: BatchNormalization and its grad, fp32 params

}  // namespace amptrain::kernels::cpu::direct
