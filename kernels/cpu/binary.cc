// Reference kernels of the broadcasting binary/variadic ops and Where.
//   Add Sub Mul Div Max Min: floats (fp16/bf16 computed in fp32) and
//   int64/int32/int8/uint8; integer math wraps, integer Div truncates toward
//   zero like C and ONNX (x / 0 gives 0 instead of UB). Max/Min propagate NaN.
//   Mod: fmod=0 takes the divisor's sign like Python's % (floats: ir/float_mod.h), fmod=1
//   is C's fmod / % (the dividend's sign); integer x mod 0 gives 0.
//   Pow: base and exponent of any numeric dtype; output has the base's dtype.
//   Equal (also bool), Less, Greater, LessOrEqual, GreaterOrEqual: bool
//   output. And, Or, Xor: bool. PRelu(X, slope): floats. Where(cond, X, Y).
// Broadcast strides are planned at creation (kernels/cpu/broadcast.h).
// Output 0 may overwrite input 0 when they have the same dtype and dims.
#include <cmath>
#include <cstring>

#include "ir/float_mod.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/register.h"

namespace amptrain::kernels::cpu {

namespace {

std::vector<std::vector<int64_t>> DimsOf(const std::vector<TensorSpec>& specs) {
  std::vector<std::vector<int64_t>> dims;
  for (const TensorSpec& s : specs) dims.push_back(s.dims);
  return dims;
}

// out[j] = f(a[j], b[j]) over one broadcast plan; T: input storage, O: output storage.
template <class T, class O, class F>
void RunBinary(const BroadcastPlan& plan, int threads, const T* a, const T* b, O* y, const F& f) {
  using A = Acc<T>;
  const int64_t sa = plan.inner_stride(0), sb = plan.inner_stride(1);
  plan.ForEachRun(threads, [&](int64_t o, const int64_t* off, int64_t n) {
    const T* pa = a + off[0];
    const T* pb = b + off[1];
    O* py = y + o;
    if (sa && sb) {
      for (int64_t j = 0; j < n; ++j) py[j] = static_cast<O>(f(static_cast<A>(pa[j]), static_cast<A>(pb[j])));
    } else if (sa) {
      const A bv = static_cast<A>(pb[0]);
      for (int64_t j = 0; j < n; ++j) py[j] = static_cast<O>(f(static_cast<A>(pa[j]), bv));
    } else if (sb) {
      const A av = static_cast<A>(pa[0]);
      for (int64_t j = 0; j < n; ++j) py[j] = static_cast<O>(f(av, static_cast<A>(pb[j])));
    } else {
      const O v = static_cast<O>(f(static_cast<A>(pa[0]), static_cast<A>(pb[0])));
      for (int64_t j = 0; j < n; ++j) py[j] = v;
    }
  });
}

// A binary op, or a variadic one folded left: y = f(f(x0, x1), x2) ...
template <class T, class O, class F>
class BinaryKernel final : public Kernel {
 public:
  BinaryKernel(const KernelInit& init, F f) : f_(f), threads_(Threads(init)) {
    const std::vector<int64_t>& out = init.outputs[0].dims;
    if (init.inputs.size() == 1) {
      plans_.emplace_back(std::vector<std::vector<int64_t>>{init.inputs[0].dims, init.inputs[0].dims}, out);
    } else {
      plans_.emplace_back(std::vector<std::vector<int64_t>>{init.inputs[0].dims, init.inputs[1].dims}, out);
      for (size_t k = 2; k < init.inputs.size(); ++k)
        plans_.emplace_back(std::vector<std::vector<int64_t>>{out, init.inputs[k].dims}, out);
    }
    inplace_ = init.inputs[0].dtype == init.outputs[0].dtype && init.inputs[0].dims == out;
  }
  Status Run(KernelContext& ctx) override {
    O* y = ctx.outputs[0].as<O>();
    const T* x0 = ctx.inputs[0].as<const T>();
    const T* x1 = ctx.inputs.size() > 1 ? ctx.inputs[1].as<const T>() : x0;
    RunBinary(plans_[0], threads_, x0, x1, y, f_);
    if constexpr (std::is_same_v<T, O>)
      for (size_t k = 2; k < ctx.inputs.size(); ++k) RunBinary(plans_[k - 1], threads_, y, ctx.inputs[k].as<const T>(), y, f_);
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 && inplace_ ? 0 : -1; }

 private:
  F f_;
  int threads_;
  std::vector<BroadcastPlan> plans_;
  bool inplace_ = false;
};

template <class T, class O, class F>
std::unique_ptr<Kernel> MakeBinary(const KernelInit& init, F f) {
  return std::make_unique<BinaryKernel<T, O, F>>(init, f);
}

template <class A>
A Wrapping(A a, A b, OpKind op) {
  using U = std::make_unsigned_t<A>;
  U ua = static_cast<U>(a), ub = static_cast<U>(b);
  return static_cast<A>(op == OpKind::kAdd ? ua + ub : op == OpKind::kSub ? ua - ub : ua * ub);
}

template <class A>
A Divide(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<A>) if (b == A(-1)) return Negate(a);
  }
  return a / b;
}

template <class A>
A Remainder(A a, A b, bool floor_mod) {
  if constexpr (std::is_integral_v<A>) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<A>) {
      if (b == A(-1)) return 0;  // INT_MIN % -1 is UB
      A r = static_cast<A>(a % b);
      return floor_mod && r != 0 && (r < 0) != (b < 0) ? static_cast<A>(r + b) : r;
    }
    return static_cast<A>(a % b);
  } else {
    return floor_mod ? ir::FloorMod(a, b) : std::fmod(a, b);
  }
}

template <class T>
StatusOr<std::unique_ptr<Kernel>> MakeArith(const KernelInit& init) {
  using A = Acc<T>;
  switch (init.op) {
    case OpKind::kAdd:
      if constexpr (std::is_integral_v<A>) return MakeBinary<T, T>(init, [](A a, A b) { return Wrapping(a, b, OpKind::kAdd); });
      else return MakeBinary<T, T>(init, [](A a, A b) { return a + b; });
    case OpKind::kSub:
      if constexpr (std::is_integral_v<A>) return MakeBinary<T, T>(init, [](A a, A b) { return Wrapping(a, b, OpKind::kSub); });
      else return MakeBinary<T, T>(init, [](A a, A b) { return a - b; });
    case OpKind::kMul:
      if constexpr (std::is_integral_v<A>) return MakeBinary<T, T>(init, [](A a, A b) { return Wrapping(a, b, OpKind::kMul); });
      else return MakeBinary<T, T>(init, [](A a, A b) { return a * b; });
    case OpKind::kDiv: return MakeBinary<T, T>(init, [](A a, A b) { return Divide(a, b); });
    case OpKind::kMod: {
      AMP_ASSIGN_OR_RETURN(int64_t fmod, AttrsOf(init).GetInt("fmod", 0));
      if (fmod != 0 && fmod != 1) return init.Error("attribute fmod is ", fmod, ", expected 0 or 1");
      return MakeBinary<T, T>(init, [floor_mod = fmod == 0](A a, A b) { return Remainder(a, b, floor_mod); });
    }
    case OpKind::kMax: return MakeBinary<T, T>(init, [](A a, A b) { return a != a || a > b ? a : b; });
    case OpKind::kMin: return MakeBinary<T, T>(init, [](A a, A b) { return a != a || a < b ? a : b; });
    case OpKind::kLess: return MakeBinary<T, uint8_t>(init, [](A a, A b) { return a < b; });
    case OpKind::kGreater: return MakeBinary<T, uint8_t>(init, [](A a, A b) { return a > b; });
    case OpKind::kEqual: return MakeBinary<T, uint8_t>(init, [](A a, A b) { return a == b; });
    case OpKind::kLessOrEqual: return MakeBinary<T, uint8_t>(init, [](A a, A b) { return a <= b; });
    case OpKind::kGreaterOrEqual: return MakeBinary<T, uint8_t>(init, [](A a, A b) { return a >= b; });
    // Bools are bytes 0/1 here.
    case OpKind::kAnd: return MakeBinary<T, uint8_t>(init, [](A a, A b) { return a != A(0) && b != A(0); });
    case OpKind::kOr: return MakeBinary<T, uint8_t>(init, [](A a, A b) { return a != A(0) || b != A(0); });
    case OpKind::kXor: return MakeBinary<T, uint8_t>(init, [](A a, A b) { return (a != A(0)) != (b != A(0)); });
    case OpKind::kPRelu:  // NaN stays NaN
      if constexpr (std::is_floating_point_v<A>) return MakeBinary<T, T>(init, [](A x, A slope) { return x < A(0) ? slope * x : x; });
      else return init.Error("PRelu takes floats");
    default: return Internal(init.Describe(), ": not a binary op");
  }
}

// Where(cond, X, Y): one plan over three inputs.
template <class T>
class WhereKernel final : public Kernel {
 public:
  explicit WhereKernel(const KernelInit& init)
      : plan_(DimsOf(init.inputs), init.outputs[0].dims), threads_(Threads(init)),
        inplace_(init.inputs[0].dtype == init.outputs[0].dtype && init.inputs[0].dims == init.outputs[0].dims) {}
  Status Run(KernelContext& ctx) override {
    const uint8_t* c = ctx.inputs[0].as<const uint8_t>();
    const T* x = ctx.inputs[1].as<const T>();
    const T* y = ctx.inputs[2].as<const T>();
    T* out = ctx.outputs[0].as<T>();
    const int64_t sc = plan_.inner_stride(0), sx = plan_.inner_stride(1), sy = plan_.inner_stride(2);
    plan_.ForEachRun(threads_, [&](int64_t o, const int64_t* off, int64_t n) {
      for (int64_t j = 0; j < n; ++j)
        out[o + j] = c[off[0] + j * sc] ? x[off[1] + j * sx] : y[off[2] + j * sy];
    });
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 && inplace_ ? 0 : -1; }

 private:
  BroadcastPlan plan_;
  int threads_;
  bool inplace_;
};

template <class T, class E>
class PowKernel final : public Kernel {
 public:
  explicit PowKernel(const KernelInit& init) : plan_(DimsOf(init.inputs), init.outputs[0].dims), threads_(Threads(init)),
        inplace_(init.inputs[0].dims == init.outputs[0].dims) {}
  Status Run(KernelContext& ctx) override {
    const T* a = ctx.inputs[0].as<const T>();
    const E* b = ctx.inputs[1].as<const E>();
    T* y = ctx.outputs[0].as<T>();
    const int64_t sa = plan_.inner_stride(0), sb = plan_.inner_stride(1);
    plan_.ForEachRun(threads_, [&](int64_t o, const int64_t* off, int64_t n) {
      for (int64_t j = 0; j < n; ++j) y[o + j] = Pow(a[off[0] + j * sa], b[off[1] + j * sb]);
    });
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 && inplace_ ? 0 : -1; }

 private:
  static T Pow(T base, E exponent) {
    using A = Acc<T>;
    if constexpr (std::is_integral_v<A> && std::is_integral_v<Acc<E>>) {
      int64_t x = base, e = exponent;
      if (e < 0) return static_cast<T>(x == 1 ? 1 : x == -1 ? (e % 2 ? -1 : 1) : 0);
      uint64_t r = 1, p = static_cast<uint64_t>(x);  // wraps like numpy's integer power
      for (; e > 0; e >>= 1, p *= p)
        if (e & 1) r *= p;
      return static_cast<T>(static_cast<int64_t>(r));
    } else if constexpr (std::is_integral_v<A>) {
      double v = std::trunc(std::pow(static_cast<double>(base), static_cast<double>(static_cast<Acc<E>>(exponent))));
      if (!(v >= static_cast<double>(std::numeric_limits<T>::lowest()) && v <= static_cast<double>(std::numeric_limits<T>::max())))
        return 0;
      return static_cast<T>(v);
    } else {
      A e = static_cast<A>(static_cast<Acc<E>>(exponent)), x = static_cast<A>(base);
      return static_cast<T>(e == A(2) ? x * x : std::pow(x, e));
    }
  }
  BroadcastPlan plan_;
  int threads_;
  bool inplace_;
};

Status CheckOutput(const KernelInit& init, size_t min_inputs) {
  AMP_RETURN_IF_ERROR(CheckArity(init, min_inputs, 1));
  for (const TensorSpec& in : init.inputs)
    if (in.dims.size() > init.outputs[0].dims.size()) return init.Error("an input has a higher rank than the output");
  return Status::Ok();
}

StatusOr<std::unique_ptr<Kernel>> CreateArith(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckOutput(init, init.op == OpKind::kMax || init.op == OpKind::kMin ? 1 : 2));
  DType t = init.inputs[0].dtype;
  for (const TensorSpec& in : init.inputs)
    if (in.dtype != t) return init.Error("inputs have different dtypes");
  if (t == DType::kBool) t = DType::kUInt8;  // Equal on bools compares bytes
  StatusOr<std::unique_ptr<Kernel>> out = Internal("unset");
  AMP_RETURN_IF_ERROR(DispatchArith(t, [&](auto tag) {
    out = MakeArith<typename decltype(tag)::type>(init);
    return Status::Ok();
  }));
  return out;
}

StatusOr<std::unique_ptr<Kernel>> CreateWhere(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckOutput(init, 3));
  if (init.inputs[0].dtype != DType::kBool || init.inputs[1].dtype != init.inputs[2].dtype)
    return init.Error("expects a bool condition and X, Y of one dtype");
  std::unique_ptr<Kernel> out;
  AMP_RETURN_IF_ERROR(DispatchAll(init.inputs[1].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using S = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;
    out = std::make_unique<WhereKernel<S>>(init);
    return Status::Ok();
  }));
  return out;
}

StatusOr<std::unique_ptr<Kernel>> CreatePow(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckOutput(init, 2));
  std::unique_ptr<Kernel> out;
  AMP_RETURN_IF_ERROR(DispatchArith(init.inputs[0].dtype, [&](auto base) {
    return DispatchArith(init.inputs[1].dtype, [&](auto exponent) {
      out = std::make_unique<PowKernel<typename decltype(base)::type, typename decltype(exponent)::type>>(init);
      return Status::Ok();
    });
  }).WithContext(init.Describe()));
  return out;
}

}  // namespace

void RegisterReferenceBinary(Registry& r) {
  for (OpKind op : {OpKind::kSub, OpKind::kMul, OpKind::kDiv, OpKind::kMod, OpKind::kMax, OpKind::kMin,
                    OpKind::kLess, OpKind::kGreater, OpKind::kLessOrEqual, OpKind::kGreaterOrEqual})
    r.Add(ReferenceEntry(op, ArithDTypes(), CreateArith));
  for (OpKind op : {OpKind::kAnd, OpKind::kOr, OpKind::kXor}) r.Add(ReferenceEntry(op, {DType::kBool}, CreateArith));
  r.Add(ReferenceEntry(OpKind::kPRelu, FloatDTypes(), CreateArith));
  // Add joins residual branches and sums the gradients that meet in training.
  r.Add(ElementwiseChannelsLast(ReferenceEntry(OpKind::kAdd, ArithDTypes(), CreateArith), 0b11, 0b1));
  std::vector<DType> with_bool = ArithDTypes();
  with_bool.push_back(DType::kBool);
  r.Add(ReferenceEntry(OpKind::kEqual, with_bool, CreateArith));
  r.Add(ReferenceEntry(OpKind::kWhere, with_bool, CreateWhere));
  r.Add(ReferenceEntry(OpKind::kPow, ArithDTypes(), CreatePow));
}

}  // namespace amptrain::kernels::cpu
