// Registration of the reference NN kernels (conv, pools, BN, Dropout, Gemm,
// MatMul) and the helpers of kernels/cpu/nn_kernels.h.
#include "kernels/cpu/nn_kernels.h"
#include "kernels/cpu/register.h"

namespace amptrain::kernels::cpu {

namespace nn {

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
    r.Add(KernelEntry{op, DeviceKind::kCpu, "reference", 0, floats, std::move(f), nullptr});
  };
  add(OpKind::kConv, nn::MakeConvReference);
  add(OpKind::kConvTranspose, nn::MakeConvTransposeReference);
  add(OpKind::kFusedConv, nn::MakeFusedConvReference);
  r.Add(KernelEntry{OpKind::kMaxPool,
                    DeviceKind::kCpu,
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
  // fp32 and fp64 only: PyTorch's autocast keeps grid sampling in fp32, and so
  // does the AMP plan (denylist; without a low kernel even at O3).
  for (OpKind op : {OpKind::kGridSample, OpKind::kGridSampleGrad, OpKind::kAffineGrid})
    r.Add(KernelEntry{op, DeviceKind::kCpu, "reference", 0, {DType::kFloat32, DType::kFloat64},
                      op == OpKind::kAffineGrid ? nn::MakeAffineGridReference : nn::MakeGridSampleReference, nullptr});
}

}  // namespace amptrain::kernels::cpu
