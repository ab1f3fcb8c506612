#include "executor/train/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <set>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "executor/train/file_util.h"

namespace amptrain::executor::train {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

using ir::DType;
using ir::Tensor;
using nlohmann::json;

namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's limit
constexpr const char* kMetadataKey = "__metadata__";

struct DTypeCode {
  const char* code;
  DType dtype;
};
constexpr DTypeCode kDTypeCodes[] = {
    {"F32", DType::kFloat32}, {"F16", DType::kFloat16}, {"BF16", DType::kBFloat16},
    {"F64", DType::kFloat64}, {"I64", DType::kInt64},   {"I32", DType::kInt32},
    {"I8", DType::kInt8},     {"U8", DType::kUInt8},    {"BOOL", DType::kBool},
};

const char* CodeOf(DType t) {
  for (const auto& e : kDTypeCodes)
    if (e.dtype == t) return e.code;
  return nullptr;
}

// Deepest bracket nesting of a JSON text, strings skipped; a valid header
// nests 3 deep, so deeper input is refused before the parser allocates for it.
int MaxNesting(const std::string& text) {
  int depth = 0, max_depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      max_depth = std::max(max_depth, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return max_depth;
}

// Parses the header, refusing duplicate keys at any level.
StatusOr<json> ParseHeaderJson(const std::string& text, const std::string& label) {
  if (MaxNesting(text) > 3) return InvalidArgument(label, ": safetensors header nests deeper than a valid one can");
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  auto callback = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) keys.emplace_back();
    if (event == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    if (event == json::parse_event_t::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second &&
        duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  json header = json::parse(text, callback, /*allow_exceptions=*/false);
  if (header.is_discarded()) return InvalidArgument(label, ": safetensors header is not valid JSON");
  if (!duplicate.empty()) return InvalidArgument(label, ": safetensors header repeats the key '", duplicate, "'");
  if (!header.is_object()) return InvalidArgument(label, ": safetensors header is not a JSON object");
  return header;
}

// A JSON integer in [0, int64 max].
bool AsNonNegative(const json& v, int64_t* out) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    *out = static_cast<int64_t>(u);
    return true;
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0) {
    *out = v.get<int64_t>();
    return true;
  }
  return false;
}

struct Entry {
  std::string name;
  DType dtype;
  std::vector<int64_t> dims;
  int64_t begin, end;
};

StatusOr<Entry> ParseEntry(const std::string& name, const json& info, int64_t buffer_size, const std::string& label) {
  auto error = [&](const auto&... what) { return InvalidArgument(label, ": tensor '", name, "': ", what...); };
  if (!info.is_object()) return error("its header entry is not an object");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!info.contains(key)) return error("missing '", key, "'");
  Entry e{name, DType::kUndefined, {}, 0, 0};
  const json& dtype = info["dtype"];
  if (!dtype.is_string()) return error("'dtype' is not a string");
  for (const auto& c : kDTypeCodes)
    if (dtype.get<std::string>() == c.code) e.dtype = c.dtype;
  if (e.dtype == DType::kUndefined)
    return Unimplemented(label, ": tensor '", name, "': unsupported safetensors dtype '", dtype.get<std::string>(),
                         "' (supported: F32 F16 BF16 F64 I64 I32 I8 U8 BOOL)");
  const json& shape = info["shape"];
  if (!shape.is_array()) return error("'shape' is not an array");
  for (const json& d : shape) {
    int64_t v = 0;
    if (!AsNonNegative(d, &v)) return error("'shape' holds something other than a non-negative integer");
    e.dims.push_back(v);
  }
  int64_t n = 0;
  if (!ir::CheckedNumElements(e.dims, &n)) return error("the element count of 'shape' overflows");
  const json& offsets = info["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !AsNonNegative(offsets[0], &e.begin) ||
      !AsNonNegative(offsets[1], &e.end))
    return error("'data_offsets' is not a pair of non-negative integers");
  if (e.begin > e.end || e.end > buffer_size)
    return error("data_offsets [", e.begin, ", ", e.end, "] fall outside the ", buffer_size, "-byte buffer");
  const int64_t es = static_cast<int64_t>(ir::DTypeSize(e.dtype));
  if (n > std::numeric_limits<int64_t>::max() / es || n * es != e.end - e.begin)
    return error("shape and dtype need ", n, " elements of ", es, " bytes but data_offsets span ", e.end - e.begin,
                 " bytes");
  return e;
}

}  // namespace

StatusOr<std::string> SerializeSafetensors(const std::map<std::string, Tensor>& tensors,
                                           const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    const char* code = CodeOf(t.dtype());
    if (!code) return InvalidArgument("safetensors: tensor '", name, "' has no data type");
    if (name == kMetadataKey) return InvalidArgument("safetensors: a tensor may not be named '", kMetadataKey, "'");
    header[name] = {{"dtype", code}, {"shape", t.dims()}, {"data_offsets", {offset, offset + t.nbytes()}}};
    offset += t.nbytes();
  }
  if (!metadata.empty()) header[kMetadataKey] = metadata;
  std::string text;
  try {
    text = header.dump(-1, ' ', /*ensure_ascii=*/false, json::error_handler_t::strict);
  } catch (const json::exception&) {
    return InvalidArgument("safetensors: a tensor name or metadata string is not valid UTF-8");
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out;
  out.reserve(8 + text.size() + offset);
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
  out += text;
  for (const auto& [name, t] : tensors) out.append(static_cast<const char*>(t.raw()), t.nbytes());
  return out;
}

StatusOr<SafetensorsContents> ParseSafetensors(const std::string& bytes, const std::string& label) {
  if (bytes.size() < 8)
    return InvalidArgument(label, ": ", bytes.size(), " bytes is too short for a safetensors file (8-byte header length)");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  if (n > kMaxHeaderBytes || n > bytes.size() - 8)
    return InvalidArgument(label, ": safetensors header length ", n, " exceeds the file (", bytes.size(),
                           " bytes) or the 100 MB limit");
  if (n == 0 || bytes[8] != '{') return InvalidArgument(label, ": safetensors header does not start with '{'");
  AMP_ASSIGN_OR_RETURN(json header, ParseHeaderJson(bytes.substr(8, n), label));
  const size_t data_start = 8 + static_cast<size_t>(n);
  const int64_t buffer_size = static_cast<int64_t>(bytes.size() - data_start);

  SafetensorsContents out;
  std::vector<Entry> entries;
  for (const auto& [name, info] : header.items()) {
    if (name == kMetadataKey) {
      if (!info.is_object()) return InvalidArgument(label, ": safetensors '__metadata__' is not an object");
      for (const auto& [key, value] : info.items()) {
        if (!value.is_string()) return InvalidArgument(label, ": safetensors metadata '", key, "' is not a string");
        out.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    AMP_ASSIGN_OR_RETURN(Entry e, ParseEntry(name, info, buffer_size, label));
    entries.push_back(std::move(e));
  }
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const Entry* a, const Entry* b) { return std::tie(a->begin, a->end) < std::tie(b->begin, b->end); });
  int64_t expected = 0;
  for (const Entry* e : by_offset) {
    if (e->begin != expected)
      return InvalidArgument(label, ": tensor '", e->name, "' starts at byte ", e->begin, " of the buffer but the ",
                             e->begin < expected ? "previous tensor ends at " : "buffer has a gap from ", expected);
    expected = e->end;
  }
  if (expected != buffer_size)
    return InvalidArgument(label, ": the tensors cover ", expected, " bytes of a ", buffer_size, "-byte buffer");
  for (const Entry& e : entries) {
    AMP_ASSIGN_OR_RETURN(Tensor t, Tensor::Zeros(e.dtype, e.dims));
    std::memcpy(t.raw(), bytes.data() + data_start + e.begin, t.nbytes());
    out.tensors.emplace(e.name, std::move(t));
  }
  return out;
}

StatusOr<SafetensorsContents> ReadSafetensors(const std::string& path) {
  AMP_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
  return ParseSafetensors(bytes, path);
}

Status WriteSafetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  AMP_ASSIGN_OR_RETURN(std::string bytes, SerializeSafetensors(tensors, metadata));
  return WriteFileSynced(path, bytes);
}

}  // namespace amptrain::executor::train
