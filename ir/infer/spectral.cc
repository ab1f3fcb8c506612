// Shape/dtype rule of DFT (ir/ops.def) and its geometry (ir/infer/spectral.h).
#include "ir/infer/spectral.h"

#include "ir/infer/infer_util.h"
#include "ir/infer/value_util.h"

namespace amptrain::ir {

StatusOr<DftGeometry> DecodeDft(const Attributes& attrs, const std::vector<int64_t>& dims, bool has_dft_length,
                                const Tensor* dft_length, bool has_axis, const Tensor* axis) {
  DftGeometry g;
  AMP_ASSIGN_OR_RETURN(int64_t inverse, attrs.GetInt("inverse", 0));
  AMP_ASSIGN_OR_RETURN(int64_t onesided, attrs.GetInt("onesided", 0));
  if ((inverse != 0 && inverse != 1) || (onesided != 0 && onesided != 1))
    return InvalidArgument("inverse and onesided must be 0 or 1");
  g.inverse = inverse == 1;
  g.onesided = onesided == 1;
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (rank < 2) return InvalidArgument("the input has rank ", rank, "; DFT needs [.., signal, 1 or 2]");
  g.in_parts = dims.back();
  if (g.in_parts != 1 && g.in_parts != 2 && g.in_parts != -1)
    return InvalidArgument("the input's last dim is ", g.in_parts, "; it must be 1 (real) or 2 (complex)");
  if (g.rfft() && g.in_parts == 2)
    return InvalidArgument("onesided=1 (a real-to-complex transform) needs a real input ([.., 1]), got a complex one");
  if (g.irfft() && g.in_parts == 1)
    return InvalidArgument("onesided=1 with inverse=1 (a complex-to-real transform) needs a complex input ([.., 2])");
  if (has_axis && !axis) return Unimplemented("the axis input must be a constant");
  if (axis && axis->num_elements() != 1) return InvalidArgument("axis must be a scalar");
  const int64_t a = axis ? axis->GetAsInt64(0) : -2;
  if (a < -rank || a > rank - 2 || a == -1)
    return Status(StatusCode::kOutOfRange, StrCat("axis ", a, " is out of range for rank ", rank,
                                                  " (the last dim holds [re, im] and is no axis)"));
  g.axis = a < 0 ? a + rank : a;
  g.n = dims[static_cast<size_t>(g.axis)];
  if (has_dft_length && dft_length) {
    if (dft_length->num_elements() != 1) return InvalidArgument("dft_length must be a scalar");
    g.length = dft_length->GetAsInt64(0);
    if (g.length < 1) return InvalidArgument("dft_length is ", g.length, "; it must be at least 1");
  } else if (!has_dft_length && g.n >= 0) {
    g.length = g.irfft() ? 2 * (g.n - 1) : g.n;
    if (g.length < 1)
      return InvalidArgument("the transform length is ", g.length, " (an axis of ", g.n,
                             (g.irfft() ? " bins gives 2 (n - 1)" : ""), ")");
  }
  g.out_parts = g.irfft() ? 1 : 2;
  if (g.length >= 0) g.out_len = g.rfft() ? g.length / 2 + 1 : g.length;
  return g;
}

std::vector<int64_t> DftOutputDims(const DftGeometry& g, const std::vector<int64_t>& dims) {
  std::vector<int64_t> out = dims;
  out[static_cast<size_t>(g.axis)] = g.out_len;
  out.back() = g.out_parts;
  return out;
}

StatusOr<int64_t> StftFrameLength(bool has_frame_length, const Tensor* frame_length, const TensorType* window,
                                  const Shape& signal) {
  int64_t width = -1;
  if (frame_length) {
    if (frame_length->num_elements() != 1 || (width = frame_length->GetAsInt64(0)) < 1)
      return InvalidArgument("frame_length must be one value >= 1");
  }
  if (window && window->has_shape && window->shape.rank() == 1 && window->shape[0].is_static()) {
    const int64_t w = window->shape[0].value;
    if (width >= 0 && w != width) return InvalidArgument("the window has ", w, " values and frame_length is ", width);
    width = w;
  }
  if (width < 0 && !window && !has_frame_length && signal.rank() >= 2 && signal[1].is_static()) width = signal[1].value;
  return width;
}

// DFT(input, dft_length?, axis?): a float input of rank >= 2 whose last dim is
// 1 or 2; integer scalars; the output of the input's dtype (ir/ops.def).
Status InferDFT(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  for (size_t i : {1, 2})
    if (ctx.has_input(i)) AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, i, IsInteger(ctx.inputs[i].dtype), "int32 or int64"));
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  const Shape& x = ctx.inputs[0].shape;
  const std::vector<int64_t> dims = DimsOrUnknown(x);
  if (ctx.has_input(2) && !ctx.value(2)) {  // an axis known only at run time: the rank alone
    if (x.rank() < 2) return ctx.Error("the input has rank ", x.rank(), "; DFT needs [.., signal, 1 or 2]");
    ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::vector<Dim>(x.rank(), UnknownDim())));
    return Status::Ok();
  }
  auto geometry = DecodeDft(*ctx.attrs, dims, ctx.has_input(1), ctx.value(1), ctx.has_input(2), ctx.value(2));
  if (!geometry.ok()) return ctx.Error(geometry.status().message());
  const std::vector<int64_t> out = DftOutputDims(*geometry, dims);
  std::vector<Dim> shape;
  for (size_t d = 0; d < out.size(); ++d) {
    const bool changed = d == static_cast<size_t>(geometry->axis) || d + 1 == out.size();
    shape.push_back(!changed ? x[d] : out[d] >= 0 ? Dim::Static(out[d]) : UnknownDim());
  }
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(shape));
  return Status::Ok();
}

}  // namespace amptrain::ir
