// Small classifiers whose parameters reach the loss through the routes that
// import-time constant folding used to consume (issue 10, item 2): a node
// whose inputs are all initializers or constants, such as Transpose(weight)
// before a MatMul (PyTorch's attention output projections) or
// Gather(position_table, constant indices). Folded, the weight became a
// constant and was never trained. Each builder makes the same model in any
// float dtype with the same values (drawn in float32), so a float64 copy
// gives finite differences for the float32 one.
//
//   route           the parameters and how they reach the logits [4, C]
//   transpose       MatMul(x, Transpose(w)) + b                      (nn.Linear as exported)
//   gather          Gather(pos, [0, 1]) added to x [4,2,3], Flatten, MatMul(., head)
//   split_slice     Split(in_proj) -> Transpose -> MatMul, twice; Slice(bias_all)
//   reshape_cast    MatMul(x, Reshape(w_flat)) + Cast(Unsqueeze(b)) * Squeeze(gain)
//   scaled          MatMul(x, Mul(w, 0.5)) + Div(b, 2)               (constants as Constant nodes)
//   concat          MatMul(x, Concat(w1, w2))
//   expand_cls      Concat(Expand(cls, [4,1,3]), x), Flatten, MatMul(., head)   (a ViT class token)
//   tied            Gather(emb, ids), ReduceMean, MatMul(., Transpose(emb))     (tied embeddings)
//
// Inputs: `x` float [4, ...] (`ids` int64 [4, 2] for `tied`), labels int64 [4].
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/infer/infer_util.h"
#include "ir/onnx_dtype.h"

namespace amptrain::testing {

inline const std::vector<std::string>& ParamRoutes() {
  static const std::vector<std::string> routes = {"transpose", "gather", "split_slice", "reshape_cast",
                                                  "scaled", "concat", "expand_cls", "tied"};
  return routes;
}

// Uniform [lo, hi) values drawn in float32, stored as `dtype`.
inline ir::Tensor RouteTensor(ir::DType dtype, const std::vector<int64_t>& dims, uint32_t seed, double lo = -1.0,
                              double hi = 1.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(static_cast<float>(lo), static_cast<float>(hi));
  ir::Tensor t = *ir::Tensor::Zeros(dtype, dims);
  for (int64_t i = 0; i < t.num_elements(); ++i) ir::SetElementFromDouble(t, i, u(rng));
  return t;
}

class RouteBuilder {
 public:
  explicit RouteBuilder(ir::DType dtype) : dtype_(dtype), g_(std::make_unique<ir::Graph>()) {}

  ir::Graph& g() { return *g_; }
  ir::Value Param(const std::string& name, const std::vector<int64_t>& dims) {
    return g_->AddInitializer(name, RouteTensor(dtype_, dims, seed_++));
  }
  ir::Value Ints(const std::string& name, const std::vector<int64_t>& v) {
    return g_->AddInitializer(name, ir::Tensor::Int64s(v, {static_cast<int64_t>(v.size())}));
  }
  ir::Value Scalar(double v) {
    ir::Tensor t = *ir::Tensor::Zeros(dtype_, {});
    ir::SetElementFromDouble(t, 0, v);
    ir::Node* c = g_->AddNode(ir::OpKind::kConstant, {}, 1, g_->UniqueName("c"));
    c->attrs().Set("value", std::move(t));
    return c->output(0);
  }
  ir::Value Input(const std::string& name, const std::vector<int64_t>& dims, ir::DType dtype) {
    return g_->AddInput(name, ir::TensorType::Of(dtype, dims));
  }
  ir::Value Input(const std::string& name, const std::vector<int64_t>& dims) { return Input(name, dims, dtype_); }
  ir::Value Input(const std::string& name, ir::Shape shape) {
    return g_->AddInput(name, ir::TensorType::Of(dtype_, std::move(shape)));
  }
  ir::Value Op(ir::OpKind op, std::vector<ir::Value> in, ir::Attributes a = {}, size_t outputs = 1,
               size_t which = 0) {
    ir::Node* n = g_->AddNode(op, std::move(in), outputs);
    n->attrs() = std::move(a);
    return n->output(which);
  }
  ir::Value T(ir::Value w) { return Op(ir::OpKind::kTranspose, {w}); }
  ir::Value MatMul(ir::Value a, ir::Value b) { return Op(ir::OpKind::kMatMul, {a, b}); }
  ir::Value Add(ir::Value a, ir::Value b) { return Op(ir::OpKind::kAdd, {a, b}); }
  static ir::Attributes Attr(const char* key, ir::AttrValue v) {
    ir::Attributes a;
    a.Set(key, std::move(v));
    return a;
  }
  ir::DType dtype() const { return dtype_; }

  std::unique_ptr<ir::Graph> Finish(ir::Value logits) {
    ir::Node* out = g_->AddNode(ir::OpKind::kIdentity, {logits}, 1, "logits", {"logits"});
    g_->AddOutput(out->output(0));
    EXPECT_TRUE(g_->InferShapes().ok()) << g_->InferShapes().ToString();
    return std::move(g_);
  }

 private:
  ir::DType dtype_;
  std::unique_ptr<ir::Graph> g_;
  uint32_t seed_ = 11;
};

inline std::unique_ptr<ir::Graph> BuildRoute(const std::string& route, ir::DType dtype) {
  using ir::OpKind;
  RouteBuilder r(dtype);
  if (route == "transpose") {
    ir::Value x = r.Input("x", {4, 5});
    return r.Finish(r.Add(r.MatMul(x, r.T(r.Param("w", {3, 5}))), r.Param("b", {3})));
  }
  if (route == "gather") {
    ir::Value x = r.Input("x", {4, 2, 3});
    ir::Value pos = r.Op(OpKind::kGather, {r.Param("pos", {6, 3}), r.Ints("positions", {0, 1})});
    ir::Value h = r.Op(OpKind::kFlatten, {r.Add(x, pos)}, RouteBuilder::Attr("axis", int64_t{1}));
    return r.Finish(r.MatMul(h, r.Param("head", {6, 3})));
  }
  if (route == "split_slice") {
    ir::Value x = r.Input("x", {4, 3});
    ir::Node* split = r.g().AddNode(OpKind::kSplit, {r.Param("in_proj", {6, 3}), r.Ints("halves", {3, 3})}, 2);
    split->attrs().Set("axis", int64_t{0});
    ir::Value a = r.MatMul(x, r.T(split->output(0)));
    ir::Value b = r.MatMul(r.Op(OpKind::kTanh, {x}), r.T(split->output(1)));
    ir::Value bias = r.Op(OpKind::kSlice, {r.Param("bias_all", {6}), r.Ints("starts", {2}), r.Ints("ends", {5})});
    return r.Finish(r.Add(r.Add(a, b), bias));
  }
  if (route == "reshape_cast") {
    ir::Value x = r.Input("x", {4, 3});
    ir::Value w = r.Op(OpKind::kReshape, {r.Param("w_flat", {9}), r.Ints("w_shape", {3, 3})});
    ir::Value b = r.Op(OpKind::kUnsqueeze, {r.Param("b", {3}), r.Ints("axes0", {0})});
    ir::Value cast = r.Op(OpKind::kCast, {b},
                          RouteBuilder::Attr("to", static_cast<int64_t>(ir::OnnxFromDType(r.dtype()))));
    ir::Value gain = r.Op(OpKind::kSqueeze, {r.Param("gain", {1, 3}), r.Ints("axes_sq", {0})});
    return r.Finish(r.Add(r.MatMul(x, w), r.Op(OpKind::kMul, {cast, gain})));
  }
  if (route == "scaled") {
    ir::Value x = r.Input("x", {4, 3});
    ir::Value w = r.Op(OpKind::kMul, {r.Param("w", {3, 3}), r.Scalar(0.5)});
    ir::Value b = r.Op(OpKind::kDiv, {r.Param("b", {3}), r.Scalar(2.0)});
    return r.Finish(r.Add(r.MatMul(x, w), b));
  }
  if (route == "concat") {
    ir::Value x = r.Input("x", {4, 3});
    ir::Value w = r.Op(OpKind::kConcat, {r.Param("w1", {3, 2}), r.Param("w2", {3, 1})},
                       RouteBuilder::Attr("axis", int64_t{1}));
    return r.Finish(r.MatMul(x, w));
  }
  if (route == "expand_cls") {
    ir::Value x = r.Input("x", {4, 2, 3});
    ir::Value cls = r.Op(OpKind::kExpand, {r.Param("cls", {1, 1, 3}), r.Ints("batch_shape", {4, 1, 3})});
    ir::Value seq = r.Op(OpKind::kConcat, {cls, x}, RouteBuilder::Attr("axis", int64_t{1}));
    ir::Value h = r.Op(OpKind::kFlatten, {seq}, RouteBuilder::Attr("axis", int64_t{1}));
    return r.Finish(r.MatMul(h, r.Param("head", {9, 3})));
  }
  if (route == "tied") {
    ir::Value ids = r.Input("ids", {4, 2}, ir::DType::kInt64);
    ir::Value emb = r.Param("emb", {5, 3});
    ir::Value h = r.Op(OpKind::kReduceMean, {r.Op(OpKind::kGather, {emb, ids}), r.Ints("seq_axis", {1})},
                       RouteBuilder::Attr("keepdims", int64_t{0}));
    return r.Finish(r.MatMul(h, r.T(emb)));
  }
  ADD_FAILURE() << "unknown route " << route;
  return nullptr;
}

// The route's data inputs (x as `dtype`, or ids) and labels int64 [4].
inline std::map<std::string, ir::Tensor> RouteFeeds(const ir::Graph& g, ir::DType dtype) {
  std::map<std::string, ir::Tensor> feeds;
  for (ir::Value v : g.inputs()) {
    const ir::TensorType& t = g.type(v);
    if (t.dtype == ir::DType::kInt64) {
      feeds[g.name(v)] = ir::Tensor::Int64s({0, 3, 4, 4, 1, 2, 3, 0}, t.shape.static_dims());
    } else {
      feeds[g.name(v)] = RouteTensor(dtype, t.shape.static_dims(), 7);
    }
  }
  const int64_t classes = g.type(g.outputs()[0]).shape[1].value;
  feeds["labels"] = ir::Tensor::Int64s({0, 1 % classes, 2 % classes, 1 % classes}, {4});
  return feeds;
}

}  // namespace amptrain::testing
