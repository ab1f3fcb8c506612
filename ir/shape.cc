#include "ir/shape.h"

#include <limits>

#include "ir/status.h"

namespace amptrain::ir {

Shape Shape::FromStatic(const std::vector<int64_t>& dims) {
  std::vector<Dim> d;
  d.reserve(dims.size());
  for (int64_t v : dims) d.push_back(Dim::Static(v));
  return Shape(std::move(d));
}

bool Shape::is_static() const {
  for (const Dim& d : dims_) if (!d.is_static()) return false;
  return true;
}

std::vector<int64_t> Shape::static_dims() const {
  std::vector<int64_t> out;
  out.reserve(dims_.size());
  for (const Dim& d : dims_) out.push_back(d.value);
  return out;
}

int64_t Shape::num_elements() const {
  int64_t n = 1;
  for (const Dim& d : dims_) {
    if (!d.is_static()) return -1;
    n *= d.value;
  }
  return n;
}

std::string Shape::ToString() const {
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ",";
    if (dims_[i].is_static()) s += std::to_string(dims_[i].value);
    else s += dims_[i].symbol.empty() ? "?" : dims_[i].symbol;
  }
  return s + "]";
}

std::string TensorType::ToString() const {
  return StrCat(DTypeName(dtype), has_shape ? shape.ToString() : std::string("[?]"));
}

bool CheckedNumElements(const std::vector<int64_t>& dims, int64_t* out) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return false;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return false;
    n *= d;
  }
  *out = n;
  return true;
}

}  // namespace amptrain::ir
