// Broadcast iteration plans for the elementwise reference kernels.
//
// A plan is built once at kernel creation from static dims: the output is
// viewed as rows of `inner` contiguous elements after merging adjacent dims
// that every input treats alike (all broadcast, or all present). Each input
// then advances by 0 or 1 element along a row, so the common cases are plain
// loops: same shape (one long row), scalar operand (stride 0), bias add
// ([N,C] + [C]: rows of C, stride 1) and per-channel scale ([N,C,H,W] +
// [C,1,1]: rows of H*W, stride 0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace amptrain::kernels::cpu {

class BroadcastPlan {
 public:
  BroadcastPlan() = default;
  // in_dims must broadcast to out_dims (numpy rules, validated by the caller).
  BroadcastPlan(const std::vector<std::vector<int64_t>>& in_dims, const std::vector<int64_t>& out_dims);

  int64_t total() const { return total_; }
  int64_t inner() const { return dims_.back(); }
  // Element stride (0 or 1) of input k along a row.
  int64_t inner_stride(size_t k) const { return strides_[k].back(); }
  // Offsets of every input at the start of output row `row` (out offset = row * inner()).
  void RowOffsets(int64_t row, int64_t* offsets) const;

  // Calls fn(out_offset, in_offsets, n) on runs of n <= inner() contiguous
  // output elements covering the output, in parallel on up to `threads`
  // OpenMP threads when the output is large.
  template <class Fn>
  void ForEachRun(int threads, Fn&& fn) const;

 private:
  std::vector<int64_t> dims_;                  // merged output dims, rank >= 1
  std::vector<std::vector<int64_t>> strides_;  // per input, element stride per merged dim
  int64_t total_ = 0;
};

inline constexpr int64_t kParallelMinElements = 1 << 15;  // below this, one thread
inline constexpr int64_t kRunChunk = 1 << 14;             // elements per parallel work item

template <class Fn>
void BroadcastPlan::ForEachRun(int threads, Fn&& fn) const {
  if (total_ == 0) return;
  const int64_t inner = dims_.back();
  const int64_t chunks_per_row = (inner + kRunChunk - 1) / kRunChunk;
  const int64_t items = total_ / inner * chunks_per_row;
  const size_t k = strides_.size();
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1 && total_ >= kParallelMinElements)
  for (int64_t item = 0; item < items; ++item) {
    int64_t offsets[8];
    std::vector<int64_t> heap;
    int64_t* offs = offsets;
    if (k > 8) {
      heap.resize(k);
      offs = heap.data();
    }
    int64_t row = item / chunks_per_row, start = item % chunks_per_row * kRunChunk;
    RowOffsets(row, offs);
    for (size_t i = 0; i < k; ++i) offs[i] += start * strides_[i].back();
    int64_t n = inner - start < kRunChunk ? inner - start : kRunChunk;
    fn(row * inner + start, static_cast<const int64_t*>(offs), n);
  }
}

}  // namespace amptrain::kernels::cpu
