// Direct Resize and ResizeGrad (fp32, fp16, bf16) where only the last two
// axes change: upsampling and downsampling of images ([N, C, H, W]: FPNs,
// UNets, segmentation heads) and of signals ([N, C, L]). The same passes as
// the reference (kernels/cpu/pad_resize.cc), in double with the same taps
// (kernels/resize_taps.h) in the same order, so the same bits: H then W
// forward, the adjoints W then H backward, an axis that does not change
// taking no pass. What changes is the shape of the work: one [N, C] plane
// at a time on each thread, in a scratch row block of doubles, with the
// taps flattened into arrays and resolved once at creation, where the
// reference resamples the whole tensor axis by axis through vectors of
// doubles, single-threaded forward. Declined (the reference runs them): any
// other set of resized axes, and roi/scales/sizes known only at run time.
#include <omp.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "kernels/cpu/direct_kernels.h"
#include "kernels/cpu/shape_kernels.h"
#include "kernels/resize_taps.h"

namespace amptrain::kernels::cpu::direct {

namespace {

// One axis's taps, flattened: output x reads index[begin[x] .. begin[x+1])
// with the same weights; `start` is the extrapolation value or 0.
struct AxisTaps {
  std::vector<int64_t> begin, index;
  std::vector<double> weight, start;
};

AxisTaps Flatten(const ResizeAxisTaps& at, double extrapolation) {
  AxisTaps f;
  f.begin.push_back(0);
  for (const ResizeTaps& t : at.taps) {
    f.index.insert(f.index.end(), t.index.begin(), t.index.end());
    f.weight.insert(f.weight.end(), t.weight.begin(), t.weight.end());
    f.begin.push_back(static_cast<int64_t>(f.index.size()));
    f.start.push_back(t.extrapolate ? extrapolation : 0.0);
  }
  return f;
}

// The taps of the last two axes, resolved once at creation (null where an
// axis does not change), as the reference takes them at each pass.
struct PlaneTaps {
  int64_t planes = 1, h = 0, w = 0, ho = 0, wo = 0;
  std::optional<AxisTaps> th, tw;
};

template <class T>
class ResizePlanes final : public Kernel {
 public:
  ResizePlanes(PlaneTaps taps, bool backward, int threads)
      : p_(std::move(taps)), backward_(backward), threads_(threads), planes_(p_.planes), h_(p_.h), w_(p_.w),
        ho_(p_.ho), wo_(p_.wo) {}

  // Per thread: [ho, w] after the H pass (forward) or the W adjoint, and
  // [h, w] for the H adjoint.
  size_t scratch_bytes() const override { return static_cast<size_t>(threads_) * PerThread() * sizeof(double); }

  Status Run(KernelContext& ctx) override {
    const T* x = ctx.inputs[0].as<const T>();
    T* y = ctx.outputs[0].as<T>();
    double* scratch = static_cast<double*>(ctx.scratch);
    const AxisTaps* th = p_.th ? &*p_.th : nullptr;
    const AxisTaps* tw = p_.tw ? &*p_.tw : nullptr;
    const int64_t in_plane = backward_ ? ho_ * wo_ : h_ * w_, out_plane = backward_ ? h_ * w_ : ho_ * wo_;
#pragma omp parallel num_threads(threads_) if (threads_ > 1 && planes_ > 1)
    {
      double* a = scratch + static_cast<size_t>(omp_get_thread_num()) * PerThread();
      double* b = a + ho_ * w_;
#pragma omp for schedule(static)
      for (int64_t p = 0; p < planes_; ++p) {
        const T* xp = x + p * in_plane;
        T* yp = y + p * out_plane;
        if (backward_) Adjoint(xp, yp, a, b, th, tw);
        else Forward(xp, yp, a, th, tw);
      }
    }
    return Status::Ok();
  }

 private:
  size_t PerThread() const { return static_cast<size_t>(ho_ * w_ + (backward_ ? h_ * w_ : 0)); }
  static double D(T v) { return static_cast<double>(static_cast<Acc<T>>(v)); }
  static T Round(double v) { return T(static_cast<Acc<T>>(v)); }

  // x [h, w] -> y [ho, wo]; a holds [ho, w] after the H pass.
  void Forward(const T* x, T* y, double* a, const AxisTaps* th, const AxisTaps* tw) const {
    if (th) {
      for (int64_t o = 0; o < ho_; ++o) {
        double* row = a + o * w_;
        std::fill(row, row + w_, th->start[o]);
        for (int64_t j = th->begin[o]; j < th->begin[o + 1]; ++j) {
          const double wt = th->weight[j];
          const T* src = x + th->index[j] * w_;
          for (int64_t i = 0; i < w_; ++i) row[i] += wt * D(src[i]);
        }
      }
    } else {
      for (int64_t i = 0; i < ho_ * w_; ++i) a[i] = D(x[i]);
    }
    for (int64_t o = 0; o < ho_; ++o) {
      const double* row = a + o * w_;
      T* dst = y + o * wo_;
      if (!tw) {
        for (int64_t i = 0; i < wo_; ++i) dst[i] = Round(row[i]);
        continue;
      }
      for (int64_t q = 0; q < wo_; ++q) {
        double acc = tw->start[q];
        for (int64_t j = tw->begin[q]; j < tw->begin[q + 1]; ++j) acc += tw->weight[j] * row[tw->index[j]];
        dst[q] = Round(acc);
      }
    }
  }

  // dy [ho, wo] -> dx [h, w]: the W adjoint into a [ho, w], then the H
  // adjoint into b [h, w]; each source position sums its contributions in
  // the reference's order (output positions ascending, then their taps).
  void Adjoint(const T* dy, T* dx, double* a, double* b, const AxisTaps* th, const AxisTaps* tw) const {
    for (int64_t o = 0; o < ho_; ++o) {
      double* row = a + o * w_;
      const T* d = dy + o * wo_;
      if (!tw) {
        for (int64_t i = 0; i < w_; ++i) row[i] = D(d[i]);
        continue;
      }
      std::fill(row, row + w_, 0.0);
      for (int64_t q = 0; q < wo_; ++q) {
        const double v = D(d[q]);
        for (int64_t j = tw->begin[q]; j < tw->begin[q + 1]; ++j) row[tw->index[j]] += tw->weight[j] * v;
      }
    }
    if (!th) {
      for (int64_t i = 0; i < h_ * w_; ++i) dx[i] = Round(a[i]);
      return;
    }
    std::fill(b, b + h_ * w_, 0.0);
    for (int64_t o = 0; o < ho_; ++o) {
      const double* d = a + o * w_;
      for (int64_t j = th->begin[o]; j < th->begin[o + 1]; ++j) {
        const double wt = th->weight[j];
        double* dst = b + th->index[j] * w_;
        for (int64_t i = 0; i < w_; ++i) dst[i] += wt * d[i];
      }
    }
    for (int64_t i = 0; i < h_ * w_; ++i) dx[i] = Round(b[i]);
  }

  PlaneTaps p_;
  bool backward_;
  int threads_;
  int64_t planes_, h_, w_, ho_, wo_;
};

StatusOr<std::unique_ptr<Kernel>> MakeResize(const KernelInit& init) {
  const bool backward = init.op == OpKind::kResizeGrad;
  if (init.inputs.empty() || init.outputs.size() != 1) return init.Error("expects an input and one output");
  if (init.outputs[0].dtype != init.inputs[0].dtype) return init.Error("the output's dtype differs");
  auto attrs = ir::ParseResizeAttrs(init.attrs ? *init.attrs : ir::Attributes());
  if (!attrs.ok()) return init.Error(attrs.status().message());
  const std::vector<int64_t>& x = backward ? init.outputs[0].dims : init.inputs[0].dims;
  const std::vector<int64_t>& y = backward ? init.inputs[0].dims : init.outputs[0].dims;
  if (x.size() < 3 || x.size() != y.size()) return init.Error("takes rank 3 and more");
  // roi, scales and sizes are inputs 1-3 of Resize, 2-4 of ResizeGrad; they
  // must be known now (constants), so the taps are resolved once.
  const ParamInput roi(init, backward ? 2 : 1), scales(init, backward ? 3 : 2), sizes(init, backward ? 4 : 3);
  if (!roi.known() || !scales.known() || !sizes.known()) return init.Error("roi, scales or sizes computed at run time");
  AMP_ASSIGN_OR_RETURN(ResizeRun run, ResolveResizeRun(*attrs, roi, scales, sizes, KernelContext{}, x, y, init.Describe()));
  const size_t r = x.size(), hd = r - 2, wd = r - 1;
  PlaneTaps p;
  for (size_t d = 0; d < hd; ++d) {
    if (!run.identity[d]) return init.Error("resizes a leading axis");
    p.planes *= x[d];
  }
  p.h = x[hd], p.w = x[wd], p.ho = y[hd], p.wo = y[wd];
  // The taps as the reference takes them at each pass: H over the input, W over [.., ho, w].
  std::vector<int64_t> dims = x;
  if (!run.identity[hd]) p.th = Flatten(ResizeTapsOfAxis(*attrs, run.g, dims, hd, p.h, p.ho), attrs->extrapolation_value);
  dims[hd] = p.ho;
  if (!run.identity[wd]) p.tw = Flatten(ResizeTapsOfAxis(*attrs, run.g, dims, wd, p.w, p.wo), attrs->extrapolation_value);
  return WithDType(init.inputs[0].dtype, [&](auto tag) -> StatusOr<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(new ResizePlanes<typename decltype(tag)::type>(std::move(p), backward, Threads(init)));
  });
}

}  // namespace

void RegisterDirectResize(Registry& r) {
  for (OpKind op : {OpKind::kResize, OpKind::kResizeGrad}) r.Add(DirectEntry(op, MakeResize));
}

}  // namespace amptrain::kernels::cpu::direct
