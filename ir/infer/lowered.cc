// Shape/dtype rules of the ops the importer lowers right after shape
// inference (importer/lowerings.cc): only that first inference sees them.
//   InstanceNormalization(x [N, C, D...], scale [C], bias [C]), attr epsilon: x's type.
//   DepthToSpace(x [N, C, H, W]), attrs blocksize b, mode DCR|CRD: [N, C / b^2, H b, W b].
//   SpaceToDepth(x [N, C, H, W]), attrs blocksize b, mode DCR|CRD (opset 24): [N, C b^2, H / b, W / b].
#include "ir/einsum_equation.h"
#include "ir/infer/conv_geometry.h"
#include "ir/infer/infer_util.h"
#include "ir/infer/spectral.h"
#include "ir/infer/value_util.h"
#include "ir/onnx_dtype.h"

namespace amptrain::ir {

namespace {

// x float with a shape; scale and bias of x's dtype; a float epsilon.
Status CheckNormInputs(const InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  AMP_RETURN_IF_ERROR(ExpectSameDType(ctx, 0, 1));
  AMP_RETURN_IF_ERROR(ExpectSameDType(ctx, 0, 2));
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  AMP_RETURN_IF_ERROR(ctx.attrs->GetFloat("epsilon", 1e-5f).status());
  return Status::Ok();
}

}  // namespace

Status InferInstanceNormalization(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(CheckNormInputs(ctx));
  const Shape& x = ctx.inputs[0].shape;
  if (x.rank() < 3) return ctx.Error("input has shape ", x.ToString(), ", expected [N, C, D1, ...]");
  for (size_t i = 1; i < 3; ++i) {
    const TensorType& t = ctx.inputs[i];
    if (t.has_shape && (t.shape.rank() != 1 || (t.shape[0].is_static() && x[1].is_static() && t.shape[0].value != x[1].value)))
      return ctx.Error(i == 1 ? "scale" : "bias", " has shape ", t.shape.ToString(), ", expected [C] = [",
                       x[1].is_static() ? StrCat(x[1].value) : std::string("C"), "]");
  }
  SameAs(ctx, 0, 0);
  return Status::Ok();
}

namespace {

// DepthToSpace (to_space) and SpaceToDepth: 4-D x with static C, H, W.
Status InferBlockRearrange(InferContext& ctx, bool to_space) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  const Shape& x = ctx.inputs[0].shape;
  if (x.rank() != 4) return ctx.Error("input has shape ", x.ToString(), ", expected [N, C, H, W]");
  AMP_ASSIGN_OR_RETURN(int64_t b, ctx.attrs->GetInt("blocksize", 0));
  if (b < 1) return ctx.Error("attribute blocksize is ", b, ", expected >= 1");
  AMP_ASSIGN_OR_RETURN(std::string mode, ctx.attrs->GetString("mode", "DCR"));
  if (mode != "DCR" && mode != "CRD") return ctx.Error("attribute mode is '", mode, "', expected DCR or CRD");
  std::vector<Dim> out = x.dims();
  if (to_space) {
    if (x[1].is_static() && x[1].value % (b * b) != 0)
      return ctx.Error(x[1].value, " channels do not split into blocks of ", b, "x", b);
    out[1] = x[1].is_static() ? Dim::Static(x[1].value / (b * b)) : UnknownDim();
    for (size_t d = 2; d < 4; ++d) out[d] = x[d].is_static() ? Dim::Static(x[d].value * b) : UnknownDim();
  } else {
    for (size_t d = 2; d < 4; ++d) {
      if (x[d].is_static() && x[d].value % b != 0)
        return ctx.Error("spatial dim ", d, " (", x[d].value, ") is not a multiple of blocksize ", b);
      out[d] = x[d].is_static() ? Dim::Static(x[d].value / b) : UnknownDim();
    }
    out[1] = x[1].is_static() ? Dim::Static(x[1].value * b * b) : UnknownDim();
  }
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::move(out)));
  return Status::Ok();
}

}  // namespace

Status InferDepthToSpace(InferContext& ctx) { return InferBlockRearrange(ctx, true); }
Status InferSpaceToDepth(InferContext& ctx) { return InferBlockRearrange(ctx, false); }

}  // namespace amptrain::ir

namespace amptrain::ir {

// Einsum: each output label takes its dim from an input that has it (a dim
// of 1 broadcasts against the other's); the inputs' dtype.
Status InferEinsum(InferContext& ctx) {
  AMP_ASSIGN_OR_RETURN(std::string equation, ctx.attrs->GetString("equation", ""));
  std::vector<size_t> ranks;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    AMP_RETURN_IF_ERROR(RequireShape(ctx, i));
    AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, i, IsNumeric(ctx.inputs[i].dtype), "a numeric type"));
    if (i > 0) AMP_RETURN_IF_ERROR(ExpectSameDType(ctx, 0, i));
    ranks.push_back(ctx.inputs[i].shape.rank());
  }
  auto eq = ParseEinsum(equation, ranks);
  if (!eq.ok()) return ctx.Error(eq.status().message());
  std::vector<Dim> dims;
  for (char c : eq->output) {
    Dim d = Dim::Static(1);
    for (size_t i = 0; i < eq->inputs.size(); ++i) {
      size_t at = eq->inputs[i].find(c);
      if (at == std::string::npos) continue;
      const Dim& di = ctx.inputs[i].shape[at];
      if (!(di.is_static() && di.value == 1)) d = di;
    }
    dims.push_back(d);
  }
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::move(dims)));
  return Status::Ok();
}

}  // namespace amptrain::ir

namespace amptrain::ir {

namespace {

// Checks that every static dim of `t` equals `want` (rank 1).
Status ExpectVectorOf(const InferContext& ctx, size_t i, const char* what, int64_t want) {
  const TensorType& t = ctx.inputs[i];
  if (!t.has_shape) return Status::Ok();
  if (t.shape.rank() != 1 || (t.shape[0].is_static() && want >= 0 && t.shape[0].value != want))
    return ctx.Error(what, " has shape ", t.shape.ToString(), ", expected [", want, "]");
  return Status::Ok();
}

Dim Times(const Dim& a, int64_t k) { return a.is_static() ? Dim::Static(a.value * k) : UnknownDim(); }

}  // namespace

// GroupNormalization: x's type; scale and bias are [num_groups] below opset 21, [C] from 21.
Status InferGroupNormalization(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(CheckNormInputs(ctx));
  AMP_RETURN_IF_ERROR(ctx.attrs->GetInt("stash_type", 1).status());
  AMP_ASSIGN_OR_RETURN(int64_t groups, ctx.attrs->GetInt("num_groups", 0));
  const Shape& x = ctx.inputs[0].shape;
  if (x.rank() < 3) return ctx.Error("input has shape ", x.ToString(), ", expected [N, C, D1, ...]");
  if (groups < 1) return ctx.Error("attribute num_groups is ", groups, ", expected >= 1");
  if (x[1].is_static() && x[1].value % groups != 0)
    return ctx.Error(x[1].value, " channels do not split into ", groups, " groups");
  const bool per_group = ctx.opset > 0 && ctx.opset < 21;
  const int64_t want = per_group ? groups : (x[1].is_static() ? x[1].value : -1);
  AMP_RETURN_IF_ERROR(ExpectVectorOf(ctx, 1, "scale", want));
  AMP_RETURN_IF_ERROR(ExpectVectorOf(ctx, 2, "bias", want));
  SameAs(ctx, 0, 0);
  return Status::Ok();
}

// RMSNormalization: x's shape, scale's dtype; scale broadcasts to x's normalized dims.
Status InferRMSNormalization(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 1, IsFloat(ctx.inputs[1].dtype), "a float type"));
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  AMP_RETURN_IF_ERROR(ctx.attrs->GetFloat("epsilon", 1e-5f).status());
  AMP_RETURN_IF_ERROR(ctx.attrs->GetInt("stash_type", 1).status());
  AMP_ASSIGN_OR_RETURN(int64_t axis, ctx.attrs->GetInt("axis", -1));
  const int64_t rank = static_cast<int64_t>(ctx.inputs[0].shape.rank());
  if (axis < -rank || axis >= rank) return ctx.Error("axis ", axis, " is out of range for rank ", rank);
  ctx.outputs[0] = TensorType::Of(ctx.inputs[1].dtype, ctx.inputs[0].shape);  // Y is scale's type
  return Status::Ok();
}

Status InferSwish(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ctx.attrs->GetFloat("alpha", 1.0f).status());
  return InferFloatUnary(ctx);
}

// Attention: Q [B, Hq, Sq, D] (or [B, Sq, Hq D] with q_num_heads), K [B, Hkv, Skv, D],
// V [B, Hkv, Skv, Dv]; past_key/past_value [B, Hkv, P, D|Dv].
//   Y [B, Hq, Sq, Dv] (3-D: [B, Sq, Hq Dv]), present_key [B, Hkv, P + Skv, D],
//   present_value [B, Hkv, P + Skv, Dv], qk_matmul_output [B, Hq, Sq, P + Skv].
Status InferAttention(InferContext& ctx) {
  for (size_t i = 0; i < 3; ++i) AMP_RETURN_IF_ERROR(RequireShape(ctx, i));
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  AMP_RETURN_IF_ERROR(ExpectSameDType(ctx, 0, 1));
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 2, IsFloat(ctx.inputs[2].dtype), "a float type"));
  const Shape &q = ctx.inputs[0].shape, &k = ctx.inputs[1].shape, &v = ctx.inputs[2].shape;
  const size_t rank = q.rank();
  if ((rank != 3 && rank != 4) || k.rank() != rank || v.rank() != rank)
    return ctx.Error("Q, K and V have shapes ", q.ToString(), ", ", k.ToString(), ", ", v.ToString(),
                     "; expected all 4-D [batch, heads, seq, head_size] or all 3-D [batch, seq, hidden]");
  AMP_ASSIGN_OR_RETURN(int64_t q_heads, ctx.attrs->GetInt("q_num_heads", 0));
  AMP_ASSIGN_OR_RETURN(int64_t kv_heads, ctx.attrs->GetInt("kv_num_heads", 0));
  Dim batch = q[0], sq = rank == 4 ? q[2] : q[1], skv = rank == 4 ? k[2] : k[1];
  Dim hq, hkv, d, dv;
  if (rank == 4) {
    hq = q[1], hkv = k[1], d = q[3], dv = v[3];
  } else {
    if (q_heads < 1 || kv_heads < 1)
      return ctx.Error("3-D inputs need attributes q_num_heads and kv_num_heads (got ", q_heads, ", ", kv_heads, ")");
    auto split = [&](const Dim& hidden, int64_t heads, const char* what) -> StatusOr<Dim> {
      if (!hidden.is_static()) return UnknownDim();
      if (hidden.value % heads != 0)
        return ctx.Error(what, "'s hidden size ", hidden.value, " does not split into ", heads, " heads");
      return Dim::Static(hidden.value / heads);
    };
    hq = Dim::Static(q_heads), hkv = Dim::Static(kv_heads);
    AMP_ASSIGN_OR_RETURN(d, split(q[2], q_heads, "Q"));
    AMP_ASSIGN_OR_RETURN(dv, split(v[2], kv_heads, "V"));
  }
  if (hq.is_static() && hkv.is_static() && (hkv.value < 1 || hq.value % hkv.value != 0))
    return ctx.Error(hq.value, " query heads are not a multiple of ", hkv.value, " key/value heads");
  Dim total = skv;
  const bool past = ctx.has_input(4) || ctx.has_input(5);
  if (past) {
    if (!ctx.has_input(4) || !ctx.has_input(5)) return ctx.Error("past_key and past_value must be given together");
    AMP_RETURN_IF_ERROR(RequireShape(ctx, 4));
    const Shape& pk = ctx.inputs[4].shape;
    if (pk.rank() != 4) return ctx.Error("past_key has shape ", pk.ToString(), ", expected [batch, kv_heads, past, head_size]");
    total = pk[2].is_static() && skv.is_static() ? Dim::Static(pk[2].value + skv.value) : UnknownDim();
  }
  if (ctx.has_input(6) && past) return ctx.Error("nonpad_kv_seqlen cannot be combined with past_key/past_value");
  const DType t1 = ctx.inputs[0].dtype;
  if (rank == 4)
    ctx.outputs[0] = TensorType::Of(t1, Shape({batch, hq, sq, dv}));
  else
    ctx.outputs[0] = TensorType::Of(t1, Shape({batch, sq, hq.is_static() && dv.is_static() ? Times(dv, hq.value) : UnknownDim()}));
  if (ctx.outputs.size() > 1) ctx.outputs[1] = TensorType::Of(t1, Shape({batch, hkv, total, d}));
  if (ctx.outputs.size() > 2) ctx.outputs[2] = TensorType::Of(ctx.inputs[2].dtype, Shape({batch, hkv, total, dv}));
  if (ctx.outputs.size() > 3) ctx.outputs[3] = TensorType::Of(t1, Shape({batch, hq, sq, total}));
  return Status::Ok();
}

}  // namespace amptrain::ir

namespace amptrain::ir {

namespace {

// Sum, Mean: the inputs broadcast together; one float type.
Status Variadic(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  TensorType out = ctx.inputs[0];
  for (size_t i = 1; i < ctx.inputs.size(); ++i) {
    AMP_RETURN_IF_ERROR(ExpectSameDType(ctx, 0, i));
    if (!out.has_shape || !ctx.inputs[i].has_shape) {
      out.has_shape = false;
      continue;
    }
    auto s = BroadcastShapes(out.shape, ctx.inputs[i].shape);
    if (!s.ok()) return ctx.Error(s.status().message());
    out.shape = *s;
  }
  ctx.outputs[0] = out;
  return Status::Ok();
}

}  // namespace

// GlobalMaxPool: [N, C, D...] -> [N, C, 1, ...].
Status InferGlobalMaxPool(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(InferFloatUnary(ctx));
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  std::vector<Dim> dims = ctx.inputs[0].shape.dims();
  if (dims.size() < 3) return ctx.Error("input has shape ", ctx.inputs[0].shape.ToString(), ", expected [N, C, D1, ...]");
  for (size_t d = 2; d < dims.size(); ++d) dims[d] = Dim::Static(1);
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::move(dims)));
  return Status::Ok();
}
Status InferSoftsign(InferContext& ctx) { return InferFloatUnary(ctx); }
Status InferShrink(InferContext& ctx) { return InferFloatUnary(ctx); }
Status InferThresholdedRelu(InferContext& ctx) { return InferFloatUnary(ctx); }
Status InferReduceL1(InferContext& ctx) { return InferFloatReduce(ctx); }
Status InferReduceSumSquare(InferContext& ctx) { return InferFloatReduce(ctx); }
Status InferReduceLogSum(InferContext& ctx) { return InferFloatReduce(ctx); }
Status InferSum(InferContext& ctx) { return Variadic(ctx); }
Status InferMean(InferContext& ctx) { return Variadic(ctx); }

// OneHot(indices, depth (scalar), values [off, on]), attr axis: indices'
// shape with depth inserted at axis, values' type.
Status InferOneHot(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsNumeric(ctx.inputs[0].dtype), "a numeric type"));
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 1, IsNumeric(ctx.inputs[1].dtype), "a numeric type"));
  const TensorType& values = ctx.inputs[2];
  if (values.has_shape && (values.shape.rank() != 1 || (values.shape[0].is_static() && values.shape[0].value != 2)))
    return ctx.Error("values has shape ", values.shape.ToString(), ", expected [2] (off, on)");
  AMP_ASSIGN_OR_RETURN(int64_t axis, ctx.attrs->GetInt("axis", -1));
  const int64_t rank = static_cast<int64_t>(ctx.inputs[0].shape.rank()) + 1;
  AMP_ASSIGN_OR_RETURN(int64_t at, NormalizeAxis(axis, rank));
  Dim depth = UnknownDim();
  if (const Tensor* d = ctx.value(1); d && d->num_elements() == 1) {
    const double v = d->GetAsDouble(0);
    if (!(v >= 1)) return ctx.Error("depth is ", v, ", expected >= 1");
    depth = Dim::Static(static_cast<int64_t>(v));
  }
  std::vector<Dim> dims = ctx.inputs[0].shape.dims();
  dims.insert(dims.begin() + at, depth);
  ctx.outputs[0] = TensorType::Of(values.dtype, Shape(std::move(dims)));
  return Status::Ok();
}

// EyeLike: x's 2-D shape, in the dtype attribute's type (x's without it).
Status InferEyeLike(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  if (ctx.inputs[0].shape.rank() != 2) return ctx.Error("input has rank ", ctx.inputs[0].shape.rank(), ", expected 2");
  DType t = ctx.inputs[0].dtype;
  if (ctx.attrs->Has("dtype")) {
    AMP_ASSIGN_OR_RETURN(int64_t code, ctx.attrs->GetInt("dtype", 0));
    t = DTypeFromOnnx(code);
    if (t == DType::kUndefined) return ctx.Error("attribute dtype ", OnnxTypeName(code), " is not supported");
  }
  AMP_RETURN_IF_ERROR(ctx.attrs->GetInt("k", 0).status());
  ctx.outputs[0] = TensorType::Of(t, ctx.inputs[0].shape);
  return Status::Ok();
}

// NegativeLogLikelihoodLoss: input [N, C, d...] float, target [N, d...]
// int32/int64, weight [C]; the loss is target's shape (reduction none) or a
// scalar, in input's type.
Status InferNegativeLogLikelihoodLoss(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 1, ctx.inputs[1].dtype == DType::kInt64 || ctx.inputs[1].dtype == DType::kInt32,
                                       "int32 or int64"));
  if (ctx.has_input(2)) AMP_RETURN_IF_ERROR(ExpectSameDType(ctx, 0, 2));
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 1));
  AMP_ASSIGN_OR_RETURN(std::string reduction, ctx.attrs->GetString("reduction", "mean"));
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return ctx.Error("reduction '", reduction, "' is not one of none, sum, mean");
  AMP_RETURN_IF_ERROR(ctx.attrs->GetInt("ignore_index", 0).status());
  const Shape &x = ctx.inputs[0].shape, &t = ctx.inputs[1].shape;
  if (x.rank() < 2 || t.rank() != x.rank() - 1)
    return ctx.Error("input ", x.ToString(), " and target ", t.ToString(), ": expected [N, C, d...] and [N, d...]");
  ctx.outputs[0] = reduction == "none" ? TensorType::Of(ctx.inputs[0].dtype, t)
                                       : TensorType::Of(ctx.inputs[0].dtype, std::vector<int64_t>{});
  return Status::Ok();
}

// Col2Im(x [N, C prod(block), L], image_shape, block_shape): [N, C, image...]
// (ir/infer/conv_geometry.h: DecodeCol2Im).
Status InferCol2Im(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  const Shape& x = ctx.inputs[0].shape;
  if (x.rank() != 3) return ctx.Error("input has shape ", x.ToString(), ", expected [N, C x prod(block_shape), L]");
  auto geometry = DecodeCol2Im(*ctx.attrs, ctx.value(1), ctx.value(2));
  if (!geometry.ok()) return ctx.Error(geometry.status().message());
  Dim channels = UnknownDim();
  if (x[1].is_static()) {
    if (x[1].value % geometry->block_elements != 0)
      return ctx.Error("input has ", x[1].value, " channels, not a multiple of the block size ",
                       geometry->block_elements);
    channels = Dim::Static(x[1].value / geometry->block_elements);
  }
  if (x[2].is_static() && x[2].value != geometry->positions)
    return ctx.Error("input has ", x[2].value, " blocks (L), the image and block shapes give ", geometry->positions);
  std::vector<Dim> dims{x[0], channels};
  for (int64_t v : geometry->image) dims.push_back(Dim::Static(v));
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::move(dims)));
  return Status::Ok();
}

// Size(x): an int64 scalar, known where x's shape is static.
Status InferSize(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  ctx.outputs[0] = TensorType::Of(DType::kInt64, std::vector<int64_t>{});
  const Shape& x = ctx.inputs[0].shape;
  if (x.is_static() && x.num_elements() != Shape::kTooManyElements)
    SetValue(ctx, 0, Tensor::Int64s({x.num_elements()}, {}));
  return Status::Ok();
}

// STFT(signal [B, T, 1|2], frame_step, window [W]?, frame_length?), attr
// onesided (default 1): [B, frames, bins, 2] with frames = (T - W) / step + 1
// and bins = W / 2 + 1 (onesided) or W (W: ir/infer/spectral.h
// StftFrameLength). A signal [B, T] is real (the TorchScript exporter writes
// that; ONNX Runtime takes it too).
Status InferSTFT(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsFloat(ctx.inputs[0].dtype), "a float type"));
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 1, IsInteger(ctx.inputs[1].dtype), "int32 or int64 (frame_step)"));
  if (ctx.has_input(2)) AMP_RETURN_IF_ERROR(ExpectSameDType(ctx, 0, 2));
  if (ctx.has_input(3))
    AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 3, IsInteger(ctx.inputs[3].dtype), "int32 or int64 (frame_length)"));
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  AMP_ASSIGN_OR_RETURN(int64_t onesided, ctx.attrs->GetInt("onesided", 1));
  const Shape& x = ctx.inputs[0].shape;
  if (x.rank() != 3 && x.rank() != 2)
    return ctx.Error("signal has shape ", x.ToString(), ", expected [batch, length, 1 or 2] (or [batch, length])");
  if (x.rank() == 3 && x[2].is_static() && x[2].value != 1 && x[2].value != 2)
    return ctx.Error("signal's last dim is ", x[2].value, "; it must be 1 (real) or 2 (complex)");
  if (onesided && x.rank() == 3 && x[2].is_static() && x[2].value == 2)
    return ctx.Error("onesided=1 needs a real signal ([batch, length, 1])");
  if (ctx.has_input(2) && (!ctx.inputs[2].has_shape || ctx.inputs[2].shape.rank() != 1))
    return ctx.Error("window must be 1-D");
  int64_t step = -1;
  if (const Tensor* s = ctx.value(1)) {
    if (s->num_elements() != 1 || (step = s->GetAsInt64(0)) < 1) return ctx.Error("frame_step must be one value >= 1");
  }
  auto frame = StftFrameLength(ctx.has_input(3), ctx.value(3), ctx.has_input(2) ? &ctx.inputs[2] : nullptr, x);
  if (!frame.ok()) return ctx.Error(frame.status().message());
  const int64_t width = *frame;
  Dim frames = UnknownDim(), bins = UnknownDim();
  if (width >= 0 && step >= 1 && x[1].is_static()) {
    if (x[1].value < width) return ctx.Error("the signal has ", x[1].value, " samples, fewer than a frame's ", width);
    frames = Dim::Static((x[1].value - width) / step + 1);
  }
  if (width >= 0) bins = Dim::Static(onesided ? width / 2 + 1 : width);
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::vector<Dim>{x[0], frames, bins, Dim::Static(2)}));
  return Status::Ok();
}

}  // namespace amptrain::ir
