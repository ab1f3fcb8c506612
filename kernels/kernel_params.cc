// Out-of-line parsers of kernels/kernel_params.h.
#include "kernels/kernel_params.h"

#include <cmath>
#include <cstring>

#include "kernels/dropout_stream.h"

namespace amptrain::kernels {

StatusOr<RandomParams> ParseRandomParams(const KernelInit& init) {
  using ir::OpKind;
  RandomParams p;
  const bool like = init.op == OpKind::kRandomUniformLike || init.op == OpKind::kRandomNormalLike;
  const bool uniform = init.op == OpKind::kRandomUniformLike || init.op == OpKind::kRandomUniform;
  const bool bernoulli = init.op == OpKind::kBernoulli;
  const size_t inputs = like || bernoulli ? 1 : 0;
  if (init.inputs.size() != inputs || init.outputs.size() != 1)
    return init.Error("expects ", inputs, " input(s) and one output");
  if (bernoulli) {
    p.kind = RandomKind::kBernoulli;
    if (init.inputs[0].dims != init.outputs[0].dims) return init.Error("P and the output differ in shape");
  } else if (uniform) {
    p.kind = RandomKind::kUniform;
    AMP_ASSIGN_OR_RETURN(float low, init.attrs->GetFloat("low", 0.0f));
    AMP_ASSIGN_OR_RETURN(float high, init.attrs->GetFloat("high", 1.0f));
    if (!(std::isfinite(low) && std::isfinite(high) && low <= high))
      return init.Error("low ", low, " and high ", high, " do not bound a finite interval");
    p.a = low;
    p.b = static_cast<double>(high) - static_cast<double>(low);
  } else {
    p.kind = RandomKind::kNormal;
    AMP_ASSIGN_OR_RETURN(float mean, init.attrs->GetFloat("mean", 0.0f));
    AMP_ASSIGN_OR_RETURN(float scale, init.attrs->GetFloat("scale", 1.0f));
    if (!(std::isfinite(mean) && std::isfinite(scale))) return init.Error("mean and scale must be finite");
    p.a = mean;
    p.b = scale;
  }
  p.node_seed = init.seed;
  if (init.attrs->Has("seed")) {
    AMP_ASSIGN_OR_RETURN(float s, init.attrs->GetFloat("seed", 0.0f));
    uint32_t bits = 0;
    std::memcpy(&bits, &s, sizeof bits);
    p.node_seed = DropoutSeed(0x5eedull, bits);
  }
  return p;
}

}  // namespace amptrain::kernels
