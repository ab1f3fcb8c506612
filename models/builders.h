// Reference models built directly as ir::Graph (and so written as ONNX by
// importer::ExportModelFile), with no Python.
//
// Each builder reproduces the PyTorch module it names exactly: the same
// layers, attributes and initializer names (= the state_dict keys minus
// num_batches_tracked, in state_dict order), so checkpoints and gradients
// compare with PyTorch by name. Weights use PyTorch's default init, drawn
// from amptrain's own seeded RNG (deterministic per seed, not torch's
// values).
//
// Graph I/O: input "input_0" float32 [batch, C, H, W] (batch symbolic),
// output "output_0" float32 [batch, num_classes]. Intermediate value types are
// left unset: run Graph::InferShapes() to fill them. graph.info(): the
// config's opset, ir_version 8, producer "amptrain", graph_name the model.
//
// training_mode: BatchNormalization has training_mode=1 and 3 outputs
// (Y, running_mean, running_var), and nn.Dropout layers are Dropout(x,
// ratio, training_mode=true) with Constant scalar inputs. Otherwise BN has 1
// output and Dropout is absent, as in torch's eval-mode export.
#pragma once

#include <cstdint>
#include <memory>

#include "ir/graph.h"

namespace amptrain::models {

// Limits that keep every parameter size far from int64 overflow; a config
// beyond them is an InvalidArgument, as is a non-positive size.
inline constexpr int64_t kMaxChannels = 1 << 16;
inline constexpr int64_t kMaxClasses = 1 << 20;
inline constexpr int64_t kMaxSide = 1 << 16;

// The SimpleCNN of models/torch/export_models.py:
//   features:   0 Conv2d(C,64,3,p1)  1 BatchNorm2d(64)  2 ReLU  3 MaxPool2d(2)
//               4 Conv2d(64,128,3,p1) 5 BatchNorm2d(128) 6 ReLU  7 MaxPool2d(2)
//   classifier: 0 Flatten  1 Linear(128*(H/4)*(W/4), 512)  2 ReLU
//               3 Dropout(0.5)  4 Linear(512, num_classes)
// Conv and Linear weights and biases: U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
struct SimpleCnnConfig {
  int64_t in_channels = 1;
  int64_t height = 28, width = 28;  // 4..kMaxSide each
  int64_t num_classes = 10;
  bool training_mode = true;
  uint64_t seed = 0;
  int64_t opset = 17;               // >= 13
};
StatusOr<std::unique_ptr<ir::Graph>> BuildSimpleCnn(const SimpleCnnConfig& config);

// torchvision's ResNet (v1.5: the stride of a Bottleneck sits on its 3x3
// conv), names conv1, bn1, layerL.B.{conv,bn}N, layerL.B.downsample.{0,1},
// fc. depth 18/34: BasicBlock, 50/101/152: Bottleneck. Head:
// GlobalAveragePool -> Flatten -> Gemm(transB=1). small_input: the CIFAR
// stem (conv1 3x3 stride 1 padding 1, no maxpool). Init as torchvision:
// convs kaiming_normal_(fan_out, relu) = N(0, 2/(cout*k*k)), BN 1/0, fc
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
struct ResNetConfig {
  int depth = 50;                   // 18, 34, 50, 101, 152
  int64_t num_classes = 1000;
  int64_t in_channels = 3;
  int64_t height = 224, width = 224;  // the static H, W of input_0
  bool small_input = false;
  bool training_mode = false;
  uint64_t seed = 0;
  int64_t opset = 17;               // >= 13
};
StatusOr<std::unique_ptr<ir::Graph>> BuildResNet(const ResNetConfig& config);

}  // namespace amptrain::models
