// Reference Gather (int32/int64 indices, negative indices count from the end)
// and Slice (negative steps, clamping; the index arithmetic is ir's
// ResolveSlice, shared with the shape rule). Any dtype: copies by size.
#include "ir/infer/shape_params.h"
#include "kernels/cpu/shape_kernels.h"

namespace amptrain::kernels::cpu {

namespace {

class GatherKernel : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const KernelInit& init) {
    AMP_RETURN_IF_ERROR(CheckArity(init, 2, 2, 1));
    if (init.inputs[1].dtype != DType::kInt64 && init.inputs[1].dtype != DType::kInt32)
      return init.Error("indices must be int32 or int64, got ", ir::DTypeName(init.inputs[1].dtype));
    const int64_t r = static_cast<int64_t>(init.inputs[0].dims.size());
    int64_t axis = init.attrs ? init.attrs->Int("axis", 0) : 0;
    if (axis < -r || axis >= r) return init.Error("axis ", axis, " is out of range for rank ", r);
    return std::unique_ptr<Kernel>(new GatherKernel(static_cast<size_t>(axis < 0 ? axis + r : axis), init.Describe()));
  }
  Status Run(KernelContext& ctx) override {
    const ir::TensorView &data = ctx.inputs[0], &ind = ctx.inputs[1], &out = ctx.outputs[0];
    const int64_t dim = data.dims[axis_];
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < axis_; ++d) outer *= data.dims[d];
    for (size_t d = axis_ + 1; d < data.dims.size(); ++d) inner *= data.dims[d];
    std::vector<int64_t> idx = ViewInts(ind);
    for (int64_t& i : idx) {
      if (i < -dim || i >= dim) return OutOfRange(describe_, ": index ", i, " is out of range for a dim of size ", dim);
      if (i < 0) i += dim;
    }
    const int64_t n = static_cast<int64_t>(idx.size());
    const size_t es = ir::DTypeSize(data.dtype), block = static_cast<size_t>(inner) * es;
    const auto* src = static_cast<const std::byte*>(data.data);
    auto* dst = static_cast<std::byte*>(out.data);
#pragma omp parallel for if (outer * n * inner >= kParallelElements)
    for (int64_t k = 0; k < outer * n; ++k) {
      const int64_t o = k / n, j = k % n;
      std::memcpy(dst + k * block, src + (o * dim + idx[static_cast<size_t>(j)]) * block, block);
    }
    return Status::Ok();
  }

 private:
  GatherKernel(size_t axis, std::string describe) : axis_(axis), describe_(std::move(describe)) {}
  size_t axis_;
  std::string describe_;
};

class SliceKernel : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const KernelInit& init) {
    AMP_RETURN_IF_ERROR(CheckArity(init, 3, 5, 1));
    for (size_t i = 1; i < init.inputs.size(); ++i)
      if (init.inputs[i].present() && init.inputs[i].dtype != DType::kInt64 && init.inputs[i].dtype != DType::kInt32)
        return init.Error("input ", i, " must be int32 or int64");
    auto k = std::unique_ptr<SliceKernel>(new SliceKernel(init));
    if (k->starts_.present() && init.inputs[1].value && init.inputs[2].value &&
        (init.inputs.size() < 4 || !init.inputs[3].present() || init.inputs[3].value) &&
        (init.inputs.size() < 5 || !init.inputs[4].present() || init.inputs[4].value)) {
      KernelContext none;
      auto s = ir::ResolveSlice(init.inputs[0].dims, k->starts_.Ints(none), k->ends_.Ints(none), k->axes_.Ints(none),
                                k->steps_.Ints(none));
      if (!s.ok()) return init.Error(s.status().message());
    }
    return std::unique_ptr<Kernel>(std::move(k));
  }
  Status Run(KernelContext& ctx) override {
    const ir::TensorView &in = ctx.inputs[0], &out = ctx.outputs[0];
    auto s = ir::ResolveSlice(in.dims, starts_.Ints(ctx), ends_.Ints(ctx), axes_.Ints(ctx), steps_.Ints(ctx));
    if (!s.ok()) return InvalidArgument(describe_, ": ", s.status().message());
    std::vector<int64_t> in_strides = Strides(in.dims), strides, dims;
    int64_t base = 0;
    for (size_t d = 0; d < in.dims.size(); ++d) {
      const ir::SliceAxis& a = (*s)[d];
      base += a.start * in_strides[d];
      strides.push_back(a.step * in_strides[d]);
      dims.push_back(a.count);
    }
    if (dims != out.dims) return InvalidArgument(describe_, ": the slice does not match the output dims");
    return DispatchBySize(ir::DTypeSize(in.dtype), [&](auto b) {
      using U = typename decltype(b)::type;
      StridedCopy(in.as<const U>() + (out.num_elements() > 0 ? base : 0), out.as<U>(), dims, strides, dims);
      return Status::Ok();
    });
  }

 private:
  explicit SliceKernel(const KernelInit& init)
      : starts_(init, 1), ends_(init, 2), axes_(init, 3), steps_(init, 4), describe_(init.Describe()) {}
  ParamInput starts_, ends_, axes_, steps_;
  std::string describe_;
};

}  // namespace

void RegisterReferenceGatherSlice(Registry& r) {
  r.Add(ReferenceEntry<GatherKernel>(OpKind::kGather));
  r.Add(ReferenceEntry<SliceKernel>(OpKind::kSlice));
}

}  // namespace amptrain::kernels::cpu
