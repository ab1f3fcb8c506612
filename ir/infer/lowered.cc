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


// ---- Ops other exporters and the newest opsets write (importer/lower_nn.cc,
// importer/lower_tensor.cc) ----

namespace {

// The rank-checked axis attribute `name` of input `i`.
StatusOr<int64_t> AxisOf(const InferContext& ctx, const char* name, int64_t def, size_t i = 0) {
  AMP_ASSIGN_OR_RETURN(int64_t axis, ctx.attrs->GetInt(name, def));
  auto at = NormalizeAxis(axis, static_cast<int64_t>(ctx.inputs[i].shape.rank()));
  if (!at.ok()) return NodeOutOfRange(ctx, StrCat(name, " ", axis, " is out of range for shape ", ctx.inputs[i].shape.ToString()));
  return at;
}

// A float input with a shape, the output its type and shape.
Status FloatShapedUnary(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(InferFloatUnary(ctx));
  return RequireShape(ctx, 0);
}

// Hann / Hamming / Blackman windows: [size] in output_datatype (float by
// default).
Status InferWindow(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 0, IsInteger(ctx.inputs[0].dtype), "int32 or int64 (size)"));
  AMP_ASSIGN_OR_RETURN(int64_t periodic, ctx.attrs->GetInt("periodic", 1));
  if (periodic != 0 && periodic != 1) return ctx.Error("periodic is ", periodic, ", expected 0 or 1");
  AMP_ASSIGN_OR_RETURN(int64_t code, ctx.attrs->GetInt("output_datatype", 1));
  const DType t = DTypeFromOnnx(code);
  if (!IsFloat(t)) return ctx.Error("output_datatype ", OnnxTypeName(code), " is not a float type amptrain supports");
  Dim size = UnknownDim();
  if (const Tensor* v = ctx.value(0)) {
    if (v->num_elements() != 1 || v->GetAsInt64(0) < 0) return ctx.Error("size must be one value >= 0");
    size = Dim::Static(v->GetAsInt64(0));
  }
  ctx.outputs[0] = TensorType::Of(t, Shape(std::vector<Dim>{size}));
  return Status::Ok();
}

}  // namespace

// LRN: x [N, C, D...] float, size >= 1; x's type.
Status InferLRN(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(FloatShapedUnary(ctx));
  if (ctx.inputs[0].shape.rank() < 3)
    return ctx.Error("input has shape ", ctx.inputs[0].shape.ToString(), ", expected [N, C, D1, ...]");
  AMP_ASSIGN_OR_RETURN(int64_t size, ctx.attrs->GetInt("size", 0));
  if (size < 1) return ctx.Error("size is ", size, ", expected >= 1 (the attribute is required)");
  return Status::Ok();
}

// LpNormalization: p 1 or 2 along axis; x's type.
Status InferLpNormalization(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(FloatShapedUnary(ctx));
  AMP_ASSIGN_OR_RETURN(int64_t p, ctx.attrs->GetInt("p", 2));
  if (p != 1 && p != 2) return ctx.Error("p is ", p, ", expected 1 or 2");
  return AxisOf(ctx, "axis", -1).status();
}

// MeanVarianceNormalization: axes (default [0, 2, 3]) within x's rank.
Status InferMeanVarianceNormalization(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(FloatShapedUnary(ctx));
  AMP_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ctx.attrs->GetInts("axes", {0, 2, 3}));
  for (int64_t a : axes)
    if (!NormalizeAxis(a, static_cast<int64_t>(ctx.inputs[0].shape.rank())).ok())
      return NodeOutOfRange(ctx, StrCat("axis ", a, " is out of range for shape ", ctx.inputs[0].shape.ToString()));
  return Status::Ok();
}

// GlobalLpPool: [N, C, D...] -> [N, C, 1, ...], p >= 1.
Status InferGlobalLpPool(InferContext& ctx) {
  AMP_ASSIGN_OR_RETURN(int64_t p, ctx.attrs->GetInt("p", 2));
  if (p < 1) return ctx.Error("p is ", p, ", expected >= 1");
  return InferGlobalMaxPool(ctx);
}

// MaxUnpool(x [N, C, D...], indices like x, output_shape?): output_shape's
// value, else [N, C, (D - 1) stride - pads + kernel ...].
Status InferMaxUnpool(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(FloatShapedUnary(ctx));
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 1, ctx.inputs[1].dtype == DType::kInt64, "int64 (indices)"));
  const Shape& x = ctx.inputs[0].shape;
  const size_t rank = x.rank();
  if (rank < 3) return ctx.Error("input has shape ", x.ToString(), ", expected [N, C, D1, ...]");
  if (ctx.inputs[1].has_shape && ctx.inputs[1].shape.rank() != rank)
    return ctx.Error("indices have shape ", ctx.inputs[1].shape.ToString(), ", expected the input's ", x.ToString());
  AMP_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, ctx.attrs->GetInts("kernel_shape"));
  AMP_ASSIGN_OR_RETURN(std::vector<int64_t> strides, ctx.attrs->GetInts("strides", std::vector<int64_t>(rank - 2, 1)));
  AMP_ASSIGN_OR_RETURN(std::vector<int64_t> pads, ctx.attrs->GetInts("pads", std::vector<int64_t>(2 * (rank - 2), 0)));
  if (kernel.size() != rank - 2 || strides.size() != rank - 2 || pads.size() != 2 * (rank - 2))
    return ctx.Error("kernel_shape, strides and pads must have ", rank - 2, ", ", rank - 2, " and ", 2 * (rank - 2),
                     " values for input ", x.ToString());
  if (ctx.has_input(2)) {
    if (const Tensor* v = ctx.value(2)) {
      if (v->num_elements() != static_cast<int64_t>(rank))
        return ctx.Error("output_shape has ", v->num_elements(), " values, expected ", rank);
      std::vector<Dim> dims;
      for (int64_t d = 0; d < v->num_elements(); ++d) dims.push_back(Dim::Static(v->GetAsInt64(d)));
      ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::move(dims)));
      return Status::Ok();
    }
    std::vector<Dim> dims(rank, UnknownDim());
    ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::move(dims)));
    return Status::Ok();
  }
  std::vector<Dim> dims{x[0], x[1]};
  for (size_t d = 0; d + 2 < rank; ++d) {
    const Dim& in = x[d + 2];
    const int64_t out = in.is_static() ? (in.value - 1) * strides[d] - pads[d] - pads[d + rank - 2] + kernel[d] : 0;
    if (in.is_static() && out < 1) return ctx.Error("the unpooled size of axis ", d + 2, " is ", out);
    dims.push_back(in.is_static() ? Dim::Static(out) : UnknownDim());
  }
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::move(dims)));
  return Status::Ok();
}

// Hardmax: x's type; axis (default -1, opset < 13: 1).
Status InferHardmax(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(FloatShapedUnary(ctx));
  return AxisOf(ctx, "axis", ctx.opset < 13 ? 1 : -1).status();
}

// SwiGLU(a, b): equal types and shapes (no broadcasting).
Status InferSwiGLU(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(InferFloatUnary(ctx));
  AMP_RETURN_IF_ERROR(ExpectSameDType(ctx, 0, 1));
  const TensorType &a = ctx.inputs[0], &b = ctx.inputs[1];
  if (a.has_shape && b.has_shape && a.shape.rank() != b.shape.rank())
    return ctx.Error("a ", a.shape.ToString(), " and b ", b.shape.ToString(), " must have the same shape");
  if (a.has_shape && b.has_shape)
    for (size_t d = 0; d < a.shape.rank(); ++d)
      if (a.shape[d].is_static() && b.shape[d].is_static() && a.shape[d].value != b.shape[d].value)
        return ctx.Error("a ", a.shape.ToString(), " and b ", b.shape.ToString(), " must have the same shape");
  return Status::Ok();
}

// RotaryEmbedding(x [B, H, S, D] or [B, S, H D], cos, sin, position_ids?):
// x's type; a 3-D x needs num_heads.
Status InferRotaryEmbedding(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(FloatShapedUnary(ctx));
  AMP_RETURN_IF_ERROR(ExpectSameDType(ctx, 0, 1));
  AMP_RETURN_IF_ERROR(ExpectSameDType(ctx, 0, 2));
  if (ctx.has_input(3)) AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 3, IsInteger(ctx.inputs[3].dtype), "int64 (position_ids)"));
  const size_t rank = ctx.inputs[0].shape.rank();
  if (rank != 3 && rank != 4)
    return ctx.Error("input has shape ", ctx.inputs[0].shape.ToString(), ", expected [B, H, S, D] or [B, S, H D]");
  AMP_ASSIGN_OR_RETURN(int64_t heads, ctx.attrs->GetInt("num_heads", 0));
  if (rank == 3 && heads < 1) return ctx.Error("a 3-D input needs num_heads");
  AMP_RETURN_IF_ERROR(ctx.attrs->GetInt("interleaved", 0).status());
  return ctx.attrs->GetInt("rotary_embedding_dim", 0).status();
}

// ReverseSequence(x, lens [batch]): x's type; batch_axis and time_axis are 0
// and 1 in some order.
Status InferReverseSequence(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 1, IsInteger(ctx.inputs[1].dtype), "int64 (sequence_lens)"));
  if (ctx.inputs[0].shape.rank() < 2) return ctx.Error("input has shape ", ctx.inputs[0].shape.ToString(), ", expected rank >= 2");
  AMP_ASSIGN_OR_RETURN(int64_t batch, ctx.attrs->GetInt("batch_axis", 1));
  AMP_ASSIGN_OR_RETURN(int64_t time, ctx.attrs->GetInt("time_axis", 0));
  if (!((batch == 0 && time == 1) || (batch == 1 && time == 0)))
    return ctx.Error("batch_axis ", batch, " and time_axis ", time, ": expected 0 and 1 in some order");
  SameAs(ctx, 0, 0);
  return Status::Ok();
}

// Compress(x, condition [n] bool), attr axis?: x with axis (x flattened
// without one) cut to the true positions; their count is known where the
// condition's value is.
Status InferCompress(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 1, ctx.inputs[1].dtype == DType::kBool, "bool (condition)"));
  if (ctx.inputs[1].has_shape && ctx.inputs[1].shape.rank() != 1) return ctx.Error("condition must be 1-D");
  Dim kept = UnknownDim();
  if (const Tensor* c = ctx.value(1)) {
    int64_t count = 0;
    for (int64_t i = 0; i < c->num_elements(); ++i) count += c->GetAsInt64(i) != 0;
    kept = Dim::Static(count);
  }
  if (!ctx.attrs->Has("axis")) {
    ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::vector<Dim>{kept}));
    return Status::Ok();
  }
  AMP_ASSIGN_OR_RETURN(int64_t axis, AxisOf(ctx, "axis", 0));
  std::vector<Dim> dims = ctx.inputs[0].shape.dims();
  dims[axis] = kept;
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::move(dims)));
  return Status::Ok();
}

// CenterCropPad(x, shape [k]), attr axes (default all): x with each axis's
// size from shape.
Status InferCenterCropPad(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 1, IsInteger(ctx.inputs[1].dtype), "int64 (shape)"));
  const int64_t rank = static_cast<int64_t>(ctx.inputs[0].shape.rank());
  std::vector<int64_t> all(rank);
  for (int64_t d = 0; d < rank; ++d) all[d] = d;
  AMP_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ctx.attrs->GetInts("axes", all));
  std::vector<Dim> dims = ctx.inputs[0].shape.dims();
  const Tensor* v = ctx.value(1);
  if (v && v->num_elements() != static_cast<int64_t>(axes.size()))
    return ctx.Error("shape has ", v->num_elements(), " values for ", axes.size(), " axes");
  for (size_t i = 0; i < axes.size(); ++i) {
    auto a = NormalizeAxis(axes[i], rank);
    if (!a.ok()) return NodeOutOfRange(ctx, StrCat("axis ", axes[i], " is out of range for rank ", rank));
    dims[*a] = v ? Dim::Static(v->GetAsInt64(static_cast<int64_t>(i))) : UnknownDim();
  }
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::move(dims)));
  return Status::Ok();
}

// TensorScatter(past, update, write_indices [batch]?), attrs axis (default
// -2, not the batch's), mode linear|circular: past's type; update has past's
// dims but at axis, where it has no more.
Status InferTensorScatter(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 1));
  AMP_RETURN_IF_ERROR(ExpectSameDType(ctx, 0, 1));
  if (ctx.has_input(2)) AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 2, IsInteger(ctx.inputs[2].dtype), "int64 (write_indices)"));
  AMP_ASSIGN_OR_RETURN(std::string mode, ctx.attrs->GetString("mode", "linear"));
  if (mode != "linear" && mode != "circular") return ctx.Error("mode '", mode, "' is not one of linear, circular");
  AMP_ASSIGN_OR_RETURN(int64_t axis, AxisOf(ctx, "axis", -2));
  const Shape &past = ctx.inputs[0].shape, &update = ctx.inputs[1].shape;
  if (axis == 0) return ctx.Error("axis 0 is the batch's");
  if (update.rank() != past.rank()) return ctx.Error("update ", update.ToString(), " and past ", past.ToString(), " differ in rank");
  for (size_t d = 0; d < past.rank(); ++d) {
    if (!past[d].is_static() || !update[d].is_static()) continue;
    if (static_cast<int64_t>(d) == axis ? update[d].value > past[d].value : update[d].value != past[d].value)
      return ctx.Error("update ", update.ToString(), " does not fit past ", past.ToString(), " along axis ", axis);
  }
  SameAs(ctx, 0, 0);
  return Status::Ok();
}

Status InferHannWindow(InferContext& ctx) { return InferWindow(ctx); }
Status InferHammingWindow(InferContext& ctx) { return InferWindow(ctx); }
Status InferBlackmanWindow(InferContext& ctx) { return InferWindow(ctx); }

}  // namespace amptrain::ir
