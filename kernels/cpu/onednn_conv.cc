// oneDNN Conv 2-D and FusedConv (ir/ops.def), fp32 and bf16 (bf16 src/weights,
// fp32 accumulation, bf16 dst): groups (incl. depthwise), dilations, strides,
// asymmetric pads (oneDNN padding_l/padding_r), bias fused; FusedConv adds the
// residual Z through a `sum` post-op and Relu through an `eltwise_relu` one.
//
// Layouts: the executor's buffers are plain nchw (or nhwc where the executor
// keeps a value channels-last between kernels that take it: X, Z and Y
// here, TensorSpec::channels_last), for which oneDNN 2.6 mostly
// has gemm-based convolutions only. The primitive is created with
// format_tag::any for src/dst/weights, so it picks its blocked direct
// convolution (nChw16c, ...); src is then reordered into a scratch buffer,
// dst is computed in scratch and reordered back (Z is first reordered into
// dst for the sum post-op). When the blocked variant only gets a gemm or
// reference implementation too, the plain one is used without reorders.
// A constant weight is reordered once at creation into the layout oneDNN
// picked; a computed weight (a parameter in training) is reordered into
// scratch at every run (it is small beside the activations). A 1-D
// convolution runs as the 2-D one it is (LiftWindow1d); 3-D ones (ncdhw) as
// themselves. Other ranks, and
// configurations for which oneDNN only has its reference implementation,
// fall back to the reference kernel.
//
// Winograd: an inference convolution (not KernelInit::training: a gradient
// must be the direct convolution's) of 3x3, stride 1, no dilation, one group,
// fp32, with constant weights (KernelInit::winograd, on by default; `--no-winograd`
// turns it off) asks oneDNN for convolution_winograd first and keeps it only where
// oneDNN has a real implementation (jit_wino_4x3, AVX-512), else the direct
// one. F(4x4, 3x3) does 2.25x fewer multiplies: ResNet-50 inference at batch
// 32 on 2 Zen 5 cores went from 561-571 to 497-516 ms, and its logits' error
// against the reference kernels stayed 6-7e-7 (normalized; direct 6.3e-7).
// tests/kernels/onednn_test.cc checks the error per shape against direct's.
// The cost is memory: the transformed weights are 36/9 of the 3x3 kernels
// (ResNet-50 at batch 1: peak RSS 344 -> 414 MiB; `--no-winograd` saves it).
// Computed weights (parameters in training, the trainer's evaluation) stay
// direct: the weight transform at every run made ResNet-18 training steps
// 2.3x slower (97 -> 231 ms at batch 32, 64x64).
//
// A strided 1x1 convolution without padding reads only every stride-th
// pixel: on a channels-last X it runs as the stride-1 convolution of those
// pixels, gathered into scratch first (the same products and sums; oneDNN
// 2.6's brgconv_1x1 on a strided nhwc source took 1.5-3.5x the time of the
// gather and the stride-1 convolution together: ResNet-50's layer3
// downsample, 512->1024 channels, 28x28 -> 14x14 at batch 32, 22-51 ms
// against 16 ms).
#include <algorithm>
#include <cstring>

#include "kernels/cpu/conv_geometry.h"
#include "kernels/cpu/onednn_common.h"

namespace amptrain::kernels::cpu::onednn {

namespace {

using desc = dnnl::memory::desc;
using tag = dnnl::memory::format_tag;

// The gather of a strided 1x1 convolution's pixels (see the top): X is
// [n, h, w, c] channels-last; the gathered copy is [n, h', w', c] with
// pixel (i, j) = X's (i * stride_h, j * stride_w).
struct Subsample {
  int64_t n = 0, h = 0, w = 0, c = 0, oh = 0, ow = 0, stride_h = 1, stride_w = 1;
  size_t elem = 0;  // bytes per element
  bool active() const { return n > 0; }
  size_t bytes() const { return static_cast<size_t>(n * oh * ow * c) * elem; }
  void Gather(const std::byte* x, std::byte* out, int threads) const {
    const size_t pixel = static_cast<size_t>(c) * elem;
#pragma omp parallel for collapse(2) num_threads(threads) schedule(static) if (threads > 1)
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < oh; ++i) {
        const std::byte* row = x + static_cast<size_t>((b * h + i * stride_h) * w) * pixel;
        std::byte* dst = out + static_cast<size_t>((b * oh + i) * ow) * pixel;
        for (int64_t j = 0; j < ow; ++j) std::memcpy(dst + j * pixel, row + j * stride_w * pixel, pixel);
      }
  }
};

struct ConvSetup {
  desc src_plain, dst_plain, w_plain, bias, z_plain;  // *_plain: the buffers' layouts
  dnnl::convolution_forward::primitive_desc pd;
  bool has_bias = false, residual = false;
  Subsample subsample;  // active: src_plain is the gathered copy's layout
};

class ConvKernel : public Kernel {
 public:
  // Scratch: the reordered src, the dst computed in oneDNN's layout, then a
  // computed weight's reordered copy (each only when its layout is not plain),
  // then oneDNN's scratchpad (UserScratchpad).
  ConvKernel(std::string describe, const ConvSetup& s, dnnl::memory weights, int threads)
      : describe_(std::move(describe)),
        conv_(s.pd),
        bias_(s.bias),
        z_plain_(s.z_plain),
        weights_(std::move(weights)),
        subsample_(s.subsample),
        threads_(threads),
        has_bias_(s.has_bias),
        residual_(s.residual),
        stream_(Engine()) {
    if (subsample_.active()) scratch_end_ = (subsample_.bytes() + 63) / 64 * 64;  // the gathered X, first
    src_ = LayoutArg(s.src_plain, s.pd.src_desc(), /*input=*/true, &scratch_end_);
    dst_ = LayoutArg(s.dst_plain, s.pd.dst_desc(), /*input=*/false, &scratch_end_);
    // The residual Z goes into dst's buffer for the sum post-op, in dst's layout.
    const desc& y_desc = dst_.reordered() ? s.pd.dst_desc() : s.dst_plain;
    if (residual_ && s.z_plain != y_desc)
      z_in_ = dnnl::reorder(dnnl::reorder::primitive_desc(Engine(), s.z_plain, Engine(), y_desc));
    if (!weights_) w_arg_ = LayoutArg(s.w_plain, s.pd.weights_desc(), /*input=*/true, &scratch_end_);
    pad_bytes_ = ScratchpadBytes(s.pd);
    pad_offset_ = PlaceScratchpad(pad_bytes_, &scratch_end_);
  }

  size_t scratch_bytes() const override { return scratch_end_; }
  // Y over Z: the sum post-op accumulates into dst, so when Z is already in
  // dst's layout and dst is the output buffer itself, an aliased Z needs no copy.
  int inplace_input(size_t output) const override {
    return output == 0 && residual_ && !z_in_ && !dst_.reordered() ? 3 : -1;
  }

  Status Run(KernelContext& ctx) override {
    try {
      auto* scratch = static_cast<std::byte*>(ctx.scratch);
      void* out = ctx.outputs[0].data;
      void* x_data = ctx.inputs[0].data;
      if (subsample_.active()) {
        subsample_.Gather(static_cast<const std::byte*>(x_data), scratch, threads_);
        x_data = scratch;
      }
      dnnl::memory x = src_.In(stream_, x_data, scratch);
      dnnl::memory y = dst_.Target(out, scratch);
      if (residual_) {
        const ir::TensorView& z = ctx.inputs[3];
        if (z_in_) {
          dnnl::memory z_plain(z_plain_, Engine(), z.data);
          z_in_.execute(stream_, z_plain, y);
        } else if (void* target = y.get_data_handle(); z.data != target) {
          std::memcpy(target, z.data, z_plain_.get_size());  // Z has y's layout (out's, or scratch's)
        }
      }
      dnnl::memory w = weights_ ? weights_ : w_arg_.In(stream_, ctx.inputs[1].data, scratch);
      if (args_.empty()) {  // LayoutArg memories are the same objects at every call
        args_.Add(DNNL_ARG_SRC, x);
        args_.Add(DNNL_ARG_DST, y);
        args_.Add(DNNL_ARG_WEIGHTS, w);
        if (has_bias_) args_.Add(DNNL_ARG_BIAS, bias_);
        args_.AddScratchpad(pad_bytes_);
      }
      if (has_bias_) args_.Set(3, ctx.inputs[2].data);
      args_.SetScratchpad(scratch + pad_offset_);
      args_.Execute(conv_, stream_);
      dst_.Out(stream_, y, out);
      stream_.wait();
    } catch (const dnnl::error& e) {
      return Internal(describe_, ": oneDNN execution failed: ", e.what());
    }
    return Status::Ok();
  }

 private:
  std::string describe_;
  dnnl::convolution_forward conv_;
  desc bias_, z_plain_;
  dnnl::memory weights_;        // reordered constant weight; empty when W is computed
  LayoutArg src_, dst_, w_arg_;  // w_arg_: a computed weight (weights_ empty)
  dnnl::reorder z_in_;          // residual into dst's layout; empty when Z already has it
  Subsample subsample_;         // active: X's pixels are gathered into scratch first
  int threads_ = 1;
  ExecArgs args_;  // made at the first call
  size_t scratch_end_ = 0;
  size_t pad_bytes_ = 0, pad_offset_ = 0;  // oneDNN's scratchpad, last in scratch
  bool has_bias_, residual_;
  dnnl::stream stream_;
};

StatusOr<std::unique_ptr<Kernel>> MakeConv(const KernelInit& init) {
  ir::Attributes lifted_attrs;  // a 1-D convolution runs as the 2-D one it is (LiftWindow1d)
  if (std::optional<KernelInit> lifted = LiftWindow1d(init, lifted_attrs)) return MakeConv(*lifted);
  const bool fused = init.op == OpKind::kFusedConv;
  if (!init.attrs || init.inputs.size() < 2 || init.inputs.size() > (fused ? 4u : 3u) || init.outputs.size() != 1)
    return init.Error(fused ? "expects inputs X, W[, B[, Z]] and one output" : "expects inputs X, W[, B] and one output");
  const DType t = init.inputs[0].dtype;
  const auto& x = init.inputs[0].dims;
  const auto& w = init.inputs[1].dims;
  const auto& y = init.outputs[0].dims;
  ConvSetup s;
  s.has_bias = init.inputs.size() > 2 && init.inputs[2].present();
  s.residual = init.inputs.size() > 3 && init.inputs[3].present();
  if ((x.size() != 4 && x.size() != 5) || w.size() != x.size())
    return init.Error("oneDNN conv takes 1-D, 2-D and 3-D convolutions only");
  if (init.inputs[1].dtype != t || (s.has_bias && init.inputs[2].dtype != t)) return init.Error("mixed dtypes");
  if (s.residual && (init.inputs[3].dtype != t || init.inputs[3].dims != y))
    return init.Error("residual Z must have the dtype and shape of Y");
  AMP_ASSIGN_OR_RETURN(int64_t group, init.attrs->GetInt("group", 1));
  if (group < 1 || w[0] % group != 0 || x[1] != w[1] * group) return init.Error("channels do not match group");
  AMP_ASSIGN_OR_RETURN(std::string act, init.attrs->GetString("activation", ""));
  if (act != "" && act != "Relu") return init.Error("activation '", act, "' is not supported");
  const std::vector<int64_t> kernel(w.begin() + 2, w.end());
  AMP_ASSIGN_OR_RETURN(ir::WindowGeometry g, ResolveWindow(init, kernel, false));
  auto all = [](const std::vector<int64_t>& v, int64_t value) {
    return std::all_of(v.begin(), v.end(), [&](int64_t e) { return e == value; });
  };
  const bool pointwise = all(kernel, 1), strided = !all(g.strides, 1);
  const bool unpadded = all(g.pads_begin, 0) && all(g.pads_end, 0), undilated = all(g.dilations, 1);
  if (x.size() == 4 && pointwise && strided && unpadded && undilated && init.inputs[0].channels_last)
    s.subsample = {x[0], x[2], x[3], x[1], y[2], y[3], g.strides[0], g.strides[1], ir::DTypeSize(t)};
  const std::vector<int64_t> x_read = s.subsample.active() ? std::vector<int64_t>{x[0], x[1], y[2], y[3]} : x;
  return Guarded(init, [&]() -> StatusOr<std::unique_ptr<Kernel>> {
    s.src_plain = s.subsample.active() ? desc(Dims(x_read), DataType(t), tag::acdb) : SpecDesc(init.inputs[0]);
    s.dst_plain = SpecDesc(init.outputs[0]);
    if (s.residual) s.z_plain = SpecDesc(init.inputs[3]);
    const std::vector<int64_t> wdims = GroupedWeightDims(w, group);
    s.w_plain = PlainDesc(wdims, t);
    s.bias = PlainDesc({w[0]}, t);
    const ir::Tensor* wval = init.inputs[1].value;
    const bool const_weights = wval && wval->dtype() == t;
    dnnl::primitive_attr attr = UserScratchpad();
    dnnl::post_ops ops;
    if (s.residual) ops.append_sum(1.0f);
    if (act == "Relu") ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
    const dnnl::memory::dims strides = s.subsample.active() ? dnnl::memory::dims{1, 1} : Dims(g.strides);
    const dnnl::memory::dims dil = Dilations(g.dilations);
    const dnnl::memory::dims pl = Dims(g.pads_begin), pr = Dims(g.pads_end);
    const auto direct = dnnl::algorithm::convolution_direct;
    auto forward = [&](const desc& src, const desc& wd, const desc& dst, dnnl::algorithm alg) {
      auto prop = dnnl::prop_kind::forward_inference;
      auto d = s.has_bias ? dnnl::convolution_forward::desc(prop, alg, src, wd, s.bias, dst, strides, dil, pl, pr)
                          : dnnl::convolution_forward::desc(prop, alg, src, wd, dst, strides, dil, pl, pr);
      return dnnl::convolution_forward::primitive_desc(d, attr, Engine());
    };
    auto make = [&](bool blocked, dnnl::algorithm alg = dnnl::algorithm::convolution_direct) {
      auto any = [&](const desc& plain, const std::vector<int64_t>& dims) {
        return blocked ? desc(Dims(dims), DataType(t), tag::any) : plain;
      };
      return forward(any(s.src_plain, x_read), any(s.w_plain, wdims), any(s.dst_plain, y), alg);
    };
    const bool wino_shape = t == DType::kFloat32 && !init.training && const_weights && group == 1 && w.size() == 4 &&
                            w[2] == 3 && w[3] == 3 &&
                            !strided && undilated && init.winograd;
    bool wino = false;
    if (wino_shape) {
      try {
        s.pd = make(true, dnnl::algorithm::convolution_winograd);
        wino = std::string(s.pd.impl_info_str()).find("wino") != std::string::npos;
      } catch (const dnnl::error&) {  // none for this shape or ISA: the direct one below
      }
    }
    if (!wino) s.pd = make(true);
    // A computed fp32 weight (a parameter in training) is reordered at every
    // run: into the layout of its backward-weights primitive (OIhw16i16o on
    // AVX-512) where the forward has a direct convolution for it. oneDNN
    // 2.6's jit convolution then runs instead of brgconv, and was faster on
    // ResNet shapes here (Zen 5, 2 threads, batch 32, per step: ResNet-18
    // 64x64 forward convolutions 30.9 -> 25.1 ms, the step 108-115 ->
    // 103-107 ms; ResNet-50 Conv 369-407 -> 327-347 ms per 6 steps;
    // SimpleCNN 20.5 -> 19.0 ms). Grouped convolutions keep oneDNN's pick:
    // MobileNetV2's depthwise ones went from brdgmm_dw to a slower jit.
    if (init.training && !const_weights && t == DType::kFloat32 && group == 1 && !wino && !IsGemmImpl(s.pd) &&
        !IsReferenceImpl(s.pd)) {
      try {
        // The activations in the layouts oneDNN picked above; the weights in the backward one's.
        const desc src = s.pd.src_desc(), dst = s.pd.dst_desc(), w_any(Dims(wdims), DataType(t), tag::any);
        dnnl::convolution_backward_weights::primitive_desc bw(
            dnnl::convolution_backward_weights::desc(direct, src, w_any, dst, strides, dil, pl, pr), Engine(), s.pd);
        const desc w_bw = bw.diff_weights_desc();
        if (w_bw != s.pd.weights_desc() && !IsGemmImpl(bw) && !IsReferenceImpl(bw)) {
          dnnl::convolution_forward::primitive_desc alt = forward(src, w_bw, dst, direct);
          if (!IsGemmImpl(alt) && !IsReferenceImpl(alt)) s.pd = alt;
        }
      } catch (const dnnl::error&) {  // no such primitive: the one above
      }
    }
    if (IsGemmImpl(s.pd) || IsReferenceImpl(s.pd)) s.pd = make(false);
    if (IsReferenceImpl(s.pd)) return Unimplemented(init.Describe(), ": oneDNN has only its reference convolution here");
    dnnl::memory weights;
    if (const_weights) weights = ReorderConstant(*wval, s.w_plain, s.pd.weights_desc());
    return std::unique_ptr<Kernel>(new ConvKernel(init.Describe(), s, std::move(weights), init.threads));
  });
}

}  // namespace

void RegisterOneDnnConv(Registry& r) {
  // X, Z and Y may be channels-last, in the storage-only twin too: its
  // widening and narrowing are flat copies of batch rows, which keep the
  // layout, and the fp32 kernel inside takes the same specs.
  for (auto [op, inputs] : {std::pair{OpKind::kConv, 0b1u}, std::pair{OpKind::kFusedConv, 0b1001u}}) {
    for (KernelEntry e : {OneDnnEntry(op, MakeConv), WidenedEntry(op, MakeConv)}) {
      e.channels_last_inputs = inputs;
      e.channels_last_outputs = 0b1;
      r.Add(std::move(e));
    }
  }
}

}  // namespace amptrain::kernels::cpu::onednn
