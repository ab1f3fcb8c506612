// The initializers of an imported model that are constants in the PyTorch
// model it came from (buffers), though ONNX cannot tell them from parameters.
#pragma once

#include <map>
#include <string>

#include "ir/graph.h"

namespace amptrain::executor::train {

// The float initializers of `g` (a model before its initializers became
// inputs) that are constants in the PyTorch model they came from, though
// ONNX cannot say so, by name with the reason:
// - a 0-d initializer that every reader takes as Pow's exponent. The dynamo
//   exporter's default (optimize=True) export writes `x.pow(2)` (RMSNorm)
//   with such a scalar; trained, its gradient x^2 ln x is NaN wherever x < 0,
//   and every step would be skipped. A learnable exponent is rare, and a 0-d
//   one rarer (GeM pooling's p is [1]);
// - an initializer whose every path to the data goes through Sin or Cos of
//   values that depend on no input data (shapes count as constants): the
//   frequencies of a rotary or sinusoidal position table, a buffer in
//   PyTorch (Llama's rotary_emb.inv_freq). Trained with Adam, frequencies of
//   1e-4 would move by the learning rate each step. Learned Fourier features,
//   Sin(W x), read data before the Sin and stay parameters, and so does a
//   learned position table (no Sin).
// - a precomputed sinusoidal position table [n, d]: sin and cos of the row
//   index times a frequency per column pair, in two halves (Whisper's
//   sinusoids()) or interleaved (the original Transformer's). PyTorch keeps
//   such a table frozen (Whisper's encoder embed_positions has
//   requires_grad False), which ONNX cannot say; a learned table initialized
//   so would look the same, hence --train-all.
// - an initializer that torch.export named as a constant it lifted out of
//   forward() ("lifted_tensor_N", "_tensor_constantN" as the last dotted
//   component): a tensor made in forward, never a parameter (DeBERTa-v2's
//   relative-position scale factors in the dynamo export).
// - a 0-d initializer named "embed_scale" (last dotted component) equal to
//   sqrt(d) within 1%, d the last dim of what its Muls scale: Gemma's scaled
//   word embedding's buffer (registered with persistent=False in PyTorch).
// `train --train-all` (TrainGraphOptions::train_all) trains them too.
std::map<std::string, std::string> ConstantLikeInitializers(const ir::Graph& g);

}  // namespace amptrain::executor::train
