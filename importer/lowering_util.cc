#include "importer/lowering_util.h"

#include <algorithm>

#include "ir/infer/value_util.h"
#include "ir/onnx_dtype.h"

namespace amptrain::importer::lowering {

using ir::OpKind;
using ir::Value;

Value IntsConstant(ir::Graph& g, const std::string& hint, const std::vector<int64_t>& v) {
  auto t = ir::Tensor::Zeros(ir::DType::kInt64, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t->data<int64_t>());
  std::string name = g.UniqueName(hint);
  ir::Node* c = g.AddNode(OpKind::kConstant, {}, 1, name, {name});
  c->mutable_output_info(0).type = ir::TensorType::Of(ir::DType::kInt64, {static_cast<int64_t>(v.size())});
  c->attrs().Set("value", std::move(*t));
  return c->output(0);
}

StatusOr<Value> FilledConstant(ir::Graph& g, const std::string& hint, ir::DType dtype, const std::vector<int64_t>& dims,
                               double fill) {
  AMP_ASSIGN_OR_RETURN(ir::Tensor t, ir::Tensor::Zeros(dtype, dims));
  for (int64_t i = 0; i < t.num_elements(); ++i) ir::SetElementFromDouble(t, i, fill);
  return TensorConstant(g, hint, std::move(t));
}

Value TensorConstant(ir::Graph& g, const std::string& hint, ir::Tensor value) {
  std::string name = g.UniqueName(hint);
  ir::Node* c = g.AddNode(OpKind::kConstant, {}, 1, name, {name});
  c->mutable_output_info(0).type = ir::TensorType::Of(value.dtype(), value.dims());
  c->attrs().Set("value", std::move(value));
  return c->output(0);
}

bool ConstantAll(const ir::Graph& g, Value v, double x) {
  if (g.producer(v)->op() != OpKind::kConstant) return false;
  const ir::Tensor* t = g.ConstantValue(v);
  if (!t) return false;
  for (int64_t i = 0; i < t->num_elements(); ++i)
    if (t->GetAsDouble(i) != x) return false;
  return true;
}

Status Replace(ir::Graph& g, ir::Node* n, Value last) { return ReplaceOutputs(g, n, {last}); }

StatusOr<std::vector<int64_t>> StaticTail(const ir::Graph& g, const ir::Node* n, Value x, size_t from) {
  const ir::TensorType& t = g.type(x);
  if (!t.has_shape) return Unimplemented(n->Describe(), ": the input shape is unknown");
  std::vector<int64_t> dims;
  for (size_t d = from; d < t.shape.rank(); ++d) {
    if (!t.shape[d].is_static())
      return Unimplemented(n->Describe(), ": dim ", d, " of the input (", t.shape.ToString(),
                           ") is not static; amptrain lowers this op with fixed sizes");
    dims.push_back(t.shape[d].value);
  }
  return dims;
}

Value IntScalar(ir::Graph& g, const std::string& hint, int64_t v) {
  auto t = ir::Tensor::Zeros(ir::DType::kInt64, {});
  *t->data<int64_t>() = v;
  std::string name = g.UniqueName(hint);
  ir::Node* c = g.AddNode(OpKind::kConstant, {}, 1, name, {name});
  c->mutable_output_info(0).type = ir::TensorType::Of(ir::DType::kInt64, std::vector<int64_t>{});
  c->attrs().Set("value", std::move(*t));
  return c->output(0);
}

Status ReplaceOutputs(ir::Graph& g, ir::Node* n, std::vector<Value> outs) {
  const auto& ins = n->inputs();
  std::vector<ir::ValueInfo> infos(outs.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    Value y = n->output(i);
    if (i > 0 && g.uses(y).empty() && !g.is_graph_output(y)) {  // an optional output nothing reads
      outs[i] = Value{};
      continue;
    }
    if (!outs[i].valid()) return Internal(n->Describe(), ": lowering produced no value for output ", i);
    // An input of n, or a value that another output already took, keeps its
    // name: an Identity carries this output's.
    bool taken = std::find(ins.begin(), ins.end(), outs[i]) != ins.end() ||
                 std::find(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(i), outs[i]) !=
                     outs.begin() + static_cast<std::ptrdiff_t>(i);
    if (taken)
      outs[i] = g.AddNode(OpKind::kIdentity, {outs[i]}, 1, g.UniqueName(n->name() + "_identity"))->output(0);
    infos[i] = g.info(y);
    g.ReplaceAllUsesWith(y, outs[i]);
  }
  AMP_RETURN_IF_ERROR(g.RemoveNode(n));
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!outs[i].valid()) continue;
    AMP_RETURN_IF_ERROR(g.RenameValue(outs[i], infos[i].name));
    g.mutable_info(outs[i]) = std::move(infos[i]);
  }
  return Status::Ok();
}

Value Builder::Cast(Value v, ir::DType to) {
  ir::Node* c = Node(OpKind::kCast, {v}, "cast");
  c->attrs().Set("to", static_cast<int64_t>(ir::OnnxFromDType(to)));
  return c->output(0);
}

Value Builder::RangeAlong(Value count, size_t trailing) {
  Value r = Op(OpKind::kRange, {IntScalar(0), count, IntScalar(1)}, "range");
  if (trailing == 0) return r;
  std::vector<int64_t> dims(trailing + 1, 1);
  dims[0] = -1;
  return Op(OpKind::kReshape, {r, Ints(dims)}, "range_along");
}

StatusOr<Value> Swish(Builder& b, Value x, float alpha, ir::DType t) {
  Value ax = x;
  if (alpha != 1.0f) {
    AMP_ASSIGN_OR_RETURN(Value a, b.Scalar(t, alpha));
    ax = b.Op(OpKind::kMul, {x, a}, "alpha");
  }
  return b.Op(OpKind::kMul, {x, b.Op(OpKind::kSigmoid, {ax}, "sigmoid")}, "swish");
}

ShapeBuilder::ShapeBuilder(ir::Graph& g, Value x, std::string base) : g_(g), base_(std::move(base)) {
  shape_ = g.AddNode(OpKind::kShape, {x}, 1, g.UniqueName(base_ + "_shape"))->output(0);
}

Value ShapeBuilder::Dims(const std::vector<int64_t>& axes) {
  ir::Node* n = g_.AddNode(OpKind::kGather, {shape_, Const(axes)}, 1, g_.UniqueName(base_ + "_gather"));
  n->attrs().Set("axis", int64_t{0});
  return n->output(0);
}

Value ShapeBuilder::Dim(int64_t axis) {
  ir::Node* n = g_.AddNode(OpKind::kGather, {shape_, IntScalar(g_, base_ + "_axis", axis)}, 1,
                           g_.UniqueName(base_ + "_gather"));
  n->attrs().Set("axis", int64_t{0});
  return n->output(0);
}

Value ShapeBuilder::Op(OpKind op, Value a, Value b) {
  return g_.AddNode(op, {a, b}, 1, g_.UniqueName(base_ + "_dim_op"))->output(0);
}

Value ShapeBuilder::Concat(std::vector<Value> parts) {
  ir::Node* n = g_.AddNode(OpKind::kConcat, std::move(parts), 1, g_.UniqueName(base_ + "_concat"));
  n->attrs().Set("axis", int64_t{0});
  return n->output(0);
}

}  // namespace amptrain::importer::lowering
