// Mod with fmod=0 on floats (ONNX Mod from opset 28, Python's % on floats):
// a - floor(a / b) * b, the sign of b. Computed as C's exact fmod, shifted by
// b when its sign differs from b's; a zero result takes b's sign. NaN when b
// is 0, a is infinite or either is NaN; an infinite b gives a when a and b
// share a sign, else b. Shared by Mod's shape rule (value propagation) and
// its CPU kernel.
#pragma once

#include <cmath>

namespace amptrain::ir {

template <class T>
T FloorMod(T a, T b) {
  const T r = std::fmod(a, b);
  if (r == T(0)) return std::copysign(T(0), b);
  return (r < T(0)) != (b < T(0)) ? r + b : r;
}

}  // namespace amptrain::ir
