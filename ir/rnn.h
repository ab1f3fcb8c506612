// The attributes of the ONNX recurrent layers (RNN, GRU, LSTM) and of their
// backward ops, parsed once for the shape rules (ir/infer/rnn.cc) and the
// kernels (kernels/cpu/rnn.cc).
//
// Supported: direction forward/reverse/bidirectional, hidden_size, layout 0
// ([seq, batch, ...]) and 1 ([batch, seq, ...]), clip, GRU's
// linear_before_reset, and the activations Sigmoid, Tanh and Relu in any
// slot (PyTorch exports the defaults: RNN Tanh or Relu, GRU Sigmoid/Tanh,
// LSTM Sigmoid/Tanh/Tanh). Not supported, refused by name: other
// activations (those with alpha/beta), LSTM input_forget=1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/attribute.h"
#include "ir/op_schema.h"

namespace amptrain::ir {

enum class RnnActivation { kSigmoid, kTanh, kRelu };

// RNN, GRU, LSTM (the forward ops); RNNGrad, GRUGrad, LSTMGrad.
inline bool IsRecurrent(OpKind op) { return op == OpKind::kRNN || op == OpKind::kGRU || op == OpKind::kLSTM; }
inline bool IsRecurrentGrad(OpKind op) {
  return op == OpKind::kRNNGrad || op == OpKind::kGRUGrad || op == OpKind::kLSTMGrad;
}
// ONNX's outputs of a recurrent layer (Y, Y_h, and Y_c for LSTM); ir/ops.def
// allows one more, the internal reserve (RnnConfig::reserve_output).
inline size_t RecurrentOnnxOutputs(OpKind cell) { return cell == OpKind::kLSTM ? 3 : 2; }

struct RnnConfig {
  OpKind cell = OpKind::kRNN;  // kRNN, kGRU or kLSTM (also for the backward ops)
  int64_t gates = 1;           // rows of W per hidden unit: RNN 1, GRU 3 (z r h), LSTM 4 (i o f c)
  int64_t directions = 1;      // 2 when bidirectional
  bool reverse = false;        // direction "reverse" (one direction, run backward in time)
  int64_t hidden_size = 0;     // 0: not given (W's rows decide)
  int64_t layout = 0;          // 0: X [seq, batch, input]; 1: X [batch, seq, input]
  float clip = 0;              // > 0: gate pre-activations clamped to [-clip, clip]
  bool linear_before_reset = false;  // GRU
  // Per direction, the cell's activation slots: RNN f; GRU f (gates), g
  // (candidate); LSTM f (gates), g (cell input), h (cell output).
  std::vector<std::vector<RnnActivation>> activations;

  // Input slots of the forward op.
  static constexpr size_t kX = 0, kW = 1, kR = 2, kB = 3, kSequenceLens = 4, kInitialH = 5, kInitialC = 6, kP = 7;
  // Inputs of the forward op (6 or 8); the backward op appends dY, dY_h (and dY_c).
  size_t forward_inputs() const { return cell == OpKind::kLSTM ? 8 : 6; }
  // The reserve: an internal fp32 output of the forward op after Y, Y_h (and
  // Y_c) that keeps what the backward op needs from every step (the layout
  // below). The training graph adds it (autodiff::ToTrainingMode) and passes
  // it to the backward op as its last input, after dY, dY_h (, dY_c); a
  // backward op given it need not run the forward again.
  size_t reserve_output() const { return RecurrentOnnxOutputs(cell); }
  size_t reserve_input() const { return forward_inputs() + reserve_output(); }
};

// The reserve's layout: per direction, in X's row order (seq * batch rows),
// blocks of the activated gates [rows, gates * H] and of the hidden state
// before each step [rows, H]; LSTM adds the cell state before and after the
// step, GRU its q = Rh h + Rbh (linear_before_reset 1) or r * h (0), and a
// clip the masks of the pre-activations inside it (1, else 0) [rows, gates * H].
// Offsets within a direction; -1 where the block does not exist.
struct RnnReserveLayout {
  int64_t gates = 0, hprev = 0, cprev = -1, cnew = -1, q = -1, rh = -1, pass = -1;
  int64_t per_direction = 0;
};
RnnReserveLayout ReserveLayout(const RnnConfig& c, int64_t rows, int64_t hidden);

// The cell of a forward or backward recurrent op (kRNN for kRNNGrad, ...).
OpKind RnnCellOf(OpKind op);

// Parses and checks the attributes of `op` (forward or backward).
StatusOr<RnnConfig> ParseRnnConfig(OpKind op, const Attributes& attrs);

}  // namespace amptrain::ir
