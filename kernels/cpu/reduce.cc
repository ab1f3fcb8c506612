// Reference kernels of ReduceSum, ReduceMean, ReduceMax, ReduceMin,
// ReduceProd, ReduceLogSumExp and ReduceL2.
//   Input 1 (optional int64 axes) is read at creation when its value is known,
//   otherwise at every run. Empty axes reduce everything, or copy the input
//   when noop_with_empty_axes=1. Accumulation is in Wide<T> (double for
//   floats, int64 for int32/int64). Empty reductions give 0 (Sum), NaN (Mean
//   of floats; 0 for integers), -inf / the type's lowest value (Max) and 0
//   (L2). ReduceL2 sums the squares in Wide<T> and rounds the square root
//   once (integers: truncated, as ONNX's reference does).
//   ReduceMax and ReduceMin propagate NaN and also accept bool. ReduceProd:
//   an empty product is 1; integers wrap. ReduceLogSumExp (floats): a first
//   pass takes each output's maximum m (exact in T), the second sums
//   e^(x - m) in Wide<T> and gives m + log(sum), so no exponential overflows;
//   an empty reduction gives -inf.
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/register.h"

namespace amptrain::kernels::cpu {

namespace {

// Input dims with adjacent dims of the same kind (kept / reduced) merged and
// size-1 dims dropped. noop: the output is a copy of the input.
struct ReducePlan {
  std::vector<int64_t> dims;
  std::vector<bool> reduced;
  int64_t outputs = 1, count = 1;  // output elements, elements per output
  bool noop = false;
};

StatusOr<ReducePlan> MakePlan(const std::string& who, const std::vector<int64_t>& in_dims, const int64_t* axes,
                              size_t num_axes, bool noop_with_empty_axes) {
  ReducePlan p;
  const int64_t rank = static_cast<int64_t>(in_dims.size());
  std::vector<bool> reduce(in_dims.size(), num_axes == 0);
  if (num_axes == 0 && noop_with_empty_axes) p.noop = true;
  for (size_t i = 0; i < num_axes; ++i) {
    int64_t a = axes[i];
    if (a < -rank || a >= rank)
      return Status(StatusCode::kOutOfRange, StrCat(who, ": axis ", a, " is out of range for rank ", rank));
    reduce[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  }
  for (size_t d = 0; d < in_dims.size(); ++d) {
    if (p.noop) break;
    (reduce[d] ? p.count : p.outputs) *= in_dims[d];
    if (in_dims[d] == 1) continue;
    if (!p.dims.empty() && p.reduced.back() == reduce[d]) p.dims.back() *= in_dims[d];
    else {
      p.dims.push_back(in_dims[d]);
      p.reduced.push_back(reduce[d]);
    }
  }
  return p;
}

enum class Kind { kSum, kMean, kMax, kMin, kProd, kLogSumExp, kL2 };

template <class T>
class ReduceKernel final : public Kernel {
 public:
  using W = Wide<T>;
  ReduceKernel(const KernelInit& init, Kind kind, bool noop_with_empty_axes, std::optional<ReducePlan> plan)
      : who_(init.Describe()), kind_(kind), noop_with_empty_axes_(noop_with_empty_axes), plan_(std::move(plan)),
        threads_(Threads(init)) {}

  Status Run(KernelContext& ctx) override {
    ReducePlan runtime;
    const ReducePlan* p = plan_ ? &*plan_ : nullptr;
    if (!p) {
      const ir::TensorView& axes = ctx.inputs[1];
      AMP_ASSIGN_OR_RETURN(runtime, MakePlan(who_, ctx.inputs[0].dims, axes.as<const int64_t>(),
                                             static_cast<size_t>(axes.num_elements()), noop_with_empty_axes_));
      p = &runtime;
    }
    const T* x = ctx.inputs[0].as<const T>();
    T* y = ctx.outputs[0].as<T>();
    if (p->noop) {
      if (y != x && ctx.outputs[0].nbytes()) std::memcpy(y, x, ctx.outputs[0].nbytes());
      return Status::Ok();
    }
    if (ctx.outputs[0].num_elements() != p->outputs)
      return InvalidArgument(who_, ": output has ", ctx.outputs[0].num_elements(), " elements, the reduction gives ", p->outputs);
    if (p->outputs == 0) return Status::Ok();
    const T* shift = nullptr;
    if (kind_ == Kind::kLogSumExp) {  // pass 1: the maxima, into the output
      ReduceOnce(*p, Kind::kMax, x, y, nullptr);
      shift = y;
    }
    ReduceOnce(*p, kind_, x, y, shift);
    return Status::Ok();
  }

 private:
  // One pass of `kind` over the plan; shift: per-output maxima (LogSumExp).
  void ReduceOnce(const ReducePlan& p, Kind kind, const T* x, T* y, const T* shift) const {
    if (!p.dims.empty() && !p.reduced.back()) ReduceMiddle(p, kind, x, y, shift);
    else ReduceTrailing(p, kind, x, y, shift);
  }
  static W Init(Kind kind) {
    if (kind == Kind::kProd) return W(1);
    if (kind != Kind::kMax && kind != Kind::kMin) return W(0);
    const bool max = kind == Kind::kMax;
    if constexpr (std::numeric_limits<W>::has_infinity)
      return max ? -std::numeric_limits<W>::infinity() : std::numeric_limits<W>::infinity();
    else return static_cast<W>(max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max());
  }
  // The LogSumExp shift of an output: its maximum, or 0 where that is not
  // finite (all -inf: the sum is 0 and the result -inf; +inf: the result +inf).
  static W Shift(const T* shift, int64_t o) {
    if constexpr (std::is_floating_point_v<W>) {
      if (!shift) return W(0);
      const W m = static_cast<W>(static_cast<Acc<T>>(shift[o]));
      return std::isfinite(m) ? m : W(0);
    } else {
      return W(0);
    }
  }
  static void Combine(Kind kind, W& acc, W v, W shift) {
    if (kind == Kind::kLogSumExp) {
      if constexpr (std::is_floating_point_v<W>) acc += std::exp(v - shift);
    } else if (kind == Kind::kProd) {
      if constexpr (std::is_integral_v<W>) acc = static_cast<W>(static_cast<uint64_t>(acc) * static_cast<uint64_t>(v));
      else acc *= v;
    } else if (kind == Kind::kMin) {
      if (v < acc || v != v) {
        if (acc == acc) acc = v;  // NaN sticks
      }
    } else if (kind == Kind::kL2) {
      if constexpr (std::is_integral_v<W>)
        acc = static_cast<W>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v) * static_cast<uint64_t>(v));
      else acc += v * v;
    } else if (kind != Kind::kMax) {
      if constexpr (std::is_integral_v<W>) acc = static_cast<W>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v));
      else acc += v;
    } else if (v > acc || v != v) {
      if (acc == acc) acc = v;  // NaN sticks
    }
  }
  static T Finish(Kind kind, W acc, int64_t count, W shift) {
    if (kind == Kind::kLogSumExp) {
      if constexpr (std::is_floating_point_v<W>) return static_cast<T>(static_cast<Acc<T>>(shift + std::log(acc)));
    }
    if (kind == Kind::kL2) {
      if constexpr (std::is_integral_v<W>) return static_cast<T>(std::sqrt(static_cast<double>(acc)));
      else return static_cast<T>(static_cast<Acc<T>>(std::sqrt(acc)));
    }
    if (kind == Kind::kMean) {
      if constexpr (std::is_integral_v<W>) acc = count ? acc / count : 0;
      else acc = acc / static_cast<W>(count);
    }
    return static_cast<T>(static_cast<Acc<T>>(acc));
  }

  // Collapsed dims end with a reduced group: every output reduces a set of
  // contiguous runs; an odometer walks the outer dims of the reduced space.
  void ReduceTrailing(const ReducePlan& p, Kind kind, const T* x, T* y, const T* shift) const {
    const size_t rank = p.dims.size();
    std::vector<int64_t> stride(rank, 1);
    for (size_t d = rank; d-- > 1;) stride[d - 1] = stride[d] * p.dims[d];
    const int64_t inner = rank ? p.dims.back() : 1;
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && p.outputs * p.count >= kParallelMinElements)
    for (int64_t o = 0; o < p.outputs; ++o) {
      int64_t base = 0, rem = o;
      for (size_t d = rank; d-- > 0;)
        if (!p.reduced[d]) {
          base += rem % p.dims[d] * stride[d];
          rem /= p.dims[d];
        }
      W acc = Init(kind);
      const W s = Shift(shift, o);
      for (int64_t run = 0; inner > 0 && run < p.count / inner; ++run) {
        int64_t off = base, r = run;
        for (size_t d = rank ? rank - 1 : 0; d-- > 0;)
          if (p.reduced[d]) {
            off += r % p.dims[d] * stride[d];
            r /= p.dims[d];
          }
        for (int64_t j = 0; j < inner; ++j) Combine(kind, acc, static_cast<W>(static_cast<Acc<T>>(x[off + j])), s);
      }
      y[o] = Finish(kind, acc, p.count, s);
    }
  }

  // Collapsed dims end with a kept group of K elements: accumulate whole
  // K-vectors, reading the input in order ([N, C] summed over N, ...).
  void ReduceMiddle(const ReducePlan& p, Kind kind, const T* x, T* y, const T* shift) const {
    const int64_t k = p.dims.back();
    const int64_t rows = p.outputs / k;   // kept prefix combinations
    const int64_t per_row = p.count;      // reduced vectors per output row
    ReducePlan prefix = p;                // the plan without the last kept group
    prefix.dims.pop_back();
    prefix.reduced.pop_back();
    const size_t rank = prefix.dims.size();
    std::vector<int64_t> stride(rank, k);
    for (size_t d = rank; d-- > 1;) stride[d - 1] = stride[d] * prefix.dims[d];
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && rows > 1 && p.outputs * p.count >= kParallelMinElements)
    for (int64_t row = 0; row < rows; ++row) {
      std::vector<W> acc(static_cast<size_t>(k), Init(kind));
      int64_t base = 0, rem = row;
      for (size_t d = rank; d-- > 0;)
        if (!prefix.reduced[d]) {
          base += rem % prefix.dims[d] * stride[d];
          rem /= prefix.dims[d];
        }
      for (int64_t r = 0; r < per_row; ++r) {
        int64_t off = base, q = r;
        for (size_t d = rank; d-- > 0;)
          if (prefix.reduced[d]) {
            off += q % prefix.dims[d] * stride[d];
            q /= prefix.dims[d];
          }
        for (int64_t j = 0; j < k; ++j)
          Combine(kind, acc[static_cast<size_t>(j)], static_cast<W>(static_cast<Acc<T>>(x[off + j])), Shift(shift, row * k + j));
      }
      for (int64_t j = 0; j < k; ++j)
        y[row * k + j] = Finish(kind, acc[static_cast<size_t>(j)], per_row, Shift(shift, row * k + j));
    }
  }

  std::string who_;  // "ReduceSum node 'n' (float32)" for errors
  Kind kind_;
  bool noop_with_empty_axes_;
  std::optional<ReducePlan> plan_;  // nullopt: axes known only at run time
  int threads_;
};

StatusOr<std::unique_ptr<Kernel>> CreateReduce(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 1, 1));
  const ir::Attributes& attrs = AttrsOf(init);
  AMP_ASSIGN_OR_RETURN(int64_t noop, attrs.GetInt("noop_with_empty_axes", 0));
  const Kind kind = init.op == OpKind::kReduceSum         ? Kind::kSum
                    : init.op == OpKind::kReduceMean      ? Kind::kMean
                    : init.op == OpKind::kReduceL2        ? Kind::kL2
                    : init.op == OpKind::kReduceMin       ? Kind::kMin
                    : init.op == OpKind::kReduceProd      ? Kind::kProd
                    : init.op == OpKind::kReduceLogSumExp ? Kind::kLogSumExp
                                                          : Kind::kMax;
  if (init.outputs[0].dtype != init.inputs[0].dtype) return init.Error("output dtype differs from the input's");
  std::optional<ReducePlan> plan;
  const bool has_axes = init.inputs.size() > 1 && init.inputs[1].present();
  if (has_axes && init.inputs[1].dtype != DType::kInt64) return init.Error("axes must be int64");
  if (!has_axes || init.inputs[1].value || init.inputs[1].num_elements() == 0) {
    std::vector<int64_t> axes = has_axes && init.inputs[1].value ? init.inputs[1].value->ToInt64Vector() : std::vector<int64_t>{};
    AMP_ASSIGN_OR_RETURN(ReducePlan p, MakePlan(init.Describe(), init.inputs[0].dims, axes.data(), axes.size(), noop != 0));
    if (!p.noop && p.outputs != init.outputs[0].num_elements())
      return init.Error("output has ", init.outputs[0].num_elements(), " elements, the reduction gives ", p.outputs);
    plan = std::move(p);
  }
  DType t = init.inputs[0].dtype == DType::kBool ? DType::kUInt8 : init.inputs[0].dtype;
  std::unique_ptr<Kernel> out;
  AMP_RETURN_IF_ERROR(DispatchArith(t, [&](auto tag) {
    out = std::make_unique<ReduceKernel<typename decltype(tag)::type>>(init, kind, noop != 0, plan);
    return Status::Ok();
  }));
  return out;
}

}  // namespace

void RegisterReferenceReduce(Registry& r) {
  r.Add(ReferenceEntry(OpKind::kReduceSum, ArithDTypes(), CreateReduce));
  r.Add(ReferenceEntry(OpKind::kReduceMean, ArithDTypes(), CreateReduce));
  r.Add(ReferenceEntry(OpKind::kReduceL2, ArithDTypes(), CreateReduce));
  std::vector<DType> with_bool = ArithDTypes();
  with_bool.push_back(DType::kBool);
  r.Add(ReferenceEntry(OpKind::kReduceMax, with_bool, CreateReduce));
  r.Add(ReferenceEntry(OpKind::kReduceMin, with_bool, CreateReduce));
  r.Add(ReferenceEntry(OpKind::kReduceProd, ArithDTypes(), CreateReduce));
  r.Add(ReferenceEntry(OpKind::kReduceLogSumExp, FloatDTypes(), CreateReduce));
  RegisterReferenceNorm(r);
}

}  // namespace amptrain::kernels::cpu
