// Building blocks shared by the model builders: a seeded, platform-independent
// RNG and a GraphBuilder that lays out PyTorch modules the way
// torch.onnx.export does.
//
// Naming follows torch 1.13's exporter:
//   module path "layer1.0.downsample.0"  -> scope "/layer1/layer1.0/downsample/downsample.0"
//   node        "<scope>/<OnnxOp>"; the k-th call of a module reused in one
//               forward (torchvision's block.relu) gets scope "<scope>_k", and
//               a second op of one type in one scope "<OnnxOp>_1"
//   node output "<node>_output_<i>"
//   parameters  "<module path>.<weight|bias|running_mean|running_var>" (state_dict keys)
//
// Errors are sticky, as in XLA's builder: the first failure (a tensor that
// cannot be allocated) is kept, every later call returns an invalid Value,
// and the caller checks status() once at the end.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"

namespace amptrain::models {

// splitmix64 with Box-Muller normals: the same stream on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  double Uniform();  // [0, 1), 53 random bits
  double Normal();   // N(0, 1)

 private:
  uint64_t state_;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

// The seed of one parameter's stream: a mix of the model seed and the
// parameter's name, so every tensor is independent of build order.
uint64_t ParamSeed(uint64_t seed, const std::string& name);

// How a parameter is filled.
struct Fill {
  enum Kind { kConstant, kUniform, kNormal } kind;
  double a;  // kConstant: the value; kUniform: U(-a, a); kNormal: N(0, a^2)
  static Fill Constant(double v) { return {kConstant, v}; }
  static Fill Uniform(double bound) { return {kUniform, bound}; }
  static Fill Normal(double stddev) { return {kNormal, stddev}; }
};

class GraphBuilder {
 public:
  // `training`: BatchNormalization in training mode (3 outputs) and Dropout
  // nodes present; otherwise BN has 1 output and Dropout is left out, as in
  // torch's eval-mode export.
  GraphBuilder(ir::Graph& graph, uint64_t seed, bool training)
      : graph_(graph), seed_(seed), training_(training) {}

  const Status& status() const { return status_; }
  bool training() const { return training_; }

  // A float32 initializer named `name`, filled from its own seeded stream.
  ir::Value Param(const std::string& name, const std::vector<int64_t>& dims, Fill fill);

  // nn.Conv2d(cin, cout, k, stride, pad, bias): weight [cout, cin, k, k]
  // filled by `weight_fill`; the bias, when present, U(-1/sqrt(fan_in), +).
  ir::Value Conv2d(const std::string& module, ir::Value x, int64_t cin, int64_t cout, int64_t kernel,
                   int64_t stride, int64_t pad, bool bias, Fill weight_fill);
  // nn.BatchNorm2d(c): weight 1, bias 0, running_mean 0, running_var 1;
  // epsilon 1e-5, ONNX momentum 0.9 (= 1 - torch's 0.1), training_mode 1 or
  // 0 (written explicitly, as torch does).
  ir::Value BatchNorm2d(const std::string& module, ir::Value x, int64_t channels);
  // nn.Linear(in, out) as Gemm(transB=1); PyTorch's default init
  // U(-1/sqrt(in), 1/sqrt(in)) for weight [out, in] and bias [out].
  ir::Value Linear(const std::string& module, ir::Value x, int64_t in, int64_t out);
  ir::Value MaxPool2d(const std::string& module, ir::Value x, int64_t kernel, int64_t stride, int64_t pad);
  // nn.Dropout(ratio): in training mode Dropout(x, ratio, training_mode=true)
  // with both scalars as Constant nodes; in eval mode x itself.
  ir::Value Dropout(const std::string& module, ir::Value x, float ratio);
  ir::Value Relu(const std::string& module, ir::Value x);
  ir::Value GlobalAveragePool(const std::string& module, ir::Value x);
  // Functional ops in the forward of `module` (torch.flatten(x, 1), a + b):
  // they are not module calls, so they take the module's plain scope.
  ir::Value Flatten(const std::string& module, ir::Value x);  // axis 1
  ir::Value Add(const std::string& module, ir::Value a, ir::Value b);

 private:
  // The scope of the next call of `module` (see the naming rules above).
  std::string CallScope(const std::string& module);
  // A node "<scope>/<op>" with `num_outputs` torch-style output names.
  ir::Node* AddOp(ir::OpKind op, const std::string& scope, std::vector<ir::Value> inputs,
                  size_t num_outputs = 1);
  ir::Value Constant(const std::string& scope, ir::Tensor value);
  bool Ok(std::initializer_list<ir::Value> values) const;

  ir::Graph& graph_;
  uint64_t seed_;
  bool training_;
  Status status_;
  std::unordered_set<std::string> node_names_;
  std::unordered_map<std::string, int> module_calls_;
};

// "layer1.0.conv1" -> "/layer1/layer1.0/conv1"; "" -> "".
std::string TorchScope(const std::string& module);

// A graph input/output type [batch, dims...] of float32, batch symbolic.
ir::TensorType BatchedFloat(const std::vector<int64_t>& dims);

}  // namespace amptrain::models
