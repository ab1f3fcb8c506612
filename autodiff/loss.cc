#include "autodiff/loss.h"

namespace amptrain::autodiff {

using ir::Node;
using ir::OpKind;
using ir::Value;

namespace {

std::string DimsString(const std::vector<int64_t>& dims) {
  std::string s = "[N";
  for (int64_t d : dims) s += StrCat(", ", d);
  return s + "]";
}

// Whether the logits' dims other than N and the class axis fit the labels'.
bool Fits(const ir::Shape& shape, size_t class_axis, const std::vector<int64_t>& label_dims) {
  std::vector<ir::Dim> rest;
  for (size_t d = 1; d < shape.rank(); ++d)
    if (d != class_axis) rest.push_back(shape[d]);
  if (rest.size() != label_dims.size()) return false;
  for (size_t i = 0; i < rest.size(); ++i)
    if (rest[i].is_static() && rest[i].value != label_dims[i]) return false;
  return true;
}

Node* AddReshape(ir::Graph& g, Value x, std::vector<int64_t> shape, const std::string& name) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  // A Constant node, not an initializer: the loss head adds no model state.
  Node* c = g.AddNode(OpKind::kConstant, {}, 1, g.UniqueName(name + "/shape"), {g.UniqueName(name + "/shape")});
  c->attrs().Set("value", ir::Tensor::Int64s(shape, {rank}));
  if (!g.InferNode(c).ok()) return nullptr;
  Value target = c->output(0);
  return g.AddNode(OpKind::kReshape, {x, target}, 1, g.UniqueName(name), {g.UniqueName(name + "_output")});
}

}  // namespace

StatusOr<int64_t> ResolveClassAxis(const ir::TensorType& t, const std::string& name,
                                   const CrossEntropyOptions& options) {
  if (!ir::IsFloat(t.dtype) || !t.has_shape || t.shape.rank() < 2)
    return InvalidArgument("cross-entropy loss: logits '", name, "' must be float [N, C, ...], got ", t.ToString());
  const size_t rank = t.shape.rank();
  if (rank == 2) {
    if (options.label_dims && !options.label_dims->empty())
      return InvalidArgument("cross-entropy loss: the labels are ", DimsString(*options.label_dims),
                             " per sample but the logits '", name, "' are ", t.ToString(),
                             ", one row of classes per sample");
    return 1;
  }
  const size_t first = 1, last = rank - 1;
  if (options.class_axis != ClassAxis::kAuto) {
    const size_t axis = options.class_axis == ClassAxis::kFirst ? first : last;
    if (options.label_dims && !Fits(t.shape, axis, *options.label_dims))
      return InvalidArgument("cross-entropy loss: the labels are ", DimsString(*options.label_dims),
                             " per sample, which do not fit the logits '", name, "' ", t.ToString(),
                             " with the classes on axis ", axis);
    return static_cast<int64_t>(axis);
  }
  if (!options.label_dims)  // nothing to decide by: PyTorch's CrossEntropyLoss layout
    return static_cast<int64_t>(first);
  const bool fits_first = Fits(t.shape, first, *options.label_dims);
  const bool fits_last = Fits(t.shape, last, *options.label_dims);
  if (fits_first != fits_last) return static_cast<int64_t>(fits_first ? first : last);
  if (fits_first)
    return InvalidArgument("cross-entropy loss: the labels ", DimsString(*options.label_dims),
                           " fit the logits '", name, "' ", t.ToString(), " with the classes on axis 1 or on axis ",
                           last, "; say which with --class-axis first|last");
  return InvalidArgument("cross-entropy loss: the labels are ", DimsString(*options.label_dims),
                         " per sample, which fit the logits '", name, "' ", t.ToString(),
                         " neither as [N, C, d...] nor as [N, d..., C]");
}

StatusOr<LossHead> AttachCrossEntropy(ir::Graph& g, Value logits, const CrossEntropyOptions& options) {
  const ir::TensorType t = g.type(logits);
  AMP_ASSIGN_OR_RETURN(const int64_t axis, ResolveClassAxis(t, g.name(logits), options));
  if (!(options.label_smoothing >= 0.0f && options.label_smoothing <= 1.0f))
    return InvalidArgument("cross-entropy loss: label_smoothing ", options.label_smoothing, " is outside [0, 1]");
  const size_t rank = t.shape.rank();
  const bool classes_last = rank > 2 && axis == static_cast<int64_t>(rank - 1);
  std::vector<ir::Dim> label_dims{t.shape[0]};
  for (size_t d = 1; d < rank; ++d)
    if (d != static_cast<size_t>(axis)) label_dims.push_back(t.shape[d]);
  std::string target = g.UniqueName("labels");
  Value labels = g.AddInput(target, ir::TensorType::Of(ir::DType::kInt64, ir::Shape(label_dims)));
  Value scores = logits, loss_labels = labels;
  if (classes_last) {
    const ir::Dim& c = t.shape[rank - 1];
    if (!c.is_static())
      return InvalidArgument("cross-entropy loss: logits '", g.name(logits), "' ", t.ToString(),
                             " have no static class dimension");
    Node* flat = AddReshape(g, logits, {-1, c.value}, "loss/logits_rows");
    Node* flat_labels = AddReshape(g, labels, {-1}, "loss/labels_rows");
    if (!flat || !flat_labels) return Internal("cross-entropy loss: the Reshape's shape constant failed its inference");
    AMP_RETURN_IF_ERROR(g.InferNode(flat));
    AMP_RETURN_IF_ERROR(g.InferNode(flat_labels));
    scores = flat->output(0);
    loss_labels = flat_labels->output(0);
  }
  ir::Node* n = g.AddNode(OpKind::kSoftmaxCrossEntropyLoss, {scores, loss_labels}, 2, "loss/SoftmaxCrossEntropyLoss",
                          {g.UniqueName("loss"), g.UniqueName("log_prob")});
  n->attrs().Set("reduction", std::string("mean"));
  n->attrs().Set("ignore_index", options.ignore_index);
  if (options.label_smoothing != 0.0f) n->attrs().Set("label_smoothing", options.label_smoothing);
  AMP_RETURN_IF_ERROR(g.InferNode(n));
  g.AddOutput(n->output(0));
  return LossHead{n->output(0), logits, target, axis};
}

StatusOr<LossHead> AttachCrossEntropy(ir::Graph& g, Value logits, float label_smoothing) {
  CrossEntropyOptions options;
  options.label_smoothing = label_smoothing;
  return AttachCrossEntropy(g, logits, options);
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
