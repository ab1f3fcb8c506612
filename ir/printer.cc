#include "ir/printer.h"

#include <sstream>

namespace amptrain::ir {

namespace {

template <class T>
std::string List(const std::vector<T>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
  os << "]";
  return os.str();
}

}  // namespace

std::string PrintAttrValue(const AttrValue& v) {
  switch (TypeOf(v)) {
    case AttrType::kInt: return std::to_string(std::get<int64_t>(v));
    case AttrType::kFloat: return StrCat(std::get<float>(v));
    case AttrType::kString: return StrCat("\"", std::get<std::string>(v), "\"");
    case AttrType::kInts: return List(std::get<std::vector<int64_t>>(v));
    case AttrType::kFloats: return List(std::get<std::vector<float>>(v));
    case AttrType::kStrings: return List(std::get<std::vector<std::string>>(v));
    case AttrType::kTensor: {
      const Tensor& t = std::get<Tensor>(v);
      std::string s = StrCat("tensor<", DTypeName(t.dtype()), List(t.dims()), ">");
      if (t.num_elements() > 0 && t.num_elements() <= 8) {
        s += "{";
        for (int64_t i = 0; i < t.num_elements(); ++i) s += StrCat(i ? "," : "", t.GetAsDouble(i));
        s += "}";
      }
      return s;
    }
  }
  return "?";
}

std::string PrintGraph(const Graph& g) {
  std::ostringstream os;
  os << "graph " << g.info().graph_name << " (opset " << g.info().opset << ", ir " << g.info().ir_version << ")\n";
  for (Value v : g.inputs()) os << "  input  " << g.name(v) << ": " << g.type(v).ToString() << "\n";
  for (Value v : g.initializers()) os << "  init   " << g.name(v) << ": " << g.type(v).ToString() << "\n";
  auto order = g.TopologicalOrder();
  if (!order.ok()) return os.str() + "  <" + order.status().message() + ">\n";
  for (const Node* n : *order) {
    os << "  ";
    for (size_t i = 0; i < n->num_outputs(); ++i) os << (i ? ", " : "") << "%" << n->output_info(i).name;
    os << " = " << n->op_name() << "(";
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      os << (i ? ", " : "");
      if (n->has_input(i)) os << "%" << g.name(n->input(i));
      else os << "_";
    }
    os << ")";
    if (n->attrs().size() && n->op() != OpKind::kConstant) {
      os << " {";
      bool first = true;
      for (const auto& [k, v] : n->attrs().all()) {
        os << (first ? "" : ", ") << k << "=" << PrintAttrValue(v);
        first = false;
      }
      os << "}";
    } else if (n->op() == OpKind::kConstant && n->attrs().Has("value")) {
      os << " " << PrintAttrValue(n->attrs().all().at("value"));
    }
    os << " :";
    for (size_t i = 0; i < n->num_outputs(); ++i) os << " " << n->output_info(i).type.ToString();
    os << "  # " << n->name() << "\n";
  }
  for (Value v : g.outputs()) os << "  output %" << g.name(v) << ": " << g.type(v).ToString() << "\n";
  return os.str();
}

}  // namespace amptrain::ir
