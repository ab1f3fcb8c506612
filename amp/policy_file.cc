// Policy files: JSON (nlohmann) or YAML (yaml-cpp), chosen by content — a
// document whose first non-blank character is '{' is JSON. YAML is first
// turned into the same JSON tree, so both go through one reader and give the
// same errors. Node patterns "re:REGEX" are regexes; fp32_nodes entries come
// before fp16_nodes entries in the override list (later entries win).
#include <set>
#include <string>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "amp/policy.h"
#include "ir/file_io.h"

namespace amptrain::amp {
namespace {

using Json = nlohmann::json;

// Resource bounds of untrusted policy files (docs/limits.md). A policy is a
// few lists of op and node names: these are far above any real one.
constexpr int64_t kMaxPolicyBytes = 1 << 20;   // 1 MiB
constexpr int kMaxPolicyNesting = 16;          // [ { nesting (a policy needs 3)
constexpr int64_t kMaxPolicyValues = 100'000;  // values after YAML alias expansion
constexpr size_t kMaxEcho = 80;                // characters of a value quoted in an error

// `j` for an error message, cut to kMaxEcho characters. Bytes that are not
// UTF-8 (YAML does not check) print as U+FFFD: a strict dump() threw.
std::string Echo(const Json& j) {
  auto dump = [](const Json& v) { return v.dump(-1, ' ', false, Json::error_handler_t::replace); };
  std::string s = j.is_string() ? dump(Json(j.get_ref<const std::string&>().substr(0, kMaxEcho + 1))) : dump(j);
  if (s.size() > kMaxEcho) s = s.substr(0, kMaxEcho) + "... (" + std::to_string(s.size()) + " characters)";
  return s;
}

constexpr const char* kKeys[] = {"level", "dtype", "fp16_ops", "fp32_ops", "fp32_nodes",
                                 "fp16_nodes", "pins", "keep_io_types"};
constexpr const char* kPinKeys[] = {"node", "input", "dtype"};

// `budget`: values still allowed (aliases are expanded here, so a 342-byte
// "billion laughs" document would otherwise exhaust memory).
StatusOr<Json> YamlToJson(const YAML::Node& n, const std::string& where, int64_t& budget, int depth = 0) {
  if (--budget < 0)
    return InvalidArgument(where, ": the YAML document expands to more than ", kMaxPolicyValues,
                           " values (anchors and aliases?); a policy is a few short lists");
  if (depth > kMaxPolicyNesting) return InvalidArgument(where, ": nested more than ", kMaxPolicyNesting, " levels deep");
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: return Json(nullptr);
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (n.Tag() != "!") {  // unquoted: booleans and integers are typed
        if (s == "true" || s == "True") return Json(true);
        if (s == "false" || s == "False") return Json(false);
        char* end = nullptr;
        long long v = std::strtoll(s.c_str(), &end, 10);
        if (!s.empty() && end && *end == '\0') return Json(v);
      }
      return Json(s);
    }
    case YAML::NodeType::Sequence: {
      Json arr = Json::array();
      for (size_t i = 0; i < n.size(); ++i) {
        AMP_ASSIGN_OR_RETURN(Json e, YamlToJson(n[i], where, budget, depth + 1));
        arr.push_back(std::move(e));
      }
      return arr;
    }
    case YAML::NodeType::Map: {
      Json obj = Json::object();
      for (auto it = n.begin(); it != n.end(); ++it) {
        if (!it->first.IsScalar()) return InvalidArgument(where, ": mapping keys must be plain strings");
        AMP_ASSIGN_OR_RETURN(Json e, YamlToJson(it->second, where, budget, depth + 1));
        if (obj.contains(it->first.Scalar()))
          return InvalidArgument(where, ": key ", Echo(Json(it->first.Scalar())), " appears twice in one mapping");
        obj[it->first.Scalar()] = std::move(e);
      }
      return obj;
    }
  }
  return InvalidArgument(where, ": unsupported YAML node");
}

template <size_t N>
Status CheckKeys(const Json& obj, const char* const (&keys)[N], const std::string& where) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool known = false;
    for (const char* k : keys) known = known || it.key() == k;
    if (!known) {
      std::string expected;
      for (const char* k : keys) expected += (expected.empty() ? "" : ", ") + std::string(k);
      return InvalidArgument(where, ": unknown key '", it.key(), "' (expected one of: ", expected, ")");
    }
  }
  return Status::Ok();
}

StatusOr<std::string> GetString(const Json& j, const std::string& where) {
  if (!j.is_string()) return InvalidArgument(where, ": expected a string, got ", Echo(j));
  return j.get<std::string>();
}

StatusOr<std::vector<std::string>> GetStrings(const Json& j, const std::string& where) {
  if (!j.is_array()) return InvalidArgument(where, ": expected a list of strings, got ", Echo(j));
  std::vector<std::string> out;
  for (const Json& e : j) {
    AMP_ASSIGN_OR_RETURN(std::string s, GetString(e, where));
    out.push_back(std::move(s));
  }
  return out;
}

StatusOr<ir::DType> GetDType(const Json& j, const std::string& where) {
  AMP_ASSIGN_OR_RETURN(std::string s, GetString(j, where));
  ir::DType t = ir::ParseDType(s);
  if (t != ir::DType::kFloat32 && t != ir::DType::kFloat16 && t != ir::DType::kBFloat16)
    return InvalidArgument(where, ": unknown dtype '", s, "' (expected fp32, fp16 or bf16)");
  return t;
}

// "re:REGEX" -> (REGEX, true); anything else is an exact name.
std::pair<std::string, bool> SplitPattern(const std::string& s) {
  if (s.rfind("re:", 0) == 0) return {s.substr(3), true};
  return {s, false};
}

StatusOr<Policy> FromJson(const Json& root, const std::string& src) {
  if (!root.is_object()) return InvalidArgument(src, ": a policy must be a mapping of keys");
  AMP_RETURN_IF_ERROR(CheckKeys(root, kKeys, src));
  Policy p;
  if (root.contains("level")) {
    AMP_ASSIGN_OR_RETURN(std::string s, GetString(root["level"], src + ": level"));
    AMP_ASSIGN_OR_RETURN(p.level, ParseLevel(s));
  }
  if (root.contains("dtype")) {
    AMP_ASSIGN_OR_RETURN(p.low, GetDType(root["dtype"], src + ": dtype"));
    if (p.low == ir::DType::kFloat32) return InvalidArgument(src, ": dtype must be fp16 or bf16");
  }
  for (const char* key : {"fp16_ops", "fp32_ops"}) {
    if (!root.contains(key)) continue;
    AMP_ASSIGN_OR_RETURN(auto ops, GetStrings(root[key], src + ": " + key));
    (std::string(key) == "fp16_ops" ? p.low_ops : p.fp32_ops).insert(ops.begin(), ops.end());
  }
  for (const char* key : {"fp32_nodes", "fp16_nodes"}) {
    if (!root.contains(key)) continue;
    AMP_ASSIGN_OR_RETURN(auto names, GetStrings(root[key], src + ": " + key));
    for (const std::string& n : names) {
      auto [pattern, is_regex] = SplitPattern(n);
      p.node_overrides.push_back({pattern, is_regex, std::string(key) == "fp32_nodes" ? ir::DType::kFloat32 : p.low});
    }
  }
  if (root.contains("pins")) {
    const Json& pins = root["pins"];
    if (!pins.is_array()) return InvalidArgument(src, ": pins: expected a list of {node, input, dtype}");
    for (size_t i = 0; i < pins.size(); ++i) {
      std::string where = StrCat(src, ": pins[", i, "]");
      const Json& e = pins[i];
      if (!e.is_object()) return InvalidArgument(where, ": expected a mapping {node, input, dtype}");
      AMP_RETURN_IF_ERROR(CheckKeys(e, kPinKeys, where));
      if (!e.contains("node") || !e.contains("input") || !e.contains("dtype"))
        return InvalidArgument(where, ": needs node, input and dtype");
      AMP_ASSIGN_OR_RETURN(std::string node, GetString(e["node"], where + ": node"));
      if (!e["input"].is_number_integer()) return InvalidArgument(where, ": input must be an integer");
      SlotPin pin;
      std::tie(pin.node_pattern, pin.is_regex) = SplitPattern(node);
      pin.input = e["input"].get<int>();
      AMP_ASSIGN_OR_RETURN(pin.dtype, GetDType(e["dtype"], where + ": dtype"));
      p.pins.push_back(std::move(pin));
    }
  }
  if (root.contains("keep_io_types")) {
    if (!root["keep_io_types"].is_boolean()) return InvalidArgument(src, ": keep_io_types must be true or false");
    p.keep_io_types = root["keep_io_types"].get<bool>();
  }
  Status st = p.Validate();
  if (!st.ok()) return st.WithContext(src);
  return p;
}

}  // namespace

StatusOr<Policy> ParsePolicyText(const std::string& text, const std::string& source_name) {
  if (static_cast<int64_t>(text.size()) > kMaxPolicyBytes)
    return InvalidArgument(source_name, ": ", text.size(), " bytes; a policy file may have at most ", kMaxPolicyBytes);
  if (ir::MaxBracketDepth(text) > kMaxPolicyNesting)
    return InvalidArgument(source_name, ": nested more than ", kMaxPolicyNesting, " levels deep");
  size_t first = text.find_first_not_of(" \t\r\n");
  Json root;
  if (first != std::string::npos && text[first] == '{') {
    // nlohmann keeps the last of duplicate keys; a policy must not say two things.
    std::vector<std::set<std::string>> open_objects;
    std::string duplicate;
    Json::parser_callback_t on_event = [&](int, Json::parse_event_t event, Json& parsed) {
      if (event == Json::parse_event_t::object_start) open_objects.emplace_back();
      if (event == Json::parse_event_t::object_end && !open_objects.empty()) open_objects.pop_back();
      if (event == Json::parse_event_t::key && !open_objects.empty() && duplicate.empty() &&
          !open_objects.back().insert(parsed.get<std::string>()).second)
        duplicate = parsed.get<std::string>();
      return true;
    };
    root = Json::parse(text, on_event, /*allow_exceptions=*/false);
    if (root.is_discarded()) return InvalidArgument(source_name, ": invalid JSON");
    if (!duplicate.empty())
      return InvalidArgument(source_name, ": key ", Echo(Json(duplicate)), " appears twice in one object");
  } else {
    try {
      YAML::Node doc = YAML::Load(text);
      int64_t budget = kMaxPolicyValues;
      AMP_ASSIGN_OR_RETURN(root, YamlToJson(doc, source_name, budget));
    } catch (const YAML::Exception& e) {
      return InvalidArgument(source_name, ": invalid YAML: ", e.what());
    }
    if (root.is_null()) root = Json::object();  // an empty file is the default policy
  }
  return FromJson(root, source_name);
}

StatusOr<Policy> LoadPolicyFile(const std::string& path) {
  // A FIFO would block forever, /dev/zero never ends, a folder is no policy.
  AMP_ASSIGN_OR_RETURN(std::string text, ir::ReadRegularFile(path, kMaxPolicyBytes, "policy file"));
  return ParsePolicyText(text, path);
}

}  // namespace amptrain::amp
