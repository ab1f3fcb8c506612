// Shape/dtype rules of the recurrent layers RNN, GRU, LSTM (ONNX) and of
// their backward ops RNNGrad, GRUGrad, LSTMGrad (attributes: ir/rnn.h).
//   X [seq, batch, input] (layout 1: [batch, seq, input])
//   W [dirs, gates*H, input], R [dirs, gates*H, H], B [dirs, 2*gates*H]
//   sequence_lens int32 [batch]; initial_h, initial_c [dirs, batch, H]
//   (layout 1: [batch, dirs, H]); P [dirs, 3*H]
//   Y [seq, dirs, batch, H] (layout 1: [batch, seq, dirs, H]); Y_h, Y_c like initial_h;
//   the internal reserve (training graphs) float32 [dirs * ReserveLayout(...).per_direction]
// Backward: the forward inputs, then dY, dY_h (and dY_c for LSTM), each
// optional, and the reserve (float32); outputs dX, dW, dR, dB, dinitial_h (, dinitial_c, dP) with the
// types of X, W, R, B, initial_h, ... (B, initial_h, ... when absent: the
// types they would have).
#include "ir/infer/infer_util.h"
#include "ir/rnn.h"

namespace amptrain::ir {

namespace {

// The dims of one input that must match `want` (unknown entries: -1) where
// both are static.
Status ExpectDims(const InferContext& ctx, size_t i, const char* what, const std::vector<int64_t>& want) {
  if (!ctx.has_input(i) || !ctx.inputs[i].has_shape) return Status::Ok();
  const Shape& s = ctx.inputs[i].shape;
  bool ok = s.rank() == want.size();
  for (size_t d = 0; ok && d < want.size(); ++d) ok = want[d] < 0 || !s[d].is_static() || s[d].value == want[d];
  if (ok) return Status::Ok();
  std::string dims;
  for (size_t d = 0; d < want.size(); ++d) dims += (d ? ", " : "") + (want[d] < 0 ? std::string("?") : std::to_string(want[d]));
  return ctx.Error(what, " has shape ", s.ToString(), ", expected [", dims, "]");
}

int64_t StaticOr(const TensorType& t, size_t d, int64_t fallback) {
  return t.has_shape && t.shape.rank() > d && t.shape[d].is_static() ? t.shape[d].value : fallback;
}

Dim DimOf(const TensorType& t, size_t d) {
  return t.has_shape && t.shape.rank() > d ? t.shape[d] : UnknownDim();
}

struct RnnTypes {
  DType dtype = DType::kUndefined;
  Dim seq, batch;
  int64_t hidden = -1;  // -1: unknown
};

StatusOr<RnnTypes> CheckInputs(const InferContext& ctx, const RnnConfig& c) {
  RnnTypes t;
  const TensorType& x = ctx.inputs[RnnConfig::kX];
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, RnnConfig::kX, IsFloat(x.dtype), "a float type"));
  t.dtype = x.dtype;
  static const char* kNames[] = {"X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"};
  for (size_t i = 1; i < c.forward_inputs(); ++i) {
    if (!ctx.has_input(i)) {
      if (i <= RnnConfig::kR) return ctx.Error("input ", kNames[i], " is required");
      continue;
    }
    if (i == RnnConfig::kSequenceLens) {
      if (ctx.inputs[i].dtype != DType::kInt32)
        return ctx.Error("sequence_lens has dtype ", DTypeName(ctx.inputs[i].dtype), ", expected int32");
      continue;
    }
    if (ctx.inputs[i].dtype != t.dtype)
      return ctx.Error(kNames[i], " has dtype ", DTypeName(ctx.inputs[i].dtype), ", expected X's ", DTypeName(t.dtype));
  }
  if (x.has_shape && x.shape.rank() != 3) return ctx.Error("X has shape ", x.shape.ToString(), ", expected rank 3");
  t.seq = DimOf(x, c.layout == 0 ? 0 : 1);
  t.batch = DimOf(x, c.layout == 0 ? 1 : 0);
  const TensorType& w = ctx.inputs[RnnConfig::kW];
  const TensorType& r = ctx.inputs[RnnConfig::kR];
  t.hidden = c.hidden_size > 0 ? c.hidden_size : StaticOr(r, 2, -1);
  if (t.hidden < 0 && StaticOr(w, 1, -1) >= 0) t.hidden = StaticOr(w, 1, -1) / c.gates;
  const int64_t h = t.hidden, gh = h < 0 ? -1 : c.gates * h, dirs = c.directions;
  const int64_t batch = t.batch.is_static() ? t.batch.value : -1;
  AMP_RETURN_IF_ERROR(ExpectDims(ctx, RnnConfig::kW, "W", {dirs, gh, StaticOr(x, 2, -1)}));
  AMP_RETURN_IF_ERROR(ExpectDims(ctx, RnnConfig::kR, "R", {dirs, gh, h}));
  AMP_RETURN_IF_ERROR(ExpectDims(ctx, RnnConfig::kB, "B", {dirs, gh < 0 ? -1 : 2 * gh}));
  AMP_RETURN_IF_ERROR(ExpectDims(ctx, RnnConfig::kSequenceLens, "sequence_lens", {batch}));
  const std::vector<int64_t> state = c.layout == 0 ? std::vector<int64_t>{dirs, batch, h} : std::vector<int64_t>{batch, dirs, h};
  AMP_RETURN_IF_ERROR(ExpectDims(ctx, RnnConfig::kInitialH, "initial_h", state));
  if (c.cell == OpKind::kLSTM) {
    AMP_RETURN_IF_ERROR(ExpectDims(ctx, RnnConfig::kInitialC, "initial_c", state));
    AMP_RETURN_IF_ERROR(ExpectDims(ctx, RnnConfig::kP, "P", {dirs, h < 0 ? -1 : 3 * h}));
  }
  return t;
}

Dim HiddenDim(const RnnTypes& t) { return t.hidden < 0 ? UnknownDim() : Dim::Static(t.hidden); }

TensorType StateType(const RnnConfig& c, const RnnTypes& t) {
  const Dim dirs = Dim::Static(c.directions), h = HiddenDim(t);
  return TensorType::Of(t.dtype, c.layout == 0 ? Shape({dirs, t.batch, h}) : Shape({t.batch, dirs, h}));
}

StatusOr<RnnConfig> Config(const InferContext& ctx, OpKind op) {
  StatusOr<RnnConfig> c = ParseRnnConfig(op, *ctx.attrs);
  if (!c.ok()) return ctx.Error(c.status().message());
  return c;
}

Status InferForward(InferContext& ctx, OpKind op) {
  AMP_ASSIGN_OR_RETURN(RnnConfig c, Config(ctx, op));
  AMP_ASSIGN_OR_RETURN(RnnTypes t, CheckInputs(ctx, c));
  const Dim dirs = Dim::Static(c.directions), h = HiddenDim(t);
  if (!ctx.outputs.empty())
    ctx.outputs[0] = TensorType::Of(t.dtype, c.layout == 0 ? Shape({t.seq, dirs, t.batch, h}) : Shape({t.batch, t.seq, dirs, h}));
  for (size_t o = 1; o < ctx.outputs.size() && o < c.reserve_output(); ++o) ctx.outputs[o] = StateType(c, t);
  if (ctx.outputs.size() > c.reserve_output()) {
    const bool known = t.seq.is_static() && t.batch.is_static() && t.hidden >= 0;
    const int64_t n = known ? c.directions * ReserveLayout(c, t.seq.value * t.batch.value, t.hidden).per_direction : 0;
    ctx.outputs[c.reserve_output()] = TensorType::Of(DType::kFloat32, Shape({known ? Dim::Static(n) : UnknownDim()}));
  }
  return Status::Ok();
}

Status InferBackward(InferContext& ctx, OpKind op) {
  AMP_ASSIGN_OR_RETURN(RnnConfig c, Config(ctx, op));
  AMP_ASSIGN_OR_RETURN(RnnTypes t, CheckInputs(ctx, c));
  const size_t base = c.forward_inputs();
  for (size_t i = base; i < ctx.inputs.size(); ++i) {
    const DType want = i == c.reserve_input() ? DType::kFloat32 : t.dtype;
    if (ctx.has_input(i) && ctx.inputs[i].dtype != want)
      return ctx.Error(i == c.reserve_input() ? "the reserve" : "gradient input ", i == c.reserve_input() ? "" : std::to_string(i),
                       " has dtype ", DTypeName(ctx.inputs[i].dtype), ", expected ", DTypeName(want));
  }
  const int64_t gh = t.hidden < 0 ? -1 : c.gates * t.hidden;
  auto dims = [](std::vector<int64_t> v) {
    std::vector<Dim> d;
    for (int64_t x : v) d.push_back(x < 0 ? UnknownDim() : Dim::Static(x));
    return Shape(d);
  };
  std::vector<TensorType> outs = {ctx.inputs[RnnConfig::kX], ctx.inputs[RnnConfig::kW], ctx.inputs[RnnConfig::kR],
                                  TensorType::Of(t.dtype, dims({c.directions, gh < 0 ? -1 : 2 * gh})), StateType(c, t)};
  if (c.cell == OpKind::kLSTM) {
    outs.push_back(StateType(c, t));
    outs.push_back(TensorType::Of(t.dtype, dims({c.directions, t.hidden < 0 ? -1 : 3 * t.hidden})));
  }
  for (size_t o = 0; o < ctx.outputs.size() && o < outs.size(); ++o) ctx.outputs[o] = outs[o];
  return Status::Ok();
}

}  // namespace

Status InferRNN(InferContext& ctx) { return InferForward(ctx, OpKind::kRNN); }
Status InferGRU(InferContext& ctx) { return InferForward(ctx, OpKind::kGRU); }
Status InferLSTM(InferContext& ctx) { return InferForward(ctx, OpKind::kLSTM); }
Status InferRNNGrad(InferContext& ctx) { return InferBackward(ctx, OpKind::kRNNGrad); }
Status InferGRUGrad(InferContext& ctx) { return InferBackward(ctx, OpKind::kGRUGrad); }
Status InferLSTMGrad(InferContext& ctx) { return InferBackward(ctx, OpKind::kLSTMGrad); }

}  // namespace amptrain::ir
