// Host-side parsing and validation of op parameters shared by the CPU
// reference kernels (kernels/cpu/) and the CUDA ones (kernels/cuda/), so the
// two backends accept the same attributes with the same errors.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "kernels/kernel.h"

namespace amptrain::kernels {

// ScatterND's "reduction" attribute as E, an enum with kNone, kAdd, kMul,
// kMax and kMin (the CPU's Reduction, the CUDA launchers' ScatterOp).
template <class E>
StatusOr<E> ParseScatterReduction(const KernelInit& init) {
  AMP_ASSIGN_OR_RETURN(std::string r, init.attrs->GetString("reduction", "none"));
  if (r == "none") return E::kNone;
  if (r == "add") return E::kAdd;
  if (r == "mul") return E::kMul;
  if (r == "max") return E::kMax;
  if (r == "min") return E::kMin;
  return init.Error("reduction '", r, "' is not one of none, add, mul, max, min");
}

// GatherND's "batch_dims" for data of rank data_rank and indices (input 1):
// in [0, min of the two ranks).
inline StatusOr<size_t> ParseBatchDims(const KernelInit& init, size_t data_rank) {
  AMP_ASSIGN_OR_RETURN(int64_t b, init.attrs->GetInt("batch_dims", 0));
  const size_t q = init.inputs[1].dims.size();
  if (b < 0 || static_cast<size_t>(b) >= std::min(q, data_rank))
    return init.Error("batch_dims ", b, " is outside [0, ", std::min(q, data_rank), ")");
  return static_cast<size_t>(b);
}

// Shape's [start, end) over an input of rank r: negative bounds count from
// the end, both are clamped to [0, r], and end is at least start.
inline void ResolveShapeRange(int64_t r, int64_t* start, int64_t* end) {
  if (*start < 0) *start += r;
  if (*end < 0) *end += r;
  *start = std::clamp<int64_t>(*start, 0, r);
  *end = std::max(std::clamp<int64_t>(*end, 0, r), *start);
}

// The "value" of ConstantOfShape (`fill`: one element, default fp32 0) or
// Constant (required, output 0's element count), of output 0's dtype.
inline StatusOr<ir::Tensor> ConstantValue(const KernelInit& init, bool fill) {
  ir::Tensor value = ir::Tensor::Floats({0.0f}, {1});
  if (init.attrs && init.attrs->Has("value")) {
    AMP_ASSIGN_OR_RETURN(value, init.attrs->GetTensor("value"));
  } else if (!fill) {
    return init.Error("missing tensor attribute 'value'");
  }
  if (value.dtype() != init.outputs[0].dtype) return init.Error("value has dtype ", ir::DTypeName(value.dtype()));
  if (fill && value.num_elements() != 1) return init.Error("value must hold one element");
  if (!fill && value.num_elements() != init.outputs[0].num_elements()) return init.Error("value does not match the output");
  return value;
}

// The parameters of a random op (RandomUniformLike, RandomNormalLike,
// RandomUniform, RandomNormal, Bernoulli; kernels/cpu/random.cc has the
// definition): the draw, its affine map a + b * (draw) (uniform: low and
// high - low; normal: mean and scale; Bernoulli: unused) and the node seed,
// the bits of the ONNX `seed` attribute where the model sets one (mixed, so
// that seed 0 is not KernelInit::seed 0), else KernelInit::seed. Also checks
// the arity (one input for the *Like ops and Bernoulli, none for the others)
// and that Bernoulli's P has the output's dims.
enum class RandomKind { kUniform, kNormal, kBernoulli };
struct RandomParams {
  RandomKind kind = RandomKind::kUniform;
  double a = 0.0, b = 1.0;
  uint64_t node_seed = 0;
};
StatusOr<RandomParams> ParseRandomParams(const KernelInit& init);

}  // namespace amptrain::kernels
