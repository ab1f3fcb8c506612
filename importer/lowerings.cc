// Ops amptrain runs as compositions of others, rewritten right after import's
// shape inference (importer/opset_adapters.h: LowerComposites), so that the
// executor, autodiff, the AMP plan and the exporter need nothing new:
//   InstanceNormalization(x [N, C, D...], scale, bias, epsilon)
//     -> LayerNormalization(x, ones[D...], axis = 2, epsilon)    (statistics per (n, c))
//        -> Mul(scale as [C, 1, ...]) -> Add(bias as [C, 1, ...])
//     The Mul is left out where scale is a Constant of ones and the Add where
//     bias is a Constant of zeros (nn.GroupNorm's export: its affine comes
//     after, as a separate Mul/Add); initializers always keep theirs. With
//     symbolic spatial dims the ones come from ConstantOfShape(Shape(x)[2:]).
//   DepthToSpace(x [N, C, H, W], b, DCR) -> Reshape [N, b, b, C/b^2, H, W]
//     -> Transpose [0, 3, 4, 1, 5, 2] -> Reshape [N, C/b^2, H b, W b];
//     CRD: Reshape [N, C/b^2, b, b, H, W] -> Transpose [0, 1, 4, 2, 5, 3].
//   SpaceToDepth(x, b, DCR) -> Reshape [N, C, H/b, b, W/b, b]
//     -> Transpose [0, 3, 5, 1, 2, 4] -> Reshape [N, C b^2, H/b, W/b];
//     CRD (opset 24): Transpose [0, 1, 3, 5, 2, 4].
//     The target shapes are computed from Shape(x) (Gather/Mul/Div/Concat),
//     so symbolic dims work; constant folding turns them into constants
//     where the shape is static.
//   GroupNormalization, RMSNormalization (opset 23), Swish (opset 24): see
//     LowerGroupNorm, LowerRMSNorm, LowerSwish below.
//   Einsum: see EinsumLowering below.
//   Attention (opsets 23-25): importer/lower_attention.cc.
//   Col2Im: see LowerCol2Im below. Size -> ReduceProd(Shape(x)).
//   STFT: frames gathered, windowed, then one DFT; see LowerStft below.
//   GlobalMaxPool, Softsign, Shrink, ThresholdedRelu, ReduceL1,
//   ReduceSumSquare, ReduceLogSum, Sum, Mean, OneHot,
//   NegativeLogLikelihoodLoss: each a few
//   elementwise / reduce ops, see below.
//   LRN, LpNormalization, MeanVarianceNormalization, LpPool, GlobalLpPool,
//   MaxUnpool, Hardmax, SwiGLU, RotaryEmbedding: importer/lower_nn.cc.
//   ReverseSequence, Compress, CenterCropPad, TensorScatter, the window functions:
//   importer/lower_tensor.cc.
// Each replacement keeps the lowered node's output name, so graph outputs
// and later readers see the same value.
#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "importer/lowering_util.h"
#include "importer/opset_adapters.h"
#include "ir/einsum_equation.h"
#include "ir/infer/conv_geometry.h"
#include "ir/infer/spectral.h"
#include "ir/infer/value_util.h"
#include "ir/onnx_dtype.h"

namespace amptrain::importer {

namespace {

using ir::OpKind;
using ir::Value;
using namespace lowering;  // NOLINT: the lowering building blocks

Status LowerInstanceNorm(ir::Graph& g, ir::Node* n) {
  Value x = n->input(0), scale = n->input(1), bias = n->input(2);
  const std::string base = n->name();
  const ir::TensorType& xt = g.type(x);
  if (!xt.has_shape || xt.shape.rank() < 3) return InvalidArgument(n->Describe(), ": expects [N, C, D1, ...]");
  const size_t spatial_rank = xt.shape.rank() - 2;
  // LayerNormalization's scale: ones over the spatial dims, a constant where
  // they are static, else ConstantOfShape(Shape(x)[2:]) at run time.
  Value ones;
  auto spatial = StaticTail(g, n, x, 2);
  if (spatial.ok()) {
    AMP_ASSIGN_OR_RETURN(ones, FilledConstant(g, base + "_ones", xt.dtype, *spatial, 1.0));
  } else {
    std::vector<int64_t> axes(spatial_rank);
    for (size_t d = 0; d < spatial_rank; ++d) axes[d] = static_cast<int64_t>(d + 2);
    ShapeBuilder sb(g, x, base);
    AMP_ASSIGN_OR_RETURN(ir::Tensor one, ir::Tensor::Zeros(xt.dtype, {1}));
    ir::SetElementFromDouble(one, 0, 1.0);
    ir::Node* c = g.AddNode(OpKind::kConstantOfShape, {sb.Dims(axes)}, 1, g.UniqueName(base + "_ones"));
    c->attrs().Set("value", std::move(one));
    ones = c->output(0);
  }
  ir::Node* ln = g.AddNode(OpKind::kLayerNormalization, {x, ones}, 1, g.UniqueName(base + "_ln"));
  ln->attrs().Set("axis", int64_t{2});
  ln->attrs().Set("epsilon", static_cast<float>(n->attrs().Float("epsilon", 1e-5f)));
  ln->set_doc(n->doc());
  Value y = ln->output(0);
  // scale and bias as [C, 1, ..., 1]: they broadcast over the spatial dims.
  std::vector<int64_t> channel_shape(spatial_rank + 1, 1);
  channel_shape[0] = -1;
  auto per_channel = [&](Value v, const char* what) {
    return g.AddNode(OpKind::kReshape, {v, IntsConstant(g, base + "_" + what + "_shape", channel_shape)}, 1,
                     g.UniqueName(base + "_" + what + "_reshape"))->output(0);
  };
  if (!ConstantAll(g, scale, 1.0))
    y = g.AddNode(OpKind::kMul, {y, per_channel(scale, "scale")}, 1, g.UniqueName(base + "_scale"))->output(0);
  if (!ConstantAll(g, bias, 0.0))
    y = g.AddNode(OpKind::kAdd, {y, per_channel(bias, "bias")}, 1, g.UniqueName(base + "_bias"))->output(0);
  return Replace(g, n, y);
}

// stash_type = 1 (the default) asks for the statistics in float32: a
// float16 / bfloat16 input is widened for them (AMP keeps the normalization
// in float32 anyway; this is for models stored in 16 bits).
bool WidenForStats(const ir::Node* n, ir::DType x) {
  return n->attrs().Int("stash_type", 1) == 1 && (x == ir::DType::kFloat16 || x == ir::DType::kBFloat16);
}

// GroupNormalization -> Reshape [N, G, -1] -> LayerNormalization(axis 2)
// -> Reshape to x's shape -> per-channel Mul/Add. Opsets 18-20 give scale
// and bias per group: each is repeated over its group's channels.
Status LowerGroupNorm(ir::Graph& g, ir::Node* n) {
  Value x = n->input(0), scale = n->input(1), bias = n->input(2);
  const std::string base = n->name();
  const ir::TensorType& xt = g.type(x);
  if (!xt.has_shape || xt.shape.rank() < 3) return InvalidArgument(n->Describe(), ": expects [N, C, D1, ...]");
  const int64_t groups = n->attrs().Int("num_groups", 1);
  if (!xt.shape[1].is_static())
    return Unimplemented(n->Describe(), ": the channel count of ", xt.shape.ToString(), " is not static");
  const int64_t channels = xt.shape[1].value;
  const size_t spatial_rank = xt.shape.rank() - 2;
  const ir::DType dtype = xt.dtype;
  Builder b(g, base);
  const bool widen = WidenForStats(n, dtype);
  Value xs = widen ? b.Cast(x, ir::DType::kFloat32) : x;
  const ir::DType stats = widen ? ir::DType::kFloat32 : dtype;
  Value grouped = b.Op(OpKind::kReshape, {xs, b.Ints({0, groups, -1})}, "group_reshape");
  Value ones;
  auto spatial = StaticTail(g, n, x, 2);
  if (spatial.ok()) {
    int64_t per_group = channels / groups;
    for (int64_t d : *spatial) per_group *= d;
    AMP_ASSIGN_OR_RETURN(ones, FilledConstant(g, base + "_ones", stats, {per_group}, 1.0));
  } else {
    ShapeBuilder sb(g, grouped, base);
    AMP_ASSIGN_OR_RETURN(ir::Tensor one, ir::Tensor::Zeros(stats, {1}));
    ir::SetElementFromDouble(one, 0, 1.0);
    ir::Node* c = b.Node(OpKind::kConstantOfShape, {sb.Dims({2})}, "ones");
    c->attrs().Set("value", std::move(one));
    ones = c->output(0);
  }
  ir::Node* ln = b.Node(OpKind::kLayerNormalization, {grouped, ones}, "ln");
  ln->attrs().Set("axis", int64_t{2});
  ln->attrs().Set("epsilon", n->attrs().Float("epsilon", 1e-5f));
  ln->set_doc(n->doc());
  ShapeBuilder xshape(g, x, base);
  Value y = b.Op(OpKind::kReshape, {ln->output(0), xshape.shape()}, "ungroup_reshape");
  if (widen) y = b.Cast(y, dtype);
  // scale and bias as [C, 1, ..., 1]; per group (opset < 21): [G, 1] repeated
  // over the group's C / G channels first.
  std::vector<int64_t> channel_shape(spatial_rank + 1, 1);
  channel_shape[0] = -1;
  const bool per_group = g.info().opset < 21;
  auto per_channel = [&](Value v, const char* what) {
    if (per_group && groups != channels) {
      v = b.Op(OpKind::kReshape, {v, b.Ints({groups, 1})}, std::string(what) + "_groups");
      v = b.Op(OpKind::kExpand, {v, b.Ints({groups, channels / groups})}, std::string(what) + "_repeat");
    }
    return b.Op(OpKind::kReshape, {v, b.Ints(channel_shape)}, std::string(what) + "_reshape");
  };
  if (!ConstantAll(g, scale, 1.0)) y = b.Op(OpKind::kMul, {y, per_channel(scale, "scale")}, "scale");
  if (!ConstantAll(g, bias, 0.0)) y = b.Op(OpKind::kAdd, {y, per_channel(bias, "bias")}, "bias");
  return Replace(g, n, y);
}

// RMSNormalization -> x / Sqrt(ReduceMean(x x, axes [axis, rank)) + epsilon),
// in Y's type (scale's) -> Mul(scale).
Status LowerRMSNorm(ir::Graph& g, ir::Node* n) {
  Value x = n->input(0), scale = n->input(1);
  const ir::TensorType& xt = g.type(x);
  if (!xt.has_shape) return InvalidArgument(n->Describe(), ": the input's rank is unknown");
  const int64_t rank = static_cast<int64_t>(xt.shape.rank());
  int64_t axis = n->attrs().Int("axis", -1);
  if (axis < 0) axis += rank;
  std::vector<int64_t> axes;
  for (int64_t d = axis; d < rank; ++d) axes.push_back(d);
  Builder b(g, n->name());
  const bool widen = WidenForStats(n, xt.dtype);
  const ir::DType stats = widen ? ir::DType::kFloat32 : xt.dtype;
  Value xs = widen ? b.Cast(x, stats) : x;
  ir::Node* mean = b.Node(OpKind::kReduceMean, {b.Op(OpKind::kMul, {xs, xs}, "square"), b.Ints(axes)}, "mean_square");
  mean->attrs().Set("keepdims", int64_t{1});
  AMP_ASSIGN_OR_RETURN(Value eps, b.Scalar(stats, n->attrs().Float("epsilon", 1e-5f)));
  Value rms = b.Op(OpKind::kSqrt, {b.Op(OpKind::kAdd, {mean->output(0), eps}, "add_epsilon")}, "rms");
  Value y = b.Op(OpKind::kDiv, {xs, rms}, "normalize");
  const ir::DType out = g.type(scale).dtype;
  if (out != stats) y = b.Cast(y, out);
  y = b.Op(OpKind::kMul, {y, scale}, "scale");
  return Replace(g, n, y);
}

// Swish(x, alpha) -> x Sigmoid(alpha x).
Status LowerSwish(ir::Graph& g, ir::Node* n) {
  Builder b(g, n->name());
  AMP_ASSIGN_OR_RETURN(Value y, Swish(b, n->input(0), n->attrs().Float("alpha", 1.0f), g.type(n->input(0)).dtype));
  return Replace(g, n, y);
}

// GlobalMaxPool -> ReduceMax over the spatial axes (keepdims).
Status LowerGlobalMaxPool(ir::Graph& g, ir::Node* n) {
  Builder b(g, n->name());
  std::vector<int64_t> axes;
  for (size_t d = 2; d < g.type(n->input(0)).shape.rank(); ++d) axes.push_back(static_cast<int64_t>(d));
  ir::Node* r = b.Node(OpKind::kReduceMax, {n->input(0), b.Ints(axes)}, "reduce_max");
  r->attrs().Set("keepdims", int64_t{1});
  return Replace(g, n, r->output(0));
}

// Softsign -> x / (1 + |x|); Shrink -> Where(x < -lambd, x + bias,
// Where(x > lambd, x - bias, 0)); ThresholdedRelu -> Where(x > alpha, x, 0).
Status LowerPiecewise(ir::Graph& g, ir::Node* n) {
  Value x = n->input(0);
  const ir::DType t = g.type(x).dtype;
  Builder b(g, n->name());
  AMP_ASSIGN_OR_RETURN(Value zero, b.Scalar(t, 0.0));
  if (n->op() == OpKind::kSoftsign) {
    AMP_ASSIGN_OR_RETURN(Value one, b.Scalar(t, 1.0));
    return Replace(g, n, b.Op(OpKind::kDiv, {x, b.Op(OpKind::kAdd, {one, b.Op(OpKind::kAbs, {x}, "abs")}, "denominator")}, "div"));
  }
  if (n->op() == OpKind::kThresholdedRelu) {
    AMP_ASSIGN_OR_RETURN(Value alpha, b.Scalar(t, n->attrs().Float("alpha", 1.0f)));
    return Replace(g, n, b.Op(OpKind::kWhere, {b.Op(OpKind::kGreater, {x, alpha}, "above"), x, zero}, "where"));
  }
  const double lambd = n->attrs().Float("lambd", 0.5f), bias = n->attrs().Float("bias", 0.0f);
  AMP_ASSIGN_OR_RETURN(Value lo, b.Scalar(t, -lambd));
  AMP_ASSIGN_OR_RETURN(Value hi, b.Scalar(t, lambd));
  Value inner = zero, outer_shift = x, inner_shift = x;
  if (bias != 0) {
    AMP_ASSIGN_OR_RETURN(Value bv, b.Scalar(t, bias));
    outer_shift = b.Op(OpKind::kAdd, {x, bv}, "plus_bias");
    inner_shift = b.Op(OpKind::kSub, {x, bv}, "minus_bias");
  }
  inner = b.Op(OpKind::kWhere, {b.Op(OpKind::kGreater, {x, hi}, "above"), inner_shift, zero}, "where_above");
  return Replace(g, n, b.Op(OpKind::kWhere, {b.Op(OpKind::kLess, {x, lo}, "below"), outer_shift, inner}, "where_below"));
}

// ReduceL1 / ReduceSumSquare / ReduceLogSum -> ReduceSum of |x| / x x / x
// (the same axes and attributes), then Log for ReduceLogSum.
Status LowerReduce(ir::Graph& g, ir::Node* n) {
  Builder b(g, n->name());
  Value x = n->input(0);
  if (n->op() == OpKind::kReduceL1) x = b.Op(OpKind::kAbs, {x}, "abs");
  if (n->op() == OpKind::kReduceSumSquare) x = b.Op(OpKind::kMul, {x, x}, "square");
  std::vector<Value> in = {x};
  if (n->has_input(1)) in.push_back(n->input(1));
  ir::Node* sum = b.Node(OpKind::kReduceSum, std::move(in), "reduce_sum");
  sum->attrs() = n->attrs();
  Value y = sum->output(0);
  if (n->op() == OpKind::kReduceLogSum) y = b.Op(OpKind::kLog, {y}, "log");
  return Replace(g, n, y);
}

// Sum / Mean of n inputs -> Add chain (/ n).
Status LowerVariadic(ir::Graph& g, ir::Node* n) {
  Builder b(g, n->name());
  Value y = n->input(0);
  for (size_t i = 1; i < n->num_inputs(); ++i) y = b.Op(OpKind::kAdd, {y, n->input(i)}, "add");
  if (n->op() == OpKind::kMean && n->num_inputs() > 1) {
    AMP_ASSIGN_OR_RETURN(Value count, b.Scalar(g.type(n->input(0)).dtype, static_cast<double>(n->num_inputs())));
    y = b.Op(OpKind::kDiv, {y, count}, "mean");
  }
  return Replace(g, n, y);
}

// OneHot(indices, depth, values [off, on]), axis -> Where(Equal(indices
// (negative ones + depth) unsqueezed at axis, Range(depth) along axis), on,
// off). Indices outside [-depth, depth) match nothing: all off.
Status LowerOneHot(ir::Graph& g, ir::Node* n) {
  Builder b(g, n->name());
  Value idx = n->input(0), depth = n->input(1), values = n->input(2);
  const int64_t rank = static_cast<int64_t>(g.type(idx).shape.rank()) + 1;
  int64_t axis = n->attrs().Int("axis", -1);
  if (axis < 0) axis += rank;
  idx = b.Int64(idx);
  depth = b.Op(OpKind::kReshape, {b.Int64(depth), b.Ints({})}, "depth_scalar");
  Value zero = b.IntScalar(0);
  idx = b.Op(OpKind::kWhere, {b.Op(OpKind::kLess, {idx, zero}, "negative"), b.Op(OpKind::kAdd, {idx, depth}, "wrapped"), idx},
             "index");
  idx = b.Op(OpKind::kUnsqueeze, {idx, b.Ints({axis})}, "index_unsqueeze");
  Value classes = b.RangeAlong(depth, static_cast<size_t>(rank - axis - 1));
  auto pick = [&](int64_t i, const char* what) {
    ir::Node* gth = b.Node(OpKind::kGather, {values, b.IntScalar(i)}, what);
    gth->attrs().Set("axis", int64_t{0});
    return gth->output(0);
  };
  Value hit = b.Op(OpKind::kEqual, {idx, classes}, "hit");
  return Replace(g, n, b.Op(OpKind::kWhere, {hit, pick(1, "on"), pick(0, "off")}, "where"));
}

// EyeLike(x), attrs dtype, k -> Cast(Equal(Range(0, n) as a column + k,
// Range(0, m)), dtype); n, m from Shape(x), so a symbolic size works too.
Status LowerEyeLike(ir::Graph& g, ir::Node* n) {
  Builder b(g, n->name());
  ShapeBuilder sb(g, n->input(0), n->name());
  Value rows = b.RangeAlong(sb.Dim(0), 1), cols = b.RangeAlong(sb.Dim(1), 0);
  const int64_t k = n->attrs().Int("k", 0);
  if (k != 0) rows = b.Op(OpKind::kAdd, {rows, b.IntScalar(k)}, "shifted");
  Value hit = b.Op(OpKind::kEqual, {rows, cols}, "diagonal");
  const ir::DType t = g.type(n->output(0)).dtype;
  return Replace(g, n, t == ir::DType::kBool ? hit : b.Cast(hit, t));
}

// NegativeLogLikelihoodLoss -> loss = -GatherElements(input, target at
// axis 1) x weight[target], 0 (and weight 0) where target == ignore_index;
// none: that; sum: ReduceSum; mean: ReduceSum / ReduceSum(weights) (plain
// ReduceMean without weight and ignore_index).
Status LowerNllLoss(ir::Graph& g, ir::Node* n) {
  Builder b(g, n->name());
  Value input = n->input(0), target = n->input(1);
  const ir::DType t = g.type(input).dtype;
  if (g.type(target).dtype != ir::DType::kInt64) target = b.Cast(target, ir::DType::kInt64);
  const std::string reduction = n->attrs().Str("reduction", "mean");
  const bool ignore = n->attrs().Has("ignore_index");
  Value valid;
  if (ignore) {
    Value ii = b.IntScalar(n->attrs().Int("ignore_index", 0));
    valid = b.Op(OpKind::kNot, {b.Op(OpKind::kEqual, {target, ii}, "ignored")}, "valid");
    target = b.Op(OpKind::kWhere, {valid, target, b.IntScalar(0)}, "target_safe");
  }
  ir::Node* pick = b.Node(OpKind::kGatherElements, {input, b.Op(OpKind::kUnsqueeze, {target, b.Ints({1})}, "target_unsqueeze")},
                          "pick");
  pick->attrs().Set("axis", int64_t{1});
  Value loss = b.Op(OpKind::kNeg, {b.Op(OpKind::kSqueeze, {pick->output(0), b.Ints({1})}, "picked")}, "neg");
  Value w;
  if (n->has_input(2)) {
    ir::Node* gw = b.Node(OpKind::kGather, {n->input(2), target}, "weight");
    gw->attrs().Set("axis", int64_t{0});
    w = gw->output(0);
  }
  if (ignore) {
    Value vw = b.Cast(valid, t);
    w = w.valid() ? b.Op(OpKind::kMul, {w, vw}, "weight_valid") : vw;
  }
  if (w.valid()) loss = b.Op(OpKind::kMul, {loss, w}, "weighted");
  if (reduction == "none") return Replace(g, n, loss);
  auto reduce = [&](OpKind op, Value v, const char* what) {
    ir::Node* r = b.Node(op, {v}, what);
    r->attrs().Set("keepdims", int64_t{0});
    return r->output(0);
  };
  if (reduction == "sum") return Replace(g, n, reduce(OpKind::kReduceSum, loss, "sum"));
  if (!w.valid()) return Replace(g, n, reduce(OpKind::kReduceMean, loss, "mean"));
  return Replace(g, n, b.Op(OpKind::kDiv, {reduce(OpKind::kReduceSum, loss, "sum"), reduce(OpKind::kReduceSum, w, "weight_sum")},
                            "mean"));
}

Status LowerBlockRearrange(ir::Graph& g, ir::Node* n) {
  Value x = n->input(0);
  const std::string base = n->name();
  if (!g.type(x).has_shape || g.type(x).shape.rank() != 4) return InvalidArgument(n->Describe(), ": expects a 4-D input");
  const int64_t b = n->attrs().Int("blocksize", 1);
  const bool crd = n->attrs().Str("mode", "DCR") == "CRD";
  ShapeBuilder sb(g, x, base);
  Value split, merged;  // Reshape's 0 copies N, -1 takes the channels
  std::vector<int64_t> perm;
  if (n->op() == OpKind::kDepthToSpace) {
    split = sb.Concat({sb.Const(crd ? std::vector<int64_t>{0, -1, b, b} : std::vector<int64_t>{0, b, b, -1}), sb.Dims({2, 3})});
    perm = crd ? std::vector<int64_t>{0, 1, 4, 2, 5, 3} : std::vector<int64_t>{0, 3, 4, 1, 5, 2};
    merged = sb.Concat({sb.Const({0, -1}), sb.Op(OpKind::kMul, sb.Dims({2, 3}), sb.Const({b}))});
  } else {  // CRD (opset 24): the channel varies slowest, as DepthToSpace CRD reads it
    Value hw = sb.Op(OpKind::kDiv, sb.Dims({2, 3}), sb.Const({b}));
    Value h = sb.Op(OpKind::kDiv, sb.Dims({2}), sb.Const({b})), w = sb.Op(OpKind::kDiv, sb.Dims({3}), sb.Const({b}));
    split = sb.Concat({sb.Const({0, -1}), h, sb.Const({b}), w, sb.Const({b})});
    perm = crd ? std::vector<int64_t>{0, 1, 3, 5, 2, 4} : std::vector<int64_t>{0, 3, 5, 1, 2, 4};
    merged = sb.Concat({sb.Const({0, -1}), hw});
  }
  Value v = g.AddNode(OpKind::kReshape, {x, split}, 1, g.UniqueName(base + "_split_reshape"))->output(0);
  ir::Node* t = g.AddNode(OpKind::kTranspose, {v}, 1, g.UniqueName(base + "_transpose"));
  t->attrs().Set("perm", perm);
  v = g.AddNode(OpKind::kReshape, {t->output(0), merged}, 1, g.UniqueName(base + "_merge_reshape"))->output(0);
  return Replace(g, n, v);
}

// Size(x) -> ReduceProd(Shape(x), keepdims 0): the element count as an
// int64 scalar.
Status LowerSize(ir::Graph& g, ir::Node* n) {
  Builder b(g, n->name());
  ir::Node* prod = b.Node(OpKind::kReduceProd, {b.Op(OpKind::kShape, {n->input(0)}, "shape")}, "count");
  prod->attrs().Set("keepdims", int64_t{0});
  return Replace(g, n, prod->output(0));
}

// STFT (ir/ops.def) -> the frames gathered, windowed, transformed (a signal
// [B, T] first becomes [B, T, 1]):
//   idx [F, W] = Range(0, F) * step as [F, 1] + [0 .. W) as [1, W],
//     F = (T - W) / step + 1 from Shape(signal) (a constant where T and step are)
//   frames [B, F, W, C] = Gather(signal, idx, axis 1)
//   y = DFT(frames * window as [W, 1], axis 2, onesided)
// W must be known at import: frame_length's value, else the window's length,
// else (neither given) a static T.
Status LowerStft(ir::Graph& g, ir::Node* n) {
  Builder b(g, n->name());
  Value x = n->input(0);
  const ir::TensorType xt = g.type(x);
  if (xt.has_shape && xt.shape.rank() == 2) x = b.Op(OpKind::kUnsqueeze, {x, b.Ints({2})}, "real");  // [B, T] is real
  auto width = ir::StftFrameLength(n->has_input(3), n->has_input(3) ? g.ConstantValue(n->input(3)) : nullptr,
                                   n->has_input(2) ? &g.type(n->input(2)) : nullptr, xt.shape);
  if (!width.ok()) return InvalidArgument(n->Describe(), ": ", width.status().message());
  if (*width < 1) return Unimplemented(n->Describe(), ": the frame length must be known at import (a constant)");
  Value step = n->input(1);
  if (g.type(step).dtype != ir::DType::kInt64) step = b.Cast(step, ir::DType::kInt64);
  step = b.Op(OpKind::kReshape, {step, b.Ints({})}, "step");
  ShapeBuilder shape(g, x, n->name());
  Value frames = b.Op(OpKind::kAdd,
                      {b.Op(OpKind::kDiv, {b.Op(OpKind::kSub, {shape.Dim(1), b.IntScalar(*width)}, "tail"), step}, "steps"),
                       b.IntScalar(1)},
                      "frames");
  Value starts = b.Op(OpKind::kMul, {b.Op(OpKind::kRange, {b.IntScalar(0), frames, b.IntScalar(1)}, "frame"), step}, "start");
  std::vector<int64_t> offsets(static_cast<size_t>(*width));
  std::iota(offsets.begin(), offsets.end(), int64_t{0});
  Value cols = TensorConstant(g, n->name() + "_offsets", ir::Tensor::Int64s(offsets, {1, *width}));
  Value idx = b.Op(OpKind::kAdd, {b.Op(OpKind::kUnsqueeze, {starts, b.Ints({1})}, "start_column"), cols}, "index");
  ir::Node* gather = b.Node(OpKind::kGather, {x, idx}, "frames");
  gather->attrs().Set("axis", int64_t{1});
  Value y = gather->output(0);
  if (n->has_input(2))
    y = b.Op(OpKind::kMul, {y, b.Op(OpKind::kReshape, {n->input(2), b.Ints({*width, 1})}, "window")}, "windowed");
  ir::Node* dft = b.Node(OpKind::kDFT, {y, Value{}, b.IntScalar(2)}, "dft");
  dft->attrs().Set("onesided", n->attrs().Int("onesided", 1));
  return Replace(g, n, dft->output(0));
}

// Col2Im (ir/ops.def). The patches x [N, C K, L] (K = prod(block), L =
// prod(counts)) are either
//   tiles (strides = block, dilations 1, no pads, counts x block = image):
//     Reshape [N, C, block..., counts...] -> Transpose to [N, C, counts_0,
//     block_0, counts_1, block_1, ...] -> Reshape [N, C, image...], which
//     moves values and adds nothing; or
//   overlapping or padded: Reshape [N C, K, counts...] -> ConvTranspose with
//     one-hot weights W [K, 1, block...] (input channel k writes block
//     position k; the strides, dilations and pads of the attributes, and
//     output_padding for the rows and columns after the last block) ->
//     Reshape [N, C, image...]. Each output pixel is the sum of the patch
//     values that cover it; ConvTranspose multiplies by the zero weights
//     too, so an inf in a patch spreads NaN across its block.
// N may be symbolic (taken from Shape(x)); C follows from -1.
Status LowerCol2Im(ir::Graph& g, ir::Node* n) {
  Value x = n->input(0);
  const std::string base = n->name();
  auto geometry = ir::DecodeCol2Im(n->attrs(), g.ConstantValue(n->input(1)), g.ConstantValue(n->input(2)));
  if (!geometry.ok()) return InvalidArgument(n->Describe(), ": ", geometry.status().message());
  const ir::Col2ImGeometry& geo = *geometry;
  const ir::WindowGeometry& w = geo.window;
  const size_t rank = geo.image.size();
  ShapeBuilder sb(g, x, base);
  Builder b(g, base);
  Value image_shape = sb.Concat({sb.Dims({0}), sb.Const({-1}), sb.Const(geo.image)});
  bool tiles = true;
  for (size_t d = 0; d < rank; ++d)
    tiles = tiles && w.strides[d] == w.kernel[d] && w.dilations[d] == 1 && w.pads_begin[d] == 0 && w.pads_end[d] == 0 &&
            geo.counts[d] * w.kernel[d] == geo.image[d];
  if (tiles) {
    std::vector<int64_t> split = w.kernel, perm{0, 1};
    split.insert(split.end(), geo.counts.begin(), geo.counts.end());
    for (size_t d = 0; d < rank; ++d) {
      perm.push_back(static_cast<int64_t>(2 + rank + d));
      perm.push_back(static_cast<int64_t>(2 + d));
    }
    Value v = b.Op(OpKind::kReshape, {x, sb.Concat({sb.Dims({0}), sb.Const({-1}), sb.Const(split)})}, "blocks");
    ir::Node* t = b.Node(OpKind::kTranspose, {v}, "transpose");
    t->attrs().Set("perm", perm);
    return Replace(g, n, b.Op(OpKind::kReshape, {t->output(0), image_shape}, "image"));
  }
  std::vector<int64_t> patches{-1, geo.block_elements};
  patches.insert(patches.end(), geo.counts.begin(), geo.counts.end());
  std::vector<int64_t> wdims{geo.block_elements, 1};
  wdims.insert(wdims.end(), w.kernel.begin(), w.kernel.end());
  AMP_ASSIGN_OR_RETURN(ir::Tensor weights, ir::Tensor::Zeros(g.type(x).dtype, wdims));
  for (int64_t k = 0; k < geo.block_elements; ++k) ir::SetElementFromDouble(weights, k * geo.block_elements + k, 1.0);
  Value one_hot = TensorConstant(g, base + "_one_hot", std::move(weights));
  std::vector<int64_t> pads = w.pads_begin, output_padding(rank);
  pads.insert(pads.end(), w.pads_end.begin(), w.pads_end.end());
  for (size_t d = 0; d < rank; ++d)
    output_padding[d] = geo.image[d] + w.pads_begin[d] + w.pads_end[d] - ((geo.counts[d] - 1) * w.strides[d] + w.extent(d));
  ir::Node* ct = b.Node(OpKind::kConvTranspose, {b.Op(OpKind::kReshape, {x, b.Ints(patches)}, "patches"), one_hot}, "sum");
  ct->attrs().Set("kernel_shape", w.kernel);
  ct->attrs().Set("strides", w.strides);
  ct->attrs().Set("dilations", w.dilations);
  ct->attrs().Set("pads", pads);
  ct->attrs().Set("output_padding", output_padding);
  ct->set_doc(n->doc());
  return Replace(g, n, b.Op(OpKind::kReshape, {ct->output(0), image_shape}, "image"));
}

// Einsum. A label repeated within an input takes that input's diagonal
// first (its occurrences moved last, merged by a Reshape, and every
// (1 + n + ... + n^(k-1))-th element sliced: 'bii->bi'); its size must be
// static. Labels of one input that neither the output nor another input has
// are summed next;
// then the inputs are contracted pairwise from the left, each intermediate
// keeping the labels that the output or a later input still needs. With the
// pair's target labels (the output's for the last pair):
//   batch (both inputs and the target), left (A and the target), contracted
//   (both, not the target), right (B and the target):
//   A -> Transpose [batch, left, contracted] -> Reshape [batch, L, K]
//   B -> Transpose [batch, contracted, right] -> Reshape [batch, K, R]
//   MatMul -> Reshape [batch, left..., right...] -> Transpose to the output.
// Batch dims may be symbolic (Reshape's 0 keeps them, MatMul broadcasts
// them); the left, contracted and right dims must be static.
class EinsumLowering {
 public:
  EinsumLowering(ir::Graph& g, ir::Node* n) : g_(g), n_(n), base_(n->name()) {}

  Status Run() {
    std::vector<size_t> ranks;
    for (size_t i = 0; i < n_->num_inputs(); ++i) {
      if (!g_.type(n_->input(i)).has_shape) return Unimplemented(n_->Describe(), ": input ", i, " has no known shape");
      ranks.push_back(g_.type(n_->input(i)).shape.rank());
    }
    const std::string equation = n_->attrs().Str("equation", "");
    auto eq = ir::ParseEinsum(equation, ranks);
    if (!eq.ok()) return InvalidArgument(n_->Describe(), ": ", eq.status().message());
    out_ = eq->output;
    // Each label's size, from the inputs (an intermediate has no inferred
    // type yet): -1 when symbolic; a 1 broadcast against n counts as n.
    for (size_t i = 0; i < eq->inputs.size(); ++i)
      for (size_t d = 0; d < eq->inputs[i].size(); ++d) {
        const ir::Dim& dim = g_.type(n_->input(i)).shape[d];
        const int64_t v = dim.is_static() ? dim.value : -1;
        auto [it, fresh] = size_.emplace(eq->inputs[i][d], v);
        if (!fresh && it->second != -1 && (v == -1 || v > it->second)) it->second = v;
      }
    std::vector<Value> diagonals;
    for (size_t i = 0; i < eq->inputs.size(); ++i) {
      Value x = n_->input(i);
      for (char c : std::string(eq->inputs[i]))
        if (std::count(eq->inputs[i].begin(), eq->inputs[i].end(), c) > 1) {
          if (DimOf(c) < 0)
            return Unimplemented(n_->Describe(), ": equation '", equation, "' takes a diagonal over the symbolic label '",
                                 std::string(1, c), "'; amptrain lowers diagonals of static size");
          x = Diagonal(x, eq->inputs[i], c);
        }
      diagonals.push_back(x);
    }
    std::vector<Value> ins;
    std::vector<std::string> labels;
    for (size_t i = 0; i < eq->inputs.size(); ++i) {
      // Sum the labels no other input and not the output has.
      std::string keep, drop;
      for (char c : eq->inputs[i]) {
        bool elsewhere = out_.find(c) != std::string::npos;
        for (size_t j = 0; j < eq->inputs.size(); ++j) elsewhere |= j != i && eq->inputs[j].find(c) != std::string::npos;
        (elsewhere ? keep : drop) += c;
      }
      ins.push_back(SumOut(diagonals[i], eq->inputs[i], drop));
      labels.push_back(keep);
    }
    if (ins.size() == 1) return Replace(g_, n_, Permute(ins[0], labels[0], out_));
    Value y = ins[0];
    std::string ly = labels[0];
    for (size_t i = 1; i < ins.size(); ++i) {
      std::string needed = out_;
      for (size_t j = i + 1; j < ins.size(); ++j) needed += labels[j];
      const std::string target = i + 1 == ins.size() ? out_ : Intermediate(ly, labels[i], needed);
      AMP_ASSIGN_OR_RETURN(y, Contract(y, ly, ins[i], labels[i], target));
      ly = target;
    }
    return Replace(g_, n_, y);
  }

 private:
  int64_t DimOf(char c) const { return size_.at(c); }  // -1 when symbolic
  Value Node1(OpKind op, std::vector<Value> in) { return g_.AddNode(op, std::move(in), 1, g_.UniqueName(base_ + "_einsum"))->output(0); }

  // The diagonal of x over label c (k >= 2 occurrences in `labels`, static
  // size n): Transpose the occurrences last, Reshape them into one axis of
  // n^k, Slice every (n^k - 1) / (n - 1)-th element. `labels` loses all but
  // one c, which moves last.
  Value Diagonal(Value x, std::string& labels, char c) {
    std::string rest;
    std::vector<int64_t> perm, last;  // the other labels' axes, then c's
    for (size_t d = 0; d < labels.size(); ++d) {
      if (labels[d] != c) rest += labels[d];
      (labels[d] != c ? perm : last).push_back(static_cast<int64_t>(d));
    }
    const size_t k = last.size();
    perm.insert(perm.end(), last.begin(), last.end());
    int64_t span = 1, step = 0;
    for (size_t i = 0; i < k; ++i) {
      step += span;
      span *= DimOf(c);
    }
    std::vector<int64_t> shape(rest.size(), 0);  // Reshape's 0 keeps the other (maybe symbolic) dims
    shape.push_back(span);
    Value moved = x;
    if (!std::is_sorted(perm.begin(), perm.end())) {
      ir::Node* t = g_.AddNode(OpKind::kTranspose, {x}, 1, g_.UniqueName(base_ + "_transpose"));
      t->attrs().Set("perm", perm);
      moved = t->output(0);
    }
    Value flat = Reshape(moved, shape);
    const int64_t axis = static_cast<int64_t>(rest.size());
    Value d = Node1(OpKind::kSlice, {flat, IntsConstant(g_, base_ + "_starts", {0}), IntsConstant(g_, base_ + "_ends", {span}),
                                     IntsConstant(g_, base_ + "_axes", {axis}), IntsConstant(g_, base_ + "_steps", {step})});
    labels = rest + c;
    return d;
  }

  Value SumOut(Value x, const std::string& labels, const std::string& drop) {
    if (drop.empty()) return x;
    std::vector<int64_t> axes;
    for (char c : drop) axes.push_back(static_cast<int64_t>(labels.find(c)));
    ir::Node* r = g_.AddNode(OpKind::kReduceSum, {x, IntsConstant(g_, base_ + "_axes", axes)}, 1, g_.UniqueName(base_ + "_sum"));
    r->attrs().Set("keepdims", int64_t{0});
    return r->output(0);
  }

  // x (dims labelled `from`) transposed to the order of `to` (the same labels).
  Value Permute(Value x, const std::string& from, const std::string& to) {
    if (from == to) return x;
    std::vector<int64_t> perm;
    for (char c : to) perm.push_back(static_cast<int64_t>(from.find(c)));
    ir::Node* t = g_.AddNode(OpKind::kTranspose, {x}, 1, g_.UniqueName(base_ + "_transpose"));
    t->attrs().Set("perm", perm);
    return t->output(0);
  }

  Value Reshape(Value x, const std::vector<int64_t>& shape) {
    return Node1(OpKind::kReshape, {x, IntsConstant(g_, base_ + "_shape", shape)});
  }

  // The product of the sizes of the labels of `group` (*ok false when one is symbolic).
  int64_t Product(const std::string& group, bool* ok) const {
    int64_t p = 1;
    for (char c : group) {
      int64_t d = DimOf(c);
      if (d < 0) *ok = false;
      p *= d < 0 ? 1 : d;
    }
    return p;
  }

  // The labels an intermediate of inputs labelled `la` and `lb` keeps: those
  // in `needed`, as batch, left, right (so that Contract needs no final
  // Transpose).
  static std::string Intermediate(const std::string& la, const std::string& lb, const std::string& needed) {
    std::string batch, left, right;
    for (char c : la)
      if (needed.find(c) != std::string::npos) (lb.find(c) != std::string::npos ? batch : left) += c;
    for (char c : lb)
      if (needed.find(c) != std::string::npos && la.find(c) == std::string::npos) right += c;
    return batch + left + right;
  }

  // A (labelled la) and B (lb) contracted to the labels of `target`.
  StatusOr<Value> Contract(Value in_a, const std::string& la, Value in_b, const std::string& lb,
                           const std::string& target) {
    std::string batch, left, contracted, right;
    for (char c : target) {
      const bool a = la.find(c) != std::string::npos, b = lb.find(c) != std::string::npos;
      (a && b ? batch : a ? left : right) += c;
    }
    for (char c : la)
      if (lb.find(c) != std::string::npos && target.find(c) == std::string::npos) contracted += c;
    bool ok = true;
    const int64_t l = Product(left, &ok), k = Product(contracted, &ok), r = Product(right, &ok);
    if (!ok)
      return Unimplemented(n_->Describe(), ": a non-batch dim of equation '", n_->attrs().Str("equation", ""),
                           "' is symbolic; amptrain lowers Einsum with static sizes there");
    std::vector<int64_t> keep_batch(batch.size(), 0);  // Reshape's 0: copy the (maybe symbolic) batch dims
    std::vector<int64_t> a_shape = keep_batch, b_shape = keep_batch, y_shape = keep_batch;
    a_shape.insert(a_shape.end(), {l, k});
    b_shape.insert(b_shape.end(), {k, r});
    Value a = Reshape(Permute(in_a, la, batch + left + contracted), a_shape);
    Value b = Reshape(Permute(in_b, lb, batch + contracted + right), b_shape);
    Value y = Node1(OpKind::kMatMul, {a, b});
    // [batch, L, R] -> [batch, left..., right...] -> the output's order.
    for (char c : left) y_shape.push_back(DimOf(c));
    for (char c : right) y_shape.push_back(DimOf(c));
    return Permute(Reshape(y, y_shape), batch + left + right, target);
  }

  ir::Graph& g_;
  ir::Node* n_;
  std::string base_, out_;
  std::map<char, int64_t> size_;
};

Status LowerEinsum(ir::Graph& g, ir::Node* n) { return EinsumLowering(g, n).Run(); }

}  // namespace

StatusOr<bool> LowerComposites(ir::Graph& g) {
  std::vector<ir::NodeId> ids;
  for (const ir::Node* n : g.nodes())
    if (ir::Schema(n->op()).family == "lowered") ids.push_back(n->id());
  for (ir::NodeId id : ids) {
    ir::Node* n = g.node(id);
    switch (n->op()) {
      case OpKind::kInstanceNormalization: AMP_RETURN_IF_ERROR(LowerInstanceNorm(g, n)); break;
      case OpKind::kGroupNormalization: AMP_RETURN_IF_ERROR(LowerGroupNorm(g, n)); break;
      case OpKind::kRMSNormalization: AMP_RETURN_IF_ERROR(LowerRMSNorm(g, n)); break;
      case OpKind::kSwish: AMP_RETURN_IF_ERROR(LowerSwish(g, n)); break;
      case OpKind::kEinsum: AMP_RETURN_IF_ERROR(LowerEinsum(g, n)); break;
      case OpKind::kAttention: AMP_RETURN_IF_ERROR(LowerAttention(g, n)); break;
      case OpKind::kGlobalMaxPool: AMP_RETURN_IF_ERROR(LowerGlobalMaxPool(g, n)); break;
      case OpKind::kSoftsign:
      case OpKind::kShrink:
      case OpKind::kThresholdedRelu: AMP_RETURN_IF_ERROR(LowerPiecewise(g, n)); break;
      case OpKind::kReduceL1:
      case OpKind::kReduceSumSquare:
      case OpKind::kReduceLogSum: AMP_RETURN_IF_ERROR(LowerReduce(g, n)); break;
      case OpKind::kSum:
      case OpKind::kMean: AMP_RETURN_IF_ERROR(LowerVariadic(g, n)); break;
      case OpKind::kOneHot: AMP_RETURN_IF_ERROR(LowerOneHot(g, n)); break;
      case OpKind::kEyeLike: AMP_RETURN_IF_ERROR(LowerEyeLike(g, n)); break;
      case OpKind::kNegativeLogLikelihoodLoss: AMP_RETURN_IF_ERROR(LowerNllLoss(g, n)); break;
      case OpKind::kDepthToSpace:
      case OpKind::kSpaceToDepth: AMP_RETURN_IF_ERROR(LowerBlockRearrange(g, n)); break;
      case OpKind::kCol2Im: AMP_RETURN_IF_ERROR(LowerCol2Im(g, n)); break;
      case OpKind::kSize: AMP_RETURN_IF_ERROR(LowerSize(g, n)); break;
      case OpKind::kSTFT: AMP_RETURN_IF_ERROR(LowerStft(g, n)); break;
      case OpKind::kLRN: AMP_RETURN_IF_ERROR(LowerLRN(g, n)); break;
      case OpKind::kLpNormalization: AMP_RETURN_IF_ERROR(LowerLpNormalization(g, n)); break;
      case OpKind::kMeanVarianceNormalization: AMP_RETURN_IF_ERROR(LowerMeanVarianceNormalization(g, n)); break;
      case OpKind::kLpPool: AMP_RETURN_IF_ERROR(LowerLpPool(g, n)); break;
      case OpKind::kGlobalLpPool: AMP_RETURN_IF_ERROR(LowerGlobalLpPool(g, n)); break;
      case OpKind::kMaxUnpool: AMP_RETURN_IF_ERROR(LowerMaxUnpool(g, n)); break;
      case OpKind::kHardmax: AMP_RETURN_IF_ERROR(LowerHardmax(g, n)); break;
      case OpKind::kSwiGLU: AMP_RETURN_IF_ERROR(LowerSwiGLU(g, n)); break;
      case OpKind::kRotaryEmbedding: AMP_RETURN_IF_ERROR(LowerRotaryEmbedding(g, n)); break;
      case OpKind::kReverseSequence: AMP_RETURN_IF_ERROR(LowerReverseSequence(g, n)); break;
      case OpKind::kCompress: AMP_RETURN_IF_ERROR(LowerCompress(g, n)); break;
      case OpKind::kCenterCropPad: AMP_RETURN_IF_ERROR(LowerCenterCropPad(g, n)); break;
      case OpKind::kTensorScatter: AMP_RETURN_IF_ERROR(LowerTensorScatter(g, n)); break;
      case OpKind::kHannWindow:
      case OpKind::kHammingWindow:
      case OpKind::kBlackmanWindow: AMP_RETURN_IF_ERROR(LowerWindow(g, n)); break;
      default: return Internal(n->Describe(), ": the op is marked lowered but has no lowering");
    }
  }
  if (!ids.empty()) AMP_RETURN_IF_ERROR(g.InferShapes());
  return !ids.empty();
}

}  // namespace amptrain::importer
