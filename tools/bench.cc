// amptrain bench MODEL [--batch N] [--threads T] [--warmup W] [--repeat R] [--json] [--reference]
//                     [--profile] [--no-optimize]
//
// Times inference on seeded random inputs: the batch dimension (the first
// symbolic dim) is set to --batch, other symbolic dims to 1; float inputs are
// standard normal, integer inputs uniform in [0, 10). Prints the median,
// min and max latency of the timed runs (after --warmup untimed ones), or
// one JSON line with --json (the benchmark scripts of tools/bench/ read it).
// --profile times every kernel of the timed runs and prints the tables of
// executor/profile.h (per op type, per kernel implementation, top 10 nodes)
// to stderr; --no-optimize runs the graph without the inference graph
// optimizations of executor/optimize.h.
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <random>

#include "executor/session.h"
#include "importer/onnx_import.h"
#include "tools/commands.h"

namespace amptrain::tools {

namespace {

struct BenchArgs {
  std::string model;
  int64_t batch = 1;
  int threads = 0;
  int warmup = 2;
  int repeat = 10;
  bool json = false;
  bool reference = false;
  bool profile = false;
  bool no_optimize = false;
};

StatusOr<ir::Tensor> RandomInput(const ir::Graph& g, ir::Value v, int64_t batch, std::mt19937_64& rng) {
  const ir::TensorType& type = g.type(v);
  if (!type.has_shape) return InvalidArgument("input '", g.name(v), "' has no shape; bench needs ranked inputs");
  std::vector<int64_t> dims;
  bool batch_used = false;
  for (const ir::Dim& d : type.shape.dims()) {
    if (d.is_static()) dims.push_back(d.value);
    else {
      dims.push_back(batch_used ? 1 : batch);
      batch_used = true;
    }
  }
  AMP_ASSIGN_OR_RETURN(ir::Tensor t, ir::Tensor::Zeros(type.dtype, dims));
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int64_t> ints(0, 9);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    switch (type.dtype) {
      case ir::DType::kFloat32: t.data<float>()[i] = normal(rng); break;
      case ir::DType::kFloat64: t.data<double>()[i] = normal(rng); break;
      case ir::DType::kFloat16: t.data<uint16_t>()[i] = ir::FloatToHalf(normal(rng)); break;
      case ir::DType::kBFloat16: t.data<uint16_t>()[i] = ir::FloatToBFloat16(normal(rng)); break;
      case ir::DType::kInt64: t.data<int64_t>()[i] = ints(rng); break;
      case ir::DType::kInt32: t.data<int32_t>()[i] = static_cast<int32_t>(ints(rng)); break;
      default: return Unimplemented("bench cannot make random ", ir::DTypeName(type.dtype), " input '", g.name(v), "'");
    }
  }
  return t;
}

Status Bench(const BenchArgs& args) {
  using Clock = std::chrono::steady_clock;
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, importer::ImportModelFile(args.model));
  std::mt19937_64 rng(0);
  std::map<std::string, ir::Tensor> inputs;
  for (ir::Value v : graph->inputs()) {
    AMP_ASSIGN_OR_RETURN(inputs[graph->name(v)], RandomInput(*graph, v, args.batch, rng));
  }
  executor::SessionOptions options;
  options.threads = args.threads;
  if (args.reference) options.kernel_impl = "reference";
  options.profile = args.profile;
  options.optimize = !args.no_optimize;
  AMP_ASSIGN_OR_RETURN(auto session, executor::InferenceSession::Create(std::move(graph), options));
  for (int i = 0; i < args.warmup; ++i) AMP_RETURN_IF_ERROR(session->Run(inputs).status());
  session->profile().Reset();
  std::vector<double> ms;
  for (int i = 0; i < args.repeat; ++i) {
    Clock::time_point t = Clock::now();
    AMP_RETURN_IF_ERROR(session->Run(inputs).status());
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  double median = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                    : 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);
  const executor::Plan* plan = session->last_plan();
  if (args.profile) std::cerr << session->profile().Report(10);
  if (args.json) {
    nlohmann::json j = {{"runtime", std::string("amptrain ") + AMPTRAIN_VERSION},
                        {"batch", args.batch},
                        {"threads", args.threads},
                        {"median_ms", median},
                        {"min_ms", sorted.front()},
                        {"max_ms", sorted.back()},
                        {"arena_bytes", plan ? plan->peak_bytes : 0}};
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::cout << "batch " << args.batch << ": median " << median << " ms, min " << sorted.front() << " ms, max "
              << sorted.back() << " ms over " << args.repeat << " runs; " << 1000.0 * args.batch / median
              << " samples/s; arena " << HumanBytes(plan ? static_cast<double>(plan->peak_bytes) : 0) << "\n";
  }
  return Status::Ok();
}

}  // namespace

void AddBenchCommand(CLI::App& app, Status& result) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand("bench", "Time inference on random inputs");
  cmd->add_option("MODEL", args->model, "The .onnx file")->required();
  cmd->add_option("--batch", args->batch, "Size of the batch dimension")->check(IntAtLeast(1));
  cmd->add_option("--threads", args->threads, "CPU threads (0 = all cores)")->check(IntAtLeast(0, kMaxThreads));
  cmd->add_option("--warmup", args->warmup, "Untimed runs first")->check(IntAtLeast(0));
  cmd->add_option("--repeat", args->repeat, "Timed runs")->check(IntAtLeast(1));
  cmd->add_flag("--json", args->json, "One JSON line instead of text");
  cmd->add_flag("--reference", args->reference, "Use the reference kernels only");
  cmd->add_flag("--profile", args->profile, "Print per-op, per-implementation and top-node kernel times (stderr)");
  cmd->add_flag("--no-optimize", args->no_optimize, "Skip the inference graph optimizations (BN folding, conv fusion)");
  cmd->callback([args, &result] { result = Bench(*args); });
}

}  // namespace amptrain::tools
