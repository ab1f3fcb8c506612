// CUDA Kernel classes of the data-movement ops of the training graphs, for
// any dtype (bytes are moved, never converted), with the contracts of the
// CPU reference kernels (kernels/cpu/shape.cc):
//   Reshape, Flatten, Squeeze, Unsqueeze: output = the input's bytes under
//     the output's dims, which the plan inferred (the shape/axes input is
//     never read): one device-to-device copy on the run's stream, none where
//     the executor aliased the output over the input (inplace_input).
//   Expand: the input broadcast (numpy rules) to the output's dims, up to
//     rank 8 (launcher: LaunchBroadcastCopy in elementwise.cu).
//   Tile: out[o] = in[o mod in_dims], the same strided copy over the output
//     viewed as [repeats_0, in_0, repeats_1, in_1, ...] (dims repeated once
//     stay single): up to 8 of those dims. The repeats input is never read.
//   Shape (start, end), Constant (value), ConstantOfShape (value, default
//     fp32 0): values known at plan time. Shape and Constant upload the host
//     copy the kernel owns with one cudaMemcpyAsync per run; ConstantOfShape
//     fills on the device (numeric.cu).
//   Range(start, limit, delta): start + A(i) * delta on the device from the
//     device scalars (A: float for fp32/fp16/bf16, else the integer type),
//     as kernels/cpu/shape.cc; the output length is the planned one.
#include <algorithm>
#include <cstring>

#include "kernels/cuda/common.h"
#include "kernels/kernel_params.h"

namespace amptrain::kernels::cuda {

namespace {

class ViewCopyKernel final : public Kernel {
 public:
  Status Run(KernelContext& ctx) override { return CopyInputToOutput(ctx); }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }
  bool is_view() const override { return true; }
};

StatusOr<std::unique_ptr<Kernel>> MakeViewCopy(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 1, 2, 1, 1));
  AMP_RETURN_IF_ERROR(CheckDTypes(init, init.inputs[0].dtype, {}, {0}));
  if (init.inputs[0].num_elements() != init.outputs[0].num_elements())
    return init.Error("input has ", init.inputs[0].num_elements(), " elements, output ",
                      init.outputs[0].num_elements());
  return std::unique_ptr<Kernel>(std::make_unique<ViewCopyKernel>());
}

// Expand's and Tile's checks (data, a shape/repeats input never read): the
// element size of the moved bytes.
StatusOr<size_t> MovedBytes(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 2, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {}, {0}));
  const size_t bytes = ir::DTypeSize(t);
  AMP_RETURN_IF_ERROR(CheckCopyable(init, bytes));
  return bytes;
}

class ExpandKernel final : public Kernel {
 public:
  ExpandKernel(size_t elem_bytes, const Broadcast& bc) : elem_bytes_(elem_bytes), bc_(bc) {}
  Status Run(KernelContext& ctx) override {
    CUDA_CHECK(LaunchBroadcastCopy(elem_bytes_, ctx.inputs[0].data, ctx.outputs[0].data,
                                   ctx.outputs[0].num_elements(), bc_, StreamOf(ctx)));
    return Status::Ok();
  }

 private:
  size_t elem_bytes_;
  Broadcast bc_;
};

StatusOr<std::unique_ptr<Kernel>> MakeExpand(const KernelInit& init) {
  AMP_ASSIGN_OR_RETURN(const size_t bytes, MovedBytes(init));
  const std::vector<int64_t>& in = init.inputs[0].dims;
  const std::vector<int64_t>& out = init.outputs[0].dims;
  if (out.size() > static_cast<size_t>(kMaxRank)) return init.Error("rank ", out.size(), " is over ", kMaxRank);
  if (!BroadcastsTo(in, out)) return init.Error("the input does not broadcast to the output");
  Broadcast bc;
  bc.rank = static_cast<int>(out.size());
  for (size_t d = 0; d < out.size(); ++d) bc.out_dims[d] = out[d];
  BroadcastStrides(in, out, bc.a_strides);
  if (init.outputs[0].channels_last) {
    // A channels-last [N, C, H, W] from an input broadcast over H and W (the
    // gradient of GlobalAveragePool): written in [N, H, W, C] order.
    const size_t r = in.size();
    const bool over_plane = out.size() == 4 && (r < 1 || in[r - 1] == 1) && (r < 2 || in[r - 2] == 1);
    if (!over_plane) return init.Error("a channels-last output needs an input broadcast over H and W");
    const int64_t dims[4] = {out[0], out[2], out[3], out[1]};
    const int64_t strides[4] = {bc.a_strides[0], bc.a_strides[2], bc.a_strides[3], bc.a_strides[1]};
    for (int d = 0; d < 4; ++d) bc.out_dims[d] = dims[d], bc.a_strides[d] = strides[d];
  }
  return std::unique_ptr<Kernel>(std::make_unique<ExpandKernel>(bytes, bc));
}

StatusOr<std::unique_ptr<Kernel>> MakeTile(const KernelInit& init) {
  AMP_ASSIGN_OR_RETURN(const size_t bytes, MovedBytes(init));
  const std::vector<int64_t>& in = init.inputs[0].dims;
  const std::vector<int64_t>& out = init.outputs[0].dims;
  if (out.size() != in.size()) return init.Error("output rank ", out.size(), " differs from the input rank ", in.size());
  Broadcast bc;
  int64_t stride = 1;
  std::vector<int64_t> dims, strides;  // innermost first
  for (size_t d = in.size(); d-- > 0;) {
    const int64_t i = in[d], o = out[d];
    if (i == 0 ? o != 0 : o % i != 0) return init.Error("output dim ", o, " is not a multiple of input dim ", i);
    dims.push_back(i);
    strides.push_back(stride);
    if (i != 0 && o / i != 1) {
      dims.push_back(o / i);
      strides.push_back(0);
    }
    stride *= i;
  }
  if (dims.size() > static_cast<size_t>(kMaxRank))
    return init.Error("tiling ", in.size(), " dims needs ", dims.size(), " strided dims, over ", kMaxRank);
  bc.rank = static_cast<int>(dims.size());
  for (size_t k = 0; k < dims.size(); ++k) {
    bc.out_dims[dims.size() - 1 - k] = dims[k];
    bc.a_strides[dims.size() - 1 - k] = strides[k];
  }
  return std::unique_ptr<Kernel>(std::make_unique<ExpandKernel>(bytes, bc));
}

// Uploads `bytes_` (Shape's dims, Constant's value) to output 0 at every run.
class UploadKernel final : public Kernel {
 public:
  explicit UploadKernel(std::vector<unsigned char> bytes) : bytes_(std::move(bytes)) {}
  Status Run(KernelContext& ctx) override {
    if (!bytes_.empty())
      CUDA_CHECK(cudaMemcpyAsync(ctx.outputs[0].data, bytes_.data(), bytes_.size(), cudaMemcpyHostToDevice,
                                 StreamOf(ctx)));
    return Status::Ok();
  }

 private:
  std::vector<unsigned char> bytes_;
};

StatusOr<std::unique_ptr<Kernel>> MakeShapeOf(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 1, 1, 1, 1));
  const int64_t r = static_cast<int64_t>(init.inputs[0].dims.size());
  AMP_ASSIGN_OR_RETURN(int64_t start, init.attrs->GetInt("start", 0));
  AMP_ASSIGN_OR_RETURN(int64_t end, init.attrs->GetInt("end", r));
  ResolveShapeRange(r, &start, &end);
  if (init.outputs[0].dtype != DType::kInt64) return init.Error("output must be int64");
  if (init.outputs[0].num_elements() != end - start) return init.Error("the output does not have ", end - start, " elements");
  std::vector<unsigned char> bytes(static_cast<size_t>(end - start) * sizeof(int64_t));
  if (!bytes.empty()) std::memcpy(bytes.data(), init.inputs[0].dims.data() + start, bytes.size());
  return std::unique_ptr<Kernel>(std::make_unique<UploadKernel>(std::move(bytes)));
}

class FillKernel final : public Kernel {
 public:
  FillKernel(size_t elem_bytes, uint64_t bits) : elem_bytes_(elem_bytes), bits_(bits) {}
  Status Run(KernelContext& ctx) override {
    CUDA_CHECK(LaunchFill(elem_bytes_, bits_, ctx.outputs[0].data, ctx.outputs[0].num_elements(), StreamOf(ctx)));
    return Status::Ok();
  }

 private:
  size_t elem_bytes_;
  uint64_t bits_;
};

// ConstantOfShape (fills with its one-element "value", default fp32 0) and
// Constant (copies "value"), as kernels/cpu/shape.cc's ConstantKernel.
StatusOr<std::unique_ptr<Kernel>> MakeConstant(const KernelInit& init) {
  if (init.outputs.size() != 1) return init.Error("needs one output");
  const bool fill = init.op == OpKind::kConstantOfShape;
  if (fill) AMP_RETURN_IF_ERROR(CheckArity(init, 1, 1, 1, 1));
  AMP_ASSIGN_OR_RETURN(const ir::Tensor value, ConstantValue(init, fill));
  const size_t bytes = ir::DTypeSize(value.dtype());
  if (!fill) {
    std::vector<unsigned char> host(value.nbytes());
    if (!host.empty()) std::memcpy(host.data(), value.raw(), host.size());
    return std::unique_ptr<Kernel>(std::make_unique<UploadKernel>(std::move(host)));
  }
  AMP_RETURN_IF_ERROR(CheckCopyable(init, bytes));
  uint64_t bits = 0;
  std::memcpy(&bits, value.raw(), bytes);  // little-endian: the element in the low bytes
  return std::unique_ptr<Kernel>(std::make_unique<FillKernel>(bytes, bits));
}

class RangeKernel final : public Kernel {
 public:
  explicit RangeKernel(Num t) : t_(t) {}
  Status Run(KernelContext& ctx) override {
    CUDA_CHECK(LaunchRange(t_, ctx.inputs[0].data, ctx.inputs[2].data, ctx.outputs[0].data,
                           ctx.outputs[0].num_elements(), StreamOf(ctx)));
    return Status::Ok();
  }

 private:
  Num t_;
};

StatusOr<std::unique_ptr<Kernel>> MakeRange(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 3, 3, 1, 1));
  const DType t = init.inputs[0].dtype;
  for (const TensorSpec& s : init.inputs)
    if (s.dtype != t || s.num_elements() != 1) return init.Error("start, limit, delta must be scalars of one dtype");
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {}, {0}));
  const std::optional<Num> num = NumOf(t);
  if (!num) return init.Error("dtype ", ir::DTypeName(t), " is not supported");
  return std::unique_ptr<Kernel>(std::make_unique<RangeKernel>(*num));
}

}  // namespace

void RegisterShape(Registry& r) {
  for (OpKind op : {OpKind::kReshape, OpKind::kFlatten, OpKind::kSqueeze, OpKind::kUnsqueeze})
    r.Add(CudaEntry(op, "cuda", MakeViewCopy, 10, {}));
  KernelEntry expand = CudaEntry(OpKind::kExpand, "cuda", MakeExpand, 10, {});
  expand.channels_last_outputs = 0b1;  // over H and W only (the factory checks)
  r.Add(std::move(expand));
  r.Add(CudaEntry(OpKind::kTile, "cuda", MakeTile, 10, {}));
  r.Add(CudaEntry(OpKind::kShape, "cuda", MakeShapeOf, 10, {}));
  r.Add(CudaEntry(OpKind::kConstantOfShape, "cuda", MakeConstant, 10, {}));
  r.Add(CudaEntry(OpKind::kConstant, "cuda", MakeConstant, 10, {}));
  r.Add(CudaEntry(OpKind::kRange, "cuda", MakeRange, 10,
                  {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt32, DType::kInt64}));
}

}  // namespace amptrain::kernels::cuda
