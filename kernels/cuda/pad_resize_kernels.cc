// CUDA Pad, PadGrad, Resize and ResizeGrad (launchers: pad_resize.cu), with
// the contracts of kernels/cpu/pad_resize.cc:
//   Pad(data, pads, constant_value?, axes?), mode constant/reflect/edge/wrap,
//     negative pads crop, any dtype of 1/2/4/8 bytes (the CPU's bytes). pads
//     and axes must be plan-time constants (the entry declines computed
//     ones: never a host read of device memory); constant_value is read on
//     the device. Up to rank 8.
//   PadGrad(dY, x_shape, pads, axes?): the same geometry, fp32/fp16/bf16;
//     each dX element gathers its sources in the CPU's order, in double.
//   Resize(X, roi?, scales?, sizes?) and ResizeGrad(dY, x_shape, roi?,
//     scales?, sizes?): nearest (all four nearest modes), linear, cubic
//     (cubic_coeff_a, exclude_outside), every coordinate transform,
//     tf_crop_and_resize's extrapolation, keep_aspect_ratio_policy, axes;
//     scales/sizes (and roi for tf_crop_and_resize) must be plan-time
//     constants. fp32/fp16/bf16. The taps of every resized axis are computed
//     here at creation (the CPU's, kernels/resize_taps.h) and uploaded
//     once per run into the scratch with one cudaMemcpyAsync from a host
//     buffer the kernel owns; the passes run in double in the CPU's order
//     and round once to float and then to the dtype, as the CPU does.
#include <algorithm>
#include <cstring>

#include "ir/infer/shape_params.h"
#include "kernels/cuda/common.h"
#include "kernels/resize_taps.h"

namespace amptrain::kernels::cuda {

namespace {

// A plan-time parameter input as ints (int32/int64, else truncated doubles).
std::vector<int64_t> ConstInts(const ir::Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.num_elements()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = t.dtype() == DType::kInt64 || t.dtype() == DType::kInt32 ? t.GetAsInt64(static_cast<int64_t>(i))
                                                                   : static_cast<int64_t>(t.GetAsDouble(static_cast<int64_t>(i)));
  return v;
}

std::vector<double> ConstDoubles(const ir::Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.num_elements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = t.GetAsDouble(static_cast<int64_t>(i));
  return v;
}

bool KnownOrAbsent(const KernelInit& init, size_t i) {
  return i >= init.inputs.size() || !init.inputs[i].present() || init.inputs[i].value != nullptr;
}

// ---- Pad ----

class PadKernel final : public Kernel {
 public:
  PadKernel(size_t elem_bytes, const PadShape& s, bool has_value) : elem_bytes_(elem_bytes), s_(s), has_value_(has_value) {}
  Status Run(KernelContext& ctx) override {
    const void* value = has_value_ ? ctx.inputs[2].data : nullptr;
    CUDA_CHECK(LaunchPad(elem_bytes_, ctx.inputs[0].data, value, ctx.outputs[0].data, ctx.outputs[0].num_elements(), s_,
                         StreamOf(ctx)));
    return Status::Ok();
  }

 private:
  size_t elem_bytes_;
  PadShape s_;
  bool has_value_;
};

// The geometry of Pad (x = input 0, y = output 0; pads input 1, axes 3) or
// PadGrad (x = output 0, y = input 0; pads 2, axes 3): pads and axes plan-time.
StatusOr<PadShape> PadGeometry(const KernelInit& init, const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                               size_t pads_at) {
  constexpr size_t kAxesAt = 3;
  AMP_ASSIGN_OR_RETURN(std::string mode_name, init.attrs->GetString("mode", "constant"));
  auto mode = ir::ParsePadMode(mode_name);
  if (!mode.ok()) return init.Error(mode.status().message());
  if (*mode != ir::PadMode::kConstant)
    for (int64_t d : in)
      if (d == 0) return init.Error("mode '", mode_name, "' cannot pad an empty input");
  if (in.size() > static_cast<size_t>(kMaxRank)) return init.Error("rank ", in.size(), " is over ", kMaxRank);
  if (!init.inputs[pads_at].value) return init.Error("pads are not known at plan time");
  if (!KnownOrAbsent(init, kAxesAt)) return init.Error("axes are not known at plan time");
  const std::vector<int64_t> pads = ConstInts(*init.inputs[pads_at].value);
  const std::vector<int64_t> axes = init.inputs.size() > kAxesAt && init.inputs[kAxesAt].present()
                                        ? ConstInts(*init.inputs[kAxesAt].value)
                                        : std::vector<int64_t>{};
  std::vector<int64_t> begin, end;
  Status s = ir::ResolvePads(static_cast<int64_t>(in.size()), pads, axes, &begin, &end);
  if (!s.ok()) return init.Error(s.message());
  if (out.size() != in.size()) return init.Error("output rank differs from the input's");
  PadShape shape;
  shape.rank = static_cast<int>(in.size());
  shape.mode = *mode == ir::PadMode::kConstant ? PadKind::kConstant
               : *mode == ir::PadMode::kReflect ? PadKind::kReflect
               : *mode == ir::PadMode::kEdge    ? PadKind::kEdge
                                                : PadKind::kWrap;
  int64_t stride = 1;
  for (size_t d = in.size(); d-- > 0;) {
    if (in[d] + begin[d] + end[d] != out[d]) return init.Error("pads do not match the output dims");
    shape.out_dims[d] = out[d];
    shape.in_dims[d] = in[d];
    shape.begin[d] = begin[d];
    shape.in_strides[d] = stride;
    stride *= in[d];
  }
  return shape;
}

StatusOr<std::unique_ptr<Kernel>> MakePad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 4, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {}, {0}));
  const size_t bytes = ir::DTypeSize(t);
  AMP_RETURN_IF_ERROR(CheckCopyable(init, bytes));
  const bool has_value = init.inputs.size() > 2 && init.inputs[2].present();
  if (has_value && (init.inputs[2].dtype != t || init.inputs[2].num_elements() > 1))
    return init.Error("constant_value must be a scalar of the data dtype");
  AMP_ASSIGN_OR_RETURN(PadShape shape, PadGeometry(init, init.inputs[0].dims, init.outputs[0].dims, 1));
  // The CPU pads with its value only when it has exactly one element, else zero bits.
  const bool value_used = has_value && init.inputs[2].num_elements() == 1;
  return std::unique_ptr<Kernel>(std::make_unique<PadKernel>(bytes, shape, value_used));
}

// ---- PadGrad ----

class PadGradKernel final : public Kernel {
 public:
  PadGradKernel(Elem t, int64_t n, const PadShape& s) : t_(t), n_(n), s_(s) {}
  Status Run(KernelContext& ctx) override {
    CUDA_CHECK(LaunchPadGrad(t_, ctx.inputs[0].data, ctx.outputs[0].data, n_, s_, StreamOf(ctx)));
    return Status::Ok();
  }

 private:
  Elem t_;
  int64_t n_;
  PadShape s_;
};

// PadGrad(dY, x_shape, pads, axes?): dX's dims are the output's (x_shape is
// not read); pads and axes plan-time, as Pad's.
StatusOr<std::unique_ptr<Kernel>> MakePadGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 3, 4, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {}, {0}));
  auto elem = ElemOf(t);
  if (!elem) return init.Error("dtype ", ir::DTypeName(t), " is not float32, float16 or bfloat16");
  AMP_ASSIGN_OR_RETURN(PadShape shape, PadGeometry(init, init.outputs[0].dims, init.inputs[0].dims, 2));
  return std::unique_ptr<Kernel>(std::make_unique<PadGradKernel>(*elem, init.outputs[0].num_elements(), shape));
}

// ---- Resize, ResizeGrad ----

// Appends n values to the 8-byte aligned blob; returns their byte offset.
template <class V>
size_t Append(std::vector<unsigned char>& blob, const std::vector<V>& v) {
  const size_t off = (blob.size() + 7) / 8 * 8;
  blob.resize(off + v.size() * sizeof(V));
  if (!v.empty()) std::memcpy(blob.data() + off, v.data(), v.size() * sizeof(V));
  return off;
}

// One pass: a forward resample or its adjoint, tables at blob offsets.
struct Pass {
  bool adjoint = false;
  int64_t outer = 1, in = 1, out = 1, inner = 1, width = 4;  // width: taps per output (forward)
  size_t a = 0, b = 0, c = 0;  // count/index/weight or offsets/position/weight
  double extrapolation = 0.0;
};

class ResizeKernel final : public Kernel {
 public:
  ResizeKernel(Elem t, int64_t in_elems, int64_t out_elems, std::vector<Pass> passes, std::vector<unsigned char> blob,
               int64_t max_elems)
      : t_(t), in_elems_(in_elems), out_elems_(out_elems), passes_(std::move(passes)), blob_(std::move(blob)),
        max_elems_(max_elems) {}

  Status Run(KernelContext& ctx) override {
    if (out_elems_ == 0) return Status::Ok();
    cudaStream_t stream = StreamOf(ctx);
    auto* base = static_cast<unsigned char*>(ctx.scratch);
    if (!blob_.empty()) CUDA_CHECK(cudaMemcpyAsync(base, blob_.data(), blob_.size(), cudaMemcpyHostToDevice, stream));
    double* bufs[2] = {reinterpret_cast<double*>(base + BufOffset()),
                       reinterpret_cast<double*>(base + BufOffset()) + max_elems_};
    int cur = 0;
    CUDA_CHECK(LaunchToDouble(t_, ctx.inputs[0].data, bufs[0], in_elems_, stream));
    for (const Pass& p : passes_) {
      if (p.adjoint) {
        ResampleAdjoint r;
        r.outer = p.outer, r.in = p.in, r.out = p.out, r.inner = p.inner;
        r.offsets = reinterpret_cast<const int64_t*>(base + p.a);
        r.position = reinterpret_cast<const int64_t*>(base + p.b);
        r.weight = reinterpret_cast<const double*>(base + p.c);
        CUDA_CHECK(LaunchResampleAdjoint(r, bufs[cur], bufs[1 - cur], stream));
      } else {
        ResamplePass r;
        r.outer = p.outer, r.in = p.in, r.out = p.out, r.inner = p.inner, r.width = p.width;
        r.count = reinterpret_cast<const int32_t*>(base + p.a);
        r.index = reinterpret_cast<const int64_t*>(base + p.b);
        r.weight = reinterpret_cast<const double*>(base + p.c);
        r.extrapolation = p.extrapolation;
        CUDA_CHECK(LaunchResample(r, bufs[cur], bufs[1 - cur], stream));
      }
      cur = 1 - cur;
    }
    CUDA_CHECK(LaunchFromDouble(t_, bufs[cur], ctx.outputs[0].data, out_elems_, stream));
    return Status::Ok();
  }
  size_t scratch_bytes() const override { return BufOffset() + 2 * static_cast<size_t>(max_elems_) * sizeof(double); }

 private:
  size_t BufOffset() const { return (blob_.size() + 63) / 64 * 64; }

  Elem t_;
  int64_t in_elems_, out_elems_;
  std::vector<Pass> passes_;
  std::vector<unsigned char> blob_;  // the taps, uploaded at every run
  int64_t max_elems_;
};

// roi, scales, sizes: inputs 1-3 of Resize, 2-4 of ResizeGrad.
size_t FirstParam(const KernelInit& init) { return init.op == OpKind::kResizeGrad ? 2 : 1; }

bool ResizeParamsKnown(const KernelInit& init) {
  const size_t p = FirstParam(init);
  auto attrs = ir::ParseResizeAttrs(init.attrs ? *init.attrs : ir::Attributes());
  const bool crop = attrs.ok() && attrs->coord == ir::CoordMode::kTfCropAndResize;
  return (!crop || KnownOrAbsent(init, p)) && KnownOrAbsent(init, p + 1) && KnownOrAbsent(init, p + 2);
}

StatusOr<std::unique_ptr<Kernel>> MakeResize(const KernelInit& init) {
  const bool backward = init.op == OpKind::kResizeGrad;
  AMP_RETURN_IF_ERROR(backward ? CheckArity(init, 2, 5, 1, 1) : CheckArity(init, 1, 4, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {}, {0}));
  auto parsed = ir::ParseResizeAttrs(*init.attrs);
  if (!parsed.ok()) return Status(parsed.status().code(), StrCat(init.Describe(), ": ", parsed.status().message()));
  const ir::ResizeAttrs& a = *parsed;
  if (!ResizeParamsKnown(init)) return init.Error("roi, scales and sizes must be known at plan time");
  const size_t p = FirstParam(init);
  auto param = [&](size_t i) -> const ir::Tensor* {
    return i < init.inputs.size() && init.inputs[i].present() ? init.inputs[i].value : nullptr;
  };
  const std::vector<double> scales = param(p + 1) ? ConstDoubles(*param(p + 1)) : std::vector<double>{};
  const std::vector<int64_t> sizes = param(p + 2) ? ConstInts(*param(p + 2)) : std::vector<int64_t>{};
  const std::vector<double> roi =
      a.coord == ir::CoordMode::kTfCropAndResize && param(p) ? ConstDoubles(*param(p)) : std::vector<double>{};
  const std::vector<int64_t>& x_dims = backward ? init.outputs[0].dims : init.inputs[0].dims;
  const std::vector<int64_t>& y_dims = backward ? init.inputs[0].dims : init.outputs[0].dims;
  auto g = ir::ResolveResize(a, x_dims, roi, sizes.empty() ? scales : std::vector<double>{}, sizes);
  if (!g.ok()) return init.Error(g.status().message());
  if (g->out_dims != y_dims) return init.Error("scales/sizes do not match the resized dims");
  auto identity = [&](size_t d) {
    return g->out_dims[d] == x_dims[d] && g->scales[d] == 1.0 &&
           (a.coord != ir::CoordMode::kTfCropAndResize || (g->roi_start[d] == 0 && g->roi_end[d] == 1));
  };
  std::vector<int64_t> dims = init.inputs[0].dims;
  auto elems = [](const std::vector<int64_t>& d) {
    int64_t n = 1;
    for (int64_t v : d) n *= v;
    return n;
  };
  int64_t max_elems = elems(dims);
  std::vector<Pass> passes;
  std::vector<unsigned char> blob;
  const size_t rank = dims.size();
  for (size_t k = 0; k < rank; ++k) {
    const size_t d = backward ? rank - 1 - k : k;
    if (identity(d)) continue;
    Pass pass;
    pass.adjoint = backward;
    pass.in = x_dims[d];
    pass.out = g->out_dims[d];
    ResizeAxisTaps at = ResizeTapsOfAxis(a, *g, dims, d, pass.in, pass.out);
    pass.outer = at.outer;
    pass.inner = at.inner;
    const std::vector<ResizeTaps>& taps = at.taps;
    if (!backward) {
      size_t width = 1;
      for (const ResizeTaps& tx : taps) width = std::max(width, tx.index.size());
      pass.width = static_cast<int64_t>(width);
      std::vector<int32_t> count(static_cast<size_t>(pass.out));
      std::vector<int64_t> index(static_cast<size_t>(pass.out) * width, 0);
      std::vector<double> weight(static_cast<size_t>(pass.out) * width, 0.0);
      for (size_t x = 0; x < taps.size(); ++x) {
        count[x] = taps[x].extrapolate ? -1 : static_cast<int32_t>(taps[x].index.size());
        for (size_t j = 0; j < taps[x].index.size(); ++j) {
          index[x * width + j] = taps[x].index[j];
          weight[x * width + j] = taps[x].weight[j];
        }
      }
      pass.a = Append(blob, count);
      pass.b = Append(blob, index);
      pass.c = Append(blob, weight);
      pass.extrapolation = a.extrapolation_value;
    } else {
      // Entries of each source position in the CPU's order: output position, then tap.
      std::vector<std::vector<std::pair<int64_t, double>>> per(static_cast<size_t>(pass.in));
      for (size_t x = 0; x < taps.size(); ++x)
        for (size_t j = 0; j < taps[x].index.size(); ++j)
          per[static_cast<size_t>(taps[x].index[j])].push_back({static_cast<int64_t>(x), taps[x].weight[j]});
      std::vector<int64_t> offsets{0}, position;
      std::vector<double> weight;
      for (const auto& entries : per) {
        for (const auto& [x, w] : entries) {
          position.push_back(x);
          weight.push_back(w);
        }
        offsets.push_back(static_cast<int64_t>(position.size()));
      }
      pass.a = Append(blob, offsets);
      pass.b = Append(blob, position);
      pass.c = Append(blob, weight);
    }
    dims[d] = backward ? pass.in : pass.out;
    max_elems = std::max(max_elems, elems(dims));
    passes.push_back(pass);
  }
  return std::unique_ptr<Kernel>(std::make_unique<ResizeKernel>(*ElemOf(t), init.inputs[0].num_elements(),
                                                                init.outputs[0].num_elements(), std::move(passes),
                                                                std::move(blob), max_elems));
}

}  // namespace

void RegisterPadResize(Registry& r) {
  KernelEntry pad = CudaEntry(OpKind::kPad, "cuda", MakePad, 10, {});
  pad.accepts = [](const KernelInit& init) {
    return init.inputs.size() > 1 && init.inputs[1].value != nullptr && KnownOrAbsent(init, 3) &&
           init.inputs[0].dims.size() <= static_cast<size_t>(kMaxRank);
  };
  r.Add(std::move(pad));
  KernelEntry pad_grad = CudaEntry(OpKind::kPadGrad, "cuda", MakePadGrad);
  pad_grad.accepts = [](const KernelInit& init) {
    return init.inputs.size() > 2 && init.inputs[2].value != nullptr && KnownOrAbsent(init, 3) &&
           init.inputs[0].dims.size() <= static_cast<size_t>(kMaxRank);
  };
  r.Add(std::move(pad_grad));
  for (OpKind op : {OpKind::kResize, OpKind::kResizeGrad}) {
    KernelEntry e = CudaEntry(op, "cuda", MakeResize);
    e.accepts = ResizeParamsKnown;
    r.Add(std::move(e));
  }
}

}  // namespace amptrain::kernels::cuda
