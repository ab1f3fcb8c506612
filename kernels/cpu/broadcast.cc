#include "kernels/cpu/broadcast.h"

namespace amptrain::kernels::cpu {

BroadcastPlan::BroadcastPlan(const std::vector<std::vector<int64_t>>& in_dims, const std::vector<int64_t>& out_dims) {
  const size_t rank = out_dims.size(), k = in_dims.size();
  total_ = 1;
  for (int64_t d : out_dims) total_ *= d;
  // Per input, per output dim: the input's element stride (0 where broadcast).
  std::vector<std::vector<int64_t>> full(k, std::vector<int64_t>(rank, 0));
  for (size_t i = 0; i < k; ++i) {
    int64_t stride = 1;
    for (size_t j = 0; j < in_dims[i].size() && j < rank; ++j) {
      size_t ia = in_dims[i].size() - 1 - j, oa = rank - 1 - j;
      if (in_dims[i][ia] != 1) full[i][oa] = stride;
      stride *= in_dims[i][ia];
    }
  }
  // Merge dim a into the previous merged dim when every input either
  // broadcasts both or is contiguous across both; drop size-1 dims.
  strides_.assign(k, {});
  for (size_t a = 0; a < rank; ++a) {
    if (out_dims[a] == 1) continue;
    bool merge = !dims_.empty();
    for (size_t i = 0; merge && i < k; ++i) {
      int64_t prev = strides_[i].back();
      merge = (prev == 0 && full[i][a] == 0) || (prev != 0 && full[i][a] != 0 && prev == full[i][a] * out_dims[a]);
    }
    if (merge) {
      dims_.back() *= out_dims[a];
      for (size_t i = 0; i < k; ++i) strides_[i].back() = full[i][a];
    } else {
      dims_.push_back(out_dims[a]);
      for (size_t i = 0; i < k; ++i) strides_[i].push_back(full[i][a]);
    }
  }
  if (dims_.empty()) {
    dims_.push_back(1);
    for (auto& s : strides_) s.push_back(0);
  }
  // Rows advance by 0 or 1 element: a merged inner stride is 1 or 0 by construction.
}

void BroadcastPlan::RowOffsets(int64_t row, int64_t* offsets) const {
  const size_t k = strides_.size();
  for (size_t i = 0; i < k; ++i) offsets[i] = 0;
  for (size_t a = dims_.size() - 1; a-- > 0;) {
    int64_t idx = row % dims_[a];
    row /= dims_[a];
    for (size_t i = 0; i < k; ++i) offsets[i] += idx * strides_[i][a];
  }
}

}  // namespace amptrain::kernels::cpu
