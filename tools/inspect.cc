// amptrain inspect MODEL [--json]: what a model holds, without running it.
//
// Text and JSON carry the same facts. JSON keys (stable):
//   model, ir_version, opset, other_opsets {domain: version}, producer_name,
//   producer_version, graph_name, inputs/outputs [{name, dtype, shape}] where
//   shape is a list of ints and symbol strings ("?" when unnamed) or null when
//   even the rank is unknown, nodes, op_histogram {op: count},
//   initializers, parameters (elements of float initializers),
//   parameter_bytes.
#include <nlohmann/json.hpp>

#include <iostream>
#include <map>

#include "importer/onnx_import.h"
#include "ir/graph.h"
#include "tools/commands.h"

namespace amptrain::tools {

namespace {

using nlohmann::json;

struct InspectArgs {
  std::string model;
  bool json = false;
};

json ShapeJson(const ir::TensorType& t) {
  if (!t.has_shape) return nullptr;
  json dims = json::array();
  for (const ir::Dim& d : t.shape.dims()) {
    if (d.is_static()) dims.push_back(d.value);
    else dims.push_back(d.symbol.empty() ? "?" : d.symbol);
  }
  return dims;
}

json ValuesJson(const ir::Graph& g, const std::vector<ir::Value>& values) {
  json out = json::array();
  for (ir::Value v : values)
    out.push_back({{"name", g.name(v)}, {"dtype", ir::DTypeName(g.type(v).dtype)}, {"shape", ShapeJson(g.type(v))}});
  return out;
}

json Describe(const ir::Graph& g, const std::string& path) {
  const ir::ModelInfo& info = g.info();
  std::map<std::string, int64_t> histogram;
  int64_t nodes = 0;
  for (const ir::Node* n : g.nodes()) {
    if (n->op() == ir::OpKind::kInput || n->op() == ir::OpKind::kInitializer) continue;
    ++nodes;
    ++histogram[std::string(n->op_name())];
  }
  int64_t parameters = 0, parameter_bytes = 0;
  for (ir::Value v : g.initializers()) {
    const ir::Tensor* t = g.ConstantValue(v);
    if (!t || !ir::IsFloat(t->dtype())) continue;
    parameters += t->num_elements();
    parameter_bytes += static_cast<int64_t>(t->nbytes());
  }
  return {{"model", path},
          {"ir_version", info.ir_version},
          {"opset", info.opset},
          {"other_opsets", info.other_opsets},
          {"producer_name", info.producer_name},
          {"producer_version", info.producer_version},
          {"graph_name", info.graph_name},
          {"inputs", ValuesJson(g, g.inputs())},
          {"outputs", ValuesJson(g, g.outputs())},
          {"nodes", nodes},
          {"op_histogram", histogram},
          {"initializers", g.initializers().size()},
          {"parameters", parameters},
          {"parameter_bytes", parameter_bytes}};
}

void PrintValues(const ir::Graph& g, const char* title, const std::vector<ir::Value>& values) {
  std::cout << title << "\n";
  for (ir::Value v : values) std::cout << "  " << g.name(v) << ": " << g.type(v).ToString() << "\n";
}

void PrintText(const ir::Graph& g, const json& d) {
  std::cout << "model       " << d["model"].get<std::string>() << "\n"
            << "ir_version  " << d["ir_version"] << "\n"
            << "opset       " << d["opset"];
  for (const auto& [domain, version] : g.info().other_opsets) std::cout << ", " << domain << " " << version;
  std::cout << "\nproducer    " << d["producer_name"].get<std::string>() << " "
            << d["producer_version"].get<std::string>() << "\n"
            << "graph       " << d["graph_name"].get<std::string>() << "\n";
  PrintValues(g, "inputs", g.inputs());
  PrintValues(g, "outputs", g.outputs());
  std::cout << "nodes       " << d["nodes"] << "\n"
            << "parameters  " << d["parameters"] << " in " << d["initializers"] << " initializers ("
            << HumanBytes(d["parameter_bytes"].get<double>()) << ")\n"
            << "ops\n";
  for (const auto& [op, count] : d["op_histogram"].items()) std::cout << "  " << op << " " << count << "\n";
}

Status Inspect(const InspectArgs& args) {
  importer::ImportOptions options;  // show the model as written: no folding, Identity kept
  options.fold_constants = false;
  options.remove_identity = false;
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, importer::ImportModelFile(args.model, options));
  json d = Describe(*graph, args.model);
  if (args.json) std::cout << d.dump(2) << "\n";
  else PrintText(*graph, d);
  return Status::Ok();
}

}  // namespace

void AddInspectCommand(CLI::App& app, Status& result) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* cmd = app.add_subcommand("inspect", "Show a model's opset, inputs, outputs, ops and parameter count");
  cmd->add_option("MODEL", args->model, "The .onnx file")->required();
  cmd->add_flag("--json", args->json, "Print JSON instead of text");
  cmd->callback([args, &result] { result = Inspect(*args); });
}

}  // namespace amptrain::tools
