// Registration of the reference kernels of the training ops (loss heads and
// backward ops) and the helpers of kernels/cpu/grad_kernels.h.
#include "kernels/cpu/grad_kernels.h"
#include "kernels/cpu/register.h"

namespace amptrain::kernels::cpu {

namespace grad {

Status CheckSameDType(const KernelInit& init, size_t ref, const std::vector<size_t>& inputs) {
  for (size_t i : inputs)
    if (i < init.inputs.size() && init.inputs[i].present() && init.inputs[i].dtype != init.inputs[ref].dtype)
      return init.Error("input ", i, " has dtype ", ir::DTypeName(init.inputs[i].dtype), ", expected ",
                        ir::DTypeName(init.inputs[ref].dtype));
  return Status::Ok();
}

KernelInit ForwardInit(const KernelInit& init, size_t first) {
  KernelInit fwd = init;
  fwd.inputs.assign(init.inputs.begin() + static_cast<std::ptrdiff_t>(first), init.inputs.end());
  fwd.outputs = {init.inputs[0]};
  return fwd;
}

}  // namespace grad

void RegisterReferenceTraining(Registry& r) {
  const std::vector<DType> floats = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64};
  // The registry keys on input 0; for the loss-grad ops that is dloss, which
  // has the scores' dtype.
  const std::pair<OpKind, grad::Factory> entries[] = {
      {OpKind::kSoftmaxCrossEntropyLoss, grad::MakeSoftmaxCrossEntropyLoss},
      {OpKind::kSoftmaxCrossEntropyLossGrad, grad::MakeSoftmaxCrossEntropyLossGrad},
      {OpKind::kMeanSquaredError, grad::MakeMiscGrad},
      {OpKind::kMeanSquaredErrorGrad, grad::MakeMiscGrad},
      {OpKind::kConvGrad, grad::MakeConvGrad},
      {OpKind::kMaxPoolGrad, grad::MakePoolGrad},
      {OpKind::kAveragePoolGrad, grad::MakePoolGrad},
      {OpKind::kBatchNormalizationGrad, grad::MakeBatchNormGrad},
      {OpKind::kLayerNormalizationGrad, grad::MakeLayerNormGrad},
      {OpKind::kReluGrad, grad::MakeMiscGrad},
      {OpKind::kTanhGrad, grad::MakeMiscGrad},
      {OpKind::kSigmoidGrad, grad::MakeMiscGrad},
      {OpKind::kGeluGrad, grad::MakeMiscGrad},
      {OpKind::kSiluGrad, grad::MakeMiscGrad},
      {OpKind::kUnaryGrad, grad::MakeMiscGrad},
      {OpKind::kSoftmaxGrad, grad::MakeMiscGrad},
      {OpKind::kLogSoftmaxGrad, grad::MakeMiscGrad},
      {OpKind::kDropoutGrad, grad::MakeMiscGrad},
      {OpKind::kGatherGrad, grad::MakeGatherGrad},
      {OpKind::kReduceSumTo, grad::MakeReduceSumTo},
  };
  for (const auto& [op, factory] : entries) {
    KernelEntry e{op, DeviceKind::kCpu, "reference", 0, floats, factory, nullptr};
    e.skips_unused_outputs = op == OpKind::kConvGrad;  // skips dX, and writes dW/dB only when asked
    if (op == OpKind::kReluGrad) e = ElementwiseChannelsLast(std::move(e), 0b11, 0b1);  // dY, Y -> dX
    r.Add(std::move(e));
  }
}

}  // namespace amptrain::kernels::cpu
