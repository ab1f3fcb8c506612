// Ops amptrain runs as compositions of others, rewritten right after import's
// shape inference (importer/opset_adapters.h: LowerComposites), so that the
// executor, autodiff, the AMP plan and the exporter need nothing new:
//   InstanceNormalization(x [N, C, D...], scale, bias, epsilon)
//     -> LayerNormalization(x, ones[D...], axis = 2, epsilon)    (statistics per (n, c))
//        -> Mul(scale as [C, 1, ...]) -> Add(bias as [C, 1, ...])
//     The Mul is left out where scale is a Constant of ones and the Add where
//     bias is a Constant of zeros (nn.GroupNorm's export: its affine comes
//     after, as a separate Mul/Add); initializers always keep theirs. With
//     symbolic spatial dims the ones come from ConstantOfShape(Shape(x)[2:]).
//   DepthToSpace(x [N, C, H, W], b, DCR) -> Reshape [N, b, b, C/b^2, H, W]
//     -> Transpose [0, 3, 4, 1, 5, 2] -> Reshape [N, C/b^2, H b, W b];
//     CRD: Reshape [N, C/b^2, b, b, H, W] -> Transpose [0, 1, 4, 2, 5, 3].
//   SpaceToDepth(x, b, DCR) -> Reshape [N, C, H/b, b, W/b, b]
//     -> Transpose [0, 3, 5, 1, 2, 4] -> Reshape [N, C b^2, H/b, W/b];
//     CRD (opset 24): Transpose [0, 1, 3, 5, 2, 4].
//     The target shapes are computed from Shape(x) (Gather/Mul/Div/Concat),
//     so symbolic dims work; constant folding turns them into constants
//     where the shape is static.
//   Einsum (one or two inputs): see EinsumLowering below.
// Each replacement keeps the lowered node's output name, so graph outputs
// and later readers see the same value.
#include <algorithm>
#include <string>
#include <vector>

#include "importer/opset_adapters.h"
#include "ir/einsum_equation.h"
#include "ir/infer/value_util.h"

namespace amptrain::importer {

namespace {

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

// A float constant of `dtype` and `dims`, every element `fill`.
StatusOr<Value> FilledConstant(ir::Graph& g, const std::string& hint, ir::DType dtype, const std::vector<int64_t>& dims,
                               double fill) {
  AMP_ASSIGN_OR_RETURN(ir::Tensor t, ir::Tensor::Zeros(dtype, dims));
  for (int64_t i = 0; i < t.num_elements(); ++i) ir::SetElementFromDouble(t, i, fill);
  std::string name = g.UniqueName(hint);
  ir::Node* c = g.AddNode(OpKind::kConstant, {}, 1, name, {name});
  c->mutable_output_info(0).type = ir::TensorType::Of(dtype, dims);
  c->attrs().Set("value", std::move(t));
  return c->output(0);
}

// True when v is a Constant node (not an initializer: that is a parameter,
// which training moves off its initial ones / zeros) whose every element
// equals `x`.
bool ConstantAll(const ir::Graph& g, Value v, double x) {
  if (g.producer(v)->op() != OpKind::kConstant) return false;
  const ir::Tensor* t = g.ConstantValue(v);
  if (!t) return false;
  for (int64_t i = 0; i < t->num_elements(); ++i)
    if (t->GetAsDouble(i) != x) return false;
  return true;
}

// Makes `last` produce n's output under its name, and removes n. Where the
// lowering is the identity (Einsum "ij->ij"), `last` is n's input, which
// keeps its own name: an Identity carries n's.
Status Replace(ir::Graph& g, ir::Node* n, Value last) {
  Value y = n->output(0);
  const auto& ins = n->inputs();
  if (std::find(ins.begin(), ins.end(), last) != ins.end())
    last = g.AddNode(OpKind::kIdentity, {last}, 1, g.UniqueName(n->name() + "_identity"))->output(0);
  ir::ValueInfo info = g.info(y);
  g.ReplaceAllUsesWith(y, last);
  AMP_RETURN_IF_ERROR(g.RemoveNode(n));
  AMP_RETURN_IF_ERROR(g.RenameValue(last, info.name));
  g.mutable_info(last) = std::move(info);
  return Status::Ok();
}

// The static dims of x from `from` on, or an error naming the node.
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

// Builds int64 shape vectors at run time from Shape(x): a symbolic batch (or
// any dim) needs no fixed size; fully static shapes fold to constants.
class ShapeBuilder {
 public:
  ShapeBuilder(ir::Graph& g, Value x, std::string base) : g_(g), base_(std::move(base)) {
    shape_ = g.AddNode(OpKind::kShape, {x}, 1, g.UniqueName(base_ + "_shape"))->output(0);
  }
  Value Const(const std::vector<int64_t>& v) { return IntsConstant(g_, base_ + "_dims", v); }
  // The dims of x at `axes`.
  Value Dims(const std::vector<int64_t>& axes) {
    ir::Node* n = g_.AddNode(OpKind::kGather, {shape_, Const(axes)}, 1, g_.UniqueName(base_ + "_gather"));
    n->attrs().Set("axis", int64_t{0});
    return n->output(0);
  }
  Value Op(OpKind op, Value a, Value b) { return g_.AddNode(op, {a, b}, 1, g_.UniqueName(base_ + "_dim_op"))->output(0); }
  Value Concat(std::vector<Value> parts) {
    ir::Node* n = g_.AddNode(OpKind::kConcat, std::move(parts), 1, g_.UniqueName(base_ + "_concat"));
    n->attrs().Set("axis", int64_t{0});
    return n->output(0);
  }

 private:
  ir::Graph& g_;
  std::string base_;
  Value shape_;
};

Status LowerInstanceNorm(ir::Graph& g, ir::Node* n) {
  Value x = n->input(0), scale = n->input(1), bias = n->input(2);
  const std::string base = n->name();
  const ir::TensorType& xt = g.type(x);
  if (!xt.has_shape || xt.shape.rank() < 3) return InvalidArgument(n->Describe(), ": expects [N, C, D1, ...]");
  const size_t spatial_rank = xt.shape.rank() - 2;
  // LayerNormalization's scale: ones over the spatial dims, a constant where
  // they are static, else ConstantOfShape(Shape(x)[2:]) at run time.
  Value ones;
  auto spatial = StaticTail(g, n, x, 2);
  if (spatial.ok()) {
    AMP_ASSIGN_OR_RETURN(ones, FilledConstant(g, base + "_ones", xt.dtype, *spatial, 1.0));
  } else {
    std::vector<int64_t> axes(spatial_rank);
    for (size_t d = 0; d < spatial_rank; ++d) axes[d] = static_cast<int64_t>(d + 2);
    ShapeBuilder sb(g, x, base);
    AMP_ASSIGN_OR_RETURN(ir::Tensor one, ir::Tensor::Zeros(xt.dtype, {1}));
    ir::SetElementFromDouble(one, 0, 1.0);
    ir::Node* c = g.AddNode(OpKind::kConstantOfShape, {sb.Dims(axes)}, 1, g.UniqueName(base + "_ones"));
    c->attrs().Set("value", std::move(one));
    ones = c->output(0);
  }
  ir::Node* ln = g.AddNode(OpKind::kLayerNormalization, {x, ones}, 1, g.UniqueName(base + "_ln"));
  ln->attrs().Set("axis", int64_t{2});
  ln->attrs().Set("epsilon", static_cast<float>(n->attrs().Float("epsilon", 1e-5f)));
  ln->set_doc(n->doc());
  Value y = ln->output(0);
  // scale and bias as [C, 1, ..., 1]: they broadcast over the spatial dims.
  std::vector<int64_t> channel_shape(spatial_rank + 1, 1);
  channel_shape[0] = -1;
  auto per_channel = [&](Value v, const char* what) {
    return g.AddNode(OpKind::kReshape, {v, IntsConstant(g, base + "_" + what + "_shape", channel_shape)}, 1,
                     g.UniqueName(base + "_" + what + "_reshape"))->output(0);
  };
  if (!ConstantAll(g, scale, 1.0))
    y = g.AddNode(OpKind::kMul, {y, per_channel(scale, "scale")}, 1, g.UniqueName(base + "_scale"))->output(0);
  if (!ConstantAll(g, bias, 0.0))
    y = g.AddNode(OpKind::kAdd, {y, per_channel(bias, "bias")}, 1, g.UniqueName(base + "_bias"))->output(0);
  return Replace(g, n, y);
}

Status LowerBlockRearrange(ir::Graph& g, ir::Node* n) {
  Value x = n->input(0);
  const std::string base = n->name();
  if (!g.type(x).has_shape || g.type(x).shape.rank() != 4) return InvalidArgument(n->Describe(), ": expects a 4-D input");
  const int64_t b = n->attrs().Int("blocksize", 1);
  const bool crd = n->attrs().Str("mode", "DCR") == "CRD";
  ShapeBuilder sb(g, x, base);
  Value split, merged;  // Reshape's 0 copies N, -1 takes the channels
  std::vector<int64_t> perm;
  if (n->op() == OpKind::kDepthToSpace) {
    split = sb.Concat({sb.Const(crd ? std::vector<int64_t>{0, -1, b, b} : std::vector<int64_t>{0, b, b, -1}), sb.Dims({2, 3})});
    perm = crd ? std::vector<int64_t>{0, 1, 4, 2, 5, 3} : std::vector<int64_t>{0, 3, 4, 1, 5, 2};
    merged = sb.Concat({sb.Const({0, -1}), sb.Op(OpKind::kMul, sb.Dims({2, 3}), sb.Const({b}))});
  } else {  // CRD (opset 24): the channel varies slowest, as DepthToSpace CRD reads it
    Value hw = sb.Op(OpKind::kDiv, sb.Dims({2, 3}), sb.Const({b}));
    Value h = sb.Op(OpKind::kDiv, sb.Dims({2}), sb.Const({b})), w = sb.Op(OpKind::kDiv, sb.Dims({3}), sb.Const({b}));
    split = sb.Concat({sb.Const({0, -1}), h, sb.Const({b}), w, sb.Const({b})});
    perm = crd ? std::vector<int64_t>{0, 1, 3, 5, 2, 4} : std::vector<int64_t>{0, 3, 5, 1, 2, 4};
    merged = sb.Concat({sb.Const({0, -1}), hw});
  }
  Value v = g.AddNode(OpKind::kReshape, {x, split}, 1, g.UniqueName(base + "_split_reshape"))->output(0);
  ir::Node* t = g.AddNode(OpKind::kTranspose, {v}, 1, g.UniqueName(base + "_transpose"));
  t->attrs().Set("perm", perm);
  v = g.AddNode(OpKind::kReshape, {t->output(0), merged}, 1, g.UniqueName(base + "_merge_reshape"))->output(0);
  return Replace(g, n, v);
}

// Einsum, one or two inputs, no label repeated within an input (no
// diagonals). Labels of one input that the output lacks are summed first;
// then with two inputs:
//   batch (both inputs and the output), left (A and the output), contracted
//   (both, not the output), right (B and the output):
//   A -> Transpose [batch, left, contracted] -> Reshape [batch, L, K]
//   B -> Transpose [batch, contracted, right] -> Reshape [batch, K, R]
//   MatMul -> Reshape [batch, left..., right...] -> Transpose to the output.
// Batch dims may be symbolic (Reshape's 0 keeps them, MatMul broadcasts
// them); the left, contracted and right dims must be static.
class EinsumLowering {
 public:
  EinsumLowering(ir::Graph& g, ir::Node* n) : g_(g), n_(n), base_(n->name()) {}

  Status Run() {
    std::vector<size_t> ranks;
    for (size_t i = 0; i < n_->num_inputs(); ++i) {
      if (!g_.type(n_->input(i)).has_shape) return Unimplemented(n_->Describe(), ": input ", i, " has no known shape");
      ranks.push_back(g_.type(n_->input(i)).shape.rank());
    }
    const std::string equation = n_->attrs().Str("equation", "");
    auto eq = ir::ParseEinsum(equation, ranks);
    if (!eq.ok()) return InvalidArgument(n_->Describe(), ": ", eq.status().message());
    for (const std::string& t : eq->inputs)
      for (char c : t)
        if (std::count(t.begin(), t.end(), c) > 1)
          return Unimplemented(n_->Describe(), ": equation '", equation, "' repeats a label within one input "
                               "(a diagonal), which amptrain does not lower");
    out_ = eq->output;
    std::vector<Value> ins;
    std::vector<std::string> labels;
    for (size_t i = 0; i < eq->inputs.size(); ++i) {
      // Sum the labels no other input and not the output has.
      std::string keep, drop;
      for (char c : eq->inputs[i]) {
        bool elsewhere = out_.find(c) != std::string::npos;
        for (size_t j = 0; j < eq->inputs.size(); ++j) elsewhere |= j != i && eq->inputs[j].find(c) != std::string::npos;
        (elsewhere ? keep : drop) += c;
      }
      ins.push_back(SumOut(n_->input(i), eq->inputs[i], drop));
      labels.push_back(keep);
    }
    if (ins.size() == 1) return Replace(g_, n_, Permute(ins[0], labels[0], out_));
    AMP_ASSIGN_OR_RETURN(Value y, Contract(ins, labels));
    return Replace(g_, n_, y);
  }

 private:
  int64_t DimOf(Value v, const std::string& labels, char c) {
    return g_.type(v).shape[labels.find(c)].value;  // -1 when symbolic
  }
  Value Node1(OpKind op, std::vector<Value> in) { return g_.AddNode(op, std::move(in), 1, g_.UniqueName(base_ + "_einsum"))->output(0); }

  Value SumOut(Value x, const std::string& labels, const std::string& drop) {
    if (drop.empty()) return x;
    std::vector<int64_t> axes;
    for (char c : drop) axes.push_back(static_cast<int64_t>(labels.find(c)));
    ir::Node* r = g_.AddNode(OpKind::kReduceSum, {x, IntsConstant(g_, base_ + "_axes", axes)}, 1, g_.UniqueName(base_ + "_sum"));
    r->attrs().Set("keepdims", int64_t{0});
    return r->output(0);
  }

  // x (dims labelled `from`) transposed to the order of `to` (the same labels).
  Value Permute(Value x, const std::string& from, const std::string& to) {
    if (from == to) return x;
    std::vector<int64_t> perm;
    for (char c : to) perm.push_back(static_cast<int64_t>(from.find(c)));
    ir::Node* t = g_.AddNode(OpKind::kTranspose, {x}, 1, g_.UniqueName(base_ + "_transpose"));
    t->attrs().Set("perm", perm);
    return t->output(0);
  }

  Value Reshape(Value x, const std::vector<int64_t>& shape) {
    return Node1(OpKind::kReshape, {x, IntsConstant(g_, base_ + "_shape", shape)});
  }

  // The product of the dims of `group` in x, or -1 (with *ok false) when one is symbolic.
  int64_t Product(Value x, const std::string& labels, const std::string& group, bool* ok) {
    int64_t p = 1;
    for (char c : group) {
      int64_t d = DimOf(x, labels, c);
      if (d < 0) *ok = false;
      p *= d < 0 ? 1 : d;
    }
    return p;
  }

  StatusOr<Value> Contract(const std::vector<Value>& ins, const std::vector<std::string>& labels) {
    const std::string &la = labels[0], &lb = labels[1];
    std::string batch, left, contracted, right;
    for (char c : out_) {
      const bool a = la.find(c) != std::string::npos, b = lb.find(c) != std::string::npos;
      (a && b ? batch : a ? left : right) += c;
    }
    for (char c : la)
      if (lb.find(c) != std::string::npos && out_.find(c) == std::string::npos) contracted += c;
    bool ok = true;
    const int64_t l = Product(ins[0], la, left, &ok), k = Product(ins[0], la, contracted, &ok),
                  r = Product(ins[1], lb, right, &ok);
    if (!ok)
      return Unimplemented(n_->Describe(), ": a non-batch dim of equation '", n_->attrs().Str("equation", ""),
                           "' is symbolic; amptrain lowers Einsum with static sizes there");
    std::vector<int64_t> keep_batch(batch.size(), 0);  // Reshape's 0: copy the (maybe symbolic) batch dims
    std::vector<int64_t> a_shape = keep_batch, b_shape = keep_batch, y_shape = keep_batch;
    a_shape.insert(a_shape.end(), {l, k});
    b_shape.insert(b_shape.end(), {k, r});
    Value a = Reshape(Permute(ins[0], la, batch + left + contracted), a_shape);
    Value b = Reshape(Permute(ins[1], lb, batch + contracted + right), b_shape);
    Value y = Node1(OpKind::kMatMul, {a, b});
    // [batch, L, R] -> [batch, left..., right...] -> the output's order.
    for (char c : left) y_shape.push_back(DimOf(ins[0], la, c));
    for (char c : right) y_shape.push_back(DimOf(ins[1], lb, c));
    return Permute(Reshape(y, y_shape), batch + left + right, out_);
  }

  ir::Graph& g_;
  ir::Node* n_;
  std::string base_, out_;
};

Status LowerEinsum(ir::Graph& g, ir::Node* n) {
  if (n->num_inputs() > 2)
    return Unimplemented(n->Describe(), ": equation '", n->attrs().Str("equation", ""), "' has ", n->num_inputs(),
                         " inputs; amptrain lowers Einsum of one or two");
  return EinsumLowering(g, n).Run();
}

}  // namespace

StatusOr<bool> LowerComposites(ir::Graph& g) {
  std::vector<ir::NodeId> ids;
  for (const ir::Node* n : g.nodes())
    if (n->op() == OpKind::kInstanceNormalization || n->op() == OpKind::kDepthToSpace ||
        n->op() == OpKind::kSpaceToDepth || n->op() == OpKind::kEinsum)
      ids.push_back(n->id());
  for (ir::NodeId id : ids) {
    ir::Node* n = g.node(id);
    if (n->op() == OpKind::kInstanceNormalization) {
      AMP_RETURN_IF_ERROR(LowerInstanceNorm(g, n));
    } else if (n->op() == OpKind::kEinsum) {
      AMP_RETURN_IF_ERROR(LowerEinsum(g, n));
    } else {
      AMP_RETURN_IF_ERROR(LowerBlockRearrange(g, n));
    }
  }
  if (!ids.empty()) AMP_RETURN_IF_ERROR(g.InferShapes());
  return !ids.empty();
}

}  // namespace amptrain::importer
