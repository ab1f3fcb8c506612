// Internal to the reference shape kernels (shape.cc, gather_slice.cc,
// pad_resize.cc): the family's registration pieces and shared helpers.
// Data movement copies elements by byte size, so one instantiation per size
// (1, 2, 4, 8 bytes) serves every dtype.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <omp.h>

#include "ir/infer/shape_params.h"
#include "kernels/cpu/element.h"
#include "kernels/cpu/register.h"

namespace amptrain::kernels::cpu {

void RegisterReferenceGatherSlice(Registry& r);  // gather_slice.cc: Gather, Slice
void RegisterReferencePadResize(Registry& r);    // pad_resize.cc: Pad, Resize
void RegisterReferenceCumSumTrilu(Registry& r);  // cumsum_trilu.cc: CumSum, Trilu
void RegisterReferenceSelect(Registry& r);       // select.cc: ArgMax, ArgMin, TopK, GatherElements(Grad)

inline std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

// Outputs at least this large copy on several threads.
inline constexpr int64_t kParallelElements = int64_t{1} << 16;

// StridedCopy's transposing case: no wrap-around, the output's last dim
// walks the source with a stride and the dim before it walks it
// contiguously (the last two axes swapped: a weight's W^T, attention's
// K^T). Row by row, each output row would read a column of the source, a
// cache line per element (an 8192 x 256 fp32 W^T took 8 ms); tiles of
// kTile x kTile read source rows and write output rows a line at a time.
// The same values as the walk (a copy). Returns false for any other walk.
template <class U>
bool TiledTranspose(const U* src, U* dst, const std::vector<int64_t>& out_dims, const std::vector<int64_t>& strides,
                    const std::vector<int64_t>& periods) {
  constexpr int64_t kTile = 32;
  const size_t r = out_dims.size();
  if (r < 2 || strides[r - 2] != 1 || strides[r - 1] == 1) return false;
  int64_t total = 1;
  for (size_t d = 0; d < r; ++d) {
    if (periods[d] != out_dims[d]) return false;
    total *= out_dims[d];
  }
  const int64_t a = out_dims[r - 2], b = out_dims[r - 1], bs = strides[r - 1];
  if (a < 8 || b < 8) return false;  // the walk is as good on thin shapes
  const int64_t batch = total / (a * b), ta = (a + kTile - 1) / kTile, tb = (b + kTile - 1) / kTile;
#pragma omp parallel for schedule(static) if (total >= kParallelElements)
  for (int64_t t = 0; t < batch * ta * tb; ++t) {
    const int64_t n = t / (ta * tb), i0 = t / tb % ta * kTile, j0 = t % tb * kTile;
    int64_t off = 0;  // the source offset of batch entry n
    for (int64_t d = static_cast<int64_t>(r) - 3, rem = n; d >= 0; --d) {
      off += rem % out_dims[d] * strides[d];
      rem /= out_dims[d];
    }
    U* out = dst + n * a * b;
    const int64_t i1 = std::min(a, i0 + kTile), j1 = std::min(b, j0 + kTile);
    for (int64_t j = j0; j < j1; ++j)
      for (int64_t i = i0; i < i1; ++i) out[i * b + j] = src[off + i + j * bs];
  }
  return true;
}

// The one strided walk behind Transpose, Slice, Expand and Tile:
//   dst[o] = src[sum_d (o_d % periods[d]) * strides[d]]  for o over out_dims
// (dst contiguous; strides may be negative; periods[d] == out_dims[d] means
// no wrap-around). Rows of the innermost dim are split across threads.
template <class U>
void StridedCopy(const U* src, U* dst, const std::vector<int64_t>& out_dims, const std::vector<int64_t>& strides,
                 const std::vector<int64_t>& periods) {
  const size_t r = out_dims.size();
  int64_t total = 1;
  for (int64_t d : out_dims) total *= d;
  if (total == 0) return;
  if (r == 0) {
    dst[0] = src[0];
    return;
  }
  if (TiledTranspose(src, dst, out_dims, strides, periods)) return;
  const int64_t last = out_dims[r - 1], ls = strides[r - 1], lp = periods[r - 1];
  const int64_t rows = total / last;
#pragma omp parallel if (total >= kParallelElements)
  {
    const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t r0 = rows * t / nt, r1 = rows * (t + 1) / nt;
    std::vector<int64_t> o(r, 0), p(r, 0);
    int64_t off = 0, rem = r0;
    for (size_t d = r - 1; d-- > 0;) {
      o[d] = rem % out_dims[d];
      rem /= out_dims[d];
      p[d] = o[d] % periods[d];
      off += p[d] * strides[d];
    }
    for (int64_t row = r0; row < r1; ++row) {
      U* drow = dst + row * last;
      const U* srow = src + off;
      if (lp == last && ls == 1) std::memcpy(drow, srow, static_cast<size_t>(last) * sizeof(U));
      else if (lp == last) for (int64_t k = 0; k < last; ++k) drow[k] = srow[k * ls];
      else if (lp == 1) std::fill(drow, drow + last, srow[0]);  // Expand of a size-1 last dim
      else for (int64_t k = 0; k < last; ++k) drow[k] = srow[(k % lp) * ls];
      for (size_t d = r - 1; d-- > 0;) {  // next row: increment with carry
        off += strides[d];
        if (++p[d] == periods[d]) { off -= periods[d] * strides[d]; p[d] = 0; }
        if (++o[d] < out_dims[d]) break;
        off -= p[d] * strides[d];
        o[d] = 0;
        p[d] = 0;
      }
    }
  }
}

// Integer/float values of a view (int64, int32 or any float dtype).
std::vector<int64_t> ViewInts(const ir::TensorView& v);
std::vector<double> ViewDoubles(const ir::TensorView& v);

// A parameter input (axes, starts, pads, scales, ...): its value when known
// at creation, else read from the run-time view. Absent inputs give {}.
class ParamInput {
 public:
  ParamInput() = default;
  ParamInput(const KernelInit& init, size_t i);
  bool present() const { return present_; }
  // Absent, or its value known at creation (Ints/Doubles then read no input).
  bool known() const { return !present_ || known_doubles_.has_value(); }
  std::vector<int64_t> Ints(const KernelContext& ctx) const;
  std::vector<double> Doubles(const KernelContext& ctx) const;

 private:
  size_t index_ = 0;
  bool present_ = false;
  std::optional<std::vector<double>> known_doubles_;
  std::optional<std::vector<int64_t>> known_ints_;
};

// One Resize/ResizeGrad run's geometry from its roi, scales and sizes inputs
// (checked against the resized dims y_dims), and the axes it leaves as they
// are (same size, scale 1, the whole roi): those take no pass. Shared by the
// reference (pad_resize.cc) and the direct kernel (direct_resize.cc).
struct ResizeRun {
  ir::ResizeGeometry g;
  std::vector<bool> identity;
};
StatusOr<ResizeRun> ResolveResizeRun(const ir::ResizeAttrs& a, const ParamInput& roi, const ParamInput& scales,
                                     const ParamInput& sizes, const KernelContext& ctx,
                                     const std::vector<int64_t>& x_dims, const std::vector<int64_t>& y_dims,
                                     const std::string& describe);

// A registry entry of the reference set for factory K::Create.
template <class K>
KernelEntry ReferenceEntry(OpKind op, std::vector<DType> dtypes = {}) {
  KernelEntry e;
  e.op = op;
  e.device = DeviceKind::kCpu;
  e.impl = "reference";
  e.priority = 0;
  e.dtypes = std::move(dtypes);
  e.factory = [](const KernelInit& init) -> StatusOr<std::unique_ptr<Kernel>> { return K::Create(init); };
  return e;
}

// Fails unless the node has between lo and hi inputs and `outs` outputs (hi < 0: no limit).
Status CheckArity(const KernelInit& init, size_t lo, int hi, size_t outs);

}  // namespace amptrain::kernels::cpu
