// Direct ConvGrad of a 2-D depthwise convolution (group == input channels ==
// output channels), fp32, fp16 and bf16, any strides, pads and dilations, dY,
// X and dX plain or channels-last (each tensor by its own strides; the
// channel loop is the inner one, contiguous when channels-last, as the
// executor keeps them in training). It runs where oneDNN 2.6 has only its gemm
// (one tiny product per channel: EfficientNet's 5x5 and 3x3 depthwise over
// 2x2 planes, 65 ms per call for [32, 1152, 2, 2]) and so declines: its
// entries rank below oneDNN's (and, for 2-byte types, below the widened
// oneDNN kernel), above the reference.
// The reference's sums (kernels/cpu/grad_conv.cc), in double, rounded once,
// so the reference's bits:
//   dX[n, c, i]  = sum over taps k (row-major) of W[c, k] * dY[n, c, o(i, k)]
//                  (a tap reaches an input position from one output at most)
//   dW[c, k]     = sum over n of (sum over outputs o of dY[n, c, o] * X[n, c, i(o, k)])
//   dB[c]        = sum over n, then o, of dY[n, c, o]
// Work items own what they write (a row of dX; a block of channels of dW and
// dB), so the bits do not depend on the thread count.
#include <utility>
#include <vector>

#include "kernels/cpu/conv_geometry.h"
#include "kernels/cpu/direct_kernels.h"
#include "kernels/cpu/grad_kernels.h"

namespace amptrain::kernels::cpu::direct {

namespace {

using grad::Load;
using grad::Store;

constexpr int64_t kChannelBlock = 16;  // channels per dW/dB work item

// Element strides of a [N, C, H, W] tensor as its buffer holds it.
struct Strides4 {
  int64_t n, c, h, w;
  static Strides4 Of(const TensorSpec& t) {
    const int64_t c = t.dims[1], h = t.dims[2], w = t.dims[3];
    if (t.channels_last) return {h * w * c, 1, w * c, c};
    return {c * h * w, h * w, w, 1};
  }
  static Strides4 Last(int64_t c, int64_t h, int64_t w) { return {h * w * c, 1, w * c, c}; }
  bool last() const { return c == 1; }
  int64_t at(int64_t n_, int64_t c_, int64_t h_, int64_t w_) const { return n_ * n + c_ * c + h_ * h + w_ * w; }
};

struct Geometry {
  int64_t n, c, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
};

template <class T>
class DepthwiseConvGradKernel : public Kernel {
 public:
  DepthwiseConvGradKernel(Geometry g, Strides4 dy, Strides4 x, Strides4 dx, int threads)
      : g_(g), dy_(dy), x_(x), dx_(dx), threads_(threads) {}

  Status Run(KernelContext& ctx) override {
    const T* dy = ctx.inputs[0].as<const T>();
    const T* x = ctx.inputs[1].as<const T>();
    const T* w = ctx.inputs[2].as<const T>();
    T* dx = ctx.outputs[0].data ? ctx.outputs[0].as<T>() : nullptr;
    T* dw = ctx.outputs.size() > 1 && ctx.outputs[1].data ? ctx.outputs[1].as<T>() : nullptr;
    T* db = ctx.outputs.size() > 2 && ctx.outputs[2].data ? ctx.outputs[2].as<T>() : nullptr;
    // The loops run on channels-last tensors (channels the inner, contiguous
    // loop); plain ones are transposed into scratch and dX back.
    auto* scratch = static_cast<T*>(ctx.scratch);
    const T* dy_last = dy;
    const T* x_last = x;
    T* dx_last = dx;
    if (!dy_.last()) dy_last = ToLast(dy, dy_, g_.oh, g_.ow, std::exchange(scratch, scratch + Elements(g_.oh, g_.ow)));
    if (!x_.last() && (dw || db)) x_last = ToLast(x, x_, g_.h, g_.w, std::exchange(scratch, scratch + Elements(g_.h, g_.w)));
    if (dx && !dx_.last()) dx_last = scratch;
    const Strides4 out = Strides4::Last(g_.c, g_.oh, g_.ow), in = Strides4::Last(g_.c, g_.h, g_.w);
    if (dx) InputGrad(dy_last, out, w, dx_last, in);
    if (dw || db) WeightGrad(dy_last, out, x_last, in, dw, db);
    if (dx && !dx_.last()) FromLast(dx_last, dx, dx_);
    return Status::Ok();
  }

  size_t scratch_bytes() const override {
    int64_t n = 0;
    if (!dy_.last()) n += Elements(g_.oh, g_.ow);
    if (!x_.last()) n += Elements(g_.h, g_.w);
    if (!dx_.last()) n += Elements(g_.h, g_.w);
    return static_cast<size_t>(n) * sizeof(T);
  }

 private:
  int64_t Elements(int64_t h, int64_t w) const { return g_.n * g_.c * h * w; }

  // `src` (layout `st`, planes h x w) copied channels-last into `dst`.
  const T* ToLast(const T* src, const Strides4& st, int64_t h, int64_t w, T* dst) const {
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && g_.n > 1)
    for (int64_t n = 0; n < g_.n; ++n)
      for (int64_t c = 0; c < g_.c; ++c)
        for (int64_t i = 0; i < h; ++i)
          for (int64_t j = 0; j < w; ++j) dst[((n * h + i) * w + j) * g_.c + c] = src[st.at(n, c, i, j)];
    return dst;
  }
  // Channels-last dX in `src` written to `dst` in layout `st`.
  void FromLast(const T* src, T* dst, const Strides4& st) const {
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && g_.n > 1)
    for (int64_t n = 0; n < g_.n; ++n)
      for (int64_t c = 0; c < g_.c; ++c)
        for (int64_t i = 0; i < g_.h; ++i)
          for (int64_t j = 0; j < g_.w; ++j) dst[st.at(n, c, i, j)] = src[((n * g_.h + i) * g_.w + j) * g_.c + c];
  }

  // Channels-last tensors (channel stride 1) from here on.
  // One row (n, i) of dX per work item; per position, a vector of channels.
  void InputGrad(const T* dy, const Strides4& dys, const T* w, T* dx, const Strides4& dxs) const {
    const int64_t taps = g_.kh * g_.kw;
    std::vector<double> wt(static_cast<size_t>(taps * g_.c));  // W as [k][c], widened once
    for (int64_t c = 0; c < g_.c; ++c)
      for (int64_t k = 0; k < taps; ++k) wt[static_cast<size_t>(k * g_.c + c)] = Load(w[c * taps + k]);
#pragma omp parallel num_threads(threads_) if (threads_ > 1 && g_.n * g_.h > 1)
    {
      std::vector<double> acc(static_cast<size_t>(g_.c));
#pragma omp for schedule(static)
      for (int64_t row = 0; row < g_.n * g_.h; ++row) {
        const int64_t n = row / g_.h, i = row % g_.h;
        for (int64_t j = 0; j < g_.w; ++j) {
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t a = 0; a < g_.kh; ++a) {
            const int64_t ot = i + g_.ph - a * g_.dh;  // = oh * sh when tap a reaches row i
            if (ot < 0 || ot % g_.sh != 0 || ot / g_.sh >= g_.oh) continue;
            for (int64_t b = 0; b < g_.kw; ++b) {
              const int64_t os = j + g_.pw - b * g_.dw;
              if (os < 0 || os % g_.sw != 0 || os / g_.sw >= g_.ow) continue;
              const T* src = dy + dys.at(n, 0, ot / g_.sh, os / g_.sw);
              const double* wk = wt.data() + (a * g_.kw + b) * g_.c;
              for (int64_t c = 0; c < g_.c; ++c) acc[static_cast<size_t>(c)] += wk[c] * Load(src[c]);
            }
          }
          T* out = dx + dxs.at(n, 0, i, j);
          for (int64_t c = 0; c < g_.c; ++c) out[c] = Store<T>(acc[static_cast<size_t>(c)]);
        }
      }
    }
  }

  // A block of channels per work item: dW per image then summed over the
  // images, dB over images and positions (the reference's groupings).
  void WeightGrad(const T* dy, const Strides4& dys, const T* x, const Strides4& xs, T* dw, T* db) const {
    const int64_t taps = g_.kh * g_.kw, blocks = (g_.c + kChannelBlock - 1) / kChannelBlock;
#pragma omp parallel num_threads(threads_) if (threads_ > 1 && blocks > 1)
    {
      std::vector<double> acc(static_cast<size_t>(taps * kChannelBlock)), s(acc.size());
#pragma omp for schedule(static)
      for (int64_t blk = 0; blk < blocks; ++blk) {
        const int64_t c0 = blk * kChannelBlock, cn = std::min(kChannelBlock, g_.c - c0);
        std::fill(acc.begin(), acc.end(), 0.0);
        double bias[kChannelBlock] = {};
        for (int64_t n = 0; n < g_.n; ++n) {
          std::fill(s.begin(), s.end(), 0.0);
          for (int64_t oh = 0; oh < g_.oh; ++oh)
            for (int64_t ow = 0; ow < g_.ow; ++ow) {
              const T* d = dy + dys.at(n, c0, oh, ow);
              if (db)
                for (int64_t c = 0; c < cn; ++c) bias[c] += Load(d[c]);
              if (!dw) continue;
              for (int64_t a = 0; a < g_.kh; ++a) {
                const int64_t i = oh * g_.sh - g_.ph + a * g_.dh;
                if (i < 0 || i >= g_.h) continue;
                for (int64_t b = 0; b < g_.kw; ++b) {
                  const int64_t j = ow * g_.sw - g_.pw + b * g_.dw;
                  if (j < 0 || j >= g_.w) continue;
                  const T* xv = x + xs.at(n, c0, i, j);
                  double* sk = s.data() + (a * g_.kw + b) * kChannelBlock;
                  for (int64_t c = 0; c < cn; ++c) sk[c] += Load(d[c]) * Load(xv[c]);
                }
              }
            }
          for (size_t e = 0; e < acc.size(); ++e) acc[e] += s[e];
        }
        for (int64_t c = 0; c < cn; ++c) {
          if (dw)
            for (int64_t k = 0; k < taps; ++k)
              dw[(c0 + c) * taps + k] = Store<T>(acc[static_cast<size_t>(k * kChannelBlock + c)]);
          if (db) db[c0 + c] = Store<T>(bias[c]);
        }
      }
    }
  }

  Geometry g_;
  Strides4 dy_, x_, dx_;
  int threads_;
};

StatusOr<std::unique_ptr<Kernel>> MakeDepthwiseConvGrad(const KernelInit& init) {
  ir::Attributes lifted_attrs;  // a 1-D depthwise convolution runs as the 2-D one it is (LiftWindow1d)
  if (std::optional<KernelInit> lifted = LiftWindow1d(init, lifted_attrs)) return MakeDepthwiseConvGrad(*lifted);
  if (init.inputs.size() != 3 || init.outputs.empty() || init.outputs.size() > 3)
    return init.Error("expects dY, X, W and up to 3 outputs");
  const auto& dy = init.inputs[0].dims;
  const auto& x = init.inputs[1].dims;
  const auto& w = init.inputs[2].dims;
  const DType t = init.inputs[0].dtype;
  if (x.size() != 4 || w.size() != 4 || dy.size() != 4) return init.Error("takes 1-D and 2-D convolutions only");
  if (init.inputs[1].dtype != t || init.inputs[2].dtype != t) return init.Error("dY, X and W differ in dtype");
  AMP_ASSIGN_OR_RETURN(int64_t group, init.attrs->GetInt("group", 1));
  if (group < 2 || group != x[1] || w[0] != x[1] || w[1] != 1 || dy[0] != x[0] || dy[1] != x[1])
    return Unimplemented(init.Describe(), ": not a depthwise convolution (group == channels, one filter each)");
  AMP_ASSIGN_OR_RETURN(ir::WindowGeometry wg, ResolveWindow(grad::ForwardInit(init, 1), {w[2], w[3]}, false));
  for (size_t o = 0; o < init.outputs.size(); ++o)
    if (init.outputs[o].present() && init.outputs[o].dtype != t) return init.Error("outputs must have dY's dtype");
  Geometry g{x[0], x[1], x[2], x[3], dy[2], dy[3], w[2], w[3], wg.strides[0], wg.strides[1],
             wg.pads_begin[0], wg.pads_begin[1], wg.dilations[0], wg.dilations[1]};
  const Strides4 dx = init.outputs[0].present() ? Strides4::Of(init.outputs[0]) : Strides4::Of(init.inputs[1]);
  return ForDType<DepthwiseConvGradKernel>(t, g, Strides4::Of(init.inputs[0]), Strides4::Of(init.inputs[1]), dx,
                                           Threads(init));
}

}  // namespace

void RegisterDirectDepthwise(Registry& r) {
  // Below oneDNN (10) and, for 2-byte types, below its widened twin (5): the
  // direct kernel takes what those decline (their gemm-only depthwise convs).
  KernelEntry fp32 = DirectEntry(OpKind::kConvGrad, MakeDepthwiseConvGrad, {DType::kFloat32});
  KernelEntry low = DirectEntry(OpKind::kConvGrad, MakeDepthwiseConvGrad, {DType::kFloat16, DType::kBFloat16});
  fp32.priority = 7;
  low.priority = 4;
  for (KernelEntry* e : {&fp32, &low}) {
    e->skips_unused_outputs = true;
    e->channels_last_inputs = 0b11;  // dY, X
    e->channels_last_outputs = 0b1;  // dX
    r.Add(std::move(*e));
  }
}

}  // namespace amptrain::kernels::cpu::direct
