// amptrain convert MODEL -o OUT.onnx [--amp O1|O2|O3] [--dtype fp16|bf16]
//     [--fp16-ops A,B] [--fp32-ops A,B] [--fp16-nodes N|re:R,...] [--fp32-nodes ...]
//     [--policy FILE] [--keep-io-types|--no-keep-io-types] [--report FILE.json]
//     [--opset N]
//
// Writes a mixed-precision ONNX model: imports MODEL (constant folding and
// Identity removal on: both preserve values), runs amp::Convert with the
// policy the flags describe (tools/amp_report.h: flags override the policy
// file) and writes OUT atomically (temporary file + rename). Prints a
// summary: nodes per dtype, casts, weight bytes before -> after.
//
// The default level is O2: "convert a model to fp16" means low-precision
// weights and compute everywhere except the numerically sensitive denylist
// (what onnxconverter-common's converter and Apex O2 do); O1 only moves the
// allowlist ops, O3 also BatchNormalization and the graph's own float math.
// With --policy and no --amp the file's level applies (amp::Policy's default,
// O1, when the file has no `level` key).
//
// The written model keeps MODEL's opset unless --opset N asks for another
// (11..28). The opset's ONNX type constraints decide what may be low (bf16
// Conv only from opset 22): the summary names the nodes kept fp32 for the
// opset alone and the opset that would take them.
//
// --timings prints one line to stderr, "timings: import A ms, amp B ms,
// export C ms, total D ms" (file read to file written, inside the process;
// tools/bench/amp_vs_onnxconverter.py reads it). -v turns on the verifier
// after every AMP pass (off otherwise: it is for tests and debugging, and
// took 20% of a conversion); the final dtype-consistency check always runs.
//
// --report FILE.json writes amptrain::tools::AmpReportJson (per node dtype and
// reason, casts, weight bytes, clamped values, activation estimate). On any
// error neither OUT nor the report is left behind.
//
// --max-error E makes the conversion accuracy-guided
// (executor/precision_search.h): the model and its conversions run here on
// validation inputs (--validate-input NAME=X.npy, or 16 seeded standard-normal
// samples of the model's float inputs: one batch of 16 where the batch is
// dynamic, else batches of the model's static batch size),
// and the fewest leading low nodes are kept fp32 for every float output to
// stay within relative L2 error E of the fp32 model. The summary and the
// report's "precision_search" give every trial measured (nodes kept fp32,
// error, Casts) and the `fp32_nodes` policy entry that reproduces the result.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>

#include "executor/precision_search.h"
#include "importer/onnx_export.h"
#include "importer/onnx_import.h"
#include "ir/output_path.h"
#include "tools/amp_report.h"
#include "tools/commands.h"

namespace amptrain::tools {

namespace {

namespace fs = std::filesystem;

struct ConvertArgs {
  std::string model;
  std::string output;
  std::string report;
  bool timings = false;
  AmpFlags amp;
  double max_error = -1.0;  // < 0: no accuracy-guided search
  std::vector<std::string> validate_inputs;
  int threads = 0;
  int64_t opset = 0;  // 0: the model's
};

// Writes `text` to a temporary file next to `path`; returns its name.
// Convert() has checked that `path` may be replaced.
// `what` names the file in the error ("model", "report").
StatusOr<std::string> WriteTemp(const std::string& path, const std::string& text, const char* what) {
  std::string tmp = path + ".tmp-" + std::to_string(getpid()) + "-" + what;
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::error_code ec;
    fs::remove(tmp, ec);
    return IoError("cannot write ", what, " '", path, "'");
  }
  return tmp;
}

// Random validation samples of --max-error without --validate-input.
constexpr int64_t kRandomValidationSamples = 16;

// The validation batches of --max-error: the files given (one batch), or random ones.
StatusOr<std::vector<executor::InputBatch>> ValidationBatches(const ir::Graph& g, const ConvertArgs& args) {
  if (args.validate_inputs.empty()) {
    auto r = executor::RandomValidationBatches(g, kRandomValidationSamples, 0);
    if (!r.ok()) return r.status().WithContext("--max-error without --validate-input");
    return r;
  }
  AMP_ASSIGN_OR_RETURN(auto inputs, ReadInputs(g, args.validate_inputs, "--validate-input"));
  for (ir::Value v : g.inputs())
    if (!inputs.count(g.name(v)))
      return InvalidArgument("--validate-input: no file for the model's input '", g.name(v), "'");
  return std::vector<executor::InputBatch>{inputs};
}

nlohmann::json SearchJson(const executor::PrecisionSearch& s, double bound, bool random_inputs) {
  nlohmann::json trials = nlohmann::json::array();
  for (const executor::PrecisionTrial& t : s.trials)
    trials.push_back({{"fp32_nodes", t.fp32_nodes}, {"error", t.error}, {"casts", t.casts}});
  return {{"max_error", bound},
          {"metric", "largest relative L2 error over the float outputs, against the fp32 model, run by amptrain"},
          {"inputs", random_inputs ? StrCat(kRandomValidationSamples, " standard-normal samples, seeds from 0")
                                   : std::string("--validate-input")},
          {"candidates", s.candidates.size()},
          {"trials", trials},
          {"chosen", {{"fp32_nodes", s.chosen.fp32_nodes}, {"error", s.chosen.error}, {"casts", s.chosen.casts}}},
          {"fp32_nodes", s.fp32_nodes}};
}

void PrintSearch(const executor::PrecisionSearch& s, double bound, std::ostream& os) {
  const executor::PrecisionTrial& first = s.trials.front();
  os << "precision search (bound " << bound << "): " << s.trials.size() << " trials; as the policy converts, error "
     << first.error << " with " << first.casts << " Casts";
  if (s.chosen.fp32_nodes == 0) {
    os << ": within the bound, nothing kept fp32\n";
    return;
  }
  os << "; kept the first " << s.chosen.fp32_nodes << " of " << s.candidates.size() << " low nodes fp32 ('"
     << s.fp32_nodes.front() << "' to '" << s.fp32_nodes.back() << "'): error " << s.chosen.error << " with "
     << s.chosen.casts << " Casts\n";
  if (s.fp32_nodes.size() <= 16) {
    os << "policy entry: fp32_nodes: [";
    for (size_t i = 0; i < s.fp32_nodes.size(); ++i) os << (i ? ", " : "") << nlohmann::json(s.fp32_nodes[i]).dump();
    os << "]\n";
  } else {
    os << "policy entry: the report's precision_search.fp32_nodes (" << s.fp32_nodes.size() << " names)\n";
  }
}

// Milliseconds since `start`, for --timings.
double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

Status Convert(const ConvertArgs& args) {
  using Clock = std::chrono::steady_clock;
  // Every output is checked before any work: none may be the input or each other (issue 9, F11).
  if (SameFile(args.output, args.model)) return InvalidArgument("-o '", args.output, "' is the input model");
  if (!args.report.empty()) {
    if (SameFile(args.report, args.model)) return InvalidArgument("--report '", args.report, "' is the input model");
    if (SameFile(args.report, args.output)) return InvalidArgument("--report and -o are the same file '", args.report, "'");
  }
  AMP_RETURN_IF_ERROR(ir::CheckReplaceableOutput(args.output, "model"));
  if (!args.report.empty()) AMP_RETURN_IF_ERROR(ir::CheckReplaceableOutput(args.report, "report"));
  AMP_ASSIGN_OR_RETURN(amp::Policy policy, BuildPolicy(args.amp, amp::Level::kO2));
  if (args.opset != 0) {
    Status writable = importer::CheckWritableOpset(args.opset);
    if (!writable.ok()) return writable.WithContext("--opset");
  }
  const Clock::time_point start = Clock::now();
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, importer::ImportModelFile(args.model));
  WarnIfModelDraws(*graph, "outputs (and --max-error's measurements)");
  // The capability asks the written opset's type constraints, and the export
  // writes it (the IR is in canonical form: any opset from 11 up).
  if (args.opset != 0) graph->info().opset = args.opset;
  const double import_ms = MsSince(start);
  amp::ConvertOptions options;
  options.verify_each_pass = spdlog::should_log(spdlog::level::debug);
  Clock::time_point t0 = Clock::now();
  std::optional<executor::PrecisionSearch> search;
  if (args.max_error >= 0.0) {
    AMP_ASSIGN_OR_RETURN(auto batches, ValidationBatches(*graph, args));
    executor::PrecisionSearchOptions so;
    so.max_error = args.max_error;
    so.threads = args.threads;
    AMP_ASSIGN_OR_RETURN(search, executor::SearchFp32Prefix(*graph, policy, options, batches, so));
    policy = search->policy;
  }
  AMP_ASSIGN_OR_RETURN(amp::Report report, amp::Convert(*graph, policy, options));
  WarnUnmatchedPatterns(report);
  const double amp_ms = MsSince(t0);
  t0 = Clock::now();

  // The model and the report are written to temporary files and renamed
  // into place: no partial file is ever visible, and none is left on error.
  // No fsync: the output is derived from MODEL and can be written again, and
  // an fsync of the file and its folder took 10-30 ms, most of a conversion.
  AMP_ASSIGN_OR_RETURN(std::string bytes, importer::ExportModelBytes(*graph));
  AMP_ASSIGN_OR_RETURN(std::string model_tmp, WriteTemp(args.output, bytes, "model"));
  std::string report_tmp;
  Status written = Status::Ok();
  if (!args.report.empty()) {
    nlohmann::json json = AmpReportJson(report, policy);
    if (search) json["precision_search"] = SearchJson(*search, args.max_error, args.validate_inputs.empty());
    StatusOr<std::string> t = WriteTemp(args.report, json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", "report");
    if (t.ok()) report_tmp = *t;
    else written = t.status();
  }
  std::error_code ec;
  if (written.ok() && !report_tmp.empty()) {
    fs::rename(report_tmp, args.report, ec);
    if (ec) written = IoError("cannot write report '", args.report, "': ", ec.message());
  }
  if (written.ok()) {
    fs::rename(model_tmp, args.output, ec);
    if (ec) {
      written = IoError("cannot write model '", args.output, "': ", ec.message());
      if (!report_tmp.empty()) fs::remove(args.report, ec);
    }
  }
  fs::remove(model_tmp, ec);
  if (!report_tmp.empty()) fs::remove(report_tmp, ec);
  AMP_RETURN_IF_ERROR(written);
  if (args.timings)
    std::fprintf(stderr, "timings: import %.2f ms, amp %.2f ms, export %.2f ms, total %.2f ms\n", import_ms, amp_ms,
                 MsSince(t0), MsSince(start));

  PrintAmpSummary(report, std::cout);
  if (search) PrintSearch(*search, args.max_error, std::cout);
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
  cmd->add_option("--opset", args->opset,
                  "Opset of the written model (default: the model's); its ONNX types decide what may be low "
                  "(bf16 Conv, pooling and most unary math only from opset 22)");
  cmd->add_option("--report", args->report, "Also write the conversion report as JSON");
  cmd->add_flag("--timings", args->timings, "Print the milliseconds of import, AMP passes and export to stderr");
  CLI::Option* max_error =
      cmd->add_option("--max-error", args->max_error,
                      "Keep the fewest leading nodes fp32 for every float output to stay within this relative L2 "
                      "error of the fp32 model on the validation inputs (measured here)")
          ->check(NumberAtLeast(0.0));
  cmd->add_option("--validate-input", args->validate_inputs,
                  "Validation input NAME=X.npy for --max-error (repeatable; default: standard-normal float inputs)")
      ->needs(max_error);
  cmd->add_option("--threads", args->threads, "CPU threads for --max-error's runs (default: all cores)")
      ->check(IntAtLeast(1, kMaxThreads));
  cmd->callback([args, &result] { result = Convert(*args); });
}

}  // namespace amptrain::tools
