// amptrain eval MODEL [--data SPEC] [--batch-size B] [--threads N] [--device D] [--reference] [--output NAME]
//
// Loss (mean softmax cross-entropy) and top-1 accuracy of an ONNX classifier
// on the test split of a data set, in inference mode (BN running statistics,
// Dropout off), with the data set's default normalization (as `train` uses).
// Any float model: fp32, or an fp16/bf16 one from `convert` or `train --export-amp`.
#include <spdlog/spdlog.h>

#include "executor/data/dataset.h"
#include "executor/train/trainer.h"
#include "importer/onnx_import.h"
#include "tools/commands.h"
#include "tools/device_flag.h"

namespace amptrain::tools {

namespace {

struct EvalArgs {
  std::string model, data = "fashion-mnist";
  int64_t batch_size = 128;
  bool batch_size_given = false;  // -b/--batch-size on the command line
  int threads = 0;
  bool reference = false;
  std::string device = "cpu";
  std::string output;
  std::vector<std::string> batch_axis;
  std::string image_size;    // --image-size, images: data only
  int64_t image_resize = 0;  // --image-resize, images: data only
  LabelFlags labels;
};

Status Eval(const EvalArgs& args) {
  namespace data = executor::data;
  namespace train = executor::train;
  AMP_ASSIGN_OR_RETURN(kernels::DeviceSpec device_spec, kernels::ParseDeviceSpec(args.device));
  AMP_ASSIGN_OR_RETURN(std::shared_ptr<kernels::Device> device, kernels::OpenDevice(device_spec));
  AMP_ASSIGN_OR_RETURN(data::DataSpec spec, data::ParseDataSpec(args.data));
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> model, importer::ImportModelFile(args.model));
  AMP_RETURN_IF_ERROR(ApplyBatchAxes(*model, args.batch_axis).status());
  AMP_RETURN_IF_ERROR(SetImageSize(*model, spec.kind, args.image_size, args.image_resize, &spec.params));
  if (spec.kind == "npy" || spec.kind == "npz") spec.params["ignore_index"] = std::to_string(args.labels.ignore_index);
  AMP_ASSIGN_OR_RETURN(data::Dataset test_set, data::LoadDataset(spec, "test"));
  if (test_set.num_classes <= 0) return InvalidArgument("eval needs a classification data set ('", args.data, "' has float labels)");
  FeedRawImages(*model, test_set);
  // Dropout masks made of random ops run at their expectation (train::BuildEvalGraph), which warns about the rest.
  train::TrainGraphOptions opts;
  data::Augmentation fit;
  AMP_RETURN_IF_ERROR(FitImages(*model, test_set, spec.kind, args.image_size, &fit, &opts.input_dims));
  opts.num_classes = test_set.num_classes;
  opts.classes_at_least = test_set.classes_from_labels;
  opts.label_dims = LabelDims(test_set.labels);
  opts.class_axis = ClassAxisOf(args.labels);
  opts.ignore_index = args.labels.ignore_index;
  opts.output = args.output;
  AMP_ASSIGN_OR_RETURN(auto evaluator,
                       train::Evaluator::Create(*model, opts, args.threads, args.reference ? "reference" : "", device));
  bool fixed = false;
  AMP_ASSIGN_OR_RETURN(int64_t batch_size, BatchSizeFor(*model, args.batch_size, args.batch_size_given, &fixed));
  if (fixed) WarnLeftOut(batch_size, test_set.size(), "test samples");
  const data::Normalization norm = test_set.raw_samples ? data::Normalization{} : data::DefaultNormalization(spec);
  data::BatchIterator batches(test_set, batch_size, /*shuffle=*/false, 0, norm, fit, fixed);
  AMP_ASSIGN_OR_RETURN(train::EvalResult r, evaluator->Evaluate(batches));
  if (r.labelled == r.count)
    spdlog::info("{} on {} ({} samples): loss {:.4f} accuracy {:.2f}%", args.model, args.data, r.count, r.loss,
                 100 * r.accuracy);
  else  // a label per token or pixel
    spdlog::info("{} on {} ({} samples, {} labels): loss {:.4f} accuracy {:.2f}% (over the labels)", args.model,
                 args.data, r.count, r.labelled, r.loss, 100 * r.accuracy);
  return Status::Ok();
}

}  // namespace

void AddEvalCommand(CLI::App& app, Status& result) {
  auto a = std::make_shared<EvalArgs>();
  CLI::App* cmd = app.add_subcommand("eval", "Loss and top-1 accuracy of an ONNX classifier on a test set");
  cmd->add_option("MODEL", a->model, "The .onnx model (its data inputs, logits [batch, classes] output)")->required();
  cmd->add_option("--output", a->output, "The logits output (default: the only output, or the only logits-shaped one)");
  AddBatchAxisFlag(cmd, a->batch_axis);
  AddLabelFlags(cmd, a->labels);
  cmd->add_option("--data", a->data, "Data set (as for train); its test split is used")->capture_default_str();
  cmd->add_option("--image-size", a->image_size, "images: data: decode to SIZE or HxW pixels (default: the model input's)");
  cmd->add_option("--image-resize", a->image_resize,
                  "images: data: resize the shorter side to N before the centre crop (torchvision's Resize(256) "
                  "before CenterCrop(224)); default: straight to the crop size")
      ->check(IntAtLeast(1));
  auto* batch_size = cmd->add_option("-b,--batch-size", a->batch_size,
                                     "Batch size (a model exported with a fixed batch: that one)")
                         ->capture_default_str()->check(IntAtLeast(1));
  cmd->add_option("--threads", a->threads, "CPU threads (0 = all cores)")->check(IntAtLeast(0, kMaxThreads));
  AddDeviceFlag(cmd, a->device);
  cmd->add_flag("--reference", a->reference, "Use the reference kernels only");
  cmd->callback([a, batch_size, &result] {
    a->batch_size_given = batch_size->count() > 0;
    result = Eval(*a);
  });
}

}  // namespace amptrain::tools
