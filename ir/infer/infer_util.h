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
// A dim that is unknown (symbolic without a name).
inline Dim UnknownDim() { return Dim::Symbolic(""); }

}  // namespace amptrain::ir
