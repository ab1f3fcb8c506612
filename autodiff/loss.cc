#include "autodiff/loss.h"

namespace amptrain::autodiff {

using ir::OpKind;
using ir::Value;

StatusOr<LossHead> AttachCrossEntropy(ir::Graph& g, Value logits, float label_smoothing) {
  const ir::TensorType& t = g.type(logits);
  if (!ir::IsFloat(t.dtype) || !t.has_shape || t.shape.rank() < 2)
    return InvalidArgument("cross-entropy loss: logits '", g.name(logits), "' must be float [N, C, ...], got ",
                           t.ToString());
  if (!(label_smoothing >= 0.0f && label_smoothing <= 1.0f))
    return InvalidArgument("cross-entropy loss: label_smoothing ", label_smoothing, " is outside [0, 1]");
  std::vector<ir::Dim> label_dims{t.shape[0]};
  for (size_t d = 2; d < t.shape.rank(); ++d) label_dims.push_back(t.shape[d]);
  std::string target = g.UniqueName("labels");
  Value labels = g.AddInput(target, ir::TensorType::Of(ir::DType::kInt64, ir::Shape(label_dims)));
  ir::Node* n = g.AddNode(OpKind::kSoftmaxCrossEntropyLoss, {logits, labels}, 2, "loss/SoftmaxCrossEntropyLoss",
                          {g.UniqueName("loss"), g.UniqueName("log_prob")});
  n->attrs().Set("reduction", std::string("mean"));
  if (label_smoothing != 0.0f) n->attrs().Set("label_smoothing", label_smoothing);
  AMP_RETURN_IF_ERROR(g.InferNode(n));
  g.AddOutput(n->output(0));
  return LossHead{n->output(0), logits, target};
}

StatusOr<LossHead> AttachMeanSquaredError(ir::Graph& g, Value prediction) {
  const ir::TensorType& t = g.type(prediction);
  if (!ir::IsFloat(t.dtype))
    return InvalidArgument("mean squared error loss: prediction '", g.name(prediction), "' must be float, got ",
                           t.ToString());
  std::string target = g.UniqueName("targets");
  Value targets = g.AddInput(target, t);
  ir::Node* n = g.AddNode(OpKind::kMeanSquaredError, {prediction, targets}, 1, "loss/MeanSquaredError",
                          {g.UniqueName("loss")});
  AMP_RETURN_IF_ERROR(g.InferNode(n));
  g.AddOutput(n->output(0));
  return LossHead{n->output(0), prediction, target};
}

}  // namespace amptrain::autodiff
