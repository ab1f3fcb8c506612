// Reference ScatterND and GatherND (ONNX), ScatterNDGrad and GatherNDGrad
// (autodiff/grad_ops.md).
//   ScatterND(data, indices, updates), attr reduction: out = data, then for
//     each index tuple j in order, the slice out[idx_j] (idx_j: the first k
//     coordinates, negative ones wrap) is replaced by updates[j] (none) or
//     combined with it elementwise (add, mul, max, min). An index outside
//     [-dim, dim) is an OutOfRange error naming it. Any dtype for none;
//     floats (computed in Acc<T>), int32 and int64 for the others.
//   ScatterNDGrad(dY, indices), attr reduction none|add: ddata = dY with
//     every scattered slice zeroed (none; add: dY itself), dupdates[j] =
//     dY[idx_j].
//   ScatterElements(data, indices, updates), attrs axis, reduction: out =
//     data, then each updates[p] (p a position of indices, in order) goes to
//     out at p with p[axis] = indices[p] (negative wraps), replacing (none)
//     or combined as ScatterND's. ScatterElementsGrad(dY, indices): ddata =
//     dY with the scattered elements zeroed (none; add: dY), dupdates[p] = dY
//     at p's target.
//   GatherND(data, indices), attr batch_dims b: out[j] = the slice
//     data[batch_j][idx_j], where batch_j is tuple j's position in the first
//     b dims (shared by data and indices). Any dtype.
//   GatherNDGrad(dY, indices, data_shape), attr batch_dims: zeros, then
//     dY[j] added at tuple j's slice, in tuple order, in Acc<T>, rounded once.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/element.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/register.h"
#include "kernels/kernel_params.h"

namespace amptrain::kernels::cpu {

namespace {

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

// Where each index tuple's slice starts in `dims` (in elements), and its size.
struct Slices {
  std::vector<int64_t> starts;
  int64_t size = 1;
};

// With `batch` leading dims shared by `dims` and the indices (GatherND's
// batch_dims), tuple j indexes dims[batch:] within its batch element.
StatusOr<Slices> Locate(const std::string& describe, const std::vector<int64_t>& dims, const ir::TensorView& indices,
                        size_t batch = 0) {
  const int64_t k = indices.dims.back();
  Slices s;
  for (size_t d = batch + static_cast<size_t>(k); d < dims.size(); ++d) s.size *= dims[d];
  int64_t batches = 1, slab = s.size;
  for (size_t d = 0; d < batch; ++d) batches *= dims[d];
  for (size_t d = batch; d < batch + static_cast<size_t>(k); ++d) slab *= dims[d];
  const int64_t* in = dims.data() + batch;  // the indexed dims
  std::vector<int64_t> stride(static_cast<size_t>(k), s.size);
  for (int64_t d = k - 2; d >= 0; --d) stride[d] = stride[d + 1] * in[d + 1];
  const int64_t count = k == 0 ? 0 : indices.num_elements() / k;
  const int64_t per_batch = count / batches;
  const auto* idx = indices.as<const int64_t>();
  s.starts.resize(static_cast<size_t>(count));
  for (int64_t j = 0; j < count; ++j) {
    int64_t start = j / per_batch * slab;
    for (int64_t d = 0; d < k; ++d) {
      int64_t i = idx[j * k + d];
      if (i < -in[d] || i >= in[d])
        return Status(StatusCode::kOutOfRange, StrCat(describe, ": index ", i, " (tuple ", j, ", coordinate ", d,
                                                      ") is outside [-", in[d], ", ", in[d], ")"));
      if (i < 0) i += in[d];
      start += i * stride[d];
    }
    s.starts[j] = start;
  }
  return s;
}

template <class T>
void Combine(Reduction r, T* dst, const T* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const Acc<T> a = dst[i], b = src[i];
    switch (r) {
      case Reduction::kNone: dst[i] = src[i]; break;
      case Reduction::kAdd: dst[i] = T(a + b); break;
      case Reduction::kMul: dst[i] = T(a * b); break;
      case Reduction::kMax: dst[i] = T(a != a || a > b ? a : b); break;
      case Reduction::kMin: dst[i] = T(a != a || a < b ? a : b); break;
    }
  }
}

template <class Fn>
Status DispatchReducible(DType t, Fn&& fn) {
  if (t == DType::kInt64) return fn(Tag<int64_t>{});
  if (t == DType::kInt32) return fn(Tag<int32_t>{});
  return DispatchFloat(t, fn);
}

class ScatterNDKernel final : public Kernel {
 public:
  ScatterNDKernel(std::string describe, Reduction r) : describe_(std::move(describe)), r_(r) {}
  Status Run(KernelContext& ctx) override {
    const ir::TensorView& data = ctx.inputs[0];
    const ir::TensorView& updates = ctx.inputs[2];
    ir::TensorView& out = ctx.outputs[0];
    AMP_ASSIGN_OR_RETURN(Slices s, Locate(describe_, data.dims, ctx.inputs[1]));
    const size_t elem = ir::DTypeSize(data.dtype);
    if (out.data != data.data) std::memcpy(out.data, data.data, static_cast<size_t>(data.num_elements()) * elem);
    auto* dst = static_cast<std::byte*>(out.data);
    const auto* src = static_cast<const std::byte*>(updates.data);
    if (r_ == Reduction::kNone) {
      for (size_t j = 0; j < s.starts.size(); ++j)
        std::memcpy(dst + s.starts[j] * elem, src + j * s.size * elem, static_cast<size_t>(s.size) * elem);
      return Status::Ok();
    }
    return DispatchReducible(data.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (size_t j = 0; j < s.starts.size(); ++j)
        Combine(r_, reinterpret_cast<T*>(dst) + s.starts[j], reinterpret_cast<const T*>(src) + j * s.size, s.size);
      return Status::Ok();
    });
  }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }

 private:
  std::string describe_;
  Reduction r_;
};

class ScatterNDGradKernel final : public Kernel {
 public:
  ScatterNDGradKernel(std::string describe, Reduction r) : describe_(std::move(describe)), r_(r) {}
  Status Run(KernelContext& ctx) override {
    const ir::TensorView& dy = ctx.inputs[0];
    AMP_ASSIGN_OR_RETURN(Slices s, Locate(describe_, dy.dims, ctx.inputs[1]));
    const size_t elem = ir::DTypeSize(dy.dtype), slice = static_cast<size_t>(s.size) * elem;
    const auto* src = static_cast<const std::byte*>(dy.data);
    if (auto* du = static_cast<std::byte*>(ctx.outputs[1].data))
      for (size_t j = 0; j < s.starts.size(); ++j) std::memcpy(du + j * slice, src + s.starts[j] * elem, slice);
    if (auto* dd = static_cast<std::byte*>(ctx.outputs[0].data)) {
      std::memcpy(dd, src, static_cast<size_t>(dy.num_elements()) * elem);
      if (r_ == Reduction::kNone)
        for (int64_t start : s.starts) std::memset(dd + start * elem, 0, slice);  // all-zero bits: +0 in every float type
    }
    return Status::Ok();
  }

 private:
  std::string describe_;
  Reduction r_;
};

// The offset in `dims` each element of indices (of `dims`' rank) points to:
// its own position with the coordinate at `axis` replaced by its value.
StatusOr<std::vector<int64_t>> ElementTargets(const std::string& describe, const std::vector<int64_t>& dims,
                                              const ir::TensorView& indices, size_t axis) {
  const size_t rank = dims.size();
  std::vector<int64_t> stride(rank, 1), pos(rank, 0), targets(static_cast<size_t>(indices.num_elements()));
  for (size_t d = rank; d-- > 1;) stride[d - 1] = stride[d] * dims[d];
  const bool i64 = indices.dtype == DType::kInt64;
  const int64_t n = dims[axis];
  for (size_t e = 0; e < targets.size(); ++e) {
    int64_t k = i64 ? indices.as<const int64_t>()[e] : indices.as<const int32_t>()[e];
    if (k < -n || k >= n)
      return Status(StatusCode::kOutOfRange,
                    StrCat(describe, ": index ", k, " (element ", e, ") is outside [-", n, ", ", n, ") on axis ", axis));
    if (k < 0) k += n;
    int64_t off = 0;
    for (size_t d = 0; d < rank; ++d) off += (d == axis ? k : pos[d]) * stride[d];
    targets[e] = off;
    for (size_t d = rank; d-- > 0;) {  // odometer over the indices' dims
      if (++pos[d] < indices.dims[d]) break;
      pos[d] = 0;
    }
  }
  return targets;
}

// ScatterElements, or with `backward` ScatterElementsGrad(dY, indices).
class ScatterElementsKernel final : public Kernel {
 public:
  ScatterElementsKernel(std::string describe, Reduction r, size_t axis, bool backward)
      : describe_(std::move(describe)), r_(r), axis_(axis), backward_(backward) {}
  Status Run(KernelContext& ctx) override {
    const ir::TensorView& in = ctx.inputs[0];  // data, or dY
    AMP_ASSIGN_OR_RETURN(std::vector<int64_t> at, ElementTargets(describe_, in.dims, ctx.inputs[1], axis_));
    const size_t elem = ir::DTypeSize(in.dtype);
    const auto* src = static_cast<const std::byte*>(in.data);
    return backward_ ? Backward(ctx, at, src, elem) : Forward(ctx, at, src, elem);
  }
  int inplace_input(size_t output) const override { return !backward_ && output == 0 ? 0 : -1; }

 private:
  Status Forward(KernelContext& ctx, const std::vector<int64_t>& to, const std::byte* data, size_t elem) {
    ir::TensorView& out = ctx.outputs[0];
    if (out.data != data) std::memcpy(out.data, data, static_cast<size_t>(out.num_elements()) * elem);
    auto* dst = static_cast<std::byte*>(out.data);
    const auto* upd = static_cast<const std::byte*>(ctx.inputs[2].data);
    if (r_ == Reduction::kNone) {
      for (size_t e = 0; e < to.size(); ++e) std::memcpy(dst + to[e] * elem, upd + e * elem, elem);
      return Status::Ok();
    }
    return DispatchReducible(out.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (size_t e = 0; e < to.size(); ++e)
        Combine(r_, reinterpret_cast<T*>(dst) + to[e], reinterpret_cast<const T*>(upd) + e, 1);
      return Status::Ok();
    });
  }
  // dupdates[e] = dY at e's target; ddata = dY, the targets zeroed (none).
  Status Backward(KernelContext& ctx, const std::vector<int64_t>& from, const std::byte* dy, size_t elem) {
    if (auto* du = static_cast<std::byte*>(ctx.outputs[1].data))
      for (size_t e = 0; e < from.size(); ++e) std::memcpy(du + e * elem, dy + from[e] * elem, elem);
    if (auto* dd = static_cast<std::byte*>(ctx.outputs[0].data)) {
      std::memcpy(dd, dy, static_cast<size_t>(ctx.outputs[0].num_elements()) * elem);
      if (r_ == Reduction::kNone)
        for (int64_t off : from) std::memset(dd + off * elem, 0, elem);  // all-zero bits: +0 in every float type
    }
    return Status::Ok();
  }

  std::string describe_;
  Reduction r_;
  size_t axis_;
  bool backward_;
};

class GatherNDKernel final : public Kernel {
 public:
  GatherNDKernel(std::string describe, size_t batch) : describe_(std::move(describe)), batch_(batch) {}
  Status Run(KernelContext& ctx) override {
    const ir::TensorView& data = ctx.inputs[0];
    AMP_ASSIGN_OR_RETURN(Slices s, Locate(describe_, data.dims, ctx.inputs[1], batch_));
    const size_t elem = ir::DTypeSize(data.dtype), slice = static_cast<size_t>(s.size) * elem;
    const auto* src = static_cast<const std::byte*>(data.data);
    auto* dst = static_cast<std::byte*>(ctx.outputs[0].data);
    for (size_t j = 0; j < s.starts.size(); ++j) std::memcpy(dst + j * slice, src + s.starts[j] * elem, slice);
    return Status::Ok();
  }

 private:
  std::string describe_;
  size_t batch_;
};

template <class T>
class GatherNDGradKernel final : public Kernel {
 public:
  GatherNDGradKernel(std::string describe, size_t batch) : describe_(std::move(describe)), batch_(batch) {}
  Status Run(KernelContext& ctx) override {
    ir::TensorView& out = ctx.outputs[0];
    AMP_ASSIGN_OR_RETURN(Slices s, Locate(describe_, out.dims, ctx.inputs[1], batch_));
    sums_.assign(static_cast<size_t>(out.num_elements()), Acc<T>(0));
    const T* dy = ctx.inputs[0].as<const T>();
    for (size_t j = 0; j < s.starts.size(); ++j)
      for (int64_t e = 0; e < s.size; ++e) sums_[s.starts[j] + e] += static_cast<Acc<T>>(dy[j * s.size + e]);
    T* dx = out.as<T>();
    for (size_t i = 0; i < sums_.size(); ++i) dx[i] = T(sums_[i]);
    return Status::Ok();
  }

 private:
  std::string describe_;
  size_t batch_;
  std::vector<Acc<T>> sums_;
};

StatusOr<std::unique_ptr<Kernel>> MakeGatherND(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 2, 1, 1));
  if (init.inputs[1].dtype != DType::kInt64 || init.inputs[1].dims.empty()) return init.Error("indices must be int64 of rank >= 1");
  AMP_ASSIGN_OR_RETURN(size_t b, ParseBatchDims(init, init.inputs[0].dims.size()));
  return std::unique_ptr<Kernel>(new GatherNDKernel(init.Describe(), b));
}

StatusOr<std::unique_ptr<Kernel>> MakeGatherNDGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 3, 3, 1, 1));
  if (init.inputs[1].dtype != DType::kInt64 || init.inputs[1].dims.empty()) return init.Error("indices must be int64 of rank >= 1");
  AMP_ASSIGN_OR_RETURN(size_t b, ParseBatchDims(init, init.outputs[0].dims.size()));
  std::unique_ptr<Kernel> k;
  AMP_RETURN_IF_ERROR(DispatchFloat(init.inputs[0].dtype, [&](auto tag) {
    k = std::make_unique<GatherNDGradKernel<typename decltype(tag)::type>>(init.Describe(), b);
    return Status::Ok();
  }));
  return k;
}

StatusOr<std::unique_ptr<Kernel>> MakeScatterND(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 3, 3, 1, 1));
  AMP_ASSIGN_OR_RETURN(Reduction r, ParseScatterReduction<Reduction>(init));
  const DType t = init.inputs[0].dtype;
  if (r != Reduction::kNone && !ir::IsFloat(t) && t != DType::kInt64 && t != DType::kInt32)
    return init.Error("reduction other than none needs a float, int32 or int64 tensor, got ", ir::DTypeName(t));
  if (init.inputs[1].dtype != DType::kInt64 || init.inputs[1].dims.empty()) return init.Error("indices must be int64 of rank >= 1");
  return std::unique_ptr<Kernel>(new ScatterNDKernel(init.Describe(), r));
}

StatusOr<std::unique_ptr<Kernel>> MakeScatterNDGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 2, 2, 2));
  AMP_ASSIGN_OR_RETURN(Reduction r, ParseScatterReduction<Reduction>(init));
  if (r != Reduction::kNone && r != Reduction::kAdd) return init.Error("the gradient takes reduction none or add only");
  if (init.inputs[1].dtype != DType::kInt64 || init.inputs[1].dims.empty()) return init.Error("indices must be int64 of rank >= 1");
  return std::unique_ptr<Kernel>(new ScatterNDGradKernel(init.Describe(), r));
}

// ScatterElements' axis against data's rank; indices int32 or int64 of
// data's rank.
StatusOr<size_t> ElementAxis(const KernelInit& init, const std::vector<int64_t>& data, const TensorSpec& indices) {
  if (indices.dtype != DType::kInt64 && indices.dtype != DType::kInt32) return init.Error("indices must be int32 or int64");
  if (indices.dims.size() != data.size() || data.empty()) return init.Error("indices and data must have one rank >= 1");
  AMP_ASSIGN_OR_RETURN(int64_t axis, AttrsOf(init).GetInt("axis", 0));
  const int64_t rank = static_cast<int64_t>(data.size());
  if (axis < -rank || axis >= rank) return init.Error("axis ", axis, " is out of range for rank ", rank);
  return static_cast<size_t>(axis < 0 ? axis + rank : axis);
}

StatusOr<std::unique_ptr<Kernel>> MakeScatterElements(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 3, 3, 1, 1));
  AMP_ASSIGN_OR_RETURN(Reduction r, ParseScatterReduction<Reduction>(init));
  const DType t = init.inputs[0].dtype;
  if (r != Reduction::kNone && !ir::IsFloat(t) && t != DType::kInt64 && t != DType::kInt32)
    return init.Error("reduction other than none needs a float, int32 or int64 tensor, got ", ir::DTypeName(t));
  if (init.inputs[2].dims != init.inputs[1].dims) return init.Error("updates and indices must have one shape");
  AMP_ASSIGN_OR_RETURN(size_t axis, ElementAxis(init, init.inputs[0].dims, init.inputs[1]));
  return std::unique_ptr<Kernel>(new ScatterElementsKernel(init.Describe(), r, axis, /*backward=*/false));
}

StatusOr<std::unique_ptr<Kernel>> MakeScatterElementsGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 2, 2, 2));
  AMP_ASSIGN_OR_RETURN(Reduction r, ParseScatterReduction<Reduction>(init));
  if (r != Reduction::kNone && r != Reduction::kAdd) return init.Error("the gradient takes reduction none or add only");
  AMP_ASSIGN_OR_RETURN(size_t axis, ElementAxis(init, init.inputs[0].dims, init.inputs[1]));
  return std::unique_ptr<Kernel>(new ScatterElementsKernel(init.Describe(), r, axis, /*backward=*/true));
}

}  // namespace

void RegisterReferenceScatterND(Registry& r) {
  r.Add(ReferenceEntry(OpKind::kScatterElements, {}, MakeScatterElements));
  r.Add(ReferenceEntry(OpKind::kScatterElementsGrad, FloatDTypes(), MakeScatterElementsGrad));
  r.Add(ReferenceEntry(OpKind::kScatterND, {}, MakeScatterND));
  r.Add(ReferenceEntry(OpKind::kScatterNDGrad, FloatDTypes(), MakeScatterNDGrad));
  r.Add(ReferenceEntry(OpKind::kGatherND, {}, MakeGatherND));
  r.Add(ReferenceEntry(OpKind::kGatherNDGrad, FloatDTypes(), MakeGatherNDGrad));
}

}  // namespace amptrain::kernels::cpu
