// Reference GatherGrad and ReduceSumTo: the backward ops that sum many
// gradient elements into one.
//   GatherGrad(dY, indices, data_shape), attr axis: out = zeros(data_shape);
//     out[o, idx[j], i] += dY[o, j, i] with data viewed as [outer, dim, inner]
//     and dY as [outer, n_indices, inner]; negative indices wrap, indices
//     outside [-dim, dim) are an OutOfRange error. Indices are bucketed by
//     target row (in index order), so each output row is one work item that
//     sums its contributions in double: repeated indices need no atomics and
//     the bits do not depend on the thread count.
//   ReduceSumTo(X, shape): X summed down to `shape` by inverse numpy
//     broadcasting (leading axes, and axes where shape is 1); each output
//     element sums its preimage in double, in row-major order.
// Output dims are the inferred ones (init.outputs[0]); the shape input's
// run-time value must match them.
#include <vector>

#include "kernels/cpu/grad_kernels.h"

namespace amptrain::kernels::cpu::grad {

namespace {

std::vector<int64_t> ReadInts(const ir::TensorView& v) {
  std::vector<int64_t> out(static_cast<size_t>(v.num_elements()));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = v.dtype == DType::kInt64 ? v.as<const int64_t>()[i] : v.as<const int32_t>()[i];
  return out;
}

Status CheckShapeInput(const std::string& describe, const ir::TensorView& shape, const std::vector<int64_t>& dims) {
  if (ReadInts(shape) != dims) return InvalidArgument(describe, ": the shape input does not match the planned output dims");
  return Status::Ok();
}

template <class T>
class GatherGradReference : public Kernel {
 public:
  GatherGradReference(const KernelInit& init, size_t axis)
      : describe_(init.Describe()), out_dims_(init.outputs[0].dims), threads_(Threads(init)) {
    for (size_t d = 0; d < out_dims_.size(); ++d) (d < axis ? outer_ : d == axis ? dim_ : inner_) *= out_dims_[d];
    n_ = init.inputs[1].num_elements();
  }

  Status Run(KernelContext& ctx) override {
    AMP_RETURN_IF_ERROR(CheckShapeInput(describe_, ctx.inputs[2], out_dims_));
    std::vector<int64_t> idx = ReadInts(ctx.inputs[1]);
    std::vector<int64_t> start(static_cast<size_t>(dim_ + 1), 0), order(idx.size());
    for (int64_t& i : idx) {
      if (i < -dim_ || i >= dim_) return OutOfRange(describe_, ": index ", i, " is out of range for a dim of size ", dim_);
      if (i < 0) i += dim_;
      ++start[i + 1];
    }
    for (int64_t r = 0; r < dim_; ++r) start[r + 1] += start[r];
    std::vector<int64_t> fill(start.begin(), start.end() - 1);
    for (int64_t j = 0; j < n_; ++j) order[fill[idx[j]]++] = j;
    const T* dy = ctx.inputs[0].as<const T>();
    T* out = ctx.outputs[0].as<T>();
#pragma omp parallel num_threads(threads_)
    {
      std::vector<double> acc(inner_);
#pragma omp for collapse(2) schedule(static)
      for (int64_t o = 0; o < outer_; ++o) {
        for (int64_t r = 0; r < dim_; ++r) {
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t b = start[r]; b < start[r + 1]; ++b) {
            const T* src = dy + (o * n_ + order[b]) * inner_;
            for (int64_t i = 0; i < inner_; ++i) acc[i] += Load(src[i]);
          }
          T* dst = out + (o * dim_ + r) * inner_;
          for (int64_t i = 0; i < inner_; ++i) dst[i] = Store<T>(acc[i]);
        }
      }
    }
    return Status::Ok();
  }

 private:
  std::string describe_;
  std::vector<int64_t> out_dims_;
  int64_t outer_ = 1, dim_ = 1, inner_ = 1, n_ = 0;
  int threads_;
};

template <class T>
class ReduceSumToReference : public Kernel {
 public:
  ReduceSumToReference(const KernelInit& init)
      : describe_(init.Describe()), out_dims_(init.outputs[0].dims), threads_(Threads(init)) {
    const auto& x = init.inputs[0].dims;
    const size_t lead = x.size() - out_dims_.size();
    std::vector<int64_t> stride(x.size(), 1), reduced_dims, reduced_strides;
    for (size_t d = x.size(); d-- > 1;) stride[d - 1] = stride[d] * x[d];
    for (size_t d = 0; d < x.size(); ++d) {
      if (d >= lead && out_dims_[d - lead] == x[d]) {
        kept_dims_.push_back(x[d]), kept_strides_.push_back(stride[d]);
      } else {
        reduced_dims.push_back(x[d]), reduced_strides.push_back(stride[d]);
      }
    }
    int64_t count = 1;
    for (int64_t d : reduced_dims) count *= d;
    offsets_.assign(static_cast<size_t>(count), 0);
    for (int64_t r = 0; r < count; ++r)
      for (int64_t rest = r, d = static_cast<int64_t>(reduced_dims.size()); d-- > 0; rest /= reduced_dims[d])
        offsets_[r] += rest % reduced_dims[d] * reduced_strides[d];
  }

  Status Run(KernelContext& ctx) override {
    AMP_RETURN_IF_ERROR(CheckShapeInput(describe_, ctx.inputs[1], out_dims_));
    const T* x = ctx.inputs[0].as<const T>();
    T* out = ctx.outputs[0].as<T>();
    const int64_t n = ctx.outputs[0].num_elements(), count = static_cast<int64_t>(offsets_.size());
    if (n == 1) {
      out[0] = Store<T>(DeterministicSum(count, threads_, [&](int64_t r) { return Load(x[offsets_[r]]); }));
      return Status::Ok();
    }
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && n * count >= (1 << 15))
    for (int64_t o = 0; o < n; ++o) {
      int64_t base = 0;
      for (int64_t rest = o, d = static_cast<int64_t>(kept_dims_.size()); d-- > 0; rest /= kept_dims_[d])
        base += rest % kept_dims_[d] * kept_strides_[d];
      double s = 0.0;
      for (int64_t r = 0; r < count; ++r) s += Load(x[base + offsets_[r]]);
      out[o] = Store<T>(s);
    }
    return Status::Ok();
  }

 private:
  std::string describe_;
  std::vector<int64_t> out_dims_, kept_dims_, kept_strides_;
  std::vector<int64_t> offsets_;  // X offsets of one output element's preimage, row-major
  int threads_;
};

Status CheckShapeSpec(const KernelInit& init, size_t i) {
  const TensorSpec& s = init.inputs[i];
  if (s.dtype != DType::kInt64 || s.dims.size() != 1 || s.dims[0] != static_cast<int64_t>(init.outputs[0].dims.size()))
    return init.Error("input ", i, " must be an int64 vector of the output's rank");
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> MakeGatherGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 3, 3, 1, 1));
  AMP_RETURN_IF_ERROR(CheckShapeSpec(init, 2));
  if (init.inputs[1].dtype != DType::kInt64 && init.inputs[1].dtype != DType::kInt32)
    return init.Error("indices must be int32 or int64");
  const auto& data = init.outputs[0].dims;
  const int64_t rank = static_cast<int64_t>(data.size());
  AMP_ASSIGN_OR_RETURN(int64_t axis, init.attrs->GetInt("axis", 0));
  if (rank < 1 || axis < -rank || axis >= rank)
    return OutOfRange(init.Describe(), ": axis ", axis, " is out of range for rank ", rank);
  if (axis < 0) axis += rank;
  std::vector<int64_t> expected(data.begin(), data.begin() + axis);
  expected.insert(expected.end(), init.inputs[1].dims.begin(), init.inputs[1].dims.end());
  expected.insert(expected.end(), data.begin() + axis + 1, data.end());
  if (init.inputs[0].dims != expected) return init.Error("dY does not have Gather's output shape");
  if (init.outputs[0].dtype != init.inputs[0].dtype) return init.Error("output dtype differs from dY's");
  std::unique_ptr<Kernel> kernel;
  AMP_RETURN_IF_ERROR(DispatchFloat(init.inputs[0].dtype, [&](auto tag) {
    kernel = std::make_unique<GatherGradReference<typename decltype(tag)::type>>(init, static_cast<size_t>(axis));
    return Status::Ok();
  }));
  return kernel;
}

StatusOr<std::unique_ptr<Kernel>> MakeReduceSumTo(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 2, 1, 1));
  AMP_RETURN_IF_ERROR(CheckShapeSpec(init, 1));
  const auto& x = init.inputs[0].dims;
  const auto& out = init.outputs[0].dims;
  bool ok = out.size() <= x.size() && init.outputs[0].dtype == init.inputs[0].dtype;
  for (size_t d = 0; ok && d < out.size(); ++d) ok = out[d] == 1 || out[d] == x[x.size() - out.size() + d];
  if (!ok) return init.Error("X does not reduce to the output shape by inverse broadcasting");
  std::unique_ptr<Kernel> kernel;
  AMP_RETURN_IF_ERROR(DispatchFloat(init.inputs[0].dtype, [&](auto tag) {
    kernel = std::make_unique<ReduceSumToReference<typename decltype(tag)::type>>(init);
    return Status::Ok();
  }));
  return kernel;
}

}  // namespace amptrain::kernels::cpu::grad
