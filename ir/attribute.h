// Typed node attributes.
//
// Attributes are stored by name with their ONNX type; readers use the typed
// getters, which fail with a Status naming the attribute when the stored type
// differs. Kernels and passes decode what they need once (at plan time) into
// their own structs rather than at every use.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "ir/status.h"
#include "ir/tensor.h"

namespace amptrain::ir {

using AttrValue = std::variant<int64_t, float, std::string, std::vector<int64_t>,
                               std::vector<float>, std::vector<std::string>, Tensor>;

enum class AttrType { kInt, kFloat, kString, kInts, kFloats, kStrings, kTensor };
const char* AttrTypeName(AttrType t);

class Attributes {
 public:
  bool Has(const std::string& name) const { return values_.count(name) != 0; }
  void Set(const std::string& name, AttrValue v) { values_[name] = std::move(v); }
  void Erase(const std::string& name) { values_.erase(name); }
  const std::map<std::string, AttrValue>& all() const { return values_; }
  size_t size() const { return values_.size(); }
  bool operator==(const Attributes& o) const;

  // Defaulted getters: the default when absent, an error when of another type.
  StatusOr<int64_t> GetInt(const std::string& name, int64_t def) const;
  StatusOr<float> GetFloat(const std::string& name, float def) const;
  StatusOr<std::string> GetString(const std::string& name, const std::string& def) const;
  StatusOr<std::vector<int64_t>> GetInts(const std::string& name, const std::vector<int64_t>& def = {}) const;
  StatusOr<std::vector<float>> GetFloats(const std::string& name, const std::vector<float>& def = {}) const;
  StatusOr<std::vector<std::string>> GetStrings(const std::string& name) const;
  // Required tensor attribute (Constant's "value", Initializer's payload).
  StatusOr<Tensor> GetTensor(const std::string& name) const;

  // Unchecked shorthands for code that already validated the node.
  int64_t Int(const std::string& name, int64_t def) const;
  float Float(const std::string& name, float def) const;
  std::vector<int64_t> Ints(const std::string& name, const std::vector<int64_t>& def = {}) const;
  std::string Str(const std::string& name, const std::string& def) const;

 private:
  std::map<std::string, AttrValue> values_;
};

AttrType TypeOf(const AttrValue& v);

}  // namespace amptrain::ir
