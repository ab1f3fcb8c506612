#include "autodiff/grad_context.h"

#include "ir/infer/infer_util.h"

namespace amptrain::autodiff {

using ir::OpKind;
using ir::Value;

GradContext::GradContext(ir::Graph& g, const ir::Node& node, std::vector<Value> grad_outputs, std::vector<bool> needs)
    : graph_(g), node_(node), grad_outputs_(std::move(grad_outputs)), needs_(std::move(needs)),
      grads_(node.num_inputs()) {}

const ir::Tensor* GradContext::constant(size_t i) const {
  return has_input(i) ? graph_.ConstantValue(input(i)) : nullptr;
}

void GradContext::SetGrad(size_t input, Value grad) {
  if (input < grads_.size()) grads_[input] = grad;
}

std::vector<Value> GradContext::Emit(OpKind op, std::vector<Value> inputs, ir::Attributes attrs, size_t num_outputs) {
  std::string name = StrCat("grad/", node_.name(), "/", ir::Schema(op).name, "_", counter_++);
  ir::Node* n = graph_.AddNode(op, std::move(inputs), num_outputs, name);
  n->attrs() = std::move(attrs);
  if (status_.ok()) {
    for (Value in : n->inputs())
      if (in.valid() && graph_.type(in).dtype == ir::DType::kUndefined)
        status_ = Internal("gradient of ", node_.Describe(), ": ", n->Describe(), " has an input without a type");
  }
  if (status_.ok()) {
    Status s = graph_.InferNode(n);
    if (!s.ok()) status_ = s.WithContext(StrCat("while building the gradient of ", node_.Describe()));
  }
  std::vector<Value> outs;
  for (size_t i = 0; i < num_outputs; ++i) outs.push_back(n->output(i));
  return outs;
}

Value GradContext::Const(ir::Tensor t) {
  ir::Attributes a;
  a.Set("value", std::move(t));
  return Emit1(OpKind::kConstant, {}, std::move(a));
}

Value GradContext::Scalar(double v, Value like) {
  auto t = ir::Tensor::Zeros(type(like).dtype, {});
  if (!t.ok()) {
    if (status_.ok()) status_ = t.status();
    return Const(ir::Tensor::Scalar(static_cast<float>(v)));
  }
  ir::SetElementFromDouble(*t, 0, v);
  return Const(std::move(*t));
}

Value GradContext::Ints(const std::vector<int64_t>& v) {
  return Const(ir::Tensor::Int64s(v, {static_cast<int64_t>(v.size())}));
}

Value GradContext::ShapeOf(Value v) {
  const ir::TensorType& t = type(v);
  if (t.has_shape && t.shape.is_static()) return Ints(t.shape.static_dims());
  return Emit1(OpKind::kShape, {v});
}

Value GradContext::ZerosLike(Value v) {
  auto zero = ir::Tensor::Zeros(type(v).dtype, {1});
  if (!zero.ok()) {
    if (status_.ok()) status_ = zero.status();
    return v;
  }
  ir::Attributes a;
  a.Set("value", std::move(*zero));
  return Emit1(OpKind::kConstantOfShape, {ShapeOf(v)}, std::move(a));
}

namespace {
// Same dims, and every symbolic dim named (an unnamed one may differ at run time).
bool SameKnownShape(const ir::TensorType& a, const ir::TensorType& b) {
  if (!a.has_shape || !b.has_shape || !(a.shape == b.shape)) return false;
  for (const ir::Dim& d : a.shape.dims())
    if (!d.is_static() && d.symbol.empty()) return false;
  return true;
}
}  // namespace

Value GradContext::SumTo(Value g, Value like) {
  if (SameKnownShape(type(g), type(like))) return g;
  Value out = Emit1(OpKind::kReduceSumTo, {g, ShapeOf(like)});
  if (status_.ok()) graph_.mutable_info(out).type = ir::TensorType::Of(type(g).dtype, type(like).shape);
  return out;
}

Value GradContext::ReshapeLike(Value g, Value like) {
  if (SameKnownShape(type(g), type(like))) return g;
  ir::Attributes a;
  a.Set("allowzero", int64_t{1});
  Value out = Emit1(OpKind::kReshape, {g, ShapeOf(like)}, std::move(a));
  if (status_.ok()) graph_.mutable_info(out).type = ir::TensorType::Of(type(g).dtype, type(like).shape);
  return out;
}

StatusOr<std::vector<int64_t>> GradContext::StaticDims(Value v, const char* what) const {
  const ir::TensorType& t = type(v);
  if (!t.has_shape || !t.shape.is_static())
    return Unsupported("needs static dims of ", what, ", got ", t.ToString());
  return t.shape.static_dims();
}

}  // namespace amptrain::autodiff
