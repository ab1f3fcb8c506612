#include "ir/shape.h"

#include <algorithm>
#include <iterator>
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
    if (__builtin_mul_overflow(n, d.value, &n)) return kTooManyElements;
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

Dim SymInt::ToDim() const {
  if (known) return value >= 0 ? Dim::Static(value) : Dim::Symbolic("");
  return Dim::Symbolic(symbol);
}

namespace {

// coefficient * product of names (sorted, with repeats).
struct Monomial {
  int64_t coef = 1;
  std::vector<std::string> names;
};

std::optional<Monomial> ToMonomial(const Dim& d) {
  if (d.is_static()) return Monomial{d.value, {}};
  if (d.symbol.empty()) return std::nullopt;
  if (d.symbol.find_first_of("+-/()^ ") != std::string::npos) return Monomial{1, {d.symbol}};
  Monomial m;
  size_t start = 0;
  while (start <= d.symbol.size()) {
    size_t end = d.symbol.find('*', start);
    if (end == std::string::npos) end = d.symbol.size();
    const std::string token = d.symbol.substr(start, end - start);
    if (token.empty()) return Monomial{1, {d.symbol}};
    if (token.find_first_not_of("0123456789") == std::string::npos && token.size() < 18) {
      if (!CheckedMul(m.coef, std::stoll(token), &m.coef)) return std::nullopt;
    } else {
      m.names.push_back(token);
    }
    start = end + 1;
  }
  std::sort(m.names.begin(), m.names.end());
  return m;
}

Dim FromMonomial(const Monomial& m) {
  if (m.names.empty() || m.coef == 0) return Dim::Static(m.coef);
  std::string s = m.coef != 1 ? std::to_string(m.coef) : "";
  for (const std::string& n : m.names) s += (s.empty() ? "" : "*") + n;
  return Dim::Symbolic(s);
}

}  // namespace

std::optional<Dim> MulDims(const Dim& a, const Dim& b) {
  auto x = ToMonomial(a), y = ToMonomial(b);
  if (!x || !y) return std::nullopt;
  Monomial r;
  if (!CheckedMul(x->coef, y->coef, &r.coef)) return std::nullopt;
  std::merge(x->names.begin(), x->names.end(), y->names.begin(), y->names.end(), std::back_inserter(r.names));
  return FromMonomial(r);
}

std::optional<Dim> DivDims(const Dim& a, const Dim& b) {
  auto x = ToMonomial(a), y = ToMonomial(b);
  if (!x || !y || y->coef == 0 || x->coef % y->coef != 0) return std::nullopt;
  Monomial r{x->coef / y->coef, {}};
  std::vector<std::string> rest = x->names;
  for (const std::string& n : y->names) {
    auto it = std::find(rest.begin(), rest.end(), n);
    if (it == rest.end()) return std::nullopt;
    rest.erase(it);
  }
  r.names = std::move(rest);
  return FromMonomial(r);
}

}  // namespace amptrain::ir
