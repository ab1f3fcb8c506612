// Helpers shared by the AMP passes; not part of the public API.
//
// Slot roles: every input slot of a node either carries the node's compute
// dtype (kTied: X, W, B of Conv; both operands of Add; Clip min/max follow
// the data input), must keep the dtype it had in the original model
// (kStructural: shape/index/axes inputs, Resize roi/scales/sizes, Dropout
// ratio/training_mode), or is independent of the compute dtype (kFree: the
// input of Cast and Shape, the exponent of Pow).
#pragma once

#include <string>
#include <vector>

#include "amp/name_pattern.h"
#include "amp/passes.h"
#include "amp/policy.h"
#include "ir/graph.h"

namespace amptrain::amp::internal {

enum class SlotRole { kTied, kStructural, kFree };
SlotRole RoleOf(ir::OpKind op, size_t slot);

// BatchNormalization's scale, B, mean and var (slots 1-4) stay fp32 while X
// and Y go low, below O3 (Apex's keep_batchnorm_fp32), where ONNX lets them
// differ from X (opset >= 15: type constraints T, T1, T2) or where the
// capability has no opset limits (training: the kernels take mixed types).
bool KeepsBnParamsFp32(const Policy& policy, ir::OpKind op, size_t slot, int64_t opset, const Capability& cap);

// fp32, fp16, bf16: the types AMP moves values between. float64 values and
// the nodes computing in float64 are left alone.
inline bool IsAmpFloat(ir::DType t) {
  return t == ir::DType::kFloat32 || t == ir::DType::kFloat16 || t == ir::DType::kBFloat16;
}

// Whether the ONNX schema of `op` at `opset` accepts `low` for its float
// type constraint (fp16: every op of ir/ops.def since it exists; bf16: see
// the table in plan.cc). IR-only ops (no ONNX type) are always accepted.
// The opset table applies when cap.opset_limits; cap.kernels, when set, must
// accept (op, low) as well.
bool SupportsLow(ir::OpKind op, ir::DType low, int64_t opset, const Capability& cap);

// A policy's node overrides and pins with their patterns compiled once.
// Compile() is the policy's whole validation (Policy::Validate calls it):
// the planner compiles once and asks these for every node.
struct CompiledPolicy {
  struct Override { NamePattern pattern; ir::DType dtype; std::string written; };
  struct Pin { NamePattern pattern; int input; ir::DType dtype; std::string written; };
  std::vector<Override> overrides;
  std::vector<Pin> pins;

  static StatusOr<CompiledPolicy> Compile(const Policy& policy);
  // The overrides and pins matching no node of `graph`, as written
  // ("re:conv.*", "pin fc1 input 2").
  std::vector<std::string> Unmatched(const ir::Graph& graph) const;
  // The last matching node override, or nullopt.
  std::optional<ir::DType> OverrideFor(const std::string& node_name) const;
  // The last matching pin of input `slot`, or nullopt.
  std::optional<ir::DType> PinFor(const std::string& node_name, size_t slot) const;
};

// The dtype a Cast node converts to (its `to` attribute); error naming the node.
StatusOr<ir::DType> CastTarget(const ir::Node& cast);
// A new Cast node of `v` to `to`; its output is typed (v's shape, dtype `to`).
ir::Value AddCast(ir::Graph& graph, ir::Value v, ir::DType to);
// Short dtype names for value names: "fp16", "bf16", "fp32".
const char* ShortName(ir::DType t);
// Number of live Cast nodes.
int CountCasts(const ir::Graph& graph);
// Re-runs `node`'s dtype rule and takes only the output dtypes from it, so
// shapes the importer knew (from value_info) are not lost.
Status RefreshOutputDTypes(ir::Graph& graph, ir::Node* node);

}  // namespace amptrain::amp::internal
