// Shape/dtype rules of the backward ops (family `grad`, autodiff/grad_ops.md).
//
// A gradient has the type of what it is the gradient of: dX is X's type, dW
// W's, so symbolic dims (the batch) propagate. Where a backward op mirrors a
// forward op, the rule runs the forward rule on the forward inputs and
// checks that dY agrees with the forward output (rank, static dims, dtype).
//   ConvGrad(dY, X, W) -> dX: X, dW: W, dB: [W[0]] (X's dtype)
//   MaxPoolGrad/AveragePoolGrad(dY, X) -> dX: X
//   BatchNormalizationGrad(dY, X, scale) -> dX: X, dScale, dBias: scale
//   LayerNormalizationGrad(dY, X, scale) -> dX: X, dScale, dBias: scale
//   ReluGrad(dY, Y), TanhGrad(dY, Y), SigmoidGrad(dY, Y), GeluGrad(dY, X), SiluGrad(dY, X), SoftmaxGrad/LogSoftmaxGrad(dY, Y),
//   DropoutGrad(dY, mask, ratio?) -> dY's type refined by the other input
//   SoftmaxCrossEntropyLossGrad(dloss, log_prob, labels, weights?) -> log_prob
//   MeanSquaredErrorGrad(dloss, pred, target) -> pred
//   GatherGrad(dY, indices, data_shape) -> dY's dtype, dims = data_shape's
//     value when known; else rank len(data_shape) with the dims dY determines
//     (all but `axis`) taken from dY
//   ReduceSumTo(X, shape) -> X's dtype, dims = shape's value when known, else
//     rank len(shape) with unknown dims
#include "ir/infer/training_util.h"

namespace amptrain::ir {

namespace {

Status RequireFloat(const InferContext& ctx, size_t i) {
  return ExpectInputDType(ctx, i, IsFloat(ctx.inputs[i].dtype), "a float type");
}

// The type output 0 of forward rule `fn` gives for inputs `ins` of this node
// (absent ones stay absent); errors keep this node's name.
StatusOr<TensorType> ForwardOutput(const InferContext& ctx, InferFn fn, const std::vector<size_t>& ins) {
  InferContext fwd;
  fwd.node = ctx.node;
  fwd.attrs = ctx.attrs;
  fwd.opset = ctx.opset;
  for (size_t i : ins) {
    fwd.inputs.push_back(ctx.has_input(i) ? ctx.inputs[i] : TensorType{});
    fwd.values.push_back(ctx.value(i));
  }
  fwd.outputs.resize(1);
  fwd.output_values.resize(1);
  AMP_RETURN_IF_ERROR(fn(fwd));
  return fwd.outputs[0];
}

// Input `grad` (a gradient of `of`) must have of's dtype and agree in shape.
Status CheckGradient(const InferContext& ctx, size_t grad, const TensorType& of, const char* what) {
  if (ctx.inputs[grad].dtype != of.dtype)
    return ctx.Error(what, " has dtype ", DTypeName(ctx.inputs[grad].dtype), ", expected ", DTypeName(of.dtype));
  if (ctx.inputs[grad].has_shape && of.has_shape)
    AMP_RETURN_IF_ERROR(MergeShapes(ctx, of.shape, ctx.inputs[grad].shape, what).status());
  return Status::Ok();
}

// Output 0 = input a's dtype with the shapes of inputs a and b merged.
Status SameShapeAs(InferContext& ctx, size_t a, size_t b, const char* what) {
  ctx.outputs[0] = ctx.inputs[a];
  if (!ctx.inputs[b].has_shape) return Status::Ok();
  if (!ctx.inputs[a].has_shape) {
    ctx.outputs[0] = TensorType::Of(ctx.inputs[a].dtype, ctx.inputs[b].shape);
    return Status::Ok();
  }
  AMP_ASSIGN_OR_RETURN(Shape merged, MergeShapes(ctx, ctx.inputs[a].shape, ctx.inputs[b].shape, what));
  ctx.outputs[0].shape = std::move(merged);
  return Status::Ok();
}

// dY and a float tensor of its dtype and shape (Y of Relu/Softmax, X of Gelu).
Status InferElementwiseGrad(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireFloat(ctx, 0));
  AMP_RETURN_IF_ERROR(ExpectSameDType(ctx, 0, 1));
  return SameShapeAs(ctx, 0, 1, "input 1");
}

Status InferPoolGrad(InferContext& ctx, InferFn forward) {
  AMP_RETURN_IF_ERROR(RequireFloat(ctx, 1));
  AMP_ASSIGN_OR_RETURN(TensorType y, ForwardOutput(ctx, forward, {1}));
  AMP_RETURN_IF_ERROR(CheckGradient(ctx, 0, y, "dY"));
  SameAs(ctx, 0, 1);
  return Status::Ok();
}

// The value of a 1-D int64 shape input: its dims when known, else its rank
// when its length is static (nullopt dims), else nothing.
struct ShapeInput {
  std::optional<std::vector<int64_t>> dims;
  std::optional<size_t> rank;
};

StatusOr<ShapeInput> ReadShapeInput(const InferContext& ctx, size_t i, const char* what) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, i, ctx.inputs[i].dtype == DType::kInt64, "int64"));
  ShapeInput s;
  const TensorType& t = ctx.inputs[i];
  if (t.has_shape && t.shape.rank() != 1) return ctx.Error(what, " has shape ", t.shape.ToString(), ", expected 1-D");
  if (t.has_shape && t.shape[0].is_static()) s.rank = static_cast<size_t>(t.shape[0].value);
  if (const Tensor* v = ctx.value(i)) {
    s.dims = v->ToInt64Vector();
    s.rank = s.dims->size();
    for (int64_t d : *s.dims)
      if (d < 0) return ctx.Error(what, " has a negative dim ", d);
  }
  return s;
}

}  // namespace

Status InferSoftmaxCrossEntropyLossGrad(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireFloat(ctx, 1));
  AMP_ASSIGN_OR_RETURN(TensorType loss, ForwardOutput(ctx, InferSoftmaxCrossEntropyLoss, {1, 2, 3}));
  AMP_RETURN_IF_ERROR(CheckGradient(ctx, 0, loss, "dloss"));
  SameAs(ctx, 0, 1);
  return Status::Ok();
}

Status InferMeanSquaredErrorGrad(InferContext& ctx) {
  AMP_ASSIGN_OR_RETURN(TensorType loss, ForwardOutput(ctx, InferMeanSquaredError, {1, 2}));
  AMP_RETURN_IF_ERROR(CheckGradient(ctx, 0, loss, "dloss"));
  SameAs(ctx, 0, 1);
  return Status::Ok();
}

Status InferConvGrad(InferContext& ctx) {
  AMP_ASSIGN_OR_RETURN(TensorType y, ForwardOutput(ctx, InferConv, {1, 2}));
  AMP_RETURN_IF_ERROR(CheckGradient(ctx, 0, y, "dY"));
  SameAs(ctx, 0, 1);
  if (ctx.outputs.size() > 1) SameAs(ctx, 1, 2);
  if (ctx.outputs.size() > 2) ctx.outputs[2] = TensorType::Of(ctx.inputs[1].dtype, Shape({ctx.inputs[2].shape[0]}));
  return Status::Ok();
}

Status InferMaxPoolGrad(InferContext& ctx) { return InferPoolGrad(ctx, InferMaxPool); }
Status InferAveragePoolGrad(InferContext& ctx) { return InferPoolGrad(ctx, InferAveragePool); }

Status InferBatchNormalizationGrad(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireFloat(ctx, 1));
  AMP_RETURN_IF_ERROR(RequireFloat(ctx, 2));
  AMP_RETURN_IF_ERROR(CheckGradient(ctx, 0, ctx.inputs[1], "dY"));
  AMP_ASSIGN_OR_RETURN(float epsilon, ctx.attrs->GetFloat("epsilon", 1e-5f));
  if (!(epsilon >= 0.0f)) return ctx.Error("epsilon ", epsilon, " must be >= 0");
  const TensorType& x = ctx.inputs[1];
  const TensorType& scale = ctx.inputs[2];
  if (x.has_shape && x.shape.rank() < 2) return ctx.Error("X has shape ", x.shape.ToString(), ", expected [N, C, ...]");
  if (scale.has_shape) {
    bool ok = scale.shape.rank() == 1;
    if (ok && x.has_shape && scale.shape[0].is_static() && x.shape[1].is_static())
      ok = scale.shape[0].value == x.shape[1].value;
    if (!ok) return ctx.Error("scale has shape ", scale.shape.ToString(), ", expected [C]");
  }
  SameAs(ctx, 0, 1);
  for (size_t o = 1; o < ctx.outputs.size(); ++o) SameAs(ctx, o, 2);
  return Status::Ok();
}

Status InferLayerNormalizationGrad(InferContext& ctx) {
  AMP_ASSIGN_OR_RETURN(TensorType y, ForwardOutput(ctx, InferLayerNormalization, {1, 2}));
  AMP_RETURN_IF_ERROR(CheckGradient(ctx, 0, y, "dY"));
  SameAs(ctx, 0, 1);
  for (size_t o = 1; o < ctx.outputs.size(); ++o) SameAs(ctx, o, 2);
  return Status::Ok();
}

Status InferReluGrad(InferContext& ctx) { return InferElementwiseGrad(ctx); }
Status InferTanhGrad(InferContext& ctx) { return InferElementwiseGrad(ctx); }
Status InferSigmoidGrad(InferContext& ctx) { return InferElementwiseGrad(ctx); }

Status InferGeluGrad(InferContext& ctx) {
  AMP_ASSIGN_OR_RETURN(std::string approximate, ctx.attrs->GetString("approximate", "none"));
  if (approximate != "none" && approximate != "tanh")
    return ctx.Error("approximate '", approximate, "' is not one of none, tanh");
  return InferElementwiseGrad(ctx);
}

Status InferSiluGrad(InferContext& ctx) { return InferElementwiseGrad(ctx); }

Status InferUnaryGrad(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ctx.attrs->GetString("op", "").status());
  return InferElementwiseGrad(ctx);
}

Status InferSoftmaxGrad(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ForwardOutput(ctx, InferSoftmax, {1}).status());
  return InferElementwiseGrad(ctx);
}

Status InferLogSoftmaxGrad(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ForwardOutput(ctx, InferLogSoftmax, {1}).status());
  return InferElementwiseGrad(ctx);
}

Status InferDropoutGrad(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireFloat(ctx, 0));
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 1, ctx.inputs[1].dtype == DType::kBool, "bool"));
  if (ctx.has_input(2)) {
    AMP_RETURN_IF_ERROR(RequireFloat(ctx, 2));
    int64_t n = ctx.inputs[2].has_shape ? ctx.inputs[2].shape.num_elements() : -1;
    if (n != 1 && n != -1) return ctx.Error("ratio has shape ", ctx.inputs[2].shape.ToString(), ", expected a scalar");
    if (const Tensor* r = ctx.value(2)) {
      double ratio = r->GetAsDouble(0);
      if (!(ratio >= 0.0 && ratio < 1.0)) return ctx.Error("ratio ", ratio, " is outside [0, 1)");
    }
  }
  return SameShapeAs(ctx, 0, 1, "mask");
}

// GatherNDGrad(dY, indices, data_shape), attr batch_dims: data_shape's dims, dY's dtype.
Status InferGatherNDGrad(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  if (ctx.inputs[1].dtype != DType::kInt64) return ctx.Error("indices must be int64, got ", DTypeName(ctx.inputs[1].dtype));
  AMP_ASSIGN_OR_RETURN(ShapeInput data, ReadShapeInput(ctx, 2, "data_shape"));
  if (data.dims) ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape::FromStatic(*data.dims));
  else if (data.rank) ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::vector<Dim>(*data.rank, UnknownDim())));
  else ctx.outputs[0] = TensorType{ctx.inputs[0].dtype, Shape(), false};
  return Status::Ok();
}

Status InferGatherGrad(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireFloat(ctx, 0));
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 1, IsIndexType(ctx.inputs[1].dtype), "int32 or int64"));
  AMP_ASSIGN_OR_RETURN(ShapeInput data, ReadShapeInput(ctx, 2, "data_shape"));
  ctx.outputs[0] = TensorType{ctx.inputs[0].dtype, Shape(), false};
  if (!data.rank) return Status::Ok();
  const int64_t rank = static_cast<int64_t>(*data.rank);
  if (rank < 1) return ctx.Error("data_shape is empty; Gather data has rank >= 1");
  AMP_ASSIGN_OR_RETURN(int64_t axis_attr, ctx.attrs->GetInt("axis", 0));
  if (axis_attr < -rank || axis_attr >= rank)
    return NodeOutOfRange(ctx, StrCat("axis ", axis_attr, " is out of range for data rank ", rank));
  const size_t axis = static_cast<size_t>(axis_attr < 0 ? axis_attr + rank : axis_attr);
  Shape out = data.dims ? Shape::FromStatic(*data.dims) : Shape(std::vector<Dim>(*data.rank, UnknownDim()));
  const TensorType& dy = ctx.inputs[0];
  const TensorType& ind = ctx.inputs[1];
  if (dy.has_shape && ind.has_shape) {
    // dY = data[:axis] + indices + data[axis+1:]
    const size_t ir = ind.shape.rank();
    if (dy.shape.rank() != *data.rank - 1 + ir)
      return ctx.Error("dY has shape ", dy.shape.ToString(), ", expected rank ", *data.rank - 1 + ir);
    std::vector<Dim> expected(out.dims().begin(), out.dims().begin() + axis);
    expected.insert(expected.end(), ind.shape.dims().begin(), ind.shape.dims().end());
    expected.insert(expected.end(), out.dims().begin() + axis + 1, out.dims().end());
    AMP_ASSIGN_OR_RETURN(Shape merged, MergeShapes(ctx, Shape(expected), dy.shape, "dY"));
    for (size_t d = 0; d < out.rank(); ++d)
      if (d != axis) out[d] = merged[d < axis ? d : d - 1 + ir];
  }
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, std::move(out));
  return Status::Ok();
}

// GatherElementsGrad(dY, indices, data_shape), attr axis: data_shape's dims, dY's dtype.
Status InferGatherElementsGrad(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireFloat(ctx, 0));
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 1, IsIndexType(ctx.inputs[1].dtype), "int32 or int64"));
  AMP_ASSIGN_OR_RETURN(ShapeInput data, ReadShapeInput(ctx, 2, "data_shape"));
  if (data.dims) ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape::FromStatic(*data.dims));
  else if (data.rank) ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::vector<Dim>(*data.rank, UnknownDim())));
  else ctx.outputs[0] = TensorType{ctx.inputs[0].dtype, Shape(), false};
  return Status::Ok();
}

Status InferReduceSumTo(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireFloat(ctx, 0));
  AMP_ASSIGN_OR_RETURN(ShapeInput target, ReadShapeInput(ctx, 1, "shape"));
  ctx.outputs[0] = TensorType{ctx.inputs[0].dtype, Shape(), false};
  if (!target.rank) return Status::Ok();
  const TensorType& x = ctx.inputs[0];
  if (x.has_shape && *target.rank > x.shape.rank())
    return ctx.Error("shape has rank ", *target.rank, ", more than X's ", x.shape.ToString());
  if (!target.dims) {
    ctx.outputs[0] = TensorType::Of(x.dtype, Shape(std::vector<Dim>(*target.rank, UnknownDim())));
    return Status::Ok();
  }
  Shape out = Shape::FromStatic(*target.dims);
  if (x.has_shape) {
    const size_t lead = x.shape.rank() - out.rank();
    for (size_t d = 0; d < out.rank(); ++d) {
      const Dim& xd = x.shape[lead + d];
      if (out[d].value != 1 && xd.is_static() && xd.value != out[d].value)
        return ctx.Error("X of shape ", x.shape.ToString(), " does not reduce to ", out.ToString(),
                         " by inverse broadcasting");
    }
  }
  ctx.outputs[0] = TensorType::Of(x.dtype, std::move(out));
  return Status::Ok();
}

}  // namespace amptrain::ir

namespace amptrain::ir {

// GridSampleGrad(dY, X, grid) -> dX (X's type), dgrid (grid's type).
Status InferGridSampleGrad(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  SameAs(ctx, 0, 1);
  SameAs(ctx, 1, 2);
  return Status::Ok();
}

}  // namespace amptrain::ir
