// Test helpers of the training-op suites (grad_ops_test.cc,
// onednn_grad_test.cc): run one kernel of the global registry with output
// types from the op's shape rule (which sees every input's value, so shape
// inputs resolve), scratch allocated, and chosen outputs left unused
// (data == nullptr); plus a float64 central-difference gradient check.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ir/infer/infer_util.h"
#include "kernels/kernel.h"

namespace amptrain::kernels::gradtest {

struct Options {
  std::string impl = "reference";
  size_t num_outputs = 1;
  bool training = false;
  uint64_t seed = 0;
  int threads = 2;
  std::vector<bool> unused;  // output i is passed with data == nullptr (stays zero)
  // Bit i: rank-4 input (output) i goes to the kernel channels-last
  // (TensorSpec::channels_last); RunKernel takes and returns NCHW either way.
  uint32_t channels_last_inputs = 0, channels_last_outputs = 0;
  int scratch_fill = -1;  // >= 0: every byte of the kernel's scratch set to it before the run
  uint32_t constant_inputs = 0;  // bit i: input i's value is known at kernel creation (TensorSpec::value)
  // Output 0 written over (a copy of) the input the kernel names in
  // inplace_input(0), as the planner lets it; an error when it names none.
  bool in_place = false;
};

// A rank-4 tensor's NCHW <-> NHWC copy (`to_nhwc`: its dims are N, C, H, W
// either way; only the order of the bytes changes).
inline ir::Tensor Relayout(const ir::Tensor& t, bool to_nhwc) {
  ir::Tensor out = ir::Tensor::Zeros(t.dtype(), t.dims()).value();
  const auto& d = t.dims();
  const int64_t n = d[0], c = d[1], hw = d[2] * d[3];
  const size_t e = ir::DTypeSize(t.dtype());
  const auto* src = static_cast<const std::byte*>(t.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) {
        const int64_t nchw = (b * c + ch) * hw + p, nhwc = (b * hw + p) * c + ch;
        std::memcpy(dst + (to_nhwc ? nhwc : nchw) * e, src + (to_nhwc ? nchw : nhwc) * e, e);
      }
  return out;
}

// Absent optional inputs are empty Tensors.
inline StatusOr<std::vector<ir::Tensor>> RunKernel(OpKind op, const ir::Attributes& attrs,
                                                   const std::vector<ir::Tensor>& inputs, const Options& opt = {}) {
  ir::InferContext ictx;
  ictx.attrs = &attrs;
  ictx.opset = 21;
  for (const ir::Tensor& t : inputs) {
    ictx.inputs.push_back(t.empty() ? ir::TensorType{} : ir::TensorType::Of(t.dtype(), t.dims()));
    ictx.values.push_back(t.empty() ? nullptr : &t);
  }
  ictx.outputs.resize(opt.num_outputs);
  ictx.output_values.resize(opt.num_outputs);
  AMP_RETURN_IF_ERROR(ir::Schema(op).infer(ictx));
  KernelInit init;
  init.op = op;
  init.attrs = &attrs;
  init.node_name = "test";
  init.training = opt.training;
  init.seed = opt.seed;
  init.threads = opt.threads;
  KernelContext ctx;
  auto last = [](uint32_t mask, size_t i, const std::vector<int64_t>& dims) {
    return i < 32 && ((mask >> i) & 1u) != 0 && dims.size() == 4;
  };
  std::vector<ir::Tensor> relaid;  // the channels-last copies of inputs
  relaid.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Tensor& t = inputs[i];
    const bool cl = !t.empty() && last(opt.channels_last_inputs, i, t.dims());
    init.inputs.push_back(t.empty() ? TensorSpec{} : TensorSpec{t.dtype(), t.dims(), nullptr});
    if (!t.empty() && (opt.constant_inputs >> i & 1)) init.inputs.back().value = &t;
    init.inputs.back().channels_last = cl;
    relaid.push_back(cl ? Relayout(t, true) : t);
    ctx.inputs.push_back(t.empty() ? ir::TensorView{} : ir::TensorView::Of(relaid.back()));
  }
  std::vector<ir::Tensor> outputs;
  outputs.reserve(ictx.outputs.size());
  for (size_t o = 0; o < ictx.outputs.size(); ++o) {
    const ir::TensorType& t = ictx.outputs[o];
    if (!t.has_shape || !t.shape.is_static()) return Internal("output ", o, " type ", t.ToString(), " is not static");
    AMP_ASSIGN_OR_RETURN(ir::Tensor out, ir::Tensor::Zeros(t.dtype, t.shape.static_dims()));
    init.outputs.push_back(TensorSpec{t.dtype, t.shape.static_dims(), nullptr});
    init.outputs.back().channels_last = last(opt.channels_last_outputs, o, t.shape.static_dims());
    outputs.push_back(out);
    ctx.outputs.push_back(ir::TensorView::Of(outputs.back()));
    if (o < opt.unused.size() && opt.unused[o]) ctx.outputs.back().data = nullptr;
  }
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> kernel, Registry::Global().Create(init, opt.impl));
  if (opt.in_place) {
    const int k = kernel->inplace_input(0);
    if (k < 0) return FailedPrecondition("the kernel does not write output 0 in place");
    const ir::Tensor& in = relaid[static_cast<size_t>(k)];
    AMP_ASSIGN_OR_RETURN(outputs[0], ir::Tensor::Zeros(in.dtype(), in.dims()));
    std::memcpy(outputs[0].raw(), in.raw(), in.num_elements() * ir::DTypeSize(in.dtype()));
    ctx.inputs[static_cast<size_t>(k)] = ctx.outputs[0] = ir::TensorView::Of(outputs[0]);
  }
  std::shared_ptr<std::byte> scratch = ir::AllocateAligned(kernel->scratch_bytes());
  ctx.scratch = scratch.get();
  if (opt.scratch_fill >= 0) std::memset(scratch.get(), opt.scratch_fill, kernel->scratch_bytes());
  AMP_RETURN_IF_ERROR(kernel->Run(ctx));
  for (size_t o = 0; o < outputs.size(); ++o)
    if (init.outputs[o].channels_last) outputs[o] = Relayout(outputs[o], false);
  return outputs;
}

inline int64_t Count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// Uniform [lo, hi) values of `dtype`, deterministic in `seed`; with `gap`,
// values keep |v| >= gap (away from kinks at 0).
inline ir::Tensor Random(std::vector<int64_t> dims, uint32_t seed, ir::DType dtype = ir::DType::kFloat64,
                         double lo = -1.0, double hi = 1.0, double gap = 0.0) {
  ir::Tensor t = ir::Tensor::Zeros(dtype, dims).value();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    double v = u(rng);
    while (std::fabs(v) < gap) v = u(rng);
    ir::SetElementFromDouble(t, i, v);
  }
  return t;
}

inline std::vector<double> Values(const ir::Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.num_elements()));
  for (int64_t i = 0; i < t.num_elements(); ++i) v[static_cast<size_t>(i)] = t.GetAsDouble(i);
  return v;
}

// max |a - b| / max(max |b|, 1e-6): the error normalized by the reference's
// scale; infinite when the sizes or the NaN positions differ.
inline double NormalizedError(const ir::Tensor& a, const ir::Tensor& b) {
  std::vector<double> x = Values(a), y = Values(b);
  if (x.size() != y.size()) return INFINITY;
  double err = 0.0, scale = 1e-6;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) != std::isnan(y[i])) return INFINITY;
    err = std::max(err, std::fabs(x[i] - y[i]));
    scale = std::max(scale, std::fabs(y[i]));
  }
  return err / scale;
}

// The forward op as a function of its inputs (output of interest only).
using Forward = std::function<ir::Tensor(const std::vector<ir::Tensor>&)>;

// Central differences of L = sum(r * forward(inputs)) with respect to every
// entry of inputs[wrt] (float64, eps 1e-6) against `analytic`: passes when
// |analytic - numeric| <= 1e-5 + 1e-3 |numeric| everywhere and the analytic
// gradient is not all zeros.
inline void ExpectGradient(const std::string& what, const Forward& forward, std::vector<ir::Tensor> inputs,
                           size_t wrt, const ir::Tensor& r, const ir::Tensor& analytic) {
  ASSERT_EQ(inputs[wrt].dtype(), ir::DType::kFloat64) << what;
  ASSERT_EQ(analytic.dims(), inputs[wrt].dims()) << what;
  inputs[wrt] = inputs[wrt].Clone();
  double* p = inputs[wrt].data<double>();
  const std::vector<double> rv = Values(r), got = Values(analytic);
  auto loss = [&]() {
    std::vector<double> y = Values(forward(inputs));
    EXPECT_EQ(y.size(), rv.size()) << what;
    double s = 0.0;
    for (size_t i = 0; i < y.size() && i < rv.size(); ++i) s += rv[i] * y[i];
    return s;
  };
  constexpr double kEps = 1e-6;
  double max_abs = 0.0;
  int failures = 0;
  for (int64_t i = 0; i < inputs[wrt].num_elements(); ++i) {
    const double saved = p[i];
    p[i] = saved + kEps;
    const double up = loss();
    p[i] = saved - kEps;
    const double down = loss();
    p[i] = saved;
    const double numeric = (up - down) / (2 * kEps);
    max_abs = std::max(max_abs, std::fabs(got[i]));
    if (std::fabs(got[i] - numeric) > 1e-5 + 1e-3 * std::fabs(numeric) && failures++ < 5)
      ADD_FAILURE() << what << ": entry " << i << " analytic " << got[i] << " numeric " << numeric;
  }
  EXPECT_GT(max_abs, 0.0) << what << ": the analytic gradient is all zeros";
}

}  // namespace amptrain::kernels::gradtest
