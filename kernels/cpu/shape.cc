// Reference kernels of the data-movement family: Reshape/Flatten/Squeeze/
// Unsqueeze (copies the executor may alias), Transpose, Concat, Split,
// Expand, Tile, Shape, ConstantOfShape, Range, Constant. Gather/Slice live
// in gather_slice.cc, Pad/Resize in pad_resize.cc. Output dims come from the
// run-time views (the executor passes what shape inference computed).
#include <algorithm>

#include "kernels/cpu/element.h"
#include "kernels/cpu/shape_kernels.h"
#include "kernels/kernel_params.h"

namespace amptrain::kernels::cpu {

std::vector<int64_t> ViewInts(const ir::TensorView& v) {
  if (v.dtype != DType::kInt64 && v.dtype != DType::kInt32) {
    std::vector<double> d = ViewDoubles(v);
    return std::vector<int64_t>(d.begin(), d.end());
  }
  std::vector<int64_t> out(static_cast<size_t>(v.data ? v.num_elements() : 0));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = v.dtype == DType::kInt64 ? v.as<int64_t>()[i] : v.as<int32_t>()[i];
  return out;
}

std::vector<double> ViewDoubles(const ir::TensorView& v) {
  std::vector<double> out(static_cast<size_t>(v.data ? v.num_elements() : 0));
  for (size_t i = 0; i < out.size(); ++i) {
    switch (v.dtype) {
      case DType::kFloat32: out[i] = v.as<float>()[i]; break;
      case DType::kFloat16: out[i] = ir::HalfToFloat(v.as<uint16_t>()[i]); break;
      case DType::kBFloat16: out[i] = ir::BFloat16ToFloat(v.as<uint16_t>()[i]); break;
      case DType::kFloat64: out[i] = v.as<double>()[i]; break;
      case DType::kInt64: out[i] = static_cast<double>(v.as<int64_t>()[i]); break;
      case DType::kInt32: out[i] = v.as<int32_t>()[i]; break;
      default: out[i] = 0;
    }
  }
  return out;
}

ParamInput::ParamInput(const KernelInit& init, size_t i)
    : index_(i), present_(i < init.inputs.size() && init.inputs[i].present()) {
  if (!present_ || !init.inputs[i].value) return;
  ir::TensorView v = ir::TensorView::Of(*init.inputs[i].value);
  known_ints_ = ViewInts(v);
  known_doubles_ = ViewDoubles(v);
}

std::vector<int64_t> ParamInput::Ints(const KernelContext& ctx) const {
  if (!present_) return {};
  return known_ints_ ? *known_ints_ : ViewInts(ctx.inputs[index_]);
}

std::vector<double> ParamInput::Doubles(const KernelContext& ctx) const {
  if (!present_) return {};
  return known_doubles_ ? *known_doubles_ : ViewDoubles(ctx.inputs[index_]);
}

Status CheckArity(const KernelInit& init, size_t lo, int hi, size_t outs) {
  if (init.inputs.size() < lo || (hi >= 0 && init.inputs.size() > static_cast<size_t>(hi)))
    return init.Error("has ", init.inputs.size(), " inputs");
  if (init.outputs.size() != outs) return init.Error("has ", init.outputs.size(), " outputs, expected ", outs);
  return Status::Ok();
}

namespace {

int64_t Product(const std::vector<int64_t>& dims, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to; ++i) n *= dims[i];
  return n;
}

// Reshape, Flatten, Squeeze, Unsqueeze: same bytes, new dims.
class ViewCopyKernel : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const KernelInit& init) {
    AMP_RETURN_IF_ERROR(CheckArity(init, 1, 2, 1));
    if (init.inputs[0].num_elements() != init.outputs[0].num_elements())
      return init.Error("input has ", init.inputs[0].num_elements(), " elements, output ", init.outputs[0].num_elements());
    return std::unique_ptr<Kernel>(new ViewCopyKernel());
  }
  Status Run(KernelContext& ctx) override {
    const ir::TensorView &in = ctx.inputs[0], &out = ctx.outputs[0];
    if (in.nbytes() != out.nbytes()) return Internal("view copy: input and output sizes differ");
    if (in.data != out.data) std::memcpy(out.data, in.data, out.nbytes());
    return Status::Ok();
  }
  int inplace_input(size_t) const override { return 0; }
  bool is_view() const override { return true; }
};

class TransposeKernel : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const KernelInit& init) {
    AMP_RETURN_IF_ERROR(CheckArity(init, 1, 1, 1));
    const size_t r = init.inputs[0].dims.size();
    std::vector<int64_t> perm = init.attrs ? init.attrs->Ints("perm", {}) : std::vector<int64_t>{};
    if (perm.empty())
      for (size_t i = r; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
    std::vector<bool> seen(r, false);
    if (perm.size() != r) return init.Error("perm has ", perm.size(), " entries for rank ", r);
    for (int64_t& p : perm) {
      if (p < 0) p += static_cast<int64_t>(r);
      if (p < 0 || p >= static_cast<int64_t>(r) || seen[static_cast<size_t>(p)]) return init.Error("perm is not a permutation");
      seen[static_cast<size_t>(p)] = true;
    }
    return std::unique_ptr<Kernel>(new TransposeKernel(std::move(perm)));
  }
  Status Run(KernelContext& ctx) override {
    const ir::TensorView &in = ctx.inputs[0], &out = ctx.outputs[0];
    std::vector<int64_t> in_strides = Strides(in.dims), strides, out_dims;
    for (int64_t p : perm_) {
      strides.push_back(in_strides[static_cast<size_t>(p)]);
      out_dims.push_back(in.dims[static_cast<size_t>(p)]);
    }
    return DispatchBySize(ir::DTypeSize(in.dtype), [&](auto b) {
      using U = typename decltype(b)::type;
      StridedCopy(in.as<const U>(), out.as<U>(), out_dims, strides, out_dims);
      return Status::Ok();
    });
  }

 private:
  explicit TransposeKernel(std::vector<int64_t> perm) : perm_(std::move(perm)) {}
  std::vector<int64_t> perm_;
};

// Concat (many inputs -> one) and Split (one -> many): blocks along `axis`.
class ConcatSplitKernel : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const KernelInit& init) {
    const bool split = init.op == OpKind::kSplit;
    if (init.inputs.empty() || init.outputs.empty()) return init.Error("needs inputs and outputs");
    const int64_t r = static_cast<int64_t>(init.inputs[0].dims.size());
    int64_t axis = init.attrs ? init.attrs->Int("axis", 0) : 0;
    if (axis < -r || axis >= r) return init.Error("axis ", axis, " is out of range for rank ", r);
    if (axis < 0) axis += r;
    const std::vector<TensorSpec>& parts = split ? init.outputs : init.inputs;
    const TensorSpec& whole = split ? init.inputs[0] : init.outputs[0];
    int64_t sum = 0;
    for (const TensorSpec& p : parts) {
      if (p.dims.size() != whole.dims.size()) return init.Error("ranks of the parts differ");
      sum += p.dims[static_cast<size_t>(axis)];
    }
    if (whole.dims.size() == static_cast<size_t>(r) && sum != whole.dims[static_cast<size_t>(axis)])
      return init.Error("parts sum to ", sum, " along axis ", axis, ", whole has ", whole.dims[static_cast<size_t>(axis)]);
    return std::unique_ptr<Kernel>(new ConcatSplitKernel(split, static_cast<size_t>(axis)));
  }
  Status Run(KernelContext& ctx) override {
    std::vector<ir::TensorView>& parts = split_ ? ctx.outputs : ctx.inputs;
    const ir::TensorView& whole = split_ ? ctx.inputs[0] : ctx.outputs[0];
    const size_t es = ir::DTypeSize(whole.dtype);
    const int64_t outer = Product(whole.dims, 0, axis_);
    const size_t whole_row = static_cast<size_t>(Product(whole.dims, axis_, whole.dims.size())) * es;
    size_t offset = 0;
    for (ir::TensorView& p : parts) {
      const size_t row = static_cast<size_t>(Product(p.dims, axis_, p.dims.size())) * es;
      auto* wb = static_cast<std::byte*>(whole.data) + offset;
      auto* pb = static_cast<std::byte*>(p.data);
#pragma omp parallel for if (outer * static_cast<int64_t>(row) >= kParallelElements * 4)
      for (int64_t o = 0; o < outer; ++o) {
        if (split_) std::memcpy(pb + o * row, wb + o * whole_row, row);
        else std::memcpy(wb + o * whole_row, pb + o * row, row);
      }
      offset += row;
    }
    return Status::Ok();
  }

 private:
  ConcatSplitKernel(bool split, size_t axis) : split_(split), axis_(axis) {}
  bool split_;
  size_t axis_;
};

// Expand and Tile: out[o] = in[o % in_dims] with the input right-aligned.
class BroadcastKernel : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const KernelInit& init) {
    AMP_RETURN_IF_ERROR(CheckArity(init, 2, 2, 1));
    const auto &in = init.inputs[0].dims, &out = init.outputs[0].dims;
    if (out.size() < in.size()) return init.Error("output rank ", out.size(), " is below the input rank ", in.size());
    for (size_t d = 0; d < in.size(); ++d) {
      int64_t i = in[d], o = out[d + out.size() - in.size()];
      if (i == 0 ? o != 0 : o % i != 0) return init.Error("output dim ", o, " is not a multiple of input dim ", i);
    }
    return std::unique_ptr<Kernel>(new BroadcastKernel());
  }
  Status Run(KernelContext& ctx) override {
    const ir::TensorView &in = ctx.inputs[0], &out = ctx.outputs[0];
    std::vector<int64_t> periods(out.dims.size() - in.dims.size(), 1);
    periods.insert(periods.end(), in.dims.begin(), in.dims.end());
    std::vector<int64_t> strides = Strides(periods);
    for (int64_t& p : periods) p = std::max<int64_t>(p, 1);
    return DispatchBySize(ir::DTypeSize(in.dtype), [&](auto b) {
      using U = typename decltype(b)::type;
      StridedCopy(in.as<const U>(), out.as<U>(), out.dims, strides, periods);
      return Status::Ok();
    });
  }
};

class ShapeKernel : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const KernelInit& init) {
    AMP_RETURN_IF_ERROR(CheckArity(init, 1, 1, 1));
    const int64_t r = static_cast<int64_t>(init.inputs[0].dims.size());
    int64_t start = init.attrs ? init.attrs->Int("start", 0) : 0, end = init.attrs ? init.attrs->Int("end", r) : r;
    ResolveShapeRange(r, &start, &end);
    if (init.outputs[0].dtype != DType::kInt64) return init.Error("output must be int64");
    return std::unique_ptr<Kernel>(new ShapeKernel(start, end));
  }
  Status Run(KernelContext& ctx) override {
    for (int64_t d = start_; d < end_; ++d) ctx.outputs[0].as<int64_t>()[d - start_] = ctx.inputs[0].dims[static_cast<size_t>(d)];
    return Status::Ok();
  }

 private:
  ShapeKernel(int64_t s, int64_t e) : start_(s), end_(e) {}
  int64_t start_, end_;
};

// ConstantOfShape (fills with its one-element "value") and Constant (copies "value").
class ConstantKernel : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const KernelInit& init) {
    if (init.outputs.size() != 1) return init.Error("needs one output");
    const bool fill = init.op == OpKind::kConstantOfShape;
    AMP_ASSIGN_OR_RETURN(ir::Tensor value, ConstantValue(init, fill));
    return std::unique_ptr<Kernel>(new ConstantKernel(fill, std::move(value)));
  }
  Status Run(KernelContext& ctx) override {
    ir::TensorView& out = ctx.outputs[0];
    if (!fill_) {
      std::memcpy(out.data, value_.raw(), value_.nbytes());
      return Status::Ok();
    }
    return DispatchBySize(ir::DTypeSize(out.dtype), [&](auto b) {
      using U = typename decltype(b)::type;
      U v;
      std::memcpy(&v, value_.raw(), sizeof(U));
      std::fill_n(out.as<U>(), out.num_elements(), v);
      return Status::Ok();
    });
  }

 private:
  ConstantKernel(bool fill, ir::Tensor v) : fill_(fill), value_(std::move(v)) {}
  bool fill_;
  ir::Tensor value_;
};

class RangeKernel : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const KernelInit& init) {
    AMP_RETURN_IF_ERROR(CheckArity(init, 3, 3, 1));
    for (const TensorSpec& s : init.inputs)
      if (s.dtype != init.inputs[0].dtype || s.num_elements() != 1) return init.Error("start, limit, delta must be scalars of one dtype");
    return std::unique_ptr<Kernel>(new RangeKernel());
  }
  Status Run(KernelContext& ctx) override {
    ir::TensorView& out = ctx.outputs[0];
    return DispatchNumeric(out.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using A = Acc<T>;
      const A start = static_cast<A>(ctx.inputs[0].as<const T>()[0]), delta = static_cast<A>(ctx.inputs[2].as<const T>()[0]);
      for (int64_t i = 0; i < out.num_elements(); ++i) out.as<T>()[i] = T(start + static_cast<A>(i) * delta);
      return Status::Ok();
    });
  }
};

// NonZero(X) -> [rank, N]: the planned N is the count the session learned
// from X's values before planning (or X's constant value's); a run whose X
// has another count fails rather than writing past or short of the output.
class NonZeroKernel : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const KernelInit& init) {
    AMP_RETURN_IF_ERROR(CheckArity(init, 1, 1, 1));
    if (init.outputs[0].dtype != DType::kInt64 || init.outputs[0].dims.size() != 2 ||
        init.outputs[0].dims[0] != static_cast<int64_t>(init.inputs[0].dims.size()))
      return init.Error("the output must be int64 [rank of X, N]");
    return std::unique_ptr<Kernel>(new NonZeroKernel());
  }
  Status Run(KernelContext& ctx) override {
    const ir::TensorView& x = ctx.inputs[0];
    ir::TensorView& out = ctx.outputs[0];
    const int64_t n = out.dims[1], rank = out.dims[0];
    std::vector<int64_t> strides(x.dims.size(), 1);
    for (size_t d = x.dims.size(); d-- > 1;) strides[d - 1] = strides[d] * x.dims[d];
    int64_t found = 0;
    AMP_RETURN_IF_ERROR(DispatchAll(x.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* p = x.as<const T>();
      for (int64_t i = 0; i < x.num_elements(); ++i) {
        bool nonzero;
        if constexpr (std::is_integral_v<T> || std::is_same_v<T, double>) nonzero = !(p[i] == T(0));  // NaN counts
        else nonzero = !(static_cast<float>(p[i]) == 0.0f);
        if (!nonzero) continue;
        if (found < n)
          for (int64_t d = 0; d < rank; ++d) out.as<int64_t>()[d * n + found] = i / strides[d] % x.dims[d];
        ++found;
      }
      return Status::Ok();
    }));
    if (found != n)
      return FailedPrecondition("NonZero found ", found, " nonzero elements where the plan has ", n,
                                ": its input changed between the count and the run");
    return Status::Ok();
  }
};

}  // namespace

void RegisterReferenceShape(Registry& r) {
  r.Add(ReferenceEntry<NonZeroKernel>(OpKind::kNonZero));
  for (OpKind op : {OpKind::kReshape, OpKind::kFlatten, OpKind::kSqueeze, OpKind::kUnsqueeze})
    r.Add(ReferenceEntry<ViewCopyKernel>(op));
  r.Add(ReferenceEntry<TransposeKernel>(OpKind::kTranspose));
  r.Add(ReferenceEntry<ConcatSplitKernel>(OpKind::kConcat));
  r.Add(ReferenceEntry<ConcatSplitKernel>(OpKind::kSplit));
  r.Add(ReferenceEntry<BroadcastKernel>(OpKind::kExpand));
  r.Add(ReferenceEntry<BroadcastKernel>(OpKind::kTile));
  r.Add(ReferenceEntry<ShapeKernel>(OpKind::kShape));
  r.Add(ReferenceEntry<ConstantKernel>(OpKind::kConstantOfShape));
  r.Add(ReferenceEntry<ConstantKernel>(OpKind::kConstant));
  r.Add(ReferenceEntry<RangeKernel>(OpKind::kRange, {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64,
                                                     DType::kInt64, DType::kInt32}));
  RegisterReferenceGatherSlice(r);
  RegisterReferencePadResize(r);
  RegisterReferenceCumSumTrilu(r);
  RegisterReferenceSelect(r);
}

}  // namespace amptrain::kernels::cpu
