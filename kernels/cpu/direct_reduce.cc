// Direct ReduceSumTo (fp32, fp16, bf16): the sum of a gradient down to a
// broadcast operand's shape. After dropping size-1 axes and merging
// neighbouring axes of one kind (kept by the output, or summed), X is viewed
// as [outer..., N, R]: N the last kept run, R the summed axes after it, and
// before them any alternation of kept and summed runs. Each output run of N
// (one per index of the outer kept runs) sums, for each index of the outer
// summed runs in row-major order, its N columns (R == 1: a bias of a Linear
// or attention layer, dY [batch, seq, N] -> [N]; grouped-query attention's
// repeated keys, [B, KVH, rep, S, D] -> [B, KVH, 1, S, D]) or its N runs of
// R values (a per-channel bias: dY [N, C, H, W] -> [C, 1, 1]), eight outputs
// at a time.
// Each output is summed in double, in the row-major order of its preimage,
// and rounded once: the reference's order and bits (grad_scatter.cc), with
// contiguous loads instead of its per-element offset table. A ReduceSumTo
// that sums nothing (its shapes were symbolic when the autodiff made it) is
// a copy, or nothing where its output may take X's buffer. One thread owns
// each output, so the bits do not depend on the thread count. A reduction to
// one element is declined: the reference runs it.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/cpu/direct_kernels.h"
#include "kernels/cpu/float_convert.h"
#include "kernels/cpu/grad_kernels.h"

namespace amptrain::kernels::cpu::direct {

namespace {

using grad::Load;  // the reference's widening and rounding
using grad::Store;

constexpr int64_t kColumns = 64;            // column block granularity (R == 1)
constexpr int64_t kMaxColumns = 8192;       // columns per work item at most (its accumulators: 64 KiB)
constexpr int64_t kLanes = 8;               // outputs summed side by side (R > 1)
constexpr int64_t kParallelMin = 1 << 15;   // elements of X below which one thread runs

// X as [outer..., N, R] (see the top): the offsets in X of each output
// run's first element (kept outer indices, row-major), of each outer summed
// index (row-major), N and R. False when nothing is kept (a sum to one
// element).
struct SumLayout {
  std::vector<int64_t> run_offsets{0}, sum_offsets{0};
  int64_t n = 1, r = 1;
};

bool ViewAsRuns(const std::vector<int64_t>& x, const std::vector<int64_t>& out, SumLayout& layout) {
  struct Group {
    int64_t size;
    bool kept;
  };
  std::vector<Group> groups;
  const size_t lead = x.size() - out.size();
  for (size_t d = 0; d < x.size(); ++d) {
    if (x[d] == 1) continue;
    const bool kept = d >= lead && out[d - lead] == x[d];
    if (!groups.empty() && groups.back().kept == kept) groups.back().size *= x[d];
    else groups.push_back({x[d], kept});
  }
  size_t last = groups.size();
  for (size_t g = 0; g < groups.size(); ++g)
    if (groups[g].kept) last = g;
  if (last == groups.size()) return false;
  layout.n = groups[last].size;
  layout.r = last + 1 < groups.size() ? groups[last + 1].size : 1;
  int64_t stride = layout.n * layout.r;
  for (size_t g = last; g-- > 0;) {
    std::vector<int64_t>& offsets = groups[g].kept ? layout.run_offsets : layout.sum_offsets;
    std::vector<int64_t> inner = std::move(offsets);
    offsets.clear();
    for (int64_t i = 0; i < groups[g].size; ++i)
      for (int64_t o : inner) offsets.push_back(i * stride + o);
    stride *= groups[g].size;
  }
  return true;
}

template <class T>
class ReduceSumToKernel : public Kernel {
 public:
  ReduceSumToKernel(SumLayout layout, int64_t x_elements, std::vector<int64_t> out_dims, int threads)
      : l_(std::move(layout)), out_dims_(std::move(out_dims)), threads_(x_elements >= kParallelMin ? threads : 1) {}

  // Nothing summed (a gradient whose shape the autodiff could not prove equal
  // to its operand's, with symbolic dims): the output is X, in place.
  bool identity() const { return l_.sum_offsets.size() == 1 && l_.r == 1; }
  int inplace_input(size_t) const override { return identity() ? 0 : -1; }

  Status Run(KernelContext& ctx) override {
    const ir::TensorView& shape = ctx.inputs[1];
    for (int64_t d = 0; d < shape.num_elements(); ++d)
      if (shape.as<const int64_t>()[d] != out_dims_[static_cast<size_t>(d)])
        return InvalidArgument("ReduceSumTo: the shape input does not match the planned output dims");
    const T* x = ctx.inputs[0].as<const T>();
    T* y = ctx.outputs[0].as<T>();
    if (identity()) {
      if (y != x) std::memcpy(y, x, static_cast<size_t>(l_.n) * l_.run_offsets.size() * sizeof(T));
      return Status::Ok();
    }
    if (l_.r == 1) Columns(x, y);
    else Runs(x, y);
    return Status::Ok();
  }

 private:
  // Per output run q: y[q * N + j] = sum over c of x[run_q + sum_c + j].
  // A work item is a block of columns as wide as the threads allow (up to
  // kMaxColumns), so that each summed row is read as one contiguous stretch
  // (narrow blocks read every row at a stride of N: a 4096 x 8192 bf16 bias
  // gradient took three times as long).
  void Columns(const T* x, T* y) const {
    const int64_t n = l_.n, runs = static_cast<int64_t>(l_.run_offsets.size());
    const int64_t per_thread = (n * runs + threads_ - 1) / threads_;
    const int64_t width_max = std::clamp((per_thread + kColumns - 1) / kColumns * kColumns, kColumns, kMaxColumns);
    const int64_t blocks = (n + width_max - 1) / width_max, items = runs * blocks;
#pragma omp parallel num_threads(threads_) if (threads_ > 1 && items > 1)
    {
      std::vector<double> acc(static_cast<size_t>(std::min(width_max, n)));
      std::vector<float> wide(acc.size());
#pragma omp for schedule(static)
      for (int64_t item = 0; item < items; ++item) {
        const int64_t q = item / blocks, j0 = item % blocks * width_max, width = std::min(width_max, n - j0);
        const T* base = x + l_.run_offsets[static_cast<size_t>(q)] + j0;
        std::fill(acc.begin(), acc.begin() + width, 0.0);
        for (int64_t c : l_.sum_offsets) {
          const T* row = base + c;
          if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
            // Widened a block at a time (exact: the values Load gives).
            WidenSpan(std::is_same_v<T, Half> ? DType::kFloat16 : DType::kBFloat16, row, wide.data(), width);
            for (int64_t j = 0; j < width; ++j) acc[j] += static_cast<double>(wide[j]);
          } else {
            for (int64_t j = 0; j < width; ++j) acc[j] += static_cast<double>(Load(row[j]));
          }
        }
        for (int64_t j = 0; j < width; ++j) y[q * n + j0 + j] = Store<T>(acc[j]);
      }
    }
  }

  // Per output run q: y[q * N + j] = sum over c, then k, of x[run_q + sum_c + j * R + k].
  void Runs(const T* x, T* y) const {
    const int64_t n = l_.n, r = l_.r, groups = (n + kLanes - 1) / kLanes;
    const int64_t items = static_cast<int64_t>(l_.run_offsets.size()) * groups;
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && items > 1)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t q = item / groups, j0 = item % groups * kLanes, lanes = std::min(kLanes, n - j0);
      double acc[kLanes] = {};
      for (int64_t c : l_.sum_offsets) {
        const T* base = x + l_.run_offsets[static_cast<size_t>(q)] + c + j0 * r;
        if (lanes == kLanes) {
          for (int64_t k = 0; k < r; ++k)  // eight independent chains: no wait on the adder
            for (int64_t l = 0; l < kLanes; ++l) acc[l] += static_cast<double>(Load(base[l * r + k]));
        } else {
          for (int64_t l = 0; l < lanes; ++l)
            for (int64_t k = 0; k < r; ++k) acc[l] += static_cast<double>(Load(base[l * r + k]));
        }
      }
      for (int64_t l = 0; l < lanes; ++l) y[q * n + j0 + l] = Store<T>(acc[l]);
    }
  }

  SumLayout l_;
  std::vector<int64_t> out_dims_;
  int threads_;
};

StatusOr<std::unique_ptr<Kernel>> MakeReduceSumTo(const KernelInit& init) {
  if (init.inputs.size() != 2 || init.outputs.size() != 1) return init.Error("expects 2 inputs and 1 output");
  const auto& x = init.inputs[0].dims;
  const auto& out = init.outputs[0].dims;
  const auto& shape = init.inputs[1];
  if (shape.dtype != DType::kInt64 || shape.dims != std::vector<int64_t>{static_cast<int64_t>(out.size())} ||
      init.outputs[0].dtype != init.inputs[0].dtype || out.size() > x.size())
    return init.Error("not a ReduceSumTo the direct kernel takes");
  for (size_t d = 0; d < out.size(); ++d)
    if (out[d] != 1 && out[d] != x[x.size() - out.size() + d])
      return init.Error("X does not reduce to the output shape by inverse broadcasting");
  SumLayout layout;
  if (!ViewAsRuns(x, out, layout))
    return Unimplemented(init.Describe(), ": a reduction to one element (the reference's chunked sum)");
  return WithDType(init.inputs[0].dtype, [&](auto tag) -> StatusOr<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(new ReduceSumToKernel<typename decltype(tag)::type>(
        std::move(layout), init.inputs[0].num_elements(), out, Threads(init)));
  });
}

}  // namespace

void RegisterDirectReduce(Registry& r) { r.Add(DirectEntry(OpKind::kReduceSumTo, MakeReduceSumTo)); }

}  // namespace amptrain::kernels::cpu::direct
