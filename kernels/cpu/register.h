// Per-family registration functions of the CPU kernels.
//   reference: plain loops with wide (fp32/fp64) accumulation for every op and
//              dtype; the oracle of the tests. impl = "reference", priority 0.
//   onednn:    oneDNN primitives for conv/matmul/gemm/pool/batchnorm in fp32
//              and bf16. impl = "onednn", priority 10.
//   direct:    hand-written loops for fp32 and 2-byte floats where those are
//              slow (kernels/cpu/direct_kernels.h). impl = "direct", priority 20.
#pragma once

#include "kernels/kernel.h"

namespace amptrain::kernels::cpu {

void RegisterReferenceUnary(Registry& r);   // kernels/cpu/unary.cc: unary elementwise, Cast, Identity, Not
void RegisterReferenceBinary(Registry& r);  // kernels/cpu/binary.cc: broadcasting binary/variadic ops, compares, Where
void RegisterReferenceReduce(Registry& r);  // kernels/cpu/reduce.cc: Reduce*, Softmax, LogSoftmax, LayerNormalization
void RegisterReferenceShape(Registry& r);   // kernels/cpu/shape.cc: data movement, Shape, ConstantOfShape, Range, Pad, Resize, Constant
void RegisterReferenceNN(Registry& r);      // kernels/cpu/nn.cc (+ conv.cc, pool.cc, ...): Conv, ConvTranspose, BN, pools, Dropout, Gemm, MatMul
void RegisterReferenceRnn(Registry& r);     // kernels/cpu/rnn.cc: RNN, GRU, LSTM and their backward ops
void RegisterReferenceScatterND(Registry& r); // kernels/cpu/scatter_nd.cc: ScatterND, ScatterNDGrad
void RegisterReferenceRandom(Registry& r);  // kernels/cpu/random.cc: RandomUniform(Like), RandomNormal(Like), Bernoulli
void RegisterReferenceSpectral(Registry& r); // kernels/cpu/spectral.cc: DFT
void RegisterReferenceRoiAlign(Registry& r); // kernels/cpu/roi_align.cc: RoiAlign, RoiAlignGrad
void RegisterReferenceQuantize(Registry& r); // kernels/cpu/quantize.cc: QuantizeLinear, DequantizeLinear, FakeQuantize
void RegisterOneDnn(Registry& r);           // kernels/cpu/onednn_*.cc
void RegisterReferenceTraining(Registry& r); // kernels/cpu/grad_*.cc, loss.cc: loss heads and backward ops (autodiff/grad_ops.md)
void RegisterStepKernels(Registry& r);      // kernels/cpu/step_kernels.cc: GradCheck, SgdStep, AdamStep (fused optimizer steps)
void RegisterOneDnnTraining(Registry& r);   // kernels/cpu/onednn_grad_*.cc: ConvGrad, MaxPoolGrad, BatchNormalizationGrad
void RegisterDirect(Registry& r);           // kernels/cpu/direct_*.cc: pools, MaxPoolGrad, BN and its grad, Relu, ReluGrad, Cast

}  // namespace amptrain::kernels::cpu
