// Opset adapters: older ONNX encodings <-> the canonical IR form.
//
// The canonical form (ir/op_schema.h) is the newest opset's. On import,
// attributes that later opsets turned into inputs become int64/float
// Constant inputs; on export to an older opset they turn back into
// attributes, which needs those inputs to be constants.
//
//   op                     attribute until  canonical input
//   ReduceMean, ReduceMax  opset 17 axes    input 1 (int64 [k])
//   ReduceSum              opset 12 axes    input 1
//   Squeeze, Unsqueeze     opset 12 axes    input 1
//   Split                  opset 12 split   input 1
//   Dropout                opset 11 ratio   input 1 (float32 scalar)
//
// BatchNormalization before opset 14 is in training mode when it has more
// than one output (Y, mean, var, saved_mean, saved_var): import gives
// training_mode=1 and the three outputs Y, running_mean, running_var, and
// fails when saved_mean/saved_var are used. Export below 14 drops the
// attribute and writes five outputs (the last two unused), the only
// training-mode output count those opsets allow.
//
// Softmax/LogSoftmax before opset 13 (axis default 1) coerce the input to
// 2-D at `axis`. When axis is the last dim the node just gets axis=-1;
// otherwise
//     y = Softmax[axis=a](x)
// becomes
//     f = Flatten[axis=a](x); s = Softmax[axis=-1](f); y = Reshape(s, Shape(x))
// with y keeping its name (x's dims as a constant instead of Shape(x) when
// at most one of them is unknown). Export below 13 accepts only a last-dim axis.
//
// CastLike (opset 15) becomes, once shapes are inferred,
//     y = CastLike(x, like)   ->   y = Cast[to = dtype of like](x)
// keeping y's name; like's producers go when nothing else uses them. AMP,
// autodiff, the kernels and the exporter only ever see Cast.
//
// LayerNormalization (opset 17) exists in a graph imported below 17 only as
// the InstanceNormalization lowering (importer/lowerings.cc); export below 17
// writes it as ReduceMean / Sub / Mul / Add / Sqrt / Div, as PyTorch's
// exporter does there, and fails when its Mean / InvStdDev outputs are used.
//
// Opsets 7-10 (import only): Upsample, Resize-10, Scatter, and Slice / TopK /
// Pad's integer attributes are rewritten on the proto first
// (importer/legacy_ops.cc); here Clip's min / max attributes and Pad's value
// become scalar inputs of the data's dtype, and BatchNormalization's spatial=1
// (before 9) goes. The graph is then the opset-11 model it equals, and its
// ModelInfo says opset 11 (export writes 11 and up).
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace amptrain::importer {

// The first default-domain opset in which `op` exists (1 for ops older than
// our supported range).
int64_t OpSinceVersion(ir::OpKind op);

// Rewrites a graph freshly imported at `opset` into the canonical form. May
// run graph.InferShapes() to learn Softmax input ranks.
Status UpgradeToCanonical(ir::Graph& graph, int64_t opset);

// Replaces every CastLike by the Cast it means (needs inferred dtypes). True
// when it changed the graph.
StatusOr<bool> LowerCastLike(ir::Graph& graph);

// Sets the `dtype` attribute of the random ops (ir/ops.def's "random"
// family) where the model left it out (the *Like ops and Bernoulli then take
// the input's dtype, RandomUniform and RandomNormal float32; needs inferred
// dtypes): the output type is then the model's whatever precision AMP gives
// the input.
Status PinRandomDTypes(ir::Graph& graph);

// Replaces the ops of ir/ops.def's "lowered" family (InstanceNormalization,
// GroupNormalization, RMSNormalization, Swish, DepthToSpace, SpaceToDepth,
// Einsum, Attention) by the ops they are made of (importer/lowerings.cc,
// importer/lower_attention.cc); reruns shape inference when it changed the graph.
StatusOr<bool> LowerComposites(ir::Graph& graph);

// Rewrites a canonical graph (a copy the exporter owns) into the encoding of
// `opset`; fails naming the node when that opset cannot express it.
Status DowngradeFromCanonical(ir::Graph& graph, int64_t opset);

}  // namespace amptrain::importer
