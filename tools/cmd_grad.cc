// amptrain grad MODEL --input NAME=X.npy --labels Y.npy --output-dir DIR [--threads N] [--reference] [--reference-ops OP,...] [--freeze P,...]
//   [--train-all]
//
// One forward + backward step of a classifier, for checking gradients
// against another framework: the training graph `train` builds
// (executor/train/train_graph.h: training mode, the same fusions, the
// precision plan, a mean softmax cross-entropy loss on the model's single
// output, the backward over every trainable (float) initializer), with
// Dropout off (BatchNormalization uses batch statistics), run once.
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

#include <filesystem>

#include "executor/npy.h"
#include "executor/session.h"
#include "executor/train/train_graph.h"
#include "importer/onnx_import.h"
#include "ir/infer/infer_util.h"  // SetElementFromDouble
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
  std::vector<std::string> reference_ops;
  std::string device = "cpu";
  AmpFlags amp;
  std::string loss_scale = "auto";
  std::vector<std::string> freeze;
  bool train_all = false;
  LabelFlags label_flags;
};

Status Grad(const GradArgs& args) {
  AMP_ASSIGN_OR_RETURN(kernels::DeviceSpec device, OpenDeviceFlag(args.device));
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> model, importer::ImportModelFile(args.model));
  if (model->outputs().size() != 1)
    return InvalidArgument("grad: the model has ", model->outputs().size(), " outputs; it needs exactly one (the logits)");
  AMP_ASSIGN_OR_RETURN(amp::Policy policy, BuildPolicy(args.amp, amp::Level::kO0));
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
  // The training graph `train` builds (executor/train/train_graph.h: the same
  // fusions, precision plan, loss head and backward), with Dropout off and
  // the gradients in fp32.
  executor::train::TrainGraphOptions opts;
  {
    AMP_ASSIGN_OR_RETURN(ir::Tensor labels, executor::ReadNpy(args.labels));
    if (labels.rank() < 1) return InvalidArgument("--labels '", args.labels, "' is a scalar; expected [batch] or [batch, d...]");
    opts.label_dims = std::vector<int64_t>(labels.dims().begin() + 1, labels.dims().end());
  }
  opts.class_axis = ClassAxisOf(args.label_flags);
  opts.ignore_index = args.label_flags.ignore_index;
  if (policy.level != amp::Level::kO0) opts.amp = policy;
  opts.low_gradients = false;
  opts.dropout = false;
  opts.freeze = args.freeze;
  opts.train_all = args.train_all;
  AMP_ASSIGN_OR_RETURN(executor::train::TrainGraph t, executor::train::BuildTrainGraph(*model, opts));
  if (t.amp_report) {
    WarnUnmatchedPatterns(*t.amp_report);
    std::string per;
    for (const auto& [dtype, count] : NodesPerDType(*t.amp_report)) per += fmt::format(" {} {}", count, dtype);
    spdlog::info("precision: AMP {} {} (fp32 master weights): nodes{}", amp::LevelName(policy.level),
                 ir::DTypeName(policy.low), per);
  }
  spdlog::info("backward over {} initializers, {} nodes in all", t.params.size(), t.graph->num_nodes());
  for (const std::string& line : t.parameters.Lines()) spdlog::info("{}", line);
  AMP_ASSIGN_OR_RETURN(auto feeds, ReadInputs(*model, args.inputs, "--input"));
  AMP_ASSIGN_OR_RETURN(feeds[t.target_input], executor::ReadNpy(args.labels));
  // Parameters and BN statistics are inputs of the training graph: the model's values.
  for (const std::vector<std::string>* names : {&t.params, &t.running_stats})
    for (const std::string& name : *names) feeds[name] = *model->ConstantValue(model->FindValue(name));
  feeds[t.loss_scale] = ir::Tensor::Scalar(static_cast<float>(scale));

  executor::SessionOptions options;
  options.threads = args.threads;
  ApplyDevice(device, options);
  options.training = true;
  if (args.reference) options.kernel_impl = "reference";
  AMP_RETURN_IF_ERROR(ApplyReferenceOps(args.reference_ops, options));
  AMP_ASSIGN_OR_RETURN(auto session, executor::InferenceSession::Create(std::move(t.graph), options));
  AMP_ASSIGN_OR_RETURN(std::vector<ir::Tensor> outputs, session->Run(feeds));
  const ir::Graph& run = session->graph();
  auto output_named = [&](const std::string& name) -> const ir::Tensor* {
    for (size_t i = 0; i < run.outputs().size(); ++i)
      if (run.name(run.outputs()[i]) == name) return &outputs[i];
    return nullptr;
  };
  const ir::Tensor* loss = output_named(t.loss);
  if (!loss) return Internal("the loss is not a graph output");

  // loss.npy and every gradient, all or nothing (issue 9, F10): names that
  // collide after sanitizing get "_2", "_3", ... as in `run`.
  std::vector<std::pair<std::string, ir::Tensor>> files;
  files.emplace_back((fs::path(args.output_dir) / "loss.npy").string(), *loss);
  const std::vector<std::string> file_names = UniqueFileNames(t.params);
  for (size_t k = 0; k < t.params.size(); ++k) {
    const std::string& name = t.params[k];
    const ir::Tensor* grad = output_named(t.grads.at(name));
    if (!grad) return Internal("gradient of '", name, "' is not a graph output");
    ir::Tensor g = *grad;
    if (scale != 1.0) {
      g = grad->Clone();
      for (int64_t i = 0; i < g.num_elements(); ++i) ir::SetElementFromDouble(g, i, g.GetAsDouble(i) / scale);
    }
    files.emplace_back((fs::path(args.output_dir) / "grads" / (file_names[k] + ".npy")).string(), std::move(g));
  }
  std::error_code ec;
  fs::create_directories(fs::path(args.output_dir) / "grads", ec);
  if (ec) return IoError("cannot create output folder '", args.output_dir, "': ", ec.message());
  AMP_RETURN_IF_ERROR(WriteNpyFiles(files));
  spdlog::info("loss {} ; {} gradients written to {}/grads", loss->GetAsDouble(0), t.params.size(), args.output_dir);
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
  AddReferenceOpsFlag(cmd, args->reference_ops);
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
