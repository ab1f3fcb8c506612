// CUDA Kernel classes of the data-movement ops that rearrange elements, for
// any dtype of 1, 2, 4 or 8 bytes (bytes are moved, never converted), with
// the contracts of the CPU reference kernels (kernels/cpu/shape.cc,
// gather_slice.cc, binary.cc, grad_scatter.cc):
//   Transpose (perm, default reversed), Slice (starts/ends/axes/steps must be
//     plan-time constants: the entry declines computed ones, whose host read
//     would stall the stream): one strided copy (LaunchBroadcastCopy), up to
//     rank 8.
//   Concat, Split (axis, default 0): one cudaMemcpy2DAsync per part; Split's
//     sizes are the planned output dims (its split input is never read).
//   Gather (axis; int32/int64 indices, negative ones wrap): an index outside
//     [-dim, dim), the CPU's error, gives NaN (floats) or zeros for its slice.
//   GatherGrad(dY, indices, data_shape) -> dData, float dtypes: deterministic
//     (gather.cu); a bad index makes dData all NaN. data_shape is checked
//     against the planned dims when known at plan time.
//   Where(cond, X, Y): numpy broadcasting of the three, up to rank 8.
#include <cmath>

#include "ir/infer/shape_params.h"
#include "kernels/cuda/common.h"

namespace amptrain::kernels::cuda {

namespace {

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) s[d - 1] = s[d] * dims[d];
  return s;
}

// A strided copy: y (out_dims, row-major) from x at `offset` elements.
class StridedCopyKernel final : public Kernel {
 public:
  StridedCopyKernel(size_t elem_bytes, const Broadcast& bc, int64_t offset)
      : elem_bytes_(elem_bytes), bc_(bc), offset_(offset) {}
  Status Run(KernelContext& ctx) override {
    const int64_t n = ctx.outputs[0].num_elements();
    if (n == 0) return Status::Ok();
    const auto* x = static_cast<const char*>(ctx.inputs[0].data) + offset_ * static_cast<int64_t>(elem_bytes_);
    CUDA_CHECK(LaunchBroadcastCopy(elem_bytes_, x, ctx.outputs[0].data, n, bc_, StreamOf(ctx)));
    return Status::Ok();
  }

 private:
  size_t elem_bytes_;
  Broadcast bc_;
  int64_t offset_;
};

Status CheckCopy(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckDTypes(init, init.inputs[0].dtype, {}, {0}));
  const size_t bytes = ir::DTypeSize(init.inputs[0].dtype);
  AMP_RETURN_IF_ERROR(CheckCopyable(init, bytes));
  if (init.outputs[0].dims.size() > static_cast<size_t>(kMaxRank))
    return init.Error("rank ", init.outputs[0].dims.size(), " is over ", kMaxRank);
  return Status::Ok();
}

StatusOr<std::unique_ptr<Kernel>> MakeTranspose(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 1, 1, 1, 1));
  AMP_RETURN_IF_ERROR(CheckCopy(init));
  const std::vector<int64_t>& in = init.inputs[0].dims;
  const size_t r = in.size();
  AMP_ASSIGN_OR_RETURN(std::vector<int64_t> perm, init.attrs->GetInts("perm", {}));
  if (perm.empty())
    for (size_t i = r; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  if (perm.size() != r) return init.Error("perm has ", perm.size(), " entries for rank ", r);
  std::vector<bool> seen(r, false);
  for (int64_t& p : perm) {
    if (p < 0) p += static_cast<int64_t>(r);
    if (p < 0 || p >= static_cast<int64_t>(r) || seen[static_cast<size_t>(p)]) return init.Error("perm is not a permutation");
    seen[static_cast<size_t>(p)] = true;
  }
  const std::vector<int64_t> strides = RowMajorStrides(in);
  Broadcast bc;
  bc.rank = static_cast<int>(r);
  for (size_t d = 0; d < r; ++d) {
    bc.out_dims[d] = in[static_cast<size_t>(perm[d])];
    bc.a_strides[d] = strides[static_cast<size_t>(perm[d])];
    if (bc.out_dims[d] != init.outputs[0].dims[d]) return init.Error("output dims differ from the permuted input's");
  }
  return std::unique_ptr<Kernel>(std::make_unique<StridedCopyKernel>(ir::DTypeSize(init.inputs[0].dtype), bc, 0));
}

// Slice's parameter inputs 1..4: absent or plan-time values.
bool SliceParamsKnown(const KernelInit& init) {
  for (size_t i = 1; i < init.inputs.size(); ++i)
    if (init.inputs[i].present() && !init.inputs[i].value) return false;
  return true;
}

StatusOr<std::unique_ptr<Kernel>> MakeSlice(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 3, 5, 1, 1));
  AMP_RETURN_IF_ERROR(CheckCopy(init));
  std::vector<int64_t> params[4];
  for (size_t i = 1; i < init.inputs.size(); ++i) {
    const TensorSpec& p = init.inputs[i];
    if (!p.present()) continue;
    if (p.dtype != DType::kInt64 && p.dtype != DType::kInt32) return init.Error("input ", i, " must be int32 or int64");
    if (!p.value) return init.Error("input ", i, " is not known at plan time");
    params[i - 1] = p.value->ToInt64Vector();
  }
  const std::vector<int64_t>& in = init.inputs[0].dims;
  auto s = ir::ResolveSlice(in, params[0], params[1], params[2], params[3]);
  if (!s.ok()) return init.Error(s.status().message());
  const std::vector<int64_t> strides = RowMajorStrides(in);
  Broadcast bc;
  bc.rank = static_cast<int>(in.size());
  int64_t offset = 0;
  for (size_t d = 0; d < in.size(); ++d) {
    const ir::SliceAxis& a = (*s)[d];
    offset += a.start * strides[d];
    bc.a_strides[d] = a.step * strides[d];
    bc.out_dims[d] = a.count;
    if (a.count != init.outputs[0].dims[d]) return init.Error("the slice does not match the output dims");
  }
  return std::unique_ptr<Kernel>(
      std::make_unique<StridedCopyKernel>(ir::DTypeSize(init.inputs[0].dtype), bc, init.outputs[0].num_elements() > 0 ? offset : 0));
}

// Concat (parts = inputs) or Split (parts = outputs): part p is a block of
// rows[p] bytes in each of `outer` rows of whole_row bytes.
class ConcatSplitKernel final : public Kernel {
 public:
  ConcatSplitKernel(bool split, int64_t outer, size_t whole_row, std::vector<size_t> rows)
      : split_(split), outer_(outer), whole_row_(whole_row), rows_(std::move(rows)) {}
  Status Run(KernelContext& ctx) override {
    std::vector<ir::TensorView>& parts = split_ ? ctx.outputs : ctx.inputs;
    const ir::TensorView& whole = split_ ? ctx.inputs[0] : ctx.outputs[0];
    size_t offset = 0;
    for (size_t p = 0; p < parts.size(); ++p) {
      const size_t row = rows_[p];
      if (row > 0 && outer_ > 0) {
        char* w = static_cast<char*>(whole.data) + offset;
        char* part = static_cast<char*>(parts[p].data);
        if (split_)
          CUDA_CHECK(cudaMemcpy2DAsync(part, row, w, whole_row_, row, static_cast<size_t>(outer_),
                                       cudaMemcpyDeviceToDevice, StreamOf(ctx)));
        else
          CUDA_CHECK(cudaMemcpy2DAsync(w, whole_row_, part, row, row, static_cast<size_t>(outer_),
                                       cudaMemcpyDeviceToDevice, StreamOf(ctx)));
      }
      offset += row;
    }
    return Status::Ok();
  }

 private:
  bool split_;
  int64_t outer_;
  size_t whole_row_;
  std::vector<size_t> rows_;
};

StatusOr<std::unique_ptr<Kernel>> MakeConcatSplit(const KernelInit& init) {
  const bool split = init.op == OpKind::kSplit;
  if (init.inputs.empty() || init.outputs.empty()) return init.Error("needs inputs and outputs");
  if (split) AMP_RETURN_IF_ERROR(CheckArity(init, 1, 2, 1, init.outputs.size()));
  else AMP_RETURN_IF_ERROR(CheckArity(init, 1, init.inputs.size(), 1, 1));
  const std::vector<TensorSpec>& parts = split ? init.outputs : init.inputs;
  const TensorSpec& whole = split ? init.inputs[0] : init.outputs[0];
  for (const TensorSpec& p : parts)
    if (p.dtype != whole.dtype) return init.Error("the parts' dtypes differ from ", ir::DTypeName(whole.dtype));
  const int64_t r = static_cast<int64_t>(init.inputs[0].dims.size());
  AMP_ASSIGN_OR_RETURN(int64_t axis, init.attrs->GetInt("axis", 0));
  if (axis < -r || axis >= r) return init.Error("axis ", axis, " is out of range for rank ", r);
  if (axis < 0) axis += r;
  const size_t a = static_cast<size_t>(axis);
  const size_t es = ir::DTypeSize(whole.dtype);
  auto product = [](const std::vector<int64_t>& d, size_t from, size_t to) {
    int64_t p = 1;
    for (size_t i = from; i < to; ++i) p *= d[i];
    return p;
  };
  int64_t sum = 0;
  std::vector<size_t> rows;
  for (const TensorSpec& p : parts) {
    if (p.dims.size() != whole.dims.size()) return init.Error("ranks of the parts differ");
    for (size_t d = 0; d < p.dims.size(); ++d)
      if (d != a && p.dims[d] != whole.dims[d]) return init.Error("the parts differ off axis ", axis);
    sum += p.dims[a];
    rows.push_back(static_cast<size_t>(product(p.dims, a, p.dims.size())) * es);
  }
  if (sum != whole.dims[a]) return init.Error("parts sum to ", sum, " along axis ", axis, ", whole has ", whole.dims[a]);
  const size_t whole_row = static_cast<size_t>(product(whole.dims, a, whole.dims.size())) * es;
  return std::unique_ptr<Kernel>(
      std::make_unique<ConcatSplitKernel>(split, product(whole.dims, 0, a), whole_row, std::move(rows)));
}

// Gather's output dims for data `data`, indices `idx` and a normalized axis.
std::vector<int64_t> GatheredDims(const std::vector<int64_t>& data, const std::vector<int64_t>& idx, int64_t axis) {
  std::vector<int64_t> out(data.begin(), data.begin() + axis);
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  return out;
}

// Gather's geometry: data `data` split at `axis` (attribute, default 0),
// indices `idx`; `gathered` = Gather's output dims.
StatusOr<GatherShape> GatherGeometry(const KernelInit& init, const std::vector<int64_t>& data, const TensorSpec& idx,
                                     std::vector<int64_t>* gathered) {
  if (idx.dtype != DType::kInt64 && idx.dtype != DType::kInt32)
    return init.Error("indices must be int32 or int64, got ", ir::DTypeName(idx.dtype));
  const int64_t r = static_cast<int64_t>(data.size());
  AMP_ASSIGN_OR_RETURN(int64_t axis, init.attrs->GetInt("axis", 0));
  if (axis < -r || axis >= r) return OutOfRange(init.Describe(), ": axis ", axis, " is out of range for rank ", r);
  if (axis < 0) axis += r;
  GatherShape g;
  for (int64_t d = 0; d < r; ++d) (d < axis ? g.outer : d == axis ? g.dim : g.inner) *= data[static_cast<size_t>(d)];
  g.n_idx = idx.num_elements();
  g.idx_int64 = idx.dtype == DType::kInt64;
  *gathered = GatheredDims(data, idx.dims, axis);
  return g;
}

class GatherKernel final : public Kernel {
 public:
  GatherKernel(size_t elem_bytes, GatherShape g, uint64_t bad) : elem_bytes_(elem_bytes), g_(g), bad_(bad) {}
  Status Run(KernelContext& ctx) override {
    CUDA_CHECK(LaunchGather(elem_bytes_, ctx.inputs[0].data, ctx.inputs[1].data, ctx.outputs[0].data, g_, bad_,
                            StreamOf(ctx)));
    return Status::Ok();
  }

 private:
  size_t elem_bytes_;
  GatherShape g_;
  uint64_t bad_;
};

StatusOr<std::unique_ptr<Kernel>> MakeGather(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 2, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {}, {0}));
  AMP_RETURN_IF_ERROR(CheckCopyable(init, ir::DTypeSize(t)));
  const std::vector<int64_t>& data = init.inputs[0].dims;
  std::vector<int64_t> gathered;
  AMP_ASSIGN_OR_RETURN(const GatherShape g, GatherGeometry(init, data, init.inputs[1], &gathered));
  if (init.outputs[0].dims != gathered) return init.Error("output dims differ from the gathered ones");
  return std::unique_ptr<Kernel>(std::make_unique<GatherKernel>(ir::DTypeSize(t), g, BadBits(t)));
}

class GatherGradKernel final : public Kernel {
 public:
  GatherGradKernel(Elem t, GatherShape g) : t_(t), g_(g) {}
  Status Run(KernelContext& ctx) override {
    CUDA_CHECK(LaunchGatherGrad(t_, ctx.inputs[0].data, ctx.inputs[1].data, ctx.outputs[0].data, g_, ctx.scratch,
                                StreamOf(ctx)));
    return Status::Ok();
  }
  size_t scratch_bytes() const override { return GatherGradScratchBytes(g_); }

 private:
  Elem t_;
  GatherShape g_;
};

StatusOr<std::unique_ptr<Kernel>> MakeGatherGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 3, 3, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {}, {0}));
  const std::vector<int64_t>& data = init.outputs[0].dims;
  const TensorSpec& shape = init.inputs[2];
  if (shape.dtype != DType::kInt64 || shape.dims.size() != 1 || shape.dims[0] != static_cast<int64_t>(data.size()))
    return init.Error("input 2 must be an int64 vector of the output's rank");
  if (shape.value && shape.value->ToInt64Vector() != data)
    return init.Error("the shape input does not match the planned output dims");
  std::vector<int64_t> gathered;
  AMP_ASSIGN_OR_RETURN(const GatherShape g, GatherGeometry(init, data, init.inputs[1], &gathered));
  if (init.inputs[0].dims != gathered) return init.Error("dY does not have Gather's output shape");
  if (g.dim >= (int64_t{1} << 30) || g.n_idx >= (int64_t{1} << 30))
    return init.Error("a dim or index count of 2^30 or more is not supported on CUDA");
  return std::unique_ptr<Kernel>(std::make_unique<GatherGradKernel>(*ElemOf(t), g));
}

class WhereKernel final : public Kernel {
 public:
  WhereKernel(size_t elem_bytes, std::optional<Broadcast> bc) : elem_bytes_(elem_bytes), bc_(bc) {}
  Status Run(KernelContext& ctx) override {
    CUDA_CHECK(LaunchWhere(elem_bytes_, static_cast<const bool*>(ctx.inputs[0].data), ctx.inputs[1].data,
                           ctx.inputs[2].data, ctx.outputs[0].data, ctx.outputs[0].num_elements(),
                           bc_ ? &*bc_ : nullptr, StreamOf(ctx)));
    return Status::Ok();
  }

 private:
  size_t elem_bytes_;
  std::optional<Broadcast> bc_;  // nullopt: every input has the output's dims
};

StatusOr<std::unique_ptr<Kernel>> MakeWhere(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 3, 3, 1, 1));
  const DType t = init.inputs[1].dtype;
  if (init.inputs[0].dtype != DType::kBool || init.inputs[2].dtype != t || init.outputs[0].dtype != t)
    return init.Error("expects a bool condition and X, Y of one dtype");
  AMP_RETURN_IF_ERROR(CheckCopyable(init, ir::DTypeSize(t)));
  AMP_ASSIGN_OR_RETURN(const std::optional<Broadcast> bc, PlanBroadcast(init, {1, 2, 0}));  // X, Y, cond
  return std::unique_ptr<Kernel>(std::make_unique<WhereKernel>(ir::DTypeSize(t), bc));
}

// Rank of input 0 (output 0 for GatherGrad) at most kMaxRank: the strided walks' limit.
bool RankFits(const KernelInit& init) {
  return init.outputs.empty() || init.outputs[0].dims.size() <= static_cast<size_t>(kMaxRank);
}

}  // namespace

void RegisterMovement(Registry& r) {
  KernelEntry transpose = CudaEntry(OpKind::kTranspose, "cuda", MakeTranspose, 10, {});
  transpose.accepts = RankFits;
  r.Add(std::move(transpose));
  KernelEntry slice = CudaEntry(OpKind::kSlice, "cuda", MakeSlice, 10, {});
  slice.accepts = [](const KernelInit& init) { return RankFits(init) && SliceParamsKnown(init); };
  r.Add(std::move(slice));
  r.Add(CudaEntry(OpKind::kConcat, "cuda", MakeConcatSplit, 10, {}));
  r.Add(CudaEntry(OpKind::kSplit, "cuda", MakeConcatSplit, 10, {}));
  r.Add(CudaEntry(OpKind::kGather, "cuda", MakeGather, 10, {}));
  r.Add(CudaEntry(OpKind::kGatherGrad, "cuda", MakeGatherGrad));
  KernelEntry where = CudaEntry(OpKind::kWhere, "cuda", MakeWhere, 10, {});
  where.accepts = RankFits;
  r.Add(std::move(where));
}

}  // namespace amptrain::kernels::cuda
