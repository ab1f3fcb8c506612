// amptrain bench MODEL [--batch N] [--threads T] [--warmup W] [--repeat R] [--json] [--reference]
//                     [--profile] [--no-optimize]
// amptrain bench --fma-peak [--threads T] [--json]
// amptrain bench MODEL --train [--batch N] [--amp O1 --dtype bf16 ...] [--loss-scale ...] [--optimizer adam]
//                     [--threads T] [--warmup W] [--repeat R] [--json] [--profile]
//
// Times inference on seeded random inputs: the batch dimension (the first
// symbolic dim) is set to --batch, other symbolic dims to 1; float inputs are
// standard normal, integer inputs uniform in [0, 10). Prints the median,
// min and max latency of the timed runs (after --warmup untimed ones), or
// one JSON line with --json (the benchmark scripts of tools/bench/ read it).
// --profile times every kernel of the timed runs and prints the tables of
// executor/profile.h (per op type, per kernel implementation, the slowest
// --profile-top nodes, 15 by default) to stderr; --no-optimize runs the graph without the inference graph
// optimizations of executor/optimize.h.
//
// --train times training steps instead (executor/train/trainer.h): one
// random batch (inputs as above, int64 labels uniform over the classes of
// the logits output; a label per position for an output of rank > 2, as
// --class-axis says), cross-entropy, --optimizer at lr 1e-3, under the AMP
// flags of `train` (default O0 = fp32). It reports the step time's median
// and 10th/90th percentiles, images/s at the median, and the peak RSS
// (the process's, as /usr/bin/time gives it); --profile adds the kernel
// tables and the step split into forward kernels, backward kernels (nodes
// the autodiff made, "grad/..."), and the rest of the step (the optimizer's
// fused update, the all-finite check, loss scaling: host work outside the
// kernels). The batch is made once before timing, so data loading costs 0.
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <random>
#include <thread>

#include <sys/resource.h>

#include "executor/session.h"
#include "kernels/cpu/cpu_info.h"
#include "executor/train/trainer.h"
#include "importer/onnx_import.h"
#include "tools/amp_report.h"
#include "tools/commands.h"
#include "tools/device_flag.h"

namespace amptrain::tools {

namespace {

struct BenchArgs {
  std::string model;
  int64_t batch = 1;
  int threads = 0;
  std::string device = "cpu";
  int warmup = 2;
  int repeat = 10;
  bool json = false;
  bool reference = false;
  bool no_winograd = false;
  bool no_channels_last = false;
  bool profile = false;
  int profile_top = 15;  // nodes listed by --profile
  bool no_optimize = false;
  bool train = false;
  bool fma_peak = false;
  AmpFlags amp;
  std::string loss_scale = "auto", optimizer = "adam";
  LabelFlags labels;  // --class-axis (--train, logits of rank > 2)
};

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double at = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(at), hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (at - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

double PeakRssMiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // KiB on Linux
}

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

Status BenchTrain(const BenchArgs& args, const kernels::DeviceSpec& device) {
  namespace train = executor::train;
  using Clock = std::chrono::steady_clock;
  AMP_ASSIGN_OR_RETURN(std::shared_ptr<kernels::Device> opened, kernels::OpenDevice(device));
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> model, importer::ImportModelFile(args.model));
  train::TrainConfig config;
  config.device = opened;
  config.optimizer.kind = args.optimizer;
  config.threads = args.threads;
  config.profile = args.profile;
  if (args.reference) config.kernel_impl = "reference";
  config.channels_last = !args.no_channels_last;
  AMP_ASSIGN_OR_RETURN(amp::Policy policy, BuildPolicy(args.amp, amp::Level::kO0));
  if (policy.level != amp::Level::kO0) config.graph.amp = policy;
  AMP_ASSIGN_OR_RETURN(config.loss_scaler, LossScaling(args.loss_scale, policy));
  // A single output of rank > 2 trains a label per position: per token
  // (rank 3, classes last: [N, T, V]) or per pixel (classes first:
  // [N, C, H, W]) unless --class-axis says otherwise.
  int64_t class_axis = 1;
  std::vector<int64_t> label_dims;
  if (model->outputs().size() == 1) {
    const ir::TensorType& out = model->type(model->outputs()[0]);
    const int64_t rank = out.has_shape ? static_cast<int64_t>(out.shape.rank()) : 0;
    if (rank > 2) {
      const autodiff::ClassAxis asked = ClassAxisOf(args.labels);
      const bool last = asked == autodiff::ClassAxis::kLast || (asked == autodiff::ClassAxis::kAuto && rank == 3);
      class_axis = last ? rank - 1 : 1;
      for (int64_t d = 1; d < rank; ++d) {
        if (d == class_axis) continue;
        if (!out.shape[d].is_static())
          return InvalidArgument("bench --train: the output '", model->name(model->outputs()[0]), "' ",
                                 out.ToString(), " has a dynamic dim besides the batch; random labels need a size");
        label_dims.push_back(out.shape[d].value);
      }
      config.graph.label_dims = label_dims;
      config.graph.class_axis = last ? autodiff::ClassAxis::kLast : autodiff::ClassAxis::kFirst;
    }
  }
  AMP_ASSIGN_OR_RETURN(auto trainer, train::Trainer::Create(*model, config));

  std::mt19937_64 rng(0);
  executor::data::Batch batch;
  for (const std::string& name : trainer->data_inputs()) {
    AMP_ASSIGN_OR_RETURN(ir::Tensor t, RandomInput(*model, model->FindValue(name), args.batch, rng));
    batch.inputs.emplace_back(name, std::move(t));
  }
  const ir::TensorType& logits = model->type(model->FindValue(trainer->logits_output()));
  const int64_t classes = logits.shape.dims()[class_axis].value;  // static: Trainer::Create checked it
  std::vector<int64_t> labels_shape{batch.inputs[0].second.dims()[0]};
  labels_shape.insert(labels_shape.end(), label_dims.begin(), label_dims.end());
  AMP_ASSIGN_OR_RETURN(batch.labels, ir::Tensor::Zeros(ir::DType::kInt64, labels_shape));
  std::uniform_int_distribution<int64_t> label(0, classes - 1);
  for (int64_t i = 0; i < batch.labels.num_elements(); ++i) batch.labels.data<int64_t>()[i] = label(rng);
  const int64_t images = batch.size();

  for (int i = 0; i < args.warmup; ++i) AMP_RETURN_IF_ERROR(trainer->Step(batch).status());
  trainer->ResetProfile();
  std::vector<double> ms;
  int64_t skipped = 0;
  for (int i = 0; i < args.repeat; ++i) {
    Clock::time_point t = Clock::now();
    AMP_ASSIGN_OR_RETURN(train::StepResult r, trainer->Step(batch));
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
    skipped += !r.applied;
  }
  const double median = Percentile(ms, 0.5), p10 = Percentile(ms, 0.1), p90 = Percentile(ms, 0.9);
  const double rss = PeakRssMiB();
  // On a GPU the memory that matters is the device's: every buffer the
  // trainer and its plans hold (cuDNN's and cuBLAS's own handles aside).
  const bool on_device = !opened->host_memory();
  const double device_mib = static_cast<double>(opened->peak_memory()) / (1024.0 * 1024.0);
  const std::string precision =
      policy.level == amp::Level::kO0 ? "fp32" : StrCat(amp::LevelName(policy.level), " ", ir::DTypeName(policy.low));
  double forward = 0.0, backward = 0.0;
  if (args.profile) {
    for (const executor::Profile::NodeTime& n : trainer->profile().nodes())
      (n.node.rfind("grad/", 0) == 0 ? backward : forward) += n.total_ms;
    std::cerr << trainer->profile().Report(static_cast<size_t>(args.profile_top));
  }
  const double steps = static_cast<double>(args.repeat);
  double sum_ms = 0.0;
  for (double m : ms) sum_ms += m;
  if (args.json) {
    nlohmann::json j = {{"runtime", std::string("amptrain ") + AMPTRAIN_VERSION},
                        {"mode", "train"},
                        {"precision", precision},
                        {"batch", images},
                        {"threads", args.threads},
                        {"steps", args.repeat},
                        {"median_ms", median},
                        {"p10_ms", p10},
                        {"p90_ms", p90},
                        {"images_per_s", 1000.0 * static_cast<double>(images) / median},
                        {"skipped_steps", skipped},
                        {"peak_rss_mib", rss}};
    if (on_device) j["peak_device_mib"] = device_mib;
    if (args.profile)
      j["phases_ms_per_step"] = {{"forward", forward / steps},
                                 {"backward", backward / steps},
                                 {"optimizer_and_host", (sum_ms - forward - backward) / steps},
                                 {"data", 0.0}};
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::cout << "train " << precision << ", batch " << images << ": step median " << median << " ms (p10 " << p10
              << ", p90 " << p90 << ") over " << args.repeat << " steps; "
              << 1000.0 * static_cast<double>(images) / median << " images/s; peak RSS " << rss << " MiB";
    if (on_device) std::cout << "; peak device memory " << device_mib << " MiB";
    if (skipped) std::cout << "; " << skipped << " steps skipped (overflow)";
    std::cout << "\n";
    if (args.profile)
      std::cout << "per step: forward " << forward / steps << " ms, backward " << backward / steps
                << " ms (kernels), optimizer and host " << (sum_ms - forward - backward) / steps
                << " ms, data 0 ms (one batch made before timing)\n";
  }
  return Status::Ok();
}

// The machine's fp32 FMA peak on --threads threads (kernels/cpu/cpu_info.h).
Status BenchFmaPeak(const BenchArgs& args) {
  if (!args.model.empty()) return InvalidArgument("--fma-peak takes no MODEL (got '", args.model, "')");
  if (args.train) return InvalidArgument("--fma-peak and --train measure different things: give one");
  const int threads = args.threads > 0 ? args.threads : static_cast<int>(std::thread::hardware_concurrency());
  const double gflops = kernels::cpu::MeasureFp32FmaPeak(threads);
  if (gflops <= 0.0) return Unimplemented("--fma-peak needs a CPU with AVX2 and FMA, or AVX-512");
  if (args.json) {
    std::cout << nlohmann::json{{"fma_peak_gflops", gflops}, {"threads", threads}}.dump() << "\n";
  } else {
    std::cout << "fp32 FMA peak: " << gflops << " GFLOP/s on " << threads << " thread(s)\n";
  }
  return Status::Ok();
}

Status Bench(const BenchArgs& args) {
  if (args.fma_peak) return BenchFmaPeak(args);
  if (args.model.empty()) return InvalidArgument("bench needs a MODEL (or --fma-peak)");
  AMP_ASSIGN_OR_RETURN(kernels::DeviceSpec device, OpenDeviceFlag(args.device));
  if (args.train && args.no_winograd)
    return InvalidArgument("--no-winograd is for inference: training convolutions are always direct");
  if (args.train) return BenchTrain(args, device);
  using Clock = std::chrono::steady_clock;
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, importer::ImportModelFile(args.model));
  std::mt19937_64 rng(0);
  std::map<std::string, ir::Tensor> inputs;
  for (ir::Value v : graph->inputs()) {
    AMP_ASSIGN_OR_RETURN(inputs[graph->name(v)], RandomInput(*graph, v, args.batch, rng));
  }
  executor::SessionOptions options;
  options.threads = args.threads;
  ApplyDevice(device, options);
  if (args.reference) options.kernel_impl = "reference";
  options.winograd = !args.no_winograd;
  options.channels_last = !args.no_channels_last;
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
  const double median = Percentile(ms, 0.5);
  const executor::Plan* plan = session->last_plan();
  if (args.profile) std::cerr << session->profile().Report(static_cast<size_t>(args.profile_top));
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
  cmd->add_option("MODEL", args->model, "The .onnx file");
  cmd->add_option("--batch", args->batch, "Size of the batch dimension")->check(IntAtLeast(1));
  cmd->add_option("--threads", args->threads, "CPU threads (0 = all cores)")->check(IntAtLeast(0, kMaxThreads));
  AddDeviceFlag(cmd, args->device);
  cmd->add_option("--warmup", args->warmup, "Untimed runs first")->check(IntAtLeast(0));
  cmd->add_option("--repeat", args->repeat, "Timed runs")->check(IntAtLeast(1));
  cmd->add_flag("--json", args->json, "One JSON line instead of text");
  cmd->add_flag("--reference", args->reference, "Use the reference kernels only");
  cmd->add_flag("--no-winograd", args->no_winograd,
                "Direct convolutions only (default: Winograd for 3x3 stride-1 fp32 ones where oneDNN has it)");
  cmd->add_flag("--no-channels-last", args->no_channels_last,
                "Keep every activation NCHW between kernels (default: channels-last where the kernels take it), "
                "to measure against it");
  cmd->add_flag("--profile", args->profile, "Print per-op, per-implementation and top-node kernel times (stderr)");
  cmd->add_option("--profile-top", args->profile_top, "Nodes listed by --profile, slowest first")
      ->check(IntAtLeast(1));
  cmd->add_flag("--no-optimize", args->no_optimize, "Skip the inference graph optimizations (BN folding, conv fusion)");
  cmd->add_flag("--train", args->train, "Time training steps (forward, backward, optimizer) instead of inference");
  cmd->add_option("--class-axis", args->labels.class_axis,
                  "With --train, an output of rank > 2: random labels per position, the classes first ([N, C, H, W]) "
                  "or last ([N, T, V]); auto: last for rank 3, else first")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "first", "last"}));
  cmd->add_flag("--fma-peak", args->fma_peak,
                "Measure this CPU's fp32 FMA peak (GFLOP/s) on --threads threads instead (no MODEL)");
  AddAmpFlags(cmd, args->amp, "with --train; default O0: fp32");
  cmd->add_option("--loss-scale", args->loss_scale, "With --train: auto | dynamic | none | N (as for train)")
      ->capture_default_str();
  cmd->add_option("--optimizer", args->optimizer, "With --train: sgd | adam | adamw")->capture_default_str()
      ->check(CLI::IsMember({"sgd", "adam", "adamw"}));
  cmd->callback([args, &result] { result = Bench(*args); });
}

}  // namespace amptrain::tools
