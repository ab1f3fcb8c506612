// The data pipeline's random numbers: counter-based and platform-independent
// (no std:: distributions, whose output differs between standard libraries),
// so shuffles, augmentations and synthetic data are the same everywhere.
#pragma once

#include <cstdint>
#include <initializer_list>

namespace amptrain::executor::data {

// SplitMix64's finalizer: a bijective 64-bit mixer.
inline uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A stream seeded from several words (e.g. seed, epoch, position, purpose).
class Rng {
 public:
  Rng(std::initializer_list<uint64_t> words) {
    for (uint64_t w : words) state_ = Mix64(state_ ^ w);
  }
  uint64_t Next() { return Mix64(state_ += 0x9e3779b97f4a7c15ull); }
  // Uniform in [0, n), n >= 1 (Lemire's multiply-shift; the bias is < n / 2^64).
  uint64_t Below(uint64_t n) { return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64); }
  // Uniform in [0, 1).
  float Uniform() { return static_cast<float>(Next() >> 40) * (1.0f / 16777216.0f); }

 private:
  uint64_t state_ = 0x6a09e667f3bcc909ull;
};

}  // namespace amptrain::executor::data
