// Test helpers of the NN kernel suites (nn_test.cc, onednn_test.cc): build a
// KernelInit whose output types come from the op's shape rule, create the
// kernel through the global registry (optionally one impl) and run it.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ir/op_schema.h"
#include "ir/tensor.h"
#include "kernels/kernel.h"

namespace amptrain::kernels::testing {

struct NnRunOptions {
  std::string impl = "reference";
  size_t num_outputs = 1;
  bool training = false;
  uint64_t seed = 0;      // KernelInit::seed
  uint64_t run_seed = 0;  // KernelContext::seed (the trainer's per-step seed)
  int threads = 2;
  bool winograd = true;        // KernelInit::winograd
  std::vector<bool> constant;  // inputs passed as plan-time constants (TensorSpec::value)
};

// Absent optional inputs are empty Tensors.
inline StatusOr<std::vector<ir::Tensor>> RunOp(OpKind op, const ir::Attributes& attrs,
                                               const std::vector<ir::Tensor>& inputs, const NnRunOptions& opt = {}) {
  ir::InferContext ictx;
  ictx.attrs = &attrs;
  ictx.opset = 21;
  for (const ir::Tensor& t : inputs) {
    ictx.inputs.push_back(t.empty() ? ir::TensorType{} : ir::TensorType::Of(t.dtype(), t.dims()));
    ictx.values.push_back(nullptr);
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
  init.winograd = opt.winograd;
  KernelContext ctx;
  ctx.seed = opt.run_seed;
  for (size_t i = 0; i < inputs.size(); ++i) {
    TensorSpec spec;
    if (!inputs[i].empty()) spec = TensorSpec{inputs[i].dtype(), inputs[i].dims(), nullptr};
    if (i < opt.constant.size() && opt.constant[i]) spec.value = &inputs[i];
    init.inputs.push_back(spec);
    ctx.inputs.push_back(inputs[i].empty() ? ir::TensorView{} : ir::TensorView::Of(inputs[i]));
  }
  std::vector<ir::Tensor> outputs;
  for (const ir::TensorType& t : ictx.outputs) {
    AMP_ASSIGN_OR_RETURN(ir::Tensor out, ir::Tensor::Zeros(t.dtype, t.shape.static_dims()));
    init.outputs.push_back(TensorSpec{t.dtype, t.shape.static_dims(), nullptr});
    outputs.push_back(out);
  }
  for (ir::Tensor& t : outputs) ctx.outputs.push_back(ir::TensorView::Of(t));
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> kernel, Registry::Global().Create(init, opt.impl));
  std::shared_ptr<std::byte> scratch = ir::AllocateAligned(kernel->scratch_bytes());
  ctx.scratch = scratch.get();
  AMP_RETURN_IF_ERROR(kernel->Run(ctx));
  return outputs;
}

inline ir::Tensor Floats(const std::vector<float>& v, std::vector<int64_t> dims) {
  return ir::Tensor::Floats(v, std::move(dims));
}

inline ir::Tensor Iota(std::vector<int64_t> dims, float start = 0.0f) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
  return Floats(v, std::move(dims));
}

inline ir::Tensor Filled(std::vector<int64_t> dims, float value) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return Floats(std::vector<float>(n, value), std::move(dims));
}

// Uniform [-1, 1) values in `dtype` (fp32 or bf16), deterministic in `seed`.
inline ir::Tensor Random(std::vector<int64_t> dims, DType dtype, uint32_t seed) {
  ir::Tensor t = ir::Tensor::Zeros(dtype, dims).value();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    float v = u(rng);
    if (dtype == DType::kFloat32)
      t.data<float>()[i] = v;
    else if (dtype == DType::kFloat16)
      t.data<uint16_t>()[i] = ir::FloatToHalf(v);
    else
      t.data<uint16_t>()[i] = ir::FloatToBFloat16(v);
  }
  return t;
}

inline std::vector<double> AsDoubles(const ir::Tensor& t) {
  std::vector<double> v(t.num_elements());
  for (int64_t i = 0; i < t.num_elements(); ++i) v[i] = t.GetAsDouble(i);
  return v;
}

// max |a - b| / max(max |b|, 1e-6): error normalized by the reference's scale.
inline double NormalizedError(const ir::Tensor& a, const ir::Tensor& b) {
  std::vector<double> x = AsDoubles(a), y = AsDoubles(b);
  if (x.size() != y.size()) return INFINITY;
  double err = 0.0, scale = 1e-6;
  for (size_t i = 0; i < x.size(); ++i) {
    err = std::max(err, std::fabs(x[i] - y[i]));
    if (std::isnan(x[i]) != std::isnan(y[i])) return INFINITY;
    scale = std::max(scale, std::fabs(y[i]));
  }
  return err / scale;
}

inline void ExpectValues(const ir::Tensor& t, const std::vector<double>& expected, double tol = 1e-5) {
  ASSERT_EQ(t.num_elements(), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(t.GetAsDouble(i), expected[i], tol) << "element " << i;
}

}  // namespace amptrain::kernels::testing
