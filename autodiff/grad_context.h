// What a gradient rule sees, and the rule table.
//
// A rule is one short function per op (autodiff/rules/<family>.cc):
//
//   Status ExpGrad(GradContext& c) {             // y = exp(x)
//     c.SetGrad(0, c.Mul(c.grad_output(0), c.output(0)));
//     return Status::Ok();
//   }
//
// It reads the forward node through input(i)/output(i)/attrs(), the incoming
// gradients through grad_output(i) (invalid when no gradient reaches output i:
// treat as zeros or skip), emits backward nodes with Emit and the helpers, and
// hands one gradient per input slot to SetGrad. It should skip the work for
// inputs where needs_grad(i) is false; the driver drops gradients set there.
//
// Emit never fails on the spot: it runs the new node's shape rule and keeps
// the first error (sticky, like a builder), which the driver reports after
// the rule returns, with the forward node named. Rules return an error
// themselves for attributes they do not support (Error / Unsupported).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"

namespace amptrain::autodiff {

class GradContext {
 public:
  GradContext(ir::Graph& g, const ir::Node& node, std::vector<ir::Value> grad_outputs, std::vector<bool> needs);

  // ---- the forward node ----
  const ir::Node& node() const { return node_; }
  const ir::Attributes& attrs() const { return node_.attrs(); }
  size_t num_inputs() const { return node_.num_inputs(); }
  bool has_input(size_t i) const { return node_.has_input(i); }
  ir::Value input(size_t i) const { return node_.input(i); }
  ir::Value output(size_t i) const { return node_.output(i); }
  ir::Value grad_output(size_t i) const { return i < grad_outputs_.size() ? grad_outputs_[i] : ir::Value{}; }
  bool needs_grad(size_t i) const { return i < needs_.size() && needs_[i]; }
  const ir::TensorType& type(ir::Value v) const { return graph_.type(v); }
  size_t rank(ir::Value v) const { return graph_.type(v).shape.rank(); }
  // The tensor of a constant input (Initializer/Constant), nullptr otherwise.
  const ir::Tensor* constant(size_t input) const;
  ir::Graph& graph() { return graph_; }

  // ---- results ----
  void SetGrad(size_t input, ir::Value grad);
  const std::vector<ir::Value>& grads() const { return grads_; }
  const Status& status() const { return status_; }

  // ---- building (nodes named "grad/<forward node>/<Op>_<k>") ----
  std::vector<ir::Value> Emit(ir::OpKind op, std::vector<ir::Value> inputs, ir::Attributes attrs = {},
                              size_t num_outputs = 1);
  ir::Value Emit1(ir::OpKind op, std::vector<ir::Value> inputs, ir::Attributes attrs = {}) {
    return Emit(op, std::move(inputs), std::move(attrs))[0];
  }
  ir::Value Const(ir::Tensor t);
  // A scalar constant of `like`'s dtype.
  ir::Value Scalar(double v, ir::Value like);
  ir::Value Ints(const std::vector<int64_t>& v);  // int64 1-D constant
  ir::Value Add(ir::Value a, ir::Value b) { return Emit1(ir::OpKind::kAdd, {a, b}); }
  ir::Value Sub(ir::Value a, ir::Value b) { return Emit1(ir::OpKind::kSub, {a, b}); }
  ir::Value Mul(ir::Value a, ir::Value b) { return Emit1(ir::OpKind::kMul, {a, b}); }
  ir::Value Div(ir::Value a, ir::Value b) { return Emit1(ir::OpKind::kDiv, {a, b}); }
  ir::Value Neg(ir::Value a) { return Emit1(ir::OpKind::kNeg, {a}); }
  // The shape of v: an int64 constant when static, else a Shape node.
  ir::Value ShapeOf(ir::Value v);
  // Zeros shaped like v (ConstantOfShape).
  ir::Value ZerosLike(ir::Value v);
  // g summed down to `like`'s shape (ReduceSumTo), or g itself when the shapes already agree.
  ir::Value SumTo(ir::Value g, ir::Value like);
  // Reshape(g, Shape(like)).
  ir::Value ReshapeLike(ir::Value g, ir::Value like);
  // Static dims of v, or an error naming the forward node when some dim is symbolic.
  StatusOr<std::vector<int64_t>> StaticDims(ir::Value v, const char* what) const;

  // ---- errors naming the forward node ----
  template <class... A> Status Error(const A&... a) const {
    return InvalidArgument("gradient of ", node_.Describe(), ": ", a...);
  }
  template <class... A> Status Unsupported(const A&... a) const {
    return Unimplemented("gradient of ", node_.Describe(), ": ", a...);
  }

 private:
  ir::Graph& graph_;
  const ir::Node& node_;
  std::vector<ir::Value> grad_outputs_;
  std::vector<bool> needs_;
  std::vector<ir::Value> grads_;
  Status status_;
  int counter_ = 0;
};

using GradFn = Status (*)(GradContext&);
using RuleTable = std::array<GradFn, static_cast<size_t>(ir::OpKind::kNumOps)>;

// One registration call per family file; autodiff.cc calls them all.
void RegisterElementwiseRules(RuleTable& t);  // rules/elementwise.cc
void RegisterNNRules(RuleTable& t);           // rules/nn.cc
void RegisterLinalgRules(RuleTable& t);       // rules/linalg.cc
void RegisterShapeRules(RuleTable& t);        // rules/shape.cc
void RegisterSpectralRules(RuleTable& t);     // rules/spectral.cc

inline void SetRule(RuleTable& t, ir::OpKind op, GradFn fn) { t[static_cast<size_t>(op)] = fn; }

}  // namespace amptrain::autodiff
