// Reference kernels of the ops that select elements by value or by index:
//   ArgMax/ArgMin(x), attrs axis, keepdims, select_last_index -> int64: the
//     first (or last) position of the extremum; NaN counts as the extremum
//     (the first NaN wins), as numpy and PyTorch.
//   TopK(x, k), attrs axis, largest, sorted -> values, indices: the k largest
//     (smallest) along the axis, always sorted, ties by lower index first;
//     NaN sorts above every number.
//   GatherElements(data, indices), attr axis: out[i] = data[i with the axis
//     coordinate replaced by indices[i]] (negative indices wrap).
//   GatherElementsGrad(dY, indices, data_shape), attr axis: zeros, then each
//     dY element added where its index picked it, in order (deterministic).
// Tensors are viewed as [outer, n, inner] around the axis.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/shape_kernels.h"

namespace amptrain::kernels::cpu {

namespace {

struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};

AxisView ViewAround(const std::vector<int64_t>& dims, size_t axis) {
  AxisView v;
  for (size_t d = 0; d < dims.size(); ++d) (d < axis ? v.outer : d == axis ? v.n : v.inner) *= dims[d];
  return v;
}

StatusOr<size_t> AxisOf(const KernelInit& init, const std::vector<int64_t>& dims, int64_t fallback) {
  AMP_ASSIGN_OR_RETURN(int64_t axis, AttrsOf(init).GetInt("axis", fallback));
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (axis < -rank || axis >= rank) return init.Error("axis ", axis, " is out of range for rank ", rank);
  return static_cast<size_t>(axis < 0 ? axis + rank : axis);
}

template <class A>
bool IsNan(A v) {
  if constexpr (std::is_floating_point_v<A>) return std::isnan(v);
  else return false;
}

template <class T>
class ArgKernel final : public Kernel {
 public:
  ArgKernel(AxisView v, bool max, bool last) : v_(v), max_(max), last_(last) {}
  Status Run(KernelContext& ctx) override {
    using A = Acc<T>;
    const T* x = ctx.inputs[0].as<const T>();
    int64_t* y = ctx.outputs[0].as<int64_t>();
    for (int64_t o = 0; o < v_.outer; ++o)
      for (int64_t i = 0; i < v_.inner; ++i) {
        const T* p = x + o * v_.n * v_.inner + i;
        int64_t best = 0;
        A bv = A(p[0]);
        for (int64_t j = 1; j < v_.n && !IsNan(bv); ++j) {
          const A v = A(p[j * v_.inner]);
          const bool better = IsNan(v) || (max_ ? (last_ ? v >= bv : v > bv) : (last_ ? v <= bv : v < bv));
          if (better) {
            best = j;
            bv = v;
          }
        }
        y[o * v_.inner + i] = best;
      }
    return Status::Ok();
  }

 private:
  AxisView v_;
  bool max_, last_;
};

template <class T>
class TopKKernel final : public Kernel {
 public:
  TopKKernel(AxisView v, int64_t k_out, bool largest) : v_(v), k_(k_out), largest_(largest) {}
  Status Run(KernelContext& ctx) override {
    using A = Acc<T>;
    const T* x = ctx.inputs[0].as<const T>();
    T* values = ctx.outputs[0].as<T>();
    int64_t* indices = ctx.outputs[1].as<int64_t>();
    std::vector<int64_t> order(static_cast<size_t>(v_.n));
    for (int64_t o = 0; o < v_.outer; ++o)
      for (int64_t i = 0; i < v_.inner; ++i) {
        const T* p = x + o * v_.n * v_.inner + i;
        std::iota(order.begin(), order.end(), 0);
        // a before b: the more extreme value (NaN most of all), then the lower index.
        auto before = [&](int64_t a, int64_t b) {
          const A va = A(p[a * v_.inner]), vb = A(p[b * v_.inner]);
          if (IsNan(va) || IsNan(vb)) return largest_ ? (IsNan(va) && !IsNan(vb)) || (IsNan(va) && a < b)
                                                      : (!IsNan(va) && IsNan(vb)) || (IsNan(va) && IsNan(vb) && a < b);
          if (va != vb) return largest_ ? va > vb : va < vb;
          return a < b;
        };
        std::partial_sort(order.begin(), order.begin() + k_, order.end(), before);
        for (int64_t j = 0; j < k_; ++j) {
          const int64_t at = (o * k_ + j) * v_.inner + i;
          indices[at] = order[static_cast<size_t>(j)];
          values[at] = p[order[static_cast<size_t>(j)] * v_.inner];
        }
      }
    return Status::Ok();
  }

 private:
  AxisView v_;
  int64_t k_;
  bool largest_;
};

// The data offset of each element of an indices-shaped tensor.
class ElementIndexer {
 public:
  ElementIndexer(const std::vector<int64_t>& data, const std::vector<int64_t>& ind, size_t axis)
      : data_(data), ind_(ind), axis_(axis) {}
  // Calls f(flat position in indices, data offset) for every element; false on a bad index.
  template <class I, class F>
  Status ForEach(const I* idx, const std::string& who, F f) const {
    const size_t rank = ind_.size();
    std::vector<int64_t> stride(rank, 1), pos(rank, 0);
    for (size_t d = rank; d-- > 1;) stride[d - 1] = stride[d] * data_[d];
    int64_t total = 1;
    for (int64_t d : ind_) total *= d;
    for (int64_t e = 0; e < total; ++e) {
      int64_t k = static_cast<int64_t>(idx[e]);
      const int64_t n = data_[axis_];
      if (k < -n || k >= n) return OutOfRange(who, ": index ", k, " is out of range for a dim of size ", n);
      if (k < 0) k += n;
      int64_t off = 0;
      for (size_t d = 0; d < rank; ++d) off += (d == axis_ ? k : pos[d]) * stride[d];
      f(e, off);
      for (size_t d = rank; d-- > 0;) {  // odometer over the indices' dims
        if (++pos[d] < ind_[d]) break;
        pos[d] = 0;
      }
    }
    return Status::Ok();
  }

 private:
  std::vector<int64_t> data_, ind_;
  size_t axis_;
};

template <class T, class I>
class GatherElementsKernel final : public Kernel {
 public:
  GatherElementsKernel(std::string who, ElementIndexer ix, bool backward)
      : who_(std::move(who)), ix_(std::move(ix)), backward_(backward) {}
  Status Run(KernelContext& ctx) override {
    const I* idx = ctx.inputs[1].as<const I>();
    if (!backward_) {
      const T* data = ctx.inputs[0].as<const T>();
      T* out = ctx.outputs[0].as<T>();
      return ix_.ForEach(idx, who_, [&](int64_t e, int64_t off) { out[e] = data[off]; });
    }
    const T* dy = ctx.inputs[0].as<const T>();
    T* dx = ctx.outputs[0].as<T>();
    std::fill(dx, dx + ctx.outputs[0].num_elements(), T(0.0f));
    return ix_.ForEach(idx, who_, [&](int64_t e, int64_t off) {
      dx[off] = static_cast<T>(Acc<T>(dx[off]) + Acc<T>(dy[e]));
    });
  }

 private:
  std::string who_;
  ElementIndexer ix_;
  bool backward_;
};

StatusOr<std::unique_ptr<Kernel>> CreateArg(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 1, 1));
  AMP_ASSIGN_OR_RETURN(size_t axis, AxisOf(init, init.inputs[0].dims, 0));
  AMP_ASSIGN_OR_RETURN(int64_t last, AttrsOf(init).GetInt("select_last_index", 0));
  std::unique_ptr<Kernel> k;
  AMP_RETURN_IF_ERROR(DispatchArith(init.inputs[0].dtype, [&](auto tag) {
    k = std::make_unique<ArgKernel<typename decltype(tag)::type>>(ViewAround(init.inputs[0].dims, axis),
                                                                  init.op == OpKind::kArgMax, last != 0);
    return Status::Ok();
  }));
  return k;
}

StatusOr<std::unique_ptr<Kernel>> CreateTopK(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 2));
  AMP_ASSIGN_OR_RETURN(size_t axis, AxisOf(init, init.inputs[0].dims, -1));
  AMP_ASSIGN_OR_RETURN(int64_t largest, AttrsOf(init).GetInt("largest", 1));
  const int64_t k = init.outputs[0].dims[axis];
  if (k > init.inputs[0].dims[axis]) return init.Error("k = ", k, " is larger than the axis (", init.inputs[0].dims[axis], ")");
  std::unique_ptr<Kernel> out;
  AMP_RETURN_IF_ERROR(DispatchArith(init.inputs[0].dtype, [&](auto tag) {
    out = std::make_unique<TopKKernel<typename decltype(tag)::type>>(ViewAround(init.inputs[0].dims, axis), k,
                                                                     largest != 0);
    return Status::Ok();
  }));
  return out;
}

StatusOr<std::unique_ptr<Kernel>> CreateGatherElements(const KernelInit& init) {
  const bool backward = init.op == OpKind::kGatherElementsGrad;
  AMP_RETURN_IF_ERROR(CheckArity(init, backward ? 3 : 2, 1));
  const std::vector<int64_t>& data = backward ? init.outputs[0].dims : init.inputs[0].dims;
  const std::vector<int64_t>& ind = init.inputs[1].dims;
  if (ind.size() != data.size()) return init.Error("indices and data have different ranks");
  AMP_ASSIGN_OR_RETURN(size_t axis, AxisOf(init, data, 0));
  for (size_t d = 0; d < data.size(); ++d)
    if (d != axis && ind[d] > data[d]) return init.Error("indices dim ", d, " (", ind[d], ") exceeds data's (", data[d], ")");
  std::unique_ptr<Kernel> out;
  const DType index = init.inputs[1].dtype;
  if (index != DType::kInt64 && index != DType::kInt32) return init.Error("indices must be int32 or int64");
  auto make = [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (index == DType::kInt64)
      out = std::make_unique<GatherElementsKernel<T, int64_t>>(init.Describe(), ElementIndexer(data, ind, axis), backward);
    else
      out = std::make_unique<GatherElementsKernel<T, int32_t>>(init.Describe(), ElementIndexer(data, ind, axis), backward);
    return Status::Ok();
  };
  if (backward) {
    AMP_RETURN_IF_ERROR(DispatchFloat(init.inputs[0].dtype, make));
  } else {
    AMP_RETURN_IF_ERROR(DispatchArith(init.inputs[0].dtype, make));
  }
  return out;
}

}  // namespace

void RegisterReferenceSelect(Registry& r) {
  r.Add(ReferenceEntry(OpKind::kArgMax, ArithDTypes(), CreateArg));
  r.Add(ReferenceEntry(OpKind::kArgMin, ArithDTypes(), CreateArg));
  r.Add(ReferenceEntry(OpKind::kTopK, ArithDTypes(), CreateTopK));
  r.Add(ReferenceEntry(OpKind::kGatherElements, ArithDTypes(), CreateGatherElements));
  r.Add(ReferenceEntry(OpKind::kGatherElementsGrad, FloatDTypes(), CreateGatherElements));
}

}  // namespace amptrain::kernels::cpu
