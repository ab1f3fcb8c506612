// CUDA GatherND, GatherNDGrad, ScatterND, ScatterNDGrad (launchers:
// scatter_nd.cu), with the contracts of kernels/cpu/scatter_nd.cc: int64
// index tuples, negative coordinates wrap, GatherND's batch_dims. GatherND
// and ScatterND (reduction none) and ScatterNDGrad move bytes (any dtype of
// 1/2/4/8 bytes; ScatterNDGrad: the float dtypes, as the CPU registers it);
// ScatterND's add/mul/max/min take fp32/fp16/bf16 (in float, rounded at
// every step as the CPU) and int32/int64; GatherNDGrad sums in float in
// tuple order. Deterministic: duplicates are resolved in tuple order (the
// last write wins for none) by a stable sort, not by atomics. An index
// outside [-dim, dim), the CPU's OutOfRange error, is not read back on the
// host: GatherND gives NaN (floats) or zeros for its slice, the others make
// their whole outputs NaN or zeros.
#include "kernels/cuda/common.h"
#include "kernels/kernel_params.h"

namespace amptrain::kernels::cuda {

namespace {

// The geometry of index tuples `idx` into `dims` with `batch` shared leading dims.
StatusOr<NDShape> Geometry(const KernelInit& init, const std::vector<int64_t>& dims, const TensorSpec& idx, size_t batch) {
  if (idx.dtype != DType::kInt64 || idx.dims.empty()) return init.Error("indices must be int64 of rank >= 1");
  const int64_t k = idx.dims.back();
  if (k < 0 || batch + static_cast<size_t>(k) > dims.size()) return init.Error("index tuples of ", k, " coordinates do not fit rank ", dims.size());
  if (k > kMaxRank) return init.Error("index tuples of ", k, " coordinates are over ", kMaxRank);
  NDShape s;
  s.k = static_cast<int>(k);
  for (size_t d = batch + static_cast<size_t>(k); d < dims.size(); ++d) s.size *= dims[d];
  int64_t batches = 1;
  for (size_t d = 0; d < batch; ++d) batches *= dims[d];
  s.slab_rows = 1;
  for (int64_t d = 0; d < k; ++d) {
    s.in[d] = dims[batch + static_cast<size_t>(d)];
    s.slab_rows *= s.in[d];
  }
  for (int64_t d = k; d-- > 0;) s.stride[d] = d + 1 < k ? s.stride[d + 1] * s.in[d + 1] : 1;
  s.rows = batches * s.slab_rows;
  s.count = k == 0 ? 0 : idx.num_elements() / k;
  s.per_batch = batches > 0 && s.count / batches > 0 ? s.count / batches : 1;
  if (s.rows >= (int64_t{1} << 30) || s.count >= (int64_t{1} << 30))
    return init.Error("a row or tuple count of 2^30 or more is not supported on CUDA");
  return s;
}

class GatherNDKernel final : public Kernel {
 public:
  GatherNDKernel(size_t bytes, NDShape s, uint64_t bad) : bytes_(bytes), s_(s), bad_(bad) {}
  Status Run(KernelContext& ctx) override {
    CUDA_CHECK(LaunchGatherND(bytes_, ctx.inputs[0].data, static_cast<const int64_t*>(ctx.inputs[1].data),
                              ctx.outputs[0].data, s_, bad_, StreamOf(ctx)));
    return Status::Ok();
  }

 private:
  size_t bytes_;
  NDShape s_;
  uint64_t bad_;
};

StatusOr<std::unique_ptr<Kernel>> MakeGatherND(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 2, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {}, {0}));
  AMP_RETURN_IF_ERROR(CheckCopyable(init, ir::DTypeSize(t)));
  AMP_ASSIGN_OR_RETURN(size_t b, ParseBatchDims(init, init.inputs[0].dims.size()));
  AMP_ASSIGN_OR_RETURN(NDShape s, Geometry(init, init.inputs[0].dims, init.inputs[1], b));
  if (init.outputs[0].num_elements() != s.count * s.size) return init.Error("the output does not hold the gathered slices");
  return std::unique_ptr<Kernel>(std::make_unique<GatherNDKernel>(ir::DTypeSize(t), s, BadBits(t)));
}

class GatherNDGradKernel final : public Kernel {
 public:
  GatherNDGradKernel(Elem t, NDShape s) : t_(t), s_(s) {}
  Status Run(KernelContext& ctx) override {
    CUDA_CHECK(LaunchGatherNDGrad(t_, ctx.inputs[0].data, static_cast<const int64_t*>(ctx.inputs[1].data),
                                  ctx.outputs[0].data, s_, ctx.scratch, StreamOf(ctx)));
    return Status::Ok();
  }
  size_t scratch_bytes() const override { return NDScratchBytes(s_); }

 private:
  Elem t_;
  NDShape s_;
};

StatusOr<std::unique_ptr<Kernel>> MakeGatherNDGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 3, 3, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {}, {0}));
  const std::vector<int64_t>& data = init.outputs[0].dims;
  const TensorSpec& shape = init.inputs[2];
  if (shape.value && shape.value->ToInt64Vector() != data)
    return init.Error("the shape input does not match the planned output dims");
  AMP_ASSIGN_OR_RETURN(size_t b, ParseBatchDims(init, data.size()));
  AMP_ASSIGN_OR_RETURN(NDShape s, Geometry(init, data, init.inputs[1], b));
  if (init.inputs[0].num_elements() != s.count * s.size) return init.Error("dY does not hold the gathered slices");
  return std::unique_ptr<Kernel>(std::make_unique<GatherNDGradKernel>(*ElemOf(t), s));
}

class ScatterNDKernel final : public Kernel {
 public:
  ScatterNDKernel(ScatterOp op, Num t, size_t bytes, NDShape s, uint64_t bad)
      : op_(op), t_(t), bytes_(bytes), s_(s), bad_(bad) {}
  Status Run(KernelContext& ctx) override {
    CUDA_CHECK(LaunchScatterND(op_, t_, bytes_, ctx.inputs[0].data, static_cast<const int64_t*>(ctx.inputs[1].data),
                               ctx.inputs[2].data, ctx.outputs[0].data, s_, bad_, ctx.scratch, StreamOf(ctx)));
    return Status::Ok();
  }
  size_t scratch_bytes() const override { return NDScratchBytes(s_); }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }

 private:
  ScatterOp op_;
  Num t_;
  size_t bytes_;
  NDShape s_;
  uint64_t bad_;
};

StatusOr<std::unique_ptr<Kernel>> MakeScatterND(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 3, 3, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {2}, {0}));
  AMP_ASSIGN_OR_RETURN(ScatterOp op, ParseScatterReduction<ScatterOp>(init));
  AMP_RETURN_IF_ERROR(CheckCopyable(init, ir::DTypeSize(t)));
  AMP_ASSIGN_OR_RETURN(Num num, ScatterNum(init, op, t));
  if (init.outputs[0].dims != init.inputs[0].dims) return init.Error("output dims differ from the data's");
  AMP_ASSIGN_OR_RETURN(NDShape s, Geometry(init, init.inputs[0].dims, init.inputs[1], 0));
  if (init.inputs[2].num_elements() != s.count * s.size) return init.Error("updates do not hold the scattered slices");
  return std::unique_ptr<Kernel>(std::make_unique<ScatterNDKernel>(op, num, ir::DTypeSize(t), s, BadBits(t)));
}

class ScatterNDGradKernel final : public Kernel {
 public:
  ScatterNDGradKernel(size_t bytes, bool zero_targets, NDShape s, uint64_t bad)
      : bytes_(bytes), zero_targets_(zero_targets), s_(s), bad_(bad) {}
  Status Run(KernelContext& ctx) override {
    CUDA_CHECK(LaunchScatterNDGrad(bytes_, ctx.inputs[0].data, static_cast<const int64_t*>(ctx.inputs[1].data),
                                   ctx.outputs[0].data, ctx.outputs[1].data, zero_targets_, s_, bad_, ctx.scratch,
                                   StreamOf(ctx)));
    return Status::Ok();
  }
  size_t scratch_bytes() const override { return NDScratchBytes(s_); }

 private:
  size_t bytes_;
  bool zero_targets_;
  NDShape s_;
  uint64_t bad_;
};

StatusOr<std::unique_ptr<Kernel>> MakeScatterNDGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 2, 2, 2));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {}, {0, 1}));
  AMP_ASSIGN_OR_RETURN(ScatterOp op, ParseScatterReduction<ScatterOp>(init));
  if (op != ScatterOp::kNone && op != ScatterOp::kAdd) return init.Error("the gradient takes reduction none or add only");
  AMP_ASSIGN_OR_RETURN(NDShape s, Geometry(init, init.inputs[0].dims, init.inputs[1], 0));
  if (init.outputs[0].dims != init.inputs[0].dims || init.outputs[1].num_elements() != s.count * s.size)
    return init.Error("the outputs do not have dData's and dUpdates' sizes");
  return std::unique_ptr<Kernel>(
      std::make_unique<ScatterNDGradKernel>(ir::DTypeSize(t), op == ScatterOp::kNone, s, BadBits(t)));
}

}  // namespace

void RegisterScatterND(Registry& r) {
  r.Add(CudaEntry(OpKind::kGatherND, "cuda", MakeGatherND, 10, {}));
  r.Add(CudaEntry(OpKind::kGatherNDGrad, "cuda", MakeGatherNDGrad));
  r.Add(CudaEntry(OpKind::kScatterND, "cuda", MakeScatterND, 10, {}));
  r.Add(CudaEntry(OpKind::kScatterNDGrad, "cuda", MakeScatterNDGrad));
}

}  // namespace amptrain::kernels::cuda
