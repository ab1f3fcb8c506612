// amptrain export MODEL -o OUT.onnx [--opset N]: import and write back.
//
// The model is imported without constant folding or Identity removal, so the
// written model computes the same as the original; --opset converts to
// another opset (canonical-form inputs become attributes where the target
// opset needs them). The write is atomic: no partial OUT on error.
#include <spdlog/spdlog.h>

#include "importer/onnx_export.h"
#include "importer/onnx_import.h"
#include "tools/commands.h"

namespace amptrain::tools {

namespace {

struct ExportArgs {
  std::string model;
  std::string output;
  int64_t opset = 0;
};

Status Export(const ExportArgs& args) {
  importer::ImportOptions import_options;
  import_options.fold_constants = false;
  import_options.remove_identity = false;
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, importer::ImportModelFile(args.model, import_options));
  importer::ExportOptions export_options;
  export_options.opset = args.opset;
  AMP_RETURN_IF_ERROR(importer::ExportModelFile(*graph, args.output, export_options));
  spdlog::info("wrote {} (opset {}, {} nodes)", args.output, args.opset ? args.opset : graph->info().opset,
               graph->num_nodes());
  return Status::Ok();
}

}  // namespace

void AddExportCommand(CLI::App& app, Status& result) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd = app.add_subcommand("export", "Import a model and write it back as ONNX");
  cmd->add_option("MODEL", args->model, "The .onnx file")->required();
  cmd->add_option("-o,--output", args->output, "The .onnx file to write")->required();
  cmd->add_option("--opset", args->opset, "Opset of the written model (default: the model's)")
      ->check(IntAtLeast(1));
  cmd->callback([args, &result] { result = Export(*args); });
}

}  // namespace amptrain::tools
