// Reference Cast kernels: every pair of the nine dtypes.
//   float -> integer truncates toward zero and saturates at the integer's
//   range (NaN -> 0, which avoids UB; ONNX leaves it implementation-defined);
//   -> bool is x != 0 (NaN -> true); -> fp16/bf16 rounds to nearest even, and
//   values beyond the fp16 range become +-inf; integer -> narrower integer
//   wraps (two's complement).
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/elementwise.h"

namespace amptrain::kernels::cpu {

namespace {

struct BoolByte {  // bool storage read as a byte, so any nonzero byte is true
  uint8_t v;
};

template <class Fn>
Status DispatchCast(DType t, Fn&& fn) {
  if (t == DType::kBool) return fn(Tag<BoolByte>{});
  return DispatchArith(t, std::forward<Fn>(fn));
}

template <class S>
auto Load(S x) {
  if constexpr (std::is_same_v<S, BoolByte>) return static_cast<uint8_t>(x.v != 0);
  else return static_cast<Acc<S>>(x);
}

template <class I, class F>
I TruncSaturate(F v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<F>(std::numeric_limits<I>::lowest())) return std::numeric_limits<I>::lowest();
  if (v >= static_cast<F>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

template <class D, class V>
D Store(V v) {
  if constexpr (std::is_same_v<D, BoolByte>) return BoolByte{static_cast<uint8_t>(v != V(0))};
  else if constexpr (std::is_integral_v<D> && std::is_floating_point_v<V>) return TruncSaturate<D>(v);
  else if constexpr (std::is_same_v<D, Half> || std::is_same_v<D, BFloat16>) return D(static_cast<float>(v));
  else return static_cast<D>(v);
}

template <class S, class D>
class CastKernel final : public Kernel {
 public:
  explicit CastKernel(int threads) : threads_(threads) {}
  Status Run(KernelContext& ctx) override {
    const S* x = ctx.inputs[0].as<const S>();
    D* y = ctx.outputs[0].as<D>();
    const int64_t n = ctx.outputs[0].num_elements();
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && n >= kParallelMinElements)
    for (int64_t i = 0; i < n; ++i) y[i] = Store<D>(Load(x[i]));
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 && sizeof(S) == sizeof(D) ? 0 : -1; }

 private:
  int threads_;
};

class CopyKernel final : public Kernel {
 public:
  Status Run(KernelContext& ctx) override {
    if (ctx.outputs[0].data != ctx.inputs[0].data && ctx.outputs[0].nbytes() > 0)
      std::memcpy(ctx.outputs[0].data, ctx.inputs[0].data, ctx.outputs[0].nbytes());
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }
};

StatusOr<std::unique_ptr<Kernel>> CreateCast(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 1, 1));
  const DType from = init.inputs[0].dtype, to = init.outputs[0].dtype;
  if (init.outputs[0].dims != init.inputs[0].dims) return init.Error("output dims differ from the input's");
  if (from == to) return std::unique_ptr<Kernel>(std::make_unique<CopyKernel>());
  std::unique_ptr<Kernel> out;
  AMP_RETURN_IF_ERROR(DispatchCast(from, [&](auto src) {
    return DispatchCast(to, [&](auto dst) {
      out = std::make_unique<CastKernel<typename decltype(src)::type, typename decltype(dst)::type>>(Threads(init));
      return Status::Ok();
    });
  }).WithContext(init.Describe()));
  return out;
}

}  // namespace

void RegisterReferenceCast(Registry& r) {
  std::vector<DType> all = ArithDTypes();
  all.push_back(DType::kBool);
  r.Add(ReferenceEntry(OpKind::kCast, all, CreateCast));
}

}  // namespace amptrain::kernels::cpu
