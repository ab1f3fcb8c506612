// Lowerings of the normalization, pooling and activation ops that other
// exporters (Caffe2's model zoo, tf2onnx, Keras) and the newest opsets write
// (ir/ops.def lists them with their formulas). Each becomes ops amptrain
// already runs, differentiates and plans for AMP:
//   LRN         -> x / Pow(bias + alpha AveragePool_C(x x), beta)
//   LpNormalization -> x / ||x||_p, a zero row staying 0
//   MeanVarianceNormalization -> (x - mean) / (Sqrt(mean((x - mean)^2)) + 1e-9)
//   LpPool      -> (depthwise Conv of ones over |x|^p)^(1/p)
//   GlobalLpPool -> (ReduceSum over the spatial axes of |x|^p)^(1/p)
//   MaxUnpool   -> ScatterElements of x into zeros at the flat indices
//   Hardmax     -> Cast(Equal(ArgMax, Range)), no gradient
//   SwiGLU      -> a Sigmoid(alpha a) b
//   RotaryEmbedding -> the pairs (x1, x2) rotated by (cos, sin)
#include <algorithm>
#include <string>
#include <vector>

#include "importer/lowering_util.h"

namespace amptrain::importer::lowering {

namespace {

using ir::OpKind;
using ir::Value;

// A norm or window sum s >= 0 read as 1 where it is 0 (`empty`), so that
// dividing by it or taking its root stays finite there, and its gradient too.
struct ZeroGuarded {
  Value empty, safe;
};
StatusOr<ZeroGuarded> GuardZero(Builder& b, Value s, ir::DType t) {
  AMP_ASSIGN_OR_RETURN(Value zero, b.Scalar(t, 0.0));
  AMP_ASSIGN_OR_RETURN(Value one, b.Scalar(t, 1.0));
  Value empty = b.Op(OpKind::kEqual, {s, zero}, "is_zero");
  return ZeroGuarded{empty, b.Op(OpKind::kWhere, {empty, one, s}, "nonzero")};
}

// |x|^p, written as the cheapest exact form: |x|, x x, or Pow(|x|, p).
StatusOr<Value> AbsPow(Builder& b, Value x, ir::DType t, int64_t p) {
  if (p == 2) return b.Op(OpKind::kMul, {x, x}, "square");
  Value a = b.Op(OpKind::kAbs, {x}, "abs");
  if (p == 1) return a;
  AMP_ASSIGN_OR_RETURN(Value e, b.Scalar(t, static_cast<double>(p)));
  return b.Op(OpKind::kPow, {a, e}, "pow");
}

// s^(1/p) for the sums s >= 0 of |x|^p: s, Sqrt(s), or Pow(s, 1/p), and 0
// where s = 0 through a root of 1, so that a window of zeros (after a ReLU)
// has the gradient 0 there, the subgradient PyTorch's norms take, where the
// root's own derivative is infinite (0 x inf = NaN would stop training;
// PyTorch's LPPool2d has that NaN).
StatusOr<Value> Root(Builder& b, Value s, ir::DType t, int64_t p) {
  if (p == 1) return s;
  AMP_ASSIGN_OR_RETURN(ZeroGuarded sum, GuardZero(b, s, t));
  Value root;
  if (p == 2) {
    root = b.Op(OpKind::kSqrt, {sum.safe}, "sqrt");
  } else {
    AMP_ASSIGN_OR_RETURN(Value e, b.Scalar(t, 1.0 / static_cast<double>(p)));
    root = b.Op(OpKind::kPow, {sum.safe, e}, "root");
  }
  AMP_ASSIGN_OR_RETURN(Value zero, b.Scalar(t, 0.0));
  return b.Op(OpKind::kWhere, {sum.empty, zero, root}, "root_or_zero");
}

// The node's attribute `name` copied onto `to` where it is set.
void CopyAttr(const ir::Node* from, ir::Node* to, const char* name) {
  auto it = from->attrs().all().find(name);
  if (it != from->attrs().all().end()) to->attrs().Set(name, it->second);
}

}  // namespace

// LRN: the channel window [c - floor((size-1)/2), c + ceil((size-1)/2)] of
// x^2, zeros past the ends, divided by size (ONNX's alpha / size): an
// AveragePool with count_include_pad over x^2 reshaped to [N, 1, C, rest],
// which takes any spatial rank and a symbolic batch.
Status LowerLRN(ir::Graph& g, ir::Node* n) {
  Value x = n->input(0);
  const ir::DType t = g.type(x).dtype;
  const int64_t size = n->attrs().Int("size", 1);
  // Each side of the window reaches at most C - 1 channels: a larger size
  // (up to 2^63 in a hostile file) pools over a kernel clipped to that, with
  // the divisor kept at size through alpha.
  int64_t before = (size - 1) / 2, after = size / 2;
  const ir::Dim channels = g.type(x).shape[1];
  if (channels.is_static()) before = std::min(before, channels.value - 1), after = std::min(after, channels.value - 1);
  const int64_t kernel = before + after + 1;
  const double alpha_per_kernel = n->attrs().Float("alpha", 1e-4f) * static_cast<double>(kernel) / static_cast<double>(size);
  Builder b(g, n->name());
  ShapeBuilder sb(g, x, n->name());
  Value planes_shape = sb.Concat({sb.Dims({0}), sb.Const({1}), sb.Dims({1}), sb.Const({-1})});
  Value planes = b.Op(OpKind::kReshape, {b.Op(OpKind::kMul, {x, x}, "square"), planes_shape}, "as_planes");
  ir::Node* pool = b.Node(OpKind::kAveragePool, {planes}, "window_mean");
  pool->attrs().Set("kernel_shape", std::vector<int64_t>{kernel, 1});
  pool->attrs().Set("pads", std::vector<int64_t>{before, 0, after, 0});
  pool->attrs().Set("count_include_pad", int64_t{1});
  Value mean = b.Op(OpKind::kReshape, {pool->output(0), sb.shape()}, "mean");
  AMP_ASSIGN_OR_RETURN(Value alpha, b.Scalar(t, alpha_per_kernel));
  AMP_ASSIGN_OR_RETURN(Value bias, b.Scalar(t, n->attrs().Float("bias", 1.0f)));
  AMP_ASSIGN_OR_RETURN(Value beta, b.Scalar(t, n->attrs().Float("beta", 0.75f)));
  Value base = b.Op(OpKind::kAdd, {b.Op(OpKind::kMul, {mean, alpha}, "scaled"), bias}, "base");
  return Replace(g, n, b.Op(OpKind::kDiv, {x, b.Op(OpKind::kPow, {base, beta}, "denominator")}, "normalize"));
}

// LpNormalization: x / norm with the norm read as 1 where it is 0, so a zero
// row gives 0 (ONNX's reference) and a finite gradient.
Status LowerLpNormalization(ir::Graph& g, ir::Node* n) {
  Value x = n->input(0);
  const ir::DType t = g.type(x).dtype;
  const int64_t p = n->attrs().Int("p", 2);
  Builder b(g, n->name());
  Value axes = b.Ints({n->attrs().Int("axis", -1)});
  ir::Node* norm = p == 2 ? b.Node(OpKind::kReduceL2, {x, axes}, "norm")
                          : b.Node(OpKind::kReduceSum, {b.Op(OpKind::kAbs, {x}, "abs"), axes}, "norm");
  norm->attrs().Set("keepdims", int64_t{1});
  AMP_ASSIGN_OR_RETURN(ZeroGuarded guarded, GuardZero(b, norm->output(0), t));
  return Replace(g, n, b.Op(OpKind::kDiv, {x, guarded.safe}, "normalize"));
}

// MeanVarianceNormalization: ONNX's function computes the variance as
// E[x^2] - E[x]^2; the centred form below is the same value without the
// cancellation.
Status LowerMeanVarianceNormalization(ir::Graph& g, ir::Node* n) {
  Value x = n->input(0);
  const ir::DType t = g.type(x).dtype;
  Builder b(g, n->name());
  Value axes = b.Ints(n->attrs().Ints("axes", {0, 2, 3}));
  auto mean_of = [&](Value v, const char* what) {
    ir::Node* r = b.Node(OpKind::kReduceMean, {v, axes}, what);
    r->attrs().Set("keepdims", int64_t{1});
    return r->output(0);
  };
  Value centred = b.Op(OpKind::kSub, {x, mean_of(x, "mean")}, "centred");
  Value var = mean_of(b.Op(OpKind::kMul, {centred, centred}, "square"), "variance");
  AMP_ASSIGN_OR_RETURN(Value eps, b.Scalar(t, 1e-9));
  Value deviation = b.Op(OpKind::kAdd, {b.Op(OpKind::kSqrt, {var}, "std"), eps}, "std_eps");
  return Replace(g, n, b.Op(OpKind::kDiv, {centred, deviation}, "normalize"));
}

// LpPool: the window sums of |x|^p as a depthwise Conv with weights of ones
// (the pool's kernel, strides, pads, dilations, auto_pad); ceil_mode's extra
// last window reads zeros past the end, which add nothing to a sum, so it is
// more end padding. Zero padding is what ONNX's LpPool sums too.
Status LowerLpPool(ir::Graph& g, ir::Node* n) {
  Value x = n->input(0);
  const ir::TensorType xt = g.type(x);
  const ir::TensorType yt = g.type(n->output(0));
  const size_t spatial = xt.shape.rank() - 2;
  if (!xt.shape[1].is_static()) return Unimplemented(n->Describe(), ": the channel count of ", xt.shape.ToString(), " is not static");
  const int64_t channels = xt.shape[1].value;
  const int64_t p = n->attrs().Int("p", 2);
  const std::vector<int64_t> kernel = n->attrs().Ints("kernel_shape");
  Builder b(g, n->name());
  AMP_ASSIGN_OR_RETURN(Value powered, AbsPow(b, x, xt.dtype, p));
  std::vector<int64_t> wdims = {channels, 1};
  wdims.insert(wdims.end(), kernel.begin(), kernel.end());
  int64_t weights = 1;
  for (int64_t d : wdims)
    if (d < 1 || (weights = weights * d) > (int64_t{1} << 28))
      return Unimplemented(n->Describe(), ": its window over ", channels,
                           " channels is too large (the pool's weights would pass 2^28 values)");
  AMP_ASSIGN_OR_RETURN(Value ones, FilledConstant(g, n->name() + "_ones", xt.dtype, wdims, 1.0));
  ir::Node* conv = b.Node(OpKind::kConv, {powered, ones}, "window_sum");
  conv->attrs().Set("group", channels);
  conv->attrs().Set("kernel_shape", kernel);
  for (const char* a : {"strides", "dilations", "auto_pad", "pads"}) CopyAttr(n, conv, a);
  if (n->attrs().Int("ceil_mode", 0) != 0) {
    std::vector<int64_t> pads = n->attrs().Ints("pads", std::vector<int64_t>(2 * spatial, 0));
    const std::vector<int64_t> strides = n->attrs().Ints("strides", std::vector<int64_t>(spatial, 1));
    const std::vector<int64_t> dilations = n->attrs().Ints("dilations", std::vector<int64_t>(spatial, 1));
    if (n->attrs().Str("auto_pad", "NOTSET") != "NOTSET")
      return Unimplemented(n->Describe(), ": ceil_mode with auto_pad is not supported");
    for (size_t d = 0; d < spatial; ++d) {
      if (!xt.shape[d + 2].is_static() || !yt.shape[d + 2].is_static())
        return Unimplemented(n->Describe(), ": ceil_mode needs static spatial sizes, the input is ", xt.shape.ToString());
      const int64_t reach = (yt.shape[d + 2].value - 1) * strides[d] + (kernel[d] - 1) * dilations[d] + 1;
      const int64_t have = xt.shape[d + 2].value + pads[d] + pads[d + spatial];
      if (reach > have) pads[d + spatial] += reach - have;
    }
    conv->attrs().Set("pads", pads);
  }
  AMP_ASSIGN_OR_RETURN(Value y, Root(b, conv->output(0), xt.dtype, p));
  return Replace(g, n, y);
}

Status LowerGlobalLpPool(ir::Graph& g, ir::Node* n) {
  Value x = n->input(0);
  const ir::TensorType xt = g.type(x);
  const int64_t p = n->attrs().Int("p", 2);
  Builder b(g, n->name());
  std::vector<int64_t> axes;
  for (size_t d = 2; d < xt.shape.rank(); ++d) axes.push_back(static_cast<int64_t>(d));
  AMP_ASSIGN_OR_RETURN(Value powered, AbsPow(b, x, xt.dtype, p));
  ir::Node* sum = b.Node(OpKind::kReduceSum, {powered, b.Ints(axes)}, "sum");
  sum->attrs().Set("keepdims", int64_t{1});
  AMP_ASSIGN_OR_RETURN(Value y, Root(b, sum->output(0), xt.dtype, p));
  return Replace(g, n, y);
}

// MaxUnpool: indices are flat over the whole unpooled tensor [N, C, D'...]
// (MaxPool's Indices), D' = (D - 1) stride - pads + kernel. The values are
// scattered into zeros of that size; an output_shape larger than D' pads the
// end of each axis with zeros (ONNX's reference places the unpooled tensor at
// the origin). The gradient is ScatterElements': dY gathered at the indices.
Status LowerMaxUnpool(ir::Graph& g, ir::Node* n) {
  Value x = n->input(0), indices = n->input(1);
  const ir::TensorType xt = g.type(x);
  const size_t rank = xt.shape.rank(), spatial = rank - 2;
  const std::vector<int64_t> kernel = n->attrs().Ints("kernel_shape");
  const std::vector<int64_t> strides = n->attrs().Ints("strides", std::vector<int64_t>(spatial, 1));
  const std::vector<int64_t> pads = n->attrs().Ints("pads", std::vector<int64_t>(2 * spatial, 0));
  Builder b(g, n->name());
  ShapeBuilder sb(g, x, n->name());
  // D' from Shape(x): (D - 1) stride + (kernel - pads), per axis.
  std::vector<int64_t> spatial_axes, stride_v, shift_v;
  for (size_t d = 0; d < spatial; ++d) {
    spatial_axes.push_back(static_cast<int64_t>(d + 2));
    stride_v.push_back(strides[d]);
    shift_v.push_back(kernel[d] - pads[d] - pads[d + spatial] - strides[d]);
  }
  Value unpooled_dims = sb.Op(OpKind::kAdd, sb.Op(OpKind::kMul, sb.Dims(spatial_axes), sb.Const(stride_v)), sb.Const(shift_v));
  Value unpooled = sb.Concat({sb.Dims({0, 1}), unpooled_dims});
  ir::Node* count = b.Node(OpKind::kReduceProd, {unpooled}, "count");
  count->attrs().Set("keepdims", int64_t{1});
  AMP_ASSIGN_OR_RETURN(ir::Tensor zero, ir::Tensor::Zeros(xt.dtype, {1}));
  ir::Node* zeros = b.Node(OpKind::kConstantOfShape, {count->output(0)}, "zeros");
  zeros->attrs().Set("value", std::move(zero));
  Value flat = b.Ints({-1});
  ir::Node* scatter = b.Node(OpKind::kScatterElements,
                             {zeros->output(0), b.Op(OpKind::kReshape, {indices, flat}, "flat_indices"),
                              b.Op(OpKind::kReshape, {x, flat}, "flat_values")},
                             "scatter");
  scatter->attrs().Set("axis", int64_t{0});
  Value y = b.Op(OpKind::kReshape, {scatter->output(0), unpooled}, "unpooled");
  if (n->has_input(2)) {
    // pads = [0 ... 0, output_shape - D'...] (begins, then ends).
    Value ends = b.Op(OpKind::kSub, {b.Int64(n->input(2)), unpooled}, "end_pads");
    Value pad_spec = sb.Concat({sb.Const(std::vector<int64_t>(rank, 0)), ends});
    y = b.Op(OpKind::kPad, {y, pad_spec}, "to_output_shape");
  }
  return Replace(g, n, y);
}

// Hardmax: 1 at the first maximum along axis, 0 elsewhere. Opsets before 13
// take the axis of the input coerced to 2-D ([prod(d[:axis]), prod(d[axis:])]).
Status LowerHardmax(ir::Graph& g, ir::Node* n) {
  Value x = n->input(0);
  const ir::TensorType xt = g.type(x);
  const bool coerced = g.info().opset < 13;
  const int64_t rank = static_cast<int64_t>(xt.shape.rank());
  int64_t axis = n->attrs().Int("axis", coerced ? 1 : -1);
  if (axis < 0) axis += rank;
  Builder b(g, n->name());
  Value v = x;
  if (coerced) {
    ir::Node* flat = b.Node(OpKind::kFlatten, {x}, "as_2d");
    flat->attrs().Set("axis", axis);
    v = flat->output(0);
    axis = 1;
  }
  const int64_t vrank = coerced ? 2 : rank;
  ir::Node* arg = b.Node(OpKind::kArgMax, {v}, "argmax");
  arg->attrs().Set("axis", axis);
  arg->attrs().Set("keepdims", int64_t{1});
  Value positions = b.RangeAlong(ShapeBuilder(g, v, n->name()).Dim(axis), static_cast<size_t>(vrank - axis - 1));
  Value y = b.Cast(b.Op(OpKind::kEqual, {arg->output(0), positions}, "is_max"), xt.dtype);
  if (coerced) y = b.Op(OpKind::kReshape, {y, ShapeBuilder(g, x, n->name()).shape()}, "restore");
  return Replace(g, n, y);
}

Status LowerSwiGLU(ir::Graph& g, ir::Node* n) {
  Builder b(g, n->name());
  AMP_ASSIGN_OR_RETURN(Value swish, Swish(b, n->input(0), n->attrs().Float("alpha", 1.0f), g.type(n->input(0)).dtype));
  return Replace(g, n, b.Op(OpKind::kMul, {swish, n->input(1)}, "gate"));
}

// RotaryEmbedding, in the layout [B, S, H, D] (a 4-D [B, H, S, D] input is
// transposed there and back, a 3-D [B, S, H D] reshaped): the first
// rotary_embedding_dim (R, default D) features of each head are R/2 pairs,
// halves (x1 = [0, R/2), x2 = [R/2, R)) or interleaved (even, odd); each pair
// becomes (cos x1 - sin x2, sin x1 + cos x2), with cos and sin [B, S, R/2]
// (or rows of [max_position, R/2] gathered at position_ids) shared by the
// heads. The features past R pass through.
Status LowerRotaryEmbedding(ir::Graph& g, ir::Node* n) {
  Value x = n->input(0), cos = n->input(1), sin = n->input(2);
  const ir::TensorType xt = g.type(x);
  const bool four_d = xt.shape.rank() == 4;
  const int64_t heads = n->attrs().Int("num_heads", 0);
  const bool interleaved = n->attrs().Int("interleaved", 0) != 0;
  Builder b(g, n->name());
  // [B, H, S, D] <-> [B, S, H, D]
  auto swap_heads_and_sequence = [&](Value in, const std::string& what) {
    ir::Node* t = b.Node(OpKind::kTranspose, {in}, what);
    t->attrs().Set("perm", std::vector<int64_t>{0, 2, 1, 3});
    return t->output(0);
  };
  Value v = four_d ? swap_heads_and_sequence(x, "to_bshd")
                   : b.Op(OpKind::kReshape, {x, b.Ints({0, 0, heads, -1})}, "split_heads");
  // D: static in a 4-D input, H D / num_heads in a 3-D one.
  const ir::Dim& last = xt.shape[xt.shape.rank() - 1];
  if (!last.is_static()) return Unimplemented(n->Describe(), ": the feature size of ", xt.shape.ToString(), " is not static");
  const int64_t head = four_d ? last.value : last.value / heads;
  int64_t rot = n->attrs().Int("rotary_embedding_dim", 0);
  if (rot == 0) rot = head;
  if (rot % 2 != 0 || rot > head)
    return InvalidArgument(n->Describe(), ": rotary_embedding_dim ", rot, " must be even and at most the head size ", head);
  if (n->has_input(3)) {
    Value ids = n->input(3);
    cos = b.Op(OpKind::kGather, {cos, ids}, "cos_at_positions");
    sin = b.Op(OpKind::kGather, {sin, ids}, "sin_at_positions");
  }
  Value heads_axis = b.Ints({2});
  cos = b.Op(OpKind::kUnsqueeze, {cos, heads_axis}, "cos_per_head");
  sin = b.Op(OpKind::kUnsqueeze, {sin, heads_axis}, "sin_per_head");
  auto slice = [&](Value in, int64_t start, int64_t end, int64_t step, const std::string& what) {
    return b.Op(OpKind::kSlice, {in, b.Ints({start}), b.Ints({end}), b.Ints({3}), b.Ints({step})}, what);
  };
  Value x1 = interleaved ? slice(v, 0, rot, 2, "x1") : slice(v, 0, rot / 2, 1, "x1");
  Value x2 = interleaved ? slice(v, 1, rot, 2, "x2") : slice(v, rot / 2, rot, 1, "x2");
  Value real = b.Op(OpKind::kSub, {b.Op(OpKind::kMul, {cos, x1}, "cos_x1"), b.Op(OpKind::kMul, {sin, x2}, "sin_x2")}, "real");
  Value imag = b.Op(OpKind::kAdd, {b.Op(OpKind::kMul, {sin, x1}, "sin_x1"), b.Op(OpKind::kMul, {cos, x2}, "cos_x2")}, "imag");
  auto concat = [&](std::vector<Value> parts, int64_t axis, const std::string& what) {
    ir::Node* c = b.Node(OpKind::kConcat, std::move(parts), what);
    c->attrs().Set("axis", axis);
    return c->output(0);
  };
  Value rotated;
  if (interleaved) {
    Value pair_axis = b.Ints({4});
    Value pairs = concat({b.Op(OpKind::kUnsqueeze, {real, pair_axis}, "real_pairs"),
                          b.Op(OpKind::kUnsqueeze, {imag, pair_axis}, "imag_pairs")},
                         4, "pairs");
    rotated = b.Op(OpKind::kReshape, {pairs, b.Ints({0, 0, 0, rot})}, "interleave");
  } else {
    rotated = concat({real, imag}, 3, "rotated");
  }
  if (rot < head) rotated = concat({rotated, slice(v, rot, head, 1, "passed")}, 3, "with_rest");
  return Replace(g, n,
                 four_d ? swap_heads_and_sequence(rotated, "to_bhsd")
                        : b.Op(OpKind::kReshape, {rotated, ShapeBuilder(g, x, n->name()).shape()}, "merge_heads"));
}

}  // namespace amptrain::importer::lowering
