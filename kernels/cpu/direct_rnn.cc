// Direct kernels of the recurrent layers RNN, GRU and LSTM and of their
// backward ops (ONNX semantics, attributes in ir/rnn.h; the equations are the
// reference's, kernels/cpu/rnn.cc), fp32, fp16 and bf16, computed as
// PyTorch's CPU kernels compute them:
//   forward, per direction: the input part of every step in one product
//     (X W^T + Wb + Rb over all seq * batch rows of X), then per step one
//     product h R^T for all batch rows (two for GRU with linear_before_reset
//     0, whose candidate reads r * h) and the gates row by row in fp32:
//     sigmoid and tanh in double, rounded once (SigmoidSpan, TanhSpan);
//   backward: the steps' gates and states (rows in X's order) from the
//     forward's reserve (ir/rnn.h: training graphs add it), or from running
//     the forward again where there is none, then back through time with one
//     product per step for the state's gradient (two for GRU with
//     linear_before_reset 0), and dX, dW and dR in one product each over all
//     steps; the bias and peephole gradients are column sums in double.
// Products: each step's are oneDNN matmuls made once with R packed once per
// run (Product); those over all steps oneDNN's sgemm; all on the session's
// OpenMP threads. The gates of the batch rows split over the kernel's
// threads only where there are many (an OpenMP region per step costs a
// wake-up under OMP_WAIT_POLICY=passive).
// Types: fp16, and bf16 where oneDNN's bf16 is not faster than fp32, are
// widened into scratch once per run and the outputs rounded once; bf16 on a
// CPU with AVX512_BF16 or AMX runs bf16 products with fp32 accumulation (the
// fp32 states and gate gradients rounded to bf16 as operands, as oneDNN's and
// PyTorch autocast's bf16 kernels do), the gates and states in fp32.
// Sequence lengths: all rows step together; a row whose sequence has ended
// keeps its state (and its gradient passes through unchanged).
// Not the reference's bits (the reference computes in double): within the
// tolerances of tests/kernels/direct_rnn_test.cc. The reference kernels stay
// for fp64 and as the tests' oracle.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/cpu_info.h"
#include "kernels/cpu/direct_kernels.h"
#include "kernels/cpu/direct_product.h"
#include "kernels/cpu/rnn_geometry.h"

namespace amptrain::kernels::cpu::direct {

namespace {

using ir::OpKind;
using ir::RnnActivation;
using ir::RnnConfig;

// v := f(v) over n values.
void Activate(RnnActivation f, float* v, int64_t n) {
  switch (f) {
    case RnnActivation::kSigmoid: return SigmoidSpan(v, v, n);
    case RnnActivation::kTanh: return TanhSpan(v, v, n);
    case RnnActivation::kRelu:
      for (int64_t i = 0; i < n; ++i) v[i] = v[i] > 0.0f ? v[i] : 0.0f;  // NaN -> 0, as the reference
      return;
  }
}

// d[i] = f'(x) where f(x) = y[i], over n values.
void DerivativeSpan(RnnActivation f, const float* y, float* d, int64_t n) {
  switch (f) {
    case RnnActivation::kSigmoid:
      for (int64_t i = 0; i < n; ++i) d[i] = y[i] * (1.0f - y[i]);
      return;
    case RnnActivation::kTanh:
      for (int64_t i = 0; i < n; ++i) d[i] = 1.0f - y[i] * y[i];
      return;
    case RnnActivation::kRelu:
      for (int64_t i = 0; i < n; ++i) d[i] = y[i] > 0.0f ? 1.0f : 0.0f;
      return;
  }
}

// Pre-activations clamped to [-clip, clip] (clip > 0); pass (when given)
// gets 1 where a value was inside, 0 where it was clamped.
void Clip(float clip, float* v, float* pass, int64_t n) {
  if (clip <= 0) {
    if (pass) std::fill(pass, pass + n, 1.0f);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const bool out = std::fabs(v[i]) > clip;
    if (pass) pass[i] = out ? 0.0f : 1.0f;
    if (out) v[i] = v[i] > 0 ? clip : -clip;
  }
}

// Hands out 64-byte aligned float arrays of one scratch block; with a null
// base it only counts (the kernel's scratch_bytes at creation).
class Carver {
 public:
  explicit Carver(void* base) : base_(static_cast<float*>(base)) {}
  float* Take(int64_t n) {
    float* p = base_ ? base_ + used_ : nullptr;
    used_ += (n + 15) / 16 * 16;
    return p;
  }
  size_t bytes() const { return static_cast<size_t>(used_) * sizeof(float); }

 private:
  float* base_;
  int64_t used_ = 0;
};

class DirectRnn final : public Kernel {
 public:
  DirectRnn(RnnConfig c, RnnGeometry g, DType t, bool backward, bool reserve, int threads)
      : c_(std::move(c)), g_(g), dtype_(t), backward_(backward), reserve_(reserve), threads_(threads) {
    layout_ = ir::ReserveLayout(c_, Rows(), H());
    MakeProducts(dtype_ == DType::kBFloat16 && cpu::Cpu().bf16_faster());
    if (native_ && !ProductsOk()) MakeProducts(false);  // a bf16 product oneDNN lacks: the widened path
    Carver count(nullptr);
    Carve(count);
    scratch_bytes_ = count.bytes() + static_cast<size_t>(std::max<int64_t>(G(), 3 * H())) * sizeof(double) + 64;
  }

  size_t scratch_bytes() const override { return scratch_bytes_; }

 private:
  // The products (Product): those of every step always; with `native` (bf16
  // on a CPU where oneDNN's bf16 is faster than fp32) bf16 ones, and those
  // over all steps too (oneDNN has no bf16 sgemm).
  void MakeProducts(bool native) {
    native_ = native;
    const DType t = native ? DType::kBFloat16 : DType::kFloat32;
    const int64_t hs = H(), gs = G(), b = g_.batch, rows = Rows(), in = g_.input;
    const bool candidate_apart = Gru() && !c_.linear_before_reset;  // its recurrent part reads r * h
    auto step = [&](int64_t m, int64_t n, int64_t k, std::array<int64_t, 2> a, std::array<int64_t, 2> bs,
                    int64_t ldc, bool accumulate) { return Product(m, n, k, a, bs, ldc, t, true, accumulate); };
    auto all = [&](int64_t m, int64_t n, int64_t k, std::array<int64_t, 2> a, std::array<int64_t, 2> bs,
                   int64_t ldc, bool accumulate) { return Product(m, n, k, a, bs, ldc, t, false, accumulate); };
    fwd_rec_ = fwd_cand_ = fwd_x_ = bwd_dh_ = bwd_drh_ = bwd_dx_[0] = bwd_dx_[1] = bwd_dw_ = bwd_dr_ = bwd_dr_n_ = Product();
    if (!backward_ || !reserve_) {  // the forward: h R^T (R read transposed), X W^T
      fwd_rec_ = step(b, candidate_apart ? 2 * hs : gs, hs, {hs, 1}, {1, hs}, gs, false);
      if (candidate_apart) fwd_cand_ = step(b, hs, hs, {hs, 1}, {1, hs}, gs, false);
      if (native) fwd_x_ = all(rows, gs, in, {in, 1}, {1, in}, gs, false);
    }
    if (!backward_) return;
    if (candidate_apart) {  // the state's gradient: da_n Rh, then da_zr R_zr onto it
      bwd_drh_ = step(b, hs, hs, {gs, 1}, {hs, 1}, hs, false);
      bwd_dh_ = step(b, hs, 2 * hs, {gs, 1}, {hs, 1}, hs, true);
    } else {
      bwd_dh_ = step(b, hs, gs, {gs, 1}, {hs, 1}, hs, Gru());  // GRU: onto dh z
    }
    if (!native) return;
    bwd_dx_[0] = all(rows, in, gs, {gs, 1}, {in, 1}, in, false);  // DA W; the second direction adds
    bwd_dx_[1] = all(rows, in, gs, {gs, 1}, {in, 1}, in, true);
    bwd_dw_ = all(gs, in, rows, {1, gs}, {in, 1}, in, false);  // DA^T X
    bwd_dr_ = all(candidate_apart ? 2 * hs : gs, hs, rows, {1, gs}, {hs, 1}, hs, false);  // DA^T H
    if (candidate_apart) bwd_dr_n_ = all(hs, hs, rows, {1, gs}, {hs, 1}, hs, false);  // DA_n^T (r * h)
  }
  bool ProductsOk() const {
    for (const Product* p : {&fwd_rec_, &fwd_cand_, &fwd_x_, &bwd_dh_, &bwd_drh_, &bwd_dx_[0], &bwd_dx_[1], &bwd_dw_,
                             &bwd_dr_, &bwd_dr_n_})
      if (!p->ok()) return false;
    return true;
  }

 public:
  Status Run(KernelContext& ctx) override {
    Carver carve(ctx.scratch);
    Carve(carve);
    sums_ = reinterpret_cast<double*>(static_cast<std::byte*>(ctx.scratch) + (carve.bytes() + 63) / 64 * 64);
    AMP_RETURN_IF_ERROR(ReadSequenceLens(ctx, g_, lens_));
    std::fill(ones_, ones_ + G(), 1.0f);
    std::fill(zeros_, zeros_ + 3 * H(), 0.0f);
    Inputs(ctx);
    if (backward_) {
      AMP_RETURN_IF_ERROR(
          Backward(reserve_ ? static_cast<const float*>(ctx.inputs[c_.reserve_input()].data) : nullptr));
    } else {
      std::fill(out_[0], out_[0] + Size(0), 0.0f);  // Y is 0 past a sequence's end
      for (int64_t d = 0; d < g_.dirs; ++d) {
        if (reserve_) PointRecords(static_cast<float*>(ctx.outputs[c_.reserve_output()].data) + d * layout_.per_direction);
        AMP_RETURN_IF_ERROR(Forward(d, reserve_));
      }
    }
    const size_t outputs = backward_ ? out_.size() : c_.reserve_output();
    for (size_t o = 0; o < ctx.outputs.size() && o < outputs; ++o) {
      ir::TensorView& v = ctx.outputs[o];
      if (!v.data) continue;
      if (dtype_ == DType::kFloat32) std::memcpy(v.data, out_[o], static_cast<size_t>(Size(o)) * sizeof(float));
      else NarrowSpan(dtype_, out_[o], v.data, Size(o));
    }
    return Status::Ok();
  }

 private:
  bool Lstm() const { return c_.cell == OpKind::kLSTM; }
  bool Gru() const { return c_.cell == OpKind::kGRU; }
  int64_t H() const { return g_.hidden; }
  int64_t G() const { return g_.gates * g_.hidden; }
  int64_t Rows() const { return g_.seq * g_.batch; }
  int64_t StateSize() const { return g_.dirs * g_.batch * H(); }
  bool Reverse(int64_t d) const { return c_.reverse || d == 1; }
  // The time step of row b at step s (s < lens_[b]).
  int64_t Time(int64_t d, int64_t b, int64_t s) const { return Reverse(d) ? lens_[b] - 1 - s : s; }

  // Elements of output o: forward Y, Y_h, Y_c; backward dX, dW, dR, dB,
  // dinitial_h, dinitial_c, dP.
  int64_t Size(size_t o) const {
    const int64_t dg = g_.dirs * G();
    if (!backward_) return o == 0 ? g_.seq * StateSize() : StateSize();
    const int64_t sizes[] = {Rows() * g_.input, dg * g_.input, dg * H(), 2 * dg, StateSize(), StateSize(),
                             g_.dirs * 3 * H()};
    return sizes[o];
  }

  // The scratch arrays, in one fixed order (counted at creation).
  void Carve(Carver& s) {
    const int64_t rows = Rows(), bh = g_.batch * H(), bg = g_.batch * G(), rh = rows * H(), rg = rows * G();
    const bool wide = dtype_ != DType::kFloat32;
    const int64_t in_sizes[] = {rows * g_.input, g_.dirs * G() * g_.input, g_.dirs * G() * H(), 2 * g_.dirs * G(),
                                StateSize(), StateSize(), g_.dirs * 3 * H(), g_.seq * StateSize(), StateSize(),
                                StateSize()};
    for (size_t i = 0; i < wide_.size(); ++i) wide_[i] = wide ? s.Take(in_sizes[i]) : nullptr;
    const size_t outputs = backward_ ? 7 : 3;
    out_.assign(outputs, nullptr);
    packs_.clear();
    for (size_t o = 0; o < outputs; ++o) out_[o] = s.Take(Size(o));
    for (Product* m : {&fwd_rec_, &fwd_cand_, &fwd_x_, &bwd_dh_, &bwd_drh_, &bwd_dx_[0], &bwd_dx_[1], &bwd_dw_,
                       &bwd_dr_, &bwd_dr_n_})
      packs_.push_back(s.Take(static_cast<int64_t>(m->scratch_bytes() / sizeof(float))));
    // The native path's bf16 copies of the products' fp32 operands (two per float).
    auto half = [&](int64_t n) { return native_ ? reinterpret_cast<uint16_t*>(s.Take((n + 1) / 2)) : nullptr; };
    h16_ = half(bh);
    rh16_ = half(bh);
    if (backward_) {
      da16_step_ = half(bg);
      da16_ = half(rg);
      dar16_ = Gru() && c_.linear_before_reset ? half(rg) : nullptr;
      hprev16_ = half(rh);
      rh16_all_ = Gru() && !c_.linear_before_reset ? half(rh) : nullptr;
    }
    xw_ = reserve_ || backward_ ? nullptr : s.Take(rg);  // else the records' gates block (PointRecords)
    bias_ = s.Take(G());
    ones_ = s.Take(G());
    zeros_ = s.Take(3 * H());
    tmp_ = s.Take(bg);
    rh_step_ = s.Take(bh);
    h_ = s.Take(bh);
    c_state_ = s.Take(bh);
    if (!backward_) return;
    if (!reserve_) {  // the forward again, its steps kept here (one direction at a time)
      float* records = s.Take(layout_.per_direction);
      if (records) PointRecords(records);
    }
    da_ = s.Take(rg);
    dar_ = Gru() && c_.linear_before_reset ? s.Take(rg) : nullptr;
    da_step_ = s.Take(bg);
    dar_step_ = s.Take(bg);
    dh_ = s.Take(bh);
    dc_ = s.Take(bh);
    dhp_ = s.Take(bh);
    dcp_ = s.Take(bh);
    drh_ = s.Take(bh);
  }

  // The step records of one direction (gates, states, masks) at `base`, in
  // the reserve's layout (ir/rnn.h). The gates block first takes the input
  // part of every step (Forward), then the activated gates.
  void PointRecords(float* base) {
    auto at = [&](int64_t offset) { return offset >= 0 ? base + offset : nullptr; };
    xw_ = base + layout_.gates;
    hprev_ = at(layout_.hprev);
    cprev_ = at(layout_.cprev);
    cnew_ = at(layout_.cnew);
    q_ = at(layout_.q);
    rh_ = at(layout_.rh);
    pass_ = at(layout_.pass);
  }

  // The inputs as fp32 (the tensors themselves, or widened into scratch).
  void Inputs(const KernelContext& ctx) {
    const size_t n = c_.forward_inputs();
    const size_t slots[] = {RnnConfig::kX, RnnConfig::kW,  RnnConfig::kR, RnnConfig::kB,  RnnConfig::kInitialH,
                            RnnConfig::kInitialC, RnnConfig::kP, n, n + 1, n + 2};
    for (size_t i = 0; i < in_.size(); ++i) {
      const size_t slot = slots[i];
      const bool lstm_only = i == 5 || i == 6 || i == 9;  // initial_c, P, dY_c
      const bool backward_only = i >= 7;                  // dY, dY_h, dY_c
      const bool present = slot < ctx.inputs.size() && ctx.inputs[slot].data && (Lstm() || !lstm_only) &&
                           (backward_ || !backward_only);
      in_[i] = nullptr;
      if (i < raw_.size()) raw_[i] = present ? ctx.inputs[slot].data : nullptr;
      if (!present || (native_ && i < raw_.size())) continue;  // the native path reads X, W, R as they are
      const ir::TensorView& v = ctx.inputs[slot];
      if (dtype_ == DType::kFloat32) {
        in_[i] = static_cast<const float*>(v.data);
      } else {
        WidenSpan(dtype_, v.data, wide_[i], v.num_elements());
        in_[i] = wide_[i];
      }
    }
  }
  // X, W and R as they are (bf16 on the native path).
  const uint16_t* Raw16(size_t i, int64_t offset) const { return static_cast<const uint16_t*>(raw_[i]) + offset; }
  const float* X() const { return in_[0]; }
  const float* W(int64_t d) const { return in_[1] + g_.w(d, 0); }
  // Direction d's R from gate row `row` on, as the products read it (bf16 as
  // given on the native path, else fp32).
  const void* RFrom(int64_t d, int64_t row) const {
    return native_ ? static_cast<const void*>(Raw16(2, g_.r(d, row))) : in_[2] + g_.r(d, row);
  }
  const float* B() const { return in_[3]; }
  const float* P(int64_t d) const { return in_[6] ? in_[6] + d * 3 * H() : nullptr; }
  // GRU with linear_before_reset: the candidate's Rb goes inside r * (...).
  bool RbInside(int64_t k) const { return Gru() && c_.linear_before_reset && k >= 2 * H(); }

  template <class F>
  void ForRows(F&& f) const {
    const int64_t rows = g_.batch;
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && rows * G() >= (int64_t{1} << 18))
    for (int64_t b = 0; b < rows; ++b) f(b);
  }

  // Direction d forward over all steps. With `record`, keeps per row of X:
  // the activated gates (in xw_), the state before the step (hprev_), the
  // cell states (cprev_, cnew_), GRU's q or r * h, and the clip masks.
  Status Forward(int64_t d, bool record) {
    const int64_t hs = H(), gs = G(), batch = g_.batch;
    const auto& act = c_.activations[d];
    // Input part of every step, with the biases.
    if (native_) {
      AMP_RETURN_IF_ERROR(fwd_x_.SetB(Raw16(1, g_.w(d, 0)), packs_[2]));
      AMP_RETURN_IF_ERROR(fwd_x_.Run(raw_[0], xw_));
    } else {
      AMP_RETURN_IF_ERROR(Gemm('N', 'T', Rows(), gs, g_.input, X(), g_.input, W(d), g_.input, 0.0f, xw_, gs));
    }
    for (int64_t k = 0; k < gs; ++k)
      bias_[k] = B() ? B()[g_.wb(d, k)] + (RbInside(k) ? 0.0f : B()[g_.rb(d, k)]) : 0.0f;
    const float* rb_inside = B() && Gru() && c_.linear_before_reset ? B() + g_.rb(d, 2 * hs) : nullptr;
#pragma omp parallel for num_threads(threads_) schedule(static) if (threads_ > 1 && Rows() * gs >= 65536)
    for (int64_t row = 0; row < Rows(); ++row) {
      float* x = xw_ + row * gs;
      for (int64_t k = 0; k < gs; ++k) x[k] += bias_[k];
    }
    for (int64_t b = 0; b < batch; ++b) {
      const float* h0 = in_[4] ? in_[4] + g_.state(d, b) : nullptr;
      const float* c0 = in_[5] ? in_[5] + g_.state(d, b) : nullptr;
      for (int64_t j = 0; j < hs; ++j) {
        h_[b * hs + j] = h0 ? h0[j] : 0.0f;
        c_state_[b * hs + j] = c0 ? c0[j] : 0.0f;
      }
    }
    const bool ended_early = std::any_of(lens_.begin(), lens_.end(), [&](int64_t l) { return l < g_.seq; });
    if (record && ended_early) {  // rows past a sequence's end meet zero gradients in the GEMMs over all steps
      const size_t bytes = static_cast<size_t>(Rows() * hs) * sizeof(float);
      for (float* m : {hprev_, cnew_, cprev_, rh_})
        if (m) std::memset(m, 0, bytes);
    }
    const float* p = P(d);
    float* y = backward_ ? nullptr : out_[0];
    AMP_RETURN_IF_ERROR(fwd_rec_.SetB(RFrom(d, 0), packs_[0]));
    if (Gru() && !c_.linear_before_reset) AMP_RETURN_IF_ERROR(fwd_cand_.SetB(RFrom(d, 2 * hs), packs_[1]));
    for (int64_t s = 0; s < g_.seq; ++s) {
      // Recurrent part: all rows (a finished row's result is not used).
      AMP_RETURN_IF_ERROR(fwd_rec_.Run(Operand(h_, h16_, batch * hs), tmp_));
      auto active = [&](int64_t b) { return s < lens_[b]; };
      ForRows([&](int64_t b) {
        if (!active(b)) return;
        const int64_t row = g_.row(Time(d, b, s), b);
        float* a = tmp_ + b * gs;
        const float* xw = xw_ + row * gs;
        float* h = h_ + b * hs;
        float* pass = record && pass_ ? pass_ + row * gs : nullptr;
        if (record) std::memcpy(hprev_ + row * hs, h, static_cast<size_t>(hs) * sizeof(float));
        if (c_.cell == OpKind::kRNN) {
          for (int64_t k = 0; k < gs; ++k) a[k] += xw[k];
          Clip(c_.clip, a, pass, gs);
          Activate(act[0], a, gs);
          std::memcpy(h, a, static_cast<size_t>(hs) * sizeof(float));
        } else if (Lstm()) {
          float* c = c_state_ + b * hs;
          float *i = a, *o = a + hs, *f = a + 2 * hs, *g = a + 3 * hs;
          for (int64_t k = 0; k < gs; ++k) a[k] += xw[k];
          if (p)
            for (int64_t j = 0; j < hs; ++j) {
              i[j] += p[j] * c[j];
              f[j] += p[2 * hs + j] * c[j];
            }
          Clip(c_.clip, i, pass, hs);
          Clip(c_.clip, f, pass ? pass + 2 * hs : nullptr, hs);
          Clip(c_.clip, g, pass ? pass + 3 * hs : nullptr, hs);
          Activate(act[0], i, hs);
          Activate(act[0], f, hs);
          Activate(act[1], g, hs);
          if (record) std::memcpy(cprev_ + row * hs, c, static_cast<size_t>(hs) * sizeof(float));
          for (int64_t j = 0; j < hs; ++j) c[j] = f[j] * c[j] + i[j] * g[j];
          if (p)
            for (int64_t j = 0; j < hs; ++j) o[j] += p[hs + j] * c[j];
          Clip(c_.clip, o, pass ? pass + hs : nullptr, hs);
          Activate(act[0], o, hs);
          std::memcpy(h, c, static_cast<size_t>(hs) * sizeof(float));
          Activate(act[2], h, hs);
          for (int64_t j = 0; j < hs; ++j) h[j] *= o[j];
          if (record) std::memcpy(cnew_ + row * hs, c, static_cast<size_t>(hs) * sizeof(float));
        } else {  // GRU: z, r
          for (int64_t k = 0; k < 2 * hs; ++k) a[k] += xw[k];
          Clip(c_.clip, a, pass, 2 * hs);
          Activate(act[0], a, 2 * hs);
          if (!c_.linear_before_reset) {
            float* rh = rh_step_ + b * hs;
            for (int64_t j = 0; j < hs; ++j) rh[j] = a[hs + j] * h[j];
            if (record) std::memcpy(rh_ + row * hs, rh, static_cast<size_t>(hs) * sizeof(float));
          }
        }
      });
      if (Gru()) {
        if (!c_.linear_before_reset)  // the candidate's recurrent part reads r * h
          AMP_RETURN_IF_ERROR(fwd_cand_.Run(Operand(rh_step_, rh16_, batch * hs), tmp_ + 2 * hs));
        ForRows([&](int64_t b) {
          if (!active(b)) return;
          const int64_t row = g_.row(Time(d, b, s), b);
          float* a = tmp_ + b * gs;
          const float* xw = xw_ + row * gs;
          float *z = a, *r = a + hs, *n = a + 2 * hs, *h = h_ + b * hs;
          if (c_.linear_before_reset) {
            float* q = record ? q_ + row * hs : nullptr;
            for (int64_t j = 0; j < hs; ++j) {
              const float qj = n[j] + (rb_inside ? rb_inside[j] : 0.0f);
              if (q) q[j] = qj;
              n[j] = xw[2 * hs + j] + r[j] * qj;
            }
          } else {
            for (int64_t j = 0; j < hs; ++j) n[j] += xw[2 * hs + j];
          }
          Clip(c_.clip, n, record && pass_ ? pass_ + row * gs + 2 * hs : nullptr, hs);
          Activate(act[1], n, hs);
          for (int64_t j = 0; j < hs; ++j) h[j] = (1.0f - z[j]) * n[j] + z[j] * h[j];
        });
      }
      ForRows([&](int64_t b) {
        if (!active(b)) return;
        const int64_t t = Time(d, b, s), row = g_.row(t, b);
        if (record) std::memcpy(xw_ + row * gs, tmp_ + b * gs, static_cast<size_t>(gs) * sizeof(float));
        if (y) std::memcpy(y + g_.y(t, d, b), h_ + b * hs, static_cast<size_t>(hs) * sizeof(float));
      });
    }
    if (!backward_) {
      for (int64_t b = 0; b < batch; ++b) {
        std::memcpy(out_[1] + g_.state(d, b), h_ + b * hs, static_cast<size_t>(hs) * sizeof(float));
        if (Lstm()) std::memcpy(out_[2] + g_.state(d, b), c_state_ + b * hs, static_cast<size_t>(hs) * sizeof(float));
      }
    }
    return Status::Ok();
  }

  // Column sums of m ([rows, ld], the first `cols` columns) in double, into out.
  void ColumnSums(const float* m, int64_t cols, int64_t ld, float* out, const float* times = nullptr,
                  int64_t times_ld = 0) const {
    std::fill(sums_, sums_ + cols, 0.0);
    for (int64_t row = 0; row < Rows(); ++row) {
      const float* v = m + row * ld;
      if (times) {
        const float* u = times + row * times_ld;
        for (int64_t k = 0; k < cols; ++k) sums_[k] += static_cast<double>(v[k]) * static_cast<double>(u[k]);
      } else {
        for (int64_t k = 0; k < cols; ++k) sums_[k] += static_cast<double>(v[k]);
      }
    }
    for (int64_t k = 0; k < cols; ++k) out[k] = static_cast<float>(sums_[k]);
  }

  // `reserve`: the forward's records of every direction, or null (the
  // forward runs again here, one direction at a time).
  Status Backward(const float* reserve) {
    const int64_t hs = H(), gs = G(), batch = g_.batch, rows = Rows();
    float *dx = out_[0], *dw = out_[1], *dr = out_[2], *db = out_[3], *dh0 = out_[4], *dc0 = out_[5], *dp = out_[6];
    const float *dy = in_[7], *dyh = in_[8], *dyc = in_[9];
    std::fill(dp, dp + Size(6), 0.0f);
    std::fill(dc0, dc0 + Size(5), 0.0f);
    for (int64_t d = 0; d < g_.dirs; ++d) {
      const auto& act = c_.activations[d];
      if (reserve) PointRecords(const_cast<float*>(reserve) + d * layout_.per_direction);  // read only
      else AMP_RETURN_IF_ERROR(Forward(d, true));
      std::fill(da_, da_ + rows * gs, 0.0f);
      if (dar_) std::fill(dar_, dar_ + rows * gs, 0.0f);
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t j = 0; j < hs; ++j) {
          dh_[b * hs + j] = dyh ? dyh[g_.state(d, b) + j] : 0.0f;
          dc_[b * hs + j] = dyc ? dyc[g_.state(d, b) + j] : 0.0f;
        }
      const float* p = P(d);
      AMP_RETURN_IF_ERROR(bwd_dh_.SetB(RFrom(d, 0), packs_[3]));
      if (Gru() && !c_.linear_before_reset) AMP_RETURN_IF_ERROR(bwd_drh_.SetB(RFrom(d, 2 * hs), packs_[4]));
      for (int64_t s = g_.seq - 1; s >= 0; --s) {
        auto active = [&](int64_t b) { return s < lens_[b]; };
        ForRows([&](int64_t b) {
          float* da = da_step_ + b * gs;
          float* dar = dar_step_ + b * gs;
          if (!active(b)) {
            std::fill(da, da + gs, 0.0f);
            std::fill(dar, dar + gs, 0.0f);
            return;
          }
          const int64_t t = Time(d, b, s), row = g_.row(t, b);
          const float* gate = xw_ + row * gs;
          const float* pass = pass_ ? pass_ + row * gs : nullptr;
          const float* hp = hprev_ + row * hs;
          float* dh = dh_ + b * hs;
          if (dy)
            for (int64_t j = 0; j < hs; ++j) dh[j] += dy[g_.y(t, d, b) + j];
          // Derivatives first (one span per gate: loops without calls that
          // vectorize), then the gradients, masked where clip clamped.
          const float* keep = pass ? pass : ones_;
          if (c_.cell == OpKind::kRNN) {
            DerivativeSpan(act[0], gate, da, hs);
            for (int64_t j = 0; j < hs; ++j) da[j] *= dh[j] * keep[j];
          } else if (Lstm()) {
            const float *i = gate, *o = gate + hs, *f = gate + 2 * hs, *g = gate + 3 * hs;
            const float *c = cnew_ + row * hs, *cp = cprev_ + row * hs, *pp = p ? p : zeros_;
            float* tc = dhp_ + b * hs;  // h(c'), in a row the product below overwrites
            std::memcpy(tc, c, static_cast<size_t>(hs) * sizeof(float));
            Activate(act[2], tc, hs);
            float* dc = dc_ + b * hs;
            float* dcp = dcp_ + b * hs;  // first h'(c'), then the previous cell state's gradient
            DerivativeSpan(act[0], i, da, hs);
            DerivativeSpan(act[0], o, da + hs, hs);
            DerivativeSpan(act[0], f, da + 2 * hs, hs);
            DerivativeSpan(act[1], g, da + 3 * hs, hs);
            DerivativeSpan(act[2], tc, dcp, hs);
            for (int64_t j = 0; j < hs; ++j) {
              const float dao = dh[j] * tc[j] * da[hs + j] * keep[hs + j];
              const float dcj = dc[j] + dh[j] * o[j] * dcp[j] + (p ? dao * pp[hs + j] : 0.0f);
              const float dai = dcj * g[j] * da[j] * keep[j];
              const float daf = dcj * cp[j] * da[2 * hs + j] * keep[2 * hs + j];
              da[j] = dai;
              da[hs + j] = dao;
              da[2 * hs + j] = daf;
              da[3 * hs + j] = dcj * i[j] * da[3 * hs + j] * keep[3 * hs + j];
              dcp[j] = dcj * f[j] + (p ? dai * pp[j] + daf * pp[2 * hs + j] : 0.0f);
            }
          } else {  // GRU
            const float *z = gate, *r = gate + hs, *n = gate + 2 * hs;
            float* dhp = dhp_ + b * hs;
            DerivativeSpan(act[0], z, da, hs);
            DerivativeSpan(act[1], n, da + 2 * hs, hs);
            for (int64_t j = 0; j < hs; ++j) {
              dhp[j] = dh[j] * z[j];
              da[2 * hs + j] *= dh[j] * (1.0f - z[j]) * keep[2 * hs + j];
              da[j] *= dh[j] * (hp[j] - n[j]) * keep[j];
            }
            if (c_.linear_before_reset) {
              const float* q = q_ + row * hs;
              DerivativeSpan(act[0], r, da + hs, hs);
              for (int64_t j = 0; j < hs; ++j) {
                da[hs + j] *= da[2 * hs + j] * q[j] * keep[hs + j];
                dar[j] = da[j];
                dar[hs + j] = da[hs + j];
                dar[2 * hs + j] = da[2 * hs + j] * r[j];
              }
            }
          }
        });
        // The state's gradient through R.
        const int64_t bg = batch * gs;
        if (c_.cell == OpKind::kRNN || Lstm()) {
          AMP_RETURN_IF_ERROR(bwd_dh_.Run(Operand(da_step_, da16_step_, bg), dhp_));
        } else if (c_.linear_before_reset) {
          AMP_RETURN_IF_ERROR(bwd_dh_.Run(Operand(dar_step_, da16_step_, bg), dhp_));
        } else {
          AMP_RETURN_IF_ERROR(bwd_drh_.Run(Offset(Operand(da_step_, da16_step_, bg), 2 * hs), drh_));
          ForRows([&](int64_t b) {
            if (!active(b)) return;
            const int64_t row = g_.row(Time(d, b, s), b);
            const float *r = xw_ + row * gs + hs, *hp = hprev_ + row * hs;
            const float* keep = pass_ ? pass_ + row * gs : ones_;
            const float* drh = drh_ + b * hs;
            float *da = da_step_ + b * gs, *dhp = dhp_ + b * hs;
            DerivativeSpan(act[0], r, da + hs, hs);
            for (int64_t j = 0; j < hs; ++j) {
              da[hs + j] *= drh[j] * hp[j] * keep[hs + j];
              dhp[j] += drh[j] * r[j];
            }
          });
          AMP_RETURN_IF_ERROR(bwd_dh_.Run(Operand(da_step_, da16_step_, bg), dhp_));  // da_r is new: again
        }
        ForRows([&](int64_t b) {
          if (!active(b)) {  // the state did not change at this step
            std::memcpy(dhp_ + b * hs, dh_ + b * hs, static_cast<size_t>(hs) * sizeof(float));
            if (Lstm()) std::memcpy(dcp_ + b * hs, dc_ + b * hs, static_cast<size_t>(hs) * sizeof(float));
            return;
          }
          const int64_t row = g_.row(Time(d, b, s), b);
          std::memcpy(da_ + row * gs, da_step_ + b * gs, static_cast<size_t>(gs) * sizeof(float));
          if (dar_) std::memcpy(dar_ + row * gs, dar_step_ + b * gs, static_cast<size_t>(gs) * sizeof(float));
        });
        std::swap(dh_, dhp_);
        std::swap(dc_, dcp_);
      }
      for (int64_t b = 0; b < batch; ++b) {
        std::memcpy(dh0 + g_.state(d, b), dh_ + b * hs, static_cast<size_t>(hs) * sizeof(float));
        if (Lstm()) std::memcpy(dc0 + g_.state(d, b), dc_ + b * hs, static_cast<size_t>(hs) * sizeof(float));
      }
      // Over all steps: dX (both directions add up), dW, dR, the biases, P.
      const int64_t in = g_.input;
      float* drd = dr + g_.r(d, 0);
      if (native_) {
        const void* da = Operand(da_, da16_, rows * gs);
        const void* hp = Operand(hprev_, hprev16_, rows * hs);
        AMP_RETURN_IF_ERROR(bwd_dx_[d > 0].SetB(Raw16(1, g_.w(d, 0)), packs_[5 + (d > 0)]));
        AMP_RETURN_IF_ERROR(bwd_dx_[d > 0].Run(da, dx));
        AMP_RETURN_IF_ERROR(bwd_dw_.SetB(raw_[0], packs_[7]));
        AMP_RETURN_IF_ERROR(bwd_dw_.Run(da, dw + g_.w(d, 0)));
        AMP_RETURN_IF_ERROR(bwd_dr_.SetB(hp, packs_[8]));
        AMP_RETURN_IF_ERROR(bwd_dr_.Run(dar_ ? Operand(dar_, dar16_, rows * gs) : da, drd));
        if (Gru() && !c_.linear_before_reset) {
          AMP_RETURN_IF_ERROR(bwd_dr_n_.SetB(Operand(rh_, rh16_all_, rows * hs), packs_[9]));
          AMP_RETURN_IF_ERROR(bwd_dr_n_.Run(Offset(da, 2 * hs), drd + 2 * hs * hs));
        }
        BiasAndPeepholeGradients(d, db, dp);
        continue;
      }
      AMP_RETURN_IF_ERROR(Gemm('N', 'N', rows, in, gs, da_, gs, W(d), in, d == 0 ? 0.0f : 1.0f, dx, in));
      AMP_RETURN_IF_ERROR(Gemm('T', 'N', gs, in, rows, da_, gs, X(), in, 0.0f, dw + g_.w(d, 0), in));
      if (Gru() && !c_.linear_before_reset) {
        AMP_RETURN_IF_ERROR(Gemm('T', 'N', 2 * hs, hs, rows, da_, gs, hprev_, hs, 0.0f, drd, hs));
        AMP_RETURN_IF_ERROR(Gemm('T', 'N', hs, hs, rows, da_ + 2 * hs, gs, rh_, hs, 0.0f, drd + 2 * hs * hs, hs));
      } else {
        AMP_RETURN_IF_ERROR(Gemm('T', 'N', gs, hs, rows, dar_ ? dar_ : da_, gs, hprev_, hs, 0.0f, drd, hs));
      }
      BiasAndPeepholeGradients(d, db, dp);
    }
    return Status::Ok();
  }

  // Direction d's dWb, dRb (and dP) from the gate gradients of every step.
  void BiasAndPeepholeGradients(int64_t d, float* db, float* dp) const {
    const int64_t hs = H(), gs = G();
    ColumnSums(da_, gs, gs, db + g_.wb(d, 0));
    ColumnSums(dar_ ? dar_ : da_, gs, gs, db + g_.rb(d, 0));
    if (P(d)) {
      float* dpd = dp + d * 3 * hs;
      ColumnSums(da_, hs, gs, dpd, cprev_, hs);                    // i
      ColumnSums(da_ + hs, hs, gs, dpd + hs, cnew_, hs);           // o
      ColumnSums(da_ + 2 * hs, hs, gs, dpd + 2 * hs, cprev_, hs);  // f
    }
  }

  // The operand of a product: `f` itself (fp32 path), or its n values
  // rounded into the bf16 copy `h` (native path).
  const void* Operand(const float* f, uint16_t* h, int64_t n) const {
    if (!native_) return f;
    NarrowSpan(DType::kBFloat16, f, h, n);
    return h;
  }
  // `p` advanced by n elements of the products' type.
  const void* Offset(const void* p, int64_t n) const {
    return native_ ? static_cast<const void*>(static_cast<const uint16_t*>(p) + n)
                   : static_cast<const void*>(static_cast<const float*>(p) + n);
  }

  RnnConfig c_;
  RnnGeometry g_;
  DType dtype_;
  bool backward_;
  bool reserve_;  // forward: writes the reserve output; backward: reads the reserve input
  int threads_;
  ir::RnnReserveLayout layout_;
  size_t scratch_bytes_ = 0;
  std::vector<int64_t> lens_;
  // Inputs as fp32: X, W, R, B, initial_h, initial_c, P, dY, dY_h, dY_c
  // (null when absent), and their widened copies (2-byte dtypes).
  std::array<const float*, 10> in_{};
  std::array<float*, 10> wide_{};
  std::vector<float*> out_;  // fp32 results of the outputs
  float *xw_ = nullptr, *bias_ = nullptr, *tmp_ = nullptr, *rh_step_ = nullptr, *h_ = nullptr, *c_state_ = nullptr;
  float *hprev_ = nullptr, *cnew_ = nullptr, *cprev_ = nullptr, *q_ = nullptr, *rh_ = nullptr, *pass_ = nullptr;
  float *da_ = nullptr, *dar_ = nullptr, *da_step_ = nullptr, *dar_step_ = nullptr;
  float *dh_ = nullptr, *dc_ = nullptr, *dhp_ = nullptr, *dcp_ = nullptr, *drh_ = nullptr;
  double* sums_ = nullptr;
  // The masks without a clip; P's stand-in without peepholes (read, then
  // not used: every loop stays free of branches and calls).
  float *ones_ = nullptr, *zeros_ = nullptr;
  // The products of every step (see Product): h R^T (GRU with
  // linear_before_reset 0: of z and r, then r * h Rh^T of the candidate), and
  // back: da R (GRU 0: da_n Rh, then da_zr R_zr); their packed B in packs_.
  Product fwd_rec_, fwd_cand_, bwd_dh_, bwd_drh_;
  // The native bf16 path's products over all steps: X W^T; DA W (the first
  // direction, then adding), DA^T X, DA^T H (GRU 0: of z and r, then DA_n^T (r h)).
  Product fwd_x_, bwd_dx_[2], bwd_dw_, bwd_dr_, bwd_dr_n_;
  std::vector<float*> packs_;  // each product's scratch, in MakeProducts' order
  bool native_ = false;
  std::array<const void*, 3> raw_{};  // X, W, R as given
  uint16_t *h16_ = nullptr, *rh16_ = nullptr, *da16_step_ = nullptr, *da16_ = nullptr, *dar16_ = nullptr;
  uint16_t *hprev16_ = nullptr, *rh16_all_ = nullptr;
};

StatusOr<std::unique_ptr<Kernel>> MakeDirectRnn(const KernelInit& init) {
  const bool backward = ir::IsRecurrentGrad(init.op);
  StatusOr<RnnConfig> c = ir::ParseRnnConfig(init.op, *init.attrs);
  if (!c.ok()) return init.Error(c.status().message());
  AMP_ASSIGN_OR_RETURN(RnnGeometry g, RnnGeometryOf(init, *c));
  const DType t = init.inputs[RnnConfig::kX].dtype;
  if (t != DType::kFloat32 && t != DType::kFloat16 && t != DType::kBFloat16)
    return Unimplemented("direct recurrent kernels take fp32, fp16 and bf16");
  const bool reserve = backward ? init.inputs.size() > c->reserve_input() && init.inputs[c->reserve_input()].present()
                                : init.outputs.size() > c->reserve_output();
  return std::unique_ptr<Kernel>(new DirectRnn(*std::move(c), g, t, backward, reserve, Threads(init)));
}

}  // namespace

void RegisterDirectRnn(Registry& r) {
  for (OpKind op : {OpKind::kRNN, OpKind::kGRU, OpKind::kLSTM, OpKind::kRNNGrad, OpKind::kGRUGrad, OpKind::kLSTMGrad})
    r.Add(DirectEntry(op, MakeDirectRnn));
}

}  // namespace amptrain::kernels::cpu::direct
