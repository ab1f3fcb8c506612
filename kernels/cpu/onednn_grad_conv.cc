// oneDNN ConvGrad 2-D, fp32 and bf16: dX by convolution_backward_data, dW and
// dB by one convolution_backward_weights (bias diff included when the node
// has the dB output). Both primitive descriptors take the forward
// (forward_training) primitive_desc as their hint, built at creation.
// Layouts: oneDNN picks them (format_tag::any), since on plain nchw/oihw it
// has only gemm-based (im2col) convolutions, which are slow in bf16 above
// all; dY, X and W are reordered from the executor's plain buffers into
// scratch (dY once when both primitives read it in one layout), dX and dW
// computed in scratch and reordered back (LayoutArg). When the picked
// layouts still get a gemm or reference implementation, everything stays
// plain with no reorders. Channels-last dY, X and dX (TensorSpec::
// channels_last, kept so between kernels in training) are given to oneDNN as
// they are first (its nhwc backward convolutions need no activation
// reorders; weights still in its layout), before letting it pick. Outputs with data == nullptr: dX's
// primitive is skipped; dW or dB alone still run the weights primitive,
// writing the unused one into scratch. A 1-D convolution runs as the 2-D one
// it is (LiftWindow1d), a 3-D one as itself; ConvTranspose runs as its data
// gradient (below). Other ranks, and configurations for which oneDNN has only
// its reference implementation, fall back to the reference kernel
// (kernels/cpu/grad_conv.cc).

#include <algorithm>

#include "kernels/cpu/conv_geometry.h"
#include "kernels/cpu/grad_kernels.h"
#include "kernels/cpu/onednn_grad.h"

namespace amptrain::kernels::cpu::onednn {

namespace {

class ConvGradKernel : public Kernel {
 public:
  struct Parts {
    std::string describe;
    dnnl::convolution_backward_data data;
    dnnl::convolution_backward_weights weights;
    bool has_weights = false, has_bias = false;
    dnnl::memory::desc b;  // plain dB
    // The primitives' arguments, each in the layout its primitive chose.
    LayoutArg data_dy, data_w, data_dx, weights_x, weights_dy, weights_dw;
    bool shared_dy = false;  // both primitives read dY in one layout: reordered once
    size_t scratch = 0;      // the reordered copies, then dW/dB when the node lacks those outputs
    size_t w_bytes = 0;      // plain dW
    size_t pad_bytes = 0;    // oneDNN's scratchpad, after dW/dB: the larger of the two primitives' (they run in turn)
    size_t pad_offset = 0, scratch_end = 0;  // where it starts; the end of all scratch
  };
  // Lays out the scratch after the reordered copies: the unused dW, the unused dB, oneDNN's scratchpad.
  explicit ConvGradKernel(Parts p) : p_(std::move(p)), stream_(Engine()) {
    p_.scratch_end = p_.scratch + WeightBytes(p_) + (p_.has_bias ? p_.b.get_size() : 0);
    p_.pad_offset = PlaceScratchpad(p_.pad_bytes, &p_.scratch_end);
  }

  size_t scratch_bytes() const override { return p_.scratch_end; }

  Status Run(KernelContext& ctx) override {
    auto* scratch = static_cast<std::byte*>(ctx.scratch);
    auto* unused = scratch + p_.scratch;  // dW/dB outputs the node does not have
    void* pad = scratch + p_.pad_offset;
    void* dy = ctx.inputs[0].data;
    void* dx = ctx.outputs[0].data;
    void* dw = ctx.outputs.size() > 1 ? ctx.outputs[1].data : nullptr;
    void* db = ctx.outputs.size() > 2 ? ctx.outputs[2].data : nullptr;
    try {
      dnnl::memory dy_for_data;
      if (dx) {
        dy_for_data = p_.data_dy.In(stream_, dy, scratch);
        dnnl::memory dx_mem = p_.data_dx.Target(dx, scratch);
        dnnl::memory w_mem = p_.data_w.In(stream_, ctx.inputs[2].data, scratch);
        if (data_args_.empty()) {  // LayoutArg memories are the same objects at every call
          data_args_.Add(DNNL_ARG_DIFF_DST, dy_for_data);
          data_args_.Add(DNNL_ARG_WEIGHTS, w_mem);
          data_args_.Add(DNNL_ARG_DIFF_SRC, dx_mem);
          data_args_.AddScratchpad(p_.pad_bytes);
        }
        data_args_.SetScratchpad(pad);
        data_args_.Execute(p_.data, stream_);
        p_.data_dx.Out(stream_, dx_mem, dx);
      }
      if (p_.has_weights && (dw || db)) {
        // An unused dW is computed where oneDNN's layout puts it (its scratch copy, not reordered
        // out), or, when that layout is the plain one, into the unused region.
        void* dw_plain = dw ? dw : unused;
        dnnl::memory dw_mem = p_.weights_dw.Target(dw_plain, scratch);
        dnnl::memory x_mem = p_.weights_x.In(stream_, ctx.inputs[1].data, scratch);
        const bool shared = dx && p_.shared_dy;
        dnnl::memory dy_mem = shared ? dy_for_data : p_.weights_dy.In(stream_, dy, scratch);
        // Made per dY source (this call's dX decides whether dY's copy is shared).
        ExecArgs& args = weight_args_[shared ? 1 : 0];
        if (args.empty()) {
          args.Add(DNNL_ARG_SRC, x_mem);
          args.Add(DNNL_ARG_DIFF_DST, dy_mem);
          args.Add(DNNL_ARG_DIFF_WEIGHTS, dw_mem);
          if (p_.has_bias) args.Add(DNNL_ARG_DIFF_BIAS, p_.b);
          args.AddScratchpad(p_.pad_bytes);
        }
        if (p_.has_bias) args.Set(3, db ? db : unused + WeightBytes(p_));
        args.SetScratchpad(pad);
        args.Execute(p_.weights, stream_);
        if (dw) p_.weights_dw.Out(stream_, dw_mem, dw);
      }
      stream_.wait();
    } catch (const dnnl::error& e) {
      return Internal(p_.describe, ": oneDNN execution failed: ", e.what());
    }
    return Status::Ok();
  }

 private:
  // The unused region's plain dW: needed only where dW is computed in the plain layout (a
  // reordered one has its scratch copy). At the first backward step of ResNet-18 (b128, the
  // arena's peak) this was 4.7 MB (bf16) / 9.4 MB (fp32) reserved for a dW the node has.
  static size_t WeightBytes(const Parts& p) {
    return p.has_weights && !p.weights_dw.reordered() ? (p.w_bytes + 63) / 64 * 64 : 0;
  }

  Parts p_;
  dnnl::stream stream_;
  ExecArgs data_args_, weight_args_[2];  // made at the first call
};

StatusOr<std::unique_ptr<Kernel>> MakeConvGrad(const KernelInit& init) {
  ir::Attributes lifted_attrs;  // a 1-D convolution runs as the 2-D one it is (LiftWindow1d)
  if (std::optional<KernelInit> lifted = LiftWindow1d(init, lifted_attrs)) return MakeConvGrad(*lifted);
  AMP_RETURN_IF_ERROR(grad::CheckArity(init, 3, 3, 1, 3));
  AMP_RETURN_IF_ERROR(grad::CheckSameDType(init, 0, {1, 2}));
  const DType t = init.inputs[0].dtype;
  const auto& dy = init.inputs[0].dims;
  const auto& x = init.inputs[1].dims;
  const auto& w = init.inputs[2].dims;
  if ((x.size() != 4 && x.size() != 5) || w.size() != x.size() || dy.size() != x.size())
    return init.Error("oneDNN ConvGrad takes 1-D, 2-D and 3-D convolutions only");
  AMP_ASSIGN_OR_RETURN(int64_t group, init.attrs->GetInt("group", 1));
  if (group < 1 || w[0] % group != 0 || x[1] != w[1] * group) return init.Error("channels do not match group");
  AMP_ASSIGN_OR_RETURN(ir::WindowGeometry g,
                       ResolveWindow(grad::ForwardInit(init, 1), std::vector<int64_t>(w.begin() + 2, w.end()), false));
  return Guarded(init, [&]() -> StatusOr<std::unique_ptr<Kernel>> {
    using desc = dnnl::memory::desc;
    const std::vector<int64_t> wdims = GroupedWeightDims(w, group);
    // The buffers' layouts: plain, or channels-last where the executor keeps the value so.
    const desc x_plain = SpecDesc(init.inputs[1]), dy_plain = SpecDesc(init.inputs[0]), w_plain = PlainDesc(wdims, t);
    const desc dx_plain = init.outputs[0].present() ? SpecDesc(init.outputs[0]) : PlainDesc(x, t);
    const bool any_nhwc = init.inputs[0].channels_last || init.inputs[1].channels_last || init.outputs[0].channels_last;
    ConvGradKernel::Parts p;
    p.describe = init.Describe();
    p.b = PlainDesc({w[0]}, t);
    p.has_weights = init.outputs.size() > 1;
    p.has_bias = init.outputs.size() > 2;
    const dnnl::memory::dims strides = Dims(g.strides), dil = Dilations(g.dilations);
    const dnnl::memory::dims pl = Dims(g.pads_begin), pr = Dims(g.pads_end);
    const auto alg = dnnl::algorithm::convolution_direct;
    // kBuffers: the activations as their buffers hold them, oneDNN picks the
    // weights' layout; kBlocked: oneDNN picks every layout (its direct
    // convolutions need blocked or channels-last ones); kPlain: all plain
    // nchw/oihw, the buffers reordered to it where they are channels-last.
    enum class Layouts { kBuffers, kBlocked, kPlain };
    struct Pds {
      dnnl::convolution_backward_data::primitive_desc data;
      dnnl::convolution_backward_weights::primitive_desc weights;
    };
    auto make = [&](Layouts layouts) {
      const bool blocked = layouts != Layouts::kPlain;
      auto pick = [&](const desc& buffer, const std::vector<int64_t>& dims, bool activation) {
        if (layouts == Layouts::kBlocked || (layouts == Layouts::kBuffers && !activation))
          return desc(Dims(dims), DataType(t), dnnl::memory::format_tag::any);
        return layouts == Layouts::kBuffers ? buffer : PlainDesc(dims, t);
      };
      const desc xd = pick(x_plain, x, true), dyd = pick(dy_plain, dy, true), wd = pick(w_plain, wdims, false);
      // bf16: dW accumulates in fp32 and is rounded once by the reorder to the plain buffer.
      const desc dwd = blocked && t == DType::kBFloat16
                           ? desc(Dims(wdims), dnnl::memory::data_type::f32, dnnl::memory::format_tag::any)
                           : wd;
      dnnl::convolution_forward::primitive_desc fwd(
          dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, xd, wd, p.b, dyd, strides, dil, pl,
                                          pr),
          Engine());
      Pds pds;
      const dnnl::primitive_attr attr = UserScratchpad();
      pds.data = dnnl::convolution_backward_data::primitive_desc(
          dnnl::convolution_backward_data::desc(alg, xd, wd, dyd, strides, dil, pl, pr), attr, Engine(), fwd);
      if (p.has_weights) {
        auto d = p.has_bias ? dnnl::convolution_backward_weights::desc(alg, xd, dwd, p.b, dyd, strides, dil, pl, pr)
                            : dnnl::convolution_backward_weights::desc(alg, xd, dwd, dyd, strides, dil, pl, pr);
        pds.weights = dnnl::convolution_backward_weights::primitive_desc(d, attr, Engine(), fwd);
      }
      return pds;
    };
    auto slow = [&](const Pds& pds) {
      return IsGemmImpl(pds.data) || IsReferenceImpl(pds.data) ||
             (p.has_weights && (IsGemmImpl(pds.weights) || IsReferenceImpl(pds.weights)));
    };
    Pds pds = make(any_nhwc ? Layouts::kBuffers : Layouts::kBlocked);
    if (slow(pds) && any_nhwc) pds = make(Layouts::kBlocked);
    if (slow(pds)) pds = make(Layouts::kPlain);
    // A depthwise convolution that oneDNN 2.6's jit kernels do not take (a
    // kernel wider than the padded plane: EfficientNet's 5x5 at 2x2) gets
    // its gemm, one tiny product per channel: 65 ms for [32, 1152, 2, 2]
    // where the reference's direct loops take about a millisecond.
    if (group > 1 && group == x[1] && slow(pds))
      return Unimplemented(p.describe, ": oneDNN has only its gemm for this depthwise conv (the reference is faster)");
    if (IsReferenceImpl(pds.data)) return Unimplemented(p.describe, ": oneDNN has only its reference backward-data conv");
    if (p.has_weights && IsReferenceImpl(pds.weights))
      return Unimplemented(p.describe, ": oneDNN has only its reference backward-weights conv");
    p.data = dnnl::convolution_backward_data(pds.data);
    p.data_dy = LayoutArg(dy_plain, pds.data.diff_dst_desc(), /*input=*/true, &p.scratch);
    p.data_w = LayoutArg(w_plain, pds.data.weights_desc(), true, &p.scratch);
    p.data_dx = LayoutArg(dx_plain, pds.data.diff_src_desc(), /*input=*/false, &p.scratch);
    if (p.has_weights) {
      p.weights = dnnl::convolution_backward_weights(pds.weights);
      p.weights_x = LayoutArg(x_plain, pds.weights.src_desc(), true, &p.scratch);
      p.shared_dy = pds.weights.diff_dst_desc() == pds.data.diff_dst_desc();
      p.weights_dy = p.shared_dy ? p.data_dy : LayoutArg(dy_plain, pds.weights.diff_dst_desc(), true, &p.scratch);
      p.weights_dw = LayoutArg(w_plain, pds.weights.diff_weights_desc(), false, &p.scratch);
    }
    p.w_bytes = w_plain.get_size();
    p.pad_bytes = ScratchpadBytes(pds.data);
    if (p.has_weights) p.pad_bytes = std::max(p.pad_bytes, ScratchpadBytes(pds.weights));
    return std::unique_ptr<Kernel>(new ConvGradKernel(std::move(p)));
  });
}

// ConvTranspose: Y = ConvTranspose(X, W) is the data gradient of the Conv
// that maps Y-shaped input to X with the same W ([C_in, C_out/group, k...] is
// that Conv's [out, in/group, k...]) and window, its pads resolved; so it
// runs as that ConvGrad's dX-only primitive with X in dY's place (the Conv's
// input is not read: Y's own buffer stands in for it). The bias, if any, is
// added per channel after, in fp32 (2-byte types with a bias go to the
// widened kernel, which rounds once after it). Declined, for the reference:
// an output_padding of a stride or more (that Conv would not map Y back to X).
class ConvTransposeKernel final : public Kernel {
 public:
  ConvTransposeKernel(std::unique_ptr<Kernel> data_grad, bool bias, int64_t batch, int64_t channels, int64_t plane,
                      int threads)
      : data_grad_(std::move(data_grad)), bias_(bias), batch_(batch), channels_(channels), plane_(plane),
        threads_(threads) {}
  size_t scratch_bytes() const override { return data_grad_->scratch_bytes(); }
  Status Run(KernelContext& ctx) override {
    inner_.inputs.assign({ctx.inputs[0], ctx.outputs[0], ctx.inputs[1]});
    inner_.outputs.assign({ctx.outputs[0]});
    inner_.scratch = ctx.scratch;
    inner_.seed = ctx.seed;
    inner_.run = ctx.run;
    AMP_RETURN_IF_ERROR(data_grad_->Run(inner_));
    if (!bias_) return Status::Ok();
    const float* b = ctx.inputs[2].as<const float>();
    float* y = ctx.outputs[0].as<float>();
    const int64_t planes = batch_ * channels_, plane = plane_, channels = channels_;
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && planes * plane >= (1 << 16))
    for (int64_t i = 0; i < planes; ++i) {
      const float v = b[i % channels];
      float* row = y + i * plane;
      for (int64_t k = 0; k < plane; ++k) row[k] += v;
    }
    return Status::Ok();
  }

 private:
  std::unique_ptr<Kernel> data_grad_;
  bool bias_;
  int64_t batch_, channels_, plane_;
  int threads_;
  KernelContext inner_;
};

StatusOr<std::unique_ptr<Kernel>> MakeConvTranspose(const KernelInit& init) {
  ir::Attributes lifted_attrs;  // a 1-D one runs as the 2-D one it is (LiftWindow1d)
  if (std::optional<KernelInit> lifted = LiftWindow1d(init, lifted_attrs)) return MakeConvTranspose(*lifted);
  if (!init.attrs || init.inputs.size() < 2 || init.inputs.size() > 3 || init.outputs.size() != 1)
    return init.Error("expects inputs X, W[, B] and one output");
  const DType t = init.inputs[0].dtype;
  const auto& x = init.inputs[0].dims;
  const auto& w = init.inputs[1].dims;
  const auto& y = init.outputs[0].dims;
  if (x.size() != 4 || w.size() != 4 || y.size() != 4) return init.Error("oneDNN ConvTranspose takes 1-D and 2-D only");
  if (init.inputs[1].dtype != t) return init.Error("mixed dtypes");
  const bool bias = init.inputs.size() > 2 && init.inputs[2].present();
  if (bias && (t != DType::kFloat32 || init.inputs[2].dtype != t))
    return init.Error("a bias in ", ir::DTypeName(t), " (the widened kernel adds it in fp32)");
  AMP_ASSIGN_OR_RETURN(int64_t group, init.attrs->GetInt("group", 1));
  if (group < 1 || x[1] != w[0] || x[1] % group != 0 || y[1] != w[1] * group)
    return init.Error("channels do not match group");
  AMP_ASSIGN_OR_RETURN(ir::WindowGeometry g, ResolveWindow(init, {w[2], w[3]}, /*transposed=*/true));
  for (size_t d = 0; d < 2; ++d)
    if (d < g.output_padding.size() && g.output_padding[d] >= g.strides[d])
      return init.Error("output_padding of a stride or more");
  ir::Attributes conv;
  conv.Set("group", group);
  conv.Set("kernel_shape", std::vector<int64_t>{w[2], w[3]});
  conv.Set("strides", g.strides);
  conv.Set("dilations", g.dilations);
  conv.Set("pads", std::vector<int64_t>{g.pads_begin[0], g.pads_begin[1], g.pads_end[0], g.pads_end[1]});
  KernelInit c = init;
  c.op = OpKind::kConvGrad;
  c.attrs = &conv;
  c.inputs = {init.inputs[0], TensorSpec{t, y}, init.inputs[1]};
  c.outputs = {init.outputs[0]};
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> data_grad, MakeConvGrad(c));
  return std::unique_ptr<Kernel>(
      new ConvTransposeKernel(std::move(data_grad), bias, y[0], y[1], y[2] * y[3], init.threads));
}

}  // namespace

void RegisterOneDnnConvTranspose(Registry& r) { AddOneDnn(r, OpKind::kConvTranspose, MakeConvTranspose); }

void RegisterOneDnnConvGrad(Registry& r) {
  // An unused dX (the first convolution's) skips its primitive, widened too:
  // the widened kernel passes the absent output on to the fp32 one.
  for (KernelEntry e : {OneDnnEntry(OpKind::kConvGrad, MakeConvGrad), WidenedEntry(OpKind::kConvGrad, MakeConvGrad)}) {
    e.skips_unused_outputs = true;
    e.channels_last_inputs = 0b11;  // dY, X (the widened kernel's copies keep the layout)
    e.channels_last_outputs = 0b1;  // dX
    r.Add(std::move(e));
  }
}

}  // namespace amptrain::kernels::cpu::onednn
