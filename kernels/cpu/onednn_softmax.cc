// oneDNN Softmax (opset-13 semantics: along `axis`) on plain layouts, fp32
// and bf16 (fp16 through the widened twin). oneDNN's vectorized exp and fp32
// sums replace the reference's double-precision loops (kernels/cpu/
// softmax.cc), which evaluate exp twice per element in double: an attention
// layer's [batch, heads, seq, seq] scores took 8 ms per Softmax there. The
// results are within a few fp32 ulps of the reference's, not its bits; where
// oneDNN would run its own reference implementation (an axis other than the
// last, in bf16), or a tensor is empty, the kernel declines and the
// project's reference runs.
// LogSoftmax stays on the reference: oneDNN's softmax_log was 20-60 fp32
// ulps off it (its log of the sum), and log-probabilities feed the loss;
// its tensors ([batch, classes]) are small. SoftmaxGrad stays on the
// reference too: it has no exp, its loops are contiguous along the last
// axis (0.9 ms for those scores), and oneDNN 2.6 has no jit softmax
// backward below AVX-512.
#include "kernels/cpu/onednn_common.h"

namespace amptrain::kernels::cpu::onednn {

namespace {

StatusOr<int> SoftmaxAxis(const KernelInit& init, const std::vector<int64_t>& dims) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  AMP_ASSIGN_OR_RETURN(int64_t axis, init.attrs->GetInt("axis", -1));
  if (rank == 0 || axis < -rank || axis >= rank)
    return OutOfRange(init.Describe(), ": axis ", axis, " is out of range for rank ", rank);
  for (int64_t d : dims)
    if (d == 0) return Unimplemented(init.Describe(), ": an empty tensor (the reference takes it)");
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

// Softmax(X) -> Y.
StatusOr<std::unique_ptr<Kernel>> MakeSoftmax(const KernelInit& init) {
  if (init.inputs.size() != 1 || init.outputs.size() != 1) return init.Error("expects 1 input and 1 output");
  const DType t = init.inputs[0].dtype;
  if (init.outputs[0].dtype != t || init.outputs[0].dims != init.inputs[0].dims)
    return init.Error("Y must have X's dtype and dims");
  AMP_ASSIGN_OR_RETURN(int axis, SoftmaxAxis(init, init.inputs[0].dims));
  return Guarded(init, [&]() -> StatusOr<std::unique_ptr<Kernel>> {
    dnnl::memory::desc x = PlainDesc(init.inputs[0].dims, t);
    dnnl::softmax_v2_forward::desc desc(dnnl::prop_kind::forward_training, dnnl::algorithm::softmax_accurate, x, x,
                                        axis);
    dnnl::softmax_v2_forward::primitive_desc pd(desc, UserScratchpad(), Engine());
    if (IsReferenceImpl(pd)) return Unimplemented(init.Describe(), ": oneDNN has only its reference softmax here");
    std::vector<Binding> bind = {{DNNL_ARG_SRC, Binding::kInput, 0, x}, {DNNL_ARG_DST, Binding::kOutput, 0, x}};
    return std::unique_ptr<Kernel>(new PrimitiveKernel(init.Describe(), dnnl::softmax_v2_forward(pd), std::move(bind), {}));
  });
}

}  // namespace

void RegisterOneDnnSoftmax(Registry& r) {
  AddOneDnn(r, OpKind::kSoftmax, MakeSoftmax);
}

}  // namespace amptrain::kernels::cpu::onednn
