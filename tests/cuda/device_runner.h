// One kernel runner for both devices: infers the output types from the op's
// shape rule, creates the kernel for the Device's kind through the global
// registry (optionally one impl), uploads the inputs through the Device,
// runs on one of its RunContexts and downloads the outputs and the inputs
// (the step kernels update their inputs in place). The CPU reference and the
// CUDA kernel of a test case run through the same code.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ir/infer/infer_util.h"
#include "ir/op_schema.h"
#include "kernels/device.h"
#include "kernels/kernel.h"

namespace amptrain::kernels::devtest {

struct DeviceResult {
  std::vector<ir::Tensor> outputs;
  std::vector<ir::Tensor> inputs;  // after the run (empty where absent)
};

// Inputs and outputs (bit i) given to the kernel channels-last
// (TensorSpec::channels_last, rank 4): the runner passes their bytes in
// NHWC order and returns them in NCHW order, so that results compare with a
// run in plain layouts.
struct Layouts {
  uint32_t inputs = 0, outputs = 0;
  static bool Bit(uint32_t mask, size_t i) { return i < 32 && ((mask >> i) & 1u) != 0; }
};

// A rank-4 tensor's bytes reordered between NCHW and NHWC (to_nhwc), dims kept.
inline ir::Tensor Relayout(const ir::Tensor& t, bool to_nhwc) {
  const auto& d = t.dims();
  ir::Tensor out = *ir::Tensor::Zeros(t.dtype(), d);
  const size_t es = ir::DTypeSize(t.dtype());
  const auto* in = static_cast<const std::byte*>(t.raw());
  auto* o = static_cast<std::byte*>(out.raw());
  for (int64_t n = 0; n < d[0]; ++n)
    for (int64_t c = 0; c < d[1]; ++c)
      for (int64_t h = 0; h < d[2]; ++h)
        for (int64_t w = 0; w < d[3]; ++w) {
          const int64_t nchw = ((n * d[1] + c) * d[2] + h) * d[3] + w, nhwc = ((n * d[2] + h) * d[3] + w) * d[1] + c;
          std::memcpy(o + static_cast<size_t>(to_nhwc ? nhwc : nchw) * es,
                      in + static_cast<size_t>(to_nhwc ? nchw : nhwc) * es, es);
        }
  return out;
}

// The seeds of random kernels (Dropout): KernelInit::seed, the node's, and
// KernelContext::seed, the run's.
struct Seeds {
  uint64_t node = 0, run = 0;
};

struct PlannedKernel {
  KernelInit init;  // its attrs and constant values point at the caller's
  std::unique_ptr<Kernel> kernel;
};

// Infers the output types and creates the kernel for `device` (impl "" = the
// registry's choice). Creation touches no device memory, so this runs
// without a GPU too. `constant[i]`: input i is a plan-time value;
// `training`: KernelInit::training (BatchNormalization's batch statistics,
// Dropout's drops); `seeds.node`: KernelInit::seed. `output_dtypes`: the
// form cast fusion gives a kernel (KernelEntry::fuses_casts), whose tensors
// a graph node cannot have: the outputs are inferred for the fp32 node it was
// before the fusion (2-byte float inputs seen as fp32), then output o takes
// output_dtypes[o] where given and not kUndefined (BatchNormalization's fp32
// Y beside its 2-byte X). `layouts`: the specs marked channels-last.
inline StatusOr<PlannedKernel> PlanKernel(DeviceKind device, const std::string& impl, ir::OpKind op,
                                          const ir::Attributes& attrs, const std::vector<ir::Tensor>& inputs,
                                          size_t num_outputs, const std::vector<bool>& constant = {},
                                          bool training = true, Seeds seeds = {},
                                          const std::vector<ir::DType>& output_dtypes = {}, Layouts layouts = {}) {
  auto is_constant = [&](size_t i) { return i < constant.size() && constant[i]; };
  ir::InferContext ic;
  ic.attrs = &attrs;
  ic.opset = 21;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Tensor& t = inputs[i];
    const bool widened = !output_dtypes.empty() && (t.dtype() == ir::DType::kFloat16 || t.dtype() == ir::DType::kBFloat16);
    ic.inputs.push_back(t.empty() ? ir::TensorType{}
                                  : ir::TensorType::Of(widened ? ir::DType::kFloat32 : t.dtype(), t.dims()));
    ic.values.push_back(is_constant(i) ? &t : nullptr);
  }
  ic.outputs.resize(num_outputs);
  ic.output_values.resize(num_outputs);
  // The optimizer-step ops never appear in a graph, and their shape rules
  // (ir/infer/optimizer.cc) predate the low copies of ops.def's groups: their
  // outputs are given here (GradCheck: float64 [k, 2]; the steps: none).
  if (op == ir::OpKind::kGradCheck) {
    ic.outputs[0] = ir::TensorType::Of(ir::DType::kFloat64, std::vector<int64_t>{
                                                                static_cast<int64_t>(inputs.size()) - 1, 2});
  } else if (op != ir::OpKind::kSgdStep && op != ir::OpKind::kAdamStep) {
    AMP_RETURN_IF_ERROR(ir::Schema(op).infer(ic));
  }

  PlannedKernel p;
  KernelInit& init = p.init;
  init.op = op;
  init.attrs = &attrs;
  init.node_name = "test";
  init.device = device;
  init.training = training;
  init.seed = seeds.node;
  init.threads = 2;
  for (size_t i = 0; i < inputs.size(); ++i) {
    TensorSpec s;
    if (!inputs[i].empty()) s = TensorSpec{inputs[i].dtype(), inputs[i].dims(), nullptr};
    if (is_constant(i)) s.value = &inputs[i];
    s.channels_last = Layouts::Bit(layouts.inputs, i) && s.dims.size() == 4;
    init.inputs.push_back(s);
  }
  for (const ir::TensorType& t : ic.outputs) {
    if (!t.has_shape || !t.shape.is_static()) return Internal("output type ", t.ToString(), " is not static");
    const size_t o = init.outputs.size();
    const bool given = o < output_dtypes.size() && output_dtypes[o] != ir::DType::kUndefined;
    init.outputs.push_back(TensorSpec{given ? output_dtypes[o] : t.dtype, t.shape.static_dims(), nullptr});
    init.outputs.back().channels_last = Layouts::Bit(layouts.outputs, o) && init.outputs.back().dims.size() == 4;
  }
  AMP_ASSIGN_OR_RETURN(p.kernel, Registry::Global().Create(init, impl));
  return p;
}

// PlanKernel for `dev`, then one run there with the inputs uploaded and the
// outputs and inputs downloaded. `unused[o]`: output o gets data == nullptr
// (as the executor passes for an output nobody reads, to kernels whose entry
// sets skips_unused_outputs) and comes back empty. `seeds.run`: the run's
// KernelContext::seed; `output_dtypes` and `layouts` as for PlanKernel (the
// channels-last tensors travel in NHWC order and come back in NCHW order).
inline StatusOr<DeviceResult> RunOnDevice(Device& dev, const std::string& impl, ir::OpKind op,
                                          const ir::Attributes& attrs, const std::vector<ir::Tensor>& inputs,
                                          size_t num_outputs, const std::vector<bool>& constant = {},
                                          bool training = true, const std::vector<bool>& unused = {},
                                          Seeds seeds = {}, const std::vector<ir::DType>& output_dtypes = {},
                                          Layouts layouts = {}) {
  AMP_ASSIGN_OR_RETURN(PlannedKernel planned, PlanKernel(dev.kind(), impl, op, attrs, inputs, num_outputs, constant,
                                                         training, seeds, output_dtypes, layouts));
  const KernelInit& init = planned.init;
  Kernel* kernel = planned.kernel.get();
  AMP_ASSIGN_OR_RETURN(RunContext run, dev.NewRunContext(2));

  std::vector<DeviceBuffer> buffers;  // keeps the device memory alive until the copies back are done
  auto upload = [&](const ir::Tensor& t) -> StatusOr<ir::TensorView> {
    AMP_ASSIGN_OR_RETURN(DeviceBuffer buf, dev.Allocate(t.nbytes()));
    AMP_RETURN_IF_ERROR(dev.CopyToDevice(buf.get(), t.raw(), t.nbytes(), run));
    buffers.push_back(buf);
    return ir::TensorView{buf.get(), t.dtype(), t.dims()};
  };
  KernelContext ctx;
  std::vector<ir::Tensor> nhwc_inputs(inputs.size());  // host sources of channels-last uploads
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Tensor& t = inputs[i];
    if (t.empty()) {
      ctx.inputs.push_back(ir::TensorView{});
      continue;
    }
    if (init.inputs[i].channels_last) nhwc_inputs[i] = Relayout(t, true);
    AMP_ASSIGN_OR_RETURN(ir::TensorView v, upload(init.inputs[i].channels_last ? nhwc_inputs[i] : t));
    ctx.inputs.push_back(v);
  }
  std::vector<ir::Tensor> staged;  // host sources of the output uploads, valid until Synchronize
  auto is_unused = [&](size_t o) { return o < unused.size() && unused[o]; };
  for (const TensorSpec& s : init.outputs) {
    if (is_unused(ctx.outputs.size())) {
      ctx.outputs.push_back(ir::TensorView{nullptr, s.dtype, s.dims});
      staged.emplace_back();
      continue;
    }
    AMP_ASSIGN_OR_RETURN(ir::Tensor zeros, ir::Tensor::Zeros(s.dtype, s.dims));
    AMP_ASSIGN_OR_RETURN(ir::TensorView v, upload(zeros));
    ctx.outputs.push_back(v);
    staged.push_back(zeros);
  }
  DeviceBuffer scratch;
  if (kernel->scratch_bytes() > 0) {
    AMP_ASSIGN_OR_RETURN(scratch, dev.Allocate(kernel->scratch_bytes()));
    ctx.scratch = scratch.get();
  }
  ctx.run = &run;
  ctx.seed = seeds.run;
  AMP_RETURN_IF_ERROR(kernel->Run(ctx));

  DeviceResult result;
  for (size_t o = 0; o < init.outputs.size(); ++o) {
    if (is_unused(o)) {
      result.outputs.emplace_back();
      continue;
    }
    AMP_ASSIGN_OR_RETURN(ir::Tensor out, ir::Tensor::Zeros(init.outputs[o].dtype, init.outputs[o].dims));
    AMP_RETURN_IF_ERROR(dev.CopyToHost(out.raw(), ctx.outputs[o].data, out.nbytes(), run));
    result.outputs.push_back(out);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].empty()) {
      result.inputs.emplace_back();
      continue;
    }
    AMP_ASSIGN_OR_RETURN(ir::Tensor after, ir::Tensor::Zeros(inputs[i].dtype(), inputs[i].dims()));
    AMP_RETURN_IF_ERROR(dev.CopyToHost(after.raw(), ctx.inputs[i].data, after.nbytes(), run));
    result.inputs.push_back(after);
  }
  AMP_RETURN_IF_ERROR(dev.Synchronize(run));
  for (size_t o = 0; o < result.outputs.size(); ++o)
    if (init.outputs[o].channels_last && !result.outputs[o].empty()) result.outputs[o] = Relayout(result.outputs[o], false);
  for (size_t i = 0; i < result.inputs.size(); ++i)
    if (init.inputs[i].channels_last && !result.inputs[i].empty()) result.inputs[i] = Relayout(result.inputs[i], false);
  return result;
}

// ||a - b||_2 / max(||b||_2, 1e-30) in double; infinity when the sizes
// differ or one has a NaN where the other has not.
inline double NormalizedError(const ir::Tensor& a, const ir::Tensor& b) {
  if (a.num_elements() != b.num_elements()) return INFINITY;
  double diff = 0.0, norm = 0.0;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    const double x = a.GetAsDouble(i), y = b.GetAsDouble(i);
    if (std::isnan(x) != std::isnan(y)) return INFINITY;
    if (std::isnan(x)) continue;
    if (std::isinf(x) || std::isinf(y)) {
      if (x != y) return INFINITY;
      continue;
    }
    diff += (x - y) * (x - y);
    norm += y * y;
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
}

}  // namespace amptrain::kernels::devtest
