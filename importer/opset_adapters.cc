#include "importer/opset_adapters.h"

#include <algorithm>

#include "ir/infer/infer_util.h"
#include "ir/onnx_dtype.h"
#include "ir/rnn.h"

namespace amptrain::importer {

namespace {

using ir::OpKind;

// An attribute that became input `slot` after opset `last_attr_opset`.
struct AttrInput {
  OpKind op;
  int64_t last_attr_opset;
  const char* attr;
  size_t slot;
  bool is_float = false;  // a float32 scalar (Dropout ratio) rather than an int64 list
};

constexpr AttrInput kAttrInputs[] = {
    {OpKind::kReduceMean, 17, "axes", 1},      {OpKind::kReduceMax, 17, "axes", 1},
    {OpKind::kReduceL2, 17, "axes", 1},        {OpKind::kReduceMin, 17, "axes", 1},
    {OpKind::kReduceProd, 17, "axes", 1},      {OpKind::kReduceLogSumExp, 17, "axes", 1},
    {OpKind::kReduceL1, 17, "axes", 1},        {OpKind::kReduceSumSquare, 17, "axes", 1},
    {OpKind::kReduceLogSum, 17, "axes", 1},    {OpKind::kReduceSum, 12, "axes", 1},
    {OpKind::kSqueeze, 12, "axes", 1},         {OpKind::kUnsqueeze, 12, "axes", 1},
    {OpKind::kSplit, 12, "split", 1},          {OpKind::kDropout, 11, "ratio", 1, true},
};

const AttrInput* FindAttrInput(OpKind op, int64_t opset) {
  for (const AttrInput& r : kAttrInputs)
    if (r.op == op && opset <= r.last_attr_opset) return &r;
  return nullptr;
}

ir::Value AddConstant(ir::Graph& g, const std::string& hint, ir::Tensor value) {
  std::string name = g.UniqueName(hint);
  ir::Node* c = g.AddNode(OpKind::kConstant, {}, 1, name, {name});
  c->mutable_output_info(0).type = ir::TensorType::Of(value.dtype(), value.dims());
  c->attrs().Set("value", std::move(value));
  return c->output(0);
}

Status AttrToInput(ir::Graph& g, ir::Node* n, const AttrInput& r) {
  if (!n->attrs().Has(r.attr)) return Status::Ok();
  if (n->has_input(r.slot)) return InvalidArgument(n->Describe(), ": has both attribute and input '", r.attr, "'");
  ir::Tensor t;
  if (r.is_float) {
    AMP_ASSIGN_OR_RETURN(float v, n->attrs().GetFloat(r.attr, 0.0f));
    t = ir::Tensor::Floats({v}, {});
  } else {
    AMP_ASSIGN_OR_RETURN(auto v, n->attrs().GetInts(r.attr));
    t = ir::Tensor::Int64s(v, {static_cast<int64_t>(v.size())});
  }
  ir::Value c = AddConstant(g, StrCat(n->name(), "_", r.attr), std::move(t));
  g.SetInput(n, r.slot, c);
  n->attrs().Erase(r.attr);
  return Status::Ok();
}

// Drops input `slot` of `n`, and its Constant producer when nothing else uses it.
Status DropInput(ir::Graph& g, ir::Node* n, size_t slot) {
  ir::Value v = n->input(slot);
  g.SetInput(n, slot, ir::Value{});
  ir::Node* p = g.producer(v);
  if (p->op() == OpKind::kConstant && g.uses(v).empty() && !g.is_graph_output(v)) return g.RemoveNode(p);
  return Status::Ok();
}

// Removes v's producer when no node or graph output uses it any more, then
// its own producers the same way; graph inputs and initializers stay.
Status RemoveIfUnused(ir::Graph& g, ir::Value v) {
  std::vector<ir::NodeId> pending{v.node};
  while (!pending.empty()) {
    ir::Node* p = g.node(pending.back());
    pending.pop_back();
    if (!p || p->op() == OpKind::kInput || p->op() == OpKind::kInitializer) continue;
    bool used = false;
    for (size_t i = 0; i < p->num_outputs(); ++i) used = used || !p->uses(i).empty() || g.is_graph_output(p->output(i));
    if (used) continue;
    for (ir::Value in : p->inputs())
      if (in.valid()) pending.push_back(in.node);
    AMP_RETURN_IF_ERROR(g.RemoveNode(p));
  }
  return Status::Ok();
}

Status InputToAttr(ir::Graph& g, ir::Node* n, const AttrInput& r) {
  if (!n->has_input(r.slot)) return Status::Ok();
  const ir::Tensor* t = g.ConstantValue(n->input(r.slot));
  if (!t)
    return Unimplemented(n->Describe(), ": input '", r.attr, "' must be a constant to be written as an attribute for "
                         "opset <= ", r.last_attr_opset);
  if (r.is_float) {
    if (t->num_elements() != 1) return InvalidArgument(n->Describe(), ": '", r.attr, "' is not a scalar");
    n->attrs().Set(r.attr, static_cast<float>(t->GetAsDouble(0)));
  } else {
    n->attrs().Set(r.attr, t->ToInt64Vector());
  }
  return DropInput(g, n, r.slot);
}

// Recreates `old` with `count` outputs (same name, inputs, attributes; the
// first min(count, old outputs) keep their names and types). Outputs beyond
// `count` must be unused.
Status RecreateWithOutputs(ir::Graph& g, ir::Node* old, size_t count) {
  ir::Node* n = g.AddNode(old->op(), old->inputs(), count, old->name());
  n->attrs() = old->attrs();
  n->set_doc(old->doc());
  std::vector<std::string> names;
  for (size_t i = 0; i < std::min(count, old->num_outputs()); ++i) {
    names.push_back(old->output_info(i).name);
    n->mutable_output_info(i).type = old->output_info(i).type;
    g.ReplaceAllUsesWith(old->output(i), n->output(i));
  }
  AMP_RETURN_IF_ERROR(g.RemoveNode(old));
  for (size_t i = 0; i < names.size(); ++i) AMP_RETURN_IF_ERROR(g.RenameValue(n->output(i), names[i]));
  return Status::Ok();
}

// Two to five outputs (training mode) -> training_mode=1 and exactly three.
Status UpgradeBatchNorm(ir::Graph& g, ir::Node* n) {
  if (n->num_outputs() == 1) return Status::Ok();
  static const char* kNames[] = {"Y", "mean", "var", "saved_mean", "saved_var"};
  for (size_t i = 3; i < n->num_outputs(); ++i)
    if (!n->uses(i).empty() || g.is_graph_output(n->output(i)))
      return Unimplemented(n->Describe(), ": output ", i, " (", kNames[i], ") is used; only Y, running mean and "
                           "running var are supported");
  n->attrs().Set("training_mode", int64_t{1});
  return n->num_outputs() == 3 ? Status::Ok() : RecreateWithOutputs(g, n, 3);
}

// Clip before opset 11 (attributes min, max) and Pad before 11 (attribute
// value): scalar inputs of the data's dtype (float32 where it is unknown).
Status ScalarsToInputs(ir::Graph& g, ir::Node* n) {
  ir::DType dtype = g.type(n->input(0)).dtype;
  if (dtype == ir::DType::kUndefined) dtype = ir::DType::kFloat32;
  auto scalar = [&](const char* attr, size_t slot) -> Status {
    if (!n->attrs().Has(attr)) return Status::Ok();
    if (n->has_input(slot)) return InvalidArgument(n->Describe(), ": has both attribute and input '", attr, "'");
    AMP_ASSIGN_OR_RETURN(float v, n->attrs().GetFloat(attr, 0.0f));
    AMP_ASSIGN_OR_RETURN(ir::Tensor t, ir::Tensor::Zeros(dtype, {}));
    ir::SetElementFromDouble(t, 0, v);
    g.SetInput(n, slot, AddConstant(g, StrCat(n->name(), "_", attr), std::move(t)));
    n->attrs().Erase(attr);
    return Status::Ok();
  };
  if (n->op() == OpKind::kPad) return scalar("value", 2);
  AMP_RETURN_IF_ERROR(scalar("min", 1));
  return scalar("max", 2);
}

// DFT before opset 20: axis is an attribute (default 1, the first dim after
// the batch) -> a scalar int64 input 2, which defaults to -2.
Status UpgradeDft(ir::Graph& g, ir::Node* n) {
  if (n->has_input(2)) return InvalidArgument(n->Describe(), ": has an axis input, which opsets below 20 do not");
  AMP_ASSIGN_OR_RETURN(int64_t axis, n->attrs().GetInt("axis", 1));
  n->attrs().Erase("axis");
  g.SetInput(n, 2, AddConstant(g, StrCat(n->name(), "_axis"), ir::Tensor::Int64s({axis}, {})));
  return Status::Ok();
}

// DFT below opset 20: its axis input (a constant, absent = -2) becomes the
// attribute, written non-negative.
Status DowngradeDft(ir::Graph& g, ir::Node* n, int64_t opset) {
  int64_t axis = -2;
  if (n->has_input(2)) {
    const ir::Tensor* t = g.ConstantValue(n->input(2));
    if (!t || t->num_elements() != 1)
      return Unimplemented(n->Describe(), ": axis must be a constant to be written as an attribute for opset ", opset);
    axis = t->GetAsInt64(0);
    AMP_RETURN_IF_ERROR(DropInput(g, n, 2));
  }
  const ir::TensorType& xt = g.type(n->input(0));
  if (axis < 0) {
    if (!xt.has_shape) return Unimplemented(n->Describe(), ": a negative axis needs the input's rank for opset ", opset);
    axis += static_cast<int64_t>(xt.shape.rank());
  }
  n->attrs().Set("axis", axis);
  return Status::Ok();
}

bool IsSoftmaxLike(OpKind op) { return op == OpKind::kSoftmax || op == OpKind::kLogSoftmax; }

// The shape to restore after a 2-D Softmax: a constant when `x` has at most
// one unknown dim (-1) and no zero dims, so the result keeps a known shape;
// Shape(x) otherwise.
ir::Value ReshapeTarget(ir::Graph& g, ir::Value x, const std::string& base) {
  const ir::TensorType& xt = g.type(x);
  if (xt.has_shape) {
    std::vector<int64_t> dims;
    int unknown = 0;
    bool zero = false;
    for (const ir::Dim& d : xt.shape.dims()) {
      dims.push_back(d.is_static() ? d.value : -1);
      unknown += !d.is_static();
      zero |= d.value == 0;
    }
    if (unknown <= 1 && !zero)
      return AddConstant(g, base + "_shape", ir::Tensor::Int64s(dims, {static_cast<int64_t>(dims.size())}));
  }
  return g.AddNode(OpKind::kShape, {x}, 1, g.UniqueName(base + "_shape"))->output(0);
}

// Old (coerce-to-2-D) Softmax at `axis` -> canonical; see the header.
Status UpgradeSoftmax(ir::Graph& g, ir::Node* n) {
  AMP_ASSIGN_OR_RETURN(int64_t axis, n->attrs().GetInt("axis", 1));
  ir::Value x = n->input(0);
  const ir::TensorType& xt = g.type(x);
  if (xt.has_shape) {
    int64_t rank = static_cast<int64_t>(xt.shape.rank());
    if (axis < -rank || axis >= rank)
      return InvalidArgument(n->Describe(), ": axis ", axis, " is out of range for rank ", rank);
    if (axis < 0) axis += rank;
    if (axis == rank - 1) axis = -1;
  }
  n->attrs().Set("axis", int64_t{-1});
  if (axis == -1) return Status::Ok();
  ir::Node* flat = g.AddNode(OpKind::kFlatten, {x}, 1, g.UniqueName(n->name() + "_flatten"));
  flat->attrs().Set("axis", axis);
  ir::Value target = ReshapeTarget(g, x, n->name());
  ir::Value y = n->output(0);
  ir::Node* back = g.AddNode(OpKind::kReshape, {x, target}, 1, g.UniqueName(n->name() + "_reshape"));
  g.ReplaceAllUsesWith(y, back->output(0));
  g.SetInput(back, 0, y);
  g.SetInput(n, 0, flat->output(0));
  std::string name = g.name(y);
  AMP_RETURN_IF_ERROR(g.RenameValue(y, g.UniqueName(name + "_2d")));
  return g.RenameValue(back->output(0), name);
}

Status DowngradeNode(ir::Graph& g, ir::Node* n, int64_t opset) {
  if (OpSinceVersion(n->op()) > opset)
    return Unimplemented(n->Describe(), ": op needs opset ", OpSinceVersion(n->op()), ", writing opset ", opset);
  if (const AttrInput* r = FindAttrInput(n->op(), opset)) {
    if (n->op() == OpKind::kDropout && n->has_input(2)) {
      const ir::Tensor* t = g.ConstantValue(n->input(2));
      if (!t || t->num_elements() != 1 || t->GetAsInt64(0) != 0)
        return Unimplemented(n->Describe(), ": training_mode cannot be written for opset ", opset);
      AMP_RETURN_IF_ERROR(DropInput(g, n, 2));
    }
    if (n->op() != OpKind::kDropout && n->op() != OpKind::kSplit) {  // the reductions and (Un)Squeeze
      if (n->attrs().Int("noop_with_empty_axes", 0) != 0 && !n->has_input(1))
        return Unimplemented(n->Describe(), ": noop_with_empty_axes=1 cannot be written for opset ", opset);
      n->attrs().Erase("noop_with_empty_axes");
    }
    AMP_RETURN_IF_ERROR(InputToAttr(g, n, *r));
  }
  if (n->op() == OpKind::kSplit && opset < 18) n->attrs().Erase("num_outputs");
  if (n->op() == OpKind::kDFT && opset < 20) AMP_RETURN_IF_ERROR(DowngradeDft(g, n, opset));
  if (n->op() == OpKind::kRoiAlign && opset < 16) {
    if (n->attrs().Str("coordinate_transformation_mode", "half_pixel") != "output_half_pixel")
      return Unimplemented(n->Describe(), ": coordinate_transformation_mode half_pixel (aligned=True) needs opset 16, "
                           "writing opset ", opset);
    n->attrs().Erase("coordinate_transformation_mode");
  }
  if (ir::IsRecurrent(n->op()) && opset < 14 && n->attrs().Int("layout", 0) != 0)
    return Unimplemented(n->Describe(), ": layout=1 (batch first) needs opset 14, writing opset ", opset);
  if (IsSoftmaxLike(n->op()) && opset < 13) {
    int64_t axis = n->attrs().Int("axis", -1);
    const ir::TensorType& xt = g.type(n->input(0));
    bool last = axis == -1 || (xt.has_shape && axis == static_cast<int64_t>(xt.shape.rank()) - 1);
    if (!last)
      return Unimplemented(n->Describe(), ": axis ", axis, " is not the last dim; opset ", opset,
                           " would coerce the input to 2-D");
    n->attrs().Set("axis", int64_t{-1});
  }
  if (n->op() == OpKind::kBatchNormalization && opset < 14) {  // last: may recreate n
    bool training = n->attrs().Int("training_mode", 0) != 0;
    if (training != (n->num_outputs() > 1))
      return Unimplemented(n->Describe(), ": training_mode=", training, " with ", n->num_outputs(),
                           " outputs cannot be written for opset ", opset);
    n->attrs().Erase("training_mode");
    if (training) return RecreateWithOutputs(g, n, 5);  // opset 9..13 allow 1 or 5 outputs
  }
  return Status::Ok();
}

}  // namespace

int64_t OpSinceVersion(ir::OpKind op) {
  switch (op) {
    case OpKind::kSoftmaxCrossEntropyLoss:
    case OpKind::kNegativeLogLikelihoodLoss: return 12;
    case OpKind::kHardSwish: return 14;
    case OpKind::kElu:
    case OpKind::kSelu: return 6;
    case OpKind::kSin:
    case OpKind::kCos:
    case OpKind::kTan:
    case OpKind::kAsin:
    case OpKind::kAcos:
    case OpKind::kAtan:
    case OpKind::kPRelu:
    case OpKind::kAnd:
    case OpKind::kOr:
    case OpKind::kXor: return 7;
    case OpKind::kSinh:
    case OpKind::kCosh:
    case OpKind::kAsinh:
    case OpKind::kAcosh:
    case OpKind::kAtanh: return 9;
    case OpKind::kRoiAlign: return 10;
    case OpKind::kCumSum:
    case OpKind::kGatherElements:
    case OpKind::kRound: return 11;
    case OpKind::kCelu:
    case OpKind::kLessOrEqual:
    case OpKind::kGreaterOrEqual: return 12;
    case OpKind::kTrilu: return 14;
    case OpKind::kGridSample: return 16;
    case OpKind::kMish:
    case OpKind::kCol2Im:
    case OpKind::kGroupNormalization: return 18;
    case OpKind::kAffineGrid: return 20;
    case OpKind::kEinsum: return 12;
    case OpKind::kCastLike:
    case OpKind::kBernoulli: return 15;
    case OpKind::kLayerNormalization:
    case OpKind::kDFT:
    case OpKind::kSTFT: return 17;
    case OpKind::kGelu: return 20;
    case OpKind::kRMSNormalization:
    case OpKind::kAttention: return 23;
    case OpKind::kSwish: return 24;
    default: return 1;
  }
}

Status UpgradeToCanonical(ir::Graph& g, int64_t opset) {
  bool need_ranks = false, need_dtypes = false;
  for (ir::Node* n : g.nodes()) {
    if (const AttrInput* r = FindAttrInput(n->op(), opset)) AMP_RETURN_IF_ERROR(AttrToInput(g, n, *r));
    if (IsSoftmaxLike(n->op()) && opset < 13) need_ranks = true;
    if ((n->op() == OpKind::kClip || n->op() == OpKind::kPad) && opset < 11) need_dtypes = true;
    if (n->op() == OpKind::kBatchNormalization && opset < 9 && n->attrs().Has("spatial")) {
      if (n->attrs().Int("spatial", 1) != 1)
        return Unimplemented(n->Describe(),
                             ": spatial=0 (statistics per activation, not per channel) is not supported");
      n->attrs().Erase("spatial");
    }
    if (n->op() == OpKind::kDFT && opset < 20) AMP_RETURN_IF_ERROR(UpgradeDft(g, n));
    if (n->op() == OpKind::kRoiAlign && opset < 16 && !n->attrs().Has("coordinate_transformation_mode"))
      n->attrs().Set("coordinate_transformation_mode", std::string("output_half_pixel"));  // the old behaviour
    if (n->op() == OpKind::kBatchNormalization && opset < 14) AMP_RETURN_IF_ERROR(UpgradeBatchNorm(g, n));  // may free n
  }
  if (!need_ranks && !need_dtypes) return Status::Ok();
  AMP_RETURN_IF_ERROR(g.InferShapes());
  for (ir::Node* n : g.nodes()) {
    if (need_dtypes && (n->op() == OpKind::kClip || n->op() == OpKind::kPad))
      AMP_RETURN_IF_ERROR(ScalarsToInputs(g, n));
    if (need_ranks && IsSoftmaxLike(n->op())) AMP_RETURN_IF_ERROR(UpgradeSoftmax(g, n));
  }
  return Status::Ok();
}

StatusOr<bool> LowerCastLike(ir::Graph& g) {
  std::vector<ir::NodeId> ids;  // by id: removing a dead `like` may remove a later CastLike
  for (const ir::Node* n : g.nodes())
    if (n->op() == OpKind::kCastLike) ids.push_back(n->id());
  for (ir::NodeId id : ids) {
    ir::Node* n = g.node(id);
    if (!n) continue;
    ir::Value x = n->input(0), like = n->input(1), y = n->output(0);
    ir::DType to = g.type(like).dtype;
    if (to == ir::DType::kUndefined) return InvalidArgument(n->Describe(), ": input 1 (like) has no dtype");
    ir::Node* cast = g.AddNode(OpKind::kCast, {x}, 1, n->name(), {g.UniqueName(g.name(y) + "_cast")});
    cast->attrs().Set("to", static_cast<int64_t>(ir::OnnxFromDType(to)));
    cast->set_doc(n->doc());
    ir::ValueInfo info = g.info(y);
    g.ReplaceAllUsesWith(y, cast->output(0));
    AMP_RETURN_IF_ERROR(g.RemoveNode(n));
    AMP_RETURN_IF_ERROR(g.RenameValue(cast->output(0), info.name));
    cast->mutable_output_info(0) = std::move(info);
    AMP_RETURN_IF_ERROR(RemoveIfUnused(g, like));
  }
  return !ids.empty();
}

Status PinRandomDTypes(ir::Graph& g) {
  for (ir::Node* n : g.nodes()) {
    if (ir::Schema(n->op()).family != "random" || n->attrs().Has("dtype")) continue;
    const ir::DType t = g.type(n->output(0)).dtype;
    if (t == ir::DType::kUndefined) return InvalidArgument(n->Describe(), ": the output has no dtype");
    n->attrs().Set("dtype", static_cast<int64_t>(ir::OnnxFromDType(t)));
  }
  return Status::Ok();
}

namespace {

// True for a Constant node (not an initializer: a parameter keeps its Mul)
// of ones, as the InstanceNormalization lowering's scale.
bool IsConstantOnes(const ir::Graph& g, ir::Value v) {
  const ir::Tensor* t = g.producer(v)->op() == OpKind::kConstant ? g.ConstantValue(v) : nullptr;
  if (!t) return false;
  for (int64_t i = 0; i < t->num_elements(); ++i)
    if (t->GetAsDouble(i) != 1.0) return false;
  return true;
}

// LayerNormalization written below opset 17, as PyTorch's exporter writes it
// there (in x's dtype; the Mean / InvStdDev outputs must be unused):
//   y = LayerNormalization[axis, epsilon](x, scale, bias?)
// becomes, with axes = [axis, ..., rank - 1],
//   d = x - ReduceMean(x, axes); y = d / Sqrt(ReduceMean(d * d, axes) + epsilon) * scale (+ bias)
// keeping y's name (no Mul for a Constant scale of ones). The only source of
// such a node is import's InstanceNormalization lowering (LayerNormalization
// itself imports from opset 17 on).
Status DecomposeLayerNorm(ir::Graph& g, ir::Node* n) {
  for (size_t o = 1; o < n->num_outputs(); ++o)
    if (!g.uses(n->output(o)).empty() || g.is_graph_output(n->output(o)))
      return Unimplemented(n->Describe(), ": the mean / inverse std outputs cannot be written below opset 17");
  const ir::Value x = n->input(0);
  const ir::TensorType xt = g.type(x);
  if (!xt.has_shape) return Unimplemented(n->Describe(), ": an input of unknown rank cannot be written below opset 17");
  const auto rank = static_cast<int64_t>(xt.shape.rank());
  const int64_t axis = n->attrs().Int("axis", -1);
  std::vector<int64_t> axes;
  for (int64_t a = axis < 0 ? axis + rank : axis; a < rank; ++a) axes.push_back(a);
  const std::string base = n->name();
  auto op = [&](OpKind k, std::vector<ir::Value> in, const char* what) {
    return g.AddNode(k, std::move(in), 1, g.UniqueName(base + "_" + what))->output(0);
  };
  auto mean = [&](ir::Value v) {
    ir::Value axes_c = AddConstant(g, base + "_axes", ir::Tensor::Int64s(axes, {static_cast<int64_t>(axes.size())}));
    ir::Node* r = g.AddNode(OpKind::kReduceMean, {v, axes_c}, 1, g.UniqueName(base + "_mean"));
    r->attrs().Set("keepdims", int64_t{1});
    return r->output(0);
  };
  AMP_ASSIGN_OR_RETURN(ir::Tensor eps, ir::Tensor::Zeros(xt.dtype, {}));
  ir::SetElementFromDouble(eps, 0, n->attrs().Float("epsilon", 1e-5f));
  ir::Value d = op(OpKind::kSub, {x, mean(x)}, "centered");
  ir::Value var = mean(op(OpKind::kMul, {d, d}, "squared"));
  ir::Value stddev =
      op(OpKind::kSqrt, {op(OpKind::kAdd, {var, AddConstant(g, base + "_epsilon", std::move(eps))}, "var_eps")}, "std");
  ir::Value y = op(OpKind::kDiv, {d, stddev}, "normalized");
  if (!IsConstantOnes(g, n->input(1))) y = op(OpKind::kMul, {y, n->input(1)}, "scaled");
  if (n->has_input(2)) y = op(OpKind::kAdd, {y, n->input(2)}, "shifted");
  const ir::Value out = n->output(0), scale = n->input(1);
  ir::ValueInfo info = g.info(out);
  g.ReplaceAllUsesWith(out, y);
  AMP_RETURN_IF_ERROR(g.RemoveNode(n));
  if (g.uses(scale).empty() && !g.is_graph_output(scale)) AMP_RETURN_IF_ERROR(g.RemoveNode(g.producer(scale)));
  AMP_RETURN_IF_ERROR(g.RenameValue(y, info.name));
  g.mutable_info(y) = std::move(info);
  return Status::Ok();
}

}  // namespace

Status DowngradeFromCanonical(ir::Graph& g, int64_t opset) {
  if (opset < OpSinceVersion(OpKind::kLayerNormalization)) {
    std::vector<ir::NodeId> norms;
    for (const ir::Node* n : g.nodes())
      if (n->op() == OpKind::kLayerNormalization) norms.push_back(n->id());
    for (ir::NodeId id : norms) AMP_RETURN_IF_ERROR(DecomposeLayerNorm(g, g.node(id)));
    if (!norms.empty()) AMP_RETURN_IF_ERROR(g.InferShapes());
  }
  // By id: a rewrite may remove a Constant that comes later in the list.
  std::vector<ir::NodeId> ids;
  for (const ir::Node* n : g.nodes()) ids.push_back(n->id());
  for (ir::NodeId id : ids)
    if (ir::Node* n = g.node(id)) AMP_RETURN_IF_ERROR(DowngradeNode(g, n, opset));
  return Status::Ok();
}

}  // namespace amptrain::importer
