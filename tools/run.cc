// amptrain run MODEL --input NAME=FILE.npy ... --output-dir DIR [--threads N] [--reference]
//     [--no-winograd] [--no-optimize] [--reference-ops OP,...]
//
// Imports the model, runs it once on the given .npy inputs and writes every
// graph output to DIR/<name>.npy (DIR is created when missing). Output names
// become file names through SanitizeFileName ('/', '\', ':' and control
// characters -> '_'); when two names collide after that, later ones get
// "_2", "_3", ... Each file is written atomically, and when one write fails
// the files written before it are removed, so a failed run leaves no output.
// `--input FILE.npy` without NAME= is accepted when the model has exactly one
// input.
#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>

#include "executor/npy.h"
#include "executor/session.h"
#include "ir/op_schema.h"
#include "importer/onnx_import.h"
#include "tools/commands.h"
#include "tools/device_flag.h"

namespace amptrain::tools {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct RunArgs {
  std::string model;
  std::vector<std::string> inputs;
  std::string output_dir;
  int threads = 0;
  bool reference = false;
  bool no_winograd = false;
  bool no_optimize = false;
  std::vector<std::string> reference_ops;
  std::string device = "cpu";
};

double MsSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

Status WriteOutputs(const ir::Graph& g, const std::vector<ir::Tensor>& outputs, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return IoError("cannot create output folder '", dir, "': ", ec.message());
  std::vector<std::string> names;
  for (ir::Value v : g.outputs()) names.push_back(g.name(v));
  const std::vector<std::string> files = UniqueFileNames(names);
  std::vector<std::pair<std::string, ir::Tensor>> out;
  for (size_t i = 0; i < outputs.size(); ++i) out.emplace_back((fs::path(dir) / (files[i] + ".npy")).string(), outputs[i]);
  AMP_RETURN_IF_ERROR(WriteNpyFiles(out));  // all or nothing: a failure keeps the folder as it was
  for (size_t i = 0; i < outputs.size(); ++i)
    std::cout << names[i] << ": " << ir::DTypeName(outputs[i].dtype())
              << ir::Shape::FromStatic(outputs[i].dims()).ToString() << " -> " << out[i].first << "\n";
  return Status::Ok();
}

Status Run(const RunArgs& args) {
  Clock::time_point start = Clock::now();
  AMP_ASSIGN_OR_RETURN(kernels::DeviceSpec device, OpenDeviceFlag(args.device));
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, importer::ImportModelFile(args.model));
  spdlog::info("imported {} ({} nodes) in {:.1f} ms", args.model, graph->num_nodes(), MsSince(start));
  WarnIfModelDraws(*graph, "outputs");
  AMP_ASSIGN_OR_RETURN(auto inputs, ReadInputs(*graph, args.inputs, "--input"));

  executor::SessionOptions options;
  options.threads = args.threads;
  ApplyDevice(device, options);
  if (args.reference) options.kernel_impl = "reference";
  AMP_RETURN_IF_ERROR(ApplyReferenceOps(args.reference_ops, options));
  options.winograd = !args.no_winograd;
  options.optimize = !args.no_optimize;
  AMP_ASSIGN_OR_RETURN(auto session, executor::InferenceSession::Create(std::move(graph), options));
  Clock::time_point run_start = Clock::now();
  AMP_ASSIGN_OR_RETURN(std::vector<ir::Tensor> outputs, session->Run(inputs));
  double run_ms = MsSince(run_start);
  const executor::Plan* plan = session->last_plan();
  spdlog::info("plan: {} kernels, {} folded nodes, arena {} ({} without reuse)", plan->steps.size(),
               plan->folded_nodes, HumanBytes(static_cast<double>(plan->peak_bytes)),
               HumanBytes(static_cast<double>(plan->naive_bytes)));
  spdlog::info("ran in {:.1f} ms (planning included)", run_ms);
  AMP_RETURN_IF_ERROR(WriteOutputs(session->graph(), outputs, args.output_dir));
  spdlog::info("done in {:.1f} ms", MsSince(start));
  return Status::Ok();
}

}  // namespace

void AddRunCommand(CLI::App& app, Status& result) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "Run a model on .npy inputs and write its outputs as .npy files");
  cmd->add_option("MODEL", args->model, "The .onnx file")->required();
  cmd->add_option("-i,--input", args->inputs,
                  "NAME=FILE.npy, once per model input (FILE.npy alone for a model with one input)");
  cmd->add_option("-o,--output-dir", args->output_dir,
                  "Folder for <output name>.npy files ('/', '\\', ':' in names become '_')")
      ->required();
  cmd->add_option("--threads", args->threads, "CPU threads (0 = all cores)")->check(IntAtLeast(0, kMaxThreads));
  AddDeviceFlag(cmd, args->device);
  cmd->add_flag("--reference", args->reference, "Use the reference kernels only");
  AddReferenceOpsFlag(cmd, args->reference_ops);
  cmd->add_flag("--no-winograd", args->no_winograd,
                "Direct convolutions only (default: Winograd for 3x3 stride-1 fp32 ones where oneDNN has it)");
  cmd->add_flag("--no-optimize", args->no_optimize,
                "Skip the inference graph optimizations (BN folding, conv fusion): the model's own ops, to compare");
  cmd->callback([args, &result] { result = Run(*args); });
}

}  // namespace amptrain::tools
