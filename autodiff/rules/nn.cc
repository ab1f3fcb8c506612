// Gradient rules of convolution, pooling, normalization, softmax, dropout,
// padding and the loss heads. Most emit one backward op of autodiff/grad_ops.md.
#include <cstdint>
#include <limits>

#include "autodiff/grad_context.h"
#include "ir/infer/infer_util.h"
#include "ir/infer/roi_align.h"
#include "ir/infer/shape_params.h"

namespace amptrain::autodiff {

namespace {

using ir::OpKind;
using ir::Value;

// dX, dW, dB = ConvGrad(dY, X, W) with the attributes of Conv.
Status ConvGrad(GradContext& c) {
  size_t n = c.has_input(2) ? 3 : 2;
  auto d = c.Emit(OpKind::kConvGrad, {c.grad_output(0), c.input(0), c.input(1)}, c.attrs(), n);
  for (size_t i = 0; i < n; ++i)
    if (c.needs_grad(i)) c.SetGrad(i, d[i]);
  return Status::Ok();
}

// Y = ConvTranspose(X, W) is the data gradient of a Conv with weights W, so
// dX = Conv(dY, W), and dW is that Conv's weight gradient with X in dY's role.
Status ConvTransposeGrad(GradContext& c) {
  if (c.attrs().Has("output_shape") || c.attrs().Str("auto_pad", "NOTSET") != "NOTSET")
    return c.Unsupported("output_shape and auto_pad are not supported");
  ir::Attributes conv;
  for (const char* k : {"strides", "pads", "dilations", "group", "kernel_shape"})
    if (c.attrs().Has(k)) conv.Set(k, c.attrs().all().at(k));
  Value dy = c.grad_output(0), x = c.input(0), w = c.input(1);
  if (c.needs_grad(0)) c.SetGrad(0, c.Emit1(OpKind::kConv, {dy, w}, conv));
  if (c.needs_grad(1)) c.SetGrad(1, c.Emit(OpKind::kConvGrad, {x, dy, w}, conv, 2)[1]);
  if (c.needs_grad(2)) {
    std::vector<int64_t> axes{0};
    for (size_t a = 2; a < c.rank(dy); ++a) axes.push_back(static_cast<int64_t>(a));
    ir::Attributes keep;
    keep.Set("keepdims", int64_t{0});
    c.SetGrad(2, c.Emit1(OpKind::kReduceSum, {dy, c.Ints(axes)}, keep));
  }
  return Status::Ok();
}

Status MaxPoolGrad(GradContext& c) {
  c.SetGrad(0, c.Emit1(OpKind::kMaxPoolGrad, {c.grad_output(0), c.input(0)}, c.attrs()));
  return Status::Ok();
}

Status AveragePoolGrad(GradContext& c) {
  c.SetGrad(0, c.Emit1(OpKind::kAveragePoolGrad, {c.grad_output(0), c.input(0)}, c.attrs()));
  return Status::Ok();
}

// dX = Expand(dY / (H*W...), Shape(X)).
Status GlobalAveragePoolGrad(GradContext& c) {
  Value x = c.input(0), dy = c.grad_output(0);
  const ir::Shape& s = c.type(x).shape;
  double count = 1;
  for (size_t d = 2; d < s.rank(); ++d) {
    if (!s[d].is_static()) return c.Unsupported("needs static spatial dims, got ", s.ToString());
    count *= static_cast<double>(s[d].value);
  }
  c.SetGrad(0, c.Emit1(OpKind::kExpand, {c.Div(dy, c.Scalar(count, dy)), c.ShapeOf(x)}));
  return Status::Ok();
}

// Training mode only (batch statistics); ToTrainingMode puts BN there.
Status BatchNormalizationGrad(GradContext& c) {
  if (c.attrs().Int("training_mode", 0) == 0 && c.node().num_outputs() != 3)
    return c.Unsupported("inference-mode BatchNormalization (training_mode=0); put the graph in training mode first");
  if (c.grad_output(1).valid() || c.grad_output(2).valid())
    return c.Unsupported("gradients through the running statistics");
  ir::Attributes a;
  a.Set("epsilon", c.attrs().Float("epsilon", 1e-5f));
  auto d = c.Emit(OpKind::kBatchNormalizationGrad, {c.grad_output(0), c.input(0), c.input(1)}, a, 3);
  for (size_t i = 0; i < 3; ++i)
    if (c.needs_grad(i)) c.SetGrad(i, d[i]);
  return Status::Ok();
}

Status LayerNormalizationGrad(GradContext& c) {
  if (c.grad_output(1).valid() || c.grad_output(2).valid())
    return c.Unsupported("gradients through the mean / inverse std outputs");
  ir::Attributes a;
  a.Set("axis", c.attrs().Int("axis", -1));
  a.Set("epsilon", c.attrs().Float("epsilon", 1e-5f));
  auto d = c.Emit(OpKind::kLayerNormalizationGrad, {c.grad_output(0), c.input(0), c.input(1)}, a, 3);
  for (size_t i = 0; i < 3; ++i)
    if (c.needs_grad(i)) c.SetGrad(i, d[i]);
  return Status::Ok();
}

// Resize: the adjoint of the resampling, by the same taps (ResizeGrad).
Status ResizeGrad(GradContext& c) {
  std::vector<Value> in{c.grad_output(0), c.ShapeOf(c.input(0))};
  for (size_t i = 1; i < 4; ++i) in.push_back(c.has_input(i) ? c.input(i) : Value{});
  c.SetGrad(0, c.Emit1(OpKind::kResizeGrad, std::move(in), c.attrs()));
  return Status::Ok();
}

// FakeQuantize: the straight-through estimator, dY where the quantized value
// fell inside [qmin, qmax] (the node's mask output), 0 elsewhere, as
// PyTorch's fake_quantize backward; scale and zero point take none.
Status FakeQuantizeGrad(GradContext& c) {
  if (c.node().num_outputs() < 2) return FailedPrecondition(c.node().Describe(), ": has no mask output for its gradient");
  Value dy = c.grad_output(0);
  c.SetGrad(0, c.Emit1(OpKind::kWhere, {c.output(1), dy, c.Scalar(0.0, dy)}));
  return Status::Ok();
}

// RNN, GRU, LSTM: one backward op goes back through time (kernels/cpu/rnn.cc,
// direct_rnn.cc); its inputs are the forward's, absent ones kept absent, the
// gradients of Y, Y_h (and Y_c), then the forward's reserve where the
// training graph gave it one (ir/rnn.h; without it the forward runs again).
Status RecurrentGrad(GradContext& c) {
  const OpKind op = c.node().op();
  const OpKind grad = op == OpKind::kLSTM ? OpKind::kLSTMGrad : op == OpKind::kGRU ? OpKind::kGRUGrad : OpKind::kRNNGrad;
  const size_t inputs = op == OpKind::kLSTM ? 8 : 6, outputs = op == OpKind::kLSTM ? 3 : 2;
  std::vector<Value> in;
  for (size_t i = 0; i < inputs; ++i) in.push_back(c.has_input(i) ? c.input(i) : Value{});
  for (size_t o = 0; o < outputs; ++o) in.push_back(c.grad_output(o));
  if (c.node().num_outputs() > outputs) in.push_back(c.output(outputs));
  // dX, dW, dR, dB, dinitial_h (, dinitial_c, dP): the gradients of inputs 0-3, 5 (, 6, 7).
  const std::vector<size_t> of = op == OpKind::kLSTM ? std::vector<size_t>{0, 1, 2, 3, 5, 6, 7}
                                                       : std::vector<size_t>{0, 1, 2, 3, 5};
  auto d = c.Emit(grad, std::move(in), c.attrs(), of.size());
  for (size_t k = 0; k < of.size(); ++k)
    if (c.needs_grad(of[k])) c.SetGrad(of[k], d[k]);
  return Status::Ok();
}

// The mask output carries what the executor dropped (training or not).
Status DropoutGrad(GradContext& c) {
  if (c.node().num_outputs() < 2)
    return c.Unsupported("Dropout without a mask output; the gradient needs it (see autodiff::ToTrainingMode)");
  std::vector<Value> in{c.grad_output(0), c.output(1)};
  if (c.has_input(1)) in.push_back(c.input(1));
  c.SetGrad(0, c.Emit1(OpKind::kDropoutGrad, in));
  return Status::Ok();
}

Status SoftmaxGrad(GradContext& c) {
  ir::Attributes a;
  a.Set("axis", c.attrs().Int("axis", -1));
  OpKind op = c.node().op() == OpKind::kSoftmax ? OpKind::kSoftmaxGrad : OpKind::kLogSoftmaxGrad;
  c.SetGrad(0, c.Emit1(op, {c.grad_output(0), c.output(0)}, std::move(a)));
  return Status::Ok();
}

// dscores = SoftmaxCrossEntropyLossGrad(dloss, log_prob, labels, weights?).
Status SoftmaxCrossEntropyLossGrad(GradContext& c) {
  if (c.grad_output(1).valid()) return c.Unsupported("gradients through the log_prob output");
  Value log_prob = c.node().num_outputs() > 1 ? c.output(1) : Value{};
  if (!log_prob.valid()) {
    ir::Attributes a;
    a.Set("axis", int64_t{1});
    log_prob = c.Emit1(OpKind::kLogSoftmax, {c.input(0)}, std::move(a));
  }
  std::vector<Value> in{c.grad_output(0), log_prob, c.input(1)};
  if (c.has_input(2)) in.push_back(c.input(2));
  c.SetGrad(0, c.Emit1(OpKind::kSoftmaxCrossEntropyLossGrad, in, c.attrs()));
  return Status::Ok();
}

Status MeanSquaredErrorGrad(GradContext& c) {
  c.SetGrad(0, c.Emit1(OpKind::kMeanSquaredErrorGrad, {c.grad_output(0), c.input(0), c.input(1)}));
  return Status::Ok();
}

// RoiAlign (avg): dX = RoiAlignGrad(dY, rois, batch_indices, Shape(X)), each
// output's gradient spread over its bilinear taps. The boxes get none (as in
// torchvision: they come from a proposal step, not a differentiable path).
Status RoiAlignGrad(GradContext& c) {
  auto p = ir::DecodeRoiAlign(c.attrs());
  if (!p.ok()) return c.Unsupported(p.status().message());
  if (p->max) return c.Unsupported("mode max (ONNX's largest weighted tap) has no gradient rule; mode avg has");
  c.SetGrad(0, c.Emit1(OpKind::kRoiAlignGrad, {c.grad_output(0), c.input(1), c.input(2), c.ShapeOf(c.input(0))},
                       c.attrs()));
  return Status::Ok();
}

// Pad. Constant mode with constant non-negative pads: dX = Slice of dY (a
// view). Every other case (reflect, edge and wrap fold the border back onto
// the input; negative pads crop; pads computed at run time): PadGrad, which
// adds each output's gradient to the position it was read from.
Status PadGrad(GradContext& c) {
  const std::string mode = c.attrs().Str("mode", "constant");
  const ir::Tensor* pads = c.constant(1);
  const ir::Tensor* axes_t = c.has_input(3) ? c.constant(3) : nullptr;
  const int64_t rank = static_cast<int64_t>(c.rank(c.input(0)));
  std::vector<int64_t> begin, end;
  bool slice = mode == "constant" && pads && (!c.has_input(3) || axes_t) &&
               ir::ResolvePads(rank, pads->ToInt64Vector(), axes_t ? axes_t->ToInt64Vector() : std::vector<int64_t>{},
                               &begin, &end).ok();
  for (size_t d = 0; slice && d < begin.size(); ++d) slice = begin[d] >= 0 && end[d] >= 0;
  if (!slice) {
    std::vector<Value> in{c.grad_output(0), c.ShapeOf(c.input(0)), c.input(1)};
    if (c.has_input(3)) in.push_back(c.input(3));
    ir::Attributes a;
    a.Set("mode", mode);
    c.SetGrad(0, c.Emit1(OpKind::kPadGrad, std::move(in), std::move(a)));
    return Status::Ok();
  }
  std::vector<int64_t> starts, ends, all_axes;
  for (int64_t d = 0; d < rank; ++d) {
    size_t i = static_cast<size_t>(d);
    starts.push_back(begin[i]);
    ends.push_back(end[i] > 0 ? -end[i] : std::numeric_limits<int64_t>::max());
    all_axes.push_back(d);
  }
  c.SetGrad(0, c.Emit1(OpKind::kSlice, {c.grad_output(0), c.Ints(starts), c.Ints(ends), c.Ints(all_axes)}));
  return Status::Ok();
}

// GridSample: one backward op gives dX and dgrid.
Status GridSampleGrad(GradContext& c) {
  std::vector<Value> g = c.Emit(OpKind::kGridSampleGrad, {c.grad_output(0), c.input(0), c.input(1)}, c.attrs(), 2);
  if (c.needs_grad(0)) c.SetGrad(0, g[0]);
  if (c.needs_grad(1)) c.SetGrad(1, g[1]);
  return Status::Ok();
}

// grid[n, h, w, i] = sum_j theta[n, i, j] base[h, w, j], base = (x_w, y_h, 1):
// dtheta[n] = dgrid[n]^T base, with dgrid as [N, H W, 2] and base [H W, 3], a
// constant of the grid's (static) size.
Status AffineGridGrad(GradContext& c) {
  const ir::TensorType& grid = c.type(c.output(0));
  if (!grid.has_shape || !grid.shape[1].is_static() || !grid.shape[2].is_static())
    return c.Unsupported("the grid's H and W are not known when the graph is built");
  const int64_t h = grid.shape[1].value, w = grid.shape[2].value;
  const bool align = c.attrs().Int("align_corners", 0) != 0;
  auto coord = [align](int64_t i, int64_t size) {
    if (size <= 1) return 0.0;
    return align ? -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(size - 1)
                 : -1.0 + (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(size);
  };
  auto base = ir::Tensor::Zeros(grid.dtype, {h * w, 3});
  if (!base.ok()) return base.status();
  for (int64_t i = 0; i < h; ++i)
    for (int64_t j = 0; j < w; ++j) {
      ir::SetElementFromDouble(*base, (i * w + j) * 3, coord(j, w));
      ir::SetElementFromDouble(*base, (i * w + j) * 3 + 1, coord(i, h));
      ir::SetElementFromDouble(*base, (i * w + j) * 3 + 2, 1.0);
    }
  ir::Attributes perm;
  perm.Set("perm", std::vector<int64_t>{0, 2, 1});
  Value dgrid = c.Emit1(OpKind::kReshape, {c.grad_output(0), c.Ints({0, h * w, 2})});
  Value dgrid_t = c.Emit1(OpKind::kTranspose, {dgrid}, std::move(perm));
  c.SetGrad(0, c.Emit1(OpKind::kMatMul, {dgrid_t, c.Const(std::move(*base))}));
  return Status::Ok();
}

}  // namespace

void RegisterNNRules(RuleTable& t) {
  SetRule(t, OpKind::kGridSample, GridSampleGrad);
  SetRule(t, OpKind::kAffineGrid, AffineGridGrad);
  SetRule(t, OpKind::kConv, ConvGrad);
  SetRule(t, OpKind::kConvTranspose, ConvTransposeGrad);
  SetRule(t, OpKind::kMaxPool, MaxPoolGrad);
  SetRule(t, OpKind::kAveragePool, AveragePoolGrad);
  SetRule(t, OpKind::kGlobalAveragePool, GlobalAveragePoolGrad);
  SetRule(t, OpKind::kBatchNormalization, BatchNormalizationGrad);
  SetRule(t, OpKind::kLayerNormalization, LayerNormalizationGrad);
  for (OpKind op : {OpKind::kRNN, OpKind::kGRU, OpKind::kLSTM}) SetRule(t, op, RecurrentGrad);
  SetRule(t, OpKind::kResize, ResizeGrad);
  SetRule(t, OpKind::kDropout, DropoutGrad);
  SetRule(t, OpKind::kSoftmax, SoftmaxGrad);
  SetRule(t, OpKind::kLogSoftmax, SoftmaxGrad);
  SetRule(t, OpKind::kSoftmaxCrossEntropyLoss, SoftmaxCrossEntropyLossGrad);
  SetRule(t, OpKind::kMeanSquaredError, MeanSquaredErrorGrad);
  SetRule(t, OpKind::kPad, PadGrad);
  SetRule(t, OpKind::kRoiAlign, RoiAlignGrad);
  SetRule(t, OpKind::kFakeQuantize, FakeQuantizeGrad);
}

}  // namespace amptrain::autodiff
