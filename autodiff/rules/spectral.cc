// Gradient rule of DFT (ir/infer/spectral.h). The transform is linear, so its
// gradient is transforms too. With G the output's gradient and L the length:
//   forward, complex result:  dZ = sum_k e^{+2 pi i k n / L} G[k] = L * IDFT(G)
//   inverse, complex result:  dZ = DFT(G) / L
//   RFFT (bins k <= L/2 only): the same sum over the bins that exist, i.e.
//                             L * IDFT of G zero-padded to L bins
//   IRFFT (real result):      dX[k] = c_k / L * RFFT(G)[k], with c_k = 1 for
//                             the DC bin and (L even) the Nyquist bin, which
//                             appear once in the conjugate-symmetric spectrum,
//                             and 2 for the others, which appear twice
// dZ has L entries along the axis; the input had n: its gradient is dZ's
// first n (the input was truncated) or dZ zero-padded to n (the signal was),
// and a real input takes the real part.
#include <vector>

#include "autodiff/grad_context.h"
#include "ir/infer/infer_util.h"
#include "ir/infer/spectral.h"
#include "ir/infer/value_util.h"

namespace amptrain::autodiff {

namespace {

using ir::OpKind;
using ir::Value;

// x's entries [0, len) along `axis`, or x zero-padded there up to `len`.
Value ToLength(GradContext& c, Value x, size_t rank, int64_t axis, int64_t have, int64_t len) {
  if (have == len) return x;
  if (have > len)
    return c.Emit1(OpKind::kSlice, {x, c.Ints({0}), c.Ints({len}), c.Ints({axis})});
  std::vector<int64_t> pads(2 * rank, 0);
  pads[rank + static_cast<size_t>(axis)] = len - have;
  return c.Emit1(OpKind::kPad, {x, c.Ints(pads)});
}

Value Dft(GradContext& c, Value x, int64_t axis, bool inverse, bool onesided) {
  ir::Attributes a;
  a.Set("inverse", int64_t{inverse});
  a.Set("onesided", int64_t{onesided});
  return c.Emit1(OpKind::kDFT, {x, Value{}, c.Const(ir::Tensor::Int64s({axis}, {}))}, std::move(a));
}

Status DftGrad(GradContext& c) {
  const Value x = c.input(0), dy = c.grad_output(0);
  const ir::TensorType& xt = c.type(x);
  const std::vector<int64_t> dims = ir::DimsOrUnknown(xt.shape);
  auto decoded = ir::DecodeDft(c.attrs(), dims, c.has_input(1), c.constant(1), c.has_input(2), c.constant(2));
  if (!decoded.ok()) return c.Unsupported(decoded.status().message());
  const ir::DftGeometry& g = *decoded;
  if (g.length < 0 || g.n < 0 || g.in_parts < 0)
    return c.Unsupported("the transform length, the axis length and the last dim must be static");
  const size_t rank = dims.size();
  const double len = static_cast<double>(g.length);
  Value dz;
  if (g.irfft()) {
    const int64_t bins = g.length / 2 + 1;
    std::vector<double> scale(static_cast<size_t>(bins), 2.0 / len);
    scale[0] = 1.0 / len;
    if (g.length % 2 == 0) scale.back() = 1.0 / len;
    std::vector<int64_t> scale_dims(rank, 1);
    scale_dims[static_cast<size_t>(g.axis)] = bins;
    auto t = ir::Tensor::Zeros(xt.dtype, scale_dims);
    if (!t.ok()) return c.Unsupported(t.status().message());
    for (int64_t k = 0; k < bins; ++k) ir::SetElementFromDouble(*t, k, scale[static_cast<size_t>(k)]);
    dz = c.Mul(Dft(c, dy, g.axis, /*inverse=*/false, /*onesided=*/true), c.Const(std::move(*t)));
    c.SetGrad(0, ToLength(c, dz, rank, g.axis, bins, g.n));
    return Status::Ok();
  }
  Value full = g.rfft() ? ToLength(c, dy, rank, g.axis, g.out_len, g.length) : dy;
  dz = Dft(c, full, g.axis, /*inverse=*/!g.inverse, /*onesided=*/false);
  dz = c.Mul(dz, c.Scalar(g.inverse ? 1.0 / len : len, dz));
  dz = ToLength(c, dz, rank, g.axis, g.length, g.n);
  if (g.in_parts == 1)
    dz = c.Emit1(OpKind::kSlice, {dz, c.Ints({0}), c.Ints({1}), c.Ints({static_cast<int64_t>(rank) - 1})});
  c.SetGrad(0, dz);
  return Status::Ok();
}

}  // namespace

void RegisterSpectralRules(RuleTable& t) { SetRule(t, OpKind::kDFT, DftGrad); }

}  // namespace amptrain::autodiff
