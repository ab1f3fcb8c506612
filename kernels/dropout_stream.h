// Dropout's random stream, one definition for every device's kernel
// (kernels/cpu/dropout.cc, kernels/cuda/dropout.cu), so that both draw the
// same mask for the same seeds: element i of a run is kept when
//   DropoutUniform(DropoutSeed(node seed, run seed), i) >= ratio.
// Counter-based (a pure function of the seed and the element index): the
// mask does not depend on the thread count or the launch geometry. 64-bit
// integer arithmetic only, and an exact conversion to double.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define AMP_HOST_DEVICE __host__ __device__
#else
#define AMP_HOST_DEVICE
#endif

namespace amptrain::kernels {

// splitmix64 finalizer of (seed, index): a uniform double in [0, 1) with 53
// random bits.
inline AMP_HOST_DEVICE double DropoutUniform(uint64_t seed, uint64_t index) {
  uint64_t z = seed + (index + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

// The seed of one run: the node's (KernelInit::seed) alone when the run's
// (KernelContext::seed) is 0, else splitmix64 of their mix (a fresh mask per
// training step).
inline uint64_t DropoutSeed(uint64_t node_seed, uint64_t run_seed) {
  if (run_seed == 0) return node_seed;
  uint64_t z = node_seed ^ (run_seed * 0xd1b54a32d192ed03ull + 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace amptrain::kernels
