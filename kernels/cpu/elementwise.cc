#include "kernels/cpu/elementwise.h"

namespace amptrain::kernels::cpu {

const ir::Attributes& AttrsOf(const KernelInit& init) {
  static const ir::Attributes kEmpty;
  return init.attrs ? *init.attrs : kEmpty;
}

Status CheckArity(const KernelInit& init, size_t min_inputs, size_t outputs) {
  if (init.inputs.size() < min_inputs) return init.Error("expected at least ", min_inputs, " inputs, got ", init.inputs.size());
  if (init.outputs.size() < outputs) return init.Error("expected ", outputs, " outputs, got ", init.outputs.size());
  for (size_t i = 0; i < min_inputs; ++i)
    if (!init.inputs[i].present()) return init.Error("input ", i, " is missing");
  return Status::Ok();
}

KernelEntry ReferenceEntry(OpKind op, std::vector<DType> dtypes, KernelFactory factory) {
  KernelEntry e;
  e.op = op;
  e.device = DeviceKind::kCpu;
  e.impl = "reference";
  e.priority = 0;
  e.dtypes = std::move(dtypes);
  e.factory = std::move(factory);
  return e;
}

}  // namespace amptrain::kernels::cpu
