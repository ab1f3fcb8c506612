// Reference kernels of the recurrent layers RNN, GRU and LSTM (ONNX
// semantics; attributes in ir/rnn.h) and of their backward ops. Every value
// is read into double and computed in double, for fp32, fp64, fp16 and bf16
// alike, then rounded once into the output's dtype.
//
// Per direction d and batch row b, the steps run over t = 0..len-1 (reverse:
// len-1..0), len = sequence_lens[b] (seq without it). Y is 0 at t >= len,
// Y_h (Y_c) hold the state after the last step (the initial state when
// len = 0). Gates, with x = X[t], h = the previous hidden state, c = the
// previous cell state, each pre-activation clamped to [-clip, clip] when
// clip is set, W/R/Wb/Rb the rows of one gate:
//   RNN:  h' = f(W x + Wb + R h + Rb)
//   GRU:  z = f(Wz x + Wbz + Rz h + Rbz), r = f(Wr x + ... ), then
//         n = g(Wh x + Wbh + Rh (r h) + Rbh)            (linear_before_reset 0)
//         n = g(Wh x + Wbh + r (Rh h + Rbh))            (linear_before_reset 1)
//         h' = (1 - z) n + z h
//   LSTM: i = f(Wi x + Wbi + Ri h + Rbi + Pi c), f_ = f(... + Pf c),
//         g_ = g(Wc x + ...), c' = f_ c + i g_, o = f(Wo x + ... + Po c'),
//         h' = o h(c')
// The forward op writes the internal reserve (ir/rnn.h) when the training
// graph asks for it, in fp32, for the direct backward kernel; the backward
// ops here ignore it: they run the forward again, keeping every step, then go back
// through time (BPTT): dX, dW, dR, dB, the initial states' and P's
// gradients, from dY, dY_h, dY_c (each may be absent: zero).
#include <algorithm>
#include <cmath>
#include <vector>

#include "ir/rnn.h"
#include "kernels/cpu/element.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/register.h"
#include "kernels/cpu/rnn_geometry.h"
#include "kernels/cpu/shape_kernels.h"

namespace amptrain::kernels::cpu {

namespace {

using ir::RnnActivation;
using ir::RnnConfig;
using Vec = std::vector<double>;

double Activate(RnnActivation a, double x) {
  switch (a) {
    case RnnActivation::kSigmoid: return 1.0 / (1.0 + std::exp(-x));
    case RnnActivation::kTanh: return std::tanh(x);
    case RnnActivation::kRelu: return x > 0 ? x : 0.0;
  }
  return x;
}

// The derivative, from the activation's output y.
double Derivative(RnnActivation a, double y) {
  switch (a) {
    case RnnActivation::kSigmoid: return y * (1.0 - y);
    case RnnActivation::kTanh: return 1.0 - y * y;
    case RnnActivation::kRelu: return y > 0 ? 1.0 : 0.0;
  }
  return 1.0;
}

void Write(const Vec& values, ir::TensorView& v) {
  if (!v.data) return;
  (void)DispatchFloat(v.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(v.data);
    for (size_t i = 0; i < values.size(); ++i) p[i] = T(static_cast<Acc<T>>(values[i]));
    return Status::Ok();
  });
}

// One step of one (direction, batch row): the values the backward pass needs.
struct StepRecord {
  Vec gates;   // activated gate values, gates * hidden (LSTM i o f c, GRU z r n, RNN h)
  Vec pass;    // 1 where the pre-activation was inside the clip range, else 0
  Vec h, c;    // state after the step
  Vec q;       // GRU linear_before_reset: Rh h + Rbh
};

class RnnKernel final : public Kernel {
 public:
  RnnKernel(RnnConfig c, RnnGeometry g, bool backward) : c_(std::move(c)), g_(g), backward_(backward) {}

  Status Run(KernelContext& ctx) override {
    const size_t n = c_.forward_inputs();
    auto in = [&](size_t i) { return i < ctx.inputs.size() ? ViewDoubles(ctx.inputs[i]) : Vec(); };
    x_ = in(RnnConfig::kX), w_ = in(RnnConfig::kW), r_ = in(RnnConfig::kR), b_ = in(RnnConfig::kB);
    h0_ = in(RnnConfig::kInitialH);
    c0_ = c_.cell == ir::OpKind::kLSTM ? in(RnnConfig::kInitialC) : Vec();
    p_ = c_.cell == ir::OpKind::kLSTM ? in(RnnConfig::kP) : Vec();
    if (b_.empty()) b_.assign(static_cast<size_t>(g_.dirs * 2 * g_.gates * g_.hidden), 0.0);
    AMP_RETURN_IF_ERROR(ReadSequenceLens(ctx, g_, lens_));
    if (!backward_) return Forward(ctx);
    dy_ = in(n), dyh_ = in(n + 1), dyc_ = c_.cell == ir::OpKind::kLSTM ? in(n + 2) : Vec();
    return Backward(ctx);
  }

 private:
  int64_t H() const { return g_.hidden; }
  int64_t Time(int64_t d, int64_t b, int64_t s) const {
    const bool reverse = c_.reverse || d == 1;
    return reverse ? lens_[b] - 1 - s : s;
  }
  double Clip(double v, double& pass) const {
    pass = 1.0;
    if (c_.clip > 0 && std::fabs(v) > c_.clip) {
      pass = 0.0;
      return v > 0 ? c_.clip : -c_.clip;
    }
    return v;
  }
  double InputPart(int64_t d, int64_t row, const double* x) const {
    const double* w = w_.data() + g_.w(d, row);
    double s = b_[g_.wb(d, row)];
    for (int64_t i = 0; i < g_.input; ++i) s += w[i] * x[i];
    return s;
  }
  double RecurrentPart(int64_t d, int64_t row, const double* h) const {
    const double* r = r_.data() + g_.r(d, row);
    double s = b_[g_.rb(d, row)];
    for (int64_t j = 0; j < H(); ++j) s += r[j] * h[j];
    return s;
  }

  // One step from (h, c); fills rec.
  void Step(int64_t d, const double* x, const Vec& h, const Vec& c, StepRecord& rec) const {
    const int64_t hs = H();
    const auto& act = c_.activations[d];
    rec.gates.assign(static_cast<size_t>(g_.gates * hs), 0.0);
    rec.pass.assign(rec.gates.size(), 1.0);
    rec.h.assign(static_cast<size_t>(hs), 0.0);
    auto gate = [&](int64_t row, double pre, RnnActivation a) {
      rec.gates[row] = Activate(a, Clip(pre, rec.pass[row]));
      return rec.gates[row];
    };
    if (c_.cell == ir::OpKind::kRNN) {
      for (int64_t j = 0; j < hs; ++j)
        rec.h[j] = gate(j, InputPart(d, j, x) + RecurrentPart(d, j, h.data()), act[0]);
    } else if (c_.cell == ir::OpKind::kGRU) {
      for (int64_t k = 0; k < 2 * hs; ++k) gate(k, InputPart(d, k, x) + RecurrentPart(d, k, h.data()), act[0]);
      Vec rh(static_cast<size_t>(hs));
      for (int64_t j = 0; j < hs; ++j) rh[j] = rec.gates[hs + j] * h[j];
      if (c_.linear_before_reset) rec.q.assign(static_cast<size_t>(hs), 0.0);
      for (int64_t j = 0; j < hs; ++j) {
        const int64_t row = 2 * hs + j;
        double pre = InputPart(d, row, x);
        if (c_.linear_before_reset) {
          rec.q[j] = RecurrentPart(d, row, h.data());
          pre += rec.gates[hs + j] * rec.q[j];
        } else {
          pre += RecurrentPart(d, row, rh.data());
        }
        const double nval = gate(row, pre, act[1]), z = rec.gates[j];
        rec.h[j] = (1 - z) * nval + z * h[j];
      }
    } else {  // LSTM: rows i [0, H), o [H, 2H), f [2H, 3H), c [3H, 4H); P = Pi, Po, Pf
      const double* p = p_.empty() ? nullptr : p_.data() + d * 3 * hs;
      rec.c.assign(static_cast<size_t>(hs), 0.0);
      for (int64_t j = 0; j < hs; ++j) {
        auto pre = [&](int64_t row) { return InputPart(d, row, x) + RecurrentPart(d, row, h.data()); };
        const double i = gate(j, pre(j) + (p ? p[j] * c[j] : 0), act[0]);
        const double f = gate(2 * hs + j, pre(2 * hs + j) + (p ? p[2 * hs + j] * c[j] : 0), act[0]);
        const double cand = gate(3 * hs + j, pre(3 * hs + j), act[1]);
        rec.c[j] = f * c[j] + i * cand;
        const double o = gate(hs + j, pre(hs + j) + (p ? p[hs + j] * rec.c[j] : 0), act[0]);
        rec.h[j] = o * Activate(act[2], rec.c[j]);
      }
    }
  }

  Vec Initial(const Vec& v, int64_t d, int64_t b) const {
    if (v.empty()) return Vec(static_cast<size_t>(H()), 0.0);
    return Vec(v.begin() + g_.state(d, b), v.begin() + g_.state(d, b) + H());
  }

  // Runs every (direction, batch row); `records[d][b]` gets the steps when given.
  void RunForward(Vec& y, Vec& yh, Vec& yc, std::vector<std::vector<std::vector<StepRecord>>>* records) const {
    for (int64_t d = 0; d < g_.dirs; ++d) {
      for (int64_t b = 0; b < g_.batch; ++b) {
        Vec h = Initial(h0_, d, b), c = Initial(c0_, d, b);
        std::vector<StepRecord> steps(static_cast<size_t>(lens_[b]));
        for (int64_t s = 0; s < lens_[b]; ++s) {
          const int64_t t = Time(d, b, s);
          Step(d, x_.data() + g_.x(t, b), h, c, steps[s]);
          h = steps[s].h;
          if (c_.cell == ir::OpKind::kLSTM) c = steps[s].c;
          std::copy(h.begin(), h.end(), y.begin() + g_.y(t, d, b));
        }
        std::copy(h.begin(), h.end(), yh.begin() + g_.state(d, b));
        if (!yc.empty()) std::copy(c.begin(), c.end(), yc.begin() + g_.state(d, b));
        if (records) (*records)[d][b] = std::move(steps);
      }
    }
  }

  Status Forward(KernelContext& ctx) const {
    Vec y(static_cast<size_t>(g_.seq * g_.dirs * g_.batch * H()), 0.0);
    Vec yh(static_cast<size_t>(g_.dirs * g_.batch * H()), 0.0), yc;
    if (c_.cell == ir::OpKind::kLSTM) yc.assign(yh.size(), 0.0);
    const size_t reserve = c_.reserve_output();
    const bool keep = ctx.outputs.size() > reserve && ctx.outputs[reserve].data;
    std::vector<std::vector<std::vector<StepRecord>>> rec(g_.dirs, std::vector<std::vector<StepRecord>>(g_.batch));
    RunForward(y, yh, yc, keep ? &rec : nullptr);
    const Vec* outs[] = {&y, &yh, &yc};
    for (size_t o = 0; o < ctx.outputs.size() && o < reserve; ++o) Write(*outs[o], ctx.outputs[o]);
    if (keep) WriteReserve(rec, static_cast<float*>(ctx.outputs[reserve].data));
    return Status::Ok();
  }

  // The steps in the reserve's layout (ir/rnn.h), in fp32: what the direct
  // backward kernel reads (this one runs the forward again in double).
  void WriteReserve(const std::vector<std::vector<std::vector<StepRecord>>>& rec, float* out) const {
    const int64_t hs = H(), gs = g_.gates * hs, rows = g_.seq * g_.batch;
    const ir::RnnReserveLayout l = ir::ReserveLayout(c_, rows, hs);
    std::fill(out, out + g_.dirs * l.per_direction, 0.0f);
    for (int64_t d = 0; d < g_.dirs; ++d) {
      float* base = out + d * l.per_direction;
      for (int64_t b = 0; b < g_.batch; ++b) {
        Vec h = Initial(h0_, d, b), c = Initial(c0_, d, b);
        for (int64_t s = 0; s < lens_[b]; ++s) {
          const StepRecord& st = rec[d][b][s];
          const int64_t row = g_.row(Time(d, b, s), b);
          for (int64_t k = 0; k < gs; ++k) {
            base[l.gates + row * gs + k] = static_cast<float>(st.gates[k]);
            if (l.pass >= 0) base[l.pass + row * gs + k] = static_cast<float>(st.pass[k]);
          }
          for (int64_t j = 0; j < hs; ++j) {
            base[l.hprev + row * hs + j] = static_cast<float>(h[j]);
            if (l.cprev >= 0) base[l.cprev + row * hs + j] = static_cast<float>(c[j]);
            if (l.cnew >= 0) base[l.cnew + row * hs + j] = static_cast<float>(st.c[j]);
            if (l.q >= 0) base[l.q + row * hs + j] = static_cast<float>(st.q[j]);
            if (l.rh >= 0) base[l.rh + row * hs + j] = static_cast<float>(st.gates[hs + j] * h[j]);
          }
          h = st.h;
          if (c_.cell == ir::OpKind::kLSTM) c = st.c;
        }
      }
    }
  }

  Status Backward(KernelContext& ctx) const {
    const int64_t hs = H(), gh = g_.gates * hs;
    Vec y(static_cast<size_t>(g_.seq * g_.dirs * g_.batch * hs), 0.0);
    Vec yh(static_cast<size_t>(g_.dirs * g_.batch * hs), 0.0), yc;
    if (c_.cell == ir::OpKind::kLSTM) yc.assign(yh.size(), 0.0);
    std::vector<std::vector<std::vector<StepRecord>>> rec(g_.dirs, std::vector<std::vector<StepRecord>>(g_.batch));
    RunForward(y, yh, yc, &rec);

    Vec dx(x_.size(), 0.0), dw(w_.size(), 0.0), dr(r_.size(), 0.0), db(b_.size(), 0.0);
    Vec dh0(yh.size(), 0.0), dc0(yc.size(), 0.0), dp(c_.cell == ir::OpKind::kLSTM ? g_.dirs * 3 * hs : 0, 0.0);
    for (int64_t d = 0; d < g_.dirs; ++d) {
      const auto& act = c_.activations[d];
      const double* p = p_.empty() ? nullptr : p_.data() + d * 3 * hs;
      double* dpd = dp.empty() ? nullptr : dp.data() + d * 3 * hs;
      for (int64_t b = 0; b < g_.batch; ++b) {
        const auto& steps = rec[d][b];
        Vec dh_next = dyh_.empty() ? Vec(hs, 0.0) : Initial(dyh_, d, b);
        Vec dc_next = dyc_.empty() ? Vec(hs, 0.0) : Initial(dyc_, d, b);
        const Vec h_init = Initial(h0_, d, b), c_init = Initial(c0_, d, b);
        for (int64_t s = lens_[b] - 1; s >= 0; --s) {
          const int64_t t = Time(d, b, s);
          const StepRecord& st = steps[s];
          const Vec& hp = s > 0 ? steps[s - 1].h : h_init;
          const Vec& cp = c_.cell != ir::OpKind::kLSTM ? c_init : s > 0 ? steps[s - 1].c : c_init;
          const double* xt = x_.data() + g_.x(t, b);
          Vec dh(dh_next);
          if (!dy_.empty())
            for (int64_t j = 0; j < hs; ++j) dh[j] += dy_[g_.y(t, d, b) + j];
          Vec da(static_cast<size_t>(gh), 0.0);  // gradients of the gate pre-activations
          Vec dh_prev(static_cast<size_t>(hs), 0.0), dc_prev;
          auto dgate = [&](int64_t row, double dvalue, RnnActivation a) {
            da[row] = dvalue * Derivative(a, st.gates[row]) * st.pass[row];
          };
          // The recurrent part R[row] . state + Rb[row] given its gradient `a`:
          // into dR, dRb and the state's gradient `dstate`.
          auto recurrent = [&](int64_t row, double a, const Vec& state, Vec& dstate) {
            db[g_.rb(d, row)] += a;
            double* drr = dr.data() + g_.r(d, row);
            const double* rr = r_.data() + g_.r(d, row);
            for (int64_t k = 0; k < hs; ++k) {
              drr[k] += a * state[k];
              dstate[k] += rr[k] * a;
            }
          };
          if (c_.cell == ir::OpKind::kRNN) {
            for (int64_t j = 0; j < hs; ++j) dgate(j, dh[j], act[0]);
          } else if (c_.cell == ir::OpKind::kGRU) {
            Vec drh(static_cast<size_t>(hs), 0.0), rh(static_cast<size_t>(hs));
            for (int64_t j = 0; j < hs; ++j) rh[j] = st.gates[hs + j] * hp[j];
            for (int64_t j = 0; j < hs; ++j) {
              const double z = st.gates[j], nval = st.gates[2 * hs + j];
              dh_prev[j] = dh[j] * z;
              dgate(2 * hs + j, dh[j] * (1 - z), act[1]);
              dgate(j, dh[j] * (hp[j] - nval), act[0]);  // z's value gradient; its derivative applied below
            }
            // The candidate's recurrent part.
            for (int64_t j = 0; j < hs; ++j) {
              const int64_t row = 2 * hs + j;
              const double dan = da[row], rgate = st.gates[hs + j];
              if (c_.linear_before_reset) {  // r (Rh h + Rbh)
                da[hs + j] = dan * st.q[j];  // r's value gradient
                recurrent(row, dan * rgate, hp, dh_prev);
              } else {  // Rh (r h) + Rbh
                recurrent(row, dan, rh, drh);
              }
            }
            for (int64_t j = 0; j < hs; ++j) {
              if (!c_.linear_before_reset) {
                da[hs + j] = drh[j] * hp[j];
                dh_prev[j] += drh[j] * st.gates[hs + j];
              }
              da[hs + j] *= Derivative(act[0], st.gates[hs + j]) * st.pass[hs + j];
            }
          } else {  // LSTM
            dc_prev.assign(static_cast<size_t>(hs), 0.0);
            for (int64_t j = 0; j < hs; ++j) {
              const double i = st.gates[j], o = st.gates[hs + j], f = st.gates[2 * hs + j], cand = st.gates[3 * hs + j];
              const double tc = Activate(act[2], st.c[j]);
              dgate(hs + j, dh[j] * tc, act[0]);
              double dc = dc_next[j] + dh[j] * o * Derivative(act[2], tc);
              if (p) {
                dc += da[hs + j] * p[hs + j];
                dpd[hs + j] += da[hs + j] * st.c[j];
              }
              dgate(j, dc * cand, act[0]);
              dgate(2 * hs + j, dc * cp[j], act[0]);
              dgate(3 * hs + j, dc * i, act[1]);
              dc_prev[j] = dc * f;
              if (p) {
                dc_prev[j] += da[j] * p[j] + da[2 * hs + j] * p[2 * hs + j];
                dpd[j] += da[j] * cp[j];
                dpd[2 * hs + j] += da[2 * hs + j] * cp[j];
              }
            }
          }
          // The input part of every gate, and the recurrent part of all but
          // GRU's candidate (done above).
          const int64_t recurrent_rows = c_.cell == ir::OpKind::kGRU ? 2 * hs : gh;
          double* dxt = dx.data() + g_.x(t, b);
          for (int64_t row = 0; row < gh; ++row) {
            const double a = da[row];
            if (a == 0) continue;
            db[g_.wb(d, row)] += a;
            double* dwr = dw.data() + g_.w(d, row);
            const double* wr = w_.data() + g_.w(d, row);
            for (int64_t i = 0; i < g_.input; ++i) {
              dwr[i] += a * xt[i];
              dxt[i] += wr[i] * a;
            }
            if (row < recurrent_rows) recurrent(row, a, hp, dh_prev);
          }
          dh_next = std::move(dh_prev);
          if (c_.cell == ir::OpKind::kLSTM) dc_next = std::move(dc_prev);
        }
        std::copy(dh_next.begin(), dh_next.end(), dh0.begin() + g_.state(d, b));
        if (!dc0.empty()) std::copy(dc_next.begin(), dc_next.end(), dc0.begin() + g_.state(d, b));
      }
    }
    const Vec* outs[] = {&dx, &dw, &dr, &db, &dh0, &dc0, &dp};
    for (size_t o = 0; o < ctx.outputs.size() && o < 7; ++o) Write(*outs[o], ctx.outputs[o]);
    return Status::Ok();
  }

  RnnConfig c_;
  RnnGeometry g_;
  bool backward_;
  // Per run: the inputs in double.
  Vec x_, w_, r_, b_, h0_, c0_, p_, dy_, dyh_, dyc_;
  std::vector<int64_t> lens_;
};

StatusOr<std::unique_ptr<Kernel>> MakeRnn(const KernelInit& init) {
  const bool backward = ir::IsRecurrentGrad(init.op);
  StatusOr<RnnConfig> c = ir::ParseRnnConfig(init.op, *init.attrs);
  if (!c.ok()) return init.Error(c.status().message());
  StatusOr<RnnGeometry> g = RnnGeometryOf(init, *c);
  if (!g.ok()) return g.status();
  return std::unique_ptr<Kernel>(new RnnKernel(*std::move(c), *g, backward));
}

}  // namespace

StatusOr<RnnGeometry> RnnGeometryOf(const KernelInit& init, const RnnConfig& c) {
  if (init.inputs.size() < 3) return init.Error("needs X, W and R");
  const TensorSpec& x = init.inputs[RnnConfig::kX];
  const TensorSpec& r = init.inputs[RnnConfig::kR];
  if (x.dims.size() != 3 || r.dims.size() != 3) return init.Error("X and R must have rank 3");
  RnnGeometry g;
  g.layout = c.layout;
  g.seq = x.dims[c.layout == 0 ? 0 : 1];
  g.batch = x.dims[c.layout == 0 ? 1 : 0];
  g.input = x.dims[2];
  g.hidden = r.dims[2];
  g.dirs = c.directions;
  g.gates = c.gates;
  for (size_t i = 0; i < init.inputs.size(); ++i) {
    const TensorSpec& t = init.inputs[i];
    const DType want = i == c.reserve_input() ? DType::kFloat32 : i == RnnConfig::kSequenceLens ? DType::kInt32 : x.dtype;
    if (t.present() && t.dtype != want)
      return init.Error("input ", i, " has dtype ", ir::DTypeName(t.dtype), ", expected ", ir::DTypeName(want));
  }
  return g;
}

Status ReadSequenceLens(const KernelContext& ctx, const RnnGeometry& g, std::vector<int64_t>& lens) {
  lens.assign(static_cast<size_t>(g.batch), g.seq);
  if (ctx.inputs.size() <= RnnConfig::kSequenceLens || !ctx.inputs[RnnConfig::kSequenceLens].data)
    return Status::Ok();
  const auto* l = static_cast<const int32_t*>(ctx.inputs[RnnConfig::kSequenceLens].data);
  for (int64_t b = 0; b < g.batch; ++b) {
    if (l[b] < 0 || l[b] > g.seq)
      return InvalidArgument("sequence_lens[", b, "] is ", l[b], ", outside 0..", g.seq, " (the sequence length)");
    lens[b] = l[b];
  }
  return Status::Ok();
}

void RegisterReferenceRnn(Registry& r) {
  for (ir::OpKind op : {ir::OpKind::kRNN, ir::OpKind::kGRU, ir::OpKind::kLSTM, ir::OpKind::kRNNGrad,
                        ir::OpKind::kGRUGrad, ir::OpKind::kLSTMGrad})
    r.Add(ReferenceEntry(op, FloatDTypes(), MakeRnn));
}

}  // namespace amptrain::kernels::cpu
