// Inference graph optimizations, run by InferenceSession on its private clone
// of the caller's graph when SessionOptions::optimize is set (never when
// training: the rewrites are exact only for inference-mode BN and drop the
// intermediate values a backward pass would read). The caller's graph, and so
// `amptrain export`, never sees their result.
//
// FoldBatchNormPass: an inference-mode BatchNormalization (one output,
// training_mode 0) whose X is the only use of a Conv output, with constant
// Conv weight/bias and constant BN parameters, all float32, becomes part of
// the Conv:
//     s  = scale / sqrt(var + epsilon)            (per output channel m)
//     W' = W[m, ...] * s[m]      B' = (B - mean) * s + bn_B   (B = 0 if absent)
//   before:  x ─▶ Conv(W, B) ─▶ c ─▶ BatchNormalization(scale, bn_B, mean, var) ─▶ y
//   after:   x ─▶ Conv(W', B') ─▶ y'          (users of y now read y')
// W' and B' are new initializers (computed in double, stored as float32).
//
// FuseConvPass: a Conv whose output has one use and is not a graph output,
// followed by Relu, or by Add with a second input of the same type as the
// Conv output (no broadcasting), optionally followed by Relu (again: one use,
// not a graph output), becomes one FusedConv (ir/ops.def):
//   before:  x ─▶ Conv ─▶ c ─▶ Add(c, z) ─▶ a ─▶ Relu ─▶ y
//   after:   x ─▶ FusedConv(x, W, B, z; activation="Relu") ─▶ y'
//   before:  x ─▶ Conv ─▶ c ─▶ Relu ─▶ y
//   after:   x ─▶ FusedConv(x, W, B; activation="Relu") ─▶ y'
// The fused node keeps the Conv's name and attributes.
//
// FuseGeluPass (FuseGelu; also run on the training graph, before autodiff,
// where it is exact too): the exporters' decompositions of GELU become one
// Gelu node (ir/ops.def), which computes in double and rounds once instead of
// rounding after each of 5 or 8 ops, and whose gradient is one GeluGrad
// instead of a dozen nodes (GPT-2's MLP: 4.1 -> 1.5 ms per layer and step):
//   exact (torch.nn.GELU()): Erf(x / sqrt 2) or Erf(x * (1/sqrt 2)) -> Add 1
//     -> Mul by x and by 0.5, grouped as (x * p) * 0.5, (0.5 * p) * x or
//     (x * 0.5) * p (the TorchScript and dynamo exports)      -> Gelu(x)
//   tanh (GPT-2's gelu_new, GELU(approximate="tanh")): Tanh(sqrt(2/pi) * (x +
//     0.044715 * Pow(x, 3))) -> Add 1 -> the same products -> Gelu(x, approximate="tanh")
// Operands commute; the constants must match to 1e-6 relative and come from
// Constant nodes or initializers `constant_initializer` accepts (never a
// trainable parameter); every intermediate value has one reader and is no
// graph output, nor is the result. The Gelu takes the Erf's or Tanh's node
// name and the result's value name.
//
// FuseSiluPass (FuseSilu; also run on the training graph before autodiff):
// Mul(x, Sigmoid(x)), operands either way round, where the Sigmoid's output
// has no other reader and neither value is a graph output, becomes one Silu
// node (ir/ops.def) named as the Mul, whose output takes the Mul's value
// name. SiLU is PyTorch's nn.SiLU / F.silu (EfficientNet, YOLO, Llama's MLP);
// both exporters write it as the pair. The Silu
// kernel rounds once where the pair rounds twice, and its gradient is one
// SiluGrad pass where the pair's takes five (EfficientNet-B0's training step:
// 45 of 188 ms in the pair's kernels).
#pragma once

#include <functional>
#include <string>

#include "ir/graph.h"
#include "ir/pass.h"

namespace amptrain::executor {

class FoldBatchNormPass : public ir::Pass {
 public:
  std::string name() const override { return "fold-batchnorm"; }
  StatusOr<bool> Run(ir::Graph& graph) override;
};

class FuseConvPass : public ir::Pass {
 public:
  std::string name() const override { return "fuse-conv"; }
  StatusOr<bool> Run(ir::Graph& graph) override;
};

// The GELU patterns fused, every initializer taken for a constant (inference).
class FuseGeluPass : public ir::Pass {
 public:
  std::string name() const override { return "fuse-gelu"; }
  StatusOr<bool> Run(ir::Graph& graph) override;
};

// The number of GELU patterns fused (see FuseGeluPass).
StatusOr<int> FuseGelu(ir::Graph& graph, const std::function<bool(const std::string&)>& constant_initializer);

class FuseSiluPass : public ir::Pass {
 public:
  std::string name() const override { return "fuse-silu"; }
  StatusOr<bool> Run(ir::Graph& graph) override;
};

// The number of SiLU pairs fused (see FuseSiluPass); a pair with a node for
// which `keep` is true stays (a policy names it; null: none does).
StatusOr<int> FuseSilu(ir::Graph& graph, const std::function<bool(const ir::Node&)>& keep);

// FuseTransposedWeights (the training graph, before autodiff; exact): a
// MatMul whose B is a Transpose of a 2-D value (the exporters' nn.Linear on
// inputs of rank 3 and more: MatMul(x, Transpose(weight))) becomes one Gemm
// reading W transposed in place (transB, a strided operand, no copy), its A
// the rows of x ([.., K] -> [M, K], a view) and its result viewed back as
// [.., N]:
//   before:  x ─▶ MatMul(x, t) ─▶ y        W ─▶ Transpose ─▶ t
//   after:   x ─▶ Flatten ─▶ Gemm(rows, W; transB=1) ─▶ Reshape ─▶ y
// The Transpose goes when nothing else reads it. Its gradient is then one
// GEMM straight into dW's layout (dY^T rows) instead of a GEMM into W^T's and
// a transposed copy, and W^T is never materialized either way (a transformer
// LM's step at O2 bf16: a third of its Transpose time). The Gemm keeps the
// MatMul's node name; A of rank > 2 needs at most one symbolic dim before
// its last; a pair with a node for which `keep` is true stays. Returns the
// number of MatMuls rewritten.
StatusOr<int> FuseTransposedWeights(ir::Graph& graph, const std::function<bool(const ir::Node&)>& keep);

// FuseGeluPass, FuseSiluPass, FoldBatchNormPass then FuseConvPass, verifying the graph
// after each; true when anything changed.
StatusOr<bool> OptimizeForInference(ir::Graph& graph);

}  // namespace amptrain::executor
