// CUDA ReduceSum, ReduceMean, ReduceMax, ReduceL2 and ReduceSumTo (launcher:
// reduce.cu), float dtypes. Axes must be known when the kernel is created (absent, or a
// plan-time constant), as every training graph has them; noop_with_empty_axes
// and empty axes behave as on the CPU (kernels/cpu/reduce.cc). ReduceSumTo's
// output dims are the inferred ones (kernels/cpu/grad_scatter.cc); its shape
// input is checked against them when its value is known. ArgMax and ArgMin
// (axis, keepdims, select_last_index; fp32/fp16/bf16, int64/int32/int8/uint8
// -> int64): kernels/cpu/select.cc's scan, NaN and ties alike, the CPU's
// output exactly.
#include "kernels/cuda/common.h"

namespace amptrain::kernels::cuda {

namespace {

// The launch plan of reducing the `reduce` dims of `dims`: adjacent dims of
// one kind merged, size-1 dims dropped.
StatusOr<Reduction> Plan(const KernelInit& init, const std::vector<int64_t>& dims, const std::vector<bool>& reduce) {
  std::vector<int64_t> stride(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) stride[d - 1] = stride[d] * dims[d];
  std::vector<int64_t> kd, ks, rd, rs;
  bool last_reduced = false;
  Reduction r;
  for (size_t d = 0; d < dims.size(); ++d) {
    (reduce[d] ? r.count : r.outputs) *= dims[d];
    if (dims[d] == 1) continue;
    std::vector<int64_t>& ds = reduce[d] ? rd : kd;
    std::vector<int64_t>& ss = reduce[d] ? rs : ks;
    // Merge with the previous kept (reduced) dim when it is the dim just before this one.
    if (!ds.empty() && last_reduced == reduce[d] && ss.back() == stride[d] * dims[d]) {
      ds.back() *= dims[d];
      ss.back() = stride[d];
    } else {
      ds.push_back(dims[d]);
      ss.push_back(stride[d]);
    }
    last_reduced = reduce[d];
  }
  if (kd.size() > static_cast<size_t>(kMaxRank) || rd.size() > static_cast<size_t>(kMaxRank))
    return init.Error("more than ", kMaxRank, " separate kept or reduced dims");
  r.kept_rank = static_cast<int>(kd.size());
  r.red_rank = static_cast<int>(rd.size());
  for (size_t i = 0; i < kd.size(); ++i) r.kept_dims[i] = kd[i], r.kept_strides[i] = ks[i];
  for (size_t i = 0; i < rd.size(); ++i) r.red_dims[i] = rd[i], r.red_strides[i] = rs[i];
  return r;
}

class ReduceKernel final : public Kernel {
 public:
  ReduceKernel(ReduceOp op, Elem t, Reduction r, float scale, bool copy)
      : op_(op), t_(t), r_(r), scale_(scale), copy_(copy) {}
  Status Run(KernelContext& ctx) override {
    if (copy_) return CopyInputToOutput(ctx);
    CUDA_CHECK(LaunchReduce(op_, t_, ctx.inputs[0].data, ctx.outputs[0].data, r_, scale_, StreamOf(ctx)));
    return Status::Ok();
  }

 private:
  ReduceOp op_;
  Elem t_;
  Reduction r_;
  float scale_;
  bool copy_;
};

StatusOr<std::unique_ptr<Kernel>> MakeReduce(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 1, 2, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {}, {0}));
  const std::vector<int64_t>& dims = init.inputs[0].dims;
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<bool> reduce(dims.size(), false);
  bool copy = false;
  if (init.op == OpKind::kReduceSumTo) {
    const std::vector<int64_t>& out = init.outputs[0].dims;
    if (out.size() > dims.size()) return init.Error("the target shape has a higher rank than X");
    if (init.inputs[1].value && init.inputs[1].value->ToInt64Vector() != out)
      return init.Error("the shape input does not match the planned output dims");
    const size_t lead = dims.size() - out.size();
    for (size_t d = 0; d < dims.size(); ++d) {
      reduce[d] = d < lead || out[d - lead] != dims[d];
      if (d >= lead && reduce[d] && out[d - lead] != 1) return init.Error("X does not broadcast from the target shape");
    }
  } else {
    AMP_ASSIGN_OR_RETURN(int64_t noop, init.attrs->GetInt("noop_with_empty_axes", 0));
    const bool has_axes = init.inputs.size() > 1 && init.inputs[1].present();
    if (has_axes && !init.inputs[1].value && init.inputs[1].num_elements() != 0)
      return Unimplemented(init.Describe(), ": the CUDA reduction needs its axes at plan time");
    const std::vector<int64_t> axes =
        has_axes && init.inputs[1].value ? init.inputs[1].value->ToInt64Vector() : std::vector<int64_t>{};
    if (axes.empty()) {
      copy = noop != 0;
      reduce.assign(dims.size(), !copy);
    }
    for (int64_t a : axes) {
      if (a < -rank || a >= rank) return OutOfRange(init.Describe(), ": axis ", a, " is out of range for rank ", rank);
      reduce[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
    }
  }
  AMP_ASSIGN_OR_RETURN(Reduction r, Plan(init, dims, reduce));
  if (!copy && r.outputs != init.outputs[0].num_elements())
    return init.Error("output has ", init.outputs[0].num_elements(), " elements, the reduction gives ", r.outputs);
  const float scale = init.op == OpKind::kReduceMean ? static_cast<float>(1.0 / static_cast<double>(r.count)) : 1.0f;
  const ReduceOp op = init.op == OpKind::kReduceMax ? ReduceOp::kMax
                     : init.op == OpKind::kReduceL2 ? ReduceOp::kL2
                                                    : ReduceOp::kSum;
  return std::unique_ptr<Kernel>(std::make_unique<ReduceKernel>(op, *ElemOf(t), r, scale, copy));
}

class ArgKernel final : public Kernel {
 public:
  ArgKernel(Num t, bool max, bool last, int64_t outer, int64_t n, int64_t inner)
      : t_(t), max_(max), last_(last), outer_(outer), n_(n), inner_(inner) {}
  Status Run(KernelContext& ctx) override {
    CUDA_CHECK(LaunchArgExtremum(t_, max_, last_, ctx.inputs[0].data, static_cast<int64_t*>(ctx.outputs[0].data),
                                 outer_, n_, inner_, StreamOf(ctx)));
    return Status::Ok();
  }

 private:
  Num t_;
  bool max_, last_;
  int64_t outer_, n_, inner_;
};

// ArgMax/ArgMin(x), attrs axis (default 0), keepdims, select_last_index ->
// int64 (kernels/cpu/select.cc).
StatusOr<std::unique_ptr<Kernel>> MakeArg(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 1, 1, 1, 1));
  const DType in = init.inputs[0].dtype;
  const std::optional<Num> t = AnyNumOf(in);  // bool is not among the entry's dtypes
  if (!t) return init.Error("dtype ", ir::DTypeName(init.inputs[0].dtype), " is not supported");
  if (init.outputs[0].dtype != DType::kInt64) return init.Error("output must be int64");
  const std::vector<int64_t>& dims = init.inputs[0].dims;
  const int64_t rank = static_cast<int64_t>(dims.size());
  AMP_ASSIGN_OR_RETURN(int64_t axis, init.attrs->GetInt("axis", 0));
  if (axis < -rank || axis >= rank) return init.Error("axis ", axis, " is out of range for rank ", rank);
  if (axis < 0) axis += rank;
  AMP_ASSIGN_OR_RETURN(int64_t last, init.attrs->GetInt("select_last_index", 0));
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : d == axis ? n : inner) *= dims[static_cast<size_t>(d)];
  if (init.outputs[0].num_elements() != outer * inner)
    return init.Error("output has ", init.outputs[0].num_elements(), " elements, expected ", outer * inner);
  return std::unique_ptr<Kernel>(
      std::make_unique<ArgKernel>(*t, init.op == OpKind::kArgMax, last != 0, outer, n, inner));
}

}  // namespace

void RegisterReduce(Registry& r) {
  const std::vector<DType> arg_types = {DType::kFloat32, DType::kFloat16, DType::kBFloat16,
                                        DType::kInt64,   DType::kInt32,   DType::kInt8, DType::kUInt8};
  r.Add(CudaEntry(OpKind::kArgMax, "cuda", MakeArg, 10, arg_types));
  r.Add(CudaEntry(OpKind::kArgMin, "cuda", MakeArg, 10, arg_types));
  for (OpKind op :
       {OpKind::kReduceSum, OpKind::kReduceMean, OpKind::kReduceMax, OpKind::kReduceL2, OpKind::kReduceSumTo}) {
    KernelEntry e = CudaEntry(op, "cuda", MakeReduce);
    // Axes (ReduceSumTo: the shape) known at plan time, or absent.
    e.accepts = [](const KernelInit& init) {
      return init.inputs.size() < 2 || !init.inputs[1].present() || init.inputs[1].value ||
             (init.op != OpKind::kReduceSumTo && init.inputs[1].num_elements() == 0);
    };
    r.Add(std::move(e));
  }
}

}  // namespace amptrain::kernels::cuda
