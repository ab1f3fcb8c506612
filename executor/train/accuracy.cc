#include "executor/train/accuracy.h"

#include <immintrin.h>
#include <omp.h>

#include <vector>

#include "kernels/cpu/float_convert.h"

namespace amptrain::executor::train {

namespace {

// The first index of the largest of x[0], x[s], ..., x[(k-1) s] under `>`:
// a later value wins only when greater, so NaNs never win and a NaN x[0]
// keeps 0.
int64_t ArgMaxStrided(const float* x, int64_t k, int64_t s) {
  int64_t best = 0;
  for (int64_t j = 1; j < k; ++j)
    if (x[j * s] > x[best * s]) best = j;
  return best;
}

// The same for a contiguous row, 8 lanes at a time: lane l keeps the first
// index of its largest value among x[1 + l], x[9 + l], ... that beat x[0]
// (or x[0] itself, index 0); the lanes' winner is the largest value at its
// smallest index, and the tail goes on from it under `>`. Indices are held
// as floats, exact below 2^24.
int64_t ArgMaxRow(const float* x, int64_t k) {
  if (k < 17 || k >= (int64_t{1} << 24)) return ArgMaxStrided(x, k, 1);
  __m256 best_v = _mm256_set1_ps(x[0]), best_i = _mm256_setzero_ps();
  __m256 idx = _mm256_setr_ps(1, 2, 3, 4, 5, 6, 7, 8);
  const __m256 eight = _mm256_set1_ps(8.0f);
  int64_t j = 1;
  for (; j + 8 <= k; j += 8) {
    const __m256 v = _mm256_loadu_ps(x + j);
    const __m256 gt = _mm256_cmp_ps(v, best_v, _CMP_GT_OQ);
    best_v = _mm256_blendv_ps(best_v, v, gt);
    best_i = _mm256_blendv_ps(best_i, idx, gt);
    idx = _mm256_add_ps(idx, eight);
  }
  alignas(32) float v[8], i[8];
  _mm256_store_ps(v, best_v);
  _mm256_store_ps(i, best_i);
  int l = 0;
  for (int m = 1; m < 8; ++m)
    if (v[m] > v[l] || (v[m] == v[l] && i[m] < i[l])) l = m;
  int64_t best = static_cast<int64_t>(i[l]);
  for (; j < k; ++j)
    if (x[j] > x[best]) best = j;
  return best;
}

}  // namespace

Hits CountCorrect(const ir::Tensor& logits, const ir::Tensor& labels, int64_t class_axis, int64_t ignore_index,
                  int threads) {
  Hits h;
  const int64_t rank = logits.rank();
  const ir::DType dt = logits.dtype();
  const bool low = kernels::cpu::IsTwoByteFloat(dt);  // widened exactly: the same arg-max
  if (rank < 2 || class_axis < 1 || class_axis >= rank || (dt != ir::DType::kFloat32 && !low) ||
      labels.dtype() != ir::DType::kInt64)
    return h;
  const int64_t k = logits.dims()[class_axis];
  if (k < 1 || labels.num_elements() * k != logits.num_elements()) return h;
  int64_t outer = 1, inner = 1;  // logits viewed as [outer, k, inner], labels as [outer, inner]
  for (int64_t d = 0; d < class_axis; ++d) outer *= logits.dims()[d];
  for (int64_t d = class_axis + 1; d < rank; ++d) inner *= logits.dims()[d];
  const char* x = static_cast<const char*>(logits.raw());
  const size_t bytes = ir::DTypeSize(dt);
  const int64_t* y = labels.data<int64_t>();
  const int64_t rows = outer * inner;
  const int t = rows * k >= (int64_t{1} << 16) ? (threads > 0 ? threads : omp_get_max_threads()) : 1;
  int64_t correct = 0, counted = 0;
#pragma omp parallel num_threads(t) reduction(+ : correct, counted) if (t > 1)
  {
    // fp16/bf16 logits: each [k, inner] slab (a row when inner is 1) widened first.
    std::vector<float> wide(low ? static_cast<size_t>(k * inner) : 0);
    int64_t widened_slab = -1;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t o = r / inner, i = r % inner;
      const int64_t label = y[r];
      if (label == ignore_index) continue;
      const float* row = reinterpret_cast<const float*>(x + static_cast<size_t>(o * k * inner + i) * bytes);
      if (low) {
        if (widened_slab != o) {
          kernels::cpu::WidenSpan(dt, x + static_cast<size_t>(o * k * inner) * bytes, wide.data(), k * inner);
          widened_slab = o;
        }
        row = wide.data() + i;
      }
      const int64_t best = inner == 1 ? ArgMaxRow(row, k) : ArgMaxStrided(row, k, inner);
      correct += best == label;
      ++counted;
    }
  }
  h.correct = correct;
  h.counted = counted;
  return h;
}

}  // namespace amptrain::executor::train
