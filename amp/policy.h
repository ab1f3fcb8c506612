// The AMP precision policy: data only. It answers "which dtype does this node
// run in, and why" — the passes in amp/passes.h make the graph agree.
//
// Levels (docs: ../shared/docs/PRECISION.md):
//   O0  everything fp32
//   O1  allowlist ops (PrecisionClass::kAllow) in low precision, follow ops in
//       the widest float input type, denylist ops fp32; a follow op that
//       commutes with rounding (Relu, MaxPool, layout ops) runs low when all
//       its readers compute low (kLowReaders)
//   O2  everything low precision except the denylist (BatchNormalization
//       statistics/params stay fp32; LayerNormalization at opset >= 17 and
//       Erf run low, LayerNormalization with fp32 statistics: stash_type=1;
//       docs/PRECISION_CHOICES.md), and except islands of non-allowlist ops
//       whose low precision would only round (kRoundingOnly)
//   O3  everything low precision, BatchNormalization included, weights stored
//       in low precision
// Custom policies (MindSpore's custom_mixed_precision / Cell.to_float):
// op-type lists move ops into the allow or deny class; node overrides (exact
// name or regex) beat the lists; per-input-slot pins keep one input of a node
// in a given dtype. Structural pins (Resize scales/sizes, Dropout ratio,
// integer shape/index inputs) cannot be overridden.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/graph.h"
#include "ir/status.h"

namespace amptrain::amp {

enum class Level { kO0, kO1, kO2, kO3 };
StatusOr<Level> ParseLevel(const std::string& name);  // "O0".."O3" (case-insensitive); error names the bad level
const char* LevelName(Level level);

// Why a node got its dtype (the report shows it).
enum class Reason {
  kLevelAllow,        // allowlist op at O1+
  kLevelDeny,         // denylist op
  kLevelAll,          // O2/O3: everything low except the denylist
  kLevelFp32,         // O0
  kCustomAllow,       // in the user's low-precision op list
  kCustomDeny,        // in the user's fp32 op list
  kNodeOverride,      // node name / regex override
  kFollow,            // follow op: widest float input
  kNotFloat,          // no float computation (Shape, integer ops)
  kUnsupportedLow,    // no kernel/ONNX support for this op in the low dtype
  kRoundingOnly,      // O2: low would only round (no producer/consumer computes low): fp32
  kLowReaders,        // O1: a follow op that commutes with rounding, every reader low: low
  kFp32Inside,        // O1/O2: a denylist op computed in fp32 inside its low kernel, low in and out
};
const char* ReasonName(Reason r);

struct NodeOverride {
  std::string pattern;       // exact node name, or a regex when `is_regex`
  bool is_regex = false;
  ir::DType dtype = ir::DType::kFloat32;   // kFloat32 or the policy's low dtype
};

struct SlotPin {
  std::string node_pattern;  // exact name or regex (is_regex)
  bool is_regex = false;
  int input = 0;
  ir::DType dtype = ir::DType::kFloat32;
};

struct Policy {
  Level level = Level::kO1;
  ir::DType low = ir::DType::kFloat16;      // kFloat16 or kBFloat16
  std::set<std::string> low_ops;             // ONNX op types forced to low precision
  std::set<std::string> fp32_ops;            // ONNX op types forced to fp32
  std::vector<NodeOverride> node_overrides;  // later entries win over earlier ones
  std::vector<SlotPin> pins;
  bool keep_io_types = true;                 // graph inputs/outputs keep their dtypes

  // Checks op names against the op table, compiles regexes, checks dtypes:
  // each problem is an error naming it ("unknown op 'Convv' in the fp16 op list").
  Status Validate() const;
};

// A policy from a JSON or YAML file (by content, not extension). Keys:
//   level: O0|O1|O2|O3, dtype: fp16|bf16, fp16_ops: [..], fp32_ops: [..],
//   fp32_nodes: [names or "re:REGEX"], fp16_nodes: [...],
//   pins: [{node: NAME|"re:REGEX", input: N, dtype: fp32|fp16|bf16}],
//   keep_io_types: true|false
// Unknown keys are an error naming the key.
StatusOr<Policy> LoadPolicyFile(const std::string& path);
StatusOr<Policy> ParsePolicyText(const std::string& text, const std::string& source_name);

// Per node: the dtype it computes in and why (assignment pass output).
struct Decision {
  ir::DType dtype = ir::DType::kFloat32;
  Reason reason = Reason::kLevelFp32;
};

}  // namespace amptrain::amp
