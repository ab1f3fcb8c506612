// Reference kernels of CumSum and Trilu.
//   CumSum(x, axis), attrs exclusive and reverse: running sums along `axis`,
//   accumulated in Wide<T> (double for floats: every output is the exact sum
//   rounded once) and stored in T; integers wrap. The axis is read at
//   creation when its value is known, otherwise at every run.
//   Trilu(x, k?), attr upper: the elements of the last two dims on and above
//   (upper = 1) or on and below (upper = 0) diagonal k, the rest zero; any
//   dtype (copied as bytes). Output 0 may overwrite input 0.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/shape_kernels.h"

namespace amptrain::kernels::cpu {

namespace {

// Axis in [0, rank), or an error naming the node.
StatusOr<int64_t> NormalizeAxis(const std::string& who, int64_t axis, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) return Status(StatusCode::kOutOfRange, StrCat(who, ": axis ", axis, " is out of range for rank ", r));
  return axis < 0 ? axis + r : axis;
}

template <class T>
class CumSumKernel final : public Kernel {
 public:
  using W = Wide<T>;
  CumSumKernel(const KernelInit& init, std::optional<int64_t> axis, bool exclusive, bool reverse)
      : who_(init.Describe()), axis_(axis), exclusive_(exclusive), reverse_(reverse), threads_(Threads(init)) {}

  Status Run(KernelContext& ctx) override {
    int64_t axis = 0;
    if (axis_) {
      axis = *axis_;
    } else {
      AMP_ASSIGN_OR_RETURN(axis, NormalizeAxis(who_, IntAt(ctx.inputs[1], 0), ctx.inputs[0].dims.size()));
    }
    const std::vector<int64_t>& dims = ctx.inputs[0].dims;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= dims[static_cast<size_t>(d)];
    for (size_t d = static_cast<size_t>(axis) + 1; d < dims.size(); ++d) inner *= dims[d];
    const int64_t n = dims.empty() ? 1 : dims[static_cast<size_t>(axis)];
    const T* x = ctx.inputs[0].as<const T>();
    T* y = ctx.outputs[0].as<T>();
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && outer * n * inner >= kParallelMinElements)
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        W acc = W(0);
        for (int64_t s = 0; s < n; ++s) {
          const int64_t j = reverse_ ? n - 1 - s : s;
          const int64_t at = (o * n + j) * inner + i;
          const W v = static_cast<W>(static_cast<Acc<T>>(x[at]));  // read before a same-buffer write
          if (!exclusive_) acc = Add(acc, v);
          y[at] = static_cast<T>(static_cast<Acc<T>>(acc));
          if (exclusive_) acc = Add(acc, v);
        }
      }
    }
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }

 private:
  static W Add(W a, W b) {
    if constexpr (std::is_integral_v<W>) return static_cast<W>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    else return a + b;
  }
  std::string who_;  // for errors
  std::optional<int64_t> axis_;
  bool exclusive_, reverse_;
  int threads_;
};

StatusOr<std::unique_ptr<Kernel>> CreateCumSum(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 1));
  if (init.outputs[0].dtype != init.inputs[0].dtype || init.outputs[0].dims != init.inputs[0].dims)
    return init.Error("output type differs from the input's");
  const TensorSpec& a = init.inputs[1];
  if ((a.dtype != DType::kInt64 && a.dtype != DType::kInt32) || a.num_elements() != 1)
    return init.Error("axis must be one int32 or int64 value");
  const ir::Attributes& attrs = AttrsOf(init);
  AMP_ASSIGN_OR_RETURN(int64_t exclusive, attrs.GetInt("exclusive", 0));
  AMP_ASSIGN_OR_RETURN(int64_t reverse, attrs.GetInt("reverse", 0));
  std::optional<int64_t> axis;
  if (a.value) {
    AMP_ASSIGN_OR_RETURN(axis, NormalizeAxis(init.Describe(), a.value->GetAsInt64(0), init.inputs[0].dims.size()));
  }
  std::unique_ptr<Kernel> out;
  AMP_RETURN_IF_ERROR(DispatchArith(init.inputs[0].dtype, [&](auto tag) {
    out = std::make_unique<CumSumKernel<typename decltype(tag)::type>>(init, axis, exclusive != 0, reverse != 0);
    return Status::Ok();
  }));
  return out;
}

class TriluKernel final : public Kernel {
 public:
  TriluKernel(const KernelInit& init, bool upper, std::optional<int64_t> k)
      : upper_(upper), k_(k), width_(ir::DTypeSize(init.inputs[0].dtype)) {}
  Status Run(KernelContext& ctx) override {
    const int64_t k = k_ ? *k_ : IntAt(ctx.inputs[1], 0);
    const std::vector<int64_t>& dims = ctx.inputs[0].dims;
    const int64_t rows = dims[dims.size() - 2], cols = dims.back();
    const int64_t planes = rows * cols != 0 ? ctx.inputs[0].num_elements() / (rows * cols) : 0;
    const auto* x = static_cast<const std::byte*>(ctx.inputs[0].data);
    auto* y = static_cast<std::byte*>(ctx.outputs[0].data);
    const size_t w = width_;
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t i = 0; i < rows; ++i) {
        // Kept columns of row i: [max(0, i + k), cols) upper, [0, min(cols, i + k + 1)) lower.
        const int64_t lo = upper_ ? std::clamp<int64_t>(i + k, 0, cols) : 0;
        const int64_t hi = upper_ ? cols : std::clamp<int64_t>(i + k + 1, 0, cols);
        std::byte* row = y + static_cast<size_t>((p * rows + i) * cols) * w;
        const std::byte* src = x + static_cast<size_t>((p * rows + i) * cols) * w;
        if (row != src && hi > lo) std::memcpy(row + lo * w, src + lo * w, static_cast<size_t>(hi - lo) * w);
        std::memset(row, 0, static_cast<size_t>(lo) * w);
        std::memset(row + std::max(hi, lo) * w, 0, static_cast<size_t>(cols - std::max(hi, lo)) * w);
      }
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }

 private:
  bool upper_;
  std::optional<int64_t> k_;
  size_t width_;
};

StatusOr<std::unique_ptr<Kernel>> CreateTrilu(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 1, 1));
  if (init.outputs[0].dtype != init.inputs[0].dtype || init.outputs[0].dims != init.inputs[0].dims)
    return init.Error("output type differs from the input's");
  if (init.inputs[0].dims.size() < 2) return init.Error("input must have rank >= 2");
  AMP_ASSIGN_OR_RETURN(int64_t upper, AttrsOf(init).GetInt("upper", 1));
  std::optional<int64_t> k = 0;
  if (init.inputs.size() > 1 && init.inputs[1].present()) {
    const TensorSpec& ks = init.inputs[1];
    if ((ks.dtype != DType::kInt64 && ks.dtype != DType::kInt32) || ks.num_elements() != 1)
      return init.Error("k must be one int64 value");
    k = ks.value ? std::optional<int64_t>(ks.value->GetAsInt64(0)) : std::nullopt;
  }
  return std::unique_ptr<Kernel>(std::make_unique<TriluKernel>(init, upper != 0, k));
}

}  // namespace

void RegisterReferenceCumSumTrilu(Registry& r) {
  r.Add(ReferenceEntry(OpKind::kCumSum, ArithDTypes(), CreateCumSum));
  r.Add(ReferenceEntry(OpKind::kTrilu, {}, CreateTrilu));
}

}  // namespace amptrain::kernels::cpu
