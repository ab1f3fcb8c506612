#include "executor/train/overflow.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace amptrain::executor::train {

namespace {

double Element(const ir::TensorView& v, int64_t i) {
  switch (v.dtype) {
    case ir::DType::kFloat32: return v.as<const float>()[i];
    case ir::DType::kFloat64: return v.as<const double>()[i];
    case ir::DType::kFloat16: return ir::HalfToFloat(v.as<const uint16_t>()[i]);
    case ir::DType::kBFloat16: return ir::BFloat16ToFloat(v.as<const uint16_t>()[i]);
    default: return 0.0;
  }
}

bool IsFloatView(const ir::TensorView& v) {
  return v.data && (v.dtype == ir::DType::kFloat32 || v.dtype == ir::DType::kFloat64 ||
                    v.dtype == ir::DType::kFloat16 || v.dtype == ir::DType::kBFloat16);
}

const ir::Node* NodeNamed(const ir::Graph& g, const std::string& name) {
  for (const ir::Node* n : g.nodes())
    if (n->name() == name) return n;
  return nullptr;
}

}  // namespace

StepObserver FirstNonFiniteObserver(const ir::Graph& graph, std::optional<OverflowSite>* site) {
  return [&graph, site](const ir::Node& node, const std::vector<ir::TensorView>& outputs) {
    if (site->has_value()) return;
    for (size_t k = 0; k < outputs.size(); ++k) {
      const ir::TensorView& v = outputs[k];
      if (!IsFloatView(v)) continue;
      OverflowSite s;
      s.elements = v.num_elements();
      s.finite_min = std::numeric_limits<double>::infinity();
      s.finite_max = -s.finite_min;
      for (int64_t i = 0; i < s.elements; ++i) {
        double x = Element(v, i);
        if (!std::isfinite(x)) {
          ++s.nonfinite;
        } else {
          s.finite_min = std::min(s.finite_min, x);
          s.finite_max = std::max(s.finite_max, x);
        }
      }
      if (s.nonfinite == 0) continue;
      s.node = node.name();
      s.op = std::string(node.schema().name);
      // The graph's dtype: cast fusion may store a low value widened (executor/plan.h).
      const ir::DType graph_dtype = graph.type(node.output(k)).dtype;
      s.dtype = std::string(ir::DTypeName(graph_dtype != ir::DType::kUndefined ? graph_dtype : v.dtype));
      s.output = graph.name(node.output(k));
      s.backward = s.node.rfind("grad/", 0) == 0;
      *site = std::move(s);
      return;
    }
  };
}

void AttributeToModelNode(const ir::Graph& g, OverflowSite& site) {
  std::string name = site.node;
  if (site.backward) {  // "grad/<forward node>/<Op>_<k>" (autodiff/grad_context.cc)
    std::string rest = name.substr(5);
    size_t slash = rest.rfind('/');
    name = slash == std::string::npos ? "" : rest.substr(0, slash);
  }
  const ir::Node* n = name.empty() ? nullptr : NodeNamed(g, name);
  // An AMP Cast (not a model node): the consumer that wanted the low type.
  if (n && n->op() == ir::OpKind::kCast && n->num_outputs() == 1) {
    const auto& uses = g.uses(n->output(0));
    n = uses.empty() ? nullptr : g.node(uses.front().node);
  }
  site.model_node = n ? n->name() : "";
}

std::string Describe(const OverflowSite& s) {
  std::string range = s.nonfinite == s.elements ? "no finite value"
                                                : StrCat("finite range [", s.finite_min, ", ", s.finite_max, "]");
  return StrCat(s.backward ? "backward " : "", "node '", s.node, "' (", s.op, ", ", s.dtype, ") output '", s.output,
                "': ", s.nonfinite, " of ", s.elements, " values inf/NaN, ", range);
}

std::string PolicyFix(const OverflowSite& s) {
  if (s.model_node.empty()) return "";
  const std::string quoted = nlohmann::json(s.model_node).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return StrCat("fp32_nodes: [", quoted, "]  (policy file; or --fp32-nodes ", quoted, ")");
}

}  // namespace amptrain::executor::train
