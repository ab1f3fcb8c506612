// Synthetic images with learnable class structure.
//
// Class k has a prototype per channel, a plane wave
//   P_k,c(h, w) = 128 + 70 sin(fx w + fy h + phase)
// with (fx, fy, phase) drawn from (seed, k, c); sample i draws its class from
// (seed, i) and adds noise of standard deviation ~29 (a sum of four uniforms)
// from (seed, i), rounded and clamped to uint8. Sample i depends only on
// (seed, i, the shape), never on N, so growing N only appends samples.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "executor/data/loaders.h"
#include "executor/data/rng.h"

namespace amptrain::executor::data {

using ir::DType;
using ir::Tensor;

namespace {

enum Stream : uint64_t { kPrototype = 1, kLabel = 2, kNoise = 3 };

StatusOr<int64_t> IntParam(const std::map<std::string, std::string>& params, const std::string& key, int64_t def,
                           int64_t min, int64_t max) {
  auto it = params.find(key);
  if (it == params.end()) return def;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0' || errno != 0 || v < min || v > max)
    return InvalidArgument("synthetic: ", key, "=", it->second, " is not an integer in [", min, ", ", max, "]");
  return static_cast<int64_t>(v);
}

}  // namespace

StatusOr<Dataset> MakeSynthetic(const std::map<std::string, std::string>& params, const std::string& split) {
  AMP_ASSIGN_OR_RETURN(int64_t n, IntParam(params, "N", 1024, 1, int64_t{1} << 24));
  AMP_ASSIGN_OR_RETURN(int64_t c, IntParam(params, "C", 1, 1, 64));
  AMP_ASSIGN_OR_RETURN(int64_t h, IntParam(params, "H", 28, 1, 1024));
  AMP_ASSIGN_OR_RETURN(int64_t w, IntParam(params, "W", 28, 1, 1024));
  AMP_ASSIGN_OR_RETURN(int64_t classes, IntParam(params, "classes", 10, 1, 1 << 16));
  AMP_ASSIGN_OR_RETURN(int64_t seed, IntParam(params, "seed", 0, 0, INT64_MAX));
  const int64_t plane = h * w, sample = c * plane;
  if (static_cast<uint64_t>(n) * static_cast<uint64_t>(sample) > (uint64_t{2} << 30))
    return InvalidArgument("synthetic: N x C x H x W = ", n, " x ", sample, " bytes is over the 2 GiB limit");
  if (static_cast<uint64_t>(classes) * static_cast<uint64_t>(sample) > (uint64_t{1} << 28))
    return InvalidArgument("synthetic: classes x C x H x W is over the limit of 2^28 prototype values");

  std::vector<float> prototypes(classes * sample);
  for (int64_t k = 0; k < classes; ++k) {
    for (int64_t ch = 0; ch < c; ++ch) {
      Rng rng{static_cast<uint64_t>(seed), kPrototype, static_cast<uint64_t>(k), static_cast<uint64_t>(ch)};
      const float fx = (rng.Uniform() * 2 - 1) * 0.6f, fy = (rng.Uniform() * 2 - 1) * 0.6f;
      const float phase = rng.Uniform() * 6.2831853f;
      float* p = prototypes.data() + k * sample + ch * plane;
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x) p[y * w + x] = 128.0f + 70.0f * std::sin(fx * x + fy * y + phase);
    }
  }

  Dataset all;
  all.num_classes = classes;
  all.sample_dims = {c, h, w};
  AMP_ASSIGN_OR_RETURN(all.samples, Tensor::Zeros(DType::kUInt8, {n, c, h, w}));
  AMP_ASSIGN_OR_RETURN(all.labels, Tensor::Zeros(DType::kInt64, {n}));
  uint8_t* images = all.samples.data<uint8_t>();
  int64_t* labels = all.labels.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t s = static_cast<uint64_t>(seed), idx = static_cast<uint64_t>(i);
    labels[i] = static_cast<int64_t>(Rng{s, kLabel, idx}.Below(static_cast<uint64_t>(classes)));
    Rng noise{s, kNoise, idx};
    const float* p = prototypes.data() + labels[i] * sample;
    uint8_t* out = images + i * sample;
    for (int64_t j = 0; j < sample; ++j) {
      float e = (noise.Uniform() + noise.Uniform() + noise.Uniform() + noise.Uniform() - 2.0f) * 50.0f;
      out[j] = static_cast<uint8_t>(std::clamp(std::nearbyint(p[j] + e), 0.0f, 255.0f));
    }
  }
  return TakeSplit(all, split);
}

}  // namespace amptrain::executor::data
