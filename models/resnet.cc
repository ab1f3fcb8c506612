#include <array>
#include <cmath>

#include "models/builder_util.h"
#include "models/builders.h"

namespace amptrain::models {

namespace {

struct Arch {
  bool bottleneck;
  std::array<int, 4> blocks;
};

StatusOr<Arch> ArchOf(int depth) {
  switch (depth) {
    case 18: return Arch{false, {2, 2, 2, 2}};
    case 34: return Arch{false, {3, 4, 6, 3}};
    case 50: return Arch{true, {3, 4, 6, 3}};
    case 101: return Arch{true, {3, 4, 23, 3}};
    case 152: return Arch{true, {3, 8, 36, 3}};
    default: return InvalidArgument("resnet: depth ", depth, " is not one of 18, 34, 50, 101, 152");
  }
}

Status CheckConfig(const ResNetConfig& c) {
  if (c.in_channels < 1 || c.num_classes < 1 || c.in_channels > kMaxChannels || c.num_classes > kMaxClasses)
    return InvalidArgument("resnet: in_channels (", c.in_channels, ") and num_classes (", c.num_classes,
                           ") must be in 1..", kMaxChannels, " and 1..", kMaxClasses);
  if (c.height < 1 || c.width < 1 || c.height > kMaxSide || c.width > kMaxSide)
    return InvalidArgument("resnet: image ", c.height, "x", c.width, " must be within 1..", kMaxSide);
  if (c.opset < 13) return Unimplemented("resnet: opset ", c.opset, " is below the supported minimum 13");
  return Status::Ok();
}

// torchvision: kaiming_normal_(mode="fan_out", nonlinearity="relu").
Fill KaimingFanOut(int64_t cout, int64_t kernel) { return Fill::Normal(std::sqrt(2.0 / double(cout * kernel * kernel))); }

ir::Value ConvBn(GraphBuilder& b, const std::string& conv, const std::string& bn, ir::Value x, int64_t cin,
                 int64_t cout, int64_t kernel, int64_t stride) {
  x = b.Conv2d(conv, x, cin, cout, kernel, stride, kernel / 2, false, KaimingFanOut(cout, kernel));
  return b.BatchNorm2d(bn, x, cout);
}

// One BasicBlock or Bottleneck "layerL.B" with `planes` (width before expansion).
ir::Value Block(GraphBuilder& b, const std::string& m, bool bottleneck, ir::Value x, int64_t inplanes,
                int64_t planes, int64_t stride) {
  int64_t out = bottleneck ? planes * 4 : planes;
  ir::Value y;
  if (bottleneck) {
    y = b.Relu(m + ".relu", ConvBn(b, m + ".conv1", m + ".bn1", x, inplanes, planes, 1, 1));
    y = b.Relu(m + ".relu", ConvBn(b, m + ".conv2", m + ".bn2", y, planes, planes, 3, stride));
    y = ConvBn(b, m + ".conv3", m + ".bn3", y, planes, out, 1, 1);
  } else {
    y = b.Relu(m + ".relu", ConvBn(b, m + ".conv1", m + ".bn1", x, inplanes, planes, 3, stride));
    y = ConvBn(b, m + ".conv2", m + ".bn2", y, planes, planes, 3, 1);
  }
  ir::Value identity = x;
  if (stride != 1 || inplanes != out)
    identity = ConvBn(b, m + ".downsample.0", m + ".downsample.1", x, inplanes, out, 1, stride);
  return b.Relu(m + ".relu", b.Add(m, y, identity));
}

}  // namespace

StatusOr<std::unique_ptr<ir::Graph>> BuildResNet(const ResNetConfig& c) {
  AMP_RETURN_IF_ERROR(CheckConfig(c));
  AMP_ASSIGN_OR_RETURN(Arch arch, ArchOf(c.depth));
  auto graph = std::make_unique<ir::Graph>();
  graph->info().opset = c.opset;
  graph->info().ir_version = 8;
  graph->info().producer_name = "amptrain";
  graph->info().graph_name = StrCat("resnet", c.depth);
  GraphBuilder b(*graph, c.seed, c.training_mode);

  ir::Value x = graph->AddInput("input_0", BatchedFloat({c.in_channels, c.height, c.width}));
  if (c.small_input) {
    x = b.Relu("relu", ConvBn(b, "conv1", "bn1", x, c.in_channels, 64, 3, 1));
  } else {
    x = b.Relu("relu", ConvBn(b, "conv1", "bn1", x, c.in_channels, 64, 7, 2));
    x = b.MaxPool2d("maxpool", x, 3, 2, 1);
  }
  int64_t inplanes = 64;
  for (int layer = 0; layer < 4; ++layer) {
    int64_t planes = int64_t{64} << layer;
    for (int block = 0; block < arch.blocks[layer]; ++block) {
      int64_t stride = layer > 0 && block == 0 ? 2 : 1;
      x = Block(b, StrCat("layer", layer + 1, ".", block), arch.bottleneck, x, inplanes, planes, stride);
      inplanes = arch.bottleneck ? planes * 4 : planes;
    }
  }
  x = b.GlobalAveragePool("avgpool", x);
  x = b.Flatten("", x);
  x = b.Linear("fc", x, inplanes, c.num_classes);
  AMP_RETURN_IF_ERROR(b.status().WithContext(StrCat("building resnet", c.depth)));

  AMP_RETURN_IF_ERROR(graph->RenameValue(x, "output_0"));
  graph->mutable_info(x).type = BatchedFloat({c.num_classes});
  graph->AddOutput(x);
  return graph;
}

}  // namespace amptrain::models
