// Internal to the CPU NN kernels: the reference factories registered by
// kernels/cpu/nn_register.cc, one per op, and their shared helpers.
//
// Reference kernels: plain loops over any spatial rank, every attribute, all
// float dtypes, accumulating in double; outer loops run on OpenMP with
// KernelInit::threads threads. They validate at creation; Run assumes it.
#pragma once

#include <memory>

#include "ir/infer/conv_geometry.h"
#include "kernels/cpu/element.h"
#include "kernels/kernel.h"

namespace amptrain::kernels::cpu::nn {

inline int Threads(const KernelInit& init) { return init.threads > 1 ? init.threads : 1; }

using kernels::CheckArity;
// Error unless present inputs `from`.. have input 0's dtype.
Status CheckSameDType(const KernelInit& init, size_t from, size_t to);

StatusOr<std::unique_ptr<Kernel>> MakeConvReference(const KernelInit& init);           // conv.cc
StatusOr<std::unique_ptr<Kernel>> MakeConvTransposeReference(const KernelInit& init);  // conv_transpose.cc
StatusOr<std::unique_ptr<Kernel>> MakeFusedConvReference(const KernelInit& init);      // fused_conv.cc
StatusOr<std::unique_ptr<Kernel>> MakePoolReference(const KernelInit& init);       // pool.cc: Max/Average/GlobalAverage
StatusOr<std::unique_ptr<Kernel>> MakeBatchNormReference(const KernelInit& init);  // batchnorm.cc
StatusOr<std::unique_ptr<Kernel>> MakeDropoutReference(const KernelInit& init);    // dropout.cc
StatusOr<std::unique_ptr<Kernel>> MakeGemmReference(const KernelInit& init);       // gemm.cc: Gemm and MatMul
StatusOr<std::unique_ptr<Kernel>> MakeGridSampleReference(const KernelInit& init);  // grid_sample.cc: GridSample(Grad)
StatusOr<std::unique_ptr<Kernel>> MakeAffineGridReference(const KernelInit& init);  // grid_sample.cc

// The Conv/ConvTranspose loop (conv.cc) for a validated init and resolved
// geometry; `transposed`: W is [C, M/group, k...] and the table is transposed.
StatusOr<std::unique_ptr<Kernel>> MakeGatherConv(const KernelInit& init, const ir::WindowGeometry& g, int64_t group,
                                                 bool transposed);

}  // namespace amptrain::kernels::cpu::nn
