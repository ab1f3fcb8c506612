#include <cmath>

#include "models/builder_util.h"
#include "models/builders.h"

namespace amptrain::models {

namespace {

Status CheckConfig(const SimpleCnnConfig& c) {
  if (c.in_channels < 1 || c.num_classes < 1)
    return InvalidArgument("simplecnn: in_channels (", c.in_channels, ") and num_classes (", c.num_classes,
                           ") must be positive");
  if (c.in_channels > kMaxChannels || c.num_classes > kMaxClasses)
    return InvalidArgument("simplecnn: in_channels (", c.in_channels, ") or num_classes (", c.num_classes,
                           ") is above the limit ", kMaxChannels, " / ", kMaxClasses);
  if (c.height > kMaxSide || c.width > kMaxSide)
    return InvalidArgument("simplecnn: image ", c.height, "x", c.width, " is larger than ", kMaxSide, "x", kMaxSide);
  if (c.height < 4 || c.width < 4)
    return InvalidArgument("simplecnn: image ", c.height, "x", c.width, " is smaller than 4x4 (two 2x2 max-pools)");
  if (c.opset < 13) return Unimplemented("simplecnn: opset ", c.opset, " is below the supported minimum 13");
  return Status::Ok();
}

// PyTorch's default Conv2d init, kaiming_uniform_(a=sqrt(5)): U(-1/sqrt(fan_in), +).
Fill DefaultConvFill(int64_t cin, int64_t kernel) { return Fill::Uniform(1.0 / std::sqrt(double(cin * kernel * kernel))); }

}  // namespace

StatusOr<std::unique_ptr<ir::Graph>> BuildSimpleCnn(const SimpleCnnConfig& c) {
  AMP_RETURN_IF_ERROR(CheckConfig(c));
  auto graph = std::make_unique<ir::Graph>();
  graph->info().opset = c.opset;
  graph->info().ir_version = 8;
  graph->info().producer_name = "amptrain";
  graph->info().graph_name = "simplecnn";
  GraphBuilder b(*graph, c.seed, c.training_mode);

  ir::Value x = graph->AddInput("input_0", BatchedFloat({c.in_channels, c.height, c.width}));
  x = b.Conv2d("features.0", x, c.in_channels, 64, 3, 1, 1, true, DefaultConvFill(c.in_channels, 3));
  x = b.BatchNorm2d("features.1", x, 64);
  x = b.Relu("features.2", x);
  x = b.MaxPool2d("features.3", x, 2, 2, 0);
  x = b.Conv2d("features.4", x, 64, 128, 3, 1, 1, true, DefaultConvFill(64, 3));
  x = b.BatchNorm2d("features.5", x, 128);
  x = b.Relu("features.6", x);
  x = b.MaxPool2d("features.7", x, 2, 2, 0);
  x = b.Flatten("classifier.0", x);
  x = b.Linear("classifier.1", x, 128 * (c.height / 4) * (c.width / 4), 512);
  x = b.Relu("classifier.2", x);
  x = b.Dropout("classifier.3", x, 0.5f);
  x = b.Linear("classifier.4", x, 512, c.num_classes);
  AMP_RETURN_IF_ERROR(b.status().WithContext("building simplecnn"));

  AMP_RETURN_IF_ERROR(graph->RenameValue(x, "output_0"));
  graph->mutable_info(x).type = BatchedFloat({c.num_classes});
  graph->AddOutput(x);
  return graph;
}

}  // namespace amptrain::models
