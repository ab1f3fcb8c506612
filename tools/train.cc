// amptrain train MODEL [--data SPEC] [--epochs N | --steps N] [--batch-size B] [--optimizer sgd|adam|adamw]
//   [--lr X] [--momentum M] [--nesterov] [--weight-decay W] [--schedule constant|step|cosine] [--warmup N]
//   [--clip-grad-norm X] [--seed S] [--threads N] [--checkpoint-dir DIR] [--checkpoint-every N] [--keep-last K]
//   [--resume auto|PATH] [--export OUT.onnx] [--metrics FILE.jsonl] [--label-smoothing X] [--augment crop,flip]
//   [--amp O0|O1|O2 [--dtype fp16|bf16] [--policy FILE] [--fp16-ops/--fp32-ops/--fp16-nodes/--fp32-nodes ...]]
//   [--loss-scale auto|dynamic|none|N] [--debug-overflow] [--force] [--export-amp OUT.onnx] [--tensorboard DIR]
//   [--profile] [--freeze NAME|re:REGEX,...] [--train-all] [--output NAME]
//
// fp32 or mixed-precision training of an ONNX classifier on a data set (executor/train/trainer.h,
// train_loop.h). The model may have several data inputs of any dtype (token
// ids, masks): `npy:NAME=FILE,...,labels=FILE` feeds each by name. The loss
// reads --output, or the only output, or the only logits-shaped one. Defaults reproduce the PyTorch reference recipe for
// SimpleCNN on Fashion-MNIST: Adam 1e-3, batch 128, 5 epochs, no
// augmentation. Progress: one line per --log-every steps (epoch, step, mean
// loss, accuracy, lr, images/s, ETA), or a bar when stdout is a terminal; the
// test set is evaluated at the end of every epoch. --metrics appends one JSON
// object per progress report and per epoch. --export writes the imported graph
// with the trained initializers and BN running statistics (atomically);
// --export-inference writes it in inference mode (BN uses the running
// statistics, Dropout removed), which other runtimes evaluate as `eval` does.
//
// Mixed precision: the AMP flags are convert's (tools/amp_report.h; default
// O0 = fp32 here); weights stay fp32 masters (O3: stored in the low type).
// --loss-scale: auto (dynamic for fp16 at O1/O2; none for bf16, fp32 and O3), dynamic (PRECISION.md's defaults: 2^16, x2
// after 2000 clean steps, x0.5 on overflow, floor 1, ceiling 2^24), none, or
// a number (static). Steps whose gradients are inf/NaN are skipped and
// counted. --force resumes a checkpoint written under another precision plan.
//
// Parameters: every float initializer of the model except BN running
// statistics, those taken for constants (Pow exponents, sinusoid frequencies:
// ConstantLikeInitializers; --train-all trains them) and those --freeze
// names (exact names or re:REGEX, repeatable or comma-separated; a pattern
// that matches no parameter is an error). The log
// gives the counts and names every initializer left untrained with the reason
// (executor/train/train_graph.h, ParameterReport).
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "executor/data/dataset.h"
#include "executor/train/tensorboard.h"
#include "executor/train/train_loop.h"
#include "importer/onnx_export.h"
#include "importer/onnx_import.h"
#include "ir/output_path.h"
#include "kernels/cpu/cpu_info.h"
#include "tools/amp_report.h"
#include "tools/commands.h"
#include "tools/device_flag.h"

namespace amptrain::tools {

namespace {

using executor::train::EpochSummary;
using executor::train::Progress;

struct TrainArgs {
  std::string model, data = "fashion-mnist";
  int64_t epochs = 5, steps = 0, batch_size = 128;
  bool batch_size_given = false;  // -b/--batch-size on the command line
  std::string optimizer = "adam";
  float lr = 1e-3f, momentum = 0.9f, weight_decay = 0.0f, label_smoothing = 0.0f;
  bool nesterov = false;
  std::string schedule = "constant";
  int64_t warmup = 0, lr_step_size = 0;
  float lr_gamma = 0.1f;
  double clip_grad_norm = 0.0;
  uint64_t seed = 0;
  int threads = 0;
  std::string device = "cpu";
  std::string checkpoint_dir, resume, export_path, metrics, augment;
  std::string image_size;    // --image-size, images: data only
  int64_t image_resize = 0;  // --image-resize, images: data only
  int64_t checkpoint_every = 0, log_every = 50;
  int keep_last = 3;
  bool reference = false;
  bool export_inference = false;
  AmpFlags amp;
  std::string loss_scale = "auto";
  bool force = false;
  bool profile = false;
  bool debug_overflow = false;
  std::string tensorboard;
  std::string export_amp;
  std::vector<std::string> freeze;
  bool train_all = false;
  std::string output;
  std::vector<std::string> batch_axis;
  LabelFlags labels;
};

std::string Duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  int64_t t = static_cast<int64_t>(s + 0.5);
  if (t >= 3600) return fmt::format("{}h{:02}m", t / 3600, t / 60 % 60);
  if (t >= 60) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}s", t);
}

StatusOr<executor::data::Augmentation> ParseAugment(const std::string& spec) {
  executor::data::Augmentation aug;
  size_t begin = 0;
  while (begin < spec.size()) {
    size_t end = spec.find(',', begin);
    std::string item = spec.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    if (item == "crop") aug.random_crop_padding = 4;
    else if (item == "flip") aug.horizontal_flip = true;
    else if (!item.empty()) return InvalidArgument("--augment: unknown augmentation '", item, "' (crop, flip)");
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return aug;
}

nlohmann::json ConfigJson(const TrainArgs& a) {
  return {{"model", a.model}, {"data", a.data}, {"epochs", a.epochs}, {"steps", a.steps},
          {"batch_size", a.batch_size}, {"optimizer", a.optimizer}, {"lr", a.lr}, {"momentum", a.momentum},
          {"nesterov", a.nesterov}, {"weight_decay", a.weight_decay}, {"schedule", a.schedule},
          {"warmup", a.warmup}, {"clip_grad_norm", a.clip_grad_norm}, {"seed", a.seed},
          {"label_smoothing", a.label_smoothing}, {"augment", a.augment}, {"amp", a.amp.level},
          {"dtype", a.amp.dtype}, {"policy", a.amp.policy_file}, {"loss_scale", a.loss_scale},
          {"freeze", a.freeze}, {"train_all", a.train_all}, {"image_size", a.image_size}, {"image_resize", a.image_resize},
          {"class_axis", a.labels.class_axis}, {"ignore_index", a.labels.ignore_index}};
}

// Progress output: lines, or a bar redrawn in place on a terminal; metrics as JSON lines.
class Reporter {
 public:
  Reporter(const TrainArgs& args, bool scaled)
      : tty_(isatty(fileno(stdout)) == 1), scaled_(scaled), metrics_path_(args.metrics), append_(!args.resume.empty()) {}

  // Opens the TensorBoard event file before the first step, so a bad folder fails early.
  // Opens --metrics (before step 1: an unwritable file fails now, not after training).
  Status OpenMetrics() {
    if (metrics_path_.empty() || out_.is_open()) return Status::Ok();
    out_.open(metrics_path_, append_ ? std::ios::app : std::ios::trunc);
    if (!out_) return IoError("cannot open the metrics file '", metrics_path_, "': ", std::strerror(errno));
    return Status::Ok();
  }

  Status OpenTensorBoard(const std::string& dir) {
    if (dir.empty()) return Status::Ok();
    AMP_ASSIGN_OR_RETURN(tb_, executor::train::TensorBoardWriter::Open(dir));
    spdlog::info("TensorBoard events: {}", tb_->path());
    return Status::Ok();
  }

  Status Progress(const executor::train::Progress& p) {
    std::string text = fmt::format("epoch {} step {}/{} loss {:.4f} acc {:.2f}% lr {:.3g}{} {:.0f} img/s ETA {}",
                                   p.epoch + 1, p.step, p.total_steps, p.loss, 100 * p.accuracy, p.lr,
                                   scaled_ ? fmt::format(" scale {:g} skipped {}", p.loss_scale, p.skipped_steps)
                                           : std::string(),
                                   p.images_per_s, Duration(p.eta_s));
    if (tty_) {
      constexpr int kWidth = 24;
      int filled = static_cast<int>(kWidth * p.step / std::max<int64_t>(1, p.total_steps));
      std::printf("\r[%s%s] %s\033[K", std::string(filled, '#').c_str(), std::string(kWidth - filled, '.').c_str(),
                  text.c_str());
      std::fflush(stdout);
      bar_open_ = true;
    } else {
      spdlog::info("{}", text);
    }
    if (tb_) {
      AMP_RETURN_IF_ERROR(tb_->Scalars(p.step, {{"train/loss", p.loss},
                                                {"train/accuracy", p.accuracy},
                                                {"train/lr", p.lr},
                                                {"train/loss_scale", p.loss_scale},
                                                {"train/skipped_steps", static_cast<double>(p.skipped_steps)},
                                                {"train/images_per_s", p.images_per_s}}));
      AMP_RETURN_IF_ERROR(tb_->Flush());
    }
    return Write({{"event", "progress"}, {"epoch", p.epoch + 1}, {"step", p.step}, {"loss", p.loss},
                  {"accuracy", p.accuracy}, {"lr", p.lr}, {"loss_scale", p.loss_scale},
                  {"skipped_steps", p.skipped_steps}, {"images_per_s", p.images_per_s},
                  {"elapsed_s", p.elapsed_s}});
  }

  Status Epoch(const EpochSummary& s) {
    EndBar();
    std::string test = s.evaluated ? fmt::format(" ; test loss {:.4f} accuracy {:.2f}%", s.test.loss,
                                                 100 * s.test.accuracy)
                                   : "";
    spdlog::info("epoch {} done at step {} ({}): train loss {:.4f} accuracy {:.2f}%{}", s.epoch + 1, s.step,
                 Duration(s.elapsed_s), s.train_loss, 100 * s.train_accuracy, test);
    nlohmann::json j = {{"event", "epoch"}, {"epoch", s.epoch + 1}, {"step", s.step}, {"train_loss", s.train_loss},
                        {"train_accuracy", s.train_accuracy}, {"elapsed_s", s.elapsed_s}};
    if (s.evaluated) {
      j["test_loss"] = s.test.loss;
      j["test_accuracy"] = s.test.accuracy;
    }
    if (tb_) {
      std::vector<std::pair<std::string, double>> v = {{"epoch/train_loss", s.train_loss},
                                                       {"epoch/train_accuracy", s.train_accuracy}};
      if (s.evaluated) v.insert(v.end(), {{"epoch/test_loss", s.test.loss}, {"epoch/test_accuracy", s.test.accuracy}});
      AMP_RETURN_IF_ERROR(tb_->Scalars(s.step, v));
      AMP_RETURN_IF_ERROR(tb_->Flush());
    }
    return Write(j);
  }

  void EndBar() {
    if (bar_open_) std::printf("\n");
    bar_open_ = false;
  }

 private:
  Status Write(const nlohmann::json& j) {
    if (metrics_path_.empty()) return Status::Ok();
    AMP_RETURN_IF_ERROR(OpenMetrics());
    out_ << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    out_.flush();
    if (!out_) return IoError("cannot write the metrics file '", metrics_path_, "'");
    return Status::Ok();
  }

  bool tty_, scaled_;
  std::string metrics_path_;
  bool append_;
  bool bar_open_ = false;
  std::ofstream out_;
  std::unique_ptr<executor::train::TensorBoardWriter> tb_;
};

// Every output is checked before the first step (issue 9, F12/F13): no
// file may be the model, each must be absent or a regular file in a folder
// this process can write, and the checkpoint and TensorBoard folders exist
// (made if needed) and are writable. The metrics file is opened then too.
Status CheckOutputs(const TrainArgs& args) {
  const std::pair<const char*, const std::string*> outputs[] = {
      {"--metrics", &args.metrics}, {"--export", &args.export_path}, {"--export-amp", &args.export_amp}};
  for (const auto& [flag, path] : outputs) {
    if (path->empty()) continue;
    if (SameFile(*path, args.model)) return InvalidArgument(flag, " '", *path, "' is the model being trained");
    AMP_RETURN_IF_ERROR(ir::CheckReplaceableOutput(*path, flag));
    AMP_RETURN_IF_ERROR(CheckOutputFolderOf(*path, flag));
  }
  // Folders are made (or found writable) now, not after the first epoch.
  if (!args.checkpoint_dir.empty()) AMP_RETURN_IF_ERROR(EnsureWritableFolder(args.checkpoint_dir, "--checkpoint-dir"));
  if (!args.tensorboard.empty()) AMP_RETURN_IF_ERROR(EnsureWritableFolder(args.tensorboard, "--tensorboard"));
  if (!args.export_path.empty() && !args.export_amp.empty() && SameFile(args.export_path, args.export_amp))
    return InvalidArgument("--export and --export-amp are the same file '", args.export_path, "'");
  return Status::Ok();
}

// A model with Conv layers and no BatchNormalization may be an export whose
// BN was folded into the Convs (TorchScript in eval mode or with constant
// folding, dynamo's default optimizer): its BN then trains as a plain bias.
// A warning, not an error: many models have no BN at all.
void WarnIfBatchNormMayBeFolded(const ir::Graph& model) {
  int64_t convs = 0;
  for (const ir::Node* n : model.nodes()) {
    if (n->op() == ir::OpKind::kBatchNormalization) return;
    if (n->op() == ir::OpKind::kConv || n->op() == ir::OpKind::kConvTranspose) ++convs;
  }
  if (convs == 0) return;
  spdlog::warn("the model has {} Conv layer(s) and no BatchNormalization: if the PyTorch module has BatchNorm layers, "
               "the export folded them into the Convs and they cannot train as BatchNorm. Export with "
               "training=TrainingMode.TRAINING and do_constant_folding=False, or dynamo=True with optimize=False "
               "(docs/BRING_YOUR_OWN_MODEL.md)",
               convs);
}

Status Train(TrainArgs args) {
  namespace data = executor::data;
  namespace train = executor::train;
  AMP_ASSIGN_OR_RETURN(kernels::DeviceSpec device_spec, kernels::ParseDeviceSpec(args.device));
  AMP_ASSIGN_OR_RETURN(std::shared_ptr<kernels::Device> device, kernels::OpenDevice(device_spec));
  AMP_RETURN_IF_ERROR(CheckOutputs(args));
  AMP_ASSIGN_OR_RETURN(data::DataSpec spec, data::ParseDataSpec(args.data));
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> model, importer::ImportModelFile(args.model));
  AMP_ASSIGN_OR_RETURN(std::vector<train::BatchAxis> batch_axes, ApplyBatchAxes(*model, args.batch_axis));
  AMP_RETURN_IF_ERROR(SetImageSize(*model, spec.kind, args.image_size, args.image_resize, &spec.params));
  train::LoopConfig loop;
  AMP_ASSIGN_OR_RETURN(loop.augmentation, ParseAugment(args.augment));
  if (spec.kind == "images" && args.image_resize > 0 && loop.augmentation.random_crop_padding > 0) {
    // Resize(R) + RandomCrop(H, W) instead of padding: the training images are
    // kept R x R and each batch takes a random window of the model's size.
    loop.augmentation.random_crop_padding = 0;
    loop.augmentation.window_height = std::stoll(spec.params.at("height"));
    loop.augmentation.window_width = std::stoll(spec.params.at("width"));
    spec.params["train_window"] = "1";
  }
  if (spec.kind == "npy" || spec.kind == "npz") spec.params["ignore_index"] = std::to_string(args.labels.ignore_index);
  AMP_ASSIGN_OR_RETURN(data::Dataset train_set, data::LoadDataset(spec, "train"));
  AMP_ASSIGN_OR_RETURN(data::Dataset test_set, data::LoadDataset(spec, "test"));
  WarnIfBatchNormMayBeFolded(*model);
  FeedRawImages(*model, train_set);
  FeedRawImages(*model, test_set);
  std::map<std::string, std::vector<int64_t>> input_dims;
  if (loop.augmentation.window_height == 0)  // a window is already the model's size
    AMP_RETURN_IF_ERROR(FitImages(*model, train_set, spec.kind, args.image_size, &loop.augmentation, &input_dims));

  loop.epochs = args.epochs;
  loop.steps = args.steps;
  loop.batch_size = args.batch_size;
  loop.seed = args.seed;
  loop.normalization = data::DefaultNormalization(spec);
  if (train_set.raw_samples) loop.normalization = {};  // uint8 images as they are (FeedRawImages)
  loop.checkpoint_dir = args.checkpoint_dir;
  loop.checkpoint_every = args.checkpoint_every;
  loop.keep_last = args.keep_last;
  loop.resume = args.resume;
  loop.log_every = args.log_every;
  loop.config = ConfigJson(args);
  if (args.batch_size < 1) return InvalidArgument("--batch-size must be >= 1");
  AMP_ASSIGN_OR_RETURN(args.batch_size, BatchSizeFor(*model, args.batch_size, args.batch_size_given, &loop.drop_last));
  loop.batch_size = args.batch_size;
  if (loop.drop_last) {
    WarnLeftOut(args.batch_size, train_set.size(), "training samples of each epoch (the order is shuffled, so not always the same)");
    WarnLeftOut(args.batch_size, test_set.size(), "test samples of each evaluation");
  }
  const int64_t per_epoch = loop.drop_last ? static_cast<int64_t>(train_set.size()) / args.batch_size
                                           : (static_cast<int64_t>(train_set.size()) + args.batch_size - 1) / args.batch_size;
  if (args.steps == 0 && args.epochs > INT64_MAX / std::max<int64_t>(per_epoch, 1))
    return InvalidArgument("--epochs ", args.epochs, " of ", per_epoch, " steps each is more steps than can be counted");
  const int64_t total = args.steps > 0 ? args.steps : args.epochs * per_epoch;

  train::TrainConfig config;
  config.graph.input_dims = input_dims;
  config.graph.loss = train_set.num_classes > 0 ? "cross_entropy" : "mse";
  config.graph.label_smoothing = args.label_smoothing;
  config.graph.num_classes = train_set.num_classes;
  config.graph.classes_at_least = train_set.classes_from_labels;
  config.graph.label_dims = LabelDims(train_set.labels);
  config.graph.class_axis = ClassAxisOf(args.labels);
  config.graph.ignore_index = args.labels.ignore_index;
  config.optimizer.kind = args.optimizer;
  config.optimizer.lr = args.lr;
  config.optimizer.momentum = args.momentum;
  config.optimizer.nesterov = args.nesterov;
  config.optimizer.weight_decay = args.weight_decay;
  config.schedule.base_lr = args.lr;
  config.schedule.kind = args.schedule == "cosine" ? "warmup_cosine" : args.schedule;
  config.schedule.step_size = args.lr_step_size > 0 ? args.lr_step_size : per_epoch;
  config.schedule.gamma = args.lr_gamma;
  config.schedule.warmup_steps = args.warmup;
  config.schedule.total_steps = total;
  config.clip_grad_norm = args.clip_grad_norm;
  config.seed = args.seed;
  config.threads = args.threads;
  config.device = device;
  if (args.reference) config.kernel_impl = "reference";
  AMP_ASSIGN_OR_RETURN(amp::Policy policy, BuildPolicy(args.amp, amp::Level::kO0));
  if (policy.level != amp::Level::kO0) config.graph.amp = policy;
  config.graph.amp_for_export = !args.export_amp.empty();
  config.graph.freeze = args.freeze;
  config.graph.train_all = args.train_all;
  config.graph.output = args.output;
  if (!args.export_amp.empty() && policy.level == amp::Level::kO0)
    return InvalidArgument("--export-amp needs --amp O1, O2 or O3 (the mixed-precision level to export)");
  AMP_ASSIGN_OR_RETURN(config.loss_scaler, LossScaling(args.loss_scale, policy));
  config.force_plan_mismatch = args.force;
  config.profile = args.profile;
  config.debug_overflow = args.debug_overflow;
  if (policy.level == amp::Level::kO0) {
    spdlog::info("precision: fp32 (AMP O0){}", config.loss_scaler ? ", loss scaling on" : "");
  } else {
    spdlog::info("precision: AMP {} {}, {}, loss scaling {}", amp::LevelName(policy.level),
                 ir::DTypeName(policy.low),
                 policy.level == amp::Level::kO3 ? "weights stored in the low type (no fp32 master)"
                                                 : "fp32 master weights",
                 !config.loss_scaler ? std::string("none")
                 : config.loss_scaler->dynamic
                     ? fmt::format("dynamic (initial {})", config.loss_scaler->init_scale)
                     : fmt::format("static {}", config.loss_scaler->init_scale));
    spdlog::info("{}", kernels::cpu::LowPrecisionNote(policy.low));
  }
  AMP_ASSIGN_OR_RETURN(auto trainer, train::Trainer::Create(*model, config));
  model.reset();  // the trainer holds what it needs; the imported weights are not kept twice
  if (const amp::Report* report = trainer->amp_report()) {
    WarnUnmatchedPatterns(*report);
    std::string per;
    for (const auto& [dtype, count] : NodesPerDType(*report)) per += fmt::format(" {} {}", count, dtype);
    spdlog::info("precision plan: nodes{}; {} casts", per, report->casts_final);
    if (report->clamped_values > 0) {
      const std::vector<std::string>& names = report->clamped_initializers;
      constexpr size_t kListed = 4;
      std::vector<std::string> listed(names.begin(), names.begin() + std::min(names.size(), kListed));
      spdlog::info("{} constant value(s) in {} tensor(s) outside the float16 range clamped to it, as the export "
                   "stores them: {}{}",
                   report->clamped_values, names.size(), fmt::join(listed, ", "),
                   names.size() > kListed ? fmt::format(" and {} more", names.size() - kListed) : "");
    }
  }
  spdlog::info("training {} ({} parameters, {} tensors) on {} ({} train / {} test samples), {} steps of batch {}",
               args.model, [&] {
                 int64_t n = 0;
                 for (const auto& [name, t] : trainer->params()) n += t.num_elements();
                 return n;
               }(), trainer->params().size(), args.data, train_set.size(), test_set.size(), total, args.batch_size);
  for (const std::string& line : trainer->parameter_report().Lines()) spdlog::info("{}", line);
  {  // Data that does not fit the model's inputs fails now, before any file is written.
    data::BatchIterator first(train_set, 1, /*shuffle=*/false, 0, loop.normalization,
                              data::FitOnly(loop.augmentation));
    data::Batch batch;
    AMP_ASSIGN_OR_RETURN(bool any, first.Next(&batch));
    if (any) AMP_RETURN_IF_ERROR(trainer->CheckInputs(batch));
  }

  Reporter reporter(args, trainer->scaler() != nullptr);
  AMP_RETURN_IF_ERROR(reporter.OpenMetrics());
  AMP_RETURN_IF_ERROR(reporter.OpenTensorBoard(args.tensorboard));
  Status report_error;
  train::LoopCallbacks callbacks;
  callbacks.on_progress = [&](const Progress& p) {
    Status s = reporter.Progress(p);
    if (report_error.ok()) report_error = s;
  };
  callbacks.on_epoch_end = [&](const EpochSummary& s) {
    Status st = reporter.Epoch(s);
    if (report_error.ok()) report_error = st;
  };
  callbacks.on_checkpoint = [&](const std::string& path) { spdlog::debug("checkpoint written: {}", path); };
  StatusOr<train::LoopResult> result = train::RunTraining(*trainer, train_set, &test_set, loop, callbacks);
  reporter.EndBar();
  AMP_RETURN_IF_ERROR(result.status());
  AMP_RETURN_IF_ERROR(report_error);
  spdlog::info("trained steps {}..{} at {:.0f} images/s{}", result->start_step, result->steps, result->images_per_s,
               result->last_checkpoint.empty() ? "" : "; checkpoint " + result->last_checkpoint);
  if (args.profile) std::printf("%s", trainer->profile().Report(15).c_str());
  if (!args.export_path.empty()) {
    AMP_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> trained, trainer->TrainedModel(args.export_inference));
    AMP_RETURN_IF_ERROR(train::RestoreBatchAxes(*trained, batch_axes));
    AMP_RETURN_IF_ERROR(importer::ExportModelFile(*trained, args.export_path));
    spdlog::info("trained model written to {}", args.export_path);
  }
  if (!args.export_amp.empty()) {
    AMP_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> trained, trainer->TrainedModel(/*inference=*/true));
    AMP_RETURN_IF_ERROR(train::RestoreBatchAxes(*trained, batch_axes));
    AMP_ASSIGN_OR_RETURN(amp::Report report, amp::Convert(*trained, policy));  // the opset's capability
    AMP_RETURN_IF_ERROR(importer::ExportModelFile(*trained, args.export_amp));
    std::string per;
    for (const auto& [dtype, count] : NodesPerDType(report)) per += fmt::format(" {} {}", count, dtype);
    spdlog::info("mixed-precision model ({} {}, inference mode) written to {}: nodes{}, {} casts",
                 amp::LevelName(policy.level), ir::DTypeName(policy.low), args.export_amp, per, report.casts_final);
    // Nodes that trained low but are written fp32 because the model's opset
    // has no low-precision version of them (bf16 Conv comes with opset 22).
    int held = 0;
    int64_t from = 0;
    for (const amp::NodeReport& n : report.nodes)
      if (n.reason == amp::Reason::kUnsupportedLow && n.low_from_opset > report.opset) {
        ++held;
        from = std::max(from, n.low_from_opset);
      }
    if (held > 0)
      spdlog::warn("{} node(s) of {} stay float32 because its opset {} has no {} version of them (they have from "
                   "opset {}): `amptrain convert {} -o OUT.onnx --amp {} --dtype {} --opset {}` writes them low",
                   held, args.export_amp, report.opset, ir::DTypeName(policy.low), from, args.export_path.empty()
                   ? "TRAINED.onnx" : args.export_path, amp::LevelName(policy.level),
                   policy.low == ir::DType::kBFloat16 ? "bf16" : "fp16", from);
  }
  return Status::Ok();
}

}  // namespace

void AddTrainCommand(CLI::App& app, Status& result) {
  auto a = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "Train an ONNX classifier (fp32 or AMP, CPU): progress, evaluation, "
                                              "checkpoints, resume, export");
  cmd->add_option("MODEL", a->model, "The .onnx model (its data inputs, logits [batch, classes] (or per token or pixel) or regression output)")
      ->required();
  cmd->add_option("--data", a->data, "Data set: fashion-mnist[:DIR], mnist:DIR, cifar10:DIR, cifar100:DIR, npy:X,Y[,Xt,Yt], "
                                     "npy:INPUT=X,...,labels=Y[,test.INPUT=Xt,...,test.labels=Yt] (named model inputs), "
                                     "npz:FILE.npz (x_train/y_train[/x_test/y_test], x/y, or INPUT arrays and labels), "
                                     "csv:FILE[,TEST_FILE][,label=COLUMN], images:DIR (DIR/CLASS/*.jpg|png, or DIR/train/ and DIR/val/), "
                                     "synthetic[:N=..,C=..,H=..,W=..,classes=..,seed=..]")->capture_default_str();
  cmd->add_option("--image-size", a->image_size, "images: data: decode to SIZE or HxW pixels (default: the model input's)");
  cmd->add_option("--image-resize", a->image_resize,
                  "images: data: resize the shorter side to N before the centre crop (torchvision's Resize(256) "
                  "before CenterCrop(224)); default: straight to the crop size")
      ->check(IntAtLeast(1));
  cmd->add_option("--output", a->output, "The model output to train (default: the only output, or the only logits-shaped one)");
  AddBatchAxisFlag(cmd, a->batch_axis);
  auto* epochs = cmd->add_option("--epochs", a->epochs, "Epochs")->capture_default_str()->check(IntAtLeast(1));
  cmd->add_option("--steps", a->steps, "Training steps in all (instead of --epochs)")
      ->check(IntAtLeast(1))->excludes(epochs);
  auto* batch_size = cmd->add_option("-b,--batch-size", a->batch_size,
                                     "Batch size (a model exported with a fixed batch: that one)")
                         ->capture_default_str()->check(IntAtLeast(1));
  cmd->add_option("--optimizer", a->optimizer, "sgd | adam | adamw")->capture_default_str()
      ->check(CLI::IsMember({"sgd", "adam", "adamw"}));
  cmd->add_option("--lr", a->lr, "Learning rate")->capture_default_str()->check(NumberAtLeast(0));
  cmd->add_option("--momentum", a->momentum, "SGD momentum")->capture_default_str()->check(NumberAtLeast(0));
  cmd->add_flag("--nesterov", a->nesterov, "SGD with Nesterov momentum");
  cmd->add_option("--weight-decay", a->weight_decay, "Weight decay (L2 for sgd/adam, decoupled for adamw)")->capture_default_str()
      ->check(NumberAtLeast(0));
  cmd->add_option("--schedule", a->schedule, "constant | step (x gamma every --lr-step-size steps) | cosine")->capture_default_str()
      ->check(CLI::IsMember({"constant", "step", "cosine"}));
  cmd->add_option("--warmup", a->warmup, "Linear warmup steps (cosine)")->capture_default_str()->check(IntAtLeast(0));
  cmd->add_option("--lr-step-size", a->lr_step_size, "Steps between decays of the step schedule (0 = one epoch)")
      ->check(IntAtLeast(0));
  cmd->add_option("--lr-gamma", a->lr_gamma, "Decay factor of the step schedule")->capture_default_str();
  cmd->add_option("--clip-grad-norm", a->clip_grad_norm, "Clip gradients to this global L2 norm (0 = off)")
      ->check(NumberAtLeast(0));
  cmd->add_option("--label-smoothing", a->label_smoothing, "Cross-entropy label smoothing in [0, 1)");
  AddLabelFlags(cmd, a->labels);
  cmd->add_option("--augment", a->augment, "Comma-separated: crop (pad 4, random crop; on images: with --image-resize, "
                                           "a random window of the resized image), flip (horizontal)");
  cmd->add_option("--seed", a->seed, "Seed of data order, augmentation and Dropout")->capture_default_str()
      ->check(IntAtLeast(0));
  cmd->add_option("--threads", a->threads, "CPU threads (0 = all cores)")->check(IntAtLeast(0, kMaxThreads));
  AddDeviceFlag(cmd, a->device);
  cmd->add_option("--checkpoint-dir", a->checkpoint_dir, "Write checkpoints here (each epoch end and the last step)");
  cmd->add_option("--checkpoint-every", a->checkpoint_every, "Also write a checkpoint every N steps")
      ->check(IntAtLeast(0));
  cmd->add_option("--keep-last", a->keep_last, "Checkpoints to keep (0 = all)")->capture_default_str()->check(IntAtLeast(0));
  cmd->add_option("--resume", a->resume, "auto (the newest valid checkpoint in --checkpoint-dir; fresh when there is none, an error when all are "
                  "broken), auto-or-fresh (fresh then too), or a checkpoint folder");
  cmd->add_option("--export", a->export_path, "Write the trained model as ONNX");
  cmd->add_flag("--export-inference", a->export_inference,
                "Export in inference mode (BN with running statistics, no Dropout) instead of the imported mode");
  cmd->add_option("--metrics", a->metrics, "Write progress and epoch metrics as JSON lines");
  cmd->add_option("--log-every", a->log_every, "Steps between progress reports")->capture_default_str()->check(IntAtLeast(1));
  cmd->add_flag("--reference", a->reference, "Use the reference kernels only");
  AddAmpFlags(cmd, a->amp, "default O0: fp32");
  cmd->add_option("--loss-scale", a->loss_scale,
                  "auto (dynamic for fp16 at O1/O2; none for bf16, fp32, O3) | dynamic | none | N (static)")
      ->capture_default_str();
  cmd->add_flag("--force", a->force, "Resume a checkpoint written under another precision plan");
  cmd->add_option("--export-amp", a->export_amp,
                  "Also write the trained model in mixed precision (the --amp level and --dtype, inference mode)");
  cmd->add_option("--tensorboard", a->tensorboard,
                  "Write TensorBoard event files here (loss, accuracy, lr, loss scale, skipped steps, images/s)");
  cmd->add_flag("--debug-overflow", a->debug_overflow,
                "Watch every step for the first node producing inf/NaN (otherwise only at the scale's floor)");
  cmd->add_flag("--profile", a->profile, "Print the time per op, implementation and node of the training steps");
  cmd->add_option("--freeze", a->freeze,
                  "Parameters to leave untrained (no gradient, no update): NAME or re:REGEX, ... (a pattern that "
                  "matches no parameter is an error)")
      ->delimiter(',');
  cmd->add_flag("--train-all", a->train_all,
                "Train also the initializers taken for constants (Pow exponents, sinusoid frequencies)");
  cmd->callback([a, batch_size, &result] {
    a->batch_size_given = batch_size->count() > 0;
    result = Train(*a);
  });
}

}  // namespace amptrain::tools
