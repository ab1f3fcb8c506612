// Reference kernel of DFT (ir/ops.def; geometry in ir/infer/spectral.h).
//   Every output element is computed in double with twiddles
//   exp(-+2 pi i j / L) tabulated once per kernel (see Twiddle), scaled by
//   1 / L for the inverse and rounded once to the output's dtype. The signal is zero-padded
//   or truncated to L; IRFFT first extends its L / 2 + 1 bins by conjugate
//   symmetry (bins past the input's are zero) and keeps the real part, as
//   numpy.fft.irfft does. A power-of-two L takes the radix-2 FFT, other
//   lengths above 64 Bluestein's chirp transform (the DFT as a convolution,
//   done with radix-2 FFTs of a power of two >= 2L - 1): O(L log L) per
//   signal, every stage in double. Shorter lengths take the direct sums.
#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/infer/spectral.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/register.h"

namespace amptrain::kernels::cpu {

namespace {

// A scalar int32/int64 input's value as a Tensor (DecodeDft reads Tensors).
ir::Tensor ScalarOf(const ir::TensorView& v) { return ir::Tensor::Int64s({IntAt(v, 0)}, {}); }

// cos and sin of 2 pi j / L, j in [0, L), from an angle reduced to [0, pi/4]
// by the symmetries of the circle (counted in eighths of 1/L turns, exactly):
// the quarter turns come out exact (cos pi/2 = 0, sin pi = 0, not 1e-16) and
// the twiddles of j and L - j are conjugates to the last bit.
void Twiddle(int64_t j, int64_t len, double* c, double* s) {
  const int64_t turn = 8 * len;
  int64_t a = 8 * j;
  const bool lower = a > turn / 2;  // 2 pi - x: sin negates
  if (lower) a = turn - a;
  const bool left = a > turn / 4;   // pi - x: cos negates
  if (left) a = turn / 2 - a;
  const bool swap = a > turn / 8;   // pi/2 - x: sin and cos trade places
  if (swap) a = turn / 4 - a;
  const double x = M_PI * static_cast<double>(a) / (4.0 * static_cast<double>(len));
  double cs = std::cos(x), sn = std::sin(x);
  if (swap) std::swap(cs, sn);
  *c = left ? -cs : cs;
  *s = lower ? -sn : sn;
}

// The iterative radix-2 FFT of one power-of-two length, in place, in double:
// bit-reversed order, then butterflies of span 1, 2, 4, ... with the twiddles
// of Twiddle.
class Radix2 {
 public:
  explicit Radix2(int64_t n) : n_(n), cos_(static_cast<size_t>(n)), sin_(static_cast<size_t>(n)) {
    for (int64_t j = 0; j < n; ++j) Twiddle(j, n, &cos_[static_cast<size_t>(j)], &sin_[static_cast<size_t>(j)]);
  }
  int64_t size() const { return n_; }
  // sign -1: sum_n x[n] e^{-2 pi i k n / N}; +1: the same with +, unscaled.
  void Run(double* re, double* im, double sign) const {
    for (int64_t i = 1, j = 0; i < n_; ++i) {
      int64_t bit = n_ >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) {
        std::swap(re[i], re[j]);
        std::swap(im[i], im[j]);
      }
    }
    for (int64_t half = 1; half < n_; half <<= 1) {
      const int64_t step = n_ / (2 * half);  // twiddle k of this span is table entry k * step
      for (int64_t start = 0; start < n_; start += 2 * half)
        for (int64_t k = 0; k < half; ++k) {
          const double c = cos_[static_cast<size_t>(k * step)], d = sign * sin_[static_cast<size_t>(k * step)];
          const int64_t a = start + k, b = a + half;
          const double tr = re[b] * c - im[b] * d, ti = re[b] * d + im[b] * c;
          re[b] = re[a] - tr;
          im[b] = im[a] - ti;
          re[a] += tr;
          im[a] += ti;
        }
    }
  }

 private:
  int64_t n_;
  std::vector<double> cos_, sin_;
};

bool IsPowerOfTwo(int64_t n) { return n >= 1 && (n & (n - 1)) == 0; }

// Lengths up to this take the direct sums unless they are powers of two;
// longer ones Bluestein's chirp transform.
constexpr int64_t kDirectMaxLength = 64;

template <class T>
class DftKernel final : public Kernel {
 public:
  // `g`: the geometry where dft_length and axis were known at plan time
  // (constants), else decoded from the inputs at each run.
  DftKernel(const KernelInit& init, std::optional<ir::DftGeometry> g)
      : who_(init.Describe()), attrs_(AttrsOf(init)), dims_(init.inputs[0].dims), out_dims_(init.outputs[0].dims),
        has_length_(init.inputs.size() > 1 && init.inputs[1].present()),
        has_axis_(init.inputs.size() > 2 && init.inputs[2].present()), threads_(Threads(init)) {
    if (g) Use(*g);
  }

  Status Run(KernelContext& ctx) override {
    if (!decoded_) {
      ir::Tensor length, axis;
      if (has_length_) length = ScalarOf(ctx.inputs[1]);
      if (has_axis_) axis = ScalarOf(ctx.inputs[2]);
      auto g = ir::DecodeDft(attrs_, dims_, has_length_, has_length_ ? &length : nullptr, has_axis_,
                             has_axis_ ? &axis : nullptr);
      if (!g.ok()) return InvalidArgument(who_, ": ", g.status().message());
      if (ir::DftOutputDims(*g, dims_) != out_dims_)
        return InvalidArgument(who_, ": dft_length and axis give another shape than the plan's");
      Use(*g);
    }
    const T* x = ctx.inputs[0].as<const T>();
    T* y = ctx.outputs[0].as<T>();
    const int64_t signals = outer_ * inner_;
#pragma omp parallel for num_threads(threads_) schedule(static) \
    if (threads_ > 1 && signals * g_.length * g_.out_len >= kParallelMinElements)
    for (int64_t s = 0; s < signals; ++s) Transform(x, y, s / inner_, s % inner_);
    return Status::Ok();
  }

 private:
  void Use(const ir::DftGeometry& g) {
    g_ = g;
    outer_ = inner_ = 1;
    for (int64_t d = 0; d < g.axis; ++d) outer_ *= dims_[static_cast<size_t>(d)];
    for (size_t d = static_cast<size_t>(g.axis) + 1; d + 1 < dims_.size(); ++d) inner_ *= dims_[d];
    const int64_t len = g.length;
    fft_.reset();
    chirp_re_.clear();
    if (IsPowerOfTwo(len)) {
      fft_ = std::make_unique<Radix2>(len);
    } else if (len > kDirectMaxLength) {
      // Bluestein: k n = (k^2 + n^2 - (k - n)^2) / 2, so with the chirp
      // c[m] = e^{-+ pi i m^2 / L}, X[k] = c[k] sum_n (x[n] c[n]) conj(c[k - n]):
      // a convolution, which FFTs of a power of two >= 2L - 1 compute.
      int64_t m = 1;
      while (m < 2 * len - 1) m <<= 1;
      fft_ = std::make_unique<Radix2>(m);
      const double sign = g.inverse ? 1.0 : -1.0;
      chirp_re_.resize(static_cast<size_t>(len));
      chirp_im_.resize(static_cast<size_t>(len));
      for (int64_t j = 0; j < len; ++j) {  // angle pi (j^2 mod 2L) / L, reduced exactly
        double c, sn;
        Twiddle(static_cast<int64_t>((static_cast<unsigned __int128>(j) * j) % static_cast<unsigned __int128>(2 * len)),
                2 * len, &c, &sn);
        chirp_re_[static_cast<size_t>(j)] = c;
        chirp_im_[static_cast<size_t>(j)] = sign * sn;
      }
      kernel_re_.assign(static_cast<size_t>(m), 0.0);  // FFT of conj(c) over -L < m < L, wrapped
      kernel_im_.assign(static_cast<size_t>(m), 0.0);
      for (int64_t j = 0; j < len; ++j) {
        kernel_re_[static_cast<size_t>(j)] = chirp_re_[static_cast<size_t>(j)];
        kernel_im_[static_cast<size_t>(j)] = -chirp_im_[static_cast<size_t>(j)];
        if (j > 0) {
          kernel_re_[static_cast<size_t>(m - j)] = chirp_re_[static_cast<size_t>(j)];
          kernel_im_[static_cast<size_t>(m - j)] = -chirp_im_[static_cast<size_t>(j)];
        }
      }
      fft_->Run(kernel_re_.data(), kernel_im_.data(), -1.0);
    } else {
      cos_.resize(static_cast<size_t>(len));
      sin_.resize(static_cast<size_t>(len));
      for (int64_t j = 0; j < len; ++j) Twiddle(j, len, &cos_[static_cast<size_t>(j)], &sin_[static_cast<size_t>(j)]);
    }
    decoded_ = true;
  }

  // One signal: input element n of signal (o, i) is x[((o n_in + n) inner + i) parts + part].
  void Transform(const T* x, T* y, int64_t o, int64_t i) const {
    const int64_t len = g_.length, used = std::min(g_.n, g_.irfft() ? len / 2 + 1 : len);
    const size_t work = static_cast<size_t>(fft_ ? fft_->size() : len);
    std::vector<double> re(work, 0.0), im(work, 0.0);
    auto in = [&](int64_t n, int64_t part) {
      return static_cast<double>(static_cast<Acc<T>>(x[((o * g_.n + n) * inner_ + i) * g_.in_parts + part]));
    };
    for (int64_t n = 0; n < used; ++n) {
      re[static_cast<size_t>(n)] = in(n, 0);
      if (g_.in_parts == 2) im[static_cast<size_t>(n)] = in(n, 1);
    }
    if (g_.irfft())  // bins past L / 2 mirror the ones below: X[L - k] = conj(X[k])
      for (int64_t k = len / 2 + 1; k < len; ++k)
        if (len - k < used) {
          re[static_cast<size_t>(k)] = re[static_cast<size_t>(len - k)];
          im[static_cast<size_t>(k)] = -im[static_cast<size_t>(len - k)];
        }
    const int64_t terms = g_.irfft() ? len : used;  // the signal's nonzero prefix
    const double sign = g_.inverse ? 1.0 : -1.0, scale = g_.inverse ? 1.0 / static_cast<double>(len) : 1.0;
    if (!chirp_re_.empty()) {
      Bluestein(re, im, terms);
    } else if (fft_) {
      fft_->Run(re.data(), im.data(), sign);
    } else {
      std::vector<double> sr(static_cast<size_t>(g_.out_len)), si(static_cast<size_t>(g_.out_len));
      for (int64_t k = 0; k < g_.out_len; ++k) {
        double ar = 0.0, ai = 0.0;
        int64_t j = 0;  // k n mod L
        for (int64_t n = 0; n < terms; ++n) {
          const double a = re[static_cast<size_t>(n)], b = im[static_cast<size_t>(n)];
          const double c = cos_[static_cast<size_t>(j)], d = sign * sin_[static_cast<size_t>(j)];
          ar += a * c - b * d;
          ai += a * d + b * c;
          j += k;
          if (j >= len) j -= len;
        }
        sr[static_cast<size_t>(k)] = ar;
        si[static_cast<size_t>(k)] = ai;
      }
      std::copy(sr.begin(), sr.end(), re.begin());
      std::copy(si.begin(), si.end(), im.begin());
    }
    T* out = y + (o * g_.out_len * inner_ + i) * g_.out_parts;
    const int64_t stride = inner_ * g_.out_parts;  // between bins
    for (int64_t k = 0; k < g_.out_len; ++k) {
      out[k * stride] = static_cast<T>(static_cast<Acc<T>>(re[static_cast<size_t>(k)] * scale));
      if (g_.out_parts == 2) out[k * stride + 1] = static_cast<T>(static_cast<Acc<T>>(im[static_cast<size_t>(k)] * scale));
    }
  }

  // re/im hold the signal's first `terms` values (zero after, fft_->size()
  // long); they leave holding the transform's first L bins.
  void Bluestein(std::vector<double>& re, std::vector<double>& im, int64_t terms) const {
    const int64_t len = g_.length, m = fft_->size();
    for (int64_t n = 0; n < terms; ++n) {  // a[n] = x[n] c[n]
      const size_t j = static_cast<size_t>(n);
      const double a = re[j], b = im[j];
      re[j] = a * chirp_re_[j] - b * chirp_im_[j];
      im[j] = a * chirp_im_[j] + b * chirp_re_[j];
    }
    fft_->Run(re.data(), im.data(), -1.0);
    for (int64_t j = 0; j < m; ++j) {  // times the kernel's transform
      const size_t u = static_cast<size_t>(j);
      const double a = re[u], b = im[u];
      re[u] = a * kernel_re_[u] - b * kernel_im_[u];
      im[u] = a * kernel_im_[u] + b * kernel_re_[u];
    }
    fft_->Run(re.data(), im.data(), 1.0);
    const double inv = 1.0 / static_cast<double>(m);
    for (int64_t k = 0; k < len; ++k) {  // X[k] = c[k] conv[k] / M
      const size_t j = static_cast<size_t>(k);
      const double a = re[j] * inv, b = im[j] * inv;
      re[j] = a * chirp_re_[j] - b * chirp_im_[j];
      im[j] = a * chirp_im_[j] + b * chirp_re_[j];
    }
  }

  std::string who_;  // for errors
  ir::Attributes attrs_;
  std::vector<int64_t> dims_, out_dims_;
  bool has_length_, has_axis_;
  int threads_;
  bool decoded_ = false;
  ir::DftGeometry g_;
  int64_t outer_ = 1, inner_ = 1;
  std::unique_ptr<Radix2> fft_;          // a power-of-two length, or Bluestein's convolution size
  std::vector<double> cos_, sin_;        // the direct sums' twiddles
  std::vector<double> chirp_re_, chirp_im_, kernel_re_, kernel_im_;  // Bluestein's
};

StatusOr<std::unique_ptr<Kernel>> CreateDft(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 1, 1));
  const bool has_length = init.inputs.size() > 1 && init.inputs[1].present();
  const bool has_axis = init.inputs.size() > 2 && init.inputs[2].present();
  for (size_t i : {1, 2})
    if (i < init.inputs.size() && init.inputs[i].present() &&
        ((init.inputs[i].dtype != DType::kInt64 && init.inputs[i].dtype != DType::kInt32) ||
         init.inputs[i].num_elements() != 1))
      return init.Error(i == 1 ? "dft_length" : "axis", " must be one int32 or int64 value");
  if (init.outputs[0].dtype != init.inputs[0].dtype) return init.Error("the output's dtype is not the input's");
  std::optional<ir::DftGeometry> g;
  if ((!has_length || init.inputs[1].value) && (!has_axis || init.inputs[2].value)) {
    auto decoded = ir::DecodeDft(AttrsOf(init), init.inputs[0].dims, has_length,
                                 has_length ? init.inputs[1].value : nullptr, has_axis,
                                 has_axis ? init.inputs[2].value : nullptr);
    if (!decoded.ok()) return init.Error(decoded.status().message());
    if (init.outputs[0].dims != ir::DftOutputDims(*decoded, init.inputs[0].dims))
      return init.Error("the output's shape is not the transform's");
    g = *decoded;
  }
  std::unique_ptr<Kernel> out;
  AMP_RETURN_IF_ERROR(DispatchFloat(init.inputs[0].dtype, [&](auto tag) {
    out = std::make_unique<DftKernel<typename decltype(tag)::type>>(init, g);
    return Status::Ok();
  }));
  return out;
}

}  // namespace

void RegisterReferenceSpectral(Registry& r) { r.Add(ReferenceEntry(OpKind::kDFT, FloatDTypes(), CreateDft)); }

}  // namespace amptrain::kernels::cpu
