// Keys' cubic convolution kernel with coefficient a (-0.75: ONNX Resize's
// default and PyTorch's grid_sample / bicubic upsampling; -0.5: PyTorch's
// antialiased bicubic), shared by Resize's taps (kernels/resize_taps.cc, in
// double) and GridSample's bicubic mode (kernels/cpu/grid_sample.cc, in the
// kernel's accumulation type, as PyTorch computes it).
#pragma once

#include <cmath>

namespace amptrain::kernels {

// The weight of a sample at distance x: support |x| < 2.
template <class A>
A CubicConvolution(A x, A a) {
  x = std::fabs(x);
  if (x <= A(1)) return ((a + A(2)) * x - (a + A(3))) * x * x + A(1);
  if (x < A(2)) return ((a * x - A(5) * a) * x + A(8) * a) * x - A(4) * a;
  return A(0);
}

// d CubicConvolution / dx at a distance x >= 0.
template <class A>
A CubicConvolutionSlope(A x, A a) {
  if (x <= A(1)) return (A(3) * (a + A(2)) * x - A(2) * (a + A(3))) * x;
  if (x < A(2)) return (A(3) * a * x - A(10) * a) * x + A(8) * a;
  return A(0);
}

}  // namespace amptrain::kernels
