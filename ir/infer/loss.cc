// Shape/dtype rules of the loss heads (autodiff/grad_ops.md).
//
//   SoftmaxCrossEntropyLoss(scores [N, C, d...], labels int32/int64 [N, d...],
//                           weights? [C]) -> loss, log_prob?
//     loss: scores' dtype; [] for reduction mean/sum, [N, d...] for none.
//     log_prob: scores' type. Attributes reduction (mean|sum|none),
//     ignore_index (int, optional), label_smoothing (float in [0, 1]).
//   MeanSquaredError(pred, target of the same shape) -> scalar of pred's dtype.
// Symbolic dims propagate (N of the loss comes from scores, else labels).
#include "ir/infer/training_util.h"

namespace amptrain::ir {

Status InferSoftmaxCrossEntropyLoss(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 1, IsIndexType(ctx.inputs[1].dtype), "int32 or int64"));
  if (ctx.has_input(2)) AMP_RETURN_IF_ERROR(ExpectSameDType(ctx, 0, 2));
  StatusOr<LossAttrs> attrs = ParseLossAttrs(*ctx.attrs);
  if (!attrs.ok()) return ctx.Error(attrs.status().message());
  const TensorType& scores = ctx.inputs[0];
  const TensorType& labels = ctx.inputs[1];
  if (scores.has_shape && scores.shape.rank() < 2)
    return ctx.Error("scores have shape ", scores.shape.ToString(), ", expected [N, C, d...]");
  std::optional<Shape> per_sample;
  if (scores.has_shape) {
    std::vector<Dim> dims{scores.shape[0]};
    dims.insert(dims.end(), scores.shape.dims().begin() + 2, scores.shape.dims().end());
    per_sample = Shape(std::move(dims));
  }
  if (labels.has_shape) {
    if (per_sample) {
      AMP_ASSIGN_OR_RETURN(*per_sample, MergeShapes(ctx, *per_sample, labels.shape, "labels"));
    } else {
      per_sample = labels.shape;
    }
  }
  if (ctx.has_input(2) && ctx.inputs[2].has_shape) {
    const Shape& w = ctx.inputs[2].shape;
    bool ok = w.rank() == 1;
    if (ok && scores.has_shape && w[0].is_static() && scores.shape[1].is_static()) ok = w[0].value == scores.shape[1].value;
    if (!ok) return ctx.Error("weights have shape ", w.ToString(), ", expected [C] with C the class dim of scores");
  }
  ctx.outputs[0].dtype = scores.dtype;
  if (attrs->reduction != LossReduction::kNone) {
    ctx.outputs[0] = TensorType::Of(scores.dtype, Shape());
  } else if (per_sample) {
    ctx.outputs[0] = TensorType::Of(scores.dtype, *per_sample);
  }
  if (ctx.outputs.size() > 1) SameAs(ctx, 1, 0);
  return Status::Ok();
}

Status InferMeanSquaredError(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  AMP_RETURN_IF_ERROR(ExpectSameDType(ctx, 0, 1));
  if (ctx.inputs[0].has_shape && ctx.inputs[1].has_shape)
    AMP_RETURN_IF_ERROR(MergeShapes(ctx, ctx.inputs[0].shape, ctx.inputs[1].shape, "target").status());
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape());
  return Status::Ok();
}

}  // namespace amptrain::ir
