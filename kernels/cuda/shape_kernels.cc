// CUDA Kernel classes of the data-movement ops of the training graphs, for
// any dtype (bytes are moved, never converted), with the contracts of the
// CPU reference kernels (kernels/cpu/shape.cc):
//   Reshape, Flatten, Squeeze, Unsqueeze: output = the input's bytes under
//     the output's dims, which the plan inferred (the shape/axes input is
//     never read): one device-to-device copy on the run's stream, none where
//     the executor aliased the output over the input (inplace_input).
//   Expand: the input broadcast (numpy rules) to the output's dims, up to
//     rank 8 (launcher: LaunchBroadcastCopy in elementwise.cu).
#include "kernels/cuda/common.h"

namespace amptrain::kernels::cuda {

namespace {

class ViewCopyKernel final : public Kernel {
 public:
  Status Run(KernelContext& ctx) override { return CopyInputToOutput(ctx); }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }
};

StatusOr<std::unique_ptr<Kernel>> MakeViewCopy(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 1, 2, 1, 1));
  AMP_RETURN_IF_ERROR(CheckDTypes(init, init.inputs[0].dtype, {}, {0}));
  if (init.inputs[0].num_elements() != init.outputs[0].num_elements())
    return init.Error("input has ", init.inputs[0].num_elements(), " elements, output ",
                      init.outputs[0].num_elements());
  return std::unique_ptr<Kernel>(std::make_unique<ViewCopyKernel>());
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
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 2, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {}, {0}));
  const size_t bytes = ir::DTypeSize(t);
  if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8)
    return init.Error("element size ", bytes, " is not supported");
  const std::vector<int64_t>& in = init.inputs[0].dims;
  const std::vector<int64_t>& out = init.outputs[0].dims;
  if (out.size() > static_cast<size_t>(kMaxRank)) return init.Error("rank ", out.size(), " is over ", kMaxRank);
  if (!BroadcastsTo(in, out)) return init.Error("the input does not broadcast to the output");
  Broadcast bc;
  bc.rank = static_cast<int>(out.size());
  for (size_t d = 0; d < out.size(); ++d) bc.out_dims[d] = out[d];
  BroadcastStrides(in, out, bc.a_strides);
  return std::unique_ptr<Kernel>(std::make_unique<ExpandKernel>(bytes, bc));
}

}  // namespace

void RegisterShape(Registry& r) {
  for (OpKind op : {OpKind::kReshape, OpKind::kFlatten, OpKind::kSqueeze, OpKind::kUnsqueeze})
    r.Add(CudaEntry(op, "cuda", MakeViewCopy, 10, {}));
  r.Add(CudaEntry(OpKind::kExpand, "cuda", MakeExpand, 10, {}));
}

}  // namespace amptrain::kernels::cuda
