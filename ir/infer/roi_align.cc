// Shape/dtype rules of RoiAlign and RoiAlignGrad (ir/ops.def).
#include "ir/infer/roi_align.h"

#include "ir/infer/infer_util.h"

namespace amptrain::ir {

StatusOr<RoiAlignParams> DecodeRoiAlign(const Attributes& attrs) {
  RoiAlignParams p;
  AMP_ASSIGN_OR_RETURN(std::string mode, attrs.GetString("mode", "avg"));
  AMP_ASSIGN_OR_RETURN(std::string coords, attrs.GetString("coordinate_transformation_mode", "half_pixel"));
  AMP_ASSIGN_OR_RETURN(p.height, attrs.GetInt("output_height", 1));
  AMP_ASSIGN_OR_RETURN(p.width, attrs.GetInt("output_width", 1));
  AMP_ASSIGN_OR_RETURN(p.sampling_ratio, attrs.GetInt("sampling_ratio", 0));
  AMP_ASSIGN_OR_RETURN(p.spatial_scale, attrs.GetFloat("spatial_scale", 1.0f));
  if (mode != "avg" && mode != "max") return InvalidArgument("mode '", mode, "' is not avg or max");
  if (coords != "half_pixel" && coords != "output_half_pixel")
    return InvalidArgument("coordinate_transformation_mode '", coords, "' is not half_pixel or output_half_pixel");
  if (p.height < 1 || p.width < 1)
    return InvalidArgument("output_height and output_width must be >= 1, got ", p.height, " and ", p.width);
  if (p.sampling_ratio < 0) return InvalidArgument("sampling_ratio must be >= 0, got ", p.sampling_ratio);
  p.max = mode == "max";
  p.half_pixel = coords == "half_pixel";
  return p;
}

// RoiAlign(X [N, C, H, W], rois [R, 4] of X's dtype, batch_indices int64 [R]) -> [R, C, oh, ow].
Status InferRoiAlign(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  AMP_RETURN_IF_ERROR(ExpectSameDType(ctx, 0, 1));
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 2, IsInteger(ctx.inputs[2].dtype), "int64 (batch_indices)"));
  auto p = DecodeRoiAlign(*ctx.attrs);
  if (!p.ok()) return ctx.Error(p.status().message());
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 1));
  const Shape& x = ctx.inputs[0].shape;
  const Shape& rois = ctx.inputs[1].shape;
  if (x.rank() != 4) return ctx.Error("X has shape ", x.ToString(), ", expected [N, C, H, W]");
  if (rois.rank() != 2 || (rois[1].is_static() && rois[1].value != 4))
    return ctx.Error("rois has shape ", rois.ToString(), ", expected [num_rois, 4]");
  if (ctx.inputs[2].has_shape) {
    const Shape& b = ctx.inputs[2].shape;
    if (b.rank() != 1 || (b[0].is_static() && rois[0].is_static() && b[0].value != rois[0].value))
      return ctx.Error("batch_indices has shape ", b.ToString(), ", expected [", rois[0].is_static() ? std::to_string(rois[0].value) : std::string("num_rois"), "]");
  }
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype,
                                  Shape(std::vector<Dim>{rois[0], x[1], Dim::Static(p->height), Dim::Static(p->width)}));
  return Status::Ok();
}

// RoiAlignGrad(dY [R, C, oh, ow], rois, batch_indices, x_shape) -> dX of x_shape.
Status InferRoiAlignGrad(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  if (ctx.inputs[3].dtype != DType::kInt64) return ctx.Error("x_shape must be int64");
  auto p = DecodeRoiAlign(*ctx.attrs);
  if (!p.ok()) return ctx.Error(p.status().message());
  if (p->max) return ctx.Error("mode max has no gradient here");
  if (const Tensor* shape = ctx.value(3)) {
    if (shape->num_elements() != 4) return ctx.Error("x_shape must hold 4 dims");
    ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, shape->ToInt64Vector());
  } else {
    ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::vector<Dim>(4, UnknownDim())));
  }
  return Status::Ok();
}

}  // namespace amptrain::ir
