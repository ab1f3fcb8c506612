// Finite-difference gradient checks through the ops the importer lowers
// (importer/lowerings.cc): the test graph holds the op itself, lowered as
// import lowers it, so the check covers the ops it becomes and how they are
// wired (a wrong perm or broadcast shows up as a wrong gradient).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "importer/opset_adapters.h"
#include "tests/autodiff/gradcheck_util.h"

namespace amptrain::autodiff::testing {
namespace {

using ir::Attributes;
using ir::Graph;
using ir::OpKind;
using ir::Value;
using V = std::vector<Value>;

// Adds `op` (attrs `a`) on `in`, lowers it as import does, and returns the
// value that now carries its output.
Value Lowered(Graph& g, OpKind op, V in, Attributes a) {
  ir::Node* n = g.AddNode(op, std::move(in), 1, "lowered");
  n->attrs() = std::move(a);
  const std::string name = g.name(n->output(0));
  Status inferred = g.InferShapes();
  EXPECT_TRUE(inferred.ok()) << inferred.ToString();
  auto changed = importer::LowerComposites(g);
  EXPECT_TRUE(changed.ok() && *changed) << changed.status().ToString();
  for (const ir::Node* node : g.nodes()) EXPECT_NE(node->op(), op);
  return g.FindValue(name);
}

Attributes Equation(const std::string& eq) {
  Attributes a;
  a.Set("equation", eq);
  return a;
}

TEST(LoweredGradCheck, Einsum) {
  struct Case {
    std::string equation;
    std::vector<GradInput> inputs;
  };
  const std::vector<Case> cases = {
      {"bhqd,bkhd->bhqk", {{"a", {2, 2, 3, 2}}, {"b", {2, 4, 2, 2}}}},
      {"bn,nd->bd", {{"a", {3, 4}}, {"b", {4, 2}}}},
      {"ij,jk", {{"a", {2, 3}}, {"b", {3, 4}}}},
      {"...ij,...jk->...ik", {{"a", {2, 2, 3}}, {"b", {3, 2}}}},
      {"ij,jk->i", {{"a", {2, 3}}, {"b", {3, 4}}}},
      {"i,i->", {{"a", {4}}, {"b", {4}}}},
      {"ij->ji", {{"a", {2, 3}}}},
      {"bi,kij,bj->bk", {{"a", {2, 3}}, {"w", {2, 3, 4}}, {"b", {2, 4}}}},
      {"ij,jk,ki->", {{"a", {2, 3}}, {"b", {3, 2}}, {"c", {2, 2}}}},
      {"ij->ij", {{"a", {2, 3}}}},
      {"bij->bj", {{"a", {2, 3, 4}}}},
      {"bii->bi", {{"a", {2, 3, 3}}}},
      {"iji,j->i", {{"a", {3, 2, 3}}, {"b", {2}}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.equation);
    GRADCHECK(c.inputs, [&](Graph& g, const V& x) { return Lowered(g, OpKind::kEinsum, x, Equation(c.equation)); });
  }
}

TEST(LoweredGradCheck, DepthToSpaceAndSpaceToDepth) {
  for (const char* mode : {"DCR", "CRD"}) {
    SCOPED_TRACE(mode);
    GRADCHECK((std::vector<GradInput>{{"x", {2, 8, 2, 3}}}), [&](Graph& g, const V& x) {
      Attributes a;
      a.Set("blocksize", int64_t{2});
      a.Set("mode", std::string(mode));
      return Lowered(g, OpKind::kDepthToSpace, x, a);
    });
  }
  GRADCHECK((std::vector<GradInput>{{"x", {2, 3, 4, 2}}}), [](Graph& g, const V& x) {
    Attributes a;
    a.Set("blocksize", int64_t{2});
    return Lowered(g, OpKind::kSpaceToDepth, x, a);
  });
}

TEST(LoweredGradCheck, InstanceNormalization) {
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{2, 3, 5}, std::vector<int64_t>{2, 3, 2, 3}}) {
    SCOPED_TRACE(dims.size());
    GRADCHECK((std::vector<GradInput>{{"x", dims}, {"s", {3}}, {"b", {3}}}), [](Graph& g, const V& x) {
      Attributes a;
      a.Set("epsilon", 1e-5f);
      return Lowered(g, OpKind::kInstanceNormalization, x, a);
    });
  }
}

// nn.GroupNorm's export: Reshape [N, G, -1] -> InstanceNormalization(Constant
// ones, Constant zeros) (lowered without its Mul/Add) -> Reshape back ->
// Mul(gamma) -> Add(beta).
TEST(LoweredGradCheck, GroupNormPattern) {
  GRADCHECK((std::vector<GradInput>{{"x", {2, 4, 2, 3}}, {"gamma", {4, 1, 1}}, {"beta", {4, 1, 1}}}),
            [](Graph& g, const V& x) {
              auto constant = [&](double v) {
                ir::Tensor t = *ir::Tensor::Zeros(ir::DType::kFloat64, {2});
                for (int i = 0; i < 2; ++i) t.data<double>()[i] = v;
                Attributes a;
                a.Set("value", t);
                return Op(g, OpKind::kConstant, {}, a);
              };
              Value grouped = Op(g, OpKind::kReshape, {x[0], IntsConst(g, {0, 2, -1})});
              Attributes a;
              a.Set("epsilon", 1e-5f);
              Value n = Lowered(g, OpKind::kInstanceNormalization, {grouped, constant(1.0), constant(0.0)}, a);
              size_t muls = 0;
              for (const ir::Node* node : g.nodes()) muls += node->op() == OpKind::kMul;
              EXPECT_EQ(muls, 0u) << "a Constant scale of ones needs no Mul";
              Value back = Op(g, OpKind::kReshape, {n, IntsConst(g, {2, 4, 2, 3})});
              return Op(g, OpKind::kAdd, {Op(g, OpKind::kMul, {back, x[1]}), x[2]});
            });
}

// GroupNormalization: scale and bias per group at opset 18 (each repeated
// over its group's channels), per channel from opset 21.
TEST(LoweredGradCheck, GroupNormalization) {
  for (int64_t opset : {18, 21}) {
    SCOPED_TRACE(opset);
    const int64_t params = opset < 21 ? 2 : 4;
    GRADCHECK((std::vector<GradInput>{{"x", {2, 4, 2, 3}}, {"s", {params}}, {"b", {params}}}),
              [&](Graph& g, const V& x) {
                g.info().opset = opset;
                Attributes a;
                a.Set("num_groups", int64_t{2});
                a.Set("epsilon", 1e-5f);
                return Lowered(g, OpKind::kGroupNormalization, x, a);
              });
  }
}

TEST(LoweredGradCheck, RMSNormalization) {
  GRADCHECK((std::vector<GradInput>{{"x", {2, 3, 4}}, {"s", {4}}}), [](Graph& g, const V& x) {
    Attributes a;
    a.Set("epsilon", 1e-5f);
    return Lowered(g, OpKind::kRMSNormalization, x, a);
  });
  GRADCHECK((std::vector<GradInput>{{"x", {2, 3, 4}}, {"s", {3, 4}}}), [](Graph& g, const V& x) {
    Attributes a;
    a.Set("axis", int64_t{1});
    return Lowered(g, OpKind::kRMSNormalization, x, a);
  });
}

TEST(LoweredGradCheck, Swish) {
  for (float alpha : {1.0f, 1.702f}) {
    SCOPED_TRACE(alpha);
    GRADCHECK((std::vector<GradInput>{{"x", {3, 4}, -3.0, 3.0}}), [&](Graph& g, const V& x) {
      Attributes a;
      a.Set("alpha", alpha);
      return Lowered(g, OpKind::kSwish, x, a);
    });
  }
}

// A bool Constant of `dims`, true where `allowed(i)` (row-major index).
Value BoolConst(Graph& g, const std::vector<int64_t>& dims, const std::function<bool(int64_t)>& allowed) {
  ir::Tensor t = *ir::Tensor::Zeros(ir::DType::kBool, dims);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<uint8_t>()[i] = allowed(i);
  Attributes a;
  a.Set("value", t);
  return Op(g, OpKind::kConstant, {}, a);
}

// Attention through Q, K and V (and the past): causal with more keys than
// queries, grouped-query heads, 3-D inputs with softcap and an explicit
// scale, a boolean mask that leaves one query row no key (its output and
// gradient are 0, not NaN), and a key/value cache.
TEST(LoweredGradCheck, Attention) {
  auto attrs = [](std::initializer_list<std::pair<const char*, ir::AttrValue>> kv) {
    Attributes a;
    for (const auto& [k, v] : kv) a.Set(k, v);
    return a;
  };
  SCOPED_TRACE("causal, 3 queries over 5 keys");
  GRADCHECK((std::vector<GradInput>{{"q", {1, 2, 3, 4}}, {"k", {1, 2, 5, 4}}, {"v", {1, 2, 5, 3}}}),
            [&](Graph& g, const V& x) { return Lowered(g, OpKind::kAttention, x, attrs({{"is_causal", int64_t{1}}})); });
  SCOPED_TRACE("grouped-query: 4 query heads, 2 key/value heads");
  GRADCHECK((std::vector<GradInput>{{"q", {2, 4, 3, 4}}, {"k", {2, 2, 3, 4}}, {"v", {2, 2, 3, 2}}}),
            [&](Graph& g, const V& x) { return Lowered(g, OpKind::kAttention, x, attrs({{"is_causal", int64_t{1}}})); });
  SCOPED_TRACE("3-D, softcap, scale");
  GRADCHECK((std::vector<GradInput>{{"q", {2, 3, 8}, -2.0, 2.0}, {"k", {2, 4, 8}, -2.0, 2.0}, {"v", {2, 4, 6}}}),
            [&](Graph& g, const V& x) {
              return Lowered(g, OpKind::kAttention, x,
                             attrs({{"q_num_heads", int64_t{2}}, {"kv_num_heads", int64_t{2}}, {"softcap", 2.0f},
                                    {"scale", 0.3f}}));
            });
  SCOPED_TRACE("bool mask, row 1 fully masked");
  GRADCHECK((std::vector<GradInput>{{"q", {1, 1, 3, 4}}, {"k", {1, 1, 4, 4}}, {"v", {1, 1, 4, 2}}}),
            [&](Graph& g, const V& x) {
              Value mask = BoolConst(g, {3, 4}, [](int64_t i) { return i / 4 != 1 && i % 4 != 3; });
              return Lowered(g, OpKind::kAttention, {x[0], x[1], x[2], mask}, {});
            });
  SCOPED_TRACE("past key/value, causal (offset 3)");
  GRADCHECK((std::vector<GradInput>{{"q", {1, 2, 2, 4}},
                                    {"k", {1, 2, 2, 4}},
                                    {"v", {1, 2, 2, 3}},
                                    {"pk", {1, 2, 3, 4}},
                                    {"pv", {1, 2, 3, 3}}}),
            [&](Graph& g, const V& x) {
              return Lowered(g, OpKind::kAttention, {x[0], x[1], x[2], Value{}, x[3], x[4]},
                             attrs({{"is_causal", int64_t{1}}}));
            });
}

// The small lowerings: each is a few elementwise / reduce ops, so the check
// covers how they are wired (kinks of Shrink, ThresholdedRelu and |x| are
// away from the random values).
TEST(LoweredGradCheck, ElementwiseAndReduceLowerings) {
  auto one = [](OpKind op, Attributes a = {}) {
    return [op, a](Graph& g, const V& x) { return Lowered(g, op, x, a); };
  };
  Attributes shrink;
  shrink.Set("lambd", 0.25f);
  shrink.Set("bias", 0.1f);
  Attributes threshold;
  threshold.Set("alpha", 0.3f);
  Attributes keep0;
  keep0.Set("keepdims", int64_t{0});
  SCOPED_TRACE("GlobalMaxPool");
  GRADCHECK((std::vector<GradInput>{{"x", {2, 3, 2, 3}}}), one(OpKind::kGlobalMaxPool));
  SCOPED_TRACE("Softsign");
  GRADCHECK((std::vector<GradInput>{{"x", {3, 4}, -3.0, 3.0}}), one(OpKind::kSoftsign));
  SCOPED_TRACE("Shrink");
  GRADCHECK((std::vector<GradInput>{{"x", {3, 4}}}), one(OpKind::kShrink, shrink));
  SCOPED_TRACE("ThresholdedRelu");
  GRADCHECK((std::vector<GradInput>{{"x", {3, 4}}}), one(OpKind::kThresholdedRelu, threshold));
  for (OpKind op : {OpKind::kReduceL1, OpKind::kReduceSumSquare, OpKind::kReduceLogSum}) {
    SCOPED_TRACE(ir::Schema(op).name);
    GRADCHECK((std::vector<GradInput>{{"x", {2, 3, 4}, 0.5, 2.0}}), [&](Graph& g, const V& x) {
      return Lowered(g, op, {x[0], IntsConst(g, {1})}, keep0);
    });
  }
  for (OpKind op : {OpKind::kSum, OpKind::kMean}) {
    SCOPED_TRACE(ir::Schema(op).name);
    GRADCHECK((std::vector<GradInput>{{"a", {2, 3}}, {"b", {3}}, {"c", {2, 1}}}), one(op));
  }
}

// OneHot's values [off, on] get the gradient of every off / on position.
TEST(LoweredGradCheck, OneHotValues) {
  GRADCHECK((std::vector<GradInput>{{"values", {2}}}), [](Graph& g, const V& x) {
    ir::Tensor idx = *ir::Tensor::Zeros(ir::DType::kInt64, {2, 3});
    const int64_t ids[] = {0, 3, -1, 2, 5, -4};  // 5 is out of range: all off
    for (int i = 0; i < 6; ++i) idx.data<int64_t>()[i] = ids[i];
    Attributes c;
    c.Set("value", idx);
    Attributes axis;
    axis.Set("axis", int64_t{1});
    return Lowered(g, OpKind::kOneHot, {Op(g, OpKind::kConstant, {}, c), IntsConst(g, {4}), x[0]}, axis);
  });
}

// NegativeLogLikelihoodLoss through input and weight, with an ignored target
// and a spatial dim, for each reduction.
TEST(LoweredGradCheck, NegativeLogLikelihoodLoss) {
  for (const char* reduction : {"none", "sum", "mean"}) {
    SCOPED_TRACE(reduction);
    GRADCHECK((std::vector<GradInput>{{"x", {3, 4, 2}}, {"w", {4}, 0.5, 2.0}}), [&](Graph& g, const V& x) {
      ir::Tensor t = *ir::Tensor::Zeros(ir::DType::kInt64, {3, 2});
      const int64_t targets[] = {0, 3, -100, 2, 1, 3};  // -100: ignored
      for (int i = 0; i < 6; ++i) t.data<int64_t>()[i] = targets[i];
      Attributes c;
      c.Set("value", t);
      Attributes a;
      a.Set("reduction", std::string(reduction));
      a.Set("ignore_index", int64_t{-100});
      return Lowered(g, OpKind::kNegativeLogLikelihoodLoss, {x[0], Op(g, OpKind::kConstant, {}, c), x[1]}, a);
    });
  }
}

// Col2Im in both of its lowerings: tiles (Reshape/Transpose) and
// overlapping, dilated, padded blocks with a remainder row (one-hot
// ConvTranspose with output_padding).
TEST(LoweredGradCheck, Col2Im) {
  struct Case {
    const char* what;
    std::vector<int64_t> x, image, block, strides, dilations, pads;
  };
  const std::vector<Case> cases = {
      {"tiles", {2, 8, 6}, {4, 6}, {2, 2}, {2, 2}, {1, 1}, {0, 0, 0, 0}},
      {"overlap", {1, 18, 9}, {3, 3}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {"dilated, padded, remainder", {2, 12, 15}, {6, 7}, {2, 3}, {2, 1}, {2, 1}, {1, 0, 1, 0}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    GRADCHECK((std::vector<GradInput>{{"x", c.x}}), [&](Graph& g, const V& x) {
      Attributes a;
      a.Set("strides", c.strides);
      a.Set("dilations", c.dilations);
      a.Set("pads", c.pads);
      return Lowered(g, OpKind::kCol2Im, {x[0], IntsConst(g, c.image), IntsConst(g, c.block)}, a);
    });
  }
}

// An int64 Constant of `dims` holding `v`.
Value Int64Const(Graph& g, const std::vector<int64_t>& dims, const std::vector<int64_t>& v) {
  ir::Tensor t = *ir::Tensor::Zeros(ir::DType::kInt64, dims);
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  Attributes c;
  c.Set("value", t);
  return Op(g, OpKind::kConstant, {}, c);
}

// The normalizations other exporters write: LRN with odd and even windows
// (ONNX's window is not centred for an even size), LpNormalization for both
// norms, MeanVarianceNormalization over its default and other axes.
TEST(LoweredGradCheck, LrnLpNormalizationMeanVariance) {
  for (int64_t size : {3, 4}) {
    SCOPED_TRACE(StrCat("LRN size ", size));
    GRADCHECK((std::vector<GradInput>{{"x", {2, 5, 2, 3}}}), [&](Graph& g, const V& x) {
      return Lowered(g, OpKind::kLRN, x, A({{"size", size}, {"alpha", 0.3f}, {"beta", 0.75f}, {"bias", 2.0f}}));
    });
  }
  for (int64_t p : {1, 2}) {
    SCOPED_TRACE(StrCat("LpNormalization p ", p));
    GRADCHECK((std::vector<GradInput>{{"x", {3, 4}, 0.2, 1.0}}), [&](Graph& g, const V& x) {
      return Lowered(g, OpKind::kLpNormalization, x, A({{"p", p}, {"axis", int64_t{1}}}));
    });
  }
  SCOPED_TRACE("MeanVarianceNormalization");
  GRADCHECK((std::vector<GradInput>{{"x", {2, 3, 2, 3}}}),
            [&](Graph& g, const V& x) { return Lowered(g, OpKind::kMeanVarianceNormalization, x, {}); });
  GRADCHECK((std::vector<GradInput>{{"x", {2, 3, 4}}}), [&](Graph& g, const V& x) {
    return Lowered(g, OpKind::kMeanVarianceNormalization, x, A({{"axes", std::vector<int64_t>{2}}}));
  });
}

// LpPool for p = 1, 2, 3 with strides, pads and ceil_mode's extra window;
// GlobalLpPool. The values stay away from 0, where |x| has its kink.
TEST(LoweredGradCheck, LpPoolAndGlobalLpPool) {
  for (int64_t p : {1, 2, 3}) {
    SCOPED_TRACE(StrCat("LpPool p ", p));
    GRADCHECK((std::vector<GradInput>{{"x", {2, 2, 5, 4}, 0.3, 1.5}}), [&](Graph& g, const V& x) {
      return Lowered(g, OpKind::kLpPool, x,
                     A({{"p", p}, {"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 1}},
                        {"pads", std::vector<int64_t>{1, 0, 0, 1}}, {"ceil_mode", int64_t{1}}}));
    });
    GRADCHECK((std::vector<GradInput>{{"x", {2, 3, 3, 2}, 0.3, 1.5}}),
               [&](Graph& g, const V& x) { return Lowered(g, OpKind::kGlobalLpPool, x, A({{"p", p}})); });
  }
}

// A window of zeros (a dead channel after ReLU) has the gradient 0, not the
// NaN of the root's infinite slope times 0: channel 0 is zeroed by a mask.
TEST(LoweredGradCheck, LpPoolOfZerosHasZeroGradient) {
  auto masked = [](Graph& g, Value x) { return Op(g, OpKind::kMul, {x, DoublesConst(g, {0.0, 1.0}, {1, 2, 1, 1})}); };
  for (int64_t p : {2, 3}) {
    SCOPED_TRACE(StrCat("p ", p));
    GRADCHECK((std::vector<GradInput>{{"x", {2, 2, 3, 3}, 0.3, 1.5}}), [&](Graph& g, const V& x) {
      return Lowered(g, OpKind::kGlobalLpPool, {masked(g, x[0])}, A({{"p", p}}));
    });
    GRADCHECK((std::vector<GradInput>{{"x", {2, 2, 3, 3}, 0.3, 1.5}}), [&](Graph& g, const V& x) {
      return Lowered(g, OpKind::kLpPool, {masked(g, x[0])}, A({{"p", p}, {"kernel_shape", std::vector<int64_t>{2, 2}}}));
    });
  }
}

// MaxUnpool through x, with the unpooled size and a larger output_shape;
// SwiGLU through both inputs.
TEST(LoweredGradCheck, MaxUnpoolAndSwiGLU) {
  // [1, 2, 2, 2] values into [1, 2, 4, 4] (kernel 2, stride 2): indices are
  // flat over the whole output, so channel 1's start at 16.
  const std::vector<int64_t> idx = {0, 3, 9, 14, 16 + 5, 16 + 2, 16 + 12, 16 + 15};
  GRADCHECK((std::vector<GradInput>{{"x", {1, 2, 2, 2}}}), [&](Graph& g, const V& x) {
    return Lowered(g, OpKind::kMaxUnpool, {x[0], Int64Const(g, {1, 2, 2, 2}, idx)},
                   A({{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}}));
  });
  GRADCHECK((std::vector<GradInput>{{"x", {1, 2, 2, 2}}}), [&](Graph& g, const V& x) {
    return Lowered(g, OpKind::kMaxUnpool, {x[0], Int64Const(g, {1, 2, 2, 2}, idx), IntsConst(g, {1, 2, 5, 5})},
                   A({{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}}));
  });
  for (float alpha : {1.0f, 1.702f}) {
    SCOPED_TRACE(alpha);
    GRADCHECK((std::vector<GradInput>{{"a", {3, 4}, -3.0, 3.0}, {"b", {3, 4}}}),
              [&](Graph& g, const V& x) { return Lowered(g, OpKind::kSwiGLU, x, A({{"alpha", alpha}})); });
  }
}

// RotaryEmbedding through x and both caches: 4-D with halves, 3-D with
// num_heads, interleaved pairs, a partial rotation, and caches gathered at
// position ids.
TEST(LoweredGradCheck, RotaryEmbedding) {
  SCOPED_TRACE("4-D, halves");
  GRADCHECK((std::vector<GradInput>{{"x", {2, 2, 3, 4}}, {"cos", {2, 3, 2}}, {"sin", {2, 3, 2}}}),
            [&](Graph& g, const V& x) { return Lowered(g, OpKind::kRotaryEmbedding, x, {}); });
  SCOPED_TRACE("3-D, interleaved, partial, position ids");
  GRADCHECK((std::vector<GradInput>{{"x", {2, 3, 12}}, {"cos", {5, 2}}, {"sin", {5, 2}}}), [&](Graph& g, const V& x) {
    return Lowered(g, OpKind::kRotaryEmbedding, {x[0], x[1], x[2], Int64Const(g, {2, 3}, {0, 1, 2, 4, 3, 1})},
                   A({{"num_heads", int64_t{2}}, {"interleaved", int64_t{1}}, {"rotary_embedding_dim", int64_t{4}}}));
  });
}

// TensorScatter through the cache and the update: linear at per-batch
// positions, and circular past the end (positions 3, 0 of a length-4 axis).
TEST(LoweredGradCheck, TensorScatter) {
  GRADCHECK((std::vector<GradInput>{{"past", {2, 2, 5, 3}}, {"update", {2, 2, 2, 3}}}), [&](Graph& g, const V& x) {
    return Lowered(g, OpKind::kTensorScatter, {x[0], x[1], Int64Const(g, {2}, {0, 3})}, {});
  });
  GRADCHECK((std::vector<GradInput>{{"past", {2, 4, 3}}, {"update", {2, 2, 3}}}), [&](Graph& g, const V& x) {
    return Lowered(g, OpKind::kTensorScatter, {x[0], x[1], Int64Const(g, {2}, {3, 1})},
                   A({{"axis", int64_t{1}}, {"mode", std::string("circular")}}));
  });
}

// ReverseSequence time-major and batch-major with a length 0 and a full one;
// Compress with and without an axis.
TEST(LoweredGradCheck, ReverseSequenceAndCompress) {
  GRADCHECK((std::vector<GradInput>{{"x", {4, 3, 2}}}), [&](Graph& g, const V& x) {
    return Lowered(g, OpKind::kReverseSequence, {x[0], Int64Const(g, {3}, {4, 0, 2})}, {});
  });
  GRADCHECK((std::vector<GradInput>{{"x", {3, 4}}}), [&](Graph& g, const V& x) {
    return Lowered(g, OpKind::kReverseSequence, {x[0], Int64Const(g, {3}, {1, 3, 4})},
                   A({{"batch_axis", int64_t{0}}, {"time_axis", int64_t{1}}}));
  });
  GRADCHECK((std::vector<GradInput>{{"x", {3, 4}}}), [&](Graph& g, const V& x) {
    return Lowered(g, OpKind::kCompress, {x[0], BoolConst(g, {4}, [](int64_t i) { return i != 1; })},
                   A({{"axis", int64_t{1}}}));
  });
  GRADCHECK((std::vector<GradInput>{{"x", {2, 3}}}), [&](Graph& g, const V& x) {
    return Lowered(g, OpKind::kCompress, {x[0], BoolConst(g, {5}, [](int64_t i) { return i % 2 == 0; })}, {});
  });
}

}  // namespace
}  // namespace amptrain::autodiff::testing
