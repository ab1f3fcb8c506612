// Shapes with static and symbolic dimensions.
//
// A Dim is either a static size (value >= 0) or symbolic (value == -1) with
// an optional name such as "batch"; an empty symbol means "unknown". A
// TensorType is a dtype plus a shape; `has_shape == false` means even the
// rank is unknown.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace amptrain::ir {

struct Dim {
  int64_t value = -1;
  std::string symbol;

  static Dim Static(int64_t v) { return Dim{v, {}}; }
  static Dim Symbolic(std::string name) { return Dim{-1, std::move(name)}; }
  bool is_static() const { return value >= 0; }
  bool operator==(const Dim& o) const { return value == o.value && symbol == o.symbol; }
};

class Shape {
 public:
  Shape() = default;
  explicit Shape(std::vector<Dim> dims) : dims_(std::move(dims)) {}
  static Shape FromStatic(const std::vector<int64_t>& dims);

  size_t rank() const { return dims_.size(); }
  const Dim& operator[](size_t i) const { return dims_[i]; }
  Dim& operator[](size_t i) { return dims_[i]; }
  const std::vector<Dim>& dims() const { return dims_; }
  std::vector<Dim>& dims() { return dims_; }

  bool is_static() const;
  // Static sizes; only meaningful when is_static().
  std::vector<int64_t> static_dims() const;
  // Product of static sizes, or -1 if any dim is symbolic; kTooManyElements
  // when the product does not fit int64 (a shape no tensor can have).
  int64_t num_elements() const;
  static constexpr int64_t kTooManyElements = INT64_MAX;
  // "[batch,3,224,224]"
  std::string ToString() const;
  bool operator==(const Shape& o) const { return dims_ == o.dims_; }

 private:
  std::vector<Dim> dims_;
};

struct TensorType {
  DType dtype = DType::kUndefined;
  Shape shape;
  bool has_shape = false;

  static TensorType Of(DType t, Shape s) { return TensorType{t, std::move(s), true}; }
  static TensorType Of(DType t, const std::vector<int64_t>& dims) { return Of(t, Shape::FromStatic(dims)); }
  std::string ToString() const;  // "float32[batch,10]" or "float32[?]"
};

// One element of a small integer tensor as shape inference sees it: a known
// integer (any sign: a Reshape target's -1 and 0 included), a symbolic dim
// expression, or unknown. Shape(x) of x [batch, 128, 256] is {batch, 128,
// 256}; Gather, Concat, Mul and Div carry such values on, and Reshape,
// Expand and ConstantOfShape read them as their target shape
// (ir/infer/value_util.h), so a dynamic-batch export keeps its batch dim
// through the reshapes of its attention layers.
struct SymInt {
  int64_t value = 0;   // when known
  std::string symbol;  // a dim expression when not known; empty: unknown
  bool known = false;

  static SymInt Int(int64_t v) { return SymInt{v, {}, true}; }
  static SymInt Unknown() { return SymInt{}; }
  // A static dim is its size, a named symbolic dim its expression.
  static SymInt FromDim(const Dim& d) { return d.is_static() ? Int(d.value) : SymInt{0, d.symbol, false}; }
  // The dim this element gives as a size: static when known and >= 0,
  // symbolic when named, else unknown.
  Dim ToDim() const;
  bool operator==(const SymInt& o) const { return known == o.known && value == o.value && symbol == o.symbol; }
};

// Products and exact quotients of dims, symbolic ones as monomials written
// canonically: a coefficient (left out when 1), then the names sorted and
// joined by '*' ("4*batch", "batch*seq"), so that equal products compare
// equal by name. A name with other operators in it ("s0 + 1") is one
// factor. nullopt when the result has no such form: an unknown dim, an
// inexact division, an overflow.
std::optional<Dim> MulDims(const Dim& a, const Dim& b);
std::optional<Dim> DivDims(const Dim& a, const Dim& b);

// Element count of static dims with overflow checking: false on overflow or
// a negative dim. Used wherever untrusted sizes are multiplied.
bool CheckedNumElements(const std::vector<int64_t>& dims, int64_t* out);
// a + b and a * b into *out; false (and *out untouched) when int64 overflows.
// Shape arithmetic on untrusted dims (Concat sums, pads, Tile repeats) uses
// these, so that an overflow is an error saying so, not a negative dim.
inline bool CheckedAdd(int64_t a, int64_t b, int64_t* out) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return false;
  *out = r;
  return true;
}
inline bool CheckedMul(int64_t a, int64_t b, int64_t* out) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return false;
  *out = r;
  return true;
}

}  // namespace amptrain::ir
