#include "tools/amp_report.h"

#include <ostream>

#include <spdlog/spdlog.h>

#include "kernels/cpu/cpu_info.h"
#include "tools/commands.h"

namespace amptrain::tools {

namespace {

using nlohmann::json;

StatusOr<ir::DType> ParseLowDType(const std::string& name) {
  ir::DType t = ir::ParseDType(name);
  if (!ir::IsLowPrecision(t))
    return InvalidArgument("unknown low-precision dtype '", name, "' (use fp16 or bf16)");
  return t;
}

void AppendNodes(const std::vector<std::string>& specs, ir::DType dtype, std::vector<amp::NodeOverride>& out) {
  for (const std::string& spec : specs) {
    amp::NodeOverride o;
    o.is_regex = spec.rfind("re:", 0) == 0;
    o.pattern = o.is_regex ? spec.substr(3) : spec;
    o.dtype = dtype;
    out.push_back(o);
  }
}

}  // namespace

bool AmpFlags::any() const {
  return !level.empty() || !dtype.empty() || !fp16_ops.empty() || !fp32_ops.empty() || !fp16_nodes.empty() ||
         !fp32_nodes.empty() || !policy_file.empty() || keep_io_types || no_keep_io_types;
}

void AddAmpFlags(CLI::App* cmd, AmpFlags& flags, const std::string& level_help) {
  cmd->add_option("--amp", flags.level, "Precision level O0|O1|O2|O3 (" + level_help + ")");
  cmd->add_option("--dtype", flags.dtype, "Low-precision type: fp16 (default) or bf16");
  cmd->add_option("--fp16-ops", flags.fp16_ops, "Op types forced to the low type (A,B,...)")->delimiter(',');
  cmd->add_option("--fp32-ops", flags.fp32_ops, "Op types forced to fp32 (A,B,...)")->delimiter(',');
  cmd->add_option("--fp16-nodes", flags.fp16_nodes, "Nodes forced to the low type: NAME or re:REGEX, ... (wins over --fp32-nodes)")
      ->delimiter(',');
  cmd->add_option("--fp32-nodes", flags.fp32_nodes, "Nodes forced to fp32: NAME or re:REGEX, ...")
      ->delimiter(',');
  cmd->add_option("--policy", flags.policy_file, "Policy file (JSON or YAML); flags override it");
  CLI::Option* keep = cmd->add_flag("--keep-io-types", flags.keep_io_types,
                                    "Graph inputs/outputs keep their dtypes (default)");
  cmd->add_flag("--no-keep-io-types", flags.no_keep_io_types, "Convert graph inputs/outputs too")->excludes(keep);
}

StatusOr<amp::Policy> BuildPolicy(const AmpFlags& flags, amp::Level default_level) {
  amp::Policy policy;
  policy.level = default_level;
  if (!flags.policy_file.empty()) {
    AMP_ASSIGN_OR_RETURN(policy, amp::LoadPolicyFile(flags.policy_file));
  }
  if (!flags.level.empty()) {
    AMP_ASSIGN_OR_RETURN(policy.level, amp::ParseLevel(flags.level));
  }
  if (!flags.dtype.empty()) {
    AMP_ASSIGN_OR_RETURN(ir::DType low, ParseLowDType(flags.dtype));
    for (amp::NodeOverride& o : policy.node_overrides)
      if (o.dtype == policy.low) o.dtype = low;
    policy.low = low;
  }
  for (const std::string& op : flags.fp16_ops) {
    policy.low_ops.insert(op);
    policy.fp32_ops.erase(op);
  }
  for (const std::string& op : flags.fp32_ops) {
    policy.fp32_ops.insert(op);
    policy.low_ops.erase(op);
  }
  AppendNodes(flags.fp32_nodes, ir::DType::kFloat32, policy.node_overrides);
  AppendNodes(flags.fp16_nodes, policy.low, policy.node_overrides);
  if (flags.keep_io_types) policy.keep_io_types = true;
  if (flags.no_keep_io_types) policy.keep_io_types = false;
  AMP_RETURN_IF_ERROR(policy.Validate());
  return policy;
}

std::map<std::string, int> NodesPerDType(const amp::Report& report) {
  std::map<std::string, int> counts;
  for (const amp::NodeReport& n : report.nodes) ++counts[std::string(ir::DTypeName(n.dtype))];
  return counts;
}

json AmpReportJson(const amp::Report& report, const amp::Policy& policy) {
  json nodes = json::array();
  for (const amp::NodeReport& n : report.nodes) {
    json node = {{"name", n.name}, {"op", n.op}, {"dtype", ir::DTypeName(n.dtype)}, {"reason", amp::ReasonName(n.reason)}};
    if (n.reason == amp::Reason::kUnsupportedLow && report.opset != 0) node["low_from_opset"] = n.low_from_opset;
    nodes.push_back(std::move(node));
  }
  return {{"level", amp::LevelName(report.level)},
          {"dtype", ir::DTypeName(report.low)},
          {"opset", report.opset},
          {"keep_io_types", policy.keep_io_types},
          {"nodes", nodes},
          {"nodes_per_dtype", NodesPerDType(report)},
          {"casts",
           {{"original", report.casts_original},
            {"inserted", report.casts_inserted},
            {"removed", report.casts_removed},
            {"final", report.casts_final}}},
          {"weight_bytes", {{"before", report.weight_bytes_before}, {"after", report.weight_bytes_after}}},
          {"clamped", {{"values", report.clamped_values}, {"initializers", report.clamped_initializers}}},
          {"activation_bytes", {{"fp32", report.activation_bytes_fp32}, {"after", report.activation_bytes_after}}},
          {"unmatched_patterns", report.unmatched_patterns},
          {"this_cpu", kernels::cpu::LowPrecisionNote(report.low)}};
}

void WarnUnmatchedPatterns(const amp::Report& report) {
  for (const std::string& p : report.unmatched_patterns)
    spdlog::warn("the policy's node entry '{}' matches no node of the model: it has no effect", p);
}

namespace {

// The nodes kept fp32 only because the target opset's ONNX types lack the
// low type, and how to lift that: "fp32 for opset 17: 53 Conv, 1 MaxPool
// (bfloat16 from opset 22: convert --opset 22)". Empty when there are none.
std::string OpsetLimitNote(const amp::Report& report) {
  if (report.opset == 0) return "";
  std::map<std::string, int> lifted, never;  // op -> nodes
  int64_t needed = 0;
  for (const amp::NodeReport& n : report.nodes) {
    if (n.reason != amp::Reason::kUnsupportedLow) continue;
    ++(n.low_from_opset != 0 ? lifted : never)[n.op];
    needed = std::max(needed, n.low_from_opset);
  }
  auto list = [](const std::map<std::string, int>& ops) {
    std::string s;
    for (const auto& [op, count] : ops) s += StrCat(s.empty() ? "" : ", ", count, " ", op);
    return s;
  };
  const std::string_view low = ir::DTypeName(report.low);
  std::string note;
  if (!lifted.empty())
    note = StrCat("fp32 for opset ", report.opset, ": ", list(lifted), " (", low, " from opset ", needed,
                  ": convert --opset ", needed, ")");
  if (!never.empty())
    note += StrCat(note.empty() ? "" : "; ", "fp32 in every opset: ", list(never), " (no ", low, " in their ONNX types)");
  return note;
}

}  // namespace

void PrintAmpSummary(const amp::Report& report, std::ostream& out) {
  out << "amp         " << amp::LevelName(report.level) << ", low type " << ir::DTypeName(report.low) << "\n"
      << "nodes      ";
  for (const auto& [dtype, count] : NodesPerDType(report)) out << " " << count << " " << dtype;
  if (std::string note = OpsetLimitNote(report); !note.empty()) out << "\nopset       " << note;
  out << "\ncasts       " << report.casts_final << " (" << report.casts_original << " in the model, "
      << report.casts_inserted << " inserted, " << report.casts_removed << " removed)\n"
      << "weights     " << HumanBytes(static_cast<double>(report.weight_bytes_before)) << " -> "
      << HumanBytes(static_cast<double>(report.weight_bytes_after)) << "\n"
      << "clamped     " << report.clamped_values << " values in " << report.clamped_initializers.size()
      << " initializers\n"
      << "activations " << HumanBytes(static_cast<double>(report.activation_bytes_fp32)) << " -> "
      << HumanBytes(static_cast<double>(report.activation_bytes_after)) << " (estimate, batch 1)\n";
  if (std::string note = kernels::cpu::LowPrecisionNote(report.low); !note.empty()) out << "this cpu    " << note << "\n";
}

StatusOr<std::optional<executor::train::LossScalerConfig>> LossScaling(const std::string& flag,
                                                                       const amp::Policy& policy) {
  executor::train::LossScalerConfig c;
  const bool low = policy.level != amp::Level::kO0;
  if (flag == "auto") {  // PRECISION.md: O3 has no loss scale by default
    if (low && policy.low == ir::DType::kFloat16 && policy.level != amp::Level::kO3) return std::optional(c);
    return std::optional<executor::train::LossScalerConfig>();
  }
  if (flag == "dynamic") return std::optional(c);
  if (flag == "none") return std::optional<executor::train::LossScalerConfig>();
  std::optional<float> v = ParseStaticLossScale(flag);
  if (!v) return InvalidArgument("--loss-scale must be auto, dynamic, none or a finite number > 0, got '", flag, "'");
  c.dynamic = false;
  c.init_scale = *v;
  return std::optional(c);
}

}  // namespace amptrain::tools
