// Shape/dtype rules (with value propagation) of the data-movement ops:
// Flatten, Reshape, Transpose, Concat, Split, Slice, Gather, Unsqueeze,
// Squeeze, Expand, Tile, Shape, ConstantOfShape, Range. Pad and Resize live in
// resize_pad.cc. Symbolic dims pass through wherever the op keeps them;
// dims that depend on an unknown input value become unknown, never an error.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ir/graph.h"
#include "ir/infer/shape_params.h"
#include "ir/infer/value_util.h"

namespace amptrain::ir {

namespace {

// Output rank from a 1-D int64 "shape-like" input whose value is unknown.
void UnknownDimsFromLength(InferContext& ctx, size_t out, DType dt, size_t shape_input) {
  const TensorType& s = ctx.inputs[shape_input];
  if (s.has_shape && s.shape.rank() == 1 && s.shape[0].is_static())
    ctx.outputs[out] = TensorType::Of(dt, Shape(std::vector<Dim>(static_cast<size_t>(s.shape[0].value), UnknownDim())));
  else
    ctx.outputs[out] = TensorType{dt, Shape(), false};
}

Status RequireShapeInput(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return ctx.Error("input ", i, " is missing");
  if (!IsInteger(ctx.inputs[i].dtype)) return ctx.Error("input ", i, " must be int64, got ", DTypeName(ctx.inputs[i].dtype));
  return Status::Ok();
}

}  // namespace

Status InferFlatten(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  const Shape& in = ctx.inputs[0].shape;
  const int64_t r = static_cast<int64_t>(in.rank());
  AMP_ASSIGN_OR_RETURN(int64_t axis, ctx.attrs->GetInt("axis", 1));
  if (axis < -r || axis > r) return ctx.Error("axis ", axis, " is out of range for rank ", r);
  if (axis < 0) axis += r;
  std::vector<Dim> outer(in.dims().begin(), in.dims().begin() + axis), inner(in.dims().begin() + axis, in.dims().end());
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape({ProductDim(outer), ProductDim(inner)}));
  PropagateReshaped(ctx, 0, 0);
  return Status::Ok();
}

Status InferReshape(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireShapeInput(ctx, 1));
  const DType dt = ctx.inputs[0].dtype;
  // The target: constant, or dims tracked through shape arithmetic (a
  // symbolic entry gives that dim).
  auto target = KnownSyms(ctx, 1);
  if (!target) {
    UnknownDimsFromLength(ctx, 0, dt, 1);
    return Status::Ok();
  }
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  AMP_ASSIGN_OR_RETURN(int64_t allowzero, ctx.attrs->GetInt("allowzero", 0));
  const Shape& in = ctx.inputs[0].shape;
  std::vector<Dim> out(target->size());
  int64_t infer_at = -1;
  for (size_t i = 0; i < target->size(); ++i) {
    const SymInt& t = (*target)[i];
    if (!t.known) {
      out[i] = t.ToDim();
      continue;
    }
    const int64_t v = t.value;
    if (v == -1) {
      if (infer_at >= 0) return ctx.Error("shape has more than one -1");
      infer_at = static_cast<int64_t>(i);
    } else if (v == 0 && allowzero == 0) {
      if (i >= in.rank()) return ctx.Error("shape[", i, "] = 0 copies a dim the input (rank ", in.rank(), ") lacks");
      out[i] = in[i];
    } else if (v < 0) {
      return ctx.Error("shape[", i, "] = ", v, " is invalid");
    } else {
      out[i] = Dim::Static(v);
    }
  }
  if (infer_at >= 0) {
    // -1 = input elements / the other output dims, symbolic ones as monomials.
    std::vector<Dim> others = out;
    others.erase(others.begin() + infer_at);
    const Dim num = ProductDim(in.dims()), den = ProductDim(others);
    if (num.is_static() && den.is_static() && (den.value == 0 || num.value % den.value != 0))
      return ctx.Error("cannot reshape ", in.ToString(), " to ", Shape(out).ToString(), " (-1 does not divide)");
    std::optional<Dim> q = den.is_static() && den.value == 0 ? std::nullopt : DivDims(num, den);
    out[static_cast<size_t>(infer_at)] = q ? *q : UnknownDim();
  }
  Shape os(std::move(out));
  if (os.is_static() && os.num_elements() == Shape::kTooManyElements)
    return ctx.Error("cannot reshape to ", os.ToString(), ": more elements than int64 counts");
  if (in.is_static() && os.is_static() && in.num_elements() != os.num_elements())
    return ctx.Error("cannot reshape ", in.ToString(), " to ", os.ToString());
  ctx.outputs[0] = TensorType::Of(dt, std::move(os));
  PropagateReshaped(ctx, 0, 0);
  return Status::Ok();
}

Status InferTranspose(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  const Shape& in = ctx.inputs[0].shape;
  const size_t r = in.rank();
  AMP_ASSIGN_OR_RETURN(std::vector<int64_t> perm, ctx.attrs->GetInts("perm", {}));
  if (perm.empty())
    for (size_t i = r; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  if (perm.size() != r) return ctx.Error("perm has ", perm.size(), " entries for rank ", r);
  std::vector<bool> seen(r, false);
  std::vector<Dim> out(r);
  for (size_t i = 0; i < r; ++i) {
    AMP_ASSIGN_OR_RETURN(int64_t p, NormalizeAxis(perm[i], static_cast<int64_t>(r)));
    if (seen[static_cast<size_t>(p)]) return ctx.Error("perm repeats axis ", p);
    seen[static_cast<size_t>(p)] = true;
    perm[i] = p;
    out[i] = in[static_cast<size_t>(p)];
  }
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::move(out)));
  if (const Tensor* v = ctx.value(0); v && Propagatable(v->num_elements())) {
    std::vector<int64_t> od = ctx.outputs[0].shape.static_dims(), st = RowMajorStrides(v->dims());
    AMP_ASSIGN_OR_RETURN(Tensor t, MapElements(*v, od, [&](const std::vector<int64_t>& idx) {
      int64_t j = 0;
      for (size_t i = 0; i < r; ++i) j += idx[i] * st[static_cast<size_t>(perm[i])];
      return j;
    }));
    SetValue(ctx, 0, std::move(t));
  }
  return Status::Ok();
}

Status InferConcat(InferContext& ctx) {
  for (size_t i = 0; i < ctx.inputs.size(); ++i) AMP_RETURN_IF_ERROR(RequireShape(ctx, i));
  const size_t r = ctx.inputs[0].shape.rank();
  AMP_ASSIGN_OR_RETURN(int64_t axis_attr, ctx.attrs->GetInt("axis", 0));
  auto axis_or = NormalizeAxis(axis_attr, static_cast<int64_t>(r));
  if (!axis_or.ok()) return ctx.Error(axis_or.status().message());
  const size_t axis = static_cast<size_t>(*axis_or);
  std::vector<Dim> out = ctx.inputs[0].shape.dims();
  std::vector<Dim> along;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const Shape& s = ctx.inputs[i].shape;
    if (s.rank() != r) return ctx.Error("input ", i, " has rank ", s.rank(), ", input 0 has rank ", r);
    if (ctx.inputs[i].dtype != ctx.inputs[0].dtype) return ctx.Error("input ", i, " has another dtype than input 0");
    for (size_t d = 0; d < r; ++d) {
      if (d == axis) continue;
      if (s[d].is_static() && out[d].is_static() && s[d].value != out[d].value)
        return ctx.Error("input ", i, " has dim ", d, " = ", s[d].value, ", input 0 has ", out[d].value);
      if (s[d].is_static()) out[d] = s[d];
    }
    if (!(s[axis].is_static() && s[axis].value == 0)) along.push_back(s[axis]);
  }
  // Sum along the axis: static when all static; the single non-empty part otherwise.
  int64_t sum = 0;
  bool all_static = true;
  for (const Dim& d : along) {
    if (!d.is_static()) all_static = false;
    else if (!CheckedAdd(sum, d.value, &sum))
      return ctx.Error("the inputs' dims along axis ", axis, " add up to more than int64 can hold");
  }
  out[axis] = all_static ? Dim::Static(sum) : along.size() == 1 ? along[0] : UnknownDim();
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::move(out)));
  if (r == 1 && IsInteger(ctx.inputs[0].dtype)) {  // a shape put together from its pieces
    std::vector<SymInt> joined;
    for (size_t i = 0; i < ctx.inputs.size() && joined.size() < static_cast<size_t>(kMaxPropagatedElements); ++i) {
      auto part = KnownSyms(ctx, i);
      if (!part) {
        joined.clear();
        break;
      }
      joined.insert(joined.end(), part->begin(), part->end());
    }
    if (!joined.empty() && ctx.outputs[0].shape[0] == Dim::Static(static_cast<int64_t>(joined.size())))
      SetSyms(ctx, 0, std::move(joined));
  }

  std::vector<const Tensor*> srcs;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const Tensor* v = ctx.value(i);
    if (!v) return Status::Ok();
    srcs.push_back(v);
  }
  if (!ctx.outputs[0].shape.is_static()) return Status::Ok();
  std::vector<int64_t> offsets;  // start of each input along the axis
  std::vector<std::vector<int64_t>> strides;
  int64_t off = 0;
  for (const Tensor* v : srcs) {
    offsets.push_back(off);
    off += v->dims()[axis];
    strides.push_back(RowMajorStrides(v->dims()));
  }
  auto result = MapElements(srcs, ctx.outputs[0].shape.static_dims(), [&](const std::vector<int64_t>& idx) {
    // The last input starting at or before idx[axis]: never an empty one, as idx[axis] < total.
    size_t k = static_cast<size_t>(std::upper_bound(offsets.begin(), offsets.end(), idx[axis]) - offsets.begin()) - 1;
    int64_t j = 0;
    for (size_t d = 0; d < r; ++d) j += (d == axis ? idx[d] - offsets[k] : idx[d]) * strides[k][d];
    return std::pair<size_t, int64_t>(k, j);
  });
  if (result.ok()) SetValue(ctx, 0, std::move(*result));
  return Status::Ok();
}

Status InferSplit(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  const Shape& in = ctx.inputs[0].shape;
  AMP_ASSIGN_OR_RETURN(int64_t axis_attr, ctx.attrs->GetInt("axis", 0));
  auto axis_or = NormalizeAxis(axis_attr, static_cast<int64_t>(in.rank()));
  if (!axis_or.ok()) return ctx.Error(axis_or.status().message());
  const size_t axis = static_cast<size_t>(*axis_or);
  const size_t n = ctx.outputs.size();
  AMP_ASSIGN_OR_RETURN(int64_t num_outputs, ctx.attrs->GetInt("num_outputs", static_cast<int64_t>(n)));
  if (num_outputs != static_cast<int64_t>(n)) return ctx.Error("num_outputs = ", num_outputs, " but the node has ", n, " outputs");
  std::vector<int64_t> sizes(n, -1);
  if (ctx.has_input(1)) {
    if (auto split = KnownInts(ctx, 1)) {
      if (split->size() != n) return ctx.Error("split has ", split->size(), " values for ", n, " outputs");
      int64_t total = 0;
      for (int64_t s : *split) {
        if (s < 0) return ctx.Error("split has a negative size ", s);
        if (!CheckedAdd(total, s, &total)) return ctx.Error("split sizes add up to more than int64 can hold");
      }
      if (in[axis].is_static() && total != in[axis].value)
        return ctx.Error("split sizes sum to ", total, ", dim ", axis, " is ", in[axis].value);
      sizes = *split;
    }
  } else if (in[axis].is_static()) {
    auto eq = EqualSplitSizes(in[axis].value, static_cast<int64_t>(n));
    if (!eq.ok()) return ctx.Error(eq.status().message());
    sizes = *eq;
  }
  int64_t offset = 0;
  const Tensor* v = ctx.value(0);
  for (size_t i = 0; i < n; ++i) {
    Shape s = in;
    s[axis] = sizes[i] >= 0 ? Dim::Static(sizes[i]) : UnknownDim();
    ctx.outputs[i] = TensorType::Of(ctx.inputs[0].dtype, s);
    if (v && sizes[i] >= 0 && Propagatable(s.num_elements())) {
      std::vector<int64_t> st = RowMajorStrides(v->dims());
      AMP_ASSIGN_OR_RETURN(Tensor t, MapElements(*v, s.static_dims(), [&](const std::vector<int64_t>& idx) {
        int64_t j = 0;
        for (size_t d = 0; d < idx.size(); ++d) j += (d == axis ? idx[d] + offset : idx[d]) * st[d];
        return j;
      }));
      SetValue(ctx, i, std::move(t));
    }
    offset += std::max<int64_t>(sizes[i], 0);
  }
  return Status::Ok();
}

Status InferSlice(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  const Shape& in = ctx.inputs[0].shape;
  auto starts = KnownInts(ctx, 1), ends = KnownInts(ctx, 2);
  auto axes = ctx.has_input(3) ? KnownInts(ctx, 3) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
  auto steps = ctx.has_input(4) ? KnownInts(ctx, 4) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
  if (!starts || !ends || !axes || !steps) {
    // Unknown parameters: rank is kept; with known axes only those dims are unknown.
    Shape s = in;
    for (size_t d = 0; d < s.rank(); ++d)
      if (!axes || axes->empty() || std::find(axes->begin(), axes->end(), static_cast<int64_t>(d)) != axes->end() ||
          std::find(axes->begin(), axes->end(), static_cast<int64_t>(d) - static_cast<int64_t>(s.rank())) != axes->end())
        s[d] = UnknownDim();
    ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, std::move(s));
    return Status::Ok();
  }
  auto resolved = ResolveSlice(DimsOrUnknown(in), *starts, *ends, *axes, *steps);
  if (!resolved.ok()) return ctx.Error(resolved.status().message());
  Shape s = in;
  for (size_t d = 0; d < s.rank(); ++d) {
    const SliceAxis& a = (*resolved)[d];
    if (!a.identity) s[d] = a.count >= 0 ? Dim::Static(a.count) : UnknownDim();
  }
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, s);
  if (const Tensor* v = ctx.value(0); v && s.is_static() && Propagatable(s.num_elements())) {
    std::vector<int64_t> st = RowMajorStrides(v->dims());
    AMP_ASSIGN_OR_RETURN(Tensor t, MapElements(*v, s.static_dims(), [&](const std::vector<int64_t>& idx) {
      int64_t j = 0;
      for (size_t d = 0; d < idx.size(); ++d) j += ((*resolved)[d].start + idx[d] * (*resolved)[d].step) * st[d];
      return j;
    }));
    SetValue(ctx, 0, std::move(t));
  } else if (const std::vector<SymInt>* syms = ctx.sym_value(0); syms && s.rank() == 1 && s[0].is_static()) {
    std::vector<SymInt> picked;
    for (int64_t k = 0; k < s[0].value; ++k) {
      const int64_t j = (*resolved)[0].start + k * (*resolved)[0].step;
      if (j < 0 || j >= static_cast<int64_t>(syms->size())) return Status::Ok();
      picked.push_back((*syms)[static_cast<size_t>(j)]);
    }
    SetSyms(ctx, 0, std::move(picked));
  }
  return Status::Ok();
}

Status InferGather(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 1));
  if (ctx.inputs[1].dtype != DType::kInt64 && ctx.inputs[1].dtype != DType::kInt32)
    return ctx.Error("indices must be int32 or int64, got ", DTypeName(ctx.inputs[1].dtype));
  const Shape& data = ctx.inputs[0].shape;
  const Shape& ind = ctx.inputs[1].shape;
  AMP_ASSIGN_OR_RETURN(int64_t axis_attr, ctx.attrs->GetInt("axis", 0));
  auto axis_or = NormalizeAxis(axis_attr, static_cast<int64_t>(data.rank()));
  if (!axis_or.ok()) return ctx.Error(axis_or.status().message());
  const size_t axis = static_cast<size_t>(*axis_or);
  std::vector<Dim> out(data.dims().begin(), data.dims().begin() + static_cast<int64_t>(axis));
  out.insert(out.end(), ind.dims().begin(), ind.dims().end());
  out.insert(out.end(), data.dims().begin() + static_cast<int64_t>(axis) + 1, data.dims().end());
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::move(out)));

  const Tensor* v = ctx.value(0);
  auto idx = KnownInts(ctx, 1);
  if (const std::vector<SymInt>* syms = ctx.sym_value(0); !v && syms && idx && data.rank() == 1) {
    std::vector<SymInt> picked;  // dims picked out of a shape
    const int64_t n = static_cast<int64_t>(syms->size());
    for (int64_t i : *idx) {
      if (i < -n || i >= n) return ctx.Error("index ", i, " is out of range for dim 0 of size ", n);
      picked.push_back((*syms)[static_cast<size_t>(i < 0 ? i + n : i)]);
    }
    SetSyms(ctx, 0, std::move(picked));
  }
  if (!v || !idx || !ctx.outputs[0].shape.is_static()) return Status::Ok();
  const int64_t dim = v->dims()[axis];
  for (int64_t& i : *idx) {
    if (i < -dim || i >= dim) return ctx.Error("index ", i, " is out of range for dim ", axis, " of size ", dim);
    if (i < 0) i += dim;
  }
  std::vector<int64_t> st = RowMajorStrides(v->dims()), ist = RowMajorStrides(ctx.value(1)->dims());
  const size_t ir = ist.size();
  auto result = MapElements(*v, ctx.outputs[0].shape.static_dims(), [&](const std::vector<int64_t>& o) {
    int64_t flat_index = 0;
    for (size_t k = 0; k < ir; ++k) flat_index += o[axis + k] * ist[k];
    int64_t j = (*idx)[static_cast<size_t>(flat_index)] * st[axis];
    for (size_t d = 0; d < axis; ++d) j += o[d] * st[d];
    for (size_t d = axis + 1; d < st.size(); ++d) j += o[d + ir - 1] * st[d];
    return j;
  });
  if (result.ok()) SetValue(ctx, 0, std::move(*result));
  return Status::Ok();
}

Status InferUnsqueeze(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  if (!ctx.has_input(1)) return ctx.Error("axes input is missing");
  const Shape& in = ctx.inputs[0].shape;
  auto axes = KnownInts(ctx, 1);
  if (!axes) {
    const TensorType& a = ctx.inputs[1];
    if (a.has_shape && a.shape.rank() <= 1 && a.shape.is_static()) {
      size_t n = a.shape.rank() == 0 ? 1 : static_cast<size_t>(a.shape[0].value);
      ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::vector<Dim>(in.rank() + n, UnknownDim())));
    } else {
      ctx.outputs[0] = TensorType{ctx.inputs[0].dtype, Shape(), false};
    }
    return Status::Ok();
  }
  const int64_t r = static_cast<int64_t>(in.rank() + axes->size());
  std::vector<bool> inserted(static_cast<size_t>(r), false);
  for (int64_t a : *axes) {
    auto n = NormalizeAxis(a, r);
    if (!n.ok()) return ctx.Error(n.status().message());
    if (inserted[static_cast<size_t>(*n)]) return ctx.Error("axes repeat axis ", *n);
    inserted[static_cast<size_t>(*n)] = true;
  }
  std::vector<Dim> out;
  size_t next = 0;
  for (int64_t d = 0; d < r; ++d) out.push_back(inserted[static_cast<size_t>(d)] ? Dim::Static(1) : in[next++]);
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::move(out)));
  PropagateReshaped(ctx, 0, 0);
  return Status::Ok();
}

Status InferSqueeze(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  const Shape& in = ctx.inputs[0].shape;
  const int64_t r = static_cast<int64_t>(in.rank());
  std::vector<bool> drop(in.rank(), false);
  if (ctx.has_input(1)) {
    auto axes = KnownInts(ctx, 1);
    if (!axes) {
      ctx.outputs[0] = TensorType{ctx.inputs[0].dtype, Shape(), false};
      return Status::Ok();
    }
    for (int64_t a : *axes) {
      auto n = NormalizeAxis(a, r);
      if (!n.ok()) return ctx.Error(n.status().message());
      const Dim& d = in[static_cast<size_t>(*n)];
      if (d.is_static() && d.value != 1) return ctx.Error("cannot squeeze dim ", *n, " of size ", d.value);
      drop[static_cast<size_t>(*n)] = true;
    }
  } else {
    // Without axes every size-1 dim goes: a symbolic dim leaves the rank unknown.
    for (size_t d = 0; d < in.rank(); ++d) {
      if (!in[d].is_static()) {
        ctx.outputs[0] = TensorType{ctx.inputs[0].dtype, Shape(), false};
        return Status::Ok();
      }
      drop[d] = in[d].value == 1;
    }
  }
  std::vector<Dim> out;
  for (size_t d = 0; d < in.rank(); ++d)
    if (!drop[d]) out.push_back(in[d]);
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::move(out)));
  PropagateReshaped(ctx, 0, 0);
  return Status::Ok();
}

namespace {

// Value of a broadcast/tile: output index -> source flat index, where source
// dim d (right-aligned) reads out_index % src_dim.
StatusOr<Tensor> ModuloMap(const Tensor& v, const std::vector<int64_t>& out_dims) {
  std::vector<int64_t> st = RowMajorStrides(v.dims());
  const size_t shift = out_dims.size() - v.rank();
  return MapElements(v, out_dims, [&](const std::vector<int64_t>& o) {
    int64_t j = 0;
    for (size_t d = 0; d < v.rank(); ++d) j += (o[d + shift] % v.dims()[d]) * st[d];
    return j;
  });
}

}  // namespace

Status InferExpand(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  AMP_RETURN_IF_ERROR(RequireShapeInput(ctx, 1));
  auto target = KnownSyms(ctx, 1);
  if (!target) {
    const TensorType& s = ctx.inputs[1];
    if (s.has_shape && s.shape.rank() == 1 && s.shape[0].is_static()) {
      size_t r = std::max(ctx.inputs[0].shape.rank(), static_cast<size_t>(s.shape[0].value));
      ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, Shape(std::vector<Dim>(r, UnknownDim())));
    } else {
      ctx.outputs[0] = TensorType{ctx.inputs[0].dtype, Shape(), false};
    }
    return Status::Ok();
  }
  std::vector<Dim> dims;
  for (const SymInt& d : *target) {
    if (d.known && d.value < 0) return ctx.Error("shape has a negative dim ", d.value);
    dims.push_back(d.ToDim());
  }
  auto b = BroadcastShapes(ctx.inputs[0].shape, Shape(std::move(dims)));
  if (!b.ok()) return ctx.Error(b.status().message());
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, *b);
  if (const Tensor* v = ctx.value(0); v && b->is_static() && Propagatable(b->num_elements())) {
    AMP_ASSIGN_OR_RETURN(Tensor t, ModuloMap(*v, b->static_dims()));
    SetValue(ctx, 0, std::move(t));
  }
  return Status::Ok();
}

Status InferTile(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  AMP_RETURN_IF_ERROR(RequireShapeInput(ctx, 1));
  const Shape& in = ctx.inputs[0].shape;
  auto reps = KnownInts(ctx, 1);
  Shape out = in;
  if (!reps) {
    for (Dim& d : out.dims()) d = UnknownDim();
  } else {
    if (reps->size() != in.rank()) return ctx.Error("repeats has ", reps->size(), " values for rank ", in.rank());
    for (size_t d = 0; d < in.rank(); ++d) {
      int64_t k = (*reps)[d];
      if (k < 0) return ctx.Error("repeats has a negative value ", k);
      int64_t n = 0;
      if (in[d].is_static() && !CheckedMul(in[d].value, k, &n))
        return ctx.Error("dim ", d, " of size ", in[d].value, " repeated ", k, " times overflows int64");
      if (in[d].is_static()) out[d] = Dim::Static(n);
      else if (k == 0) out[d] = Dim::Static(0);
      else if (k != 1) out[d] = UnknownDim();
    }
  }
  ctx.outputs[0] = TensorType::Of(ctx.inputs[0].dtype, out);
  if (const Tensor* v = ctx.value(0); v && reps && out.is_static() && Propagatable(out.num_elements())) {
    AMP_ASSIGN_OR_RETURN(Tensor t, ModuloMap(*v, out.static_dims()));
    SetValue(ctx, 0, std::move(t));
  }
  return Status::Ok();
}

// Trilu(x, k?), attr upper (default 1): x's type; keeps the elements on and
// above (upper) or on and below (lower) diagonal k of the last two dims, the
// rest 0. Values propagate (causal masks made in forward fold to constants).
Status InferTrilu(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  if (ctx.inputs[0].shape.rank() < 2) return ctx.Error("input 0 must have rank >= 2, got ", ctx.inputs[0].shape.rank());
  AMP_ASSIGN_OR_RETURN(int64_t upper, ctx.attrs->GetInt("upper", 1));
  std::optional<std::vector<int64_t>> k = std::vector<int64_t>{0};
  if (ctx.has_input(1)) {
    AMP_RETURN_IF_ERROR(RequireShapeInput(ctx, 1));
    k = KnownInts(ctx, 1);
    if (k && k->size() != 1) return ctx.Error("k must hold one value, got ", k->size());
  }
  SameAs(ctx, 0, 0);
  const Tensor* v = ctx.value(0);
  if (!v || !k) return Status::Ok();
  Tensor t = v->Clone();
  const std::vector<int64_t>& dims = t.dims();
  const int64_t rows = dims[dims.size() - 2], cols = dims.back(), diag = (*k)[0];
  const size_t width = DTypeSize(t.dtype());
  auto* bytes = static_cast<std::byte*>(t.raw());
  for (int64_t e = 0; e < t.num_elements(); ++e) {
    const int64_t j = e % cols, i = e / cols % rows;
    if (upper ? j - i < diag : j - i > diag) std::memset(bytes + e * static_cast<int64_t>(width), 0, width);
  }
  SetValue(ctx, 0, std::move(t));
  return Status::Ok();
}

// GatherElements(data, indices int32/int64), attr axis: indices' shape, data's
// dtype; both of one rank.
Status InferGatherElements(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  AMP_RETURN_IF_ERROR(ExpectInputDType(ctx, 1, IsInteger(ctx.inputs[1].dtype), "int32 or int64 (indices)"));
  const int64_t rank = static_cast<int64_t>(ctx.inputs[0].shape.rank());
  AMP_ASSIGN_OR_RETURN(int64_t axis, ctx.attrs->GetInt("axis", 0));
  if (rank < 1) return ctx.Error("data must have rank >= 1");
  if (axis < -rank || axis >= rank) return NodeOutOfRange(ctx, StrCat("axis ", axis, " is out of range for rank ", rank));
  const TensorType& ind = ctx.inputs[1];
  if (ind.has_shape && static_cast<int64_t>(ind.shape.rank()) != rank)
    return ctx.Error("indices have rank ", ind.shape.rank(), ", data rank ", rank, " (they must be equal)");
  ctx.outputs[0] = ind.has_shape ? TensorType::Of(ctx.inputs[0].dtype, ind.shape)
                                 : TensorType{ctx.inputs[0].dtype, Shape(), false};
  return Status::Ok();
}

Status InferShape(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireShape(ctx, 0));
  const Shape& in = ctx.inputs[0].shape;
  const int64_t r = static_cast<int64_t>(in.rank());
  AMP_ASSIGN_OR_RETURN(int64_t start, ctx.attrs->GetInt("start", 0));
  AMP_ASSIGN_OR_RETURN(int64_t end, ctx.attrs->GetInt("end", r));
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  const int64_t n = std::max<int64_t>(end - start, 0);
  ctx.outputs[0] = TensorType::Of(DType::kInt64, {n});
  std::vector<SymInt> syms;
  for (int64_t d = start; d < start + n; ++d) syms.push_back(SymInt::FromDim(in[static_cast<size_t>(d)]));
  SetSyms(ctx, 0, std::move(syms));
  std::vector<int64_t> dims;
  for (int64_t d = start; d < start + n; ++d) {
    if (!in[static_cast<size_t>(d)].is_static()) return Status::Ok();
    dims.push_back(in[static_cast<size_t>(d)].value);
  }
  SetValue(ctx, 0, Tensor::Int64s(dims, {n}));
  return Status::Ok();
}

Status InferConstantOfShape(InferContext& ctx) {
  AMP_RETURN_IF_ERROR(RequireShapeInput(ctx, 0));
  Tensor fill = Tensor::Floats({0.0f}, {1});
  if (ctx.attrs->Has("value")) {
    AMP_ASSIGN_OR_RETURN(fill, ctx.attrs->GetTensor("value"));
    if (fill.num_elements() != 1) return ctx.Error("value must hold one element, has ", fill.num_elements());
  }
  auto dims = KnownInts(ctx, 0);
  if (!dims) {
    if (auto syms = KnownSyms(ctx, 0)) {  // a shape with symbolic dims
      std::vector<Dim> d;
      for (const SymInt& x : *syms) {
        if (x.known && x.value < 0) return ctx.Error("shape has a negative dim ", x.value);
        d.push_back(x.ToDim());
      }
      ctx.outputs[0] = TensorType::Of(fill.dtype(), Shape(std::move(d)));
      return Status::Ok();
    }
    UnknownDimsFromLength(ctx, 0, fill.dtype(), 0);
    return Status::Ok();
  }
  int64_t n = 0;
  if (!CheckedNumElements(*dims, &n)) return ctx.Error("shape has a negative dim or overflows");
  ctx.outputs[0] = TensorType::Of(fill.dtype(), *dims);
  if (!Propagatable(n)) return Status::Ok();
  AMP_ASSIGN_OR_RETURN(Tensor t, MapElements(fill, *dims, [](const std::vector<int64_t>&) { return int64_t{0}; }));
  SetValue(ctx, 0, std::move(t));
  return Status::Ok();
}

// Range(start, limit, delta): start + i * delta for i < ceil((limit - start)
// / delta), each computed in double and rounded once to T. Range-27's
// stash_type (fp32 or double intermediates for fp16/bf16) is accepted:
// double is at least as wide as either.
Status InferRange(InferContext& ctx) {
  const DType dt = ctx.inputs[0].dtype;
  for (size_t i = 0; i < 3; ++i) {
    if (ctx.inputs[i].dtype != dt) return ctx.Error("start, limit and delta must share one dtype");
    if (ctx.inputs[i].has_shape && ctx.inputs[i].shape.num_elements() > 1) return ctx.Error("input ", i, " must be a scalar");
  }
  if (dt == DType::kBool || dt == DType::kUndefined) return ctx.Error("dtype ", DTypeName(dt), " is not supported");
  const Tensor *s = ctx.value(0), *l = ctx.value(1), *d = ctx.value(2);
  if (!s || !l || !d) {
    ctx.outputs[0] = TensorType::Of(dt, Shape({UnknownDim()}));
    return Status::Ok();
  }
  int64_t n = 0;
  if (IsFloat(dt)) {
    double ds = s->GetAsDouble(0), dl = l->GetAsDouble(0), dd = d->GetAsDouble(0);
    if (dd == 0) return ctx.Error("delta is 0");
    n = static_cast<int64_t>(std::max(std::ceil((dl - ds) / dd), 0.0));
  } else {
    int64_t is = s->GetAsInt64(0), il = l->GetAsInt64(0), id = d->GetAsInt64(0);
    if (id == 0) return ctx.Error("delta is 0");
    n = std::max<int64_t>(0, id > 0 ? (il - is + id - 1) / id : (is - il - id - 1) / -id);
  }
  ctx.outputs[0] = TensorType::Of(dt, {n});
  if (!Propagatable(n)) return Status::Ok();
  AMP_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(DType::kFloat64, {n}));
  AMP_ASSIGN_OR_RETURN(Tensor ints, Tensor::Zeros(DType::kInt64, {n}));
  for (int64_t i = 0; i < n; ++i) {
    out.data<double>()[i] = s->GetAsDouble(0) + static_cast<double>(i) * d->GetAsDouble(0);
    ints.data<int64_t>()[i] = s->GetAsInt64(0) + i * d->GetAsInt64(0);
  }
  AMP_ASSIGN_OR_RETURN(Tensor typed, ConvertElements(IsFloat(dt) ? out : ints, dt));
  SetValue(ctx, 0, std::move(typed));
  return Status::Ok();
}

}  // namespace amptrain::ir

namespace amptrain::ir {

// int64 [rank(X), N], N the count of nonzero elements of X: known when X's
// value is (then the indices are the value too), else an unknown dim that a
// plan learns from the data (executor/session.h, value-dependent shapes).
Status InferNonZero(InferContext& ctx) {
  const TensorType& x = ctx.inputs[0];
  if (x.dtype == DType::kUndefined) return ctx.Error("input has no dtype");
  if (!x.has_shape) {
    ctx.outputs[0] = TensorType{DType::kInt64, Shape(), false};
    return Status::Ok();
  }
  const int64_t rank = static_cast<int64_t>(x.shape.rank());
  const Tensor* v = ctx.value(0);
  if (!v) {
    ctx.outputs[0] = TensorType::Of(DType::kInt64, Shape({Dim::Static(rank), UnknownDim()}));
    return Status::Ok();
  }
  const std::vector<int64_t> dims = v->dims();
  const std::vector<int64_t> strides = RowMajorStrides(dims);
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < v->num_elements(); ++i)
    if (v->GetAsDouble(i) != 0.0 || std::isnan(v->GetAsDouble(i))) hits.push_back(i);
  const int64_t n = static_cast<int64_t>(hits.size());
  ctx.outputs[0] = TensorType::Of(DType::kInt64, {rank, n});
  AMP_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(DType::kInt64, {rank, n}));
  for (int64_t k = 0; k < n; ++k)
    for (int64_t d = 0; d < rank; ++d) out.data<int64_t>()[d * n + k] = hits[k] / strides[d] % dims[d];
  SetValue(ctx, 0, std::move(out));
  return Status::Ok();
}

}  // namespace amptrain::ir
