// Internal to the oneDNN kernels of the backward ops
// (kernels/cpu/onednn_grad_*.cc): one registration per family, called by
// cpu::RegisterOneDnnTraining (kernels/cpu/onednn_grad_register.cc).
#pragma once

#include "kernels/cpu/onednn_common.h"

namespace amptrain::kernels::cpu::onednn {

void RegisterOneDnnConvGrad(Registry& r);       // onednn_grad_conv.cc: ConvGrad 1-D/2-D, fp32/bf16
void RegisterOneDnnConvTranspose(Registry& r);  // onednn_grad_conv.cc: ConvTranspose 1-D/2-D as a data gradient
void RegisterOneDnnPoolGrad(Registry& r);       // onednn_grad_pool.cc: MaxPoolGrad 2-D, fp32/bf16
void RegisterOneDnnBatchNormGrad(Registry& r);  // onednn_grad_bn.cc: BatchNormalizationGrad, fp32

}  // namespace amptrain::kernels::cpu::onednn
