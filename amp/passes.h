// The AMP passes: precision planning (a pure function, amp/plan.h), the cast
// pass that applies the plan, cast elimination, initializer conversion. Each
// pass is `StatusOr<bool> Run(Graph&)` (ir::Pass); Convert() plans, runs them
// in order with the verifier after each one, and returns the report.
//
//   before (O1 fp16):  x:f32 ─ Conv(W:f32) ─ Relu ─ Softmax ─ y:f32
//   after:             x ─ Cast(f16) ─ Conv(Cast(W→f16)) ─ Relu(f16) ─ Cast(f32) ─ Softmax ─ y
//
// Convert() runs the initializer pass when options.convert_initializers is
// set (export: any level) or at O3 (weights stored low); otherwise weights
// stay fp32 masters read through one Cast each, and only Constant nodes
// (never parameters) are stored low, so that training rounds them as the
// export does (fp16's clamping: a Clip eps of 1e-12 must not become 0).
// Graphs with If/Loop/Scan never get here: the importer refuses them
// (subgraphs are not in the IR).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "amp/plan.h"
#include "amp/policy.h"
#include "ir/pass.h"

namespace amptrain::amp {

// What the conversion did, for `amptrain convert --report` and
// `amptrain inspect --amp` (serialized to JSON by the tools).
struct NodeReport {
  std::string name, op;
  ir::DType dtype;
  Reason reason;
  // kUnsupportedLow because of the opset alone (the device, if asked, has
  // the kernel): the first opset whose ONNX schema takes the low type, 0
  // when none does. 0 for every other node.
  int64_t low_from_opset = 0;
};
struct Report {
  Level level;
  ir::DType low;
  int64_t opset = 0;  // the opset whose ONNX type constraints applied; 0: none did (training)
  std::vector<NodeReport> nodes;            // every compute node of the original graph
  int casts_inserted = 0, casts_removed = 0, casts_final = 0, casts_original = 0;
  int64_t weight_bytes_before = 0, weight_bytes_after = 0;
  int64_t clamped_values = 0;               // initializer values clamped to the fp16 range
  std::vector<std::string> clamped_initializers;
  std::vector<std::string> unmatched_patterns;  // policy overrides/pins that matched no node (PrecisionPlan::unmatched)
  int64_t activation_bytes_fp32 = 0, activation_bytes_after = 0;  // estimate at batch 1
};

// What may run in low precision (PRECISION.md, "Capability"), asked by the
// assignment and cast passes. Export asks the model opset's ONNX type
// constraints (bf16 Conv only from opset 22, BatchNormalization with fp32
// params from 15); training asks the kernels of the device that will run it
// and is never capped by the opset; training that is also exported asks both.
struct Capability {
  bool opset_limits = true;  // the ONNX type constraints of the model's opset apply
  // When set, also required: the device has a kernel for (op, low dtype).
  std::function<bool(ir::OpKind, ir::DType)> kernels;
  // Denylist ops that may take and give low precision without a Cast pair
  // (plan rule 8): the target's low kernel widens the inputs, computes in
  // fp32 or wider and rounds the result once, as the Cast pair around the
  // fp32 op would; training also needs a gradient that reads none of the
  // op's values. nullptr: none.
  bool (*computes_fp32_inside)(ir::OpKind) = &OnnxRuntimeComputesFp32Inside;

  static Capability Export() { return {}; }
  static Capability Training(std::function<bool(ir::OpKind, ir::DType)> kernels) {
    return Capability{false, std::move(kernels), &TrainingComputesFp32Inside};
  }
  // ONNX Runtime's CPU provider (an export's target): ReduceMean, ReduceSum,
  // ReduceL2, Softmax and LogSoftmax (its fp16 results are the exact values rounded
  // once; tests/tools/ort_fp32_inside.py measures it in the e2e tests).
  static bool OnnxRuntimeComputesFp32Inside(ir::OpKind op);
  // amptrain's kernels and gradients: ReduceMean and ReduceSum (accumulated
  // in double; gradient: the output gradient spread over the reduced axes),
  // and BatchNormalization (fp32 statistics and parameters; its low kernels
  // and gradient widen X and dY exactly and round Y and dX once: ResNet-18's
  // O1 gradients are bitwise those of the Cast pair around an fp32 BN).
  static bool TrainingComputesFp32Inside(ir::OpKind op);
};

struct ConvertOptions {
  // ir::Verify after every pass (tests, `amptrain -v convert`); the final
  // CheckDTypeConsistency runs either way.
  bool verify_each_pass = true;
  // Convert initializers for export (O2/O3 store weights low where every
  // consumer is low). Training keeps fp32 masters (false) except at O3;
  // its Constant nodes are converted either way.
  bool convert_initializers = true;
  // Export only (never training, whose initializers are parameters): an
  // fp32 initializer or Constant read both by fp32 nodes and through a Cast
  // to the low type gets a second, low copy of itself for the low readers
  // instead of the Cast, when that copy is at most kMaxLowCopyBytes. The
  // TorchScript exporter shares one initializer between every parameter of
  // equal value (MaxViT's zero biases feed Conv, Add and fp32
  // BatchNormalization alike); a runtime that folds the Cast at load holds
  // the same two copies, so only larger ones keep the Cast, to keep the
  // file small.
  bool low_copies_of_shared = true;
  Capability capability;
};

// The first ONNX opset whose schema of `op` takes `low` (fp16 or bf16) for
// its float type constraint; 0 when none does (to onnx 1.23's opset 28).
// IR-only ops (no ONNX type): 1.
int64_t FirstOpsetWithLow(ir::OpKind op, ir::DType low);

// Runs the AMP passes on `graph` (in place) and returns the report.
StatusOr<Report> Convert(ir::Graph& graph, const Policy& policy, const ConvertOptions& options = {});

// Convert() on a graph already planned: `plan` must come from PlanPrecision
// on this graph with this policy (the trainer plans once and hashes the plan).
StatusOr<Report> Convert(ir::Graph& graph, const Policy& policy, const PrecisionPlan& plan,
                         const ConvertOptions& options = {});

// The individual passes, for tests (planning and the cast pass: amp/plan.h).
std::unique_ptr<ir::Pass> MakeEliminateCastsPass();
// The largest low copy ConvertOptions::low_copies_of_shared makes.
inline constexpr int64_t kMaxLowCopyBytes = int64_t{4} << 20;
// `constants_only`: Constant nodes only, never initializers (the weights).
// `low_copies_of_shared`: ConvertOptions::low_copies_of_shared.
std::unique_ptr<ir::Pass> MakeConvertInitializersPass(const Policy& policy, Report* report,
                                                      bool constants_only = false, bool low_copies_of_shared = false);

// Every Cast's `to` equals its output dtype, and re-running every node's
// dtype rule (on a clone) gives the dtypes the graph records: the check that
// an exported model's value_info and Cast attributes agree. The error names
// the node, the value and both dtypes.
Status CheckDTypeConsistency(const ir::Graph& graph);
// Bytes of the float tensors held by initializers and Constant nodes.
int64_t WeightBytes(const ir::Graph& graph);
// Bytes of every graph input and node output at batch 1: symbolic dims count
// as 1, values of unknown rank count 0. Initializers and Constants excluded.
int64_t ActivationBytes(const ir::Graph& graph);

}  // namespace amptrain::amp
