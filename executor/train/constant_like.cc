#include "executor/train/constant_like.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "ir/onnx_dtype.h"

namespace amptrain::executor::train {

using ir::Graph;
using ir::Node;
using ir::OpKind;
using ir::Value;

namespace {

// Whether every reader of `v` takes it as Pow's exponent.
bool OnlyPowExponent(const Graph& g, Value v) {
  if (g.uses(v).empty() || g.is_graph_output(v)) return false;
  for (const ir::Use& u : g.uses(v))
    if (g.node(u.node)->op() != OpKind::kPow || u.slot != 1) return false;
  return true;
}

// Whether every path from `init` to a value that depends on the input data
// (`data`) passes through Sin or Cos first, and one does.
bool OnlyThroughSinusoids(const Graph& g, Value init, const std::unordered_set<Value, ir::ValueHash>& data) {
  bool sinusoid = false;
  std::vector<Value> stack{init};
  std::unordered_set<Value, ir::ValueHash> seen{init};
  while (!stack.empty()) {
    const Value v = stack.back();
    stack.pop_back();
    if (g.is_graph_output(v)) return false;
    for (const ir::Use& u : g.uses(v)) {
      const ir::Node* n = g.node(u.node);
      bool mixes = false;
      for (size_t o = 0; o < n->num_outputs(); ++o) mixes = mixes || data.count(n->output(o)) > 0;
      if (mixes) return false;
      if (n->op() == OpKind::kSin || n->op() == OpKind::kCos) {
        sinusoid = true;
        continue;
      }
      for (size_t o = 0; o < n->num_outputs(); ++o)
        if (seen.insert(n->output(o)).second) stack.push_back(n->output(o));
    }
  }
  return sinusoid;
}

// Whether `t` is a precomputed sinusoidal position table [n, d]: column pairs
// (k, d/2 + k) as Whisper's sinusoids() lays them out, or (2k, 2k + 1) as
// the original Transformer's, holding sin(i f_k) and cos(i f_k) of the row
// index i, each frequency read from row 1 (atan2 keeps the small ones
// exact), within 2e-3: float32's error in i f at positions of thousands.
bool SinusoidPositionTable(const ir::Tensor& t) {
  if (t.rank() != 2 || t.dims()[0] < 4 || t.dims()[1] < 4 || t.dims()[1] % 2) return false;
  const int64_t n = t.dims()[0], d = t.dims()[1], half = d / 2;
  auto at = [&](int64_t i, int64_t j) { return t.GetAsDouble(i * d + j); };
  for (bool interleaved : {false, true}) {
    auto sin_col = [&](int64_t k) { return interleaved ? 2 * k : k; };
    auto cos_col = [&](int64_t k) { return interleaved ? 2 * k + 1 : half + k; };
    bool table = true;
    for (int64_t k = 0; table && k < half; ++k) {
      table = at(0, sin_col(k)) == 0.0 && std::abs(at(0, cos_col(k)) - 1.0) < 1e-6;
      const double f = std::atan2(at(1, sin_col(k)), at(1, cos_col(k)));
      table = table && f > 0;
      for (int64_t i = 1; table && i < n; ++i)
        table = std::abs(at(i, sin_col(k)) - std::sin(static_cast<double>(i) * f)) <= 2e-3 &&
                std::abs(at(i, cos_col(k)) - std::cos(static_cast<double>(i) * f)) <= 2e-3;
    }
    if (table) return true;
  }
  return false;
}

// Whether `name` is what torch.export calls a tensor that forward() creates
// and it lifts out as a constant: "lifted_tensor_N" or "_tensor_constantN"
// as the last dotted component ("encoder.layer.0.attention.self.lifted_tensor_2").
bool LiftedConstantName(const std::string& name) {
  const size_t dot = name.rfind('.');
  const std::string last = dot == std::string::npos ? name : name.substr(dot + 1);
  for (const std::string prefix : {"lifted_tensor_", "c_lifted_tensor_", "_tensor_constant"})
    if (last.size() > prefix.size() && last.compare(0, prefix.size(), prefix) == 0 &&
        std::all_of(last.begin() + static_cast<std::ptrdiff_t>(prefix.size()), last.end(),
                    [](char c) { return c >= '0' && c <= '9'; }))
      return true;
  return false;
}

// Whether `v` is a 0-d initializer named "embed_scale" (last dotted
// component) equal to sqrt(d), with d the last dim of what every reader, a
// Mul, scales: the buffer of Gemma's scaled word embedding (sqrt(hidden),
// registered with persistent=False in PyTorch), which ONNX cannot tell from a
// parameter. Within 1% (a bf16 model stores 45.25 for sqrt(2048)).
bool EmbedScaleBuffer(const Graph& g, Value v) {
  const std::string& name = g.name(v);
  const size_t dot = name.rfind('.');
  if ((dot == std::string::npos ? name : name.substr(dot + 1)) != "embed_scale") return false;
  const ir::TensorType& t = g.type(v);
  const ir::Tensor* value = g.ConstantValue(v);
  if (!t.has_shape || t.shape.rank() != 0 || !value || g.uses(v).empty() || g.is_graph_output(v)) return false;
  for (const ir::Use& u : g.uses(v)) {
    const ir::Node* mul = g.node(u.node);
    if (mul->op() != OpKind::kMul) return false;
    const ir::TensorType& other = g.type(mul->input(1 - u.slot));
    if (!other.has_shape || other.shape.rank() == 0 || !other.shape[other.shape.rank() - 1].is_static()) return false;
    const double want = std::sqrt(static_cast<double>(other.shape[other.shape.rank() - 1].value));
    if (std::abs(value->GetAsDouble(0) - want) > 0.01 * want) return false;
  }
  return true;
}

}  // namespace

std::map<std::string, std::string> ConstantLikeInitializers(const Graph& g) {
  std::map<std::string, std::string> found;
  // The values that depend on the input data (a shape does not).
  std::unordered_set<Value, ir::ValueHash> data;
  auto order = g.TopologicalOrder();
  if (order.ok()) {
    for (Value v : g.inputs()) data.insert(v);
    for (const ir::Node* n : *order) {
      if (n->op() == OpKind::kShape || n->op() == OpKind::kSize) continue;
      bool dependent = false;
      for (Value in : n->inputs()) dependent = dependent || (in.valid() && data.count(in) > 0);
      if (dependent)
        for (size_t o = 0; o < n->num_outputs(); ++o) data.insert(n->output(o));
    }
  }
  for (Value v : g.initializers()) {
    const ir::TensorType& t = g.type(v);
    if (!ir::IsFloat(t.dtype)) continue;
    if (LiftedConstantName(g.name(v))) {
      found[g.name(v)] = "a tensor that forward() creates, lifted out by torch.export as a constant "
                         "(lifted_tensor_N), is not a parameter; --train-all trains it";
    } else if (EmbedScaleBuffer(g, v)) {
      found[g.name(v)] = "a 0-d embed_scale equal to sqrt(hidden) (the buffer of Gemma's scaled word embedding, "
                         "not a parameter in PyTorch) is taken for a constant; --train-all trains it";
    } else if (t.has_shape && t.shape.rank() == 0 && OnlyPowExponent(g, v)) {
      found[g.name(v)] = "a 0-d Pow exponent is taken for a constant (its gradient is NaN where the base is "
                         "negative); --train-all trains it";
    } else if (order.ok() && OnlyThroughSinusoids(g, v, data)) {
      found[g.name(v)] = "the frequencies of a sinusoid of constants (a rotary or sinusoidal position table, a "
                         "buffer in PyTorch) are taken for constants; --train-all trains them";
    } else if (const ir::Tensor* value = g.ConstantValue(v); value && SinusoidPositionTable(*value)) {
      found[g.name(v)] = "a precomputed sinusoidal position table (sin and cos of position x frequency, frozen in "
                         "PyTorch: Whisper's embed_positions) is taken for a constant; --train-all trains it";
    }
  }
  return found;
}

}  // namespace amptrain::executor::train
