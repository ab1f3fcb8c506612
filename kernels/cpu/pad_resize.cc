// Reference Pad (constant/reflect/edge/wrap, negative pads crop, optional
// axes) and its gradient PadGrad (each output's gradient added back to the
// position it was read from), Resize (nearest/linear/cubic, separable: one 1-D pass per
// resized axis in double, as the ONNX reference does) and its gradient
// ResizeGrad (the passes' adjoints). Geometry comes from
// ir/infer/shape_params.h, shared with the shape rules; the taps from
// kernels/resize_taps.h, shared with the CUDA kernel.
#include <cmath>

#include "ir/infer/shape_params.h"
#include "kernels/cpu/element.h"
#include "kernels/cpu/shape_kernels.h"
#include "kernels/resize_taps.h"

namespace amptrain::kernels::cpu {

namespace {

int64_t Mod(int64_t a, int64_t n) { return ((a % n) + n) % n; }

// Source index along one dim for output index o, or -1 for the pad value.
int64_t PadSource(ir::PadMode mode, int64_t o, int64_t begin, int64_t n) {
  int64_t i = o - begin;
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case ir::PadMode::kConstant: return -1;
    case ir::PadMode::kEdge: return i < 0 ? 0 : n - 1;
    case ir::PadMode::kWrap: return Mod(i, n);
    case ir::PadMode::kReflect: {
      if (n == 1) return 0;
      int64_t m = Mod(i, 2 * (n - 1));
      return m < n ? m : 2 * (n - 1) - m;
    }
  }
  return -1;
}

std::string ModeName(const KernelInit& init) { return init.attrs ? init.attrs->Str("mode", "constant") : "constant"; }

// The mode attribute of Pad and PadGrad.
StatusOr<ir::PadMode> ModeOf(const KernelInit& init) {
  auto mode = ir::ParsePadMode(ModeName(init));
  if (!mode.ok()) return Status(mode.status().code(), StrCat(init.Describe(), ": ", mode.status().message()));
  return *mode;
}

class PadKernel : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const KernelInit& init) {
    AMP_RETURN_IF_ERROR(CheckArity(init, 2, 4, 1));
    const std::string mode_name = ModeName(init);
    AMP_ASSIGN_OR_RETURN(ir::PadMode mode, ModeOf(init));
    if (init.inputs.size() > 2 && init.inputs[2].present() &&
        (init.inputs[2].dtype != init.inputs[0].dtype || init.inputs[2].num_elements() > 1))
      return init.Error("constant_value must be a scalar of the data dtype");
    if (mode != ir::PadMode::kConstant)
      for (int64_t d : init.inputs[0].dims)
        if (d == 0) return init.Error("mode '", mode_name, "' cannot pad an empty input");
    return std::unique_ptr<Kernel>(new PadKernel(init, mode));
  }
  Status Run(KernelContext& ctx) override {
    const ir::TensorView &in = ctx.inputs[0], &out = ctx.outputs[0];
    const size_t r = in.dims.size();
    std::vector<int64_t> begin, end;
    Status s = ir::ResolvePads(static_cast<int64_t>(r), pads_.Ints(ctx), axes_.Ints(ctx), &begin, &end);
    if (!s.ok()) return InvalidArgument(describe_, ": ", s.message());
    std::vector<std::vector<int64_t>> map(r);
    for (size_t d = 0; d < r; ++d) {
      if (in.dims[d] + begin[d] + end[d] != out.dims[d]) return InvalidArgument(describe_, ": pads do not match the output dims");
      for (int64_t o = 0; o < out.dims[d]; ++o) map[d].push_back(PadSource(mode_, o, begin[d], in.dims[d]));
    }
    const bool has_value = ctx.inputs.size() > 2 && ctx.inputs[2].data && ctx.inputs[2].num_elements() == 1;
    return DispatchBySize(ir::DTypeSize(in.dtype), [&](auto b) {
      using U = typename decltype(b)::type;
      U value{};
      if (has_value) std::memcpy(&value, ctx.inputs[2].data, sizeof(U));
      Fill(in.as<const U>(), out.as<U>(), in.dims, out.dims, map, value);
      return Status::Ok();
    });
  }

 private:
  PadKernel(const KernelInit& init, ir::PadMode mode)
      : mode_(mode), pads_(init, 1), axes_(init, 3), describe_(init.Describe()) {}

  template <class U>
  static void Fill(const U* src, U* dst, const std::vector<int64_t>& in_dims, const std::vector<int64_t>& out_dims,
                   const std::vector<std::vector<int64_t>>& map, U value) {
    int64_t total = 1;
    for (int64_t d : out_dims) total *= d;
    if (total == 0) return;
    const size_t r = out_dims.size();
    if (r == 0) { dst[0] = src[0]; return; }
    const std::vector<int64_t> st = Strides(in_dims);
    const int64_t last = out_dims[r - 1], rows = total / last;
    const std::vector<int64_t>& lmap = map[r - 1];
#pragma omp parallel for if (total >= kParallelElements)
    for (int64_t row = 0; row < rows; ++row) {
      int64_t rem = row, off = 0;
      bool pad_row = false;
      for (size_t d = r - 1; d-- > 0;) {
        int64_t m = map[d][static_cast<size_t>(rem % out_dims[d])];
        rem /= out_dims[d];
        if (m < 0) pad_row = true;
        off += m * st[d];
      }
      U* drow = dst + row * last;
      for (int64_t k = 0; k < last; ++k) {
        int64_t m = lmap[static_cast<size_t>(k)];
        drow[k] = pad_row || m < 0 ? value : src[off + m];
      }
    }
  }

  ir::PadMode mode_;
  ParamInput pads_, axes_;
  std::string describe_;
};

// PadGrad(dY, x_shape, pads, axes?): dX[i] = sum of dY[o] over the outputs o
// that Pad read from input position i (PadSource of every dim). Each dX row
// (all dims but the last) is one work item that visits its source rows of
// dY in increasing order and sums in double, so the bits depend on neither
// the thread count nor the mode's fold pattern; one rounding at the end.
class PadGradKernel : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const KernelInit& init) {
    AMP_RETURN_IF_ERROR(CheckArity(init, 3, 4, 1));
    AMP_ASSIGN_OR_RETURN(ir::PadMode mode, ModeOf(init));
    return std::unique_ptr<Kernel>(new PadGradKernel(init, mode));
  }
  Status Run(KernelContext& ctx) override {
    const ir::TensorView &dy = ctx.inputs[0], &dx = ctx.outputs[0];
    const size_t r = dx.dims.size();
    if (dy.dims.size() != r) return InvalidArgument(describe_, ": dY has rank ", dy.dims.size(), ", dX ", r);
    std::vector<int64_t> begin, end;
    Status s = ir::ResolvePads(static_cast<int64_t>(r), pads_.Ints(ctx), axes_.Ints(ctx), &begin, &end);
    if (!s.ok()) return InvalidArgument(describe_, ": ", s.message());
    // inv[d][i]: the positions of dim d of dY read from position i of dX.
    std::vector<std::vector<std::vector<int64_t>>> inv(r);
    for (size_t d = 0; d < r; ++d) {
      if (dx.dims[d] + begin[d] + end[d] != dy.dims[d]) return InvalidArgument(describe_, ": pads do not match the dims of dY and dX");
      if (dx.dims[d] == 0 && dy.dims[d] > 0 && mode_ != ir::PadMode::kConstant)
        return InvalidArgument(describe_, ": this mode cannot pad an empty dim");
      inv[d].resize(static_cast<size_t>(dx.dims[d]));
      for (int64_t o = 0; o < dy.dims[d]; ++o) {
        int64_t i = PadSource(mode_, o, begin[d], dx.dims[d]);
        if (i >= 0) inv[d][static_cast<size_t>(i)].push_back(o);
      }
    }
    return DispatchFloat(dy.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      Accumulate(dy.as<const T>(), dx.as<T>(), dy.dims, dx.dims, inv);
      return Status::Ok();
    });
  }

 private:
  PadGradKernel(const KernelInit& init, ir::PadMode mode)
      : mode_(mode), pads_(init, 2), axes_(init, 3), describe_(init.Describe()) {}

  template <class T>
  static void Accumulate(const T* dy, T* dx, const std::vector<int64_t>& dy_dims, const std::vector<int64_t>& dx_dims,
                         const std::vector<std::vector<std::vector<int64_t>>>& inv) {
    int64_t total = 1;
    for (int64_t d : dx_dims) total *= d;
    if (total == 0) return;
    const size_t r = dx_dims.size();
    if (r == 0) { dx[0] = dy[0]; return; }
    const std::vector<int64_t> st = Strides(dy_dims);
    const int64_t last = dx_dims[r - 1], rows = total / last;
    const std::vector<std::vector<int64_t>>& lin = inv[r - 1];
#pragma omp parallel
    {
      std::vector<double> acc(static_cast<size_t>(last));
      std::vector<const std::vector<int64_t>*> lists(r - 1);
      std::vector<size_t> at(r - 1);
#pragma omp for
      for (int64_t row = 0; row < rows; ++row) {
        std::fill(acc.begin(), acc.end(), 0.0);
        bool empty = false;
        for (size_t d = r - 1, rem = static_cast<size_t>(row); d-- > 0;) {
          lists[d] = &inv[d][rem % static_cast<size_t>(dx_dims[d])];
          rem /= static_cast<size_t>(dx_dims[d]);
          empty = empty || lists[d]->empty();
          at[d] = 0;
        }
        // Every combination of source positions of the leading dims, in
        // increasing order of the dY row (an odometer, last dim fastest).
        while (!empty) {
          int64_t off = 0;
          for (size_t d = 0; d + 1 < r; ++d) off += (*lists[d])[at[d]] * st[d];
          const T* src = dy + off;
          for (int64_t k = 0; k < last; ++k)
            for (int64_t o : lin[static_cast<size_t>(k)]) acc[static_cast<size_t>(k)] += static_cast<double>(static_cast<Acc<T>>(src[o]));
          size_t d = r - 1;
          while (d-- > 0 && ++at[d] == lists[d]->size()) at[d] = 0;
          if (d == static_cast<size_t>(-1)) break;
        }
        T* drow = dx + row * last;
        for (int64_t k = 0; k < last; ++k) drow[k] = T(static_cast<Acc<T>>(acc[static_cast<size_t>(k)]));
      }
    }
  }

  ir::PadMode mode_;
  ParamInput pads_, axes_;
  std::string describe_;
};

// Resamples `axis` of `src` (dims) to `out` positions.
std::vector<double> ResampleAxis(const ir::ResizeAttrs& a, const ir::ResizeGeometry& g, const std::vector<double>& src,
                                 std::vector<int64_t>& dims, size_t axis) {
  const int64_t in = dims[axis], out = g.out_dims[axis];
  const ResizeAxisTaps at = ResizeTapsOfAxis(a, g, dims, axis, in, out);
  const int64_t outer = at.outer, inner = at.inner;
  const std::vector<ResizeTaps>& taps = at.taps;
  std::vector<double> dst(static_cast<size_t>(outer * out * inner));
#pragma omp parallel for if (outer * out * inner >= kParallelElements)
  for (int64_t k = 0; k < outer * out; ++k) {
    const int64_t o = k / out, x = k % out;
    const ResizeTaps& t = taps[static_cast<size_t>(x)];
    double* d = dst.data() + k * inner;
    for (int64_t i = 0; i < inner; ++i) {
      double acc = t.extrapolate ? a.extrapolation_value : 0.0;
      for (size_t j = 0; j < t.index.size(); ++j) acc += t.weight[j] * src[static_cast<size_t>((o * in + t.index[j]) * inner + i)];
      d[i] = acc;
    }
  }
  dims[axis] = out;
  return dst;
}

// The adjoint of ResampleAxis: `dst` (the gradient at `out` positions of
// `axis`) spread back over the `in` source positions by the same taps.
std::vector<double> ResampleAxisAdjoint(const ir::ResizeAttrs& a, const ir::ResizeGeometry& g,
                                        const std::vector<double>& dst, std::vector<int64_t>& dims, size_t axis,
                                        int64_t in) {
  const int64_t out = dims[axis];
  const ResizeAxisTaps at = ResizeTapsOfAxis(a, g, dims, axis, in, out);
  const int64_t outer = at.outer, inner = at.inner;
  const std::vector<ResizeTaps>& taps = at.taps;
  std::vector<double> src(static_cast<size_t>(outer * in * inner), 0.0);
  // Each outer row is one work item, summing its positions in order: the
  // bits do not depend on the thread count.
#pragma omp parallel for if (outer * out * inner >= kParallelElements)
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t x = 0; x < out; ++x) {
      const ResizeTaps& t = taps[static_cast<size_t>(x)];
      const double* d = dst.data() + (o * out + x) * inner;
      for (size_t j = 0; j < t.index.size(); ++j) {
        double* s = src.data() + (o * in + t.index[j]) * inner;
        for (int64_t i = 0; i < inner; ++i) s[i] += t.weight[j] * d[i];
      }
    }
  dims[axis] = in;
  return src;
}

}  // namespace

StatusOr<ResizeRun> ResolveResizeRun(const ir::ResizeAttrs& a, const ParamInput& roi, const ParamInput& scales,
                                     const ParamInput& sizes, const KernelContext& ctx,
                                     const std::vector<int64_t>& x_dims, const std::vector<int64_t>& y_dims,
                                     const std::string& describe) {
  std::vector<double> s = scales.Doubles(ctx);
  std::vector<int64_t> z = sizes.Ints(ctx);
  std::vector<double> r = a.coord == ir::CoordMode::kTfCropAndResize ? roi.Doubles(ctx) : std::vector<double>{};
  auto g = ir::ResolveResize(a, x_dims, r, z.empty() ? s : std::vector<double>{}, z);
  if (!g.ok()) return InvalidArgument(describe, ": ", g.status().message());
  if (g->out_dims != y_dims) return InvalidArgument(describe, ": scales/sizes do not match the resized dims");
  ResizeRun run{*g, {}};
  for (size_t d = 0; d < x_dims.size(); ++d)
    run.identity.push_back(g->out_dims[d] == x_dims[d] && g->scales[d] == 1.0 &&
                           (a.coord != ir::CoordMode::kTfCropAndResize || (g->roi_start[d] == 0 && g->roi_end[d] == 1)));
  return run;
}

namespace {

// Resize and ResizeGrad: one kernel. The forward resamples axis by axis; the
// backward (ResizeGrad(dY, x_shape, roi?, scales?, sizes?)) applies each
// axis's adjoint, in reverse order (extrapolated positions take no gradient).
// Both run in double and round once.
class ResizeKernel : public Kernel {
 public:
  static StatusOr<std::unique_ptr<Kernel>> Create(const KernelInit& init) {
    const bool backward = init.op == OpKind::kResizeGrad;
    AMP_RETURN_IF_ERROR(backward ? CheckArity(init, 2, 5, 1) : CheckArity(init, 1, 4, 1));
    auto attrs = ir::ParseResizeAttrs(init.attrs ? *init.attrs : ir::Attributes());
    if (!attrs.ok()) return Status(attrs.status().code(), StrCat(init.Describe(), ": ", attrs.status().message()));
    return std::unique_ptr<Kernel>(new ResizeKernel(init, *attrs, backward));
  }
  Status Run(KernelContext& ctx) override {
    const ir::TensorView &in = ctx.inputs[0], &out = ctx.outputs[0];
    // The forward's input dims: ours, or (backward) those of the output dX.
    const std::vector<int64_t>& x_dims = backward_ ? out.dims : in.dims;
    const std::vector<int64_t>& y_dims = backward_ ? in.dims : out.dims;
    AMP_ASSIGN_OR_RETURN(ResizeRun run, ResolveResizeRun(attrs_, roi_, scales_, sizes_, ctx, x_dims, y_dims, describe_));
    return DispatchFloat(in.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<double> buf(static_cast<size_t>(in.num_elements()));
      for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<double>(static_cast<Acc<T>>(in.as<const T>()[i]));
      std::vector<int64_t> dims = in.dims;
      const size_t rank = dims.size();
      for (size_t k = 0; k < rank; ++k) {
        const size_t d = backward_ ? rank - 1 - k : k;
        if (run.identity[d]) continue;
        buf = backward_ ? ResampleAxisAdjoint(attrs_, run.g, buf, dims, d, x_dims[d])
                        : ResampleAxis(attrs_, run.g, buf, dims, d);
      }
      for (size_t i = 0; i < buf.size(); ++i) out.as<T>()[i] = T(static_cast<Acc<T>>(buf[i]));
      return Status::Ok();
    });
  }

 private:
  // roi, scales and sizes are inputs 1-3 of Resize, 2-4 of ResizeGrad.
  ResizeKernel(const KernelInit& init, ir::ResizeAttrs attrs, bool backward)
      : attrs_(std::move(attrs)),
        backward_(backward),
        roi_(init, backward ? 2 : 1),
        scales_(init, backward ? 3 : 2),
        sizes_(init, backward ? 4 : 3),
        describe_(init.Describe()) {}
  ir::ResizeAttrs attrs_;
  bool backward_;
  ParamInput roi_, scales_, sizes_;
  std::string describe_;
};

}  // namespace

void RegisterReferencePadResize(Registry& r) {
  r.Add(ReferenceEntry<PadKernel>(OpKind::kPad));
  r.Add(ReferenceEntry<PadGradKernel>(OpKind::kPadGrad, {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64}));
  r.Add(ReferenceEntry<ResizeKernel>(OpKind::kResize, {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64}));
  r.Add(ReferenceEntry<ResizeKernel>(OpKind::kResizeGrad,
                                         {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64}));
}

}  // namespace amptrain::kernels::cpu
