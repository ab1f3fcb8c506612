// Internal helpers shared by the elementwise reference kernels
// (kernels/cpu/unary.cc, cast.cc, binary.cc, reduce.cc, softmax.cc).
#pragma once

#include <memory>
#include <type_traits>

#include "kernels/cpu/element.h"
#include "kernels/kernel.h"

namespace amptrain::kernels::cpu {

// Every numeric storage type (floats, int64/int32/int8/uint8), not bool.
template <class Fn>
Status DispatchArith(DType t, Fn&& fn) {
  switch (t) {
    case DType::kInt8: return fn(Tag<int8_t>{});
    case DType::kUInt8: return fn(Tag<uint8_t>{});
    default: return DispatchNumeric(t, std::forward<Fn>(fn));
  }
}

// The dtypes of DispatchArith, for KernelEntry::dtypes.
inline std::vector<DType> ArithDTypes() {
  return {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64,
          DType::kInt64,   DType::kInt32,   DType::kInt8,     DType::kUInt8};
}
inline std::vector<DType> FloatDTypes() { return {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64}; }

inline int Threads(const KernelInit& init) { return init.threads > 1 ? init.threads : 1; }

// Element i of an int32 or int64 tensor (an axis, a length, an index).
inline int64_t IntAt(const ir::TensorView& v, int64_t i) {
  return v.dtype == DType::kInt32 ? v.as<const int32_t>()[i] : v.as<const int64_t>()[i];
}

// The node's attributes, or an empty set when the init has none.
const ir::Attributes& AttrsOf(const KernelInit& init);

// Error unless the init has at least `min_inputs` inputs and `outputs` outputs.
Status CheckArity(const KernelInit& init, size_t min_inputs, size_t outputs);

// -x without signed-overflow UB (integers wrap).
template <class A>
A Negate(A x) {
  if constexpr (std::is_integral_v<A>) return static_cast<A>(0 - static_cast<std::make_unsigned_t<A>>(x));
  else return -x;
}

// Entry with impl "reference", priority 0.
KernelEntry ReferenceEntry(OpKind op, std::vector<DType> dtypes, KernelFactory factory);

// Cast kernels (kernels/cpu/cast.cc), registered by RegisterReferenceUnary.
void RegisterReferenceCast(Registry& r);
// Softmax, LogSoftmax, LayerNormalization (kernels/cpu/softmax.cc), registered by RegisterReferenceReduce.
void RegisterReferenceNorm(Registry& r);

}  // namespace amptrain::kernels::cpu
