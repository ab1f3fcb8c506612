// Lowerings of the data-movement and signal ops that other exporters and the
// newest opsets write (ir/ops.def lists them):
//   ReverseSequence -> GatherElements along the time axis with the indices
//                      len - 1 - t below each sequence's length, t past it
//   Compress        -> Gather at NonZero(condition) (x flattened without axis)
//   CenterCropPad   -> Slice where an axis shrinks, Pad where it grows
//   TensorScatter   -> ScatterElements at write_indices[b] + s (mod L)
//   Hann/Hamming/BlackmanWindow -> cosines of Range (folded to a constant
//                      where the size is one)
#include <string>
#include <vector>

#include "importer/lowering_util.h"

namespace amptrain::importer::lowering {

using ir::OpKind;
using ir::Value;

Status LowerReverseSequence(ir::Graph& g, ir::Node* n) {
  Value x = n->input(0), lens = n->input(1);
  const ir::TensorType xt = g.type(x);
  const int64_t rank = static_cast<int64_t>(xt.shape.rank());
  const int64_t time = n->attrs().Int("time_axis", 0);
  Builder b(g, n->name());
  ShapeBuilder sb(g, x, n->name());
  // t and lens as [T, 1] and [B] (time first) or [T] and [B, 1].
  Value t = b.RangeAlong(sb.Dim(time), time == 0 ? 1 : 0);
  lens = b.Int64(lens);
  if (time == 1) lens = b.Op(OpKind::kReshape, {lens, b.Ints({-1, 1})}, "lens_column");
  Value reversed = b.Op(OpKind::kSub, {b.Op(OpKind::kSub, {lens, b.IntScalar(1)}, "last"), t}, "reversed");
  Value idx = b.Op(OpKind::kWhere, {b.Op(OpKind::kLess, {t, lens}, "inside"), reversed, t}, "source_step");
  if (rank > 2) {
    std::vector<int64_t> trailing;
    for (int64_t d = 2; d < rank; ++d) trailing.push_back(d);
    idx = b.Op(OpKind::kUnsqueeze, {idx, b.Ints(trailing)}, "indices_nd");
  }
  idx = b.Op(OpKind::kExpand, {idx, sb.shape()}, "indices");
  ir::Node* gather = b.Node(OpKind::kGatherElements, {x, idx}, "reverse");
  gather->attrs().Set("axis", time);
  return Replace(g, n, gather->output(0));
}

Status LowerCompress(ir::Graph& g, ir::Node* n) {
  Value x = n->input(0);
  Builder b(g, n->name());
  int64_t axis = 0;
  if (n->attrs().Has("axis")) {
    axis = n->attrs().Int("axis", 0);
  } else {
    x = b.Op(OpKind::kReshape, {x, b.Ints({-1})}, "flat");
  }
  Value kept = b.Op(OpKind::kReshape, {b.Op(OpKind::kNonZero, {n->input(1)}, "true_positions"), b.Ints({-1})}, "kept");
  ir::Node* gather = b.Node(OpKind::kGather, {x, kept}, "compress");
  gather->attrs().Set("axis", axis);
  return Replace(g, n, gather->output(0));
}

// TensorScatter (opset 24, a KV cache's update): update [.., S, ..] written
// into past [.., L, ..] along axis from write_indices[b] (0 without them) on,
// modulo L in mode circular: ScatterElements with the positions w[b] + s
// broadcast to update's shape.
Status LowerTensorScatter(ir::Graph& g, ir::Node* n) {
  Value past = n->input(0), update = n->input(1);
  const ir::TensorType pt = g.type(past);
  const int64_t rank = static_cast<int64_t>(pt.shape.rank());
  int64_t axis = n->attrs().Int("axis", -2);
  if (axis < 0) axis += rank;
  Builder b(g, n->name());
  ShapeBuilder us(g, update, n->name());
  Value pos = b.RangeAlong(us.Dim(axis), static_cast<size_t>(rank - axis - 1));
  if (n->has_input(2)) {
    std::vector<int64_t> per_batch(static_cast<size_t>(rank), 1);
    per_batch[0] = -1;
    pos = b.Op(OpKind::kAdd, {b.Op(OpKind::kReshape, {b.Int64(n->input(2)), b.Ints(per_batch)}, "starts"), pos},
               "positions");
  }
  if (n->attrs().Str("mode", "linear") == "circular")
    pos = b.Op(OpKind::kMod, {pos, ShapeBuilder(g, past, n->name()).Dim(axis)}, "wrapped");
  pos = b.Op(OpKind::kExpand, {pos, us.shape()}, "indices");
  ir::Node* scatter = b.Node(OpKind::kScatterElements, {past, pos, update}, "write");
  scatter->attrs().Set("axis", axis);
  return Replace(g, n, scatter->output(0));
}

// CenterCropPad: an axis of d elements cut to s starts at (d - s) / 2; one
// grown to s gets (s - d) / 2 zeros before and the rest after. The sizes must
// be static (an image pipeline's fixed crop).
Status LowerCenterCropPad(ir::Graph& g, ir::Node* n) {
  Value x = n->input(0);
  const ir::TensorType xt = g.type(x), yt = g.type(n->output(0));
  const size_t rank = xt.shape.rank();
  std::vector<int64_t> starts, ends, axes, pads(2 * rank, 0);
  bool grows = false;
  for (size_t a = 0; a < rank; ++a) {
    const ir::Dim &in = xt.shape[a], &out = yt.shape[a];
    if (in.is_static() && out.is_static() && in.value == out.value) continue;
    if (!in.is_static() || !out.is_static())
      return Unimplemented(n->Describe(), ": needs static sizes (input ", xt.shape.ToString(), ", output ",
                           yt.shape.ToString(), ")");
    if (out.value < in.value) {
      starts.push_back((in.value - out.value) / 2);
      ends.push_back(starts.back() + out.value);
      axes.push_back(static_cast<int64_t>(a));
    } else {
      pads[a] = (out.value - in.value) / 2;
      pads[a + rank] = out.value - in.value - pads[a];
      grows = true;
    }
  }
  Builder b(g, n->name());
  Value y = x;
  if (!axes.empty()) y = b.Op(OpKind::kSlice, {y, b.Ints(starts), b.Ints(ends), b.Ints(axes)}, "crop");
  if (grows) y = b.Op(OpKind::kPad, {y, b.Ints(pads)}, "pad");
  return Replace(g, n, y);
}

// w[k] = sum_j a_j cos(2 pi j k / N), N = size (periodic) or size - 1, in
// float32 (float64 for a float64 window), then the output type.
Status LowerWindow(ir::Graph& g, ir::Node* n) {
  std::vector<double> a;
  switch (n->op()) {
    case OpKind::kHannWindow: a = {0.5, -0.5}; break;
    case OpKind::kHammingWindow: a = {25.0 / 46.0, -21.0 / 46.0}; break;
    case OpKind::kBlackmanWindow: a = {0.42, -0.5, 0.08}; break;
    default: return Internal(n->Describe(), ": not a window op");
  }
  const ir::DType out = g.type(n->output(0)).dtype;
  const ir::DType ct = out == ir::DType::kFloat64 ? ir::DType::kFloat64 : ir::DType::kFloat32;
  Builder b(g, n->name());
  Value size = b.Int64(n->input(0));
  Value k = b.Cast(b.RangeAlong(size, 0), ct);
  Value period = n->attrs().Int("periodic", 1) ? size : b.Op(OpKind::kSub, {size, b.IntScalar(1)}, "period");
  AMP_ASSIGN_OR_RETURN(Value two_pi, b.Scalar(ct, 6.283185307179586));
  Value phase = b.Op(OpKind::kDiv, {b.Op(OpKind::kMul, {k, two_pi}, "angle"), b.Cast(period, ct)}, "phase");
  AMP_ASSIGN_OR_RETURN(Value y, b.Scalar(ct, a[0]));
  for (size_t j = 1; j < a.size(); ++j) {
    Value arg = phase;
    if (j > 1) {
      AMP_ASSIGN_OR_RETURN(Value mult, b.Scalar(ct, static_cast<double>(j)));
      arg = b.Op(OpKind::kMul, {phase, mult}, "harmonic");
    }
    AMP_ASSIGN_OR_RETURN(Value coef, b.Scalar(ct, a[j]));
    y = b.Op(OpKind::kAdd, {y, b.Op(OpKind::kMul, {b.Op(OpKind::kCos, {arg}, "cos"), coef}, "term")}, "sum");
  }
  if (out != ct) y = b.Cast(y, out);
  return Replace(g, n, y);
}

}  // namespace amptrain::importer::lowering
