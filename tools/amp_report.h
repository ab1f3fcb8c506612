// AMP pieces shared by `amptrain convert` and `amptrain inspect --amp`: the
// policy flags, the policy they build, and the report as JSON and as text.
//
// Flags (both commands):
//   --amp O0|O1|O2|O3   level (convert's default is O2, see tools/convert.cc)
//   --dtype fp16|bf16   the low-precision type (default fp16)
//   --fp16-ops A,B      op types forced to the low type
//   --fp32-ops A,B      op types forced to fp32
//   --fp16-nodes N,...  node overrides to the low type: exact name or re:REGEX
//   --fp32-nodes N,...  node overrides to fp32: exact name or re:REGEX
//   --policy FILE       JSON or YAML policy (amp::LoadPolicyFile)
//   --keep-io-types / --no-keep-io-types
// Flags override the policy file: --amp, --dtype and the io flag replace the
// file's value; an op named in a flag list is added to that list and removed
// from the opposite one; node flags are appended after the file's overrides
// (later wins), --fp16-nodes after --fp32-nodes, so a node named in both runs
// in the low type (the policy file's order too). A regex containing ',' must come from the policy file (flags split
// on ','). When --dtype changes the low type, the file's low-precision node
// overrides follow it.
#pragma once

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "amp/passes.h"
#include "amp/policy.h"
#include "executor/train/loss_scaler.h"

namespace amptrain::tools {

struct AmpFlags {
  std::string level;   // "" when not given
  std::string dtype;   // "" when not given
  std::vector<std::string> fp16_ops, fp32_ops, fp16_nodes, fp32_nodes;
  std::string policy_file;
  bool keep_io_types = false, no_keep_io_types = false;

  // True when any flag above was given.
  bool any() const;
};

// Registers the flags above on `cmd`; `level_help` describes --amp's default.
void AddAmpFlags(CLI::App* cmd, AmpFlags& flags, const std::string& level_help);

// The policy the flags describe (file first, flags on top), validated: an
// unknown op, a bad regex, an unknown level or dtype is an error naming it.
StatusOr<amp::Policy> BuildPolicy(const AmpFlags& flags, amp::Level default_level);

// --loss-scale for the policy's low type: auto (dynamic for fp16 at O1/O2;
// none for bf16, fp32 and O3), dynamic (PRECISION.md's defaults), none, or a
// number (static); nullopt = no scaling.
StatusOr<std::optional<executor::train::LossScalerConfig>> LossScaling(const std::string& flag,
                                                                       const amp::Policy& policy);

// JSON keys (stable): level, dtype, keep_io_types,
//   nodes [{name, op, dtype, reason}], nodes_per_dtype {dtype: count},
//   casts {original, inserted, removed, final},
//   weight_bytes {before, after}, clamped {values, initializers [...]},
//   activation_bytes {fp32, after} (estimate at batch 1),
//   unmatched_patterns ["re:conv.*", "pin fc input 2"] (policy entries matching no node),
//   this_cpu: one line on whether this CPU computes the low type natively
//   (kernels/cpu/cpu_info.h); information for running here, not a refusal.
nlohmann::json AmpReportJson(const amp::Report& report, const amp::Policy& policy);

// One warning per policy node override or pin that matched no node (a typo
// in a node name would otherwise change nothing, silently).
void WarnUnmatchedPatterns(const amp::Report& report);

// "float16" -> count over report.nodes.
std::map<std::string, int> NodesPerDType(const amp::Report& report);

// A few lines: nodes per dtype, casts, weight bytes before -> after, clamped values.
void PrintAmpSummary(const amp::Report& report, std::ostream& out);

}  // namespace amptrain::tools
