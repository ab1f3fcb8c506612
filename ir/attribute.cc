#include "ir/attribute.h"


namespace amptrain::ir {

const char* AttrTypeName(AttrType t) {
  switch (t) {
    case AttrType::kInt: return "int";
    case AttrType::kFloat: return "float";
    case AttrType::kString: return "string";
    case AttrType::kInts: return "ints";
    case AttrType::kFloats: return "floats";
    case AttrType::kStrings: return "strings";
    case AttrType::kTensor: return "tensor";
  }
  return "?";
}

AttrType TypeOf(const AttrValue& v) { return static_cast<AttrType>(v.index()); }

namespace {

template <class T>
StatusOr<T> Get(const std::map<std::string, AttrValue>& m, const std::string& name, const T& def, AttrType want) {
  auto it = m.find(name);
  if (it == m.end()) return def;
  if (const T* p = std::get_if<T>(&it->second)) return *p;
  return InvalidArgument("attribute '", name, "' has type ", AttrTypeName(TypeOf(it->second)),
                         ", expected ", AttrTypeName(want));
}

}  // namespace

bool Attributes::operator==(const Attributes& o) const { return values_ == o.values_; }

StatusOr<int64_t> Attributes::GetInt(const std::string& n, int64_t d) const { return Get<int64_t>(values_, n, d, AttrType::kInt); }
StatusOr<float> Attributes::GetFloat(const std::string& n, float d) const { return Get<float>(values_, n, d, AttrType::kFloat); }
StatusOr<std::string> Attributes::GetString(const std::string& n, const std::string& d) const {
  return Get<std::string>(values_, n, d, AttrType::kString);
}
StatusOr<std::vector<int64_t>> Attributes::GetInts(const std::string& n, const std::vector<int64_t>& d) const {
  return Get<std::vector<int64_t>>(values_, n, d, AttrType::kInts);
}
StatusOr<std::vector<float>> Attributes::GetFloats(const std::string& n, const std::vector<float>& d) const {
  return Get<std::vector<float>>(values_, n, d, AttrType::kFloats);
}
StatusOr<std::vector<std::string>> Attributes::GetStrings(const std::string& n) const {
  return Get<std::vector<std::string>>(values_, n, {}, AttrType::kStrings);
}
StatusOr<Tensor> Attributes::GetTensor(const std::string& n) const {
  auto it = values_.find(n);
  if (it == values_.end()) return NotFound("missing tensor attribute '", n, "'");
  if (const Tensor* t = std::get_if<Tensor>(&it->second)) return *t;
  return InvalidArgument("attribute '", n, "' has type ", AttrTypeName(TypeOf(it->second)), ", expected tensor");
}

int64_t Attributes::Int(const std::string& n, int64_t d) const { auto r = GetInt(n, d); return r.ok() ? *r : d; }
float Attributes::Float(const std::string& n, float d) const { auto r = GetFloat(n, d); return r.ok() ? *r : d; }
std::vector<int64_t> Attributes::Ints(const std::string& n, const std::vector<int64_t>& d) const {
  auto r = GetInts(n, d);
  return r.ok() ? *r : d;
}
std::string Attributes::Str(const std::string& n, const std::string& d) const { auto r = GetString(n, d); return r.ok() ? *r : d; }

}  // namespace amptrain::ir
