// amptrain inspect MODEL [--json]: what a model holds, without running it.
//
// Text and JSON carry the same facts. JSON keys (stable):
//   model, ir_version, opset, other_opsets {domain: version}, producer_name,
//   producer_version, graph_name, inputs/outputs [{name, dtype, shape}] where
//   shape is a list of ints and symbol strings ("?" when unnamed) or null when
//   even the rank is unknown, nodes, op_histogram {op: count},
//   initializers, parameters (elements of float initializers),
//   parameter_bytes.
//
// With --amp LEVEL or --policy FILE (and the other policy flags of
// tools/amp_report.h) it also dry-runs the AMP conversion that `amptrain
// convert` would do, writing nothing: per node its dtype and reason, casts
// inserted/removed, weight bytes before/after and the activation memory
// estimate at every level O0..O3 (same dtype and lists). JSON: an "amp" key
// holding AmpReportJson plus activation_bytes_per_level {O0..O3: bytes}.
#include <nlohmann/json.hpp>

#include <iostream>
#include <map>
#include <optional>

#include "importer/onnx_import.h"
#include "ir/printer.h"
#include "ir/graph.h"
#include "tools/amp_report.h"
#include "tools/commands.h"

namespace amptrain::tools {

namespace {

using nlohmann::json;

struct InspectArgs {
  std::string model;
  bool json = false;
  bool ir = false;
  AmpFlags amp;
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

// The conversion `amptrain convert` would do (same import options), on copies.
struct DryRun {
  amp::Report report;
  json data;
};

StatusOr<DryRun> AmpDryRun(const InspectArgs& args) {
  AMP_ASSIGN_OR_RETURN(amp::Policy policy, BuildPolicy(args.amp, amp::Level::kO2));
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, importer::ImportModelFile(args.model));
  json per_level = json::object();
  amp::Report report;
  for (amp::Level level : {amp::Level::kO0, amp::Level::kO1, amp::Level::kO2, amp::Level::kO3}) {
    amp::Policy at_level = policy;
    at_level.level = level;
    std::unique_ptr<ir::Graph> copy = graph->Clone();
    AMP_ASSIGN_OR_RETURN(amp::Report r, amp::Convert(*copy, at_level));
    per_level[amp::LevelName(level)] = r.activation_bytes_after;
    if (level == policy.level) report = std::move(r);
  }
  json out = AmpReportJson(report, policy);
  out["activation_bytes_per_level"] = per_level;
  return DryRun{std::move(report), std::move(out)};
}

void PrintDryRun(const amp::Report& report, const json& d) {
  std::cout << "amp dry run (nothing written)\n";
  for (const amp::NodeReport& n : report.nodes)
    std::cout << "  " << n.name << "  " << n.op << "  " << ir::DTypeName(n.dtype) << "  " << amp::ReasonName(n.reason)
              << "\n";
  PrintAmpSummary(report, std::cout);
  std::cout << "activation memory per level (estimate, batch 1)\n";
  for (const auto& [level, bytes] : d["activation_bytes_per_level"].items())
    std::cout << "  " << level << " " << HumanBytes(bytes.get<double>()) << "\n";
}

Status Inspect(const InspectArgs& args) {
  if (args.amp.any() && args.amp.level.empty() && args.amp.policy_file.empty())
    return InvalidArgument("the AMP flags of inspect need --amp LEVEL or --policy FILE");
  importer::ImportOptions options;  // show the model as written: no folding, Identity kept
  options.fold_constants = false;
  options.remove_identity = false;
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, importer::ImportModelFile(args.model, options));
  json d = Describe(*graph, args.model);
  std::optional<DryRun> dry;
  if (args.amp.any()) {
    AMP_ASSIGN_OR_RETURN(dry, AmpDryRun(args));
    d["amp"] = dry->data;
  }
  if (args.json) {
    std::cout << d.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return Status::Ok();
  }
  PrintText(*graph, d);
  if (args.ir) std::cout << ir::PrintGraph(*graph);
  if (dry) PrintDryRun(dry->report, dry->data);
  return Status::Ok();
}

}  // namespace

void AddInspectCommand(CLI::App& app, Status& result) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* cmd = app.add_subcommand("inspect", "Show a model's opset, inputs, outputs, ops and parameter count");
  cmd->add_option("MODEL", args->model, "The .onnx file")->required();
  cmd->add_flag("--json", args->json, "Print JSON instead of text");
  cmd->add_flag("--ir", args->ir, "Also print the imported IR, one line per node");
  AddAmpFlags(cmd, args->amp, "turns on the AMP dry run");
  cmd->callback([args, &result] { result = Inspect(*args); });
}

}  // namespace amptrain::tools
