// Reference kernels of the small backward ops and the MSE loss head:
//   ReluGrad(dY, Y)          dY where Y > 0, else 0
//   TanhGrad(dY, Y)          dY (1 - Y)(1 + Y)
//   SigmoidGrad(dY, Y)       dY Y (1 - Y)
//   GeluGrad(dY, X)          dY * gelu'(X); approximate none:
//                              Phi(x) + x * phi(x)
//                            tanh: u = k (x + 0.044715 x^3), k = sqrt(2/pi):
//                              0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) k (1 + 3 * 0.044715 x^2)
//   SiluGrad(dY, X)          dY * (s + x s (1 - s)), s = sigmoid(x) (e^-|x| based:
//                            no overflow for either sign)
//   UnaryGrad(dY, X), attr op  dY * op'(X) for Sin, Cos, Tan, Asin, Acos, Atan,
//                            Sinh, Cosh, Asinh, Acosh, Atanh, Softplus, Mish,
//                            Elu, Celu, Selu (their alpha / gamma attributes),
//                            HardSwish (MobileNetV3: one pass for seven ops):
//                            one rounding, where a formula of ops rounds each
//                            step
//   DropoutGrad(dY, mask, ratio?)  dY * mask / (1 - ratio), ratio default 0.5
//                            (Dropout's default)
//   SoftmaxGrad(dY, Y)       Y * (dY - sum(dY * Y, axis))
//   LogSoftmaxGrad(dY, Y)    dY - exp(Y) * sum(dY, axis)
//   MeanSquaredError(pred, target)            mean((pred - target)^2)
//   MeanSquaredErrorGrad(dloss, pred, target) dloss * 2 * (pred - target) / numel
// Elementwise math in Acc<T>; sums in double in a fixed order.
#include <algorithm>
#include <cmath>
#include <optional>

#include "kernels/cpu/grad_kernels.h"

namespace amptrain::kernels::cpu::grad {

namespace {

enum class Pointwise { kRelu, kTanh, kSigmoid, kGeluExact, kGeluTanh, kSilu, kDropout, kUnary };

// The forward ops UnaryGrad differentiates, with their attributes.
struct UnaryFn {
  OpKind op = OpKind::kSin;
  double alpha = 1.0, gamma = 1.0;
};

// op'(x) in A. The exponential units take their positive branch for x > 0
// only (x = 0 takes the exponential one, as PyTorch's elu_backward) and
// never evaluate the unused branch's exponential; Mish's softplus is the
// stable max(x, 0) + log1p(e^-|x|). The inverse functions near |x| = 1 use
// (1 - x)(1 + x), which keeps its digits where 1 - x^2 cancels.
template <class A>
A Derivative(const UnaryFn& f, A x) {
  const A one(1);
  switch (f.op) {
    case OpKind::kSin: return std::cos(x);
    case OpKind::kCos: return -std::sin(x);
    case OpKind::kTan: { const A t = std::tan(x); return one + t * t; }
    case OpKind::kAsin: return one / std::sqrt((one - x) * (one + x));
    case OpKind::kAcos: return -one / std::sqrt((one - x) * (one + x));
    case OpKind::kAtan: return one / (one + x * x);
    case OpKind::kSinh: return std::cosh(x);
    case OpKind::kCosh: return std::sinh(x);
    case OpKind::kAsinh: return one / std::sqrt(x * x + one);
    case OpKind::kAcosh: return one / std::sqrt((x - one) * (x + one));
    case OpKind::kAtanh: return one / ((one - x) * (one + x));
    case OpKind::kSoftplus: return one / (one + std::exp(-x));
    case OpKind::kMish: {
      const A sp = std::max(x, A(0)) + std::log1p(std::exp(-std::abs(x)));
      const A t = std::tanh(sp), sig = one / (one + std::exp(-x));
      return t + x * sig * (one - t * t);
    }
    case OpKind::kElu: return x > A(0) ? one : A(f.alpha) * std::exp(x);
    case OpKind::kCelu: return x > A(0) ? one : std::exp(x / A(f.alpha));
    case OpKind::kSelu: return x > A(0) ? A(f.gamma) : A(f.gamma * f.alpha) * std::exp(x);
    case OpKind::kErf: return A(1.1283791670955126) * std::exp(-(x * x));  // 2 / sqrt(pi) e^(-x^2)
    // x HardSigmoid(x): PyTorch's hardswish_backward, 0 for x <= -3, x / 3 + 1/2 below 3, 1 from 3 (and for NaN).
    case OpKind::kHardSwish: return x <= A(-3) ? A(0) : x < A(3) ? x / A(3) + A(0.5) : one;
    default: return A(NAN);
  }
}

bool HasUnaryDerivative(OpKind op) {
  switch (op) {
    case OpKind::kSin: case OpKind::kCos: case OpKind::kTan: case OpKind::kAsin: case OpKind::kAcos:
    case OpKind::kAtan: case OpKind::kSinh: case OpKind::kCosh: case OpKind::kAsinh: case OpKind::kAcosh:
    case OpKind::kAtanh: case OpKind::kSoftplus: case OpKind::kMish: case OpKind::kElu: case OpKind::kCelu:
    case OpKind::kSelu: case OpKind::kErf: case OpKind::kHardSwish: return true;
    default: return false;
  }
}

template <class T>
class PointwiseGrad : public Kernel {
 public:
  PointwiseGrad(const KernelInit& init, Pointwise kind, UnaryFn fn = {})
      : describe_(init.Describe()), kind_(kind), fn_(fn), threads_(Threads(init)) {}

  Status Run(KernelContext& ctx) override {
    using A = Acc<T>;
    const T* dy = ctx.inputs[0].as<const T>();
    const T* b = ctx.inputs[1].as<const T>();
    T* dx = ctx.outputs[0].as<T>();
    const int64_t n = ctx.inputs[0].num_elements();
    switch (kind_) {
      case Pointwise::kRelu:
        return Map(n, [&](int64_t i) { return static_cast<A>(b[i]) > A(0) ? static_cast<A>(dy[i]) : A(0); }, dx);
      case Pointwise::kTanh:
        return Map(n, [&](int64_t i) {
          const A y = static_cast<A>(b[i]);
          return static_cast<A>(dy[i]) * ((A(1) - y) * (A(1) + y));  // 1 - y^2, exact near |y| = 1
        }, dx);
      case Pointwise::kSigmoid:
        return Map(n, [&](int64_t i) {
          const A y = static_cast<A>(b[i]);
          return static_cast<A>(dy[i]) * (y * (A(1) - y));
        }, dx);
      case Pointwise::kGeluExact:
        return Map(n, [&](int64_t i) {
          const A x = static_cast<A>(b[i]);
          const A cdf = A(0.5) * (A(1) + std::erf(x * A(0.7071067811865476)));
          const A pdf = std::exp(A(-0.5) * x * x) * A(0.3989422804014327);  // 1 / sqrt(2 pi)
          return static_cast<A>(dy[i]) * (cdf + x * pdf);
        }, dx);
      case Pointwise::kGeluTanh:
        return Map(n, [&](int64_t i) {
          const A x = static_cast<A>(b[i]), k = A(0.7978845608028654), c = A(0.044715);
          const A t = std::tanh(k * (x + c * x * x * x));
          const A d = A(0.5) * (A(1) + t) + A(0.5) * x * (A(1) - t * t) * k * (A(1) + A(3) * c * x * x);
          return static_cast<A>(dy[i]) * d;
        }, dx);
      case Pointwise::kSilu:
        return Map(n, [&](int64_t i) {
          const A x = static_cast<A>(b[i]), e = std::exp(-std::abs(x)), r = A(1) / (A(1) + e);
          const A s = x >= A(0) ? r : e * r;  // sigmoid(x); s (1 - s) = e r^2 for either sign
          return static_cast<A>(dy[i]) * (s + x * (e * r * r));
        }, dx);
      case Pointwise::kUnary:
        return Map(n, [&](int64_t i) { return static_cast<A>(dy[i]) * Derivative(fn_, static_cast<A>(b[i])); }, dx);
      case Pointwise::kDropout: {
        double ratio = 0.5;
        if (ctx.inputs.size() > 2 && ctx.inputs[2].data) {
          AMP_RETURN_IF_ERROR(DispatchFloat(ctx.inputs[2].dtype, [&](auto tag) {
            ratio = Load(ctx.inputs[2].as<const typename decltype(tag)::type>()[0]);
            return Status::Ok();
          }));
        }
        if (!(ratio >= 0.0 && ratio < 1.0)) return InvalidArgument(describe_, ": ratio ", ratio, " is outside [0, 1)");
        const A scale = static_cast<A>(1.0 / (1.0 - ratio));
        const bool* mask = ctx.inputs[1].as<const bool>();
        return Map(n, [&](int64_t i) { return mask[i] ? static_cast<A>(dy[i]) * scale : A(0); }, dx);
      }
    }
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }

 private:
  template <class Fn>
  Status Map(int64_t n, Fn&& fn, T* out) const {
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && n >= (1 << 15))
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(fn(i));
    return Status::Ok();
  }

  std::string describe_;
  Pointwise kind_;
  UnaryFn fn_;
  int threads_;
};

// SoftmaxGrad / LogSoftmaxGrad along `axis`: lanes of n elements with stride inner.
template <class T>
class SoftmaxGradKernel : public Kernel {
 public:
  SoftmaxGradKernel(const KernelInit& init, int64_t axis, bool log) : log_(log), threads_(Threads(init)) {
    const auto& d = init.inputs[1].dims;
    for (int64_t i = 0; i < static_cast<int64_t>(d.size()); ++i) (i < axis ? outer_ : i == axis ? n_ : inner_) *= d[i];
  }

  Status Run(KernelContext& ctx) override {
    const T* dy = ctx.inputs[0].as<const T>();
    const T* y = ctx.inputs[1].as<const T>();
    T* dx = ctx.outputs[0].as<T>();
    const int64_t lanes = outer_ * inner_;
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && lanes * n_ >= (1 << 15))
    for (int64_t lane = 0; lane < lanes; ++lane) {
      const int64_t base = lane / inner_ * n_ * inner_ + lane % inner_;
      double s = 0.0;
      for (int64_t j = 0, e = base; j < n_; ++j, e += inner_) s += log_ ? Load(dy[e]) : Load(dy[e]) * Load(y[e]);
      for (int64_t j = 0, e = base; j < n_; ++j, e += inner_)
        dx[e] = Store<T>(log_ ? Load(dy[e]) - std::exp(Load(y[e])) * s : Load(y[e]) * (Load(dy[e]) - s));
    }
    return Status::Ok();
  }

 private:
  int64_t outer_ = 1, n_ = 1, inner_ = 1;
  bool log_;
  int threads_;
};

// MeanSquaredError (inputs pred, target) and its gradient (dloss, pred, target).
template <class T>
class MseKernel : public Kernel {
 public:
  MseKernel(const KernelInit& init, bool grad) : grad_(grad), threads_(Threads(init)) {}

  Status Run(KernelContext& ctx) override {
    const size_t first = grad_ ? 1 : 0;
    const T* p = ctx.inputs[first].as<const T>();
    const T* t = ctx.inputs[first + 1].as<const T>();
    const int64_t n = ctx.inputs[first].num_elements();
    T* out = ctx.outputs[0].as<T>();
    if (!grad_) {
      const double sum = DeterministicSum(n, threads_, [&](int64_t i) {
        const double d = Load(p[i]) - Load(t[i]);
        return d * d;
      });
      out[0] = Store<T>(sum / static_cast<double>(n));
      return Status::Ok();
    }
    const double g = 2.0 * Load(ctx.inputs[0].as<const T>()[0]) / static_cast<double>(n);
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && n >= (1 << 15))
    for (int64_t i = 0; i < n; ++i) out[i] = Store<T>(g * (Load(p[i]) - Load(t[i])));
    return Status::Ok();
  }

 private:
  bool grad_;
  int threads_;
};

template <template <class> class K, class... Args>
StatusOr<std::unique_ptr<Kernel>> Make(DType t, Args&&... args) {
  std::unique_ptr<Kernel> kernel;
  AMP_RETURN_IF_ERROR(DispatchFloat(t, [&](auto tag) {
    kernel = std::make_unique<K<typename decltype(tag)::type>>(std::forward<Args>(args)...);
    return Status::Ok();
  }));
  return kernel;
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> MakeMiscGrad(const KernelInit& init) {
  const DType t = init.inputs.empty() ? DType::kUndefined : init.inputs[0].dtype;
  switch (init.op) {
    case OpKind::kMeanSquaredError:
    case OpKind::kMeanSquaredErrorGrad: {
      const bool grad = init.op == OpKind::kMeanSquaredErrorGrad;
      const size_t first = grad ? 1 : 0;
      AMP_RETURN_IF_ERROR(CheckArity(init, first + 2, first + 2, 1, 1));
      AMP_RETURN_IF_ERROR(CheckSameDType(init, 0, {1, 2}));
      if (init.inputs[first].dims != init.inputs[first + 1].dims) return init.Error("pred and target differ in shape");
      if (grad && init.inputs[0].num_elements() != 1) return init.Error("dloss must be a scalar");
      return Make<MseKernel>(t, init, grad);
    }
    case OpKind::kSoftmaxGrad:
    case OpKind::kLogSoftmaxGrad: {
      AMP_RETURN_IF_ERROR(CheckArity(init, 2, 2, 1, 1));
      AMP_RETURN_IF_ERROR(CheckSameDType(init, 0, {1}));
      const auto& d = init.inputs[1].dims;
      if (d.empty() || init.inputs[0].dims != d) return init.Error("dY and Y must have the same shape of rank >= 1");
      const int64_t rank = static_cast<int64_t>(d.size());
      AMP_ASSIGN_OR_RETURN(int64_t axis, init.attrs->GetInt("axis", -1));
      if (axis < -rank || axis >= rank) return OutOfRange(init.Describe(), ": axis ", axis, " is out of range for rank ", rank);
      return Make<SoftmaxGradKernel>(t, init, axis < 0 ? axis + rank : axis, init.op == OpKind::kLogSoftmaxGrad);
    }
    default: break;
  }
  Pointwise kind = Pointwise::kRelu;
  if (init.op == OpKind::kDropoutGrad) {
    AMP_RETURN_IF_ERROR(CheckArity(init, 2, 3, 1, 1));
    if (init.inputs[1].dtype != DType::kBool) return init.Error("mask must be bool");
    if (init.inputs.size() > 2 && init.inputs[2].present() &&
        (!ir::IsFloat(init.inputs[2].dtype) || init.inputs[2].num_elements() != 1))
      return init.Error("ratio must be a float scalar");
    kind = Pointwise::kDropout;
  } else {
    AMP_RETURN_IF_ERROR(CheckArity(init, 2, 2, 1, 1));
    AMP_RETURN_IF_ERROR(CheckSameDType(init, 0, {1}));
    if (init.op == OpKind::kGeluGrad) {
      AMP_ASSIGN_OR_RETURN(std::string approximate, init.attrs->GetString("approximate", "none"));
      if (approximate != "none" && approximate != "tanh") return init.Error("unsupported approximate='", approximate, "'");
      kind = approximate == "tanh" ? Pointwise::kGeluTanh : Pointwise::kGeluExact;
    } else if (init.op == OpKind::kSiluGrad) {
      kind = Pointwise::kSilu;
    } else if (init.op == OpKind::kTanhGrad) {
      kind = Pointwise::kTanh;
    } else if (init.op == OpKind::kSigmoidGrad) {
      kind = Pointwise::kSigmoid;
    } else if (init.op == OpKind::kUnaryGrad) {
      AMP_ASSIGN_OR_RETURN(std::string name, init.attrs->GetString("op", ""));
      std::optional<OpKind> op = ir::FindOnnxOp(name);
      if (!op || !HasUnaryDerivative(*op)) return init.Error("no fused derivative for op '", name, "'");
      UnaryFn fn{*op, 1.0, 1.0};
      if (*op == OpKind::kSelu) {
        AMP_ASSIGN_OR_RETURN(float alpha, init.attrs->GetFloat("alpha", 1.67326319217681884765625f));
        AMP_ASSIGN_OR_RETURN(float gamma, init.attrs->GetFloat("gamma", 1.05070102214813232421875f));
        fn.alpha = alpha, fn.gamma = gamma;
      } else if (*op == OpKind::kElu || *op == OpKind::kCelu) {
        AMP_ASSIGN_OR_RETURN(float alpha, init.attrs->GetFloat("alpha", 1.0f));
        fn.alpha = alpha;
      }
      if (init.inputs[1].dims != init.inputs[0].dims) return init.Error("inputs 0 and 1 differ in shape");
      return Make<PointwiseGrad>(t, init, Pointwise::kUnary, fn);
    } else if (init.op != OpKind::kReluGrad) {
      return Internal(init.Describe(), ": not a backward op of grad_misc.cc");
    }
  }
  if (init.inputs[1].dims != init.inputs[0].dims) return init.Error("inputs 0 and 1 differ in shape");
  return Make<PointwiseGrad>(t, init, kind);
}

}  // namespace amptrain::kernels::cpu::grad
