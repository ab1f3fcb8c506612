// `amptrain models write NAME -o OUT.onnx`: writes a reference model built by
// models/ (no Python) as ONNX.
//
//   amptrain models write simplecnn -o simplecnn.onnx [--in-channels 1] [--image-size 28]
//   amptrain models write resnet --depth 50 -o resnet50.onnx [--small-input] [--eval]
//
// Defaults: simplecnn 1 channel, 28x28, 10 classes, training mode; resnet
// depth 50, 3 channels, 224x224, 1000 classes, training mode unless --eval.
#include <spdlog/spdlog.h>

#include <memory>

#include "importer/onnx_export.h"
#include "models/builders.h"
#include "tools/commands.h"

namespace amptrain::tools {

namespace {

struct ModelsWriteArgs {
  std::string name, out;
  int depth = 50;
  int64_t in_channels = 0, image_size = 0, num_classes = 0, opset = 17;
  bool small_input = false, eval = false;
  uint64_t seed = 0;
  CLI::Option* depth_opt = nullptr;
};

StatusOr<std::unique_ptr<ir::Graph>> BuildNamed(const ModelsWriteArgs& a) {
  auto pick = [](int64_t given, int64_t def) { return given != 0 ? given : def; };  // 0: not given
  if (a.name == "simplecnn") {
    if (a.depth_opt->count() > 0 || a.small_input)
      return InvalidArgument("--depth and --small-input apply to resnet only");
    models::SimpleCnnConfig c;
    c.in_channels = pick(a.in_channels, 1);
    c.height = c.width = pick(a.image_size, 28);
    c.num_classes = pick(a.num_classes, 10);
    c.training_mode = !a.eval;
    c.seed = a.seed;
    c.opset = a.opset;
    return models::BuildSimpleCnn(c);
  }
  models::ResNetConfig c;
  c.depth = a.depth;
  c.in_channels = pick(a.in_channels, 3);
  c.height = c.width = pick(a.image_size, 224);
  c.num_classes = pick(a.num_classes, 1000);
  c.small_input = a.small_input;
  c.training_mode = !a.eval;
  c.seed = a.seed;
  c.opset = a.opset;
  return models::BuildResNet(c);
}

Status RunModelsWrite(const ModelsWriteArgs& a) {
  AMP_ASSIGN_OR_RETURN(auto graph, BuildNamed(a));
  AMP_RETURN_IF_ERROR(importer::ExportModelFile(*graph, a.out, importer::ExportOptions{}));
  int64_t elements = 0;
  for (ir::Value v : graph->initializers()) elements += graph->ConstantValue(v)->num_elements();
  spdlog::info("wrote {} ({}, {} nodes, {} initializer elements, opset {})", a.out, graph->info().graph_name,
               graph->num_nodes(), elements, graph->info().opset);
  return Status::Ok();
}

}  // namespace

void AddModelsCommand(CLI::App& app, Status& result) {
  CLI::App* models = app.add_subcommand("models", "Reference models built without Python");
  models->require_subcommand(1);
  CLI::App* write = models->add_subcommand("write", "Write a reference model (simplecnn | resnet) as ONNX");
  auto a = std::make_shared<ModelsWriteArgs>();
  write->add_option("name", a->name, "simplecnn or resnet")->required()->check(CLI::IsMember({"simplecnn", "resnet"}));
  write->add_option("-o,--output", a->out, "Output .onnx file")->required();
  a->depth_opt = write->add_option("--depth", a->depth, "ResNet depth: 18, 34, 50, 101, 152 (default 50)");
  write->add_option("--in-channels", a->in_channels, "Input channels (default 1 simplecnn, 3 resnet)")
      ->check(IntAtLeast(1));
  write->add_option("--image-size", a->image_size, "Input height = width (default 28 simplecnn, 224 resnet)")
      ->check(IntAtLeast(1));
  write->add_option("--num-classes", a->num_classes, "Classes (default 10 simplecnn, 1000 resnet)")
      ->check(IntAtLeast(1));
  write->add_option("--opset", a->opset, "ONNX opset to write (default 17)");
  write->add_flag("--small-input", a->small_input, "ResNet CIFAR-style stem: conv1 3x3 stride 1, no maxpool");
  write->add_flag("--eval", a->eval, "Eval-mode graph: BatchNorm uses running stats, no Dropout");
  write->add_option("--seed", a->seed, "Weight init seed (default 0)");
  write->callback([a, &result] { result = RunModelsWrite(*a).WithContext("models write"); });
}

}  // namespace amptrain::tools
