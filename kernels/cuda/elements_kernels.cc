// CUDA GatherElements, GatherElementsGrad, ScatterElements,
// ScatterElementsGrad (launchers: elements.cu), with the contracts of
// kernels/cpu/select.cc and scatter_nd.cc: attr axis, int32/int64 indices of
// data's rank (no larger than data off the axis), negative indices wrap.
// GatherElements and ScatterElements (reduction none) and ScatterElementsGrad
// move bytes (any dtype of 1/2/4/8 bytes; ScatterElementsGrad: the float
// dtypes, as the CPU registers it); ScatterElements' add/mul/max/min take
// fp32/fp16/bf16 (in float, rounded at every step as the CPU) and
// int32/int64; GatherElementsGrad (fp32/fp16/bf16) adds in float and rounds
// after every addition, as the CPU. Deterministic: duplicates are resolved
// in index order (the last write wins for none) by a stable sort, not by
// atomics. An index outside [-dim, dim), the CPU's OutOfRange error, is not
// read back on the host: GatherElements gives NaN (floats) or zeros for its
// element, the others make their whole outputs NaN (floats) or zeros. Up to
// rank 8 (the entries decline more).
#include "kernels/cuda/common.h"
#include "kernels/kernel_params.h"

namespace amptrain::kernels::cuda {

namespace {

// The geometry of `idx` into `data` along the attribute axis (default 0);
// `sorted`: the launcher sorts (int32 positions, under 2^30 of each).
StatusOr<ElementsShape> Geometry(const KernelInit& init, const std::vector<int64_t>& data, const TensorSpec& idx,
                                 bool sorted) {
  if (idx.dtype != DType::kInt64 && idx.dtype != DType::kInt32)
    return init.Error("indices must be int32 or int64, got ", ir::DTypeName(idx.dtype));
  if (idx.dims.size() != data.size() || data.empty()) return init.Error("indices and data must have one rank >= 1");
  if (data.size() > static_cast<size_t>(kMaxRank)) return init.Error("rank ", data.size(), " is over ", kMaxRank);
  const int64_t rank = static_cast<int64_t>(data.size());
  AMP_ASSIGN_OR_RETURN(int64_t axis, init.attrs->GetInt("axis", 0));
  if (axis < -rank || axis >= rank) return init.Error("axis ", axis, " is out of range for rank ", rank);
  if (axis < 0) axis += rank;
  ElementsShape s;
  s.rank = static_cast<int>(rank);
  s.axis = static_cast<int>(axis);
  s.dim = data[static_cast<size_t>(axis)];
  s.idx_int64 = idx.dtype == DType::kInt64;
  s.count = idx.num_elements();
  int64_t stride = 1;
  for (int64_t d = rank; d-- > 0;) {
    const size_t u = static_cast<size_t>(d);
    if (d != axis && idx.dims[u] > data[u])
      return init.Error("indices dim ", d, " (", idx.dims[u], ") exceeds data's (", data[u], ")");
    s.idx_dims[d] = idx.dims[u];
    s.data_strides[d] = stride;
    stride *= data[u];
  }
  s.rows = stride;
  if (sorted && (s.rows >= (int64_t{1} << 30) || s.count >= (int64_t{1} << 30)))
    return init.Error("a data or index count of 2^30 or more is not supported on CUDA");
  return s;
}

class GatherElementsKernel final : public Kernel {
 public:
  GatherElementsKernel(size_t bytes, ElementsShape s, uint64_t bad) : bytes_(bytes), s_(s), bad_(bad) {}
  Status Run(KernelContext& ctx) override {
    CUDA_CHECK(LaunchGatherElements(bytes_, ctx.inputs[0].data, ctx.inputs[1].data, ctx.outputs[0].data, s_, bad_,
                                    StreamOf(ctx)));
    return Status::Ok();
  }

 private:
  size_t bytes_;
  ElementsShape s_;
  uint64_t bad_;
};

StatusOr<std::unique_ptr<Kernel>> MakeGatherElements(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 2, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {}, {0}));
  AMP_RETURN_IF_ERROR(CheckCopyable(init, ir::DTypeSize(t)));
  AMP_ASSIGN_OR_RETURN(ElementsShape s, Geometry(init, init.inputs[0].dims, init.inputs[1], false));
  if (init.outputs[0].dims != init.inputs[1].dims) return init.Error("output dims differ from the indices'");
  return std::unique_ptr<Kernel>(std::make_unique<GatherElementsKernel>(ir::DTypeSize(t), s, BadBits(t)));
}

class GatherElementsGradKernel final : public Kernel {
 public:
  GatherElementsGradKernel(Elem t, ElementsShape s) : t_(t), s_(s) {}
  Status Run(KernelContext& ctx) override {
    CUDA_CHECK(LaunchGatherElementsGrad(t_, ctx.inputs[0].data, ctx.inputs[1].data, ctx.outputs[0].data, s_,
                                        ctx.scratch, StreamOf(ctx)));
    return Status::Ok();
  }
  size_t scratch_bytes() const override { return ElementsScratchBytes(s_); }

 private:
  Elem t_;
  ElementsShape s_;
};

// GatherElementsGrad(dY, indices, data_shape) -> dData.
StatusOr<std::unique_ptr<Kernel>> MakeGatherElementsGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 3, 3, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {}, {0}));
  const std::vector<int64_t>& data = init.outputs[0].dims;
  const TensorSpec& shape = init.inputs[2];
  if (shape.value && shape.value->ToInt64Vector() != data)
    return init.Error("the shape input does not match the planned output dims");
  AMP_ASSIGN_OR_RETURN(ElementsShape s, Geometry(init, data, init.inputs[1], true));
  if (init.inputs[0].dims != init.inputs[1].dims) return init.Error("dY does not have the indices' dims");
  return std::unique_ptr<Kernel>(std::make_unique<GatherElementsGradKernel>(*ElemOf(t), s));
}

class ScatterElementsKernel final : public Kernel {
 public:
  ScatterElementsKernel(ScatterOp op, Num t, size_t bytes, ElementsShape s, uint64_t bad)
      : op_(op), t_(t), bytes_(bytes), s_(s), bad_(bad) {}
  Status Run(KernelContext& ctx) override {
    CUDA_CHECK(LaunchScatterElements(op_, t_, bytes_, ctx.inputs[0].data, ctx.inputs[1].data, ctx.inputs[2].data,
                                     ctx.outputs[0].data, s_, bad_, ctx.scratch, StreamOf(ctx)));
    return Status::Ok();
  }
  size_t scratch_bytes() const override { return ElementsScratchBytes(s_); }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }

 private:
  ScatterOp op_;
  Num t_;
  size_t bytes_;
  ElementsShape s_;
  uint64_t bad_;
};

StatusOr<std::unique_ptr<Kernel>> MakeScatterElements(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 3, 3, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {2}, {0}));
  AMP_ASSIGN_OR_RETURN(ScatterOp op, ParseScatterReduction<ScatterOp>(init));
  AMP_RETURN_IF_ERROR(CheckCopyable(init, ir::DTypeSize(t)));
  AMP_ASSIGN_OR_RETURN(Num num, ScatterNum(init, op, t));
  if (init.outputs[0].dims != init.inputs[0].dims) return init.Error("output dims differ from the data's");
  if (init.inputs[2].dims != init.inputs[1].dims) return init.Error("updates and indices must have one shape");
  AMP_ASSIGN_OR_RETURN(ElementsShape s, Geometry(init, init.inputs[0].dims, init.inputs[1], true));
  return std::unique_ptr<Kernel>(std::make_unique<ScatterElementsKernel>(op, num, ir::DTypeSize(t), s, BadBits(t)));
}

class ScatterElementsGradKernel final : public Kernel {
 public:
  ScatterElementsGradKernel(size_t bytes, bool zero_targets, ElementsShape s, uint64_t bad)
      : bytes_(bytes), zero_targets_(zero_targets), s_(s), bad_(bad) {}
  Status Run(KernelContext& ctx) override {
    CUDA_CHECK(LaunchScatterElementsGrad(bytes_, ctx.inputs[0].data, ctx.inputs[1].data, ctx.outputs[0].data,
                                         ctx.outputs[1].data, zero_targets_, s_, bad_, ctx.scratch, StreamOf(ctx)));
    return Status::Ok();
  }
  size_t scratch_bytes() const override { return ElementsScratchBytes(s_); }

 private:
  size_t bytes_;
  bool zero_targets_;
  ElementsShape s_;
  uint64_t bad_;
};

// ScatterElementsGrad(dY, indices) -> dData, dUpdates (either may be absent).
StatusOr<std::unique_ptr<Kernel>> MakeScatterElementsGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 2, 2, 2));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {}, {0, 1}));
  AMP_ASSIGN_OR_RETURN(ScatterOp op, ParseScatterReduction<ScatterOp>(init));
  if (op != ScatterOp::kNone && op != ScatterOp::kAdd) return init.Error("the gradient takes reduction none or add only");
  AMP_ASSIGN_OR_RETURN(ElementsShape s, Geometry(init, init.inputs[0].dims, init.inputs[1], true));
  if ((init.outputs[0].present() && init.outputs[0].dims != init.inputs[0].dims) ||
      (init.outputs[1].present() && init.outputs[1].dims != init.inputs[1].dims))
    return init.Error("the outputs do not have dData's and dUpdates' dims");
  return std::unique_ptr<Kernel>(
      std::make_unique<ScatterElementsGradKernel>(ir::DTypeSize(t), op == ScatterOp::kNone, s, BadBits(t)));
}

// Input 0 (output 0 for GatherElementsGrad) of rank at most kMaxRank.
bool RankFits(const KernelInit& init) {
  const std::vector<TensorSpec>& specs = init.op == OpKind::kGatherElementsGrad ? init.outputs : init.inputs;
  return specs.empty() || specs[0].dims.size() <= static_cast<size_t>(kMaxRank);
}

KernelEntry Ranked(KernelEntry e) {
  e.accepts = RankFits;
  return e;
}

}  // namespace

void RegisterElements(Registry& r) {
  r.Add(Ranked(CudaEntry(OpKind::kGatherElements, "cuda", MakeGatherElements, 10, {})));
  r.Add(Ranked(CudaEntry(OpKind::kGatherElementsGrad, "cuda", MakeGatherElementsGrad)));
  r.Add(Ranked(CudaEntry(OpKind::kScatterElements, "cuda", MakeScatterElements, 10, {})));
  r.Add(Ranked(CudaEntry(OpKind::kScatterElementsGrad, "cuda", MakeScatterElementsGrad)));
}

}  // namespace amptrain::kernels::cuda
