// Reference kernels of GridSample, its backward GridSampleGrad and
// AffineGrid, with PyTorch's grid_sampler_2d semantics (which ONNX's are):
//   A grid value g in [-1, 1] maps to the input coordinate
//     align_corners = 1: (g + 1) / 2 * (size - 1)  (-1 and 1: the corner pixels' centres)
//     align_corners = 0: ((g + 1) size - 1) / 2    (-1 and 1: the corner pixels' outer edges)
//   padding_mode: zeros (taps outside the input read 0), border (the
//   coordinate is clipped into [0, size - 1]) or reflection (reflected about
//   the borders, then clipped); mode: bilinear (ONNX 20: linear), nearest
//   (round half to even, as std::nearbyint) or bicubic (ONNX 20: cubic; the
//   4x4 pixels around the unpadded coordinate, cubic convolution A = -0.75,
//   the padding mode applied to each tap's integer position, as PyTorch's).
//   GridSampleGrad(dY, X, grid) -> dX (each tap's weight times dY, added where
//   it read), dgrid (the bilinear weights' derivatives times the coordinate
//   map's: 0 where border/reflection clipped; nearest: 0). Work is split by
//   batch item, so the sums into dX do not depend on the thread count.
//   AffineGrid(theta [N, 2, 3], size [N, C, H, W]) -> grid [N, H, W, 2]:
//   grid[n, h, w] = theta[n] (x_w, y_h, 1), x_w = -1 + (2w + 1) / W
//   (align_corners = 0) or -1 + 2w / (W - 1) (= 0 where W = 1).
// Floats are computed in Acc<T> (float for fp32), as PyTorch's CPU kernel.
#include <cmath>
#include <string>

#include "kernels/cpu/elementwise.h"
#include "kernels/cubic_convolution.h"
#include "kernels/cpu/nn_kernels.h"

namespace amptrain::kernels::cpu::nn {

namespace {

enum class Padding { kZeros, kBorder, kReflection };

struct GridParams {
  bool nearest = false, cubic = false, align_corners = false;
  Padding padding = Padding::kZeros;
};

StatusOr<GridParams> ReadParams(const KernelInit& init) {
  const ir::Attributes& a = AttrsOf(init);
  GridParams p;
  AMP_ASSIGN_OR_RETURN(std::string mode, a.GetString("mode", "bilinear"));
  AMP_ASSIGN_OR_RETURN(std::string padding, a.GetString("padding_mode", "zeros"));
  AMP_ASSIGN_OR_RETURN(int64_t align, a.GetInt("align_corners", 0));
  if (mode != "bilinear" && mode != "linear" && mode != "nearest" && mode != "bicubic" && mode != "cubic")
    return init.Error("mode '", mode, "' is not bilinear/linear, nearest or bicubic/cubic");
  p.nearest = mode == "nearest";
  p.cubic = mode == "bicubic" || mode == "cubic";
  p.align_corners = align != 0;
  if (padding == "zeros") p.padding = Padding::kZeros;
  else if (padding == "border") p.padding = Padding::kBorder;
  else if (padding == "reflection") p.padding = Padding::kReflection;
  else return init.Error("padding_mode '", padding, "' is not zeros, border or reflection");
  return p;
}

// x clipped into [0, limit]; *d: its derivative (0 where clipped).
template <class A>
A Clip(A x, A limit, A* d) {
  if (x < A(0)) {
    *d = A(0);
    return A(0);
  }
  if (x > limit) {
    *d = A(0);
    return limit;
  }
  *d = A(1);
  return x;
}

// x reflected into [twice_low / 2, twice_high / 2]; *d: +-1.
template <class A>
A Reflect(A x, int64_t twice_low, int64_t twice_high, A* d) {
  if (twice_low == twice_high) {
    *d = A(0);
    return A(0);
  }
  const A min = A(twice_low) / A(2), span = A(twice_high - twice_low) / A(2);
  x -= min;
  A sign = A(1);
  if (x < A(0)) {
    sign = A(-1);
    x = -x;
  }
  const A extra = std::fmod(x, span);
  const int64_t flips = static_cast<int64_t>(std::floor(x / span));
  if (flips % 2 == 0) {
    *d = sign;
    return extra + min;
  }
  *d = -sign;
  return span - extra + min;
}

// Grid value g as a coordinate along a dim of `size` (no padding), and d coord / d g.
template <class A>
A Unnormalize(A g, int64_t size, bool align_corners, A* d) {
  if (align_corners) {
    *d = A(size - 1) / A(2);
    return (g + A(1)) / A(2) * A(size - 1);
  }
  *d = A(size) / A(2);
  return ((g + A(1)) * A(size) - A(1)) / A(2);
}

// The input coordinate of grid value g along a dim of `size`, padding
// applied, and d coord / d g.
template <class A>
A SourceIndex(A g, int64_t size, const GridParams& p, A* d) {
  A d_unnorm;
  A coord = Unnormalize(g, size, p.align_corners, &d_unnorm);
  A d_pad = A(1), d_clip = A(1);
  if (p.padding == Padding::kBorder) {
    coord = Clip(coord, A(size - 1), &d_clip);
  } else if (p.padding == Padding::kReflection) {
    coord = p.align_corners ? Reflect(coord, 0, 2 * (size - 1), &d_pad) : Reflect(coord, -1, 2 * size - 1, &d_pad);
    coord = Clip(coord, A(size - 1), &d_clip);
  }
  *d = d_unnorm * d_pad * d_clip;
  return coord;
}

struct Dims {
  int64_t n, c, h, w, ho, wo;
};

Dims ReadDims(const std::vector<int64_t>& x, const std::vector<int64_t>& grid) {
  return {x[0], x[1], x[2], x[3], grid[1], grid[2]};
}

// One output position's taps: up to sixteen (input offset, weight) pairs
// and the weights' derivatives by the input coordinates (bilinear: four,
// bicubic: sixteen), or one tap (nearest).
template <class A>
struct Taps {
  int count = 0;
  int64_t at[16];
  A weight[16], d_ix[16], d_iy[16];
  A gx = A(0), gy = A(0);  // d coord / d grid value
};

// Bicubic: the weights of the taps at floor - 1 .. floor + 2 for fraction t,
// and their derivatives by t (cubic convolution, A = -0.75).
template <class A>
void CubicWeights(A t, A w[4], A dw[4]) {
  const A a(-0.75);
  const A at[4] = {t + A(1), t, A(1) - t, A(2) - t};  // the taps' distances; the last two lie ahead
  for (int i = 0; i < 4; ++i) {
    w[i] = CubicConvolution(at[i], a);
    dw[i] = i < 2 ? CubicConvolutionSlope(at[i], a) : -CubicConvolutionSlope(at[i], a);
  }
}

// Bicubic's tap at integer position i of a dim of `size`, the padding mode
// applied to it: the position read, or -1 (zeros padding outside).
int64_t BoundedTap(int64_t i, int64_t size, const GridParams& p) {
  double c = static_cast<double>(i), unused = 0;
  if (p.padding == Padding::kBorder) {
    c = Clip(c, static_cast<double>(size - 1), &unused);
  } else if (p.padding == Padding::kReflection) {
    c = p.align_corners ? Reflect(c, 0, 2 * (size - 1), &unused) : Reflect(c, -1, 2 * size - 1, &unused);
    c = Clip(c, static_cast<double>(size - 1), &unused);
  }
  const int64_t at = static_cast<int64_t>(c);
  return at >= 0 && at < size ? at : -1;
}

template <class A>
Taps<A> LocateCubic(A gx, A gy, const Dims& d, const GridParams& p) {
  Taps<A> t;
  const A ix = Unnormalize(gx, d.w, p.align_corners, &t.gx), iy = Unnormalize(gy, d.h, p.align_corners, &t.gy);
  if (!std::isfinite(ix) || !std::isfinite(iy)) return t;
  const int64_t x0 = static_cast<int64_t>(std::floor(ix)), y0 = static_cast<int64_t>(std::floor(iy));
  A wx[4], wy[4], dwx[4], dwy[4];
  CubicWeights(ix - A(x0), wx, dwx);
  CubicWeights(iy - A(y0), wy, dwy);
  for (int i = 0; i < 4; ++i) {
    const int64_t y = BoundedTap(y0 - 1 + i, d.h, p);
    for (int j = 0; j < 4 && y >= 0; ++j) {
      const int64_t x = BoundedTap(x0 - 1 + j, d.w, p);
      if (x < 0) continue;
      t.at[t.count] = y * d.w + x;
      t.weight[t.count] = wy[i] * wx[j];
      t.d_ix[t.count] = wy[i] * dwx[j];
      t.d_iy[t.count] = dwy[i] * wx[j];
      ++t.count;
    }
  }
  return t;
}

template <class A>
Taps<A> Locate(A gx, A gy, const Dims& d, const GridParams& p) {
  if (p.cubic) return LocateCubic(gx, gy, d, p);
  Taps<A> t;
  const A ix = SourceIndex(gx, d.w, p, &t.gx), iy = SourceIndex(gy, d.h, p, &t.gy);
  auto add = [&](int64_t y, int64_t x, A w, A dix, A diy) {
    if (y < 0 || y >= d.h || x < 0 || x >= d.w) return;  // zeros padding (the others clipped inside)
    t.at[t.count] = y * d.w + x;
    t.weight[t.count] = w;
    t.d_ix[t.count] = dix;
    t.d_iy[t.count] = diy;
    ++t.count;
  };
  if (p.nearest) {
    add(static_cast<int64_t>(std::nearbyint(iy)), static_cast<int64_t>(std::nearbyint(ix)), A(1), A(0), A(0));
    return t;
  }
  if (!std::isfinite(ix) || !std::isfinite(iy)) return t;  // NaN grid: every tap outside, as PyTorch's
  const int64_t x0 = static_cast<int64_t>(std::floor(ix)), y0 = static_cast<int64_t>(std::floor(iy));
  const A fx = ix - A(x0), fy = iy - A(y0);
  add(y0, x0, (A(1) - fx) * (A(1) - fy), -(A(1) - fy), -(A(1) - fx));
  add(y0, x0 + 1, fx * (A(1) - fy), A(1) - fy, -fx);
  add(y0 + 1, x0, (A(1) - fx) * fy, -fy, A(1) - fx);
  add(y0 + 1, x0 + 1, fx * fy, fy, fx);
  return t;
}

template <class T>
class GridSampleKernel final : public Kernel {
 public:
  GridSampleKernel(const KernelInit& init, GridParams p) : p_(p), threads_(Threads(init)) {}
  Status Run(KernelContext& ctx) override {
    using A = Acc<T>;
    const Dims d = ReadDims(ctx.inputs[0].dims, ctx.inputs[1].dims);
    const T* x = ctx.inputs[0].as<const T>();
    const T* grid = ctx.inputs[1].as<const T>();
    T* y = ctx.outputs[0].as<T>();
    const int64_t plane = d.h * d.w, out_plane = d.ho * d.wo;
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && d.n > 1)
    for (int64_t n = 0; n < d.n; ++n)
      for (int64_t o = 0; o < out_plane; ++o) {
        const T* g = grid + (n * out_plane + o) * 2;
        const Taps<A> t = Locate(A(g[0]), A(g[1]), d, p_);
        for (int64_t c = 0; c < d.c; ++c) {
          const T* src = x + (n * d.c + c) * plane;
          A v = A(0);
          for (int k = 0; k < t.count; ++k) v += t.weight[k] * A(src[t.at[k]]);
          y[(n * d.c + c) * out_plane + o] = static_cast<T>(v);
        }
      }
    return Status::Ok();
  }

 private:
  GridParams p_;
  int threads_;
};

template <class T>
class GridSampleGradKernel final : public Kernel {
 public:
  GridSampleGradKernel(const KernelInit& init, GridParams p) : p_(p), threads_(Threads(init)) {}
  Status Run(KernelContext& ctx) override {
    using A = Acc<T>;
    const Dims d = ReadDims(ctx.inputs[1].dims, ctx.inputs[2].dims);
    const T* dy = ctx.inputs[0].as<const T>();
    const T* x = ctx.inputs[1].as<const T>();
    const T* grid = ctx.inputs[2].as<const T>();
    T* dx = ctx.outputs[0].as<T>();
    T* dgrid = ctx.outputs[1].as<T>();
    const int64_t plane = d.h * d.w, out_plane = d.ho * d.wo;
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && d.n > 1)
    for (int64_t n = 0; n < d.n; ++n) {
      for (int64_t i = 0; i < d.c * plane; ++i) dx[n * d.c * plane + i] = T(0);
      for (int64_t o = 0; o < out_plane; ++o) {
        const T* g = grid + (n * out_plane + o) * 2;
        const Taps<A> t = Locate(A(g[0]), A(g[1]), d, p_);
        A gix = A(0), giy = A(0);
        for (int64_t c = 0; c < d.c; ++c) {
          const A up = A(dy[(n * d.c + c) * out_plane + o]);
          const T* src = x + (n * d.c + c) * plane;
          T* dst = dx + (n * d.c + c) * plane;
          for (int k = 0; k < t.count; ++k) {
            dst[t.at[k]] = static_cast<T>(A(dst[t.at[k]]) + t.weight[k] * up);
            const A v = A(src[t.at[k]]) * up;
            gix += t.d_ix[k] * v;
            giy += t.d_iy[k] * v;
          }
        }
        dgrid[(n * out_plane + o) * 2] = static_cast<T>(gix * t.gx);
        dgrid[(n * out_plane + o) * 2 + 1] = static_cast<T>(giy * t.gy);
      }
    }
    return Status::Ok();
  }

 private:
  GridParams p_;
  int threads_;
};

template <class T>
class AffineGridKernel final : public Kernel {
 public:
  explicit AffineGridKernel(bool align_corners) : align_corners_(align_corners) {}
  Status Run(KernelContext& ctx) override {
    using A = Acc<T>;
    const std::vector<int64_t>& out = ctx.outputs[0].dims;  // [N, H, W, 2]
    const int64_t n = out[0], h = out[1], w = out[2];
    const T* theta = ctx.inputs[0].as<const T>();
    T* grid = ctx.outputs[0].as<T>();
    for (int64_t b = 0; b < n; ++b) {
      const T* th = theta + b * 6;
      for (int64_t i = 0; i < h; ++i) {
        const A yv = Base(i, h);
        for (int64_t j = 0; j < w; ++j) {
          const A xv = Base(j, w);
          T* g = grid + ((b * h + i) * w + j) * 2;
          g[0] = static_cast<T>(A(th[0]) * xv + A(th[1]) * yv + A(th[2]));
          g[1] = static_cast<T>(A(th[3]) * xv + A(th[4]) * yv + A(th[5]));
        }
      }
    }
    return Status::Ok();
  }

 private:
  Acc<T> Base(int64_t i, int64_t size) const {
    using A = Acc<T>;
    if (size <= 1) return A(0);
    return align_corners_ ? A(-1) + A(2 * i) / A(size - 1) : A(-1) + A(2 * i + 1) / A(size);
  }
  bool align_corners_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> MakeGridSampleReference(const KernelInit& init) {
  const bool backward = init.op == OpKind::kGridSampleGrad;
  AMP_RETURN_IF_ERROR(cpu::CheckArity(init, backward ? 3 : 2, backward ? 2 : 1));
  const TensorSpec& x = init.inputs[backward ? 1 : 0];
  const TensorSpec& grid = init.inputs[backward ? 2 : 1];
  if (x.dims.size() != 4 || grid.dims.size() != 4 || grid.dims[3] != 2 || grid.dims[0] != x.dims[0])
    return init.Error("expects X [N, C, H, W] and grid [N, H_out, W_out, 2]");
  if (grid.dtype != x.dtype) return init.Error("X and grid have different dtypes");
  AMP_ASSIGN_OR_RETURN(GridParams p, ReadParams(init));
  std::unique_ptr<Kernel> out;
  AMP_RETURN_IF_ERROR(DispatchFloat(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (backward) out = std::make_unique<GridSampleGradKernel<T>>(init, p);
    else out = std::make_unique<GridSampleKernel<T>>(init, p);
    return Status::Ok();
  }));
  return out;
}

StatusOr<std::unique_ptr<Kernel>> MakeAffineGridReference(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(cpu::CheckArity(init, 2, 1));
  const std::vector<int64_t>& theta = init.inputs[0].dims;
  const std::vector<int64_t>& out = init.outputs[0].dims;
  if (theta.size() != 3 || theta[1] != 2 || theta[2] != 3 || out.size() != 4 || out[0] != theta[0] || out[3] != 2)
    return init.Error("expects theta [N, 2, 3] and a grid [N, H, W, 2]");
  AMP_ASSIGN_OR_RETURN(int64_t align, AttrsOf(init).GetInt("align_corners", 0));
  std::unique_ptr<Kernel> k;
  AMP_RETURN_IF_ERROR(DispatchFloat(init.inputs[0].dtype, [&](auto tag) {
    k = std::make_unique<AffineGridKernel<typename decltype(tag)::type>>(align != 0);
    return Status::Ok();
  }));
  return k;
}

}  // namespace amptrain::kernels::cpu::nn
