// Which initializers a training graph trains (issue 10, item 2): every float
// initializer of an imported model, whatever route it takes to the loss
// (tests/common/param_routes.h), unless frozen (TrainGraphOptions::freeze,
// ResolveFreeze); BN running statistics are statistics; the report names
// everything else with the reason. A frozen parameter stays bitwise
// unchanged through training while the others move.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include <random>
#include <set>

#include "autodiff/loss.h"
#include "executor/session.h"
#include "executor/train/eval_mode.h"
#include "importer/onnx_export.h"
#include "importer/onnx_import.h"
#include "tests/common/count_nodes.h"
#include "tests/common/param_routes.h"
#include "tests/executor/trainer_test_util.h"

namespace amptrain::executor::train {
namespace {

using amptrain::testing::CountNodes;
using testing::SmallCnn;

std::unique_ptr<ir::Graph> Imported(const ir::Graph& g, const importer::ImportOptions& opts = {}) {
  auto bytes = importer::ExportModelBytes(g);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto imported = importer::ImportModelBytes(*bytes, "", opts);
  EXPECT_TRUE(imported.ok()) << imported.status().ToString();
  return imported.ok() ? std::move(*imported) : nullptr;
}

std::set<std::string> FloatInitializers(const ir::Graph& g) {
  std::set<std::string> names;
  for (ir::Value v : g.initializers())
    if (ir::IsFloat(g.type(v).dtype)) names.insert(g.name(v));
  return names;
}

std::set<std::string> Names(const std::vector<ParameterReport::Entry>& entries) {
  std::set<std::string> names;
  for (const auto& e : entries) names.insert(e.name);
  return names;
}

TEST(TrainGraph, EveryFloatInitializerOfAnImportedModelIsAParameter) {
  for (const std::string& route : amptrain::testing::ParamRoutes()) {
    SCOPED_TRACE(route);
    std::unique_ptr<ir::Graph> model = Imported(*amptrain::testing::BuildRoute(route, ir::DType::kFloat32));
    ASSERT_TRUE(model);
    auto t = BuildTrainGraph(*model, {});
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(std::set<std::string>(t->params.begin(), t->params.end()), FloatInitializers(*model));
    EXPECT_EQ(Names(t->parameters.trained), FloatInitializers(*model));
    EXPECT_TRUE(t->parameters.frozen.empty());
    for (const auto& e : t->parameters.untrained)
      EXPECT_EQ(e.reason, "integer or bool initializers are not parameters") << e.name;
  }
}

// What the default import prevents: folding for inference consumes the weight.
TEST(TrainGraph, AnInferenceFoldedImportHasLostTheTransposedWeight) {
  importer::ImportOptions inference;
  inference.keep_float_initializers = false;
  std::unique_ptr<ir::Graph> model =
      Imported(*amptrain::testing::BuildRoute("transpose", ir::DType::kFloat32), inference);
  ASSERT_TRUE(model);
  EXPECT_FALSE(model->FindValue("w").valid());
  auto t = BuildTrainGraph(*model, {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->params, (std::vector<std::string>{"b"}));
}

// logits = MatMul(Pow(x, p), w) with p a 0-d float initializer (2.0), as the
// dynamo exporter's default export writes x.pow(2) (its RMSNorm).
std::unique_ptr<ir::Graph> PowOfAScalar() {
  auto g = std::make_unique<ir::Graph>();
  ir::Value x = g->AddInput("x", ir::TensorType::Of(ir::DType::kFloat32, std::vector<int64_t>{2, 3}));
  ir::Value p = g->AddInitializer("p", ir::Tensor::Scalar(2.0f));
  ir::Value w = g->AddInitializer("w", amptrain::testing::RouteTensor(ir::DType::kFloat32, {3, 4}, 7));
  ir::Node* pow = g->AddNode(ir::OpKind::kPow, {x, p}, 1, "pow");
  ir::Node* mm = g->AddNode(ir::OpKind::kMatMul, {pow->output(0), w}, 1, "logits", {"logits"});
  g->AddOutput(mm->output(0));
  EXPECT_TRUE(g->InferShapes().ok());
  return Imported(*g);
}

// `model` trains `trained` by default and leaves `constant` untrained with a
// reason that says `why` and names --train-all; with train_all it trains
// both.
void ExpectConstantLike(const ir::Graph& model, const std::set<std::string>& trained, const std::string& constant,
                        const std::string& why) {
  auto t = BuildTrainGraph(model, {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(std::set<std::string>(t->params.begin(), t->params.end()), trained);
  ASSERT_EQ(t->parameters.untrained.size(), 1u);
  EXPECT_EQ(t->parameters.untrained[0].name, constant);
  EXPECT_NE(t->parameters.untrained[0].reason.find(why), std::string::npos) << t->parameters.untrained[0].reason;
  EXPECT_NE(t->parameters.untrained[0].reason.find("--train-all"), std::string::npos);
  TrainGraphOptions opts;
  opts.train_all = true;
  auto all = BuildTrainGraph(model, opts);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  std::set<std::string> every = trained;
  every.insert(constant);
  EXPECT_EQ(std::set<std::string>(all->params.begin(), all->params.end()), every);
}

// A 0-d Pow exponent is a constant unless asked for: its gradient is NaN
// wherever x < 0, which would skip every step.
TEST(TrainGraph, ZeroDimPowExponentsAreConstantsUnlessAskedFor) {
  std::unique_ptr<ir::Graph> model = PowOfAScalar();
  ASSERT_TRUE(model);
  ExpectConstantLike(*model, {"w"}, "p", "Pow exponent");
}

// h = MatMul(x, Concat(Cos(f), Sin(f))) + Sin(MatMul(x, wf)) with f = pos * inv_freq
// (pos a Constant [4, 1]: a rotary-style table of constants), logits = MatMul(h, w).
std::unique_ptr<ir::Graph> SinusoidTable() {
  auto g = std::make_unique<ir::Graph>();
  auto f32 = [](std::vector<int64_t> dims) { return ir::TensorType::Of(ir::DType::kFloat32, std::move(dims)); };
  ir::Value x = g->AddInput("x", f32({2, 4}));
  ir::Value inv_freq = g->AddInitializer("inv_freq", ir::Tensor::Floats({1.0f, 0.01f}, {2}));
  ir::Value wf = g->AddInitializer("wf", amptrain::testing::RouteTensor(ir::DType::kFloat32, {4, 4}, 3));
  ir::Value w = g->AddInitializer("w", amptrain::testing::RouteTensor(ir::DType::kFloat32, {4, 3}, 5));
  ir::Node* pos = g->AddNode(ir::OpKind::kConstant, {}, 1, "pos");
  pos->attrs().Set("value", ir::Tensor::Floats({0, 1, 2, 3}, {4, 1}));
  auto op = [&](ir::OpKind k, std::vector<ir::Value> in, const char* name) {
    return g->AddNode(k, std::move(in), 1, name)->output(0);
  };
  ir::Value f = op(ir::OpKind::kMul, {pos->output(0), inv_freq}, "freqs");
  ir::Node* table = g->AddNode(ir::OpKind::kConcat, {op(ir::OpKind::kCos, {f}, "cos"), op(ir::OpKind::kSin, {f}, "sin")},
                               1, "table");
  table->attrs().Set("axis", int64_t{1});
  ir::Value h = op(ir::OpKind::kAdd,
                   {op(ir::OpKind::kMatMul, {x, table->output(0)}, "rotate"),
                    op(ir::OpKind::kSin, {op(ir::OpKind::kMatMul, {x, wf}, "fourier")}, "fourier_sin")},
                   "h");
  ir::Node* logits = g->AddNode(ir::OpKind::kMatMul, {h, w}, 1, "logits", {"logits"});
  g->AddOutput(logits->output(0));
  EXPECT_TRUE(g->InferShapes().ok());
  return Imported(*g);
}

// The frequencies of a sinusoid of constants (Llama's rotary inv_freq, a
// PyTorch buffer) are constants; learned Fourier features, Sin(x W), are not.
TEST(TrainGraph, SinusoidFrequenciesOfConstantsAreConstantsUnlessAskedFor) {
  std::unique_ptr<ir::Graph> model = SinusoidTable();
  ASSERT_TRUE(model);
  ExpectConstantLike(*model, {"w", "wf"}, "inv_freq", "sinusoid");
}

// x [2, 8, 6] + table[:8] -> MatMul(w) -> ReduceMean over the positions:
// `table` [64, 6] a sinusoidal position table as Whisper's sinusoids() makes
// it (float32 sin/cos in two halves) or interleaved, or a learned one.
std::unique_ptr<ir::Graph> PositionTable(const std::string& kind) {
  auto g = std::make_unique<ir::Graph>();
  const int64_t n = 64, d = 6;
  ir::Tensor table = *ir::Tensor::Zeros(ir::DType::kFloat32, {n, d});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < d / 2; ++k) {
      const float f = std::exp(-std::log(10000.0f) / (d / 2 - 1) * static_cast<float>(k));
      const float a = static_cast<float>(i) * f;
      const bool inter = kind == "interleaved";
      float* row = table.data<float>() + i * d;
      row[inter ? 2 * k : k] = std::sin(a);
      row[inter ? 2 * k + 1 : d / 2 + k] = std::cos(a);
    }
  if (kind == "learned") table.data<float>()[5 * d + 1] += 0.01f;  // one trained step away from the table
  ir::Value x = g->AddInput("x", ir::TensorType::Of(ir::DType::kFloat32, {2, 8, d}));
  ir::Value pos = g->AddInitializer("embed_positions.weight", table);
  ir::Value w = g->AddInitializer("w", amptrain::testing::RouteTensor(ir::DType::kFloat32, {d, 3}, 5));
  auto ints = [&](std::vector<int64_t> v) {  // Constant nodes: integer initializers would be listed as untrained
    ir::Node* c = g->AddNode(ir::OpKind::kConstant, {});
    c->attrs().Set("value", ir::Tensor::Int64s(v, {static_cast<int64_t>(v.size())}));
    return c->output(0);
  };
  ir::Node* slice = g->AddNode(ir::OpKind::kSlice, {pos, ints({0}), ints({8})});
  ir::Value h = g->AddNode(ir::OpKind::kAdd, {x, slice->output(0)})->output(0);
  ir::Value y = g->AddNode(ir::OpKind::kMatMul, {h, w})->output(0);
  ir::Node* mean = g->AddNode(ir::OpKind::kReduceMean, {y, ints({1})});
  mean->attrs().Set("keepdims", int64_t{0});
  ir::Node* logits = g->AddNode(ir::OpKind::kIdentity, {mean->output(0)}, 1, "logits", {"logits"});
  g->AddOutput(logits->output(0));
  EXPECT_TRUE(g->InferShapes().ok()) << g->InferShapes().ToString();
  return Imported(*g);
}

// A precomputed sinusoidal position table (Whisper's encoder embed_positions,
// frozen in PyTorch) is a constant unless asked for, in either layout; a
// learned table that has left the formula trains.
TEST(TrainGraph, SinusoidalPositionTablesAreConstantsUnlessAskedFor) {
  for (const char* kind : {"halves", "interleaved"}) {
    SCOPED_TRACE(kind);
    std::unique_ptr<ir::Graph> model = PositionTable(kind);
    ASSERT_TRUE(model);
    ExpectConstantLike(*model, {"w"}, "embed_positions.weight", "sinusoidal position table");
  }
  std::unique_ptr<ir::Graph> learned = PositionTable("learned");
  ASSERT_TRUE(learned);
  auto t = BuildTrainGraph(*learned, {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(std::set<std::string>(t->params.begin(), t->params.end()),
            (std::set<std::string>{"embed_positions.weight", "w"}));
}

// A constant that torch.export lifted out of forward() (named
// "...lifted_tensor_N") is not a parameter; a parameter whose name merely
// contains the words is.
TEST(TrainGraph, ConstantsLiftedByTorchExportAreNotParameters) {
  auto g = std::make_unique<ir::Graph>();
  ir::Value x = g->AddInput("x", ir::TensorType::Of(ir::DType::kFloat32, {2, 3}));
  ir::Value lifted = g->AddInitializer("encoder.attn.lifted_tensor_2", ir::Tensor::Floats({4.0f, 4.0f, 4.0f}, {3}));
  ir::Value named = g->AddInitializer("lifted_tensor_gate", amptrain::testing::RouteTensor(ir::DType::kFloat32, {3}, 4));
  ir::Value w = g->AddInitializer("w", amptrain::testing::RouteTensor(ir::DType::kFloat32, {3, 4}, 7));
  ir::Node* scaled = g->AddNode(ir::OpKind::kMul, {x, lifted}, 1, "scale");
  ir::Node* gated = g->AddNode(ir::OpKind::kMul, {scaled->output(0), named}, 1, "gate");
  ir::Node* mm = g->AddNode(ir::OpKind::kMatMul, {gated->output(0), w}, 1, "logits", {"logits"});
  g->AddOutput(mm->output(0));
  ASSERT_TRUE(g->InferShapes().ok());
  std::unique_ptr<ir::Graph> model = Imported(*g);
  ASSERT_TRUE(model);
  ExpectConstantLike(*model, {"lifted_tensor_gate", "w"}, "encoder.attn.lifted_tensor_2", "torch.export");
}

// Gemma's scaled word embedding: ids -> Gather(table [V, 16]) -> Mul by a 0-d
// "embed_tokens.embed_scale" of `scale` -> MatMul -> logits.
std::unique_ptr<ir::Graph> ScaledEmbedding(float scale) {
  auto g = std::make_unique<ir::Graph>();
  ir::Value ids = g->AddInput("ids", ir::TensorType::Of(ir::DType::kInt64, {2}));
  ir::Value table = g->AddInitializer("model.embed_tokens.weight",
                                      amptrain::testing::RouteTensor(ir::DType::kFloat32, {11, 16}, 3));
  ir::Value s = g->AddInitializer("model.embed_tokens.embed_scale", ir::Tensor::Scalar(scale));
  ir::Value w = g->AddInitializer("w", amptrain::testing::RouteTensor(ir::DType::kFloat32, {16, 4}, 7));
  ir::Value e = g->AddNode(ir::OpKind::kGather, {table, ids})->output(0);
  ir::Value scaled = g->AddNode(ir::OpKind::kMul, {e, s})->output(0);
  g->AddOutput(g->AddNode(ir::OpKind::kMatMul, {scaled, w}, 1, "logits", {"logits"})->output(0));
  EXPECT_TRUE(g->InferShapes().ok());
  return g;
}

// Its embed_scale (sqrt(16) = 4, a buffer in PyTorch) is a constant unless
// asked for; one that is not sqrt of the width it scales trains.
TEST(TrainGraph, GemmasEmbedScaleIsAConstantUnlessAskedFor) {
  ExpectConstantLike(*ScaledEmbedding(4.0f), {"model.embed_tokens.weight", "w"}, "model.embed_tokens.embed_scale",
                     "Gemma");
  auto other = BuildTrainGraph(*ScaledEmbedding(3.0f), {});
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_EQ(std::set<std::string>(other->params.begin(), other->params.end()),
            (std::set<std::string>{"model.embed_tokens.weight", "model.embed_tokens.embed_scale", "w"}));
}

std::set<std::string> Statistics(const ir::Graph& g) {
  std::set<std::string> stats;
  for (ir::Value v : g.initializers())
    if (g.name(v).find("running_") != std::string::npos) stats.insert(g.name(v));
  return stats;
}

// x [2, 8] -> MatMul(w1) -> GELU as the dynamo export writes it (Constant
// scalars) -> MatMul(w2) -> logits.
std::unique_ptr<ir::Graph> GeluMlp() {
  auto g = std::make_unique<ir::Graph>();
  ir::Value x = g->AddInput("x", ir::TensorType::Of(ir::DType::kFloat32, {2, 8}));
  ir::Value w1 = g->AddInitializer("w1", amptrain::testing::RouteTensor(ir::DType::kFloat32, {8, 6}, 7));
  ir::Value w2 = g->AddInitializer("w2", amptrain::testing::RouteTensor(ir::DType::kFloat32, {6, 3}, 8));
  auto scalar = [&](float v) {
    ir::Node* c = g->AddNode(ir::OpKind::kConstant, {});
    c->attrs().Set("value", ir::Tensor::Floats({v}, {}));
    return c->output(0);
  };
  auto op = [&](ir::OpKind k, std::vector<ir::Value> in) { return g->AddNode(k, std::move(in))->output(0); };
  ir::Value h = op(ir::OpKind::kMatMul, {x, w1});
  ir::Value e = op(ir::OpKind::kErf, {op(ir::OpKind::kMul, {h, scalar(0.70710678f)})});
  ir::Value gelu = op(ir::OpKind::kMul, {op(ir::OpKind::kMul, {h, scalar(0.5f)}), op(ir::OpKind::kAdd, {e, scalar(1.0f)})});
  ir::Node* logits = g->AddNode(ir::OpKind::kMatMul, {gelu, w2}, 1, "logits", {"logits"});
  g->AddOutput(logits->output(0));
  EXPECT_TRUE(g->InferShapes().ok());
  return g;
}

// The training graph computes an exported GELU as one Gelu (and one
// GeluGrad), unless the AMP policy sets a precision for one of its ops by
// type: then the policy means the same nodes as in `convert`.
TEST(TrainGraph, ExportedGeluTrainsAsOneNodeUnlessThePolicyNamesItsOps) {
  std::unique_ptr<ir::Graph> model = GeluMlp();
  auto fused = BuildTrainGraph(*model, {});
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  EXPECT_EQ(CountNodes(*fused->graph, ir::OpKind::kGelu), 1u);
  EXPECT_EQ(CountNodes(*fused->graph, ir::OpKind::kGeluGrad), 1u);
  EXPECT_EQ(CountNodes(*fused->graph, ir::OpKind::kErf), 0u);
  EXPECT_EQ(Names(fused->parameters.trained), (std::set<std::string>{"w1", "w2"}));
  EXPECT_EQ(CountNodes(*model, ir::OpKind::kErf), 1u) << "the model itself (what export writes) is unchanged";
  TrainGraphOptions opts;
  opts.amp = amp::Policy{};
  opts.amp->level = amp::Level::kO2;
  opts.amp->fp32_ops = {"Erf"};
  auto kept = BuildTrainGraph(*model, opts);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(CountNodes(*kept->graph, ir::OpKind::kGelu), 0u);
  EXPECT_EQ(CountNodes(*kept->graph, ir::OpKind::kErf), 1u);
}

// x [2, 3, 8] -> nn.Linear(8, 5) as the exporters write it on a 3-D input
// (MatMul(x, Transpose(w)) + b; with `pre_transposed`, the same function with
// w^T stored as the initializer "wt" and no Transpose) -> Flatten -> MatMul
// -> logits [2, 4].
std::unique_ptr<ir::Graph> LinearOnTokens(bool pre_transposed) {
  auto g = std::make_unique<ir::Graph>();
  ir::Value x = g->AddInput("x", ir::TensorType::Of(ir::DType::kFloat32, {2, 3, 8}));
  ir::Tensor w = amptrain::testing::RouteTensor(ir::DType::kFloat32, {5, 8}, 7);
  ir::Value b = g->AddInitializer("b", amptrain::testing::RouteTensor(ir::DType::kFloat32, {5}, 9));
  ir::Value wt;
  if (pre_transposed) {
    ir::Tensor t = *ir::Tensor::Zeros(ir::DType::kFloat32, {8, 5});
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t k = 0; k < 8; ++k) t.data<float>()[k * 5 + i] = w.data<float>()[i * 8 + k];
    wt = g->AddInitializer("wt", std::move(t));
  } else {
    ir::Node* transpose = g->AddNode(ir::OpKind::kTranspose, {g->AddInitializer("w", std::move(w))}, 1, "fc/Transpose");
    transpose->attrs().Set("perm", std::vector<int64_t>{1, 0});
    wt = transpose->output(0);
  }
  ir::Value h = g->AddNode(ir::OpKind::kMatMul, {x, wt}, 1, "fc/MatMul", {"fc_out"})->output(0);
  ir::Value a = g->AddNode(ir::OpKind::kAdd, {h, b}, 1, "fc/Add")->output(0);
  ir::Node* flat = g->AddNode(ir::OpKind::kFlatten, {a}, 1, "flat");
  flat->attrs().Set("axis", int64_t{1});
  ir::Value w2 = g->AddInitializer("w2", amptrain::testing::RouteTensor(ir::DType::kFloat32, {15, 4}, 8));
  g->AddOutput(g->AddNode(ir::OpKind::kMatMul, {flat->output(0), w2}, 1, "logits", {"logits"})->output(0));
  EXPECT_TRUE(g->InferShapes().ok());
  return g;
}

// The fixed data of GradientsOf's step: x [2, 3, 8], normal, seed 3.
ir::Tensor StepInput() {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  ir::Tensor x = *ir::Tensor::Zeros(ir::DType::kFloat32, {2, 3, 8});
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = normal(rng);
  return x;
}

// The loss and each parameter's gradient (by parameter name) of one
// training step of `model` on fixed data.
std::map<std::string, ir::Tensor> GradientsOf(const ir::Graph& model, const TrainGraph& t) {
  std::map<std::string, ir::Tensor> inputs;
  for (ir::Value v : model.initializers()) {
    const std::string& name = model.name(v);
    const bool state = std::count(t.params.begin(), t.params.end(), name) ||
                       std::count(t.running_stats.begin(), t.running_stats.end(), name);
    if (state) inputs[name] = *model.ConstantValue(v);  // the rest stay constants of the graph
  }
  inputs[t.data_inputs[0]] = StepInput();
  inputs[t.target_input] = ir::Tensor::Int64s({1, 3}, {2});
  inputs[t.loss_scale] = ir::Tensor::Scalar(1.0f);
  SessionOptions so;
  so.training = true;
  so.threads = 1;
  auto session = InferenceSession::Create(t.graph->Clone(), so);
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  if (!session.ok()) return {};
  auto out = (*session)->Run(inputs);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return {};
  std::map<std::string, ir::Tensor> result;
  for (size_t i = 0; i < out->size(); ++i) {
    const std::string& name = t.graph->name(t.graph->outputs()[i]);
    if (name == t.loss) result["loss"] = (*out)[i];
    for (const auto& [param, grad] : t.grads)
      if (grad == name) result[param] = (*out)[i];
  }
  return result;
}

// A Linear layer on tokens reads its weight through Transpose -> MatMul; the
// training graph computes it as one Gemm against W in place (no Transpose,
// forward or backward), and W still trains, with the gradient of the same
// function written with W^T stored (transposed back), and the same loss.
TEST(TrainGraph, ATransposedWeightIsReadInPlaceAndStillTrains) {
  std::unique_ptr<ir::Graph> model = LinearOnTokens(false), stored = LinearOnTokens(true);
  auto fused = BuildTrainGraph(*model, {});
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  EXPECT_EQ(CountNodes(*fused->graph, ir::OpKind::kTranspose), 0u);
  EXPECT_EQ(Names(fused->parameters.trained), (std::set<std::string>{"w", "b", "w2"}));
  EXPECT_EQ(CountNodes(*model, ir::OpKind::kTranspose), 1u) << "the model itself (what export writes) is unchanged";
  auto plain = BuildTrainGraph(*stored, {});
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  std::map<std::string, ir::Tensor> got = GradientsOf(*model, *fused), want = GradientsOf(*stored, *plain);
  ASSERT_TRUE(got.count("w") && want.count("wt") && got.count("loss") && want.count("loss"));
  EXPECT_TRUE(got["loss"] == want["loss"]);
  EXPECT_TRUE(got["b"] == want["b"]);
  EXPECT_TRUE(got["w2"] == want["w2"]);
  const ir::Tensor &dw = got["w"], &dwt = want["wt"];
  ASSERT_EQ(dw.dims(), (std::vector<int64_t>{5, 8}));
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t k = 0; k < 8; ++k)  // sums of 6 products: the same up to their order
      EXPECT_NEAR(dw.data<float>()[i * 8 + k], dwt.data<float>()[k * 5 + i], 1e-6f) << "dW[" << i << ", " << k << "]";
  // A policy that names MatMul by type keeps the exported pair.
  TrainGraphOptions opts;
  opts.amp = amp::Policy{};
  opts.amp->level = amp::Level::kO2;
  opts.amp->fp32_ops = {"MatMul"};
  auto kept = BuildTrainGraph(*model, opts);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_GE(CountNodes(*kept->graph, ir::OpKind::kTranspose), 1u);
}

// x [2, 8] -> MatMul -> Mul(h, Sigmoid(h)) (nn.SiLU as both exporters write it) -> MatMul -> logits.
std::unique_ptr<ir::Graph> SiluMlp() {
  auto g = std::make_unique<ir::Graph>();
  ir::Value x = g->AddInput("x", ir::TensorType::Of(ir::DType::kFloat32, {2, 8}));
  ir::Value w1 = g->AddInitializer("w1", amptrain::testing::RouteTensor(ir::DType::kFloat32, {8, 6}, 7));
  ir::Value w2 = g->AddInitializer("w2", amptrain::testing::RouteTensor(ir::DType::kFloat32, {6, 3}, 8));
  ir::Value h = g->AddNode(ir::OpKind::kMatMul, {x, w1})->output(0);
  ir::Value s = g->AddNode(ir::OpKind::kSigmoid, {h}, 1, "act/Sigmoid")->output(0);
  ir::Value silu = g->AddNode(ir::OpKind::kMul, {h, s}, 1, "act/Mul")->output(0);
  g->AddOutput(g->AddNode(ir::OpKind::kMatMul, {silu, w2}, 1, "logits", {"logits"})->output(0));
  EXPECT_TRUE(g->InferShapes().ok());
  return g;
}

// The training graph computes an exported SiLU as one Silu (and one
// SiluGrad), unless the AMP policy names Sigmoid or Mul by type, or one of
// the pair's nodes by name: then the policy finds the nodes it names.
TEST(TrainGraph, ExportedSiluTrainsAsOneNodeUnlessThePolicyNamesIt) {
  std::unique_ptr<ir::Graph> model = SiluMlp();
  auto fused = BuildTrainGraph(*model, {});
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  EXPECT_EQ(CountNodes(*fused->graph, ir::OpKind::kSilu), 1u);
  EXPECT_EQ(CountNodes(*fused->graph, ir::OpKind::kSiluGrad), 1u);
  EXPECT_EQ(CountNodes(*fused->graph, ir::OpKind::kSigmoid), 0u);
  EXPECT_EQ(CountNodes(*model, ir::OpKind::kSigmoid), 1u) << "the model itself (what export writes) is unchanged";
  for (int how = 0; how < 2; ++how) {
    TrainGraphOptions opts;
    opts.amp = amp::Policy{};
    opts.amp->level = amp::Level::kO2;
    if (how == 0) opts.amp->fp32_ops = {"Sigmoid"};
    else opts.amp->node_overrides.push_back({"act/Sigmoid", false, ir::DType::kFloat32});
    auto kept = BuildTrainGraph(*model, opts);
    ASSERT_TRUE(kept.ok()) << kept.status().ToString();
    EXPECT_EQ(CountNodes(*kept->graph, ir::OpKind::kSilu), 0u) << how;
    EXPECT_EQ(CountNodes(*kept->graph, ir::OpKind::kSigmoid), 1u) << how;
  }
}

// y = x + x * (Cast(mask) / 0.8) with mask = Less(U, 0.8), U uniform random
// numbers of shape [4, 1]: torchvision's StochasticDepth as TorchScript
// exports it; `variant` 1 is dynamo's (CastLike, the comparison written
// Greater(0.8, U)), 2 a RandomUniform of static shape, 3 a mask that is not
// scaled back (y = x + x * Cast(mask)).
std::unique_ptr<ir::Graph> StochasticDepth(int variant) {
  using ir::OpKind;
  auto g = std::make_unique<ir::Graph>();
  ir::Value x = g->AddInput("x", ir::TensorType::Of(ir::DType::kFloat32, {4, 8}));
  auto constant = [&](ir::Tensor t) {
    ir::Node* c = g->AddNode(OpKind::kConstant, {});
    c->attrs().Set("value", std::move(t));
    return c->output(0);
  };
  auto op = [&](OpKind k, std::vector<ir::Value> in) { return g->AddNode(k, std::move(in))->output(0); };
  ir::Value u;
  if (variant == 2) {
    ir::Node* r = g->AddNode(OpKind::kRandomUniform, {});
    r->attrs().Set("shape", std::vector<int64_t>{4, 1});
    u = r->output(0);
  } else {
    u = op(OpKind::kRandomUniformLike, {op(OpKind::kExpand, {constant(ir::Tensor::Scalar(0.0f)),
                                                              constant(ir::Tensor::Int64s({4, 1}, {2}))})});
  }
  const ir::Value keep = constant(ir::Tensor::Scalar(0.8f));
  ir::Value mask = variant == 1 ? op(OpKind::kGreater, {keep, u}) : op(OpKind::kLess, {u, keep});
  ir::Value m;
  if (variant == 1) {
    m = op(OpKind::kCastLike, {mask, x});
  } else {
    ir::Node* cast = g->AddNode(OpKind::kCast, {mask});
    cast->attrs().Set("to", int64_t{1});
    m = cast->output(0);
  }
  ir::Value dropped = variant == 3 ? op(OpKind::kMul, {x, m}) : op(OpKind::kMul, {op(OpKind::kDiv, {m, keep}), x});
  g->AddOutput(g->AddNode(OpKind::kAdd, {x, dropped}, 1, "y", {"y"})->output(0));
  EXPECT_TRUE(g->InferShapes().ok());
  return g;
}

// Inference mode (export and evaluation) takes each such mask at its
// expectation, as the module's eval mode does: y = 2x exactly, the scaled
// mask's chain gone (y = Add(x, x)), no random node left; the unscaled mask
// is 0.8 (y = x + 0.8 x). Random numbers that are not such a mask stay
// (with a warning).
TEST(TrainGraph, InferenceModeTakesStochasticDepthMasksAtTheirExpectation) {
  std::vector<float> xs(32);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = 0.37f * static_cast<float>(i) - 5.0f;
  const ir::Tensor x = ir::Tensor::Floats(xs, {4, 8});
  for (int variant = 0; variant < 4; ++variant) {
    std::unique_ptr<ir::Graph> g = StochasticDepth(variant);
    ASSERT_TRUE(ToInferenceMode(*g).ok()) << variant;
    if (variant < 3) {
      EXPECT_EQ(g->nodes().size(), 2u) << variant << ": the input and Add(x, x)";
    }
    for (ir::OpKind random : {ir::OpKind::kRandomUniformLike, ir::OpKind::kRandomUniform, ir::OpKind::kLess,
                              ir::OpKind::kGreater})
      EXPECT_EQ(CountNodes(*g, random), 0u) << variant << ": " << ir::Schema(random).name;
    auto session = InferenceSession::Create(std::move(g), {});
    ASSERT_TRUE(session.ok()) << session.status().ToString();
    auto y = (*session)->Run({{"x", x}});
    ASSERT_TRUE(y.ok()) << y.status().ToString();
    for (size_t i = 0; i < xs.size(); ++i)
      EXPECT_EQ((*y)[0].data<float>()[i], variant == 3 ? xs[i] + xs[i] * 0.8f : 2.0f * xs[i]) << variant << " at " << i;
  }
  // The keep probability as a float initializer (a "parameter" of the
  // training graph: Div's divisor gets a gradient): the evaluation graph
  // still takes it as a state input when the mask's chain is gone.
  {
    std::unique_ptr<ir::Graph> g = StochasticDepth(0);
    for (ir::Node* n : g->nodes())
      if (n->op() == ir::OpKind::kDiv) {
        const ir::Value keep = g->AddInitializer("keep", ir::Tensor::Scalar(0.8f));
        g->SetInput(n, 1, keep);
      }
    ASSERT_TRUE(g->InferShapes().ok());
    auto train = BuildTrainGraph(*g, {});
    ASSERT_TRUE(train.ok()) << train.status().ToString();
    ASSERT_NE(std::find(train->params.begin(), train->params.end(), "keep"), train->params.end());
    auto eval = BuildEvalGraph(*g, {}, train->params);
    ASSERT_TRUE(eval.ok()) << eval.status().ToString();
    EXPECT_EQ(CountNodes(*eval->graph, ir::OpKind::kRandomUniformLike), 0u);
  }
  auto noise = std::make_unique<ir::Graph>();
  ir::Value v = noise->AddInput("x", ir::TensorType::Of(ir::DType::kFloat32, {4, 8}));
  ir::Value n = noise->AddNode(ir::OpKind::kRandomNormalLike, {v})->output(0);
  noise->AddOutput(noise->AddNode(ir::OpKind::kAdd, {v, n})->output(0));
  ASSERT_TRUE(noise->InferShapes().ok());
  ASSERT_TRUE(ToInferenceMode(*noise).ok());
  EXPECT_EQ(CountNodes(*noise, ir::OpKind::kRandomNormalLike), 1u) << "noise that is not a mask is not replaced";
}

TEST(Freeze, PatternsResolveToParametersOnly) {
  std::unique_ptr<ir::Graph> g = SmallCnn(4);
  const std::set<std::string> stats = Statistics(*g);
  ASSERT_EQ(stats.size(), 4u);
  auto frozen = ResolveFreeze(*g, {"re:features\\.[01]\\..*", "classifier.4.bias"}, stats);
  ASSERT_TRUE(frozen.ok()) << frozen.status().ToString();
  EXPECT_EQ(*frozen, (std::set<std::string>{"features.0.weight", "features.0.bias", "features.1.weight",
                                            "features.1.bias", "classifier.4.bias"}));  // no running statistic
  struct Bad {
    std::string pattern, fragment;
  };
  for (const Bad& b : {Bad{"classifier.9.weight", "no initializer of that name"},
                       Bad{"re:classifier\\.9\\..*", "matches no parameter"},
                       Bad{"features.1.running_mean", "running statistic"}, Bad{"re:(", "freeze pattern 're:('"},
                       Bad{"", "freeze pattern ''"}}) {
    auto r = ResolveFreeze(*g, {b.pattern}, stats);
    ASSERT_FALSE(r.ok()) << b.pattern;
    EXPECT_NE(r.status().message().find(b.fragment), std::string::npos) << r.status().message();
  }
  std::unique_ptr<ir::Graph> gather = amptrain::testing::BuildRoute("gather", ir::DType::kFloat32);
  auto r = ResolveFreeze(*gather, {"positions"}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("an int64 initializer"), std::string::npos) << r.status().message();
}

TEST(Freeze, FrozenParametersStayBitwiseWhileTheOthersTrain) {
  std::unique_ptr<ir::Graph> model = SmallCnn(4);
  TrainConfig config;
  config.graph.num_classes = 4;
  config.graph.freeze = {"re:features\\.0\\..*"};
  config.optimizer.kind = "sgd";
  config.optimizer.lr = 0.1f;
  config.threads = 1;
  auto trainer = Trainer::Create(*model, config);
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  const ParameterReport& report = (*trainer)->parameter_report();
  EXPECT_EQ(Names(report.frozen), (std::set<std::string>{"features.0.weight", "features.0.bias"}));
  EXPECT_EQ(Names(report.statistics), Statistics(*model));
  EXPECT_TRUE(report.untrained.empty());
  EXPECT_EQ(report.trained.size() + report.frozen.size() + report.statistics.size(), model->initializers().size());
  EXPECT_EQ(report.Lines()[1], "not trained (frozen by --freeze): features.0.weight, features.0.bias");

  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  ir::Tensor images = *ir::Tensor::Zeros(ir::DType::kFloat32, {8, 1, 8, 8});
  for (int64_t i = 0; i < images.num_elements(); ++i) images.data<float>()[i] = normal(rng);
  ir::Tensor labels = ir::Tensor::Int64s({0, 1, 2, 3, 3, 2, 1, 0}, {8});
  for (int step = 0; step < 3; ++step) ASSERT_TRUE((*trainer)->Step(images, labels).ok());
  auto trained = (*trainer)->TrainedModel();
  ASSERT_TRUE(trained.ok()) << trained.status().ToString();
  for (ir::Value v : model->initializers()) {
    const std::string& name = model->name(v);
    const bool same = *(*trained)->ConstantValue((*trained)->FindValue(name)) == *model->ConstantValue(v);
    if (name.rfind("features.0.", 0) == 0) {
      EXPECT_TRUE(same) << name << " is frozen but changed";
    } else if (name.find("weight") != std::string::npos) {
      EXPECT_FALSE(same) << name << " did not train";
    }
  }
}

// A quantization-aware model: w1 fake-quantized per output column (int8,
// axis 1), the hidden activation per tensor (uint8, a small scale, so that
// some values saturate), as PyTorch's QAT exports both.
std::unique_ptr<ir::Graph> QatMlp() {
  auto g = std::make_unique<ir::Graph>();
  g->info().opset = 17;
  ir::Value x = g->AddInput("x", ir::TensorType::Of(ir::DType::kFloat32, {2, 3, 8}));
  ir::Value w1 = g->AddInitializer("w1", amptrain::testing::RouteTensor(ir::DType::kFloat32, {8, 6}, 7));
  ir::Value w2 = g->AddInitializer("w2", amptrain::testing::RouteTensor(ir::DType::kFloat32, {18, 4}, 8));
  auto pair = [&](ir::Value v, ir::Value scale, ir::Value zp, int64_t axis, const std::string& name) {
    ir::Node* q = g->AddNode(ir::OpKind::kQuantizeLinear, {v, scale, zp}, 1, name + "/q");
    ir::Node* dq = g->AddNode(ir::OpKind::kDequantizeLinear, {q->output(0), scale, zp}, 1, name + "/dq");
    q->attrs().Set("axis", axis);
    dq->attrs().Set("axis", axis);
    return dq->output(0);
  };
  ir::Tensor zp8 = *ir::Tensor::Zeros(ir::DType::kInt8, {6});
  ir::Value wq = pair(w1, g->AddInitializer("w1_scale", ir::Tensor::Floats({0.01f, 0.02f, 0.005f, 0.01f, 0.03f, 0.002f}, {6})),
                      g->AddInitializer("w1_zp", std::move(zp8)), 1, "w1_fq");
  ir::Value h = g->AddNode(ir::OpKind::kMatMul, {x, wq}, 1, "fc")->output(0);
  ir::Tensor zp = *ir::Tensor::Zeros(ir::DType::kUInt8, {});
  zp.data<uint8_t>()[0] = 100;
  ir::Value hq = pair(h, g->AddInitializer("act_scale", ir::Tensor::Scalar(0.004f)), g->AddInitializer("act_zp", std::move(zp)),
                      1, "act_fq");
  ir::Value r = g->AddNode(ir::OpKind::kRelu, {hq}, 1, "relu")->output(0);
  ir::Node* flat = g->AddNode(ir::OpKind::kFlatten, {r}, 1, "flat");
  flat->attrs().Set("axis", int64_t{1});
  g->AddOutput(g->AddNode(ir::OpKind::kMatMul, {flat->output(0), w2}, 1, "logits", {"logits"})->output(0));
  EXPECT_TRUE(g->InferShapes().ok());
  return g;
}

// Each quantize-dequantize pair trains as one FakeQuantize, whose forward is
// the pair's (the same loss as the unfused model's logits give) and whose
// gradient passes dY where the value was inside the quantized range and 0
// where it saturated: w1's entries whose quantized value falls outside int8
// (|w / scale| > 127.5, the 0.002 column) take no gradient; the rest do.
TEST(TrainGraph, QuantizeDequantizePairsTrainAsFakeQuantize) {
  std::unique_ptr<ir::Graph> model = QatMlp();
  auto t = BuildTrainGraph(*model, {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(CountNodes(*t->graph, ir::OpKind::kFakeQuantize), 2u);
  EXPECT_EQ(CountNodes(*t->graph, ir::OpKind::kQuantizeLinear), 0u);
  EXPECT_EQ(CountNodes(*t->graph, ir::OpKind::kDequantizeLinear), 0u);
  EXPECT_EQ(CountNodes(*model, ir::OpKind::kQuantizeLinear), 2u) << "the model itself (what export writes) is unchanged";
  std::map<std::string, ir::Tensor> g = GradientsOf(*model, *t);
  ASSERT_TRUE(g.count("w1") && g.count("w2") && g.count("loss"));
  const ir::Tensor& w1 = *model->ConstantValue(model->FindValue("w1"));
  const float scale[6] = {0.01f, 0.02f, 0.005f, 0.01f, 0.03f, 0.002f};
  int saturated = 0, passed = 0;
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 6; ++j) {
      const float q = std::nearbyint(w1.data<float>()[i * 6 + j] / scale[j]);
      const double grad = g["w1"].GetAsDouble(i * 6 + j);
      if (q < -128 || q > 127) {
        ++saturated;
        EXPECT_EQ(grad, 0.0) << i << "," << j;
      } else {
        passed += grad != 0.0;
      }
    }
  EXPECT_GT(saturated, 0) << "the test wants saturated weights";
  EXPECT_GT(passed, 24);
  // The same loss as the unfused model's logits (QuantizeLinear and DequantizeLinear kernels).
  std::unique_ptr<ir::Graph> eval = model->Clone();
  ASSERT_TRUE(autodiff::AttachCrossEntropy(*eval, eval->FindValue("logits")).ok());
  SessionOptions so;
  so.threads = 1;
  auto session = InferenceSession::Create(std::move(eval), so);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::map<std::string, ir::Tensor> feeds{{"x", StepInput()}};
  for (ir::Value v : (*session)->graph().inputs())
    if ((*session)->graph().name(v) != "x") feeds[(*session)->graph().name(v)] = ir::Tensor::Int64s({1, 3}, {2});
  auto out = (*session)->Run(feeds);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->back().GetAsDouble(0), g["loss"].GetAsDouble(0));
}

}  // namespace
}  // namespace amptrain::executor::train
