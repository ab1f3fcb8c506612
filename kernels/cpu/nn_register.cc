// Registration of the reference NN kernels (conv, pools, BN, Dropout, Gemm,
// MatMul) and the helpers of kernels/cpu/nn_kernels.h.
#include "kernels/cpu/nn_kernels.h"
#include "kernels/cpu/register.h"

namespace amptrain::kernels::cpu {

namespace nn {

Status CheckArity(const KernelInit& init, size_t min_inputs, size_t max_inputs, size_t min_outputs,
                  size_t max_outputs) {
  if (!init.attrs) return init.Error("no attributes");
  if (init.inputs.size() < min_inputs || init.inputs.size() > max_inputs)
    return init.Error(init.inputs.size(), " inputs, expected ", min_inputs, "..", max_inputs);
  if (init.outputs.size() < min_outputs || init.outputs.size() > max_outputs)
    return init.Error(init.outputs.size(), " outputs, expected ", min_outputs, "..", max_outputs);
  for (size_t i = 0; i < min_inputs; ++i)
    if (!init.inputs[i].present()) return init.Error("required input ", i, " is absent");
  return Status::Ok();
}

Status CheckSameDType(const KernelInit& init, size_t from, size_t to) {
  for (size_t i = from; i < to && i < init.inputs.size(); ++i)
    if (init.inputs[i].present() && init.inputs[i].dtype != init.inputs[0].dtype)
      return init.Error("input ", i, " has dtype ", ir::DTypeName(init.inputs[i].dtype), ", expected ",
                        ir::DTypeName(init.inputs[0].dtype));
  return Status::Ok();
}

}  // namespace nn

void RegisterReferenceNN(Registry& r) {
  const std::vector<DType> floats = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64};
  auto add = [&](OpKind op, KernelFactory f) {
    r.Add(KernelEntry{op, Device::kCpu, "reference", 0, floats, std::move(f), nullptr});
  };
  add(OpKind::kConv, nn::MakeConvReference);
  add(OpKind::kConvTranspose, nn::MakeConvTransposeReference);
  add(OpKind::kFusedConv, nn::MakeFusedConvReference);
  r.Add(KernelEntry{OpKind::kMaxPool,
                    Device::kCpu,
                    "reference",
                    0,
                    {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt8, DType::kUInt8},
                    nn::MakePoolReference,
                    nullptr});
  add(OpKind::kAveragePool, nn::MakePoolReference);
  add(OpKind::kGlobalAveragePool, nn::MakePoolReference);
  add(OpKind::kBatchNormalization, nn::MakeBatchNormReference);
  add(OpKind::kDropout, nn::MakeDropoutReference);
  add(OpKind::kGemm, nn::MakeGemmReference);
  add(OpKind::kMatMul, nn::MakeGemmReference);
}

}  // namespace amptrain::kernels::cpu
