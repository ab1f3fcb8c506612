// Direct elementwise kernels for the hot ops of mixed-precision training,
// impl "direct": loops the compiler vectorizes, where the reference converts
// one element at a time.
//   Relu (fp16, bf16):       on the bits. Negative numbers and -inf become
//                            +0, -0 stays -0, NaN is quieted (the reference's
//                            round trip through fp32).
//   ReluGrad(dY, Y) (fp32, fp16, bf16): dY where Y > 0, else +0; a 2-byte
//                            NaN dY is quieted as by the reference.
//   Cast fp32 <-> fp16/bf16: the vectorized conversions of float_convert.h.
//   Where(C, X, Y) (any dtype, by element size): C of the output's dims or a
//                            block of its trailing dims (an attention mask),
//                            X and Y each of the output's dims or one element
//                            (the gradients of Clip/ReLU6, LeakyRelu, PRelu,
//                            Max/Min: Where(mask, dY, 0)); a select of bits,
//                            in loops the compiler vectorizes.
//   Add, Mul (fp32, fp16, bf16) of two inputs of the output's dims (no
//                            broadcast: ResNet's residual sums), or of
//                            X [N, C, H, W] and one value per channel
//                            (squeeze-excitation's scale, plain or
//                            channels-last), or of X and a block of its
//                            trailing dims (a Linear's bias, a position
//                            table, a scalar): float(a) op float(b), rounded
//                            once, as the reference; 2-byte values are
//                            widened in blocks on each thread.
// Same bits as the reference kernels (unary.cc, grad_misc.cc, cast.cc,
// binary.cc) for every input, except which NaN a sum or product of two NaNs
// carries (IEEE 754 leaves it open; the compiler may commute the operands).
// Output 0 may overwrite input 0. SSE2 and AVX intrinsics: the build's
// baseline (-mf16c implies AVX).
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/direct_kernels.h"
#include "kernels/cpu/float_convert.h"

namespace amptrain::kernels::cpu::direct {

namespace {

constexpr int64_t kParallelMin = 1 << 15;

// Bit layout of a 2-byte float: the exponent mask (= +inf) and the quiet bit.
struct Bits2 {
  uint16_t inf, quiet;
};
constexpr Bits2 kHalfBits{0x7c00, 0x0200}, kBf16Bits{0x7f80, 0x0040};

// Scalar forms (the tails of the vector loops), on the bits:
// the value after a round trip through fp32 (NaN quieted, the rest unchanged),
inline uint16_t RoundTrip(uint16_t x, Bits2 b) {
  return static_cast<uint16_t>((x & 0x7fffu) > b.inf ? x | b.quiet : x);
}
// Relu: a negative number (not -0, not NaN) becomes +0,
inline uint16_t Relu(uint16_t x, Bits2 b) {
  const bool negative = (x & 0x8000u) && (x & 0x7fffu) != 0 && (x & 0x7fffu) <= b.inf;
  return negative ? uint16_t{0} : RoundTrip(x, b);
}
// ReluGrad: dY where Y > 0 (+inf included, NaN not), else +0.
inline uint16_t ReluGrad(uint16_t dy, uint16_t y, Bits2 b) {
  const bool positive = !(y & 0x8000u) && y != 0 && y <= b.inf;
  return positive ? RoundTrip(dy, b) : uint16_t{0};
}

// The same, 8 lanes at a time (SSE2 compares are signed: every operand is
// below 0x8000 once the sign is masked off).
struct Lanes {
  __m128i inf, quiet, abs = _mm_set1_epi16(0x7fff), zero = _mm_setzero_si128();
  explicit Lanes(Bits2 b) : inf(_mm_set1_epi16(static_cast<short>(b.inf))), quiet(_mm_set1_epi16(static_cast<short>(b.quiet))) {}
  __m128i RoundTrip(__m128i x) const {
    return _mm_or_si128(x, _mm_and_si128(quiet, _mm_cmpgt_epi16(_mm_and_si128(x, abs), inf)));
  }
  // All ones where x is a number (not NaN) other than +-0.
  __m128i NonzeroNumber(__m128i x) const {
    const __m128i a = _mm_and_si128(x, abs);
    return _mm_andnot_si128(_mm_or_si128(_mm_cmpeq_epi16(a, zero), _mm_cmpgt_epi16(a, inf)), _mm_set1_epi16(-1));
  }
  __m128i Relu(__m128i x) const {
    const __m128i negative = _mm_and_si128(_mm_cmplt_epi16(x, zero), NonzeroNumber(x));
    return _mm_andnot_si128(negative, RoundTrip(x));
  }
  __m128i ReluGrad(__m128i dy, __m128i y) const {
    const __m128i positive = _mm_andnot_si128(_mm_cmplt_epi16(y, zero), NonzeroNumber(y));
    return _mm_and_si128(positive, RoundTrip(dy));
  }
};

inline __m128i Load8(const uint16_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
inline void Store8(uint16_t* p, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); }

template <class Fn>
void ForRange(int64_t n, int threads, Fn&& fn) {
  if (n <= 0) return;  // an empty tensor (a zero step would divide by zero in the loop's trip count)
  const int t = n >= kParallelMin ? threads : 1;
  const int64_t step = ((n + t - 1) / t + 63) / 64 * 64;
#pragma omp parallel for num_threads(t) schedule(static) if (t > 1)
  for (int64_t b = 0; b < n; b += step) fn(b, std::min(n, b + step));
}

class ReluKernel final : public Kernel {
 public:
  ReluKernel(Bits2 bits, int threads) : bits_(bits), threads_(threads) {}
  Status Run(KernelContext& ctx) override {
    const auto* x = ctx.inputs[0].as<const uint16_t>();
    auto* y = ctx.outputs[0].as<uint16_t>();
    const Bits2 b = bits_;
    ForRange(ctx.outputs[0].num_elements(), threads_, [x, y, b](int64_t lo, int64_t hi) {
      const Lanes v(b);
      int64_t i = lo;
      for (; i + 8 <= hi; i += 8) Store8(y + i, v.Relu(Load8(x + i)));
      for (; i < hi; ++i) y[i] = Relu(x[i], b);
    });
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }

 private:
  Bits2 bits_;
  int threads_;
};

class ReluGradKernel final : public Kernel {
 public:
  ReluGradKernel(DType t, int threads) : dtype_(t), threads_(threads) {}
  Status Run(KernelContext& ctx) override {
    const int64_t n = ctx.outputs[0].num_elements();
    if (dtype_ == DType::kFloat32) {
      const float* dy = ctx.inputs[0].as<const float>();
      const float* y = ctx.inputs[1].as<const float>();
      float* dx = ctx.outputs[0].as<float>();
      ForRange(n, threads_, [dy, y, dx](int64_t lo, int64_t hi) {
        int64_t i = lo;
        for (; i + 8 <= hi; i += 8) {
          const __m256 positive = _mm256_cmp_ps(_mm256_loadu_ps(y + i), _mm256_setzero_ps(), _CMP_GT_OQ);
          _mm256_storeu_ps(dx + i, _mm256_and_ps(positive, _mm256_loadu_ps(dy + i)));
        }
        for (; i < hi; ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
      });
      return Status::Ok();
    }
    const Bits2 b = dtype_ == DType::kFloat16 ? kHalfBits : kBf16Bits;
    const auto* dy = ctx.inputs[0].as<const uint16_t>();
    const auto* y = ctx.inputs[1].as<const uint16_t>();
    auto* dx = ctx.outputs[0].as<uint16_t>();
    ForRange(n, threads_, [dy, y, dx, b](int64_t lo, int64_t hi) {
      const Lanes v(b);
      int64_t i = lo;
      for (; i + 8 <= hi; i += 8) Store8(dx + i, v.ReluGrad(Load8(dy + i), Load8(y + i)));
      for (; i < hi; ++i) dx[i] = ReluGrad(dy[i], y[i], b);
    });
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }

 private:
  DType dtype_;
  int threads_;
};

enum class Arith { kAdd, kMul };

template <Arith op>
inline __m256 Apply8(__m256 a, __m256 b) {
  return op == Arith::kAdd ? _mm256_add_ps(a, b) : _mm256_mul_ps(a, b);
}

// y[j] = a[j] op b[j] over a row of fp32; b_step 0 broadcasts b[0] (a scalar).
template <Arith op>
void RowF32(const float* a, const float* b, int64_t b_step, float* y, int64_t n) {
  const __m256 bv = _mm256_set1_ps(b[0]);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(y + j, Apply8<op>(_mm256_loadu_ps(a + j), b_step ? _mm256_loadu_ps(b + j) : bv));
  for (; j < n; ++j) y[j] = op == Arith::kAdd ? a[j] + b[j * b_step] : a[j] * b[j * b_step];
}

// The same over 2-byte rows: a and y are fp16/bf16, b is fp32 (widened by the
// caller); each block of `a` is widened, combined and narrowed once.
template <Arith op>
void RowTwoByte(DType t, const uint16_t* a, const float* b, int64_t b_step, uint16_t* y, int64_t n) {
  constexpr int64_t kBlock = 512;
  alignas(32) float fa[kBlock];
  for (int64_t i = 0; i < n; i += kBlock) {
    const int64_t m = std::min(kBlock, n - i);
    WidenSpan(t, a + i, fa, m);
    RowF32<op>(fa, b + i * b_step, b_step, fa, m);
    NarrowSpan(t, fa, y + i, m);
  }
}

// y[at + j] = x[at + j] op b[j * b_step], j < n, of x and y of type t
// (fp32, or fp16/bf16 through RowTwoByte); b is fp32.
template <Arith op>
void RowAt(DType t, const void* x, int64_t at, const float* b, int64_t b_step, void* y, int64_t n) {
  if (t == DType::kFloat32)
    RowF32<op>(static_cast<const float*>(x) + at, b, b_step, static_cast<float*>(y) + at, n);
  else
    RowTwoByte<op>(t, static_cast<const uint16_t*>(x) + at, b, b_step, static_cast<uint16_t*>(y) + at, n);
}

// Add and Mul (fp32, fp16, bf16) of two inputs of the output's dims (no
// broadcast: ResNet's residual sums, SiLU-free products): float(a) op
// float(b), rounded once, as the reference; 2-byte values are widened in
// blocks on each thread.
template <Arith op>
class SameDimsKernel final : public Kernel {
 public:
  SameDimsKernel(DType t, int threads) : dtype_(t), threads_(threads) {}
  Status Run(KernelContext& ctx) override {
    const int64_t n = ctx.outputs[0].num_elements();
    if (dtype_ == DType::kFloat32) {
      const float* a = ctx.inputs[0].as<const float>();
      const float* b = ctx.inputs[1].as<const float>();
      float* y = ctx.outputs[0].as<float>();
      ForRange(n, threads_, [a, b, y](int64_t lo, int64_t hi) { RowF32<op>(a + lo, b + lo, 1, y + lo, hi - lo); });
      return Status::Ok();
    }
    const auto* a = static_cast<const uint16_t*>(ctx.inputs[0].data);
    const auto* b = static_cast<const uint16_t*>(ctx.inputs[1].data);
    auto* y = static_cast<uint16_t*>(ctx.outputs[0].data);
    const DType t = dtype_;
    ForRange(n, threads_, [a, b, y, t](int64_t lo, int64_t hi) {
      constexpr int64_t kBlock = 512;
      alignas(32) float fb[kBlock];
      for (int64_t i = lo; i < hi; i += kBlock) {
        const int64_t m = std::min(kBlock, hi - i);
        WidenSpan(t, b + i, fb, m);
        RowTwoByte<op>(t, a + i, fb, 1, y + i, m);
      }
    });
    return Status::Ok();
  }
  // Each block is read before it is written: the output may be either input.
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }

 private:
  DType dtype_;
  int threads_;
};

// Add and Mul (fp32, fp16, bf16) of X [N, C, H, W] (the output's dims) and one
// value per channel, S [N, C, 1, 1] or [1, C, 1, 1] (or [C, 1, 1]), in either
// input slot: squeeze-excitation's channel scale x * s and its gradient dY * s
// (EfficientNet, MobileNetV3, RegNetY), a per-channel bias. X and Y plain or
// both channels-last (S reads the same either way). The reference's bits.
template <Arith op>
class ChannelBroadcastKernel final : public Kernel {
 public:
  ChannelBroadcastKernel(DType t, int x_slot, std::vector<int64_t> dims, bool per_sample, bool channels_last, int threads)
      : dtype_(t), x_slot_(x_slot), dims_(std::move(dims)), per_sample_(per_sample),
        channels_last_(channels_last), threads_(threads) {}
  // 2-byte types: the scales widened once per run.
  size_t scratch_bytes() const override {
    return dtype_ == DType::kFloat32 ? 0 : static_cast<size_t>(Scales()) * sizeof(float);
  }
  Status Run(KernelContext& ctx) override {
    const int64_t n = dims_[0], c = dims_[1], plane = dims_[2] * dims_[3];
    const void* x = ctx.inputs[static_cast<size_t>(x_slot_)].data;
    const void* s = ctx.inputs[static_cast<size_t>(1 - x_slot_)].data;
    void* y = ctx.outputs[0].data;
    const float* sf = static_cast<const float*>(s);
    if (dtype_ != DType::kFloat32) {
      WidenSpan(dtype_, s, static_cast<float*>(ctx.scratch), Scales());
      sf = static_cast<const float*>(ctx.scratch);
    }
    // Rows: plain, one (n, c) plane times one scale; channels-last, one
    // (n, pixel) row of C channels times the sample's C scales.
    const int64_t rows = channels_last_ ? n * plane : n * c, len = channels_last_ ? c : plane;
    const int t = rows * len >= kParallelMin ? threads_ : 1;
    const DType dt = dtype_;
    const bool last = channels_last_, per_sample = per_sample_;
#pragma omp parallel for num_threads(t) schedule(static) if (t > 1)
    for (int64_t r = 0; r < rows; ++r) {
      const float* scale = last ? sf + (per_sample ? (r / plane) * c : 0) : sf + (per_sample ? r : r % c);
      RowAt<op>(dt, x, r * len, scale, last ? 1 : 0, y, len);
    }
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 ? x_slot_ : -1; }

 private:
  int64_t Scales() const { return (per_sample_ ? dims_[0] : 1) * dims_[1]; }

  DType dtype_;
  int x_slot_;
  std::vector<int64_t> dims_;
  bool per_sample_, channels_last_;
  int threads_;
};

// Add and Mul (fp32, fp16, bf16) of X (the output's dims) and B, a block of
// X's trailing dims repeated over its leading ones: B's dims, aligned to X's
// from the right, are 1 up to some axis and X's from there on. A Linear's
// bias over the last axis ([N, T, D] + [D]), a position table ([N, T, D] +
// [1, T, D]), a scalar (x * 0.125). Either input slot. The reference's bits.
template <Arith op>
class RowBroadcastKernel final : public Kernel {
 public:
  RowBroadcastKernel(DType t, int x_slot, int64_t rows, int64_t len, int threads)
      : dtype_(t), x_slot_(x_slot), rows_(rows), len_(len), threads_(threads) {}
  // 2-byte types: B widened once per run.
  size_t scratch_bytes() const override {
    return dtype_ == DType::kFloat32 ? 0 : static_cast<size_t>(len_) * sizeof(float);
  }
  Status Run(KernelContext& ctx) override {
    const void* x = ctx.inputs[static_cast<size_t>(x_slot_)].data;
    const void* b = ctx.inputs[static_cast<size_t>(1 - x_slot_)].data;
    void* y = ctx.outputs[0].data;
    const float* bf = static_cast<const float*>(b);
    if (dtype_ != DType::kFloat32) {
      WidenSpan(dtype_, b, static_cast<float*>(ctx.scratch), len_);
      bf = static_cast<const float*>(ctx.scratch);
    }
    const DType dt = dtype_;
    const int64_t len = len_;
    if (len == 1) {  // a scalar: one flat range, b[0] broadcast
      ForRange(rows_, threads_, [&](int64_t lo, int64_t hi) { RowAt<op>(dt, x, lo, bf, 0, y, hi - lo); });
      return Status::Ok();
    }
    const int t = rows_ * len >= kParallelMin ? threads_ : 1;
#pragma omp parallel for num_threads(t) schedule(static) if (t > 1)
    for (int64_t r = 0; r < rows_; ++r) RowAt<op>(dt, x, r * len, bf, 1, y, len);
    return Status::Ok();
  }
  int inplace_input(size_t output) const override { return output == 0 ? x_slot_ : -1; }

 private:
  DType dtype_;
  int x_slot_;
  int64_t rows_, len_;
  int threads_;
};

class CastKernel final : public Kernel {
 public:
  // `widened`: the output is fp32 holding `to` values (TensorSpec::holds).
  CastKernel(DType from, DType to, bool widened, int threads)
      : from_(from), to_(to), widened_(widened), threads_(threads) {}
  Status Run(KernelContext& ctx) override {
    const int64_t n = ctx.outputs[0].num_elements();
    if (widened_) RoundToFloat(to_, ctx.inputs[0].as<const float>(), ctx.outputs[0].as<float>(), n, threads_);
    else if (from_ == DType::kFloat32) NarrowFromFloat(to_, ctx.inputs[0].as<const float>(), ctx.outputs[0].data, n, threads_);
    else WidenToFloat(from_, ctx.inputs[0].data, ctx.outputs[0].as<float>(), n, threads_);
    return Status::Ok();
  }

 private:
  DType from_, to_;
  bool widened_;
  int threads_;
};

Status SameTypes(const KernelInit& init, size_t inputs) {
  AMP_RETURN_IF_ERROR(kernels::CheckArity(init, inputs, inputs, 1, 1));
  for (size_t i = 0; i < inputs; ++i)
    if (init.inputs[i].dtype != init.outputs[0].dtype || init.inputs[i].dims != init.outputs[0].dims)
      return init.Error("inputs and output must share dtype and dims");
  return Status::Ok();
}

StatusOr<std::unique_ptr<Kernel>> MakeRelu(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(SameTypes(init, 1));
  const DType t = init.inputs[0].dtype;
  if (!IsTwoByteFloat(t)) return init.Error("the direct Relu takes fp16 and bf16");
  return std::unique_ptr<Kernel>(new ReluKernel(t == DType::kFloat16 ? kHalfBits : kBf16Bits, Threads(init)));
}

StatusOr<std::unique_ptr<Kernel>> MakeReluGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(SameTypes(init, 2));
  return std::unique_ptr<Kernel>(new ReluGradKernel(init.inputs[0].dtype, Threads(init)));
}

template <Arith op>
StatusOr<std::unique_ptr<Kernel>> MakeSameDims(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(SameTypes(init, 2));  // broadcasts: ChannelBroadcastKernel or the reference
  return std::unique_ptr<Kernel>(new SameDimsKernel<op>(init.inputs[0].dtype, Threads(init)));
}

// Whether `s` is one value per channel of the rank-4 `x`: [N or 1, C, 1, 1]
// or [C, 1, 1]; `per_sample` tells [N, C, 1, 1] (N > 1) from the rest.
bool PerChannel(const std::vector<int64_t>& s, const std::vector<int64_t>& x, bool* per_sample) {
  if (x.size() != 4 || (s.size() != 4 && s.size() != 3)) return false;
  std::vector<int64_t> p(4 - s.size(), 1);  // s's dims aligned to x's from the right
  p.insert(p.end(), s.begin(), s.end());
  if (p[1] != x[1] || p[2] != 1 || p[3] != 1 || (p[0] != 1 && p[0] != x[0])) return false;
  *per_sample = p[0] == x[0] && x[0] > 1;
  return true;
}

// Two inputs and one output, all of one dtype (their dims may differ).
Status BinaryOfOneType(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(kernels::CheckArity(init, 2, 2, 1, 1));
  const DType t = init.outputs[0].dtype;
  if (init.inputs[0].dtype != t || init.inputs[1].dtype != t) return init.Error("inputs and output must share a dtype");
  return Status::Ok();
}

template <Arith op>
StatusOr<std::unique_ptr<Kernel>> MakeChannelBroadcast(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(BinaryOfOneType(init));
  const TensorSpec& out = init.outputs[0];
  int x_slot = -1;
  bool per_sample = false;
  for (int k = 0; k < 2 && x_slot < 0; ++k)
    if (init.inputs[static_cast<size_t>(k)].dims == out.dims &&
        PerChannel(init.inputs[static_cast<size_t>(1 - k)].dims, out.dims, &per_sample))
      x_slot = k;
  if (x_slot < 0) return init.Error("not X [N, C, H, W] with one value per channel");
  const bool last = init.inputs[static_cast<size_t>(x_slot)].channels_last;
  if (last != out.channels_last) return init.Error("X and Y in different layouts");
  return std::unique_ptr<Kernel>(
      new ChannelBroadcastKernel<op>(out.dtype, x_slot, out.dims, per_sample, last, Threads(init)));
}

// The length of B's block when `b` is a block of `x`'s trailing dims (see
// RowBroadcastKernel), else 0.
int64_t TrailingBlock(const std::vector<int64_t>& b, const std::vector<int64_t>& x) {
  if (b.size() > x.size()) return 0;
  const size_t lead = x.size() - b.size();
  size_t axis = 0;  // the first axis of x that b spans with x's own dim
  while (axis < b.size() && b[axis] == 1) ++axis;
  int64_t len = 1;
  for (size_t k = axis; k < b.size(); ++k) {
    if (b[k] != x[lead + k]) return 0;
    len *= b[k];
  }
  return len;
}

template <Arith op>
StatusOr<std::unique_ptr<Kernel>> MakeRowBroadcast(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(BinaryOfOneType(init));
  const TensorSpec& out = init.outputs[0];
  for (int k = 0; k < 2; ++k) {
    const TensorSpec& x = init.inputs[static_cast<size_t>(k)];
    if (x.dims != out.dims) continue;
    const int64_t len = TrailingBlock(init.inputs[static_cast<size_t>(1 - k)].dims, out.dims);
    if (len < 1) continue;
    const int64_t n = out.num_elements();
    return std::unique_ptr<Kernel>(
        new RowBroadcastKernel<op>(out.dtype, k, len == 1 ? n : n / len, len, Threads(init)));
  }
  return init.Error("not X and a block of its trailing dims");
}

// The channel-broadcast entry: X (either slot) and Y channels-last together;
// S, one value per channel, reads the same in either layout.
KernelEntry ChannelBroadcastEntry(OpKind op, KernelFactory factory) {
  KernelEntry e = DirectEntry(op, std::move(factory));
  e.channels_last_inputs = 0b11;
  e.channels_last_outputs = 0b1;
  e.channels_last_together = true;
  return e;
}

// Where over elements of U (an unsigned integer of the element's size).
template <class U>
class WhereKernel final : public Kernel {
 public:
  WhereKernel(int64_t period, bool x_one, bool y_one, int threads)
      : period_(period), x_one_(x_one), y_one_(y_one), threads_(threads) {}

  Status Run(KernelContext& ctx) override {
    const auto* c = ctx.inputs[0].as<const uint8_t>();
    const U* x = ctx.inputs[1].as<const U>();
    const U* y = ctx.inputs[2].as<const U>();
    U* out = ctx.outputs[0].as<U>();
    const int64_t period = period_;
    const bool x_one = x_one_, y_one = y_one_;
    ForRange(ctx.outputs[0].num_elements(), threads_, [=](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi;) {  // runs within one period of C
        const int64_t j = i % period, len = std::min(hi - i, period - j);
        const U* xs = x_one ? x : x + i;
        const U* ys = y_one ? y : y + i;
        if (x_one && y_one) Select<true, true>(c + j, xs, ys, out + i, len);
        else if (x_one) Select<true, false>(c + j, xs, ys, out + i, len);
        else if (y_one) Select<false, true>(c + j, xs, ys, out + i, len);
        else Select<false, false>(c + j, xs, ys, out + i, len);
        i += len;
      }
    });
    return Status::Ok();
  }

 private:
  // Both sides loaded unconditionally, then selected: the loop vectorizes.
  template <bool XOne, bool YOne>
  static void Select(const uint8_t* __restrict c, const U* __restrict x, const U* __restrict y, U* __restrict out,
                     int64_t n) {
    const U x0 = x[0], y0 = y[0];
    for (int64_t k = 0; k < n; ++k) {
      const U a = XOne ? x0 : x[k], b = YOne ? y0 : y[k];
      out[k] = c[k] ? a : b;
    }
  }

  int64_t period_;
  bool x_one_, y_one_;
  int threads_;
};

StatusOr<std::unique_ptr<Kernel>> MakeWhere(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(kernels::CheckArity(init, 3, 3, 1, 1));
  const TensorSpec &c = init.inputs[0], &x = init.inputs[1], &y = init.inputs[2], &out = init.outputs[0];
  if (c.dtype != DType::kBool || x.dtype != out.dtype || y.dtype != out.dtype)
    return init.Error("expects a bool condition and X, Y of the output's dtype");
  const auto full = [&](const TensorSpec& s) { return s.dims == out.dims; };
  const auto one = [&](const TensorSpec& s) { return !full(s) && s.num_elements() == 1 && s.dims.size() <= out.dims.size(); };
  if (!(full(x) || one(x)) || !(full(y) || one(y))) return init.Error("X and Y must have the output's dims or one element");
  const int64_t period = full(c) ? out.num_elements() : TrailingBlock(c.dims, out.dims);
  if (period < 1 && out.num_elements() > 0) return init.Error("C must have the output's dims or a block of its trailing dims");
  // The operands of the output's dims share its layout; a block of C reads plain positions.
  for (const TensorSpec* s : {&c, &x, &y})
    if (full(*s) && s->channels_last != out.channels_last) return init.Error("operands in different layouts");
  if (!full(c) && out.channels_last) return init.Error("a block condition beside a channels-last output");
  const bool x_one = one(x), y_one = one(y);
  const int threads = Threads(init);
  std::unique_ptr<Kernel> kernel;
  AMP_RETURN_IF_ERROR(DispatchBySize(ir::DTypeSize(out.dtype), [&](auto b) {
    using U = typename decltype(b)::type;
    kernel = std::make_unique<WhereKernel<U>>(std::max<int64_t>(period, 1), x_one, y_one, threads);
    return Status::Ok();
  }));
  return kernel;
}

StatusOr<std::unique_ptr<Kernel>> MakeCast(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(kernels::CheckArity(init, 1, 1, 1, 1));
  const DType from = init.inputs[0].dtype;
  const TensorSpec& out = init.outputs[0];
  if (init.inputs[0].dims != out.dims) return init.Error("output dims differ from the input's");
  // fp32 -> fp32 holding fp16/bf16: rounds, as narrowing then widening would.
  const bool widened = from == DType::kFloat32 && out.dtype == DType::kFloat32 && IsTwoByteFloat(out.holds);
  const DType to = widened ? out.holds : out.dtype;
  const bool narrow = from == DType::kFloat32 && IsTwoByteFloat(to), widen = IsTwoByteFloat(from) && to == DType::kFloat32;
  if (!narrow && !widen) return init.Error("the direct Cast converts between fp32 and fp16/bf16 only");
  return std::unique_ptr<Kernel>(new CastKernel(from, to, widened, Threads(init)));
}

}  // namespace

void RegisterDirectElementwise(Registry& r) {
  r.Add(ElementwiseChannelsLast(DirectEntry(OpKind::kRelu, MakeRelu, {DType::kFloat16, DType::kBFloat16}), 0b1, 0b1));
  r.Add(ElementwiseChannelsLast(DirectEntry(OpKind::kReluGrad, MakeReluGrad), 0b11, 0b1));
  // A flat conversion, so channels-last in and out alike: O1's Casts between
  // fp32 elementwise ops and bf16 convolutions keep the activations
  // channels-last on both sides (ResNet-18 otherwise had 64 of its 112
  // channels-last values plain at O1, each a reorder in the next convolution).
  KernelEntry cast = ElementwiseChannelsLast(DirectEntry(OpKind::kCast, MakeCast), 0b1, 0b1);
  cast.takes_widened = true;
  r.Add(std::move(cast));
  r.Add(ElementwiseChannelsLast(DirectEntry(OpKind::kAdd, MakeSameDims<Arith::kAdd>), 0b11, 0b1));
  r.Add(ElementwiseChannelsLast(DirectEntry(OpKind::kMul, MakeSameDims<Arith::kMul>), 0b11, 0b1));
  r.Add(ChannelBroadcastEntry(OpKind::kAdd, MakeChannelBroadcast<Arith::kAdd>));
  r.Add(ChannelBroadcastEntry(OpKind::kMul, MakeChannelBroadcast<Arith::kMul>));
  r.Add(DirectEntry(OpKind::kAdd, MakeRowBroadcast<Arith::kAdd>));
  r.Add(DirectEntry(OpKind::kMul, MakeRowBroadcast<Arith::kMul>));
  // Any dtype; the factory keeps the operands of the output's dims in its layout.
  KernelEntry where = DirectEntry(OpKind::kWhere, MakeWhere, {});
  where.channels_last_inputs = 0b111;
  where.channels_last_outputs = 0b1;
  r.Add(std::move(where));
}

}  // namespace amptrain::kernels::cpu::direct
