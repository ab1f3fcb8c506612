// amptrain grad MODEL --input NAME=X.npy --labels Y.npy --output-dir DIR [--threads N] [--reference] [--freeze P,...]
//   [--train-all]
//
// One forward + backward step of a classifier, for checking gradients
// against another framework: imports the model, puts it in training mode
// with Dropout off (BatchNormalization uses batch statistics), attaches a
// mean softmax cross-entropy loss to the model's single output, builds the
// backward over every trainable (float) initializer and runs it once.
// Writes DIR/loss.npy and DIR/grads/<initializer name>.npy, names sanitized
// as `run` does ('/', '\', ':' -> '_').
// With --amp O1|O2 [--dtype ...] the step runs in mixed precision as `train`
// would (executor/train/train_graph.h, ApplyTrainingPrecision), seeded by a
// static --loss-scale that is divided out of the written gradients.
// Every float initializer gets a gradient except BN running statistics, those
// taken for constants (ConstantLikeInitializers, unless --train-all) and
// those --freeze names (as `train`); the log names every initializer left
// without one, with the reason.
#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "autodiff/autodiff.h"
#include "autodiff/loss.h"
#include "autodiff/training_graph.h"
#include "executor/npy.h"
#include "executor/session.h"
#include "executor/train/constant_like.h"
#include "executor/train/train_graph.h"
#include "importer/onnx_import.h"
#include "ir/infer/infer_util.h"
#include "tools/amp_report.h"
#include "tools/commands.h"
#include "tools/device_flag.h"

namespace amptrain::tools {

namespace {

namespace fs = std::filesystem;

struct GradArgs {
  std::string model;
  std::vector<std::string> inputs;
  std::string labels;
  std::string output_dir;
  int threads = 0;
  bool reference = false;
  std::string device = "cpu";
  AmpFlags amp;
  std::string loss_scale = "auto";
  std::vector<std::string> freeze;
  bool train_all = false;
  LabelFlags label_flags;
};

StatusOr<std::map<std::string, ir::Tensor>> ReadFeeds(const ir::Graph& g, const GradArgs& args,
                                                      const std::string& labels_input) {
  std::map<std::string, ir::Tensor> feeds;
  for (const std::string& spec : args.inputs) {
    size_t eq = spec.find('=');
    std::string name = eq == std::string::npos ? "" : spec.substr(0, eq);
    if (eq == std::string::npos) {
      if (args.inputs.size() != 1 || g.inputs().size() != 2)  // the model's input + labels
        return InvalidArgument("--input '", spec, "' needs the form NAME=FILE.npy");
      name = g.name(g.inputs()[0]);
    }
    ir::Value v = g.FindValue(name);
    if (!v.valid() || g.producer(v)->op() != ir::OpKind::kInput || name == labels_input)
      return InvalidArgument("unknown input '", name, "'");
    AMP_ASSIGN_OR_RETURN(feeds[name], executor::ReadNpy(spec.substr(eq == std::string::npos ? 0 : eq + 1)));
  }
  AMP_ASSIGN_OR_RETURN(feeds[labels_input], executor::ReadNpy(args.labels));
  return feeds;
}

Status Grad(const GradArgs& args) {
  AMP_ASSIGN_OR_RETURN(kernels::DeviceSpec device, OpenDeviceFlag(args.device));
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, importer::ImportModelFile(args.model));
  ir::Graph& g = *graph;
  if (g.outputs().size() != 1)
    return InvalidArgument("grad: the model has ", g.outputs().size(), " outputs; it needs exactly one (the logits)");
  AMP_ASSIGN_OR_RETURN(autodiff::TrainingGraphInfo mode, autodiff::ToTrainingMode(g, autodiff::TrainingGraphOptions{false}));
  std::set<std::string> stats;
  for (const auto& [stat, update] : mode.bn_updates) stats.insert(stat);
  AMP_ASSIGN_OR_RETURN(std::set<std::string> frozen, executor::train::ResolveFreeze(g, args.freeze, stats));
  const std::map<std::string, std::string> constant_like =
      args.train_all ? std::map<std::string, std::string>{} : executor::train::ConstantLikeInitializers(g);
  AMP_ASSIGN_OR_RETURN(amp::Policy policy, BuildPolicy(args.amp, amp::Level::kO0));
  if (policy.level != amp::Level::kO0) {
    AMP_ASSIGN_OR_RETURN(amp::Report report, executor::train::ApplyTrainingPrecision(g, policy, false));
    WarnUnmatchedPatterns(report);
    std::string per;
    for (const auto& [dtype, count] : NodesPerDType(report)) per += fmt::format(" {} {}", count, dtype);
    spdlog::info("precision: AMP {} {} (fp32 master weights): nodes{}", amp::LevelName(policy.level),
                 ir::DTypeName(policy.low), per);
  }
  // The backward seed: a static loss scale (auto: 65536 for fp16, else 1);
  // the written gradients are divided by it again.
  double scale = 1.0;
  if (args.loss_scale == "auto") {
    scale = policy.level != amp::Level::kO0 && policy.low == ir::DType::kFloat16 ? 65536.0 : 1.0;
  } else {
    std::optional<float> v = ParseStaticLossScale(args.loss_scale);
    if (!v) return InvalidArgument("--loss-scale must be auto or a finite number > 0, got '", args.loss_scale, "'");
    scale = *v;
  }
  autodiff::CrossEntropyOptions loss;
  {
    AMP_ASSIGN_OR_RETURN(ir::Tensor labels, executor::ReadNpy(args.labels));
    if (labels.rank() < 1) return InvalidArgument("--labels '", args.labels, "' is a scalar; expected [batch] or [batch, d...]");
    loss.label_dims = std::vector<int64_t>(labels.dims().begin() + 1, labels.dims().end());
  }
  loss.class_axis = ClassAxisOf(args.label_flags);
  loss.ignore_index = args.label_flags.ignore_index;
  AMP_ASSIGN_OR_RETURN(autodiff::LossHead head, autodiff::AttachCrossEntropy(g, g.outputs()[0], loss));
  ir::Tensor one = *ir::Tensor::Zeros(g.type(head.loss).dtype, {});
  ir::SetElementFromDouble(one, 0, scale);
  ir::Node* seed = g.AddNode(ir::OpKind::kConstant, {}, 1, "loss/seed");
  seed->attrs().Set("value", one);
  AMP_RETURN_IF_ERROR(g.InferNode(seed));
  autodiff::BackwardOptions backward;
  backward.frozen = frozen;
  backward.frozen.insert(stats.begin(), stats.end());
  for (const auto& [name, why] : constant_like) backward.frozen.insert(name);
  AMP_ASSIGN_OR_RETURN(autodiff::BackwardResult grads, autodiff::BuildBackward(g, head.loss, seed->output(0), backward));
  spdlog::info("backward over {} initializers, {} nodes in all", grads.names.size(), g.num_nodes());
  for (const std::string& line : executor::train::ReportParameters(g, grads, frozen, stats, constant_like).Lines())
    spdlog::info("{}", line);
  AMP_ASSIGN_OR_RETURN(auto feeds, ReadFeeds(g, args, head.target_input));

  executor::SessionOptions options;
  options.threads = args.threads;
  ApplyDevice(device, options);
  options.training = true;
  if (args.reference) options.kernel_impl = "reference";
  AMP_ASSIGN_OR_RETURN(auto session, executor::InferenceSession::Create(std::move(graph), options));
  AMP_ASSIGN_OR_RETURN(std::vector<ir::Tensor> outputs, session->Run(feeds));
  const ir::Graph& run = session->graph();
  auto output_of = [&](ir::Value v) -> const ir::Tensor* {
    for (size_t i = 0; i < run.outputs().size(); ++i)
      if (run.outputs()[i] == v) return &outputs[i];
    return nullptr;
  };

  // loss.npy and every gradient, all or nothing (issue 9, F10): names that
  // collide after sanitizing get "_2", "_3", ... as in `run`.
  std::vector<std::pair<std::string, ir::Tensor>> files;
  files.emplace_back((fs::path(args.output_dir) / "loss.npy").string(), *output_of(head.loss));
  const std::vector<std::string> file_names = UniqueFileNames(grads.names);
  for (size_t k = 0; k < grads.names.size(); ++k) {
    const std::string& name = grads.names[k];
    const ir::Tensor* t = output_of(grads.grads.at(name));
    if (!t) return Internal("gradient of '", name, "' is not a graph output");
    ir::Tensor g = *t;
    if (scale != 1.0) {
      g = t->Clone();
      for (int64_t i = 0; i < g.num_elements(); ++i) ir::SetElementFromDouble(g, i, g.GetAsDouble(i) / scale);
    }
    files.emplace_back((fs::path(args.output_dir) / "grads" / (file_names[k] + ".npy")).string(), std::move(g));
  }
  std::error_code ec;
  fs::create_directories(fs::path(args.output_dir) / "grads", ec);
  if (ec) return IoError("cannot create output folder '", args.output_dir, "': ", ec.message());
  AMP_RETURN_IF_ERROR(WriteNpyFiles(files));
  spdlog::info("loss {} ; {} gradients written to {}/grads", output_of(head.loss)->GetAsDouble(0),
               grads.names.size(), args.output_dir);
  return Status::Ok();
}

}  // namespace

void AddGradCommand(CLI::App& app, Status& result) {
  auto args = std::make_shared<GradArgs>();
  CLI::App* cmd = app.add_subcommand(
      "grad", "One forward+backward step (cross-entropy loss, Dropout off): write the loss and parameter gradients");
  cmd->add_option("MODEL", args->model, "The .onnx file (one output: the logits)")->required();
  cmd->add_option("-i,--input", args->inputs, "NAME=FILE.npy, once per model input (FILE.npy alone for one input)");
  cmd->add_option("--labels", args->labels, "int64 class ids [batch], or [batch, d...] per token or pixel (.npy)")
      ->required();
  AddLabelFlags(cmd, args->label_flags);
  cmd->add_option("-o,--output-dir", args->output_dir, "Folder for loss.npy and grads/<initializer name>.npy")
      ->required();
  cmd->add_option("--threads", args->threads, "CPU threads (0 = all cores)")->check(IntAtLeast(0, kMaxThreads));
  AddDeviceFlag(cmd, args->device);
  cmd->add_flag("--reference", args->reference, "Use the reference kernels only");
  AddAmpFlags(cmd, args->amp, "default O0: fp32");
  cmd->add_option("--loss-scale", args->loss_scale,
                  "Static backward seed, divided out of the written gradients (auto: 65536 for fp16, else 1)")
      ->capture_default_str();
  cmd->add_option("--freeze", args->freeze,
                  "Parameters that get no gradient: NAME or re:REGEX, ... (a pattern that matches no parameter is "
                  "an error)")
      ->delimiter(',');
  cmd->add_flag("--train-all", args->train_all,
                "Give gradients also to the initializers taken for constants (Pow exponents, sinusoid frequencies)");
  cmd->callback([args, &result] { result = Grad(*args); });
}

}  // namespace amptrain::tools
