// Direct ReduceSumTo (fp32, fp16, bf16): the sum of a gradient down to a
// broadcast operand's shape, for the two layouts that backward passes make.
// After dropping size-1 axes and merging neighbouring axes of one kind, X is
// viewed as [A, N, R] and the output as [N]: A leading axes summed, N kept,
// R trailing axes summed.
//   R == 1 (a bias of a Linear or attention layer: dY [batch, seq, N] -> [N]):
//     column sums, a block of columns per work item, each column summed
//     down its rows;
//   R > 1 (a per-channel bias: dY [N, C, H, W] -> [C, 1, 1]): each output
//     sums its A runs of R values, eight outputs at a time.
// Each output is summed in double, in the row-major order of its preimage,
// and rounded once: the reference's order and bits (grad_scatter.cc), with
// contiguous loads instead of its per-element offset table. A ReduceSumTo
// that sums nothing (its shapes were symbolic when the autodiff made it) is
// a copy, or nothing where its output may take X's buffer. One thread owns
// each output, so the bits do not depend on the thread count. A reduction to
// one element, or a layout with more than one kept run, is declined: the
// reference runs it.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/direct_kernels.h"
#include "kernels/cpu/grad_kernels.h"

namespace amptrain::kernels::cpu::direct {

namespace {

using grad::Load;  // the reference's widening and rounding
using grad::Store;

constexpr int64_t kColumns = 64;            // columns per work item (R == 1)
constexpr int64_t kLanes = 8;               // outputs summed side by side (R > 1)
constexpr int64_t kParallelMin = 1 << 15;   // elements of X below which one thread runs

// X's dims as [A, N, R] when the output keeps one contiguous run of X's
// axes; false for any other layout.
bool ViewAsANR(const std::vector<int64_t>& x, const std::vector<int64_t>& out, int64_t& a, int64_t& n, int64_t& r) {
  const size_t lead = x.size() - out.size();
  a = n = r = 1;
  int phase = 0;  // 0: before the kept run, 1: in it, 2: after it
  for (size_t d = 0; d < x.size(); ++d) {
    if (x[d] == 1) continue;
    const bool kept = d >= lead && out[d - lead] == x[d];
    if (kept && phase == 2) return false;
    if (kept) phase = 1;
    else if (phase == 1) phase = 2;
    (kept ? n : phase == 0 ? a : r) *= x[d];
  }
  return true;
}

template <class T>
class ReduceSumToKernel : public Kernel {
 public:
  ReduceSumToKernel(int64_t a, int64_t n, int64_t r, std::vector<int64_t> out_dims, int threads)
      : a_(a), n_(n), r_(r), out_dims_(std::move(out_dims)), threads_(a * n * r >= kParallelMin ? threads : 1) {}

  // Nothing summed (a gradient whose shape the autodiff could not prove equal
  // to its operand's, with symbolic dims): the output is X, in place.
  bool identity() const { return a_ == 1 && r_ == 1; }
  int inplace_input(size_t) const override { return identity() ? 0 : -1; }

  Status Run(KernelContext& ctx) override {
    const ir::TensorView& shape = ctx.inputs[1];
    for (int64_t d = 0; d < shape.num_elements(); ++d)
      if (shape.as<const int64_t>()[d] != out_dims_[static_cast<size_t>(d)])
        return InvalidArgument("ReduceSumTo: the shape input does not match the planned output dims");
    const T* x = ctx.inputs[0].as<const T>();
    T* y = ctx.outputs[0].as<T>();
    if (identity()) {
      if (y != x) std::memcpy(y, x, static_cast<size_t>(n_) * sizeof(T));
      return Status::Ok();
    }
    if (r_ == 1) Columns(x, y);
    else Runs(x, y);
    return Status::Ok();
  }

 private:
  // y[j] = sum over i of x[i * N + j].
  void Columns(const T* x, T* y) const {
    const int64_t blocks = (n_ + kColumns - 1) / kColumns;
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && blocks > 1)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t j0 = b * kColumns, width = std::min(kColumns, n_ - j0);
      double acc[kColumns] = {};
      for (int64_t i = 0; i < a_; ++i) {
        const T* row = x + i * n_ + j0;
        for (int64_t j = 0; j < width; ++j) acc[j] += static_cast<double>(Load(row[j]));
      }
      for (int64_t j = 0; j < width; ++j) y[j0 + j] = Store<T>(acc[j]);
    }
  }

  // y[j] = sum over i, then k, of x[(i * N + j) * R + k].
  void Runs(const T* x, T* y) const {
    const int64_t groups = (n_ + kLanes - 1) / kLanes;
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && groups > 1)
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t j0 = g * kLanes, lanes = std::min(kLanes, n_ - j0);
      double acc[kLanes] = {};
      for (int64_t i = 0; i < a_; ++i) {
        const T* base = x + (i * n_ + j0) * r_;
        if (lanes == kLanes) {
          for (int64_t k = 0; k < r_; ++k)  // eight independent chains: no wait on the adder
            for (int64_t l = 0; l < kLanes; ++l) acc[l] += static_cast<double>(Load(base[l * r_ + k]));
        } else {
          for (int64_t l = 0; l < lanes; ++l)
            for (int64_t k = 0; k < r_; ++k) acc[l] += static_cast<double>(Load(base[l * r_ + k]));
        }
      }
      for (int64_t l = 0; l < lanes; ++l) y[j0 + l] = Store<T>(acc[l]);
    }
  }

  int64_t a_, n_, r_;
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
  int64_t a, n, r;
  if (!ViewAsANR(x, out, a, n, r)) return Unimplemented(init.Describe(), ": more than one run of kept axes");
  if (n == 1) return Unimplemented(init.Describe(), ": a reduction to one element (the reference's chunked sum)");
  return WithDType(init.inputs[0].dtype, [&](auto tag) -> StatusOr<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(
        new ReduceSumToKernel<typename decltype(tag)::type>(a, n, r, out, Threads(init)));
  });
}

}  // namespace

void RegisterDirectReduce(Registry& r) { r.Add(DirectEntry(OpKind::kReduceSumTo, MakeReduceSumTo)); }

}  // namespace amptrain::kernels::cpu::direct
