#include "models/builder_util.h"

#include <cmath>
#include <numbers>

namespace amptrain::models {

using ir::OpKind;
using ir::Tensor;
using ir::Value;

uint64_t Rng::Next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double Rng::Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

double Rng::Normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  double u1 = static_cast<double>((Next() >> 11) + 1) * 0x1.0p-53;  // (0, 1]: log is finite
  double u2 = Uniform();
  double r = std::sqrt(-2.0 * std::log(u1));
  double theta = 2.0 * std::numbers::pi * u2;
  spare_ = r * std::sin(theta);
  has_spare_ = true;
  return r * std::cos(theta);
}

uint64_t ParamSeed(uint64_t seed, const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  Rng mix(seed ^ h);
  return mix.Next();
}

std::string TorchScope(const std::string& module) {
  std::string scope, prev, part;
  auto flush = [&] {
    bool numeric = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    prev = numeric && !prev.empty() ? prev + "." + part : part;
    scope += "/" + prev;
    part.clear();
  };
  if (module.empty()) return scope;
  for (char c : module) {
    if (c == '.') flush();
    else part += c;
  }
  flush();
  return scope;
}

ir::TensorType BatchedFloat(const std::vector<int64_t>& dims) {
  std::vector<ir::Dim> shape{ir::Dim::Symbolic("batch")};
  for (int64_t d : dims) shape.push_back(ir::Dim::Static(d));
  return ir::TensorType::Of(ir::DType::kFloat32, ir::Shape(std::move(shape)));
}

bool GraphBuilder::Ok(std::initializer_list<Value> values) const {
  if (!status_.ok()) return false;
  for (Value v : values)
    if (!v.valid()) return false;
  return true;
}

Value GraphBuilder::Param(const std::string& name, const std::vector<int64_t>& dims, Fill fill) {
  if (!status_.ok()) return Value{};
  auto zeros = Tensor::Zeros(ir::DType::kFloat32, dims);
  if (!zeros.ok()) {
    status_ = zeros.status().WithContext(StrCat("parameter '", name, "'"));
    return Value{};
  }
  Tensor t = std::move(zeros).value();
  float* p = t.data<float>();
  Rng rng(ParamSeed(seed_, name));
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    switch (fill.kind) {
      case Fill::kConstant: p[i] = static_cast<float>(fill.a); break;
      case Fill::kUniform: p[i] = static_cast<float>((2.0 * rng.Uniform() - 1.0) * fill.a); break;
      case Fill::kNormal: p[i] = static_cast<float>(rng.Normal() * fill.a); break;
    }
  }
  return graph_.AddInitializer(name, std::move(t));
}

std::string GraphBuilder::CallScope(const std::string& module) {
  int calls = module_calls_[module]++;
  std::string scope = TorchScope(module);
  return calls == 0 ? scope : StrCat(scope, "_", calls);
}

ir::Node* GraphBuilder::AddOp(OpKind op, const std::string& scope, std::vector<Value> inputs, size_t num_outputs) {
  std::string base = StrCat(scope, "/", ir::Schema(op).onnx_type);
  std::string name = base;
  for (int i = 1; node_names_.count(name); ++i) name = StrCat(base, "_", i);
  node_names_.insert(name);
  std::vector<std::string> outs;
  for (size_t i = 0; i < num_outputs; ++i) outs.push_back(StrCat(name, "_output_", i));
  return graph_.AddNode(op, std::move(inputs), num_outputs, name, std::move(outs));
}

Value GraphBuilder::Constant(const std::string& scope, Tensor value) {
  ir::Node* n = AddOp(OpKind::kConstant, scope, {});
  n->mutable_output_info(0).type = ir::TensorType::Of(value.dtype(), value.dims());
  n->attrs().Set("value", std::move(value));
  return n->output(0);
}

Value GraphBuilder::Conv2d(const std::string& module, Value x, int64_t cin, int64_t cout, int64_t kernel,
                           int64_t stride, int64_t pad, bool bias, Fill weight_fill) {
  Value w = Param(module + ".weight", {cout, cin, kernel, kernel}, weight_fill);
  Value b;
  if (bias) b = Param(module + ".bias", {cout}, Fill::Uniform(1.0 / std::sqrt(double(cin * kernel * kernel))));
  if (!Ok({x, w}) || (bias && !b.valid())) return Value{};
  std::vector<Value> inputs{x, w};
  if (bias) inputs.push_back(b);
  ir::Node* n = AddOp(OpKind::kConv, CallScope(module), std::move(inputs));
  n->attrs().Set("dilations", std::vector<int64_t>{1, 1});
  n->attrs().Set("group", int64_t{1});
  n->attrs().Set("kernel_shape", std::vector<int64_t>{kernel, kernel});
  n->attrs().Set("pads", std::vector<int64_t>{pad, pad, pad, pad});
  n->attrs().Set("strides", std::vector<int64_t>{stride, stride});
  return n->output(0);
}

Value GraphBuilder::BatchNorm2d(const std::string& module, Value x, int64_t channels) {
  Value scale = Param(module + ".weight", {channels}, Fill::Constant(1.0));
  Value shift = Param(module + ".bias", {channels}, Fill::Constant(0.0));
  Value mean = Param(module + ".running_mean", {channels}, Fill::Constant(0.0));
  Value var = Param(module + ".running_var", {channels}, Fill::Constant(1.0));
  if (!Ok({x, scale, shift, mean, var})) return Value{};
  ir::Node* n =
      AddOp(OpKind::kBatchNormalization, CallScope(module), {x, scale, shift, mean, var}, training_ ? 3 : 1);
  n->attrs().Set("epsilon", 1e-5f);
  n->attrs().Set("momentum", 0.9f);
  n->attrs().Set("training_mode", int64_t{training_ ? 1 : 0});
  return n->output(0);
}

Value GraphBuilder::Linear(const std::string& module, Value x, int64_t in, int64_t out) {
  double bound = 1.0 / std::sqrt(static_cast<double>(in));
  Value w = Param(module + ".weight", {out, in}, Fill::Uniform(bound));
  Value b = Param(module + ".bias", {out}, Fill::Uniform(bound));
  if (!Ok({x, w, b})) return Value{};
  ir::Node* n = AddOp(OpKind::kGemm, CallScope(module), {x, w, b});
  n->attrs().Set("alpha", 1.0f);
  n->attrs().Set("beta", 1.0f);
  n->attrs().Set("transB", int64_t{1});
  return n->output(0);
}

Value GraphBuilder::MaxPool2d(const std::string& module, Value x, int64_t kernel, int64_t stride, int64_t pad) {
  if (!Ok({x})) return Value{};
  ir::Node* n = AddOp(OpKind::kMaxPool, CallScope(module), {x});
  n->attrs().Set("ceil_mode", int64_t{0});
  n->attrs().Set("kernel_shape", std::vector<int64_t>{kernel, kernel});
  n->attrs().Set("pads", std::vector<int64_t>{pad, pad, pad, pad});
  n->attrs().Set("strides", std::vector<int64_t>{stride, stride});
  return n->output(0);
}

Value GraphBuilder::Dropout(const std::string& module, Value x, float ratio) {
  if (!Ok({x}) || !training_) return x;
  std::string scope = CallScope(module);
  Value r = Constant(scope, Tensor::Scalar(ratio));
  auto flag = Tensor::Zeros(ir::DType::kBool, {});
  if (!flag.ok()) {
    status_ = flag.status();
    return Value{};
  }
  flag->data<uint8_t>()[0] = 1;
  Value mode = Constant(scope, std::move(flag).value());
  return AddOp(OpKind::kDropout, scope, {x, r, mode})->output(0);
}

Value GraphBuilder::Relu(const std::string& module, Value x) {
  if (!Ok({x})) return Value{};
  return AddOp(OpKind::kRelu, CallScope(module), {x})->output(0);
}

Value GraphBuilder::Flatten(const std::string& module, Value x) {
  if (!Ok({x})) return Value{};
  ir::Node* n = AddOp(OpKind::kFlatten, TorchScope(module), {x});
  n->attrs().Set("axis", int64_t{1});
  return n->output(0);
}

Value GraphBuilder::GlobalAveragePool(const std::string& module, Value x) {
  if (!Ok({x})) return Value{};
  return AddOp(OpKind::kGlobalAveragePool, CallScope(module), {x})->output(0);
}

Value GraphBuilder::Add(const std::string& module, Value a, Value b) {
  if (!Ok({a, b})) return Value{};
  return AddOp(OpKind::kAdd, TorchScope(module), {a, b})->output(0);
}

}  // namespace amptrain::models
