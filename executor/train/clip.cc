#include "executor/train/clip.h"

#include <cmath>

namespace amptrain::executor::train {

using ir::DType;
using ir::Tensor;

namespace {

// Element i of a float32/float16/bfloat16 tensor as float; writes back rounded.
float Load(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat16: return ir::HalfToFloat(t.data<uint16_t>()[i]);
    case DType::kBFloat16: return ir::BFloat16ToFloat(t.data<uint16_t>()[i]);
    default: return t.data<float>()[i];
  }
}

void Store(Tensor& t, int64_t i, float v) {
  switch (t.dtype()) {
    case DType::kFloat16: t.data<uint16_t>()[i] = ir::FloatToHalf(v); break;
    case DType::kBFloat16: t.data<uint16_t>()[i] = ir::FloatToBFloat16(v); break;
    default: t.data<float>()[i] = v; break;
  }
}

Status CheckDType(const std::string& name, const Tensor& g) {
  if (g.dtype() == DType::kFloat32 || g.dtype() == DType::kFloat16 || g.dtype() == DType::kBFloat16) return Status::Ok();
  return Unimplemented("gradient clipping: gradient '", name, "' is ", ir::DTypeName(g.dtype()),
                       "; expected float32, float16 or bfloat16");
}

}  // namespace

StatusOr<ClipResult> GlobalGradNorm(const std::map<std::string, Tensor>& grads) {
  ClipResult r;
  double total = 0.0;
  for (const auto& [name, g] : grads) {
    AMP_RETURN_IF_ERROR(CheckDType(name, g));
    const int64_t n = g.num_elements();
    double sum = 0.0;
#pragma omp parallel for reduction(+ : sum) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      double v = Load(g, i);
      sum += v * v;
    }
    // A finite fp32 square sum never overflows fp64; inf/NaN elements show here.
    if (!std::isfinite(sum) && r.finite) {
      r.finite = false;
      r.first_nonfinite = name;
    }
    total += sum;
  }
  r.norm = std::sqrt(total);
  return r;
}

StatusOr<ClipResult> ClipGradNorm(std::map<std::string, Tensor>& grads, double max_norm) {
  if (!std::isfinite(max_norm) || max_norm <= 0.0)
    return InvalidArgument("gradient clipping: max_norm must be finite and > 0, got ", max_norm);
  AMP_ASSIGN_OR_RETURN(ClipResult r, GlobalGradNorm(grads));
  if (!r.finite) return r;
  const double coef = ClipCoefficient(r.norm, max_norm);
  if (coef >= 1.0) return r;
  const float c = static_cast<float>(coef);
  for (auto& [name, g] : grads) {
    const int64_t n = g.num_elements();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) Store(g, i, Load(g, i) * c);
  }
  r.clipped = true;
  return r;
}

}  // namespace amptrain::executor::train
