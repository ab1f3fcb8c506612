// Reference kernels of the unary elementwise ops, Not and Identity.
//   y[i] = f(x[i]), computed in Acc<T> (float for fp16/bf16, stored with
//   round-to-nearest-even). Output 0 may overwrite input 0.
// Float ops: Sigmoid Tanh Erf Gelu Sqrt Exp Log Reciprocal LeakyRelu
// HardSigmoid HardSwish Sin Cos Softplus Elu Selu Celu Mish.
// Float or integer: Relu Neg Abs Clip. Not: bool. IsNaN, IsInf: float -> bool. Identity: any dtype.
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/register.h"

namespace amptrain::kernels::cpu {

namespace {

template <class T, class F>
class MapKernel final : public Kernel {
 public:
  MapKernel(F f, int threads) : f_(f), threads_(threads) {}
  Status Run(KernelContext& ctx) override {
    const T* x = ctx.inputs[0].as<const T>();
    T* y = ctx.outputs[0].as<T>();
    const int64_t n = ctx.outputs[0].num_elements();
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && n >= kParallelMinElements)
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(f_(static_cast<Acc<T>>(x[i])));
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }

 private:
  F f_;
  int threads_;
};

template <class T, class F>
std::unique_ptr<Kernel> Map(F f, int threads) {
  return std::make_unique<MapKernel<T, F>>(f, threads);
}

template <class A>
A Sigmoid(A x) {
  if (x >= A(0)) return A(1) / (A(1) + std::exp(-x));
  A e = std::exp(x);
  return e / (A(1) + e);
}

// log(1 + e^x) without overflow: x + log1p(e^-x) for x > 0.
template <class A>
A Softplus(A x) {
  return x > A(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

// max(0, min(1, t)); NaN stays NaN.
template <class A>
A Clamp01(A t) {
  t = t < A(0) ? A(0) : t;
  return t > A(1) ? A(1) : t;
}

template <class T>
StatusOr<std::unique_ptr<Kernel>> MakeFloatMap(const KernelInit& init) {
  using A = Acc<T>;
  const int th = Threads(init);
  const ir::Attributes& attrs = AttrsOf(init);
  switch (init.op) {
    case OpKind::kSigmoid: return Map<T>([](A x) { return Sigmoid(x); }, th);
    case OpKind::kSilu: return Map<T>([](A x) { return x * Sigmoid(x); }, th);
    case OpKind::kTanh: return Map<T>([](A x) { return std::tanh(x); }, th);
    case OpKind::kErf: return Map<T>([](A x) { return std::erf(x); }, th);
    case OpKind::kSqrt: return Map<T>([](A x) { return std::sqrt(x); }, th);
    case OpKind::kFloor: return Map<T>([](A x) { return std::floor(x); }, th);  // exact in every float type
    case OpKind::kCeil: return Map<T>([](A x) { return std::ceil(x); }, th);
    case OpKind::kExp: return Map<T>([](A x) { return std::exp(x); }, th);
    case OpKind::kLog: return Map<T>([](A x) { return std::log(x); }, th);
    case OpKind::kReciprocal: return Map<T>([](A x) { return A(1) / x; }, th);
    case OpKind::kLeakyRelu: {
      AMP_ASSIGN_OR_RETURN(float alpha, attrs.GetFloat("alpha", 0.01f));
      return Map<T>([a = A(alpha)](A x) { return x < A(0) ? a * x : x; }, th);
    }
    case OpKind::kHardSigmoid: {  // max(0, min(1, alpha x + beta))
      AMP_ASSIGN_OR_RETURN(float alpha, attrs.GetFloat("alpha", 0.2f));
      AMP_ASSIGN_OR_RETURN(float beta, attrs.GetFloat("beta", 0.5f));
      return Map<T>([a = A(alpha), b = A(beta)](A x) { return Clamp01(a * x + b); }, th);
    }
    // x HardSigmoid(x) with ONNX's alpha = 1/6, beta = 1/2; -inf gives NaN (-inf * 0) as in PyTorch.
    case OpKind::kHardSwish: return Map<T>([](A x) { return x * Clamp01(x * A(1.0 / 6.0) + A(0.5)); }, th);
    case OpKind::kSin: return Map<T>([](A x) { return std::sin(x); }, th);
    case OpKind::kCos: return Map<T>([](A x) { return std::cos(x); }, th);
    case OpKind::kTan: return Map<T>([](A x) { return std::tan(x); }, th);
    case OpKind::kAsin: return Map<T>([](A x) { return std::asin(x); }, th);
    case OpKind::kAcos: return Map<T>([](A x) { return std::acos(x); }, th);
    case OpKind::kAtan: return Map<T>([](A x) { return std::atan(x); }, th);
    case OpKind::kSinh: return Map<T>([](A x) { return std::sinh(x); }, th);
    case OpKind::kCosh: return Map<T>([](A x) { return std::cosh(x); }, th);
    case OpKind::kAsinh: return Map<T>([](A x) { return std::asinh(x); }, th);
    case OpKind::kAcosh: return Map<T>([](A x) { return std::acosh(x); }, th);
    case OpKind::kAtanh: return Map<T>([](A x) { return std::atanh(x); }, th);
    // Half to even in the default rounding mode; exact in every float type.
    case OpKind::kRound: return Map<T>([](A x) { return std::nearbyint(x); }, th);
    case OpKind::kSoftplus: return Map<T>([](A x) { return Softplus(x); }, th);
    case OpKind::kMish: return Map<T>([](A x) { return x * std::tanh(Softplus(x)); }, th);
    // The exponential units take expm1 below 0: exact near 0, where e^x - 1 cancels.
    case OpKind::kElu: {
      AMP_ASSIGN_OR_RETURN(float alpha, attrs.GetFloat("alpha", 1.0f));
      return Map<T>([a = A(alpha)](A x) { return x >= A(0) ? x : a * std::expm1(x); }, th);
    }
    case OpKind::kCelu: {
      AMP_ASSIGN_OR_RETURN(float alpha, attrs.GetFloat("alpha", 1.0f));
      return Map<T>([a = A(alpha)](A x) { return x > A(0) ? x : a * std::expm1(x / a); }, th);
    }
    case OpKind::kSelu: {
      AMP_ASSIGN_OR_RETURN(float alpha, attrs.GetFloat("alpha", 1.67326319217681884765625f));
      AMP_ASSIGN_OR_RETURN(float gamma, attrs.GetFloat("gamma", 1.05070102214813232421875f));
      return Map<T>([a = A(alpha), g = A(gamma)](A x) { return x > A(0) ? g * x : g * (a * std::expm1(x)); }, th);
    }
    case OpKind::kGelu: {
      AMP_ASSIGN_OR_RETURN(std::string approximate, attrs.GetString("approximate", "none"));
      if (approximate == "tanh")
        return Map<T>([](A x) {
          const A k = A(0.7978845608028654);  // sqrt(2 / pi)
          return A(0.5) * x * (A(1) + std::tanh(k * (x + A(0.044715) * x * x * x)));
        }, th);
      if (approximate != "none") return init.Error("unsupported approximate='", approximate, "'");
      return Map<T>([](A x) { return A(0.5) * x * (A(1) + std::erf(x * A(0.7071067811865476))); }, th);
    }
    default: return Internal(init.Describe(), ": not a float unary op");
  }
}

template <class T>
StatusOr<std::unique_ptr<Kernel>> MakeArithMap(const KernelInit& init) {
  using A = Acc<T>;
  const int th = Threads(init);
  switch (init.op) {
    case OpKind::kRelu: return Map<T>([](A x) { return x < A(0) ? A(0) : x; }, th);  // NaN stays NaN
    case OpKind::kNeg: return Map<T>([](A x) { return Negate(x); }, th);
    case OpKind::kAbs: return Map<T>([](A x) { return x < A(0) ? Negate(x) : x; }, th);
    // -1, 0 or 1; zero keeps its sign and NaN stays NaN (x itself is returned for both).
    case OpKind::kSign: return Map<T>([](A x) { return x > A(0) ? A(1) : x < A(0) ? Negate(A(1)) : x; }, th);
    default: return Internal(init.Describe(), ": not an arithmetic unary op");
  }
}

// Clip(x, min?, max?): bounds are read at run time (they may be computed);
// min > max gives max everywhere, NaN stays NaN.
template <class T>
class ClipKernel final : public Kernel {
 public:
  explicit ClipKernel(int threads) : threads_(threads) {}
  Status Run(KernelContext& ctx) override {
    using A = Acc<T>;
    A lo = std::numeric_limits<A>::lowest(), hi = std::numeric_limits<A>::max();
    if constexpr (std::numeric_limits<A>::has_infinity) {
      lo = -std::numeric_limits<A>::infinity();
      hi = std::numeric_limits<A>::infinity();
    }
    if (ctx.inputs.size() > 1 && ctx.inputs[1].data) lo = static_cast<A>(ctx.inputs[1].as<const T>()[0]);
    if (ctx.inputs.size() > 2 && ctx.inputs[2].data) hi = static_cast<A>(ctx.inputs[2].as<const T>()[0]);
    const T* x = ctx.inputs[0].as<const T>();
    T* y = ctx.outputs[0].as<T>();
    const int64_t n = ctx.outputs[0].num_elements();
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && n >= kParallelMinElements)
    for (int64_t i = 0; i < n; ++i) {
      A v = static_cast<A>(x[i]);
      v = v < lo ? lo : v;
      y[i] = static_cast<T>(v > hi ? hi : v);
    }
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }

 private:
  int threads_;
};

class NotKernel final : public Kernel {
 public:
  Status Run(KernelContext& ctx) override {
    const uint8_t* x = ctx.inputs[0].as<const uint8_t>();
    uint8_t* y = ctx.outputs[0].as<uint8_t>();
    for (int64_t i = 0, n = ctx.outputs[0].num_elements(); i < n; ++i) y[i] = x[i] ? 0 : 1;
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }
};

// IsNaN / IsInf: float T -> bool (one byte per element).
template <class T>
class FloatClassKernel final : public Kernel {
 public:
  FloatClassKernel(OpKind op, bool negative, bool positive) : op_(op), negative_(negative), positive_(positive) {}
  Status Run(KernelContext& ctx) override {
    const T* x = ctx.inputs[0].as<const T>();
    uint8_t* y = ctx.outputs[0].as<uint8_t>();
    const int64_t n = ctx.outputs[0].num_elements();
    if (op_ == OpKind::kIsNaN) {
      for (int64_t i = 0; i < n; ++i) y[i] = std::isnan(static_cast<Acc<T>>(x[i]));
    } else {
      for (int64_t i = 0; i < n; ++i) {
        const Acc<T> v = static_cast<Acc<T>>(x[i]);
        y[i] = std::isinf(v) && (v > 0 ? positive_ : negative_);
      }
    }
    return Status::Ok();
  }

 private:
  OpKind op_;
  bool negative_, positive_;
};

StatusOr<std::unique_ptr<Kernel>> CreateFloatClass(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 1, 1));
  if (init.outputs[0].dtype != DType::kBool || init.outputs[0].dims != init.inputs[0].dims)
    return init.Error("output must be bool of the input's shape");
  const ir::Attributes& attrs = AttrsOf(init);
  AMP_ASSIGN_OR_RETURN(int64_t negative, attrs.GetInt("detect_negative", 1));
  AMP_ASSIGN_OR_RETURN(int64_t positive, attrs.GetInt("detect_positive", 1));
  StatusOr<std::unique_ptr<Kernel>> out = Internal("unset");
  AMP_RETURN_IF_ERROR(DispatchFloat(init.inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    out = std::unique_ptr<Kernel>(std::make_unique<FloatClassKernel<T>>(init.op, negative != 0, positive != 0));
    return Status::Ok();
  }));
  return out;
}

class IdentityKernel final : public Kernel {
 public:
  Status Run(KernelContext& ctx) override {
    if (ctx.outputs[0].data != ctx.inputs[0].data && ctx.outputs[0].nbytes() > 0)
      std::memcpy(ctx.outputs[0].data, ctx.inputs[0].data, ctx.outputs[0].nbytes());
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }
};

// Output 0 must have input 0's dtype and dims.
Status CheckSameType(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 1, 1));
  if (init.outputs[0].dtype != init.inputs[0].dtype || init.outputs[0].dims != init.inputs[0].dims)
    return init.Error("output type differs from the input's");
  return Status::Ok();
}

StatusOr<std::unique_ptr<Kernel>> CreateFloat(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckSameType(init));
  StatusOr<std::unique_ptr<Kernel>> out = Internal("unset");
  AMP_RETURN_IF_ERROR(DispatchFloat(init.inputs[0].dtype, [&](auto tag) {
    out = MakeFloatMap<typename decltype(tag)::type>(init);
    return Status::Ok();
  }));
  return out;
}

StatusOr<std::unique_ptr<Kernel>> CreateArith(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckSameType(init));
  StatusOr<std::unique_ptr<Kernel>> out = Internal("unset");
  AMP_RETURN_IF_ERROR(DispatchArith(init.inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (init.op == OpKind::kClip) out = std::unique_ptr<Kernel>(std::make_unique<ClipKernel<T>>(Threads(init)));
    else out = MakeArithMap<T>(init);
    return Status::Ok();
  }));
  return out;
}

}  // namespace

void RegisterReferenceUnary(Registry& r) {
  for (OpKind op : {OpKind::kSigmoid, OpKind::kSilu, OpKind::kTanh, OpKind::kErf, OpKind::kGelu, OpKind::kSqrt, OpKind::kFloor,
                    OpKind::kCeil, OpKind::kExp,
                    OpKind::kLog, OpKind::kReciprocal, OpKind::kLeakyRelu, OpKind::kHardSigmoid, OpKind::kHardSwish,
                    OpKind::kSin, OpKind::kCos, OpKind::kTan, OpKind::kAsin, OpKind::kAcos, OpKind::kAtan,
                    OpKind::kSinh, OpKind::kCosh, OpKind::kAsinh, OpKind::kAcosh, OpKind::kAtanh, OpKind::kRound,
                    OpKind::kSoftplus, OpKind::kMish, OpKind::kElu, OpKind::kCelu,
                    OpKind::kSelu})
    r.Add(ReferenceEntry(op, FloatDTypes(), CreateFloat));
  std::vector<DType> signed_types = FloatDTypes();
  signed_types.insert(signed_types.end(), {DType::kInt64, DType::kInt32, DType::kInt8});
  r.Add(ElementwiseChannelsLast(ReferenceEntry(OpKind::kRelu, signed_types, CreateArith), 0b1, 0b1));
  r.Add(ReferenceEntry(OpKind::kNeg, signed_types, CreateArith));
  r.Add(ReferenceEntry(OpKind::kAbs, ArithDTypes(), CreateArith));
  r.Add(ReferenceEntry(OpKind::kSign, ArithDTypes(), CreateArith));
  r.Add(ReferenceEntry(OpKind::kClip, ArithDTypes(), CreateArith));
  r.Add(ReferenceEntry(OpKind::kNot, {DType::kBool}, [](const KernelInit& init) -> StatusOr<std::unique_ptr<Kernel>> {
    AMP_RETURN_IF_ERROR(CheckSameType(init));
    return std::unique_ptr<Kernel>(std::make_unique<NotKernel>());
  }));
  r.Add(ReferenceEntry(OpKind::kIsNaN, FloatDTypes(), CreateFloatClass));
  r.Add(ReferenceEntry(OpKind::kIsInf, FloatDTypes(), CreateFloatClass));
  r.Add(ReferenceEntry(OpKind::kIdentity, {}, [](const KernelInit& init) -> StatusOr<std::unique_ptr<Kernel>> {
    AMP_RETURN_IF_ERROR(CheckSameType(init));
    return std::unique_ptr<Kernel>(std::make_unique<IdentityKernel>());
  }));
  RegisterReferenceCast(r);
}

}  // namespace amptrain::kernels::cpu
