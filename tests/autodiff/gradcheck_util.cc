#include "tests/autodiff/gradcheck_util.h"

#include <cmath>
#include <cstring>
#include <random>

#include "executor/session.h"

namespace amptrain::autodiff::testing {

using ir::DType;
using ir::Graph;
using ir::OpKind;
using ir::Tensor;
using ir::Value;

Value Op(Graph& g, OpKind op, std::vector<Value> in, ir::Attributes a, size_t outputs, size_t which) {
  ir::Node* n = g.AddNode(op, std::move(in), outputs);
  n->attrs() = std::move(a);
  return n->output(which);
}

Value IntsConst(Graph& g, const std::vector<int64_t>& v) {
  return g.AddInitializer(g.UniqueName("ints"), Tensor::Int64s(v, {static_cast<int64_t>(v.size())}));
}

Value DoublesConst(Graph& g, const std::vector<double>& v, const std::vector<int64_t>& dims) {
  Tensor t = *Tensor::Zeros(DType::kFloat64, dims);
  std::memcpy(t.raw(), v.data(), v.size() * sizeof(double));
  return g.AddInitializer(g.UniqueName("const"), t);
}

Tensor RandomTensor(const std::vector<int64_t>& dims, double lo, double hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Tensor t = *Tensor::Zeros(DType::kFloat64, dims);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<double>()[i] = u(rng);
  return t;
}

namespace {

constexpr const char* kPendingOps[] = {
    "SoftmaxCrossEntropyLoss", "MeanSquaredError", "ConvGrad", "MaxPoolGrad", "AveragePoolGrad",
    "BatchNormalizationGrad", "LayerNormalizationGrad", "ReluGrad", "GeluGrad", "SoftmaxGrad",
    "LogSoftmaxGrad", "DropoutGrad", "GatherGrad", "ReduceSumTo"};

// A failure that only says a backward op's shape rule or kernel has not landed yet.
bool IsPending(const Status& s) {
  const std::string& m = s.message();
  if (m.find("shape rule pending") == std::string::npos && m.find("kernel for op") == std::string::npos &&
      m.find(" kernel") == std::string::npos)
    return false;
  for (const char* op : kPendingOps)
    if (m.find(StrCat(op, " node")) != std::string::npos || m.find(StrCat("op ", op)) != std::string::npos) return true;
  return false;
}

std::unique_ptr<executor::InferenceSession> Session(std::unique_ptr<Graph> g, Status* status) {
  executor::SessionOptions o;
  o.kernel_impl = "reference";
  o.threads = 1;
  o.training = true;
  auto s = executor::InferenceSession::Create(std::move(g), o);
  if (!s.ok()) {
    *status = s.status();
    return nullptr;
  }
  return std::move(*s);
}

}  // namespace

void GradCheck(const std::vector<GradInput>& inputs, const BuildFn& build, std::string* skip) {
  auto g = std::make_unique<Graph>();
  std::vector<Value> xs;
  std::map<std::string, Tensor> feed;
  uint32_t seed = 1;
  for (const GradInput& in : inputs) {
    xs.push_back(g->AddInput(in.name, ir::TensorType::Of(DType::kFloat64, in.dims)));
    feed[in.name] = RandomTensor(in.dims, in.lo, in.hi, seed++);
  }
  Value out = build(*g, xs);
  ASSERT_TRUE(g->InferShapes().ok()) << g->InferShapes().ToString();
  const ir::TensorType& ot = g->type(out);
  ASSERT_TRUE(ot.has_shape && ot.shape.is_static()) << ot.ToString();
  Value r = g->AddInitializer("R", RandomTensor(ot.shape.static_dims(), -1.0, 1.0, 99));
  ir::Attributes keep0;
  keep0.Set("keepdims", int64_t{0});
  Value loss = Op(*g, OpKind::kReduceSum, {Op(*g, OpKind::kMul, {out, r})}, keep0);
  ASSERT_TRUE(g->InferShapes().ok());
  g->AddOutput(loss);

  Status status;
  auto forward = Session(g->Clone(), &status);
  ASSERT_TRUE(forward) << status.ToString();

  Tensor one_t = *Tensor::Zeros(DType::kFloat64, {});
  one_t.data<double>()[0] = 1.0;
  ir::Attributes one;
  one.Set("value", one_t);
  Value seed_v = Op(*g, OpKind::kConstant, {}, one);
  ASSERT_TRUE(g->InferNode(g->producer(seed_v)).ok());
  BackwardOptions opts;
  for (const GradInput& in : inputs) opts.wrt.push_back(in.name);
  auto result = BuildBackward(*g, loss, seed_v, opts);
  if (!result.ok() && IsPending(result.status())) {
    *skip = "backward op pending: " + result.status().message();
    return;
  }
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  std::vector<size_t> grad_index;
  for (const GradInput& in : inputs) {
    ASSERT_TRUE(result->grads.count(in.name)) << in.name;
    for (size_t k = 0; k < g->outputs().size(); ++k)
      if (g->outputs()[k] == result->grads[in.name]) grad_index.push_back(k);
  }
  ASSERT_EQ(grad_index.size(), inputs.size());
  auto backward = Session(std::move(g), &status);
  if (!backward && IsPending(status)) {
    *skip = "backward op pending: " + status.message();
    return;
  }
  ASSERT_TRUE(backward) << status.ToString();
  auto run1 = backward->Run(feed);
  if (!run1.ok() && IsPending(run1.status())) {
    *skip = "backward op pending: " + run1.status().message();
    return;
  }
  ASSERT_TRUE(run1.ok()) << run1.status().ToString();
  auto run2 = backward->Run(feed);
  ASSERT_TRUE(run2.ok()) << run2.status().ToString();

  auto loss_at = [&](const std::map<std::string, Tensor>& f) {
    auto o = forward->Run(f);
    EXPECT_TRUE(o.ok()) << o.status().ToString();
    return o.ok() ? (*o)[0].GetAsDouble(0) : 0.0;
  };
  constexpr double kEps = 1e-6;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& analytic = (*run1)[grad_index[i]];
    EXPECT_TRUE(analytic == (*run2)[grad_index[i]]) << inputs[i].name << ": backward is not deterministic";
    ASSERT_EQ(analytic.dtype(), DType::kFloat64);
    ASSERT_EQ(analytic.dims(), inputs[i].dims) << inputs[i].name;
    bool all_zero = true;
    const Tensor base = feed[inputs[i].name];
    for (int64_t e = 0; e < base.num_elements(); ++e) {
      std::map<std::string, Tensor> f = feed;
      Tensor x = base.Clone();
      f[inputs[i].name] = x;
      double x0 = base.data<double>()[e];
      x.data<double>()[e] = x0 + kEps;
      double lp = loss_at(f);
      x.data<double>()[e] = x0 - kEps;
      double lm = loss_at(f);
      double numeric = (lp - lm) / (2 * kEps);
      double a = analytic.data<double>()[e];
      all_zero = all_zero && a == 0.0;
      EXPECT_LE(std::abs(a - numeric), 1e-5 + 1e-3 * std::abs(numeric))
          << inputs[i].name << "[" << e << "]: analytic " << a << ", numeric " << numeric;
    }
    EXPECT_FALSE(all_zero) << inputs[i].name << ": the analytic gradient is all zeros";
  }
}

}  // namespace amptrain::autodiff::testing
