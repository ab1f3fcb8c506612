// Helpers of the AMP tests: small graphs, structure queries, numerics.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>

#include "amp/passes.h"
#include "executor/session.h"
#include "ir/graph.h"
#include "ir/onnx_dtype.h"
#include "ir/verifier.h"
#include "tests/common/count_nodes.h"

namespace amptrain::amp::testing {

inline ir::Tensor RandomTensor(const std::vector<int64_t>& dims, float lo, float hi, uint32_t seed) {
  ir::Tensor t = ir::Tensor::Zeros(ir::DType::kFloat32, dims).value();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

inline ir::Value Weight(ir::Graph& g, const std::string& name, const std::vector<int64_t>& dims, uint32_t seed) {
  return g.AddInitializer(name, RandomTensor(dims, -0.5f, 0.5f, seed));
}

// BatchNormalization of `x` (4 channels) with unit scale and variance, zero bias and mean.
inline ir::Node* UnitBatchNorm(ir::Graph& g, ir::Value x, const std::string& name, size_t num_outputs = 1) {
  return g.AddNode(ir::OpKind::kBatchNormalization,
                   {x, g.AddInitializer("s", ir::Tensor::Floats({1, 1, 1, 1}, {4})),
                    g.AddInitializer("b", ir::Tensor::Floats({0, 0, 0, 0}, {4})),
                    g.AddInitializer("m", ir::Tensor::Floats({0, 0, 0, 0}, {4})),
                    g.AddInitializer("v", ir::Tensor::Floats({1, 1, 1, 1}, {4}))},
                   num_outputs, name);
}

inline Policy AtLevel(Level level, ir::DType low) {
  Policy p;
  p.level = level;
  p.low = low;
  return p;
}

// Each node's decision under `p`, by node name (planning only: g unchanged).
inline std::map<std::string, Decision> DecisionsByName(const ir::Graph& g, const Policy& p,
                                                       const Capability& cap = Capability::Export()) {
  StatusOr<PrecisionPlan> plan = PlanPrecision(g, p, cap);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  std::map<std::string, Decision> by_name;
  if (plan.ok())
    for (const auto& [id, np] : plan->nodes) by_name[g.node(id)->name()] = np.decision;
  return by_name;
}

inline const ir::Node* FindNode(const ir::Graph& g, const std::string& name) {
  for (const ir::Node* n : g.nodes())
    if (n->name() == name) return n;
  return nullptr;
}

// The dtype node `name` computes in (its output 0).
inline ir::DType OutDType(const ir::Graph& g, const std::string& name) {
  const ir::Node* n = FindNode(g, name);
  return n ? n->output_info(0).type.dtype : ir::DType::kUndefined;
}

inline int Count(const ir::Graph& g, ir::OpKind op) { return static_cast<int>(amptrain::testing::CountNodes(g, op)); }

inline ir::DType CastTo(const ir::Node& n) { return ir::DTypeFromOnnx(n.attrs().Int("to", 0)); }

// Casts whose input is an initializer or Constant (weight casts).
inline int WeightCasts(const ir::Graph& g) {
  int c = 0;
  for (const ir::Node* n : g.nodes())
    if (n->op() == ir::OpKind::kCast && g.ConstantValue(n->input(0))) ++c;
  return c;
}

// The checks every converted graph must pass: structure, dtypes agreeing with
// the op rules and the Cast attributes, no Cast chains, and no
// Cast(to=FLOAT) feeding a node that computes in low precision.
inline void ExpectWellFormed(const ir::Graph& g) {
  Status v = ir::Verify(g);
  EXPECT_TRUE(v.ok()) << v.ToString();
  Status d = CheckDTypeConsistency(g);
  EXPECT_TRUE(d.ok()) << d.ToString();
  for (const ir::Node* n : g.nodes()) {
    if (n->op() != ir::OpKind::kCast) continue;
    const ir::Node* p = g.producer(n->input(0));
    EXPECT_FALSE(p->op() == ir::OpKind::kCast && ir::IsFloat(g.type(p->input(0)).dtype))
        << "Cast chain " << p->name() << " -> " << n->name();
    EXPECT_NE(g.type(n->input(0)).dtype, CastTo(*n)) << "identity " << n->Describe();
    if (CastTo(*n) != ir::DType::kFloat32) continue;
    for (const ir::Use& u : g.uses(n->output(0))) {
      const ir::Node* c = g.node(u.node);
      if (c->op() == ir::OpKind::kCast) continue;
      for (size_t k = 0; k < c->num_outputs(); ++k)
        EXPECT_FALSE(ir::IsLowPrecision(c->output_info(k).type.dtype))
            << n->Describe() << " (to FLOAT) feeds " << c->Describe() << " computing in low precision";
    }
  }
}

inline double RelL2(const ir::Tensor& a, const ir::Tensor& ref) {
  auto get = [](const ir::Tensor& t, int64_t i) { return t.GetAsDouble(i); };
  double num = 0, den = 0;
  for (int64_t i = 0; i < ref.num_elements(); ++i) {
    double d = get(a, i) - get(ref, i);
    num += d * d;
    den += get(ref, i) * get(ref, i);
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

inline std::vector<ir::Tensor> RunGraph(std::unique_ptr<ir::Graph> g, const std::map<std::string, ir::Tensor>& in) {
  auto session = executor::InferenceSession::Create(std::move(g));
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  if (!session.ok()) return {};
  auto out = (*session)->Run(in);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? *out : std::vector<ir::Tensor>{};
}

}  // namespace amptrain::amp::testing
