// Building blocks of the import lowerings (importer/lowerings.cc,
// importer/lower_attention.cc): constants, run-time shape vectors, and the
// replacement of a lowered node by the values it is made of.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace amptrain::importer::lowering {

// An int64 [v.size()] Constant.
ir::Value IntsConstant(ir::Graph& g, const std::string& hint, const std::vector<int64_t>& v);
// An int64 scalar (0-D) Constant.
ir::Value IntScalar(ir::Graph& g, const std::string& hint, int64_t v);
// A float constant of `dtype` and `dims` ({} = a scalar), every element `fill`.
StatusOr<ir::Value> FilledConstant(ir::Graph& g, const std::string& hint, ir::DType dtype,
                                   const std::vector<int64_t>& dims, double fill);
// A Constant holding `value`.
ir::Value TensorConstant(ir::Graph& g, const std::string& hint, ir::Tensor value);
// True when v is a Constant node (not an initializer: that is a parameter,
// which training moves off its initial ones / zeros) whose every element
// equals `x`.
bool ConstantAll(const ir::Graph& g, ir::Value v, double x);
// Makes `last` produce n's output under its name, and removes n. Where the
// lowering is the identity (Einsum "ij->ij"), `last` is n's input, which
// keeps its own name: an Identity carries n's.
Status Replace(ir::Graph& g, ir::Node* n, ir::Value last);
// Replace for a node of several outputs: outs[i] takes output i's uses and
// name (Replace is the one-output case). Outputs after the first that nothing
// reads are dropped (outs[i] may be invalid there).
Status ReplaceOutputs(ir::Graph& g, ir::Node* n, std::vector<ir::Value> outs);
// The static dims of x from `from` on, or an error naming the node.
StatusOr<std::vector<int64_t>> StaticTail(const ir::Graph& g, const ir::Node* n, ir::Value x, size_t from);

// Adds nodes named after `base` (made unique): the lowerings' node builder.
class Builder {
 public:
  Builder(ir::Graph& g, std::string base) : g_(g), base_(std::move(base)) {}
  ir::Node* Node(ir::OpKind op, std::vector<ir::Value> in, const std::string& what) {
    return g_.AddNode(op, std::move(in), 1, g_.UniqueName(base_ + "_" + what));
  }
  ir::Value Op(ir::OpKind op, std::vector<ir::Value> in, const std::string& what) {
    return Node(op, std::move(in), what)->output(0);
  }
  ir::Value Cast(ir::Value v, ir::DType to);
  // v as int64: v itself, or a Cast of an int32 (or other) index.
  ir::Value Int64(ir::Value v) { return g_.type(v).dtype == ir::DType::kInt64 ? v : Cast(v, ir::DType::kInt64); }
  // 0, 1, ..., count - 1 (an int64 scalar's worth) as [count, 1 x trailing]:
  // indices along the axis that has `trailing` axes after it, for a
  // broadcast against a tensor of that rank.
  ir::Value RangeAlong(ir::Value count, size_t trailing);
  ir::Value Ints(const std::vector<int64_t>& v) { return IntsConstant(g_, base_ + "_dims", v); }
  ir::Value IntScalar(int64_t v) { return lowering::IntScalar(g_, base_ + "_int", v); }
  StatusOr<ir::Value> Scalar(ir::DType dtype, double v) { return FilledConstant(g_, base_ + "_scalar", dtype, {}, v); }

 private:
  ir::Graph& g_;
  std::string base_;
};

// Builds int64 shape vectors at run time from Shape(x): a symbolic batch (or
// any dim) needs no fixed size; fully static shapes fold to constants.
class ShapeBuilder {
 public:
  ShapeBuilder(ir::Graph& g, ir::Value x, std::string base);
  ir::Value shape() const { return shape_; }
  ir::Value Const(const std::vector<int64_t>& v) { return IntsConstant(g_, base_ + "_dims", v); }
  // The dims of x at `axes`, as an int64 [axes.size()].
  ir::Value Dims(const std::vector<int64_t>& axes);
  // The dim of x at `axis`, as an int64 scalar.
  ir::Value Dim(int64_t axis);
  ir::Value Op(ir::OpKind op, ir::Value a, ir::Value b);
  ir::Value Concat(std::vector<ir::Value> parts);

 private:
  ir::Graph& g_;
  std::string base_;
  ir::Value shape_;
};

// x Sigmoid(alpha x), x of float type t (Swish, SwiGLU's gate).
StatusOr<ir::Value> Swish(Builder& b, ir::Value x, float alpha, ir::DType t);

// Attention (opsets 23-25) as MatMul / Softmax / Where ... (importer/lower_attention.cc).
Status LowerAttention(ir::Graph& g, ir::Node* n);

// importer/lower_nn.cc
Status LowerLRN(ir::Graph& g, ir::Node* n);
Status LowerLpNormalization(ir::Graph& g, ir::Node* n);
Status LowerMeanVarianceNormalization(ir::Graph& g, ir::Node* n);
Status LowerLpPool(ir::Graph& g, ir::Node* n);
Status LowerGlobalLpPool(ir::Graph& g, ir::Node* n);
Status LowerMaxUnpool(ir::Graph& g, ir::Node* n);
Status LowerHardmax(ir::Graph& g, ir::Node* n);
Status LowerSwiGLU(ir::Graph& g, ir::Node* n);
Status LowerRotaryEmbedding(ir::Graph& g, ir::Node* n);

// importer/lower_tensor.cc
Status LowerReverseSequence(ir::Graph& g, ir::Node* n);
Status LowerCompress(ir::Graph& g, ir::Node* n);
Status LowerCenterCropPad(ir::Graph& g, ir::Node* n);
Status LowerTensorScatter(ir::Graph& g, ir::Node* n);
// Hann, Hamming and Blackman windows.
Status LowerWindow(ir::Graph& g, ir::Node* n);

}  // namespace amptrain::importer::lowering
