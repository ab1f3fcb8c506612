// Gradient rules of the shape and data-movement ops and the reductions.
#include <algorithm>
#include <limits>
#include <numeric>

#include "autodiff/grad_context.h"
#include "ir/infer/infer_util.h"
#include "ir/infer/shape_params.h"
#include "ir/onnx_dtype.h"

namespace amptrain::autodiff {

namespace {

using ir::OpKind;
using ir::Value;

// Reshape, Flatten, Squeeze, Unsqueeze: dx = Reshape(dy, Shape(x)).
Status ReshapeLikeGrad(GradContext& c) {
  c.SetGrad(0, c.ReshapeLike(c.grad_output(0), c.input(0)));
  return Status::Ok();
}

Status TransposeGrad(GradContext& c) {
  size_t rank = c.rank(c.input(0));
  std::vector<int64_t> perm(rank);
  std::iota(perm.rbegin(), perm.rend(), 0);
  perm = c.attrs().Ints("perm", perm);
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  ir::Attributes a;
  a.Set("perm", inverse);
  c.SetGrad(0, c.Emit1(OpKind::kTranspose, {c.grad_output(0)}, std::move(a)));
  return Status::Ok();
}

StatusOr<int64_t> Axis(GradContext& c, Value x) {
  int64_t rank = static_cast<int64_t>(c.rank(x)), axis = c.attrs().Int("axis", 0);
  if (axis < -rank || axis >= rank) return c.Error("axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

// Input i gets Slice(dy, [offset_i], [offset_i + size_i], [axis]).
Status ConcatGrad(GradContext& c) {
  AMP_ASSIGN_OR_RETURN(int64_t axis, Axis(c, c.input(0)));
  int64_t offset = 0;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    const ir::TensorType& t = c.type(c.input(i));
    if (!t.has_shape || !t.shape[static_cast<size_t>(axis)].is_static())
      return c.Unsupported("needs a static size along axis ", axis, " for input ", i, ", got ", t.ToString());
    int64_t size = t.shape[static_cast<size_t>(axis)].value;
    if (c.needs_grad(i))
      c.SetGrad(i, c.Emit1(OpKind::kSlice, {c.grad_output(0), c.Ints({offset}), c.Ints({offset + size}), c.Ints({axis})}));
    offset += size;
  }
  return Status::Ok();
}

// dx = Concat(dy_i, axis) with zeros for the outputs no gradient reached.
Status SplitGrad(GradContext& c) {
  AMP_ASSIGN_OR_RETURN(int64_t axis, Axis(c, c.input(0)));
  std::vector<Value> parts;
  for (size_t o = 0; o < c.node().num_outputs(); ++o)
    parts.push_back(c.grad_output(o).valid() ? c.grad_output(o) : c.ZerosLike(c.output(o)));
  ir::Attributes a;
  a.Set("axis", axis);
  c.SetGrad(0, c.Emit1(OpKind::kConcat, parts, std::move(a)));
  return Status::Ok();
}

// Along a strided axis d (step s > 0, `count` picked elements from `start`),
// dy spread out to every s-th position of a dense block of count*s elements:
// Unsqueeze after d, zero-pad that axis to s, merge it into d. `dims`: g's
// static dims, updated; returns the block, cropped to at most `limit` along d.
Value SpreadStrided(GradContext& c, Value g, std::vector<int64_t>& dims, size_t d, int64_t step, int64_t limit) {
  const int64_t rank = static_cast<int64_t>(dims.size()) + 1;
  g = c.Emit1(OpKind::kUnsqueeze, {g, c.Ints({static_cast<int64_t>(d) + 1})});
  std::vector<int64_t> pads(static_cast<size_t>(2 * rank), 0);
  pads[static_cast<size_t>(rank) + d + 1] = step - 1;
  g = c.Emit1(OpKind::kPad, {g, c.Ints(pads)});
  dims[d] *= step;
  g = c.Emit1(OpKind::kReshape, {g, c.Ints(dims)});
  if (dims[d] > limit) {
    g = c.Emit1(OpKind::kSlice, {g, c.Ints({0}), c.Ints({limit}), c.Ints({static_cast<int64_t>(d)})});
    dims[d] = limit;
  }
  return g;
}

// dx = dy zero-padded back to x's shape (constant starts/ends/axes/steps).
// A strided axis first spreads dy to every step-th position (SpreadStrided);
// a negative step reverses dy along that axis first.
Status SliceGrad(GradContext& c) {
  Value x = c.input(0);
  std::vector<int64_t> vals[4];
  for (size_t i = 1; i < 5; ++i) {
    if (!c.has_input(i)) continue;
    const ir::Tensor* t = c.constant(i);
    if (!t) return c.Unsupported("input ", i, " (starts/ends/axes/steps) is not a constant");
    vals[i - 1] = t->ToInt64Vector();
  }
  std::vector<int64_t> dims;
  for (const ir::Dim& d : c.type(x).shape.dims()) dims.push_back(d.value);
  auto axes = ir::ResolveSlice(dims, vals[0], vals[1], vals[2], vals[3]);
  if (!axes.ok()) return c.Error(axes.status().message());
  size_t rank = dims.size();
  std::vector<int64_t> pads(2 * rank, 0), cur(rank);
  for (size_t d = 0; d < rank; ++d) {
    const ir::SliceAxis& s = (*axes)[d];
    if (!s.identity && (dims[d] < 0 || s.count < 0)) return c.Unsupported("needs a static size of sliced axis ", d);
    if (s.count == 0) {  // nothing picked: the gradient is zero
      c.SetGrad(0, c.ZerosLike(x));
      return Status::Ok();
    }
    cur[d] = s.identity ? dims[d] : s.count;
  }
  Value g = c.grad_output(0);
  for (size_t d = 0; d < rank; ++d) {
    const ir::SliceAxis& s = (*axes)[d];
    if (s.identity) continue;
    int64_t start = s.start, step = s.step;
    if (step < 0) {  // visit the picked elements in increasing order
      const int64_t d64 = static_cast<int64_t>(d);
      g = c.Emit1(OpKind::kSlice, {g, c.Ints({-1}), c.Ints({std::numeric_limits<int64_t>::min()}), c.Ints({d64}),
                                   c.Ints({-1})});
      start += (s.count - 1) * step;
      step = -step;
    }
    if (step != 1) {
      if (std::any_of(cur.begin(), cur.end(), [](int64_t v) { return v < 0; }))
        return c.Unsupported("a strided slice needs static dims, got ", c.type(x).ToString());
      g = SpreadStrided(c, g, cur, d, step, dims[d] - start);
    }
    pads[d] = start;
    pads[rank + d] = dims[d] - start - cur[d];
  }
  c.SetGrad(0, c.Emit1(OpKind::kPad, {g, c.Ints(pads)}));
  return Status::Ok();
}

// ScatterND: the scattered slices of dY go to updates; the rest (all of it
// with reduction add) to data. mul/max/min have no rule.
Status ScatterNDGrad(GradContext& c) {
  const std::string reduction = c.attrs().Str("reduction", "none");
  if (reduction != "none" && reduction != "add")
    return c.Unsupported("reduction '", reduction, "' (gradients exist for none and add)");
  ir::Attributes a;
  a.Set("reduction", reduction);
  auto d = c.Emit(OpKind::kScatterNDGrad, {c.grad_output(0), c.input(1)}, std::move(a), 2);
  if (c.needs_grad(0)) c.SetGrad(0, d[0]);
  if (c.needs_grad(2)) c.SetGrad(2, d[1]);
  return Status::Ok();
}

// ScatterElements: as ScatterND's, element by element along the axis
// (PyTorch's scatter / scatter_add backward).
// max / min: each output is one of the values that met at its position (the
// data's and the updates scattered there); the gradient goes to every value
// equal to it, split evenly among ties, as PyTorch's scatter_reduce(amax /
// amin) backward does (the dynamo exporter writes those as ScatterElements):
//   won_d = data == y, won_u = updates == GatherElements(y, idx)
//   ties  = ScatterElements(won_d, idx, won_u, add)  (at least 1: a NaN equals nothing)
//   d_data = won_d dy / ties, d_updates = won_u GatherElements(dy / ties, idx)
Status ScatterExtremumGrad(GradContext& c) {
  const Value data = c.input(0), idx = c.input(1), upd = c.input(2), y = c.output(0), dy = c.grad_output(0);
  ir::Attributes along, to, add;
  along.Set("axis", c.attrs().Int("axis", 0));
  to.Set("to", static_cast<int64_t>(ir::OnnxFromDType(c.type(dy).dtype)));
  add = along;
  add.Set("reduction", std::string("add"));
  const Value won_d = c.Emit1(OpKind::kEqual, {data, y});
  const Value won_u = c.Emit1(OpKind::kEqual, {upd, c.Emit1(OpKind::kGatherElements, {y, idx}, along)});
  const Value won_d_f = c.Emit1(OpKind::kCast, {won_d}, to), won_u_f = c.Emit1(OpKind::kCast, {won_u}, to);
  const Value ties = c.Emit1(OpKind::kScatterElements, {won_d_f, idx, won_u_f}, std::move(add));
  const Value share = c.Div(dy, c.Emit1(OpKind::kMax, {ties, c.Scalar(1.0, ties)}));
  if (c.needs_grad(0)) c.SetGrad(0, c.Emit1(OpKind::kWhere, {won_d, share, c.Scalar(0.0, dy)}));
  if (c.needs_grad(2))
    c.SetGrad(2, c.Emit1(OpKind::kWhere, {won_u, c.Emit1(OpKind::kGatherElements, {share, idx}, along),
                                          c.Scalar(0.0, dy)}));
  return Status::Ok();
}

Status ScatterElementsGrad(GradContext& c) {
  const std::string reduction = c.attrs().Str("reduction", "none");
  if (reduction == "max" || reduction == "min") return ScatterExtremumGrad(c);
  if (reduction != "none" && reduction != "add")
    return c.Unsupported("reduction '", reduction, "' (gradients exist for none, add, max and min)");
  ir::Attributes a;
  a.Set("reduction", reduction);
  a.Set("axis", c.attrs().Int("axis", 0));
  auto d = c.Emit(OpKind::kScatterElementsGrad, {c.grad_output(0), c.input(1)}, std::move(a), 2);
  if (c.needs_grad(0)) c.SetGrad(0, d[0]);
  if (c.needs_grad(2)) c.SetGrad(2, d[1]);
  return Status::Ok();
}

// GatherND: dY's slices summed back at the data slices their tuples picked.
Status GatherNDGrad(GradContext& c) {
  ir::Attributes a;
  a.Set("batch_dims", c.attrs().Int("batch_dims", 0));
  c.SetGrad(0, c.Emit1(OpKind::kGatherNDGrad, {c.grad_output(0), c.input(1), c.ShapeOf(c.input(0))}, std::move(a)));
  return Status::Ok();
}

Status GatherGrad(GradContext& c) {
  ir::Attributes a;
  a.Set("axis", c.attrs().Int("axis", 0));
  Value x = c.input(0);
  Value dx = c.Emit1(OpKind::kGatherGrad, {c.grad_output(0), c.input(1), c.ShapeOf(x)}, std::move(a));
  c.SetGrad(0, dx);
  return Status::Ok();
}

Status ExpandGrad(GradContext& c) {
  c.SetGrad(0, c.SumTo(c.grad_output(0), c.input(0)));
  return Status::Ok();
}

// y = Tile(x, r): dy viewed as [r0, d0, r1, d1, ...], summed over the r axes.
Status TileGrad(GradContext& c) {
  AMP_ASSIGN_OR_RETURN(std::vector<int64_t> dims, c.StaticDims(c.input(0), "the tiled input"));
  const ir::Tensor* r = c.constant(1);
  if (!r) return c.Unsupported("repeats is not a constant");
  std::vector<int64_t> repeats = r->ToInt64Vector(), split, axes;
  if (repeats.size() != dims.size()) return c.Error(repeats.size(), " repeats for rank ", dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    axes.push_back(static_cast<int64_t>(split.size()));
    split.push_back(repeats[d]);
    split.push_back(dims[d]);
  }
  Value view = c.Emit1(OpKind::kReshape, {c.grad_output(0), c.Ints(split)});
  ir::Attributes a;
  a.Set("keepdims", int64_t{0});
  c.SetGrad(0, c.Emit1(OpKind::kReduceSum, {view, c.Ints(axes)}, std::move(a)));
  return Status::Ok();
}

// The reduced axes of a ReduceSum/Mean/Max node (sorted, non-negative; all
// axes when none are given); nullopt = the node is a no-op (empty axes, noop_with_empty_axes).
StatusOr<std::optional<std::vector<int64_t>>> ReducedAxes(GradContext& c) {
  int64_t rank = static_cast<int64_t>(c.rank(c.input(0)));
  std::vector<int64_t> axes;
  if (c.has_input(1)) {
    const ir::Tensor* t = c.constant(1);
    if (!t) return c.Unsupported("axes is not a constant");
    axes = t->ToInt64Vector();
  }
  if (axes.empty()) {
    if (c.attrs().Int("noop_with_empty_axes", 0)) return std::optional<std::vector<int64_t>>();
    axes.resize(static_cast<size_t>(rank));
    std::iota(axes.begin(), axes.end(), 0);
  }
  for (int64_t& a : axes) a = a < 0 ? a + rank : a;
  std::sort(axes.begin(), axes.end());
  return std::optional<std::vector<int64_t>>(axes);
}

// v with the reduced axes restored as size-1 dims when keepdims = 0.
Value KeepDims(GradContext& c, Value v, const std::vector<int64_t>& axes) {
  if (c.attrs().Int("keepdims", 1)) return v;
  return c.Emit1(OpKind::kUnsqueeze, {v, c.Ints(axes)});
}

Status ReduceSumMeanGrad(GradContext& c) {
  AMP_ASSIGN_OR_RETURN(auto axes, ReducedAxes(c));
  Value x = c.input(0), dy = c.grad_output(0);
  if (!axes) {
    c.SetGrad(0, dy);
    return Status::Ok();
  }
  Value g = KeepDims(c, dy, *axes);
  if (c.node().op() == OpKind::kReduceMean) {
    const ir::Shape& s = c.type(x).shape;
    double count = 1;
    bool known = true;
    for (int64_t a : *axes) {
      known = known && s[static_cast<size_t>(a)].is_static();
      count *= static_cast<double>(s[static_cast<size_t>(a)].value);
    }
    if (known) {
      g = c.Div(g, c.Scalar(count, g));
    } else {  // count at run time: a sum of ones over the reduced axes
      auto one = ir::Tensor::Zeros(c.type(x).dtype, {1});
      if (!one.ok()) return one.status();
      ir::SetElementFromDouble(*one, 0, 1.0);
      ir::Attributes fill, keep;
      fill.Set("value", std::move(*one));
      keep.Set("keepdims", int64_t{1});
      Value ones = c.Emit1(OpKind::kConstantOfShape, {c.ShapeOf(x)}, std::move(fill));
      g = c.Div(g, c.Emit1(OpKind::kReduceSum, {ones, c.Ints(*axes)}, std::move(keep)));
    }
  }
  c.SetGrad(0, c.Emit1(OpKind::kExpand, {g, c.ShapeOf(x)}));
  return Status::Ok();
}

// dy is shared evenly by the input elements equal to the maximum / minimum,
// as torch.amax / amin's backward does: ties (common in bf16 and fp16, where
// a 16x16 plane's maximum repeats) must not each get all of dy, which would
// multiply the gradient by the number of ties.
Status ReduceExtremumGrad(GradContext& c) {
  AMP_ASSIGN_OR_RETURN(auto axes, ReducedAxes(c));
  Value x = c.input(0), dy = c.grad_output(0);
  if (!axes) {
    c.SetGrad(0, dy);
    return Status::Ok();
  }
  Value hit = c.Emit1(OpKind::kEqual, {x, KeepDims(c, c.output(0), *axes)});
  ir::Attributes to, keep;
  to.Set("to", static_cast<int64_t>(ir::OnnxFromDType(c.type(dy).dtype)));
  keep.Set("keepdims", int64_t{1});
  Value ties = c.Emit1(OpKind::kReduceSum, {c.Emit1(OpKind::kCast, {hit}, std::move(to)), c.Ints(*axes)}, std::move(keep));
  // At least 1: a NaN maximum equals nothing, and dy / 0 would be an inf the Where then hides.
  Value share = c.Div(KeepDims(c, dy, *axes), c.Emit1(OpKind::kMax, {ties, c.Scalar(1.0, ties)}));
  c.SetGrad(0, c.Emit1(OpKind::kWhere, {hit, share, c.Scalar(0.0, dy)}));
  return Status::Ok();
}

// y = sqrt(sum x^2): dx = dy x / y, and 0 where y = 0 (PyTorch's norm
// backward: the subgradient 0 at the origin, not NaN). The division reads 1
// where y = 0, so that no step makes a NaN that a later one masks: the
// overflow observer names the first node with inf/NaN, and a masked 0/0
// would hide the real source (swin_v2's padded windows, whose F.normalize
// reads all-zero rows).
Status ReduceL2Grad(GradContext& c) {
  AMP_ASSIGN_OR_RETURN(auto axes, ReducedAxes(c));
  Value x = c.input(0), dy = c.grad_output(0);
  if (!axes) {  // noop_with_empty_axes: y = x
    c.SetGrad(0, dy);
    return Status::Ok();
  }
  Value y = KeepDims(c, c.output(0), *axes);
  Value zero = c.Scalar(0.0, y);
  Value at_origin = c.Emit1(OpKind::kEqual, {y, zero});
  Value safe_y = c.Emit1(OpKind::kWhere, {at_origin, c.Scalar(1.0, y), y});
  Value g = c.Div(c.Mul(x, KeepDims(c, dy, *axes)), safe_y);
  c.SetGrad(0, c.Emit1(OpKind::kWhere, {at_origin, zero, g}));
  return Status::Ok();
}

// y = log sum e^x: dx = dy e^(x - y), the softmax over the reduced axes.
Status ReduceLogSumExpGrad(GradContext& c) {
  AMP_ASSIGN_OR_RETURN(auto axes, ReducedAxes(c));
  Value x = c.input(0), dy = c.grad_output(0);
  if (!axes) {
    c.SetGrad(0, dy);
    return Status::Ok();
  }
  Value p = c.Emit1(OpKind::kExp, {c.Sub(x, KeepDims(c, c.output(0), *axes))});
  c.SetGrad(0, c.Mul(KeepDims(c, dy, *axes), p));
  return Status::Ok();
}

// y = prod x: dx_i = dy * prod_{j != i} x_j, exact where x has zeros too (as
// PyTorch's prod backward): with no zero in the reduced set that is y / x_i;
// with one zero it is the product of the others at the zero and 0 elsewhere;
// with more, 0. No division by 0 is computed, even in an unused branch.
Status ReduceProdGrad(GradContext& c) {
  AMP_ASSIGN_OR_RETURN(auto axes, ReducedAxes(c));
  Value x = c.input(0), dy = c.grad_output(0);
  if (!axes) {
    c.SetGrad(0, dy);
    return Status::Ok();
  }
  ir::Attributes keep, to;
  keep.Set("keepdims", int64_t{1});
  to.Set("to", static_cast<int64_t>(ir::OnnxFromDType(c.type(x).dtype)));
  Value one = c.Scalar(1.0, x), zero = c.Scalar(0.0, x);
  Value is_zero = c.Emit1(OpKind::kEqual, {x, zero});
  Value zeros = c.Emit1(OpKind::kReduceSum, {c.Emit1(OpKind::kCast, {is_zero}, std::move(to)), c.Ints(*axes)}, keep);
  Value safe_x = c.Emit1(OpKind::kWhere, {is_zero, one, x});
  Value others = c.Emit1(OpKind::kReduceProd, {safe_x, c.Ints(*axes)}, keep);  // the product of the nonzeros
  Value no_zero = c.Div(KeepDims(c, c.output(0), *axes), safe_x);
  Value one_zero = c.Emit1(OpKind::kWhere, {is_zero, others, zero});
  Value g = c.Emit1(OpKind::kWhere, {c.Emit1(OpKind::kEqual, {zeros, zero}), no_zero,
                                     c.Emit1(OpKind::kWhere, {c.Emit1(OpKind::kEqual, {zeros, one}), one_zero, zero})});
  c.SetGrad(0, c.Mul(KeepDims(c, dy, *axes), g));
  return Status::Ok();
}

// y_j = sum_{i <= j} x_i along the axis: dx_i = sum_{j >= i} dy_j, the same
// CumSum in the other direction (exclusive stays exclusive).
Status CumSumGrad(GradContext& c) {
  ir::Attributes a;
  a.Set("exclusive", c.attrs().Int("exclusive", 0));
  a.Set("reverse", int64_t{c.attrs().Int("reverse", 0) == 0});
  c.SetGrad(0, c.Emit1(OpKind::kCumSum, {c.grad_output(0), c.input(1)}, std::move(a)));
  return Status::Ok();
}

// The axis attribute of `c`'s node in [0, rank of input 0).
StatusOr<int64_t> NodeAxis(GradContext& c, int64_t fallback) {
  const int64_t rank = static_cast<int64_t>(c.rank(c.input(0)));
  int64_t axis = c.attrs().Int("axis", fallback);
  if (axis < -rank || axis >= rank) return c.Unsupported("axis is out of range");
  return axis < 0 ? axis + rank : axis;
}

// torch.gather: each dY element goes back where its index read.
Status GatherElementsGrad(GradContext& c) {
  AMP_ASSIGN_OR_RETURN(int64_t axis, NodeAxis(c, 0));
  ir::Attributes a;
  a.Set("axis", axis);
  c.SetGrad(0, c.Emit1(OpKind::kGatherElementsGrad, {c.grad_output(0), c.input(1), c.ShapeOf(c.input(0))}, std::move(a)));
  return Status::Ok();
}

// TopK's values are x gathered at its indices: the same backward.
Status TopKGrad(GradContext& c) {
  AMP_ASSIGN_OR_RETURN(int64_t axis, NodeAxis(c, -1));
  ir::Attributes a;
  a.Set("axis", axis);
  c.SetGrad(0, c.Emit1(OpKind::kGatherElementsGrad, {c.grad_output(0), c.output(1), c.ShapeOf(c.input(0))}, std::move(a)));
  return Status::Ok();
}

// A mask of fixed positions: dx is dy under the same mask.
Status TriluGrad(GradContext& c) {
  ir::Attributes a;
  a.Set("upper", c.attrs().Int("upper", 1));
  std::vector<Value> in = {c.grad_output(0)};
  if (c.has_input(1)) in.push_back(c.input(1));
  c.SetGrad(0, c.Emit1(OpKind::kTrilu, in, std::move(a)));
  return Status::Ok();
}

}  // namespace

void RegisterShapeRules(RuleTable& t) {
  for (OpKind k : {OpKind::kReshape, OpKind::kFlatten, OpKind::kSqueeze, OpKind::kUnsqueeze})
    SetRule(t, k, ReshapeLikeGrad);
  SetRule(t, OpKind::kTranspose, TransposeGrad);
  SetRule(t, OpKind::kConcat, ConcatGrad);
  SetRule(t, OpKind::kSplit, SplitGrad);
  SetRule(t, OpKind::kSlice, SliceGrad);
  SetRule(t, OpKind::kGather, GatherGrad);
  SetRule(t, OpKind::kScatterND, ScatterNDGrad);
  SetRule(t, OpKind::kGatherND, GatherNDGrad);
  SetRule(t, OpKind::kExpand, ExpandGrad);
  SetRule(t, OpKind::kTile, TileGrad);
  SetRule(t, OpKind::kReduceSum, ReduceSumMeanGrad);
  SetRule(t, OpKind::kReduceMean, ReduceSumMeanGrad);
  SetRule(t, OpKind::kReduceMax, ReduceExtremumGrad);
  SetRule(t, OpKind::kReduceMin, ReduceExtremumGrad);
  SetRule(t, OpKind::kReduceLogSumExp, ReduceLogSumExpGrad);
  SetRule(t, OpKind::kReduceProd, ReduceProdGrad);
  SetRule(t, OpKind::kCumSum, CumSumGrad);
  SetRule(t, OpKind::kTrilu, TriluGrad);
  SetRule(t, OpKind::kGatherElements, GatherElementsGrad);
  SetRule(t, OpKind::kScatterElements, ScatterElementsGrad);
  SetRule(t, OpKind::kTopK, TopKGrad);
  SetRule(t, OpKind::kReduceL2, ReduceL2Grad);
}

}  // namespace amptrain::autodiff
