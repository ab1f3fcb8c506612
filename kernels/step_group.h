// The operand layout of the fused optimizer-step ops (ir/ops.def,
// "Optimizer-step ops"), checked once for every device's kernels
// (kernels/cpu/step_kernels.cc, kernels/cuda/step_kernels.cc):
//   SgdStep:  groups of (p, g, momentum buffer, low copy), then hyper [4]
//   AdamStep: groups of (p, g, m, v, low copy), then hyper [5]
#pragma once

#include <cstddef>

#include "kernels/kernel.h"

namespace amptrain::kernels {

// Inputs per parameter of init.op's groups (4 for SgdStep, 5 for AdamStep),
// which is also the count of hyper-parameters.
size_t StepGroupSize(OpKind op);

// Every parameter of a group has the dims of its gradient, state and low
// copy (the group's last input, optional: fp16/bf16 of an fp32 parameter);
// the state is float32 (SGD with momentum and Adam: present); the gradients
// share one dtype: the parameters', or a 2-byte one for fp32 parameters
// (returned); the hyper-parameters are float32 with StepGroupSize values.
StatusOr<DType> CheckStepGroups(const KernelInit& init);

}  // namespace amptrain::kernels
