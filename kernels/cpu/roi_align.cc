// Reference kernels of RoiAlign and RoiAlignGrad (ir/ops.def; attributes in
// ir/infer/roi_align.h), with the sampling rules of the ONNX reference,
// ONNX Runtime and torchvision (Caffe2's RoIAlign):
//   box = rois[r] * spatial_scale - (0.5 for half_pixel), its size clamped
//   to >= 1 for output_half_pixel only; bin = size / output size; each bin
//   samples a grid of sampling_ratio (or ceil(size / output size)) points
//   per side at the grid cells' centres; a sample outside [-1, H] x [-1, W]
//   is 0, one in [-1, 0] is moved to 0, one past the last row / column
//   reads it; the bilinear taps' weights are the usual products.
//   avg: the mean of the samples (sum / grid count). max: the largest
//   weighted tap over the samples, as ONNX defines it.
//   RoiAlignGrad (avg): each output's gradient / count, times each tap's
//   weight, added to that tap's input, in double per input, rounded once.
// The taps of every roi are computed once per run and shared by all channels.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ir/infer/roi_align.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/register.h"

namespace amptrain::kernels::cpu {

namespace {

struct Tap4 {
  int64_t pos[4] = {0, 0, 0, 0};  // y * W + x in the roi's image plane
  double w[4] = {0, 0, 0, 0};
};

// Every output bin's samples of every roi, and each roi's sample count.
struct RoiTaps {
  std::vector<Tap4> taps;         // roi r, bin b: taps[offset[r] + b * per_bin[r] + s]
  std::vector<int64_t> offset, per_bin;
};

template <class T>
StatusOr<RoiTaps> ComputeTaps(const ir::RoiAlignParams& p, const T* rois, const ir::TensorView& batch, int64_t num_rois,
                              int64_t n, int64_t h, int64_t w) {
  RoiTaps t;
  for (int64_t r = 0; r < num_rois; ++r) {
    const int64_t b = IntAt(batch, r);
    if (b < 0 || b >= n) return InvalidArgument("roi ", r, " has batch index ", b, ", outside [0, ", n, ")");
    const double off = p.half_pixel ? 0.5 : 0.0, scale = p.spatial_scale;
    auto at = [&](int64_t k) { return static_cast<double>(static_cast<Acc<T>>(rois[r * 4 + k])) * scale - off; };
    const double x0 = at(0), y0 = at(1);
    double rw = at(2) - x0, rh = at(3) - y0;
    if (!p.half_pixel) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bin_h = rh / static_cast<double>(p.height), bin_w = rw / static_cast<double>(p.width);
    const int64_t gh = p.sampling_ratio > 0 ? p.sampling_ratio : static_cast<int64_t>(std::ceil(rh / static_cast<double>(p.height)));
    const int64_t gw = p.sampling_ratio > 0 ? p.sampling_ratio : static_cast<int64_t>(std::ceil(rw / static_cast<double>(p.width)));
    const int64_t per = std::max<int64_t>(gh, 0) * std::max<int64_t>(gw, 0);
    t.offset.push_back(static_cast<int64_t>(t.taps.size()));
    t.per_bin.push_back(per);
    for (int64_t ph = 0; ph < p.height; ++ph)
      for (int64_t pw = 0; pw < p.width; ++pw)
        for (int64_t iy = 0; iy < gh; ++iy)
          for (int64_t ix = 0; ix < gw; ++ix) {
            double y = y0 + static_cast<double>(ph) * bin_h + (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(gh);
            double x = x0 + static_cast<double>(pw) * bin_w + (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(gw);
            Tap4 tap;
            if (!(y < -1.0 || y > static_cast<double>(h) || x < -1.0 || x > static_cast<double>(w))) {
              y = std::max(y, 0.0);
              x = std::max(x, 0.0);
              int64_t yl = static_cast<int64_t>(y), xl = static_cast<int64_t>(x), yh, xh;
              if (yl >= h - 1) {
                yh = yl = h - 1;
                y = static_cast<double>(yl);
              } else {
                yh = yl + 1;
              }
              if (xl >= w - 1) {
                xh = xl = w - 1;
                x = static_cast<double>(xl);
              } else {
                xh = xl + 1;
              }
              const double ly = y - static_cast<double>(yl), lx = x - static_cast<double>(xl), hy = 1 - ly, hx = 1 - lx;
              tap = Tap4{{yl * w + xl, yl * w + xh, yh * w + xl, yh * w + xh}, {hy * hx, hy * lx, ly * hx, ly * lx}};
            }
            t.taps.push_back(tap);
          }
  }
  return t;
}

// What both kernels start from: X's dims [N, C, H, W], the rois, the taps.
struct RoiRun {
  int64_t n, c, h, w, rois, bins;
  RoiTaps taps;
};

template <class T>
StatusOr<RoiRun> Prepare(const ir::RoiAlignParams& p, KernelContext& ctx, const std::vector<int64_t>& x_dims) {
  RoiRun r{x_dims[0], x_dims[1], x_dims[2], x_dims[3], ctx.inputs[1].dims[0], p.height * p.width, {}};
  AMP_ASSIGN_OR_RETURN(r.taps, ComputeTaps(p, ctx.inputs[1].as<const T>(), ctx.inputs[2], r.rois, r.n, r.h, r.w));
  return r;
}

template <class T>
class RoiAlignKernel final : public Kernel {
 public:
  RoiAlignKernel(const ir::RoiAlignParams& p, int threads) : p_(p), threads_(threads) {}
  Status Run(KernelContext& ctx) override {
    AMP_ASSIGN_OR_RETURN(RoiRun run, Prepare<T>(p_, ctx, ctx.inputs[0].dims));
    const int64_t c = run.c, h = run.h, w = run.w, rois = run.rois, bins = run.bins;
    const RoiTaps& t = run.taps;
    const T* x = ctx.inputs[0].as<const T>();
    T* y = ctx.outputs[0].as<T>();
    const auto batch = ctx.inputs[2];
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && rois * c * bins >= 1024)
    for (int64_t rc = 0; rc < rois * c; ++rc) {
      const int64_t r = rc / c, ch = rc % c;
      const T* plane = x + (IntAt(batch, r) * c + ch) * h * w;
      const int64_t per = t.per_bin[static_cast<size_t>(r)];
      for (int64_t bin = 0; bin < bins; ++bin) {
        const Tap4* s = t.taps.data() + t.offset[static_cast<size_t>(r)] + bin * per;
        double acc = 0.0;
        for (int64_t k = 0; k < per; ++k) {
          double v[4];
          for (int q = 0; q < 4; ++q) v[q] = s[k].w[q] * static_cast<double>(static_cast<Acc<T>>(plane[s[k].pos[q]]));
          if (p_.max) {
            const double m = std::max(std::max(v[0], v[1]), std::max(v[2], v[3]));
            acc = k == 0 ? m : std::max(acc, m);
          } else {
            acc += v[0] + v[1] + v[2] + v[3];
          }
        }
        if (!p_.max) acc /= static_cast<double>(std::max<int64_t>(per, 1));
        y[rc * bins + bin] = static_cast<T>(static_cast<Acc<T>>(acc));
      }
    }
    return Status::Ok();
  }

 private:
  ir::RoiAlignParams p_;
  int threads_;
};

template <class T>
class RoiAlignGradKernel final : public Kernel {
 public:
  RoiAlignGradKernel(const ir::RoiAlignParams& p, int threads) : p_(p), threads_(threads) {}
  Status Run(KernelContext& ctx) override {
    AMP_ASSIGN_OR_RETURN(RoiRun run, Prepare<T>(p_, ctx, ctx.outputs[0].dims));
    const int64_t n = run.n, c = run.c, h = run.h, w = run.w, rois = run.rois, bins = run.bins;
    const RoiTaps& t = run.taps;
    const T* dy = ctx.inputs[0].as<const T>();
    T* dx = ctx.outputs[0].as<T>();
    const auto batch = ctx.inputs[2];
    // One channel per thread at a time: every roi writes only its own channel's planes.
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && c > 1)
    for (int64_t ch = 0; ch < c; ++ch) {
      std::vector<double> acc(static_cast<size_t>(n * h * w), 0.0);
      for (int64_t r = 0; r < rois; ++r) {
        double* plane = acc.data() + IntAt(batch, r) * h * w;
        const int64_t per = t.per_bin[static_cast<size_t>(r)];
        const double inv = 1.0 / static_cast<double>(std::max<int64_t>(per, 1));
        for (int64_t bin = 0; bin < bins; ++bin) {
          const double g = static_cast<double>(static_cast<Acc<T>>(dy[(r * c + ch) * bins + bin])) * inv;
          const Tap4* s = t.taps.data() + t.offset[static_cast<size_t>(r)] + bin * per;
          for (int64_t k = 0; k < per; ++k)
            for (int q = 0; q < 4; ++q) plane[s[k].pos[q]] += s[k].w[q] * g;
        }
      }
      for (int64_t b = 0; b < n; ++b)
        for (int64_t i = 0; i < h * w; ++i)
          dx[(b * c + ch) * h * w + i] = static_cast<T>(static_cast<Acc<T>>(acc[static_cast<size_t>(b * h * w + i)]));
    }
    return Status::Ok();
  }

 private:
  ir::RoiAlignParams p_;
  int threads_;
};

template <template <class> class K>
StatusOr<std::unique_ptr<Kernel>> Create(const KernelInit& init, const std::vector<int64_t>& x_dims, DType dtype) {
  auto p = ir::DecodeRoiAlign(AttrsOf(init));
  if (!p.ok()) return init.Error(p.status().message());
  if (x_dims.size() != 4) return init.Error("X must be [N, C, H, W]");
  const std::vector<int64_t>& rois = init.inputs[1].dims;
  if (rois.size() != 2 || rois[1] != 4 || init.inputs[1].dtype != dtype) return init.Error("rois must be [num_rois, 4] of X's dtype");
  const TensorSpec& b = init.inputs[2];
  if ((b.dtype != DType::kInt64 && b.dtype != DType::kInt32) || b.dims != std::vector<int64_t>{rois[0]})
    return init.Error("batch_indices must be int64 [num_rois]");
  std::unique_ptr<Kernel> out;
  AMP_RETURN_IF_ERROR(DispatchFloat(dtype, [&](auto tag) {
    out = std::make_unique<K<typename decltype(tag)::type>>(*p, Threads(init));
    return Status::Ok();
  }));
  return out;
}

StatusOr<std::unique_ptr<Kernel>> CreateRoiAlign(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 3, 1));
  return Create<RoiAlignKernel>(init, init.inputs[0].dims, init.inputs[0].dtype);
}

StatusOr<std::unique_ptr<Kernel>> CreateRoiAlignGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 4, 1));
  auto p = ir::DecodeRoiAlign(AttrsOf(init));
  if (p.ok() && p->max) return init.Error("mode max has no gradient");
  return Create<RoiAlignGradKernel>(init, init.outputs[0].dims, init.inputs[0].dtype);
}

}  // namespace

void RegisterReferenceRoiAlign(Registry& r) {
  r.Add(ReferenceEntry(OpKind::kRoiAlign, FloatDTypes(), CreateRoiAlign));
  r.Add(ReferenceEntry(OpKind::kRoiAlignGrad, FloatDTypes(), CreateRoiAlignGrad));
}

}  // namespace amptrain::kernels::cpu
