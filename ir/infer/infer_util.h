// Helpers shared by the shape/dtype rules of ir/infer/*.cc.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "ir/op_schema.h"

namespace amptrain::ir {

// Numpy-style broadcasting of two shapes; symbolic dims broadcast against 1
// and against an equal symbol; other mismatches are an error.
StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b);
// Normalizes a possibly negative axis into [0, rank); error when out of range.
StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank);
// Output i = input j's type (dtype and shape).
inline void SameAs(InferContext& ctx, size_t out, size_t in) { ctx.outputs[out] = ctx.inputs[in]; }
// Fails unless input i has a shape.
Status RequireShape(const InferContext& ctx, size_t i);
// A float input, the output of its type and shape (ir/infer/unary.cc).
Status InferFloatUnary(InferContext& ctx);
// The rule of ReduceSum / ReduceMean (ir/infer/reduce.cc): canonical axes
// input, keepdims, noop_with_empty_axes; numeric input.
Status InferFloatReduce(InferContext& ctx);
// A dim that is unknown (symbolic without a name).
inline Dim UnknownDim() { return Dim::Symbolic(""); }

}  // namespace amptrain::ir

// ---- Value propagation of elementwise ops (Cast, Add, Equal, Where, ...) ----

#include <type_traits>

namespace amptrain::ir {

// A zero tensor of `type` to fill with propagated values, or an empty Tensor
// when the type is not static or has more than kMaxPropagatedElements elements.
Tensor NewPropagatedValue(const TensorType& type);
// Stores v into element i converting to t's dtype: float -> integer truncates
// toward zero and clamps (NaN -> 0); -> bool is v != 0; -> fp16/bf16 rounds
// to nearest even.
void SetElementFromDouble(Tensor& t, int64_t i, double v);
void SetElementFromInt64(Tensor& t, int64_t i, int64_t v);

// Maps a flat index of `out_dims` to the flat index of an input of `in_dims`
// broadcast to it (numpy rules; in_dims must broadcast to out_dims).
class BroadcastIndex {
 public:
  BroadcastIndex(const std::vector<int64_t>& in_dims, const std::vector<int64_t>& out_dims);
  int64_t operator()(int64_t out_index) const;

 private:
  std::vector<int64_t> out_dims_, in_strides_;  // in_strides_ aligned to out_dims_, 0 on broadcast dims
};

// output_values[out] = fn(args) elementwise, where args[k] is input ins[k]
// broadcast to outputs[out]. T = int64_t reads inputs with GetAsInt64 (integer
// and bool math), T = double with GetAsDouble. Does nothing unless every
// input value is known and NewPropagatedValue accepts the output type.
template <class T, class Fn>
void PropagateElementwise(InferContext& ctx, const std::vector<size_t>& ins, size_t out, Fn fn) {
  std::vector<const Tensor*> vals;
  for (size_t i : ins) {
    if (!ctx.value(i)) return;
    vals.push_back(ctx.value(i));
  }
  Tensor result = NewPropagatedValue(ctx.outputs[out]);
  if (result.empty()) return;
  std::vector<BroadcastIndex> index;
  for (const Tensor* v : vals) index.emplace_back(v->dims(), result.dims());
  std::vector<T> args(vals.size());
  for (int64_t e = 0; e < result.num_elements(); ++e) {
    for (size_t k = 0; k < vals.size(); ++k) {
      int64_t j = index[k](e);
      if constexpr (std::is_same_v<T, int64_t>) args[k] = vals[k]->GetAsInt64(j);
      else args[k] = vals[k]->GetAsDouble(j);
    }
    if constexpr (std::is_same_v<T, int64_t>) SetElementFromInt64(result, e, fn(args.data()));
    else SetElementFromDouble(result, e, fn(args.data()));
  }
  ctx.output_values[out] = std::move(result);
}

}  // namespace amptrain::ir

// ---- dtype checks and errors shared by the elementwise/reduce/norm rules ----

namespace amptrain::ir {

// Error "<op> node '<name>': input <i> has dtype <t>, expected <expected>"
// unless `ok`.
Status ExpectInputDType(const InferContext& ctx, size_t i, bool ok, const char* expected);
// Error unless inputs a and b have the same dtype.
Status ExpectSameDType(const InferContext& ctx, size_t a, size_t b);
// Like InferContext::Error with code kOutOfRange (bad axes).
Status NodeOutOfRange(const InferContext& ctx, const std::string& message);
// Float types, int32/int64/int8/uint8; not bool.
inline bool IsNumeric(DType t) { return IsFloat(t) || IsInteger(t); }

}  // namespace amptrain::ir
