// Host-side helpers of the CUDA Kernel classes (kernels/cuda/*_kernels.cc):
// the registry entry, the dtype switches to the launchers' Elem and Num,
// element-size checks, the run's stream, and per-family registration
// functions.
#pragma once

#include <cuda_runtime.h>

#include <optional>
#include <vector>

#include "kernels/cuda/device.h"
#include "kernels/cuda/launch.h"
#include "kernels/kernel.h"

namespace amptrain::kernels::cuda {

// fp32, fp16, bf16: the dtypes every CUDA kernel takes.
inline std::vector<DType> CudaFloatDTypes() { return {DType::kFloat32, DType::kFloat16, DType::kBFloat16}; }

// The launchers' element type of `t`, nullopt for any other dtype.
inline std::optional<Elem> ElemOf(DType t) {
  switch (t) {
    case DType::kFloat32: return Elem::kF32;
    case DType::kFloat16: return Elem::kF16;
    case DType::kBFloat16: return Elem::kBF16;
    default: return std::nullopt;
  }
}

// The stream of the run (the legacy default stream in direct tests without one).
inline cudaStream_t StreamOf(const KernelContext& ctx) {
  return ctx.run ? static_cast<cudaStream_t>(ctx.run->stream) : nullptr;
}

// Output 0 = input 0 (one device-to-device copy unless they alias).
inline Status CopyInputToOutput(const KernelContext& ctx) {
  if (ctx.outputs[0].data != ctx.inputs[0].data && ctx.outputs[0].nbytes() > 0)
    CUDA_CHECK(cudaMemcpyAsync(ctx.outputs[0].data, ctx.inputs[0].data, ctx.outputs[0].nbytes(),
                               cudaMemcpyDeviceToDevice, StreamOf(ctx)));
  return Status::Ok();
}

// The launchers' Num of `t` (fp32/fp16/bf16, int32, int64), nullopt for
// any other dtype.
inline std::optional<Num> NumOf(DType t) {
  switch (t) {
    case DType::kFloat32: return Num::kF32;
    case DType::kFloat16: return Num::kF16;
    case DType::kBFloat16: return Num::kBF16;
    case DType::kInt32: return Num::kI32;
    case DType::kInt64: return Num::kI64;
    default: return std::nullopt;
  }
}

// The launchers' Num of `t`, the 1-byte integers included (NumOf above
// has fp32/fp16/bf16, int32, int64 only; bool: its bytes, as kU8), nullopt
// for others.
inline std::optional<Num> AnyNumOf(DType t) {
  switch (t) {
    case DType::kFloat32: return Num::kF32;
    case DType::kFloat16: return Num::kF16;
    case DType::kBFloat16: return Num::kBF16;
    case DType::kInt8: return Num::kI8;
    case DType::kUInt8: return Num::kU8;
    case DType::kBool: return Num::kU8;
    case DType::kInt32: return Num::kI32;
    case DType::kInt64: return Num::kI64;
    default: return std::nullopt;
  }
}

// The Num a scatter with reduction `op` computes in: for kNone none (the
// values are moved as bytes; kU8 stands in), else fp32/fp16/bf16, int32 or
// int64, an error naming `t` for any other dtype.
inline StatusOr<Num> ScatterNum(const KernelInit& init, ScatterOp op, DType t) {
  if (op == ScatterOp::kNone) return Num::kU8;
  const std::optional<Num> n = NumOf(t);
  if (!n) return init.Error("reduction other than none needs fp32/fp16/bf16, int32 or int64, got ", ir::DTypeName(t));
  return *n;
}

// Element sizes the byte-moving launchers take (DispatchBytes in elem.cuh).
inline bool CopyableSize(size_t bytes) { return bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8; }

// Error unless `bytes` is a CopyableSize.
inline Status CheckCopyable(const KernelInit& init, size_t bytes) {
  if (!CopyableSize(bytes)) return init.Error("element size ", bytes, " is not supported");
  return Status::Ok();
}

// The bits written for a bad index (Gather, GatherND, ScatterND): the
// dtype's quiet NaN, else 0.
inline uint64_t BadBits(DType t) {
  switch (t) {
    case DType::kFloat32: return 0x7fc00000u;
    case DType::kFloat16: return 0x7e00u;
    case DType::kBFloat16: return 0x7fc0u;
    case DType::kFloat64: return 0x7ff8000000000000ull;
    default: return 0;
  }
}

// A DeviceKind::kCuda entry for fp32/fp16/bf16 (or `dtypes`).
inline KernelEntry CudaEntry(OpKind op, const char* impl, KernelFactory factory, int priority = 10,
                             std::vector<DType> dtypes = CudaFloatDTypes()) {
  KernelEntry e;
  e.op = op;
  e.device = DeviceKind::kCuda;
  e.impl = impl;
  e.priority = priority;
  e.dtypes = std::move(dtypes);
  e.factory = std::move(factory);
  return e;
}

// Error unless every present input and output listed has dtype `t` (an
// absent output: one the executor skips, KernelEntry::skips_unused_outputs).
Status CheckDTypes(const KernelInit& init, DType t, const std::vector<size_t>& inputs,
                   const std::vector<size_t>& outputs);

// Numpy broadcasting of `in` to `out` (dims right-aligned, each 1 or equal),
// and the element strides of `in` read at `out`'s indices: 0 along broadcast
// dims (Broadcast::a_strides/b_strides).
bool BroadcastsTo(const std::vector<int64_t>& in, const std::vector<int64_t>& out);
void BroadcastStrides(const std::vector<int64_t>& in, const std::vector<int64_t>& out, int64_t* strides);
// The broadcast of the inputs `operands` (read as a, b, c: a_strides,
// b_strides, c_strides) to output 0's dims, up to rank 8; nullopt when every
// one has the output's dims. Errors name the input that does not broadcast.
StatusOr<std::optional<Broadcast>> PlanBroadcast(const KernelInit& init, const std::vector<size_t>& operands);

// Per-family registration, called by RegisterCudaKernels (register.cc).
void RegisterElementwise(Registry& r);  // elementwise_kernels.cc: unary, binary, Pow, pointwise grads, Cast, Identity
void RegisterShape(Registry& r);        // shape_kernels.cc: Reshape, Flatten, Squeeze, Unsqueeze, Expand, Tile,
                                        // Shape, ConstantOfShape, Constant, Range
void RegisterMovement(Registry& r);     // movement_kernels.cc: Transpose, Slice, Concat, Split, Gather(+Grad), Where
void RegisterNorm(Registry& r);         // norm_kernels.cc: Softmax, LogSoftmax, LayerNormalization and their grads
void RegisterDropout(Registry& r);      // dropout_kernels.cc: Dropout, DropoutGrad, random ops
void RegisterReduce(Registry& r);       // reduce_kernels.cc: ReduceSum, ReduceMean, ReduceMax, ReduceL2, ReduceSumTo,
                                        // ArgMax, ArgMin
void RegisterSteps(Registry& r);        // step_kernels.cc: GradCheck, SgdStep, AdamStep
void RegisterLoss(Registry& r);         // loss_kernels.cc: SoftmaxCrossEntropyLoss, MeanSquaredError, their grads
void RegisterPadResize(Registry& r);    // pad_resize_kernels.cc: Pad, Resize, ResizeGrad
void RegisterScatterND(Registry& r);    // scatter_nd_kernels.cc: GatherND, ScatterND and their grads
void RegisterElements(Registry& r);     // elements_kernels.cc: GatherElements, ScatterElements and their grads
void RegisterBlas(Registry& r);         // blas_kernels.cc: Gemm, MatMul (cuBLAS)
void RegisterCudnn(Registry& r);        // cudnn_*.cc: Conv, ConvGrad, BatchNormalization(+Grad), pools(+Grad)

}  // namespace amptrain::kernels::cuda
