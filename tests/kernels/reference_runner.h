// Test helper: runs one CPU reference kernel on ir::Tensors. Output types
// come from the op's shape rule (ir::Schema(op).infer), so these tests also
// exercise the rules against the kernels.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "ir/infer/infer_util.h"
#include "kernels/kernel.h"

namespace amptrain::kernels::testing {

// A tensor of `dtype` and `dims` from doubles (converted like Cast does).
inline ir::Tensor MakeTensor(ir::DType dtype, std::vector<int64_t> dims, const std::vector<double>& values) {
  ir::Tensor t = *ir::Tensor::Zeros(dtype, std::move(dims));
  for (size_t i = 0; i < values.size(); ++i) ir::SetElementFromDouble(t, static_cast<int64_t>(i), values[i]);
  return t;
}

inline std::vector<double> Values(const ir::Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.num_elements()));
  for (int64_t i = 0; i < t.num_elements(); ++i) v[static_cast<size_t>(i)] = t.GetAsDouble(i);
  return v;
}

struct RunOptions {
  size_t num_outputs = 1;
  // Inputs whose values the kernel sees at creation (e.g. constant axes).
  std::vector<size_t> constant_inputs;
  int threads = 2;
};

// Infers output types, creates the "reference" kernel and runs it. An empty
// Tensor in `inputs` is an absent optional input.
inline StatusOr<std::vector<ir::Tensor>> RunReference(ir::OpKind op, const std::vector<ir::Tensor>& inputs,
                                                      const ir::Attributes& attrs = {}, RunOptions opt = {}) {
  ir::InferContext ic;
  ic.attrs = &attrs;
  for (const ir::Tensor& t : inputs) {
    ic.inputs.push_back(t.empty() ? ir::TensorType{} : ir::TensorType::Of(t.dtype(), t.dims()));
    ic.values.push_back(t.empty() ? nullptr : &t);  // lets the rule see axes; the kernel may not
  }
  ic.outputs.resize(opt.num_outputs);
  ic.output_values.resize(opt.num_outputs);
  AMP_RETURN_IF_ERROR(ir::Schema(op).infer(ic));

  KernelInit init;
  init.op = op;
  init.attrs = &attrs;
  init.node_name = "test";
  init.threads = opt.threads;
  for (size_t i = 0; i < inputs.size(); ++i) {
    TensorSpec s{inputs[i].dtype(), inputs[i].dims(), nullptr};
    for (size_t c : opt.constant_inputs)
      if (c == i) s.value = &inputs[i];
    init.inputs.push_back(s);
  }
  std::vector<ir::Tensor> outs;
  for (const ir::TensorType& t : ic.outputs) {
    if (!t.has_shape || !t.shape.is_static()) return Internal("output type ", t.ToString(), " is not static");
    init.outputs.push_back(TensorSpec{t.dtype, t.shape.static_dims(), nullptr});
    AMP_ASSIGN_OR_RETURN(ir::Tensor o, ir::Tensor::Zeros(t.dtype, t.shape.static_dims()));
    outs.push_back(o);
  }
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> kernel, Registry::Global().Create(init, "reference"));
  KernelContext ctx;
  for (const ir::Tensor& t : inputs) ctx.inputs.push_back(t.empty() ? ir::TensorView{} : ir::TensorView::Of(t));
  for (ir::Tensor& t : outs) ctx.outputs.push_back(ir::TensorView::Of(t));
  AMP_RETURN_IF_ERROR(kernel->Run(ctx));
  return outs;
}

// RunReference that must succeed; returns output 0.
inline ir::Tensor Run1(ir::OpKind op, const std::vector<ir::Tensor>& inputs, const ir::Attributes& attrs = {},
                       RunOptions opt = {}) {
  StatusOr<std::vector<ir::Tensor>> r = RunReference(op, inputs, attrs, opt);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? r->at(0) : ir::Tensor();
}

}  // namespace amptrain::kernels::testing
