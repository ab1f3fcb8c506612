// Sizes and index maps of one recurrent op instance (RNN, GRU, LSTM and
// their backward ops), shared by the reference kernels (rnn.cc) and the
// direct ones (direct_rnn.cc). Offsets count elements.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/rnn.h"
#include "kernels/kernel.h"

namespace amptrain::kernels::cpu {

struct RnnGeometry {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1, gates = 1, layout = 0;
  // Row (t, b) of X ([seq, batch, input] or, layout 1, [batch, seq, input]), times input.
  int64_t x(int64_t t, int64_t b) const { return row(t, b) * input; }
  int64_t row(int64_t t, int64_t b) const { return layout == 0 ? t * batch + b : b * seq + t; }
  // Y: [seq, dirs, batch, hidden] or, layout 1, [batch, seq, dirs, hidden].
  int64_t y(int64_t t, int64_t d, int64_t b) const {
    return (layout == 0 ? (t * dirs + d) * batch + b : (b * seq + t) * dirs + d) * hidden;
  }
  // Y_h, Y_c, initial_h, initial_c: [dirs, batch, hidden] or [batch, dirs, hidden].
  int64_t state(int64_t d, int64_t b) const { return (layout == 0 ? d * batch + b : b * dirs + d) * hidden; }
  // Row `row` of direction d's W ([dirs, gates * hidden, input]) and R ([..., hidden]).
  int64_t w(int64_t d, int64_t row) const { return (d * gates * hidden + row) * input; }
  int64_t r(int64_t d, int64_t row) const { return (d * gates * hidden + row) * hidden; }
  // B: [dirs, 2 * gates * hidden], Wb then Rb per direction.
  int64_t wb(int64_t d, int64_t row) const { return d * 2 * gates * hidden + row; }
  int64_t rb(int64_t d, int64_t row) const { return d * 2 * gates * hidden + gates * hidden + row; }
};

// The geometry of `init` under `c` (X and R of rank 3, the other inputs of
// X's dtype but sequence_lens, int32, and the reserve, fp32), or the error
// naming what is wrong.
StatusOr<RnnGeometry> RnnGeometryOf(const KernelInit& init, const ir::RnnConfig& c);

// The length of each batch row's sequence: input sequence_lens (int32) where
// given, else seq; the error names a length outside 0..seq.
Status ReadSequenceLens(const KernelContext& ctx, const RnnGeometry& g, std::vector<int64_t>& lens);

}  // namespace amptrain::kernels::cpu
