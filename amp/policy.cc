// Levels, reasons, Policy::Validate and the compiled policy (patterns: amp/name_pattern.cc).
#include <algorithm>
#include <cctype>

#include "amp/amp_internal.h"
#include "amp/policy.h"

namespace amptrain::amp {

StatusOr<Level> ParseLevel(const std::string& name) {
  std::string up = name;
  std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return std::toupper(c); });
  if (up == "O0") return Level::kO0;
  if (up == "O1") return Level::kO1;
  if (up == "O2") return Level::kO2;
  if (up == "O3") return Level::kO3;
  return InvalidArgument("unknown AMP level '", name, "': expected O0, O1, O2 or O3");
}

const char* LevelName(Level level) {
  switch (level) {
    case Level::kO0: return "O0";
    case Level::kO1: return "O1";
    case Level::kO2: return "O2";
    case Level::kO3: return "O3";
  }
  return "?";
}

const char* ReasonName(Reason r) {
  switch (r) {
    case Reason::kLevelAllow: return "level_allow";
    case Reason::kLevelDeny: return "level_deny";
    case Reason::kLevelAll: return "level_all";
    case Reason::kLevelFp32: return "level_fp32";
    case Reason::kCustomAllow: return "custom_allow";
    case Reason::kCustomDeny: return "custom_deny";
    case Reason::kNodeOverride: return "node_override";
    case Reason::kFollow: return "follow";
    case Reason::kNotFloat: return "not_float";
    case Reason::kUnsupportedLow: return "unsupported_low";
    case Reason::kRoundingOnly: return "rounding_only";
    case Reason::kLowReaders: return "low_readers";
    case Reason::kFp32Inside: return "fp32_inside";
  }
  return "?";
}

namespace {

// An op list entry must name an ONNX op of the op table that computes in floats.
Status CheckOpList(const std::set<std::string>& ops, const char* list) {
  for (const std::string& op : ops) {
    std::optional<ir::OpKind> kind = ir::FindOnnxOp(op);
    if (!kind) return InvalidArgument("unknown op '", op, "' in the ", list, " op list");
    if (ir::Schema(*kind).precision == ir::PrecisionClass::kNone)
      return InvalidArgument("op '", op, "' in the ", list, " op list has no float computation to convert");
  }
  return Status::Ok();
}

}  // namespace

Status Policy::Validate() const { return internal::CompiledPolicy::Compile(*this).status(); }

}  // namespace amptrain::amp

namespace amptrain::amp::internal {

namespace {

// Everything but the patterns.
Status CheckPolicy(const Policy& policy) {
  const ir::DType low = policy.low;
  if (low != ir::DType::kFloat16 && low != ir::DType::kBFloat16)
    return InvalidArgument("low-precision dtype ", ir::DTypeName(low), " is not supported: expected float16 or bfloat16");
  AMP_RETURN_IF_ERROR(CheckOpList(policy.low_ops, "fp16"));
  AMP_RETURN_IF_ERROR(CheckOpList(policy.fp32_ops, "fp32"));
  for (const std::string& op : policy.low_ops)
    if (policy.fp32_ops.count(op)) return InvalidArgument("op '", op, "' is in both the fp16 and the fp32 op lists");
  for (const NodeOverride& o : policy.node_overrides)
    if (o.dtype != ir::DType::kFloat32 && o.dtype != low)
      return InvalidArgument("node override '", o.pattern, "' asks for ", ir::DTypeName(o.dtype),
                             ": expected float32 or the policy's ", ir::DTypeName(low));
  for (const SlotPin& p : policy.pins) {
    if (p.input < 0) return InvalidArgument("pin on '", p.node_pattern, "' has negative input index ", p.input);
    if (!IsAmpFloat(p.dtype))
      return InvalidArgument("pin on '", p.node_pattern, "' input ", p.input, " asks for ", ir::DTypeName(p.dtype),
                             ": expected float32, float16 or bfloat16");
  }
  return Status::Ok();
}

std::string Written(const std::string& pattern, bool is_regex) { return is_regex ? "re:" + pattern : pattern; }

}  // namespace

StatusOr<CompiledPolicy> CompiledPolicy::Compile(const Policy& policy) {
  AMP_RETURN_IF_ERROR(CheckPolicy(policy));
  CompiledPolicy c;
  for (const NodeOverride& o : policy.node_overrides) {
    AMP_ASSIGN_OR_RETURN(NamePattern p, NamePattern::Compile(o.pattern, o.is_regex,
                                                             StrCat("node override '", o.pattern, "'")));
    c.overrides.push_back({std::move(p), o.dtype, Written(o.pattern, o.is_regex)});
  }
  for (const SlotPin& s : policy.pins) {
    AMP_ASSIGN_OR_RETURN(NamePattern p, NamePattern::Compile(s.node_pattern, s.is_regex,
                                                             StrCat("pin on '", s.node_pattern, "'")));
    c.pins.push_back({std::move(p), s.input, s.dtype,
                      StrCat("pin ", Written(s.node_pattern, s.is_regex), " input ", s.input)});
  }
  return c;
}

std::vector<std::string> CompiledPolicy::Unmatched(const ir::Graph& graph) const {
  std::vector<char> hit_override(overrides.size(), 0), hit_pin(pins.size(), 0);
  for (const ir::Node* n : graph.nodes()) {
    for (size_t i = 0; i < overrides.size(); ++i)
      if (!hit_override[i] && overrides[i].pattern.Matches(n->name())) hit_override[i] = 1;
    for (size_t i = 0; i < pins.size(); ++i)
      if (!hit_pin[i] && static_cast<size_t>(pins[i].input) < n->num_inputs() && pins[i].pattern.Matches(n->name()))
        hit_pin[i] = 1;
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < overrides.size(); ++i)
    if (!hit_override[i]) out.push_back(overrides[i].written);
  for (size_t i = 0; i < pins.size(); ++i)
    if (!hit_pin[i]) out.push_back(pins[i].written);
  return out;
}

std::optional<ir::DType> CompiledPolicy::OverrideFor(const std::string& node_name) const {
  std::optional<ir::DType> out;
  for (const Override& o : overrides)
    if (o.pattern.Matches(node_name)) out = o.dtype;
  return out;
}

std::optional<ir::DType> CompiledPolicy::PinFor(const std::string& node_name, size_t slot) const {
  std::optional<ir::DType> out;
  for (const Pin& p : pins)
    if (static_cast<size_t>(p.input) == slot && p.pattern.Matches(node_name)) out = p.dtype;
  return out;
}

}  // namespace amptrain::amp::internal
