// Direct 2-D pooling over NCHW planes, impl "direct", priority 20 (above
// oneDNN 2.6, whose plain-layout pooling is its slow simple_nchw): MaxPool,
// AveragePool and MaxPoolGrad in fp32, fp16 and bf16. One plane (n, c) per
// work item on OpenMP; a 2-byte plane is widened to fp32 in a thread-local
// buffer (a few KiB) and the result narrowed once.
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
// The Indices output of MaxPool and other ranks go to the reference kernel.
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/cpu/conv_geometry.h"
#include "kernels/cpu/direct_kernels.h"
#include "kernels/cpu/float_convert.h"

namespace amptrain::kernels::cpu::direct {

namespace {

struct Geometry2d {
  int64_t planes = 0, h = 0, w = 0, oh = 0, ow = 0;
  int64_t kh = 0, kw = 0, sh = 0, sw = 0, dh = 0, dw = 0, ph = 0, pw = 0;
  // Per output column and kernel column: the valid output range [lo, hi) of
  // ow for kernel column k (input column ow * sw - pw + k * dw inside [0, w)).
  std::vector<int64_t> lo, hi;
  std::vector<double> div_h, div_w;  // AveragePool divisor factors per output row / column

  int64_t in_size() const { return h * w; }
  int64_t out_size() const { return oh * ow; }
  int64_t Row(int64_t o, int64_t k) const { return o * sh - ph + k * dh; }
  bool overlapping() const { return sh < (kh - 1) * dh + 1 || sw < (kw - 1) * dw + 1; }
};

StatusOr<Geometry2d> Resolve(const KernelInit& init, const std::vector<int64_t>& x, const std::vector<int64_t>& y,
                             bool include_pad) {
  if (x.size() != 4 || y.size() != 4) return init.Error("the direct pools take 2-D pools only");
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

// A later value v replaces the running maximum m (the reference's rule).
// Bitwise operators, not || and &&: no branches, so the loops vectorize.
inline bool Wins(float v, float m) { return (v > m) | ((v != v) & (m == m)); }

// Thread-local fp32 copy of one plane of T (the plane itself for float).
template <class T>
const float* Widened(const T* plane, int64_t n, std::vector<float>& buf) {
  if constexpr (std::is_same_v<T, float>) {
    return plane;
  } else {
    buf.resize(static_cast<size_t>(n));
    WidenSpan(StorageDType<T>(), plane, buf.data(), n);
    return buf.data();
  }
}

// Stores an fp32 plane into T (a copy for float).
template <class T>
void Store(const float* f, T* out, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    if (f != out) std::memcpy(out, f, static_cast<size_t>(n) * sizeof(float));
  } else {
    NarrowSpan(StorageDType<T>(), f, out, n);
  }
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

template <class T>
class PoolKernel final : public Kernel {
 public:
  PoolKernel(Geometry2d p, bool is_max, int threads) : p_(std::move(p)), is_max_(is_max), threads_(threads) {}

  Status Run(KernelContext& ctx) override {
    const T* x = ctx.inputs[0].as<const T>();
    T* y = ctx.outputs[0].as<T>();
#pragma omp parallel num_threads(threads_)
    {
      std::vector<float> in, out(static_cast<size_t>(p_.out_size()));
      std::vector<double> acc;
#pragma omp for schedule(static)
      for (int64_t plane = 0; plane < p_.planes; ++plane) {
        const float* xp = Widened(x + plane * p_.in_size(), p_.in_size(), in);
        float* yp = std::is_same_v<T, float> ? reinterpret_cast<float*>(y + plane * p_.out_size()) : out.data();
        if (is_max_) MaxPlane(p_, xp, yp, nullptr);
        else AveragePlane(p_, xp, yp, acc);
        Store(yp, y + plane * p_.out_size(), p_.out_size());
      }
    }
    return Status::Ok();
  }

 private:
  Geometry2d p_;
  bool is_max_;
  int threads_;
};

// dX of one plane: dY[o] added at argmax[o], in output order, from +0.
template <class A>
void ScatterPlane(const Geometry2d& p, const float* dy, const int32_t* arg, A* acc) {
  std::fill(acc, acc + p.in_size(), A(0));
  for (int64_t o = 0; o < p.out_size(); ++o)
    if (arg[o] >= 0) acc[arg[o]] += static_cast<A>(dy[o]);
}

template <class T>
class MaxPoolGradKernel final : public Kernel {
 public:
  MaxPoolGradKernel(Geometry2d p, int threads) : p_(std::move(p)), threads_(threads) {}

  Status Run(KernelContext& ctx) override {
    if (!ctx.outputs[0].data) return Status::Ok();
    const T* dy = ctx.inputs[0].as<const T>();
    const T* x = ctx.inputs[1].as<const T>();
    T* dx = ctx.outputs[0].as<T>();
    const int64_t in_size = p_.in_size(), out_size = p_.out_size();
#pragma omp parallel num_threads(threads_)
    {
      std::vector<float> xbuf, dybuf, best(static_cast<size_t>(out_size)), sum(static_cast<size_t>(in_size));
      std::vector<int32_t> arg(static_cast<size_t>(out_size));
      std::vector<double> wide(p_.overlapping() ? static_cast<size_t>(in_size) : 0);
#pragma omp for schedule(static)
      for (int64_t plane = 0; plane < p_.planes; ++plane) {
        MaxPlane(p_, Widened(x + plane * in_size, in_size, xbuf), best.data(), arg.data());
        const float* g = Widened(dy + plane * out_size, out_size, dybuf);
        T* out = dx + plane * in_size;
        if (!wide.empty()) {
          ScatterPlane(p_, g, arg.data(), wide.data());
          for (int64_t i = 0; i < in_size; ++i) sum[i] = static_cast<float>(wide[i]);
          Store(sum.data(), out, in_size);
        } else if constexpr (std::is_same_v<T, float>) {
          ScatterPlane(p_, g, arg.data(), out);
        } else {
          ScatterPlane(p_, g, arg.data(), sum.data());
          Store(sum.data(), out, in_size);
        }
      }
    }
    return Status::Ok();
  }

 private:
  Geometry2d p_;
  int threads_;
};

StatusOr<std::unique_ptr<Kernel>> MakePool(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(kernels::CheckArity(init, 1, 1, 1, 1));
  if (init.outputs[0].dtype != init.inputs[0].dtype) return init.Error("Y must have X's dtype");
  const bool is_max = init.op == OpKind::kMaxPool;
  const bool include_pad = !is_max && init.attrs->Int("count_include_pad", 0) != 0;
  AMP_ASSIGN_OR_RETURN(Geometry2d p, Resolve(init, init.inputs[0].dims, init.outputs[0].dims, include_pad));
  return ForDType<PoolKernel>(init.inputs[0].dtype, std::move(p), is_max, Threads(init));
}

StatusOr<std::unique_ptr<Kernel>> MakeMaxPoolGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(kernels::CheckArity(init, 2, 2, 1, 1));
  const DType t = init.inputs[0].dtype;
  if (init.inputs[1].dtype != t || init.outputs[0].dtype != t) return init.Error("dY, X and dX must share a dtype");
  const auto &dy = init.inputs[0].dims, &x = init.inputs[1].dims;
  if (dy.size() != 4 || x.size() != 4 || dy[0] != x[0] || dy[1] != x[1])
    return init.Error("X must be [N, C, H, W] and dY [N, C, OH, OW]");
  KernelInit fwd = init;
  fwd.inputs = {init.inputs[1]};
  fwd.outputs = {init.inputs[0]};
  AMP_ASSIGN_OR_RETURN(Geometry2d p, Resolve(fwd, x, dy, false));
  return ForDType<MaxPoolGradKernel>(t, std::move(p), Threads(init));
}

}  // namespace

void RegisterDirectPool(Registry& r) {
  for (OpKind op : {OpKind::kMaxPool, OpKind::kAveragePool}) r.Add(DirectEntry(op, MakePool));
  r.Add(DirectEntry(OpKind::kMaxPoolGrad, MakeMaxPoolGrad));
}

}  // namespace amptrain::kernels::cpu::direct
