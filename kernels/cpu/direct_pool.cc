// Direct 1-D and 2-D pooling over NCHW planes, impl "direct", priority 20
// (above oneDNN 2.6, whose plain-layout pooling is its slow simple_nchw):
// MaxPool, AveragePool, GlobalAveragePool, MaxPoolGrad and AveragePoolGrad
// (plain planes) in fp32, fp16 and bf16, a 1-D pool [N, C, L] as the 2-D one
// over [N, C, 1, L] (LiftWindow1d, plain layouts);
// the forward pools and MaxPoolGrad also over channels-last X and Y (dY, X
// and dX) (TensorSpec::channels_last), per pixel across the channels with the
// same taps in the same order. Y (dY) may stay plain beside a channels-last X:
// each image's output is pooled channels-last into a per-thread buffer and
// transposed into Y (dY transposed into one before the gradient), so that a
// pool in front of a Flatten keeps the activations before it channels-last at
// the cost of a copy of the output, a quarter of X at 2x2. One plane (n, c) per
// work item on OpenMP; a 2-byte plane is widened to fp32 in a thread-local
// buffer (a few KiB) and the result narrowed once, except on the 2x2 path
// below, which widens and narrows in registers.
//
// Every result has the bits of the reference kernels (pool.cc, grad_pool.cc):
//   max:     kernel offsets scanned row-major, a later value wins only when
//            greater, a NaN wins over a number (so the first NaN, quieted by
//            the 2-byte store); a window entirely in the padding gives -inf.
//            Comparing in fp32 is exact for fp16/bf16 values.
//   average: the taps summed in double in the same order, divided by the
//            reference's divisor (in-input taps, or with count_include_pad
//            those inside the explicit pads; never the ceil_mode overhang).
//   MaxPoolGrad: dY[o] goes to the first maximum of window o, summed per input
//            element in output order, in double where windows overlap (as the
//            reference) and in fp32 where they cannot (one term: exact).
// On AVX-512 and AVX2 CPUs, 2x2 windows at stride 2 without padding (the
// usual downsampling) take a path with the same taps in the same order, 16
// or 8 windows (channels-last: channels) at a time, and none of the general
// per-tap bookkeeping (kernels/cpu/direct_pool_2x2.cc). The Indices output
// of MaxPool goes to the reference kernel, 3-D pools to oneDNN
// (kernels/cpu/onednn_pool.cc).
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/cpu/conv_geometry.h"
#include "kernels/cpu/direct_kernels.h"
#include "kernels/cpu/direct_pool.h"
#include "kernels/cpu/float_convert.h"

namespace amptrain::kernels::cpu::direct {

namespace {

using pool::Geometry2d;
using pool::Has2x2Path;
using pool::Max2x2;
using pool::Max2x2Grad;
using pool::Max2x2Nhwc;
using pool::Wins;

StatusOr<Geometry2d> Resolve(const KernelInit& init, const std::vector<int64_t>& x, const std::vector<int64_t>& y,
                             bool include_pad) {
  if (x.size() != 4 || y.size() != 4) return init.Error("the direct pools take 2-D pools (1-D ones lifted)");
  AMP_ASSIGN_OR_RETURN(ir::WindowGeometry g, ResolveWindow(init, {}, false));
  Geometry2d p{x[0] * x[1], x[2], x[3], y[2], y[3], g.kernel[0], g.kernel[1], g.strides[0], g.strides[1],
               g.dilations[0], g.dilations[1], g.pads_begin[0], g.pads_begin[1]};
  for (int64_t k = 0; k < p.kw; ++k) {
    const int64_t off = k * p.dw - p.pw;
    int64_t lo = off < 0 ? (-off + p.sw - 1) / p.sw : 0;
    int64_t hi = off >= p.w ? 0 : std::min(p.ow, (p.w - 1 - off) / p.sw + 1);
    p.lo.push_back(std::min(lo, p.ow));
    p.hi.push_back(std::max(hi, p.lo.back()));
  }
  // Taps per output position and dim: inside [0, in), or with
  // count_include_pad inside [-pads_begin, in + pads_end).
  auto taps = [&](int64_t out, int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe) {
    std::vector<double> count(out);
    const int64_t begin = include_pad ? -pb : 0, end = include_pad ? in + pe : in;
    for (int64_t o = 0; o < out; ++o) {
      int64_t n = 0;
      for (int64_t t = 0; t < k; ++t) n += o * s - pb + t * d >= begin && o * s - pb + t * d < end;
      count[o] = static_cast<double>(n);
    }
    return count;
  };
  p.div_h = taps(p.oh, p.h, p.kh, p.sh, p.dh, p.ph, g.pads_end[0]);
  p.div_w = taps(p.ow, p.w, p.kw, p.sw, p.dw, p.pw, g.pads_end[1]);
  return p;
}

// Calls fn(row, ih, j, off) for each tap (i, j) of output row r whose input
// row ih lies in the plane, in the reference's scan order (row-major over the
// kernel); the tap reads row[c * sw + off] for output columns [lo[j], hi[j]).
template <class Fn>
void ForEachTap(const Geometry2d& p, const float* x, int64_t r, Fn&& fn) {
  for (int64_t i = 0; i < p.kh; ++i) {
    const int64_t ih = p.Row(r, i);
    if (ih < 0 || ih >= p.h) continue;
    for (int64_t j = 0; j < p.kw; ++j) fn(x + ih * p.w, ih, j, j * p.dw - p.pw);
  }
}

// Max of each window of plane x into y (fp32), with the argmax (row-major
// input offset, -1 for an all-padding window) when `arg` is set.
void MaxPlane(const Geometry2d& p, const float* x, float* y, int32_t* arg) {
  for (int64_t r = 0; r < p.oh; ++r) {
    float* m = y + r * p.ow;
    int32_t* a = arg ? arg + r * p.ow : nullptr;
    std::fill(m, m + p.ow, -std::numeric_limits<float>::infinity());
    if (a) std::fill(a, a + p.ow, -1);
    ForEachTap(p, x, r, [&](const float* row, int64_t ih, int64_t j, int64_t off) {
      if (a) {
        const int32_t base = static_cast<int32_t>(ih * p.w + off), step = static_cast<int32_t>(p.sw);
        for (int64_t c = p.lo[j]; c < p.hi[j]; ++c) {
          const float v = row[c * p.sw + off];
          const bool take = Wins(v, m[c]) | (a[c] < 0);
          m[c] = take ? v : m[c];
          a[c] = take ? base + static_cast<int32_t>(c) * step : a[c];
        }
      } else if (p.sw == 1) {
        const float* in = row + off;
        for (int64_t c = p.lo[j]; c < p.hi[j]; ++c) m[c] = Wins(in[c], m[c]) ? in[c] : m[c];
      } else {
        for (int64_t c = p.lo[j]; c < p.hi[j]; ++c) {
          const float v = row[c * p.sw + off];
          m[c] = Wins(v, m[c]) ? v : m[c];
        }
      }
    });
  }
}

void AveragePlane(const Geometry2d& p, const float* x, float* y, std::vector<double>& acc) {
  acc.resize(static_cast<size_t>(p.ow));
  for (int64_t r = 0; r < p.oh; ++r) {
    std::fill(acc.begin(), acc.end(), 0.0);
    ForEachTap(p, x, r, [&](const float* row, int64_t, int64_t j, int64_t off) {
      for (int64_t c = p.lo[j]; c < p.hi[j]; ++c) acc[c] += static_cast<double>(row[c * p.sw + off]);
    });
    for (int64_t c = 0; c < p.ow; ++c) y[r * p.ow + c] = static_cast<float>(acc[c] / (p.div_h[r] * p.div_w[c]));
  }
}

// MaxPool or AveragePool of image n of a channels-last X [N, H, W, C] into
// channels-last Y: per output pixel, the taps of MaxPlane/AveragePlane in
// their order for every channel at once, so each result has the bits of the
// plain kernel. `acc` holds C values; `in` a widened input pixel.
template <class T>
void PoolImageNhwc(const Geometry2d& p, int64_t channels, bool is_max, const T* x, T* y, std::vector<double>& acc,
                   std::vector<float>& in, std::vector<float>& out) {
  const auto c = static_cast<size_t>(channels);
  acc.resize(c);
  out.resize(c);
  for (int64_t r = 0; r < p.oh; ++r) {
    for (int64_t oc = 0; oc < p.ow; ++oc) {
      float* m = out.data();
      if (is_max) std::fill(m, m + c, -std::numeric_limits<float>::infinity());
      else std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t i = 0; i < p.kh; ++i) {
        const int64_t ih = p.Row(r, i);
        if (ih < 0 || ih >= p.h) continue;
        for (int64_t j = 0; j < p.kw; ++j) {
          if (oc < p.lo[j] || oc >= p.hi[j]) continue;
          const int64_t iw = oc * p.sw + j * p.dw - p.pw;
          const float* v = Widened(x + (ih * p.w + iw) * channels, channels, in);
          if (is_max) {
            for (size_t k = 0; k < c; ++k) m[k] = Wins(v[k], m[k]) ? v[k] : m[k];
          } else {
            for (size_t k = 0; k < c; ++k) acc[k] += static_cast<double>(v[k]);
          }
        }
      }
      if (!is_max)
        for (size_t k = 0; k < c; ++k) m[k] = static_cast<float>(acc[k] / (p.div_h[r] * p.div_w[oc]));
      StoreNarrowed(m, y + (r * p.ow + oc) * channels, channels);
    }
  }
}

// One image between channels-last [pixels, channels] and plain [channels,
// pixels] (a copy: the bits stay).
template <class T>
void ImageToPlain(const T* nhwc, T* plain, int64_t pixels, int64_t channels) {
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t q = 0; q < pixels; ++q) plain[c * pixels + q] = nhwc[q * channels + c];
}
template <class T>
void ImageToNhwc(const T* plain, T* nhwc, int64_t pixels, int64_t channels) {
  for (int64_t q = 0; q < pixels; ++q)
    for (int64_t c = 0; c < channels; ++c) nhwc[q * channels + c] = plain[c * pixels + q];
}

// Per-thread buffers of one image's channels-last output (dY), sized at the
// first call and kept (a step allocates nothing after its first).
template <class T>
class ImageStaging {
 public:
  ImageStaging(int threads, int64_t elements) : buffers_(static_cast<size_t>(std::max(threads, 1))), elements_(elements) {}
  T* ForThisThread() {
    std::vector<T>& b = buffers_[static_cast<size_t>(omp_get_thread_num())];
    if (b.size() != static_cast<size_t>(elements_)) b.resize(static_cast<size_t>(elements_));
    return b.data();
  }

 private:
  std::vector<std::vector<T>> buffers_;
  int64_t elements_;
};

template <class T>
class PoolKernel final : public Kernel {
 public:
  // channels > 0: X is channels-last with that many channels, and so is Y
  // unless y_plain.
  PoolKernel(Geometry2d p, bool is_max, int threads, int64_t channels = 0, bool y_plain = false)
      : p_(std::move(p)), is_max_(is_max), threads_(threads), channels_(channels), y_plain_(y_plain),
        staging_(threads, y_plain ? p_.out_size() * channels : 0) {}

  Status Run(KernelContext& ctx) override {
    const T* x = ctx.inputs[0].as<const T>();
    T* y = ctx.outputs[0].as<T>();
    if (channels_ > 0) {
      const int64_t images = p_.planes / channels_;
      const int64_t in_image = p_.in_size() * channels_, out_image = p_.out_size() * channels_;
      const bool max2x2 = is_max_ && Has2x2Path(p_);
#pragma omp parallel num_threads(threads_)
      {
        std::vector<double> acc;
        std::vector<float> in, out;
#pragma omp for schedule(static)
        for (int64_t n = 0; n < images; ++n) {
          T* yn = y_plain_ ? staging_.ForThisThread() : y + n * out_image;
          if (max2x2) Max2x2Nhwc<T>(p_, channels_, x + n * in_image, nullptr, yn);
          else PoolImageNhwc(p_, channels_, is_max_, x + n * in_image, yn, acc, in, out);
          if (y_plain_) ImageToPlain(yn, y + n * out_image, p_.out_size(), channels_);
        }
      }
      return Status::Ok();
    }
    const bool plain_2x2 = Has2x2Path(p_);
#pragma omp parallel num_threads(threads_)
    {
      std::vector<float> in, out(static_cast<size_t>(p_.out_size()));
      std::vector<double> acc;
#pragma omp for schedule(static)
      for (int64_t plane = 0; plane < p_.planes; ++plane) {
        if (is_max_ && plain_2x2) {
          Max2x2(p_, x + plane * p_.in_size(), y + plane * p_.out_size());
          continue;
        }
        const float* xp = Widened(x + plane * p_.in_size(), p_.in_size(), in);
        float* yp = std::is_same_v<T, float> ? reinterpret_cast<float*>(y + plane * p_.out_size()) : out.data();
        if (is_max_) MaxPlane(p_, xp, yp, nullptr);
        else AveragePlane(p_, xp, yp, acc);
        StoreNarrowed(yp, y + plane * p_.out_size(), p_.out_size());
      }
    }
    return Status::Ok();
  }

 private:
  Geometry2d p_;
  bool is_max_;
  int threads_;
  int64_t channels_;
  bool y_plain_;
  ImageStaging<T> staging_;
};

// dX of one plane: dY[o] added at argmax[o], in output order, from +0.
template <class A>
void ScatterPlane(const Geometry2d& p, const float* dy, const int32_t* arg, A* acc) {
  std::fill(acc, acc + p.in_size(), A(0));
  for (int64_t o = 0; o < p.out_size(); ++o)
    if (arg[o] >= 0) acc[arg[o]] += static_cast<A>(dy[o]);
}

// MaxPoolGrad of image n of channels-last dY, X and dX ([N, H, W, C]): per
// output pixel in order, each channel's first maximum over the taps in
// MaxPlane's order, dY added there in double (`acc`, H * W * C), then every
// element rounded once: per channel, the additions and the rounding of
// ScatterPlane over a plane (which sums in double where windows overlap and
// adds one term to +0 where they cannot, the same value).
template <class T>
void MaxGradImageNhwc(const Geometry2d& p, int64_t channels, const T* x, const T* dy, T* dx, std::vector<double>& acc,
                      std::vector<float>& best, std::vector<int64_t>& arg, std::vector<float>& in) {
  const auto c = static_cast<size_t>(channels);
  acc.assign(static_cast<size_t>(p.in_size()) * c, 0.0);
  best.resize(c);
  arg.resize(c);
  for (int64_t r = 0; r < p.oh; ++r) {
    for (int64_t oc = 0; oc < p.ow; ++oc) {
      std::fill(best.begin(), best.end(), -std::numeric_limits<float>::infinity());
      std::fill(arg.begin(), arg.end(), int64_t{-1});
      for (int64_t i = 0; i < p.kh; ++i) {
        const int64_t ih = p.Row(r, i);
        if (ih < 0 || ih >= p.h) continue;
        for (int64_t j = 0; j < p.kw; ++j) {
          if (oc < p.lo[j] || oc >= p.hi[j]) continue;
          const int64_t pixel = ih * p.w + oc * p.sw + j * p.dw - p.pw;
          const float* v = Widened(x + pixel * channels, channels, in);
          for (size_t k = 0; k < c; ++k) {
            const bool take = Wins(v[k], best[k]) | (arg[k] < 0);
            best[k] = take ? v[k] : best[k];
            arg[k] = take ? pixel : arg[k];
          }
        }
      }
      const float* g = Widened(dy + (r * p.ow + oc) * channels, channels, in);
      for (size_t k = 0; k < c; ++k)
        if (arg[k] >= 0) acc[static_cast<size_t>(arg[k]) * c + k] += static_cast<double>(g[k]);
    }
  }
  in.resize(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) in[i] = static_cast<float>(acc[i]);
  StoreNarrowed(in.data(), dx, static_cast<int64_t>(acc.size()));
}

template <class T>
class MaxPoolGradKernel final : public Kernel {
 public:
  // channels > 0: X and dX are channels-last with that many channels, and
  // so is dY unless dy_plain.
  MaxPoolGradKernel(Geometry2d p, int threads, int64_t channels = 0, bool dy_plain = false)
      : p_(std::move(p)), threads_(threads), channels_(channels), dy_plain_(dy_plain),
        buffers_(static_cast<size_t>(std::max(threads, 1))), staging_(threads, dy_plain ? p_.out_size() * channels : 0) {}

  Status Run(KernelContext& ctx) override {
    if (!ctx.outputs[0].data) return Status::Ok();
    const T* dy = ctx.inputs[0].as<const T>();
    const T* x = ctx.inputs[1].as<const T>();
    T* dx = ctx.outputs[0].as<T>();
    const int64_t in_size = p_.in_size(), out_size = p_.out_size();
    if (channels_ > 0) {
      const int64_t images = p_.planes / channels_;
      const bool max2x2 = Has2x2Path(p_);
#pragma omp parallel num_threads(threads_)
      {
        Buffers& b = buffers_[static_cast<size_t>(omp_get_thread_num())];
#pragma omp for schedule(static)
        for (int64_t n = 0; n < images; ++n) {
          const T* dyn = dy + n * out_size * channels_;
          if (dy_plain_) {
            T* staged = staging_.ForThisThread();
            ImageToNhwc(dyn, staged, out_size, channels_);
            dyn = staged;
          }
          if (max2x2) Max2x2Nhwc<T>(p_, channels_, x + n * in_size * channels_, dyn, dx + n * in_size * channels_);
          else MaxGradImageNhwc(p_, channels_, x + n * in_size * channels_, dyn, dx + n * in_size * channels_, b.acc,
                                b.best, b.arg64, b.in);
        }
      }
      return Status::Ok();
    }
    const bool plain_2x2 = Has2x2Path(p_);
#pragma omp parallel num_threads(threads_)
    {
      Buffers& buf = buffers_[static_cast<size_t>(omp_get_thread_num())];
      std::vector<float>&xbuf = buf.in, &dybuf = buf.dy, &best = buf.best, &sum = buf.sum;
      std::vector<int32_t>& arg = buf.arg32;
      std::vector<double>& wide = buf.acc;
      best.resize(static_cast<size_t>(out_size));
      sum.resize(static_cast<size_t>(in_size));
      arg.resize(static_cast<size_t>(out_size));
      wide.resize(p_.overlapping() ? static_cast<size_t>(in_size) : 0);
#pragma omp for schedule(static)
      for (int64_t plane = 0; plane < p_.planes; ++plane) {
        T* out = dx + plane * in_size;
        if (plain_2x2) {
          Max2x2Grad(p_, x + plane * in_size, dy + plane * out_size, out);
          continue;
        }
        const float* xp = Widened(x + plane * in_size, in_size, xbuf);
        const float* g = Widened(dy + plane * out_size, out_size, dybuf);
        MaxPlane(p_, xp, best.data(), arg.data());
        if (!wide.empty()) {
          ScatterPlane(p_, g, arg.data(), wide.data());
          for (int64_t i = 0; i < in_size; ++i) sum[i] = static_cast<float>(wide[i]);
          StoreNarrowed(sum.data(), out, in_size);
        } else if constexpr (std::is_same_v<T, float>) {
          ScatterPlane(p_, g, arg.data(), out);
        } else {
          ScatterPlane(p_, g, arg.data(), sum.data());
          StoreNarrowed(sum.data(), out, in_size);
        }
      }
    }
    return Status::Ok();
  }

 private:
  // Per-thread work buffers, kept from call to call (a call allocates nothing
  // once they have their sizes).
  struct Buffers {
    std::vector<double> acc;
    std::vector<float> best, in, dy, sum;
    std::vector<int64_t> arg64;
    std::vector<int32_t> arg32;
  };
  Geometry2d p_;
  int threads_;
  int64_t channels_;
  bool dy_plain_;
  std::vector<Buffers> buffers_;  // one per thread
  ImageStaging<T> staging_;
};

// AveragePoolGrad(dY, X) -> dX, plain planes: dX[i] = sum over the windows o
// that hold i of dY[o] / divisor[o], each term in double and added in the
// reference's order (grad_pool.cc: kernel offsets row-major, then outputs
// row-major), rounded once. Where windows cannot overlap (stride >= the
// window's extent in both dims: the usual downsampling) each element gets at
// most one term, which needs no accumulator: the same bits (+0 + term).
template <class T>
class AveragePoolGradKernel final : public Kernel {
 public:
  AveragePoolGradKernel(Geometry2d p, int threads) : p_(std::move(p)), threads_(threads) {}

  Status Run(KernelContext& ctx) override {
    const T* dy = ctx.inputs[0].as<const T>();
    T* dx = ctx.outputs[0].as<T>();
    const int64_t in_size = p_.in_size(), out_size = p_.out_size();
#pragma omp parallel num_threads(threads_)
    {
      std::vector<float> dybuf, sum(static_cast<size_t>(in_size));
      std::vector<double> term(static_cast<size_t>(out_size)), acc(p_.overlapping() ? static_cast<size_t>(in_size) : 0);
#pragma omp for schedule(static)
      for (int64_t plane = 0; plane < p_.planes; ++plane) {
        const float* g = Widened(dy + plane * out_size, out_size, dybuf);
        for (int64_t r = 0; r < p_.oh; ++r)
          for (int64_t c = 0; c < p_.ow; ++c)
            term[r * p_.ow + c] = static_cast<double>(g[r * p_.ow + c]) / (p_.div_h[r] * p_.div_w[c]);
        if (acc.empty()) {
          std::fill(sum.begin(), sum.end(), 0.0f);
          // +0 + term, as the reference's sum from +0: a -0 term gives +0.
          ForEachWindowTap([&](int64_t i, int64_t o) { sum[i] = static_cast<float>(0.0 + term[o]); });
        } else {
          std::fill(acc.begin(), acc.end(), 0.0);
          ForEachWindowTap([&](int64_t i, int64_t o) { acc[i] += term[o]; });
          for (int64_t i = 0; i < in_size; ++i) sum[i] = static_cast<float>(acc[i]);
        }
        StoreNarrowed(sum.data(), dx + plane * in_size, in_size);
      }
    }
    return Status::Ok();
  }

 private:
  // fn(input offset, output offset) for every in-plane tap, kernel offsets
  // row-major outermost, then output rows and columns.
  template <class Fn>
  void ForEachWindowTap(Fn&& fn) const {
    for (int64_t i = 0; i < p_.kh; ++i)
      for (int64_t j = 0; j < p_.kw; ++j) {
        const int64_t off = j * p_.dw - p_.pw;
        for (int64_t r = 0; r < p_.oh; ++r) {
          const int64_t ih = p_.Row(r, i);
          if (ih < 0 || ih >= p_.h) continue;
          for (int64_t c = p_.lo[j]; c < p_.hi[j]; ++c) fn(ih * p_.w + c * p_.sw + off, r * p_.ow + c);
        }
      }
  }

  Geometry2d p_;
  int threads_;
};

StatusOr<std::unique_ptr<Kernel>> MakePool(const KernelInit& init) {
  ir::Attributes lifted_attrs;  // a 1-D pool runs as the 2-D one it is (LiftWindow1d), plain
  if (std::optional<KernelInit> lifted = LiftWindow1d(init, lifted_attrs)) {
    if (init.inputs[0].channels_last) return init.Error("channels-last X of a 1-D pool");
    return MakePool(*lifted);
  }
  AMP_RETURN_IF_ERROR(kernels::CheckArity(init, 1, 1, 1, 1));
  if (init.outputs[0].dtype != init.inputs[0].dtype) return init.Error("Y must have X's dtype");
  const bool is_max = init.op == OpKind::kMaxPool;
  const bool include_pad = !is_max && init.attrs->Int("count_include_pad", 0) != 0;
  AMP_ASSIGN_OR_RETURN(Geometry2d p, Resolve(init, init.inputs[0].dims, init.outputs[0].dims, include_pad));
  // Y channels-last beside a plain X is declined (the executor then keeps both plain).
  const bool x_nhwc = init.inputs[0].channels_last, y_nhwc = init.outputs[0].channels_last;
  if (y_nhwc && !x_nhwc) return init.Error("a channels-last Y needs a channels-last X");
  const int64_t channels = x_nhwc ? init.inputs[0].dims[1] : 0;
  return ForDType<PoolKernel>(init.inputs[0].dtype, std::move(p), is_max, Threads(init), channels,
                              x_nhwc && !y_nhwc);
}

// GlobalAveragePool is the AveragePool whose window is the whole plane: its
// taps are the plane's elements in row-major order, summed in double and
// divided by H * W, the reference kernel's arithmetic (pool.cc). Y is
// [N, C, 1, 1], the same bytes in either layout. Three spatial dims and
// more are one row of their product.
StatusOr<std::unique_ptr<Kernel>> MakeGlobalAveragePool(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(kernels::CheckArity(init, 1, 1, 1, 1));
  const auto& x = init.inputs[0].dims;
  if (x.size() < 3) return init.Error("the direct GlobalAveragePool takes [N, C, spatial...]");
  KernelInit pool = init;  // keeps the op, so errors name the GlobalAveragePool node
  if (x.size() > 4) {
    // [N, C, D, H, W]: the taps in row-major order are those of [N, C, D * H * W].
    if (init.inputs[0].channels_last) return init.Error("channels-last X of rank ", x.size());
    int64_t spatial = 1;
    for (size_t d = 2; d < x.size(); ++d) spatial *= x[d];
    pool.inputs[0].dims = {x[0], x[1], spatial};
    pool.outputs[0].dims = {x[0], x[1], 1};
  }
  ir::Attributes window;
  window.Set("kernel_shape", std::vector<int64_t>(pool.inputs[0].dims.begin() + 2, pool.inputs[0].dims.end()));
  pool.attrs = &window;
  return MakePool(pool);
}

// The forward window of a pool gradient (dY, X) -> dX, checked.
StatusOr<Geometry2d> ResolveGrad(const KernelInit& init, bool include_pad) {
  AMP_RETURN_IF_ERROR(kernels::CheckArity(init, 2, 2, 1, 1));
  const DType t = init.inputs[0].dtype;
  if (init.inputs[1].dtype != t || init.outputs[0].dtype != t) return init.Error("dY, X and dX must share a dtype");
  const auto &dy = init.inputs[0].dims, &x = init.inputs[1].dims;
  if (dy.size() != x.size() || dy[0] != x[0] || dy[1] != x[1])
    return init.Error("X must be [N, C, spatial...] and dY [N, C, out...]");
  KernelInit fwd = init;
  fwd.inputs = {init.inputs[1]};
  fwd.outputs = {init.inputs[0]};
  return Resolve(fwd, x, dy, include_pad);
}

StatusOr<std::unique_ptr<Kernel>> MakeMaxPoolGrad(const KernelInit& init) {
  ir::Attributes lifted_attrs;  // a 1-D pool runs as the 2-D one it is (LiftWindow1d), plain
  if (std::optional<KernelInit> lifted = LiftWindow1d(init, lifted_attrs)) {
    if (init.inputs.size() > 1 && init.inputs[1].channels_last) return init.Error("channels-last X of a 1-D pool");
    return MakeMaxPoolGrad(*lifted);
  }
  AMP_ASSIGN_OR_RETURN(Geometry2d p, ResolveGrad(init, false));
  // X and dX in one layout; dY channels-last or, beside a channels-last X, plain.
  const bool nhwc = init.inputs[1].channels_last;
  if (init.outputs[0].channels_last != nhwc) return init.Error("X and dX in different layouts");
  if (init.inputs[0].channels_last && !nhwc) return init.Error("a channels-last dY needs a channels-last X");
  const int64_t channels = nhwc ? init.inputs[1].dims[1] : 0;
  return ForDType<MaxPoolGradKernel>(init.inputs[0].dtype, std::move(p), Threads(init), channels,
                                     nhwc && !init.inputs[0].channels_last);
}

StatusOr<std::unique_ptr<Kernel>> MakeAveragePoolGrad(const KernelInit& init) {
  ir::Attributes lifted_attrs;  // a 1-D pool runs as the 2-D one it is (LiftWindow1d)
  if (std::optional<KernelInit> lifted = LiftWindow1d(init, lifted_attrs)) return MakeAveragePoolGrad(*lifted);
  AMP_ASSIGN_OR_RETURN(int64_t include_pad, init.attrs->GetInt("count_include_pad", 0));
  AMP_ASSIGN_OR_RETURN(Geometry2d p, ResolveGrad(init, include_pad != 0));
  return ForDType<AveragePoolGradKernel>(init.inputs[0].dtype, std::move(p), Threads(init));
}

}  // namespace

void RegisterDirectPool(Registry& r) {
  for (OpKind op : {OpKind::kMaxPool, OpKind::kAveragePool}) {
    // X and Y each channels-last or plain (the factory declines a
    // channels-last Y beside a plain X).
    KernelEntry e = DirectEntry(op, MakePool);
    e.channels_last_inputs = e.channels_last_outputs = 0b1;
    r.Add(std::move(e));
  }
  // dY, X and dX; X and dX in one layout (the factory declines the others).
  KernelEntry grad = DirectEntry(OpKind::kMaxPoolGrad, MakeMaxPoolGrad);
  grad.channels_last_inputs = 0b11;  // dY, X
  grad.channels_last_outputs = 0b1;  // dX
  r.Add(std::move(grad));
  r.Add(DirectEntry(OpKind::kAveragePoolGrad, MakeAveragePoolGrad));  // plain planes
  KernelEntry gap = DirectEntry(OpKind::kGlobalAveragePool, MakeGlobalAveragePool);
  gap.channels_last_inputs = 0b1;  // Y is [N, C, 1, 1]: the same bytes in either layout
  r.Add(std::move(gap));
}

}  // namespace amptrain::kernels::cpu::direct
