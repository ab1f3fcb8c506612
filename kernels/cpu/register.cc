// Registration of the CPU kernel sets, one function per family, called
// explicitly from Registry::Global(). No static initializers.
#include "kernels/cpu/register.h"

namespace amptrain::kernels {

void RegisterCpuReferenceKernels(Registry& r) {
  cpu::RegisterReferenceUnary(r);
  cpu::RegisterReferenceBinary(r);
  cpu::RegisterReferenceReduce(r);
  cpu::RegisterReferenceShape(r);
  cpu::RegisterReferenceNN(r);
  cpu::RegisterReferenceRnn(r);
  cpu::RegisterReferenceScatterND(r);
  cpu::RegisterReferenceRandom(r);
  cpu::RegisterReferenceSpectral(r);
  cpu::RegisterReferenceRoiAlign(r);
  cpu::RegisterReferenceQuantize(r);
  cpu::RegisterReferenceTraining(r);
  cpu::RegisterStepKernels(r);
}

void RegisterCpuOneDnnKernels(Registry& r) {
  cpu::RegisterOneDnn(r);
  cpu::RegisterOneDnnTraining(r);
  cpu::RegisterDirect(r);
}

}  // namespace amptrain::kernels
