// amptrain convert MODEL -o OUT.onnx [--amp O1|O2|O3] [--dtype fp16|bf16]
//     [--fp16-ops A,B] [--fp32-ops A,B] [--fp16-nodes N|re:R,...] [--fp32-nodes ...]
//     [--policy FILE] [--keep-io-types|--no-keep-io-types] [--report FILE.json]
//
// Writes a mixed-precision ONNX model: imports MODEL (constant folding and
// Identity removal on: both preserve values), runs amp::Convert with the
// policy the flags describe (tools/amp_report.h: flags override the policy
// file) and writes OUT atomically with importer::ExportModelFile. Prints a
// summary: nodes per dtype, casts, weight bytes before -> after.
//
// The default level is O2: "convert a model to fp16" means low-precision
// weights and compute everywhere except the numerically sensitive denylist
// (what onnxconverter-common's converter and Apex O2 do); O1 only moves the
// allowlist ops, O3 also BatchNormalization and the graph's own float math.
// With --policy and no --amp the file's level applies (amp::Policy's default,
// O1, when the file has no `level` key).
//
// --report FILE.json writes amptrain::tools::AmpReportJson (per node dtype and
// reason, casts, weight bytes, clamped values, activation estimate). On any
// error neither OUT nor the report is left behind.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "importer/onnx_export.h"
#include "importer/onnx_import.h"
#include "tools/amp_report.h"
#include "tools/commands.h"

namespace amptrain::tools {

namespace {

namespace fs = std::filesystem;

struct ConvertArgs {
  std::string model;
  std::string output;
  std::string report;
  AmpFlags amp;
};

// Writes `text` to a temporary file next to `path`; returns its name.
StatusOr<std::string> WriteTemp(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp-" + std::to_string(getpid());
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::error_code ec;
    fs::remove(tmp, ec);
    return IoError("cannot write report '", path, "'");
  }
  return tmp;
}

Status Convert(const ConvertArgs& args) {
  AMP_ASSIGN_OR_RETURN(amp::Policy policy, BuildPolicy(args.amp, amp::Level::kO2));
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, importer::ImportModelFile(args.model));
  AMP_ASSIGN_OR_RETURN(amp::Report report, amp::Convert(*graph, policy));

  std::string report_tmp;
  if (!args.report.empty()) {
    AMP_ASSIGN_OR_RETURN(report_tmp, WriteTemp(args.report, AmpReportJson(report, policy).dump(2) + "\n"));
  }
  Status written = importer::ExportModelFile(*graph, args.output);
  std::error_code ec;
  if (written.ok() && !report_tmp.empty()) {
    fs::rename(report_tmp, args.report, ec);
    if (ec) {
      fs::remove(args.output, ec);
      written = IoError("cannot write report '", args.report, "': ", ec.message());
    }
  }
  if (!report_tmp.empty()) fs::remove(report_tmp, ec);
  AMP_RETURN_IF_ERROR(written);

  PrintAmpSummary(report, std::cout);
  spdlog::info("wrote {} ({} nodes){}", args.output, graph->num_nodes(),
               args.report.empty() ? "" : ", report " + args.report);
  return Status::Ok();
}

}  // namespace

void AddConvertCommand(CLI::App& app, Status& result) {
  auto args = std::make_shared<ConvertArgs>();
  CLI::App* cmd = app.add_subcommand("convert", "Write a mixed-precision (fp16/bf16) copy of an ONNX model");
  cmd->add_option("MODEL", args->model, "The .onnx file")->required();
  cmd->add_option("-o,--output", args->output, "The .onnx file to write")->required();
  AddAmpFlags(cmd, args->amp, "default O2");
  cmd->add_option("--report", args->report, "Also write the conversion report as JSON");
  cmd->callback([args, &result] { result = Convert(*args); });
}

}  // namespace amptrain::tools
