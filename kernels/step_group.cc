#include "kernels/step_group.h"

namespace amptrain::kernels {

size_t StepGroupSize(OpKind op) { return op == OpKind::kSgdStep ? 4 : 5; }

StatusOr<DType> CheckStepGroups(const KernelInit& init) {
  if (!init.attrs) return init.Error("no attributes");
  const size_t per = StepGroupSize(init.op);
  if (init.inputs.empty() || (init.inputs.size() - 1) % per != 0)
    return init.Error(init.inputs.size(), " inputs; expected groups of ", per, " and the hyper-parameters");
  const DType p = KeyDType(init), g = init.inputs.size() > 1 ? init.inputs[1].dtype : p;
  if (g != p && !(p == DType::kFloat32 && (g == DType::kFloat16 || g == DType::kBFloat16)))
    return init.Error(ir::DTypeName(p), " parameters with ", ir::DTypeName(g),
                      " gradients; the gradients must be of the parameters' dtype, or fp16/bf16 for fp32 ones");
  const bool sgd = init.op == OpKind::kSgdStep;
  const bool momentum = sgd && init.attrs->Float("momentum", 0.0f) != 0.0f;
  for (size_t i = 0; i + 1 < init.inputs.size(); i += per) {
    if (init.inputs[i].dtype != p || init.inputs[i + 1].dtype != g)
      return init.Error("parameter input ", i, " and its gradient are not ", ir::DTypeName(p), " and ",
                        ir::DTypeName(g), " as the group's first");
    for (size_t s = i + 1; s < i + per; ++s)
      if (init.inputs[s].present() && init.inputs[s].dims != init.inputs[i].dims)
        return init.Error("input ", s, " does not have the dims of parameter input ", i);
    for (size_t s = i + 2; s + 1 < i + per; ++s)
      if (init.inputs[s].present() && init.inputs[s].dtype != DType::kFloat32)
        return init.Error("optimizer state input ", s, " must be float32");
    if (momentum && !init.inputs[i + 2].present())
      return init.Error("SGD with momentum needs a momentum buffer for input ", i);
    if (!sgd && (!init.inputs[i + 2].present() || !init.inputs[i + 3].present()))
      return init.Error("Adam needs both moments for parameter input ", i);
    const DType low = init.inputs[i + per - 1].dtype;
    if (low != DType::kUndefined && (p != DType::kFloat32 || (low != DType::kFloat16 && low != DType::kBFloat16)))
      return init.Error("the low copy of parameter input ", i, " is ", ir::DTypeName(low),
                        "; it must be fp16 or bf16, of an fp32 parameter");
  }
  const TensorSpec& hyper = init.inputs.back();
  if (hyper.dtype != DType::kFloat32 || hyper.num_elements() < static_cast<int64_t>(per))
    return init.Error("the hyper-parameter input must be float32 with ", per, " values, got ",
                      ir::DTypeName(hyper.dtype), " with ", hyper.num_elements());
  return g;
}

}  // namespace amptrain::kernels
