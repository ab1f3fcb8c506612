// TEMPORARY during the foundation build-out: weak empty registrations so the
// library links while kernel families land. Deleted once every family exists.
#include "kernels/cpu/register.h"

namespace amptrain::kernels::cpu {
__attribute__((weak)) void RegisterReferenceUnary(Registry&) {}
__attribute__((weak)) void RegisterReferenceBinary(Registry&) {}
__attribute__((weak)) void RegisterReferenceReduce(Registry&) {}
__attribute__((weak)) void RegisterReferenceShape(Registry&) {}
__attribute__((weak)) void RegisterReferenceNN(Registry&) {}
__attribute__((weak)) void RegisterOneDnn(Registry&) {}
__attribute__((weak)) void RegisterReferenceTraining(Registry&) {}
__attribute__((weak)) void RegisterOneDnnTraining(Registry&) {}
}  // namespace amptrain::kernels::cpu
