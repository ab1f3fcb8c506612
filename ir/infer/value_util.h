// Value propagation helpers for the shape rules of ir/infer/*.cc.
//
// Shape arithmetic (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) is
// folded by computing small tensors at inference time. These helpers run
// that "reference computation" on ir::Tensor: every data-movement op is an
// index map (output element at multi-index i = element j of some input), so
// MapElements covers Transpose, Slice, Gather, Concat, Expand and Tile; the
// view ops (Reshape, Flatten, Squeeze, Unsqueeze) reuse the buffer.
// Element copies go by byte size, so every dtype propagates.
#pragma once

#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "ir/infer/infer_util.h"

namespace amptrain::ir {

// True when a tensor of n elements is small enough to propagate.
inline bool Propagatable(int64_t n) { return n >= 0 && n <= kMaxPropagatedElements; }
// Row-major strides of static dims.
std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims);
// Input i's value as int64s (any numeric dtype); nullopt when unknown/absent.
std::optional<std::vector<int64_t>> KnownInts(const InferContext& ctx, size_t i);
// Static dims of input i; nullopt unless its shape is known and static.
std::optional<std::vector<int64_t>> StaticDims(const InferContext& ctx, size_t i);
// Static dims of a shape with -1 for every symbolic dim (rank must be known).
std::vector<int64_t> DimsOrUnknown(const Shape& s);
// The reverse: -1 becomes an unknown symbolic dim.
Shape ShapeFromDims(const std::vector<int64_t>& dims);

// Maps each output multi-index to (source#, flat element index in that
// source). Sources share one dtype. Fails when the output is too large.
using IndexMap = std::function<std::pair<size_t, int64_t>(const std::vector<int64_t>& out_index)>;
StatusOr<Tensor> MapElements(const std::vector<const Tensor*>& sources, const std::vector<int64_t>& out_dims,
                             const IndexMap& map);
// Single-source convenience: `map` returns the flat source index.
StatusOr<Tensor> MapElements(const Tensor& source, const std::vector<int64_t>& out_dims,
                             const std::function<int64_t(const std::vector<int64_t>&)>& map);

// Sets output_values[out] = t when t is small enough; otherwise leaves it unknown.
void SetValue(InferContext& ctx, size_t out, Tensor t);
// Propagates input `in`'s value reshaped to the output's static dims (view
// ops), and its tracked elements (PropagateSyms).
void PropagateReshaped(InferContext& ctx, size_t out, size_t in);

// Element-wise conversion to `to` (floats via double, integers via int64;
// float -> integer truncates toward zero, as ONNX Cast does).
StatusOr<Tensor> ConvertElements(const Tensor& t, DType to);

// Product of dims as a Dim: static when all are static, a monomial
// (ir/shape.h MulDims) when the symbolic ones are named, else unknown.
Dim ProductDim(const std::vector<Dim>& dims);

// ---- symbolic shape values (ir/shape.h SymInt) ----
// Input i's elements as SymInts: its constant value when known (any integer
// dtype), else the elements shape inference tracked for it; nullopt when
// neither.
std::optional<std::vector<SymInt>> KnownSyms(const InferContext& ctx, size_t i);
// Records output `out`'s elements (nothing when every one is unknown; an
// empty list is known).
void SetSyms(InferContext& ctx, size_t out, std::vector<SymInt> syms);
// Output `out` = input `in`'s elements in the same order (Reshape, Squeeze,
// Unsqueeze, Flatten, Identity and integer Casts of a shape value).
void PropagateSyms(InferContext& ctx, size_t out, size_t in);
// a op b for op in Add, Sub, Mul, Div (integer semantics): known when both
// are; Mul and exact Div of dims as monomials; x + 0, x - 0, x * 1, x / 1.
SymInt SymArith(char op, const SymInt& a, const SymInt& b);

}  // namespace amptrain::ir
