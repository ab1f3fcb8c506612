// Registration of the direct kernel set (kernels/cpu/direct_kernels.h).
#include "kernels/cpu/direct_kernels.h"
#include "kernels/cpu/register.h"

namespace amptrain::kernels::cpu {

namespace direct {

KernelEntry DirectEntry(OpKind op, KernelFactory factory, std::vector<DType> dtypes) {
  KernelEntry e{op, DeviceKind::kCpu, "direct", 20, std::move(dtypes), factory, nullptr};
  e.accepts = [factory](const KernelInit& init) { return factory(init).ok(); };
  return e;
}

}  // namespace direct

void RegisterDirect(Registry& r) {
  direct::RegisterDirectPool(r);
  direct::RegisterDirectElementwise(r);
  direct::RegisterDirectBatchNorm(r);
  direct::RegisterDirectReduce(r);
  direct::RegisterDirectLayerNorm(r);
  direct::RegisterDirectDepthwise(r);
  direct::RegisterDirectErf(r);
  direct::RegisterDirectLoss(r);
  direct::RegisterDirectDropout(r);
  direct::RegisterDirectRnn(r);
  direct::RegisterDirectResize(r);
}

}  // namespace amptrain::kernels::cpu
