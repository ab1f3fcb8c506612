// Batch axes other than the first (executor/train/batch_axis.h).
#include "executor/train/batch_axis.h"

#include <algorithm>
#include <charconv>
#include <set>

namespace amptrain::executor::train {

namespace {

using ir::Graph;
using ir::Value;

// The graph input named `name`, or an invalid Value.
Value FindInput(const Graph& g, const std::string& name) {
  const Value v = g.FindValue(name);
  return v.valid() && g.producer(v)->op() == ir::OpKind::kInput ? v : Value{};
}

std::string TransposeName(const std::string& input) { return input + "/batch_axis"; }

// [B, rest...] from dims with the batch at `axis`, and back (`to_first`).
ir::Shape Moved(const ir::Shape& s, int64_t axis, bool to_first) {
  std::vector<ir::Dim> dims;
  for (size_t d = 0; d < s.rank(); ++d) dims.push_back(s[d]);
  const auto at = dims.begin() + axis;
  if (to_first) std::rotate(dims.begin(), at, at + 1);
  else std::rotate(dims.begin(), dims.begin() + 1, at + 1);
  return ir::Shape(dims);
}

}  // namespace

StatusOr<std::vector<BatchAxis>> ParseBatchAxes(const std::vector<std::string>& specs, const Graph& model) {
  std::vector<BatchAxis> out;
  std::set<std::string> named;
  for (const std::string& spec : specs) {
    const size_t eq = spec.rfind('=');
    const std::string name = eq == std::string::npos ? "" : spec.substr(0, eq);
    const std::string number = eq == std::string::npos ? spec : spec.substr(eq + 1);
    int64_t axis = -1;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), axis);
    if (ec != std::errc() || end != number.data() + number.size() || axis < 0)
      return InvalidArgument("--batch-axis '", spec, "': expected AXIS or INPUT=AXIS with AXIS >= 0");
    std::vector<Value> inputs;
    if (!name.empty()) {
      Value v = FindInput(model, name);
      if (!v.valid()) return InvalidArgument("--batch-axis '", spec, "': the model has no input '", name, "'");
      inputs.push_back(v);
    } else {
      for (Value v : model.inputs())
        if (model.type(v).has_shape && static_cast<int64_t>(model.type(v).shape.rank()) > axis) inputs.push_back(v);
      if (inputs.empty()) return InvalidArgument("--batch-axis ", axis, ": no model input has rank above ", axis);
      if (axis == 0) inputs.clear();  // every input as it is
    }
    for (Value v : inputs) {
      const ir::TensorType& t = model.type(v);
      if (!t.has_shape || static_cast<int64_t>(t.shape.rank()) <= axis)
        return InvalidArgument("--batch-axis '", spec, "': input '", model.name(v), "' has ",
                               t.has_shape ? StrCat("rank ", t.shape.rank()) : std::string("no known rank"),
                               ", no axis ", axis);
      if (!named.insert(model.name(v)).second)
        return InvalidArgument("--batch-axis: input '", model.name(v), "' is given a batch axis twice");
      out.push_back({model.name(v), axis});
    }
  }
  return out;
}

std::vector<BatchAxis> DetectBatchAxes(const Graph& g) {
  std::set<std::string> output_batch;
  for (Value v : g.outputs()) {
    const ir::TensorType& t = g.type(v);
    if (t.has_shape && t.shape.rank() > 0 && !t.shape[0].is_static() && !t.shape[0].symbol.empty())
      output_batch.insert(t.shape[0].symbol);
  }
  std::vector<BatchAxis> out;
  for (Value v : g.inputs()) {
    const ir::TensorType& t = g.type(v);
    if (!t.has_shape || t.shape.rank() < 2 || !t.shape[0].is_static()) continue;
    for (size_t d = 1; d < t.shape.rank(); ++d)
      if (!t.shape[d].is_static() && output_batch.count(t.shape[d].symbol)) {
        out.push_back({g.name(v), static_cast<int64_t>(d)});
        break;
      }
  }
  return out;
}

Status MoveBatchAxesFirst(Graph& g, const std::vector<BatchAxis>& axes) {
  for (const BatchAxis& b : axes) {
    if (b.axis == 0) continue;
    const Value x = FindInput(g, b.input);
    if (!x.valid()) return InvalidArgument("the model has no input '", b.input, "'");
    const ir::TensorType own = g.type(x);
    const int64_t rank = static_cast<int64_t>(own.shape.rank());
    if (!own.has_shape || b.axis < 1 || b.axis >= rank)
      return InvalidArgument("input '", b.input, "' has no axis ", b.axis, " to take the batch from");
    const std::vector<ir::Use> uses = g.uses(x);
    // y = Transpose(x [B, ...]) has x's own layout: y's axis a reads x's axis perm[a].
    std::vector<int64_t> perm;
    for (int64_t a = 0; a < rank; ++a) perm.push_back(a < b.axis ? a + 1 : a == b.axis ? 0 : a);
    g.mutable_info(x).type.shape = Moved(own.shape, b.axis, /*to_first=*/true);
    ir::Node* t = g.AddNode(ir::OpKind::kTranspose, {x}, 1, g.UniqueName(TransposeName(b.input)));
    t->attrs().Set("perm", perm);
    AMP_RETURN_IF_ERROR(g.InferNode(t));
    for (const ir::Use& u : uses) g.SetInput(g.node(u.node), u.slot, t->output(0));
    for (size_t i = 0; i < g.outputs().size(); ++i)
      if (g.outputs()[i] == x) g.SetOutput(i, t->output(0));
  }
  return Status::Ok();
}

Status RestoreBatchAxes(Graph& g, const std::vector<BatchAxis>& axes) {
  for (const BatchAxis& b : axes) {
    if (b.axis == 0) continue;
    const Value x = FindInput(g, b.input);
    if (!x.valid()) return InvalidArgument("the model has no input '", b.input, "'");
    ir::Node* t = nullptr;
    for (const ir::Use& u : g.uses(x))
      if (g.node(u.node)->op() == ir::OpKind::kTranspose && g.node(u.node)->name().rfind(TransposeName(b.input), 0) == 0)
        t = g.node(u.node);
    if (!t || g.uses(x).size() != 1)
      return Internal("input '", b.input, "' is not read through its batch-axis Transpose alone");
    g.mutable_info(x).type.shape = Moved(g.type(x).shape, b.axis, /*to_first=*/false);
    g.ReplaceAllUsesWith(t->output(0), x);
    AMP_RETURN_IF_ERROR(g.RemoveNode(t));
  }
  return Status::Ok();
}

}  // namespace amptrain::executor::train
