// Training a model whose data inputs are not one float image (issue 10,
// item 4): int32 token ids and a float feature vector, fed by name from a
// data set with named inputs; the ids come as int64 and are converted to
// the model's int32. The loss falls; a batch that does not fit the model's
// inputs is one error naming them.
#include <gtest/gtest.h>

#include <random>

#include "executor/data/dataset.h"
#include "executor/npy.h"
#include "executor/train/trainer.h"
#include "tests/executor/trainer_test_util.h"

namespace amptrain::executor::train {
namespace {

using ir::DType;
using ir::Tensor;
using ir::Value;

constexpr int64_t kVocab = 20, kDim = 8, kSeq = 4, kFeatures = 3, kClasses = 2;

Tensor RandomFloats(std::vector<int64_t> dims, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  Tensor t = *Tensor::Zeros(DType::kFloat32, std::move(dims));
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = normal(rng);
  return t;
}

// ids int32 [batch, 4] -> Gather(table [20, 8]) -> Flatten -> Concat with
// feat float32 [batch, 3] -> Gemm -> logits [batch, 2].
std::unique_ptr<ir::Graph> TokenAndFeatureModel() {
  auto g = std::make_unique<ir::Graph>();
  const ir::Dim batch = ir::Dim::Symbolic("batch");
  Value ids = g->AddInput("ids", ir::TensorType::Of(DType::kInt32, ir::Shape({batch, ir::Dim::Static(kSeq)})));
  Value feat = g->AddInput("feat", ir::TensorType::Of(DType::kFloat32, ir::Shape({batch, ir::Dim::Static(kFeatures)})));
  Value table = g->AddInitializer("table", RandomFloats({kVocab, kDim}, 0.5f, 1));
  Value w = g->AddInitializer("w", RandomFloats({kSeq * kDim + kFeatures, kClasses}, 0.1f, 2));
  Value b = g->AddInitializer("b", RandomFloats({kClasses}, 0.1f, 3));
  ir::Node* gather = g->AddNode(ir::OpKind::kGather, {table, ids});
  ir::Node* flat = g->AddNode(ir::OpKind::kFlatten, {gather->output(0)});
  flat->attrs().Set("axis", int64_t{1});
  ir::Node* concat = g->AddNode(ir::OpKind::kConcat, {flat->output(0), feat});
  concat->attrs().Set("axis", int64_t{1});
  ir::Node* gemm = g->AddNode(ir::OpKind::kGemm, {concat->output(0), w, b}, 1, "head", {"logits"});
  g->AddOutput(gemm->output(0));
  EXPECT_TRUE(g->InferShapes().ok());
  return g;
}

// n samples of int64 ids [kSeq] for input "ids", zeros, and their labels.
data::Dataset IdsData(int64_t n) {
  data::Dataset ds;
  ds.samples = *Tensor::Zeros(DType::kInt64, {n, kSeq});
  ds.sample_dims = {kSeq};
  ds.sample_input = "ids";
  ds.labels = *Tensor::Zeros(DType::kInt64, {n});
  ds.num_classes = kClasses;
  return ds;
}

// The class is whether the first token is below 10; the features are noise.
data::Dataset TokenData(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  data::Dataset ds = IdsData(n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < kSeq; ++j) ds.samples.data<int64_t>()[i * kSeq + j] = rng() % kVocab;
    ds.labels.data<int64_t>()[i] = ds.samples.data<int64_t>()[i * kSeq] < 10 ? 0 : 1;
  }
  ds.more_inputs.push_back({"feat", RandomFloats({n, kFeatures}, 1.0f, seed + 1)});
  return ds;
}

// The mean training loss of each of `epochs` epochs over `batches`.
std::vector<double> EpochLosses(Trainer& trainer, data::BatchIterator& batches, int epochs) {
  std::vector<double> losses;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    double sum = 0.0;
    int64_t count = 0;
    data::Batch batch;
    while (true) {
      auto more = batches.Next(&batch);
      EXPECT_TRUE(more.ok()) << more.status().ToString();
      if (!more.ok() || !*more) break;
      auto r = trainer.Step(batch);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      if (!r.ok()) return losses;
      sum += r->loss * static_cast<double>(r->count);
      count += r->count;
    }
    batches.NextEpoch();
    losses.push_back(sum / static_cast<double>(std::max<int64_t>(count, 1)));
  }
  return losses;
}

TrainConfig Config() {
  TrainConfig c;
  c.graph.num_classes = kClasses;
  c.optimizer.kind = "adam";
  c.optimizer.lr = 0.05f;
  c.schedule.base_lr = 0.05f;
  c.threads = 1;
  return c;
}

TEST(MultiInputTraining, TokenIdsAndFeaturesTrainByNameAndTheLossFalls) {
  std::unique_ptr<ir::Graph> model = TokenAndFeatureModel();
  auto trainer = Trainer::Create(*model, Config());
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  data::BatchIterator peek(TokenData(8, 7), 8, /*shuffle=*/false, 0, {}, {});
  data::Batch batch;
  ASSERT_TRUE(*peek.Next(&batch));
  ASSERT_EQ(batch.inputs.size(), 2u);
  EXPECT_EQ(batch.inputs[0].first, "ids");
  EXPECT_EQ(batch.inputs[0].second.dtype(), DType::kInt64);
  data::BatchIterator batches(TokenData(256, 7), 32, /*shuffle=*/true, 1, {}, {});
  std::vector<double> losses = EpochLosses(**trainer, batches, 6);
  ASSERT_EQ(losses.size(), 6u);
  EXPECT_LT(losses.back(), 0.5 * losses.front()) << "first epoch " << losses.front() << ", last " << losses.back();
  // Every parameter trained, the embedding table included (through Gather).
  EXPECT_EQ((*trainer)->parameter_report().trained.size(), 3u);

  data::BatchIterator test(TokenData(64, 99), 32, /*shuffle=*/false, 0, {}, {});
  auto eval = (*trainer)->Evaluate(test);
  ASSERT_TRUE(eval.ok()) << eval.status().ToString();
  EXPECT_GT(eval->accuracy, 0.9);

  // The single-input reader refuses a multi-input set rather than drop an input.
  data::BatchIterator whole(TokenData(8, 1), 4, false, 0, {}, {});
  Tensor x, y;
  EXPECT_FALSE(whole.Next(&x, &y).ok());
}

TEST(MultiInputTraining, ABatchThatDoesNotFitTheInputsIsAnErrorNamingThem) {
  std::unique_ptr<ir::Graph> model = TokenAndFeatureModel();
  auto trainer = Trainer::Create(*model, Config());
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  data::Dataset ds = TokenData(8, 3);
  data::Batch good;
  data::BatchIterator it(ds, 8, false, 0, {}, {});
  ASSERT_TRUE(*it.Next(&good));
  auto expect_error = [&](const data::Batch& b, const std::string& needle) {
    auto r = (*trainer)->Step(b);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  data::Batch missing = good;
  missing.inputs.pop_back();
  expect_error(missing, "the model's input 'feat' gets no data");
  data::Batch unknown = good;
  unknown.inputs[1].first = "features";
  expect_error(unknown, "'features' but the model's data inputs are 'ids', 'feat'");
  data::Batch unnamed = good;
  unnamed.inputs.resize(1);
  unnamed.inputs[0].first = "";
  expect_error(unnamed, "the model has 2 data inputs ('ids', 'feat')");
  data::Batch too_big = good;
  too_big.inputs[0].second = too_big.inputs[0].second.Clone();
  too_big.inputs[0].second.data<int64_t>()[5] = int64_t{1} << 40;
  expect_error(too_big, "input 'ids': value 1099511627776 (element 5) does not fit the model's int32");
  data::Batch wrong_type = good;
  wrong_type.inputs[1].second = *Tensor::Zeros(DType::kBool, {8, kFeatures});
  expect_error(wrong_type, "input 'feat': the data holds bool but the model takes float32");
  EXPECT_EQ((*trainer)->step(), 0);  // nothing ran
}

TEST(MultiInputTraining, TheLossReadsTheNamedOrTheOnlyLogitsShapedOutput) {
  TrainGraphOptions opts;
  opts.num_classes = kClasses;
  std::unique_ptr<ir::Graph> model = TokenAndFeatureModel();
  const ir::Node* head = model->producer(model->FindValue("logits"));
  const Value concat = head->input(0);                                     // [batch, 35]
  const Value embedded = model->producer(head->input(0))->input(0);        // Flatten: [batch, 32]
  const Value gathered = model->producer(embedded)->input(0);              // [batch, 4, 8]
  // A rank-3 second output is not logits-shaped: the logits are found.
  model->AddOutput(gathered);
  auto t = BuildTrainGraph(*model, opts);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->logits, "logits");
  // A second [batch, K] output makes it ambiguous: an error naming both, until --output picks one.
  model->AddOutput(concat);
  t = BuildTrainGraph(*model, opts);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("2 of them look like logits"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("--output NAME"), std::string::npos) << t.status().message();
  opts.output = "logits";
  t = BuildTrainGraph(*model, opts);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->logits, "logits");
  opts.output = "nope";
  t = BuildTrainGraph(*model, opts);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("'nope' is not an output of the model; its outputs are 'logits'"),
            std::string::npos)
      << t.status().message();
}

// BART's classification head in miniature: ids int64 [batch, 4] with one
// <eos> (token 0) per row -> h = Gather(table, ids) + the row's mean ->
// GatherND(h, Transpose(NonZero(ids == 0))) (x[mask], one state per row) ->
// Gemm -> logits. The count of <eos> tokens is the data's: the session counts
// it before planning, every step. A batch with a row of two <eos> tokens
// gives more states than labels: one error naming the counts.
std::unique_ptr<ir::Graph> EosHeadModel() {
  auto g = std::make_unique<ir::Graph>();
  const ir::Dim batch = ir::Dim::Symbolic("batch");
  Value ids = g->AddInput("ids", ir::TensorType::Of(DType::kInt64, ir::Shape({batch, ir::Dim::Static(kSeq)})));
  Value table = g->AddInitializer("table", RandomFloats({kVocab, kDim}, 0.5f, 1));
  Value w = g->AddInitializer("w", RandomFloats({kClasses, kDim}, 0.1f, 2));
  Value b = g->AddInitializer("b", RandomFloats({kClasses}, 0.1f, 3));
  Value eos = g->AddInitializer("eos", Tensor::Int64s({0}, {}));
  Value emb = g->AddNode(ir::OpKind::kGather, {table, ids})->output(0);
  ir::Node* mean = g->AddNode(ir::OpKind::kReduceMean, {emb, g->AddInitializer("axes", Tensor::Int64s({1}, {1}))});
  Value h = g->AddNode(ir::OpKind::kAdd, {emb, mean->output(0)})->output(0);
  Value mask = g->AddNode(ir::OpKind::kEqual, {ids, eos})->output(0);
  Value nz = g->AddNode(ir::OpKind::kNonZero, {mask}, 1, "eos_positions")->output(0);
  ir::Node* t = g->AddNode(ir::OpKind::kTranspose, {nz});
  t->attrs().Set("perm", std::vector<int64_t>{1, 0});
  Value states = g->AddNode(ir::OpKind::kGatherND, {h, t->output(0)})->output(0);
  ir::Node* gemm = g->AddNode(ir::OpKind::kGemm, {states, w, b}, 1, "head", {"logits"});
  gemm->attrs().Set("transB", int64_t{1});
  g->AddOutput(gemm->output(0));
  EXPECT_TRUE(g->InferShapes().ok()) << g->InferShapes().ToString();
  return g;
}

// One <eos> per row at a random position; the other tokens are 1..9 in
// class 0 and 10..19 in class 1 (the mean that the <eos> state carries
// tells them apart).
data::Dataset EosData(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  data::Dataset ds = IdsData(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t* row = ds.samples.data<int64_t>() + i * kSeq;
    const int64_t label = rng() % 2;
    for (int64_t j = 0; j < kSeq; ++j) row[j] = label ? 10 + rng() % 10 : 1 + rng() % 9;
    row[rng() % kSeq] = 0;
    ds.labels.data<int64_t>()[i] = label;
  }
  return ds;
}

TEST(MultiInputTraining, BooleanMaskIndexingOfTheEosStatesTrains) {
  std::unique_ptr<ir::Graph> model = EosHeadModel();
  auto trainer = Trainer::Create(*model, Config());
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  EXPECT_EQ((*trainer)->parameter_report().trained.size(), 3u);
  data::BatchIterator batches(EosData(256, 7), 32, /*shuffle=*/true, 1, {}, {});
  std::vector<double> losses = EpochLosses(**trainer, batches, 8);
  ASSERT_EQ(losses.size(), 8u);
  EXPECT_LT(losses.back(), 0.5 * losses.front()) << "first epoch " << losses.front() << ", last " << losses.back();
  data::BatchIterator test(EosData(64, 99), 32, /*shuffle=*/false, 0, {}, {});
  auto eval = (*trainer)->Evaluate(test);
  ASSERT_TRUE(eval.ok()) << eval.status().ToString();
  EXPECT_GT(eval->accuracy, 0.9);

  data::Dataset two = EosData(8, 3);
  int64_t* row1 = two.samples.data<int64_t>() + kSeq;  // 5, <eos>, <eos>, <eos>: 10 states for 8 labels
  row1[0] = 5;
  for (int64_t j = 1; j < kSeq; ++j) row1[j] = 0;
  data::BatchIterator bad(two, 8, false, 0, {}, {});
  data::Batch batch;
  ASSERT_TRUE(*bad.Next(&batch));
  const int64_t before = (*trainer)->step();
  auto r = (*trainer)->Step(batch);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("planning for the nonzero counts of these inputs (10 for 'eos_positions"),
            std::string::npos)
      << r.status().message();
  EXPECT_EQ((*trainer)->step(), before);
}

}  // namespace
}  // namespace amptrain::executor::train
