// Reference kernels of QuantizeLinear, DequantizeLinear and FakeQuantize
// (ir/ops.def; scale layouts in ir/infer/quantize.h):
//   QuantizeLinear: q = round half to even(x / scale) + zero_point,
//   saturated to the output type's range; x / scale in Acc<T> (float for
//   fp32/fp16/bf16, as ONNX Runtime divides).
//   DequantizeLinear: (q - zero_point) * scale in Acc of the scale's type.
//   FakeQuantize: the two in one pass in x's type, and the mask of the
//   values whose q fell inside [qmin, qmax] (its gradient's).
// Scale and zero point are read at every run: per tensor, per index of the
// axis, or per block along it.
#include <cmath>

#include "ir/infer/quantize.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/register.h"

namespace amptrain::kernels::cpu {

namespace {

// Element i of an int8/uint8/int32 tensor.
int64_t QuantAt(const ir::TensorView& v, int64_t i) {
  switch (v.dtype) {
    case DType::kInt8: return v.as<const int8_t>()[i];
    case DType::kUInt8: return v.as<const uint8_t>()[i];
    default: return v.as<const int32_t>()[i];
  }
}

// The scale index of data element e.
struct ScaleIndex {
  ir::QuantLayout layout;
  int64_t n = 1, inner = 1, blocks = 1;
  ScaleIndex(const ir::QuantLayout& l, const std::vector<int64_t>& dims) : layout(l) {
    if (l.kind == ir::QuantLayout::kPerTensor) return;
    n = dims[static_cast<size_t>(l.axis)];
    for (size_t d = static_cast<size_t>(l.axis) + 1; d < dims.size(); ++d) inner *= dims[d];
    if (l.kind == ir::QuantLayout::kBlocked) blocks = (n + l.block_size - 1) / l.block_size;
  }
  int64_t operator()(int64_t e) const {
    switch (layout.kind) {
      case ir::QuantLayout::kPerTensor: return 0;
      case ir::QuantLayout::kPerAxis: return (e / inner) % n;
      case ir::QuantLayout::kBlocked: {
        const int64_t i = e % inner, a = (e / inner) % n, o = e / (inner * n);
        return (o * blocks + a / layout.block_size) * inner + i;
      }
    }
    return 0;
  }
};

class QuantKernel final : public Kernel {
 public:
  QuantKernel(const KernelInit& init, ir::QuantLayout layout, int64_t qmin, int64_t qmax)
      : op_(init.op), index_(layout, init.inputs[0].dims), qmin_(qmin), qmax_(qmax), threads_(Threads(init)) {}

  Status Run(KernelContext& ctx) override {
    const ir::TensorView &x = ctx.inputs[0], &scale = ctx.inputs[1];
    const bool has_zp = ctx.inputs.size() > 2 && ctx.inputs[2].data;
    const int64_t n = x.num_elements();
    auto zp = [&](int64_t s) { return has_zp ? QuantAt(ctx.inputs[2], s) : int64_t{0}; };
    return DispatchFloat(scale.dtype, [&](auto tag) -> Status {
      using S = typename decltype(tag)::type;
      using A = Acc<S>;
      const S* sc = scale.as<const S>();
      if (op_ == OpKind::kDequantizeLinear) {
        return DispatchFloat(ctx.outputs[0].dtype, [&](auto out_tag) {
          using O = typename decltype(out_tag)::type;
          O* y = ctx.outputs[0].as<O>();
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && n >= kParallelMinElements)
          for (int64_t e = 0; e < n; ++e) {
            const int64_t s = index_(e);
            y[e] = static_cast<O>(static_cast<A>(QuantAt(x, e) - zp(s)) * static_cast<A>(sc[s]));
          }
          return Status::Ok();
        });
      }
      return DispatchFloat(x.dtype, [&](auto x_tag) -> Status {
        using X = typename decltype(x_tag)::type;
        const X* xs = x.as<const X>();
        auto quantized = [&](int64_t e, int64_t s) {  // round(x / scale) + zero_point, unsaturated
          const A v = std::nearbyint(static_cast<A>(xs[e]) / static_cast<A>(sc[s]));
          return std::isnan(v) ? 0.0 : static_cast<double>(v) + static_cast<double>(zp(s));
        };
        if (op_ == OpKind::kQuantizeLinear) {
          ir::TensorView& y = ctx.outputs[0];
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && n >= kParallelMinElements)
          for (int64_t e = 0; e < n; ++e) {
            const double q = std::fmin(std::fmax(quantized(e, index_(e)), double(qmin_)), double(qmax_));
            if (y.dtype == DType::kInt8) y.as<int8_t>()[e] = static_cast<int8_t>(q);
            else y.as<uint8_t>()[e] = static_cast<uint8_t>(q);
          }
          return Status::Ok();
        }
        X* y = ctx.outputs[0].as<X>();
        bool* mask = ctx.outputs.size() > 1 && ctx.outputs[1].data ? ctx.outputs[1].as<bool>() : nullptr;
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && n >= kParallelMinElements)
        for (int64_t e = 0; e < n; ++e) {
          const int64_t s = index_(e);
          const double q = quantized(e, s);
          const bool inside = q >= double(qmin_) && q <= double(qmax_);
          const double c = std::fmin(std::fmax(q, double(qmin_)), double(qmax_));
          y[e] = static_cast<X>(static_cast<A>(c - static_cast<double>(zp(s))) * static_cast<A>(sc[s]));
          if (mask) mask[e] = inside;
        }
        return Status::Ok();
      });
    });
  }

 private:
  OpKind op_;
  ScaleIndex index_;
  int64_t qmin_, qmax_;
  int threads_;
};

StatusOr<std::unique_ptr<Kernel>> CreateQuant(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, init.op == OpKind::kFakeQuantize ? init.outputs.size() : 1));
  const ir::Attributes& attrs = AttrsOf(init);
  auto layout = ir::DecodeQuantLayout(attrs, init.inputs[0].dims, init.inputs[1].dims);
  if (!layout.ok()) return init.Error(layout.status().message());
  const bool zp = init.inputs.size() > 2 && init.inputs[2].present();
  int64_t qmin = 0, qmax = 0;
  if (init.op == OpKind::kFakeQuantize) {
    AMP_ASSIGN_OR_RETURN(qmin, attrs.GetInt("qmin", 0));
    AMP_ASSIGN_OR_RETURN(qmax, attrs.GetInt("qmax", 255));
    if (qmin > qmax) return init.Error("qmin ", qmin, " is above qmax ", qmax);
  } else {
    const DType q = init.op == OpKind::kQuantizeLinear ? init.outputs[0].dtype : init.inputs[0].dtype;
    auto range = ir::QuantRange(q);
    if (!range.ok()) return init.Error(range.status().message());
    std::tie(qmin, qmax) = *range;
  }
  if (zp && init.inputs[2].dims != init.inputs[1].dims && init.inputs[2].num_elements() != init.inputs[1].num_elements())
    return init.Error("the zero point's shape differs from the scale's");
  return std::unique_ptr<Kernel>(new QuantKernel(init, *layout, qmin, qmax));
}

}  // namespace

void RegisterReferenceQuantize(Registry& r) {
  r.Add(ReferenceEntry(OpKind::kQuantizeLinear, FloatDTypes(), CreateQuant));
  r.Add(ReferenceEntry(OpKind::kDequantizeLinear, {DType::kInt8, DType::kUInt8, DType::kInt32}, CreateQuant));
  r.Add(ReferenceEntry(OpKind::kFakeQuantize, FloatDTypes(), CreateQuant));
}

}  // namespace amptrain::kernels::cpu
