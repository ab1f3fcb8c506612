// The Trainer and the training loop on a small SimpleCNN (8x8 inputs, 4
// classes) with synthetic data: the loss falls, a resumed run equals an
// uninterrupted one bitwise, bad inputs are clean errors, the exported model
// carries the trained state, and the hot ops run on oneDNN.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <random>
#include <set>

#include "executor/train/train_loop.h"
#include "ir/infer/infer_util.h"
#include "executor/train/trainer.h"
#include "models/builders.h"
#include "tests/executor/trainer_test_util.h"

namespace amptrain::executor::train {
namespace {

namespace fs = std::filesystem;

using testing::ExpectBitwiseEqual;
using testing::Loop;
using testing::SmallCnn;
using testing::Synthetic;
using testing::TempDir;

TrainConfig Config(int64_t classes = 4) {
  TrainConfig c;
  c.graph.num_classes = classes;
  c.threads = 1;  // CI runs suites side by side on 2 cores: no OpenMP spin-waiting
  c.seed = 7;
  return c;
}

TEST(CountCorrect, PerSamplePerTokenAndPerPixelSkippingIgnoredLabels) {
  // [2, 3] logits, one label per sample.
  ir::Tensor rows = ir::Tensor::Floats({0, 2, 1, 5, 4, 3}, {2, 3});
  Hits h = CountCorrect(rows, ir::Tensor::Int64s({1, 2}, {2}));
  EXPECT_EQ(h.correct, 1);
  EXPECT_EQ(h.counted, 2);
  // Per token, classes last: [1, 2 tokens, 3 classes]; argmax 1 and 0.
  h = CountCorrect(rows.Reshaped({1, 2, 3}).value(), ir::Tensor::Int64s({1, 0}, {1, 2}), 2);
  EXPECT_EQ(h.correct, 2);
  h = CountCorrect(rows.Reshaped({1, 2, 3}).value(), ir::Tensor::Int64s({1, -100}, {1, 2}), 2);
  EXPECT_EQ(h.correct, 1);
  EXPECT_EQ(h.counted, 1);
  // Per pixel, classes first: [1, 3 classes, 2 pixels]: pixel 0 reads 0, 1, 4 (argmax 2),
  // pixel 1 reads 2, 5, 3 (argmax 1).
  const ir::Tensor pixels = rows.Reshaped({1, 3, 2}).value();
  h = CountCorrect(pixels, ir::Tensor::Int64s({2, 1}, {1, 2}), 1);
  EXPECT_EQ(h.correct, 2);
  h = CountCorrect(pixels, ir::Tensor::Int64s({255, 0}, {1, 2}), 1, 255);
  EXPECT_EQ(h.correct, 0);
  EXPECT_EQ(h.counted, 1);
  // Labels that do not fit count nothing.
  EXPECT_EQ(CountCorrect(pixels, ir::Tensor::Int64s({1, 1, 1}, {1, 3}), 1).counted, 0);
  // fp16/bf16 logits (a mixed-precision training step's, widened exactly):
  // the same counts in every layout, the strided one included.
  for (ir::DType t : {ir::DType::kFloat16, ir::DType::kBFloat16}) {
    SCOPED_TRACE(ir::DTypeName(t));
    ir::Tensor low = *ir::Tensor::Zeros(t, {2, 3});
    for (int64_t i = 0; i < 6; ++i) ir::SetElementFromDouble(low, i, rows.GetAsDouble(i));
    h = CountCorrect(low, ir::Tensor::Int64s({1, 2}, {2}));
    EXPECT_EQ(h.correct, 1);
    EXPECT_EQ(h.counted, 2);
    EXPECT_EQ(CountCorrect(low.Reshaped({1, 2, 3}).value(), ir::Tensor::Int64s({1, 0}, {1, 2}), 2).correct, 2);
    h = CountCorrect(low.Reshaped({1, 3, 2}).value(), ir::Tensor::Int64s({2, 1}, {1, 2}), 1);
    EXPECT_EQ(h.correct, 2);
    EXPECT_EQ(h.counted, 2);
  }
}

// The prediction is the first index of the largest logit, NaNs never winning
// (a NaN first logit predicts 0): on long rows (the vectorized path), with
// ties, +-0, infinities and NaNs at every lane position, one thread or two,
// every row's prediction is checked through a label equal to it.
TEST(CountCorrect, FirstLargestLogitOnLongRows) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> level(0, 6);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (int64_t k : {17, 24, 25, 40, 1000, 1031}) {
    const int64_t rows = 300;
    std::vector<float> x(static_cast<size_t>(rows * k));
    std::vector<int64_t> want(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      float* row = x.data() + r * k;
      for (int64_t j = 0; j < k; ++j) row[j] = static_cast<float>(level(rng));  // many ties
      switch (r % 6) {
        case 1: row[0] = nan; break;
        case 2: row[r % k] = nan, row[(r * 7) % k] = 6.0f; break;
        case 3: std::fill(row, row + k, 0.0f), row[(r * 5) % k] = -0.0f; break;
        case 4: row[(r * 3) % k] = inf, row[(r * 11) % k] = inf; break;
        case 5: std::fill(row, row + k, -inf), row[k - 1] = nan; break;
        default: break;
      }
      int64_t best = 0;  // the definition, scalar
      for (int64_t j = 1; j < k; ++j)
        if (row[j] > row[best]) best = j;
      want[static_cast<size_t>(r)] = best;
    }
    const ir::Tensor logits = ir::Tensor::Floats(x, {rows, k});
    for (int threads : {1, 2}) {
      const Hits all = CountCorrect(logits, ir::Tensor::Int64s(want, {rows}), 1, -100, threads);
      EXPECT_EQ(all.correct, rows) << "k = " << k << ", " << threads << " threads";
      std::vector<int64_t> off = want;
      for (int64_t& v : off) v = (v + 1) % k;
      EXPECT_EQ(CountCorrect(logits, ir::Tensor::Int64s(off, {rows}), 1, -100, threads).correct, 0) << "k = " << k;
    }
  }
}

TEST(Trainer, LossFallsAndTestAccuracyBeatsChance) {
  auto model = SmallCnn(4);
  auto trainer = Trainer::Create(*model, Config());
  ASSERT_TRUE(trainer.ok()) << trainer.status().message();
  EXPECT_EQ((*trainer)->param_names().size(), 12u);  // 2 conv, 2 bn, 2 linear: weight and bias each
  data::Dataset train = Synthetic("train"), test = Synthetic("test");
  data::BatchIterator batches(train, 32, true, 0, {{0.5f}, {0.2f}}, {});
  std::vector<double> losses;
  ir::Tensor x, y;
  for (int epoch = 0; epoch < 3; ++epoch, batches.NextEpoch()) {
    while (*batches.Next(&x, &y)) {
      auto r = (*trainer)->Step(x, y);
      ASSERT_TRUE(r.ok()) << r.status().message();
      losses.push_back(r->loss);
    }
  }
  double first = (losses[0] + losses[1] + losses[2]) / 3, last = 0;
  for (size_t i = losses.size() - 3; i < losses.size(); ++i) last += losses[i] / 3;
  EXPECT_LT(last, 0.5 * first) << "first " << first << " last " << last;
  data::BatchIterator test_batches(test, 32, false, 0, {{0.5f}, {0.2f}}, {});
  auto e = (*trainer)->Evaluate(test_batches);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->count, 32);
  EXPECT_GT(e->accuracy, 0.5);
}

// x -> Conv(1 -> 3, 3x3) -> Relu -> Flatten -> Gemm -> logits [batch, 4],
// with x [batch, 1, 8, 8], or channels-last [batch, 8, 8, 1] transposed to
// NCHW first (a TensorFlow/Keras model through tf2onnx). Same weights.
std::unique_ptr<ir::Graph> TinyConv(bool channels_last) {
  auto g = std::make_unique<ir::Graph>();
  const ir::Dim batch = ir::Dim::Symbolic("batch");
  auto dims = [&](std::vector<int64_t> d) {
    std::vector<ir::Dim> out = {batch};
    for (int64_t v : d) out.push_back(ir::Dim::Static(v));
    return ir::TensorType::Of(ir::DType::kFloat32, ir::Shape(out));
  };
  ir::Value x = g->AddInput("x", channels_last ? dims({8, 8, 1}) : dims({1, 8, 8}));
  if (channels_last) {
    ir::Node* t = g->AddNode(ir::OpKind::kTranspose, {x});
    t->attrs().Set("perm", std::vector<int64_t>{0, 3, 1, 2});
    x = t->output(0);
  }
  auto weights = [](std::vector<int64_t> d, float step) {
    ir::Tensor t = *ir::Tensor::Zeros(ir::DType::kFloat32, std::move(d));
    for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = step * static_cast<float>((i * 7) % 11 - 5);
    return t;
  };
  ir::Value w = g->AddInitializer("w", weights({3, 1, 3, 3}, 0.1f));
  ir::Value conv = g->AddNode(ir::OpKind::kConv, {x, w})->output(0);
  ir::Value relu = g->AddNode(ir::OpKind::kRelu, {conv})->output(0);
  ir::Value flat = g->AddNode(ir::OpKind::kFlatten, {relu})->output(0);
  ir::Node* gemm = g->AddNode(ir::OpKind::kGemm, {flat, g->AddInitializer("fc", weights({3 * 6 * 6, 4}, 0.02f))}, 1,
                              "head", {"logits"});
  g->AddOutput(gemm->output(0));
  EXPECT_TRUE(g->InferShapes().ok()) << g->InferShapes().ToString();
  return g;
}

// A channels-last image input gets the data set's [C, H, W] images as
// [H, W, C]: the same losses and updates as the NCHW model on the same batches.
TEST(Trainer, ChannelsLastImageInputTrainsLikeNchw) {
  std::vector<std::vector<float>> losses(2);
  for (bool last : {false, true}) {
    auto model = TinyConv(last);
    auto trainer = Trainer::Create(*model, Config());
    ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
    data::BatchIterator batches(Synthetic("train"), 16, /*shuffle=*/false, 0, {{0.5f}, {0.2f}}, {});
    data::Batch batch;
    for (int step = 0; step < 4 && *batches.Next(&batch); ++step) {
      if (step == 0) {
        ASSERT_TRUE((*trainer)->CheckInputs(batch).ok());
      }
      auto r = (*trainer)->Step(batch);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      losses[last].push_back(r->loss);
    }
  }
  ASSERT_EQ(losses[0].size(), 4u);
  for (size_t i = 0; i < losses[0].size(); ++i) EXPECT_NEAR(losses[1][i], losses[0][i], 1e-6 * std::abs(losses[0][i]));
  EXPECT_LT(losses[0].back(), losses[0].front());
}

TEST(Trainer, RunningStatisticsMoveAndTheModelIsNotTouched) {
  auto model = SmallCnn(4);
  const ir::Tensor before = model->ConstantValue(model->FindValue("features.1.running_mean"))->Clone();
  const ir::Tensor w_before = model->ConstantValue(model->FindValue("features.0.weight"))->Clone();
  auto trainer = Trainer::Create(*model, Config());
  ASSERT_TRUE(trainer.ok()) << trainer.status().message();
  data::BatchIterator batches(Synthetic("train"), 32, true, 0, {{0.5f}, {0.2f}}, {});
  ir::Tensor x, y;
  ASSERT_TRUE(*batches.Next(&x, &y));
  ASSERT_TRUE((*trainer)->Step(x, y).ok());
  auto state = (*trainer)->ModelState();
  EXPECT_FALSE(state.at("features.1.running_mean") == before);
  EXPECT_FALSE(state.at("features.0.weight") == w_before);
  EXPECT_TRUE(*model->ConstantValue(model->FindValue("features.1.running_mean")) == before);
  EXPECT_TRUE(*model->ConstantValue(model->FindValue("features.0.weight")) == w_before);
}

// The hot ops of a training step run on a fast kernel (oneDNN, or a direct
// vectorized kernel), never on the reference loops.
TEST(Trainer, HotOpsRunOnFastKernels) {
  auto model = SmallCnn(4);
  auto trainer = Trainer::Create(*model, Config());
  ASSERT_TRUE(trainer.ok()) << trainer.status().message();
  data::BatchIterator batches(Synthetic("train"), 32, true, 0, {{0.5f}, {0.2f}}, {});
  ir::Tensor x, y;
  ASSERT_TRUE(*batches.Next(&x, &y));
  ASSERT_TRUE((*trainer)->Step(x, y).ok());
  const Plan* plan = (*trainer)->train_plan();
  ASSERT_NE(plan, nullptr);
  const std::set<ir::OpKind> hot = {ir::OpKind::kConv, ir::OpKind::kConvGrad, ir::OpKind::kGemm,
                                    ir::OpKind::kMaxPool, ir::OpKind::kMaxPoolGrad, ir::OpKind::kBatchNormalization,
                                    ir::OpKind::kBatchNormalizationGrad};
  int seen = 0;
  for (const Step& s : plan->steps) {
    if (!hot.count(s.node->op())) continue;
    ++seen;
    EXPECT_NE(s.impl, "reference") << s.node->Describe();
  }
  EXPECT_GE(seen, 10);
}

TEST(Trainer, SameSeedSameResultOtherSeedOtherDropout) {
  auto model = SmallCnn(4);
  data::BatchIterator batches(Synthetic("train"), 32, true, 0, {{0.5f}, {0.2f}}, {});
  ir::Tensor x, y;
  ASSERT_TRUE(*batches.Next(&x, &y));
  auto run = [&](uint64_t seed) {
    TrainConfig c = Config();
    c.seed = seed;
    auto t = Trainer::Create(*model, c);
    EXPECT_TRUE(t.ok());
    for (int i = 0; i < 2; ++i) EXPECT_TRUE((*t)->Step(x, y).ok());
    return (*t)->ModelState();
  };
  auto a = run(1), b = run(1), c = run(2);
  ExpectBitwiseEqual(a, b);
  EXPECT_FALSE(a.at("classifier.4.weight") == c.at("classifier.4.weight"));  // another Dropout mask
  EXPECT_NE(StepSeed(1, 0), StepSeed(1, 1));
}

TEST(Trainer, ResumeIsBitwiseEqualToAStraightRun) {
  // 12 steps cross the epoch boundary (288 train samples / 32 = 9 batches), so the
  // resumed run also restores the data cursor and the epoch-end checkpoint.
  auto model = SmallCnn(4);
  data::Dataset train = Synthetic("train");
  fs::path straight_dir = TempDir("straight"), resumed_dir = TempDir("resumed");
  TrainConfig c = Config();
  c.optimizer.kind = "sgd";
  c.optimizer.momentum = 0.9f;
  c.optimizer.weight_decay = 1e-4f;
  c.clip_grad_norm = 5.0;

  auto straight = Trainer::Create(*model, c);
  ASSERT_TRUE(straight.ok());
  auto r = RunTraining(**straight, train, nullptr, Loop(12, straight_dir.string()));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->steps, 12);

  auto first = Trainer::Create(*model, c);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(RunTraining(**first, train, nullptr, Loop(6, resumed_dir.string())).ok());
  auto second = Trainer::Create(*model, c);
  ASSERT_TRUE(second.ok());
  LoopConfig resume = Loop(12, resumed_dir.string());
  resume.resume = "auto";
  auto r2 = RunTraining(**second, train, nullptr, resume);
  ASSERT_TRUE(r2.ok()) << r2.status().message();
  EXPECT_EQ(r2->start_step, 6);
  EXPECT_EQ((*second)->step(), 12);

  ExpectBitwiseEqual((*straight)->ModelState(), (*second)->ModelState());
  ExpectBitwiseEqual((*straight)->optimizer().StateTensors(), (*second)->optimizer().StateTensors());
  EXPECT_EQ((*straight)->optimizer().step_count(), (*second)->optimizer().step_count());
  auto a = LoadCheckpoint(CheckpointPath(straight_dir.string(), 12));
  auto b = LoadCheckpoint(CheckpointPath(resumed_dir.string(), 12));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->state.data_epoch, b->state.data_epoch);
  EXPECT_EQ(a->state.data_index, b->state.data_index);
  fs::remove_all(straight_dir);
  fs::remove_all(resumed_dir);
}

// A model of fixed batch larger than the test split (drop_last) trains, and
// its epochs go unevaluated with a warning instead of failing the run.
TEST(Trainer, FixedBatchLargerThanTheTestSplitSkipsEvaluation) {
  auto model = SmallCnn(4);
  auto t = Trainer::Create(*model, Config(4));
  ASSERT_TRUE(t.ok()) << t.status().message();
  data::Dataset train = Synthetic("train"), test = Synthetic("test");
  LoopConfig l = Loop(8);
  l.batch_size = 64;
  l.drop_last = true;
  l.evaluate = true;
  ASSERT_LT(static_cast<int64_t>(test.size()), l.batch_size);
  int evaluated = 0, epochs = 0;
  LoopCallbacks callbacks;
  callbacks.on_epoch_end = [&](const EpochSummary& s) {
    ++epochs;
    evaluated += s.evaluated;
  };
  auto r = RunTraining(**t, train, &test, l, callbacks);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->steps, 8);
  EXPECT_GE(epochs, 1);
  EXPECT_EQ(evaluated, 0);
}

TEST(Trainer, MismatchedCheckpointIsAnErrorAndChangesNothing) {
  auto four = SmallCnn(4), five = SmallCnn(5);
  fs::path dir = TempDir("mismatch");
  auto t4 = Trainer::Create(*four, Config(4));
  ASSERT_TRUE(t4.ok());
  ASSERT_TRUE(RunTraining(**t4, Synthetic("train"), nullptr, Loop(2, dir.string())).ok());

  auto t5 = Trainer::Create(*five, Config(0));
  ASSERT_TRUE(t5.ok());
  auto before = (*t5)->ModelState();
  std::map<std::string, ir::Tensor> copy;
  for (const auto& [n, t] : before) copy[n] = t.Clone();
  auto loaded = LoadCheckpoint(CheckpointPath(dir.string(), 2));
  ASSERT_TRUE(loaded.ok());
  Status s = (*t5)->Restore(*loaded);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("does not fit the model"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("classifier.4"), std::string::npos) << s.message();
  ExpectBitwiseEqual((*t5)->ModelState(), copy);
  EXPECT_EQ((*t5)->step(), 0);
  fs::remove_all(dir);
}

TEST(Trainer, OutputThatDoesNotFitTheClassesIsRejected) {
  auto model = SmallCnn(4);
  auto t = Trainer::Create(*model, Config(10));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("4 classes"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("10 classes"), std::string::npos) << t.status().message();
}

TEST(Trainer, LabelOutOfRangeIsAnErrorAndTheStepIsNotApplied) {
  auto model = SmallCnn(4);
  auto t = Trainer::Create(*model, Config(0));
  ASSERT_TRUE(t.ok());
  data::BatchIterator batches(Synthetic("train"), 32, true, 0, {{0.5f}, {0.2f}}, {});
  ir::Tensor x, y;
  ASSERT_TRUE(*batches.Next(&x, &y));
  y.data<int64_t>()[3] = 9;
  auto before = (*t)->ModelState();
  std::map<std::string, ir::Tensor> copy;
  for (const auto& [n, v] : before) copy[n] = v.Clone();
  auto r = (*t)->Step(x, y);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("SoftmaxCrossEntropyLoss"), std::string::npos) << r.status().message();
  ExpectBitwiseEqual((*t)->ModelState(), copy);
  EXPECT_EQ((*t)->step(), 0);
}

TEST(Trainer, TrainedModelCarriesTheStateAndEvaluatesTheSame) {
  auto model = SmallCnn(4, /*training_mode=*/false);
  auto t = Trainer::Create(*model, Config());
  ASSERT_TRUE(t.ok()) << t.status().message();
  data::Dataset train = Synthetic("train"), test = Synthetic("test");
  ASSERT_TRUE(RunTraining(**t, train, nullptr, Loop(5)).ok());
  auto trained = (*t)->TrainedModel();
  ASSERT_TRUE(trained.ok()) << trained.status().message();
  for (const auto& [name, value] : (*t)->ModelState())
    EXPECT_TRUE(*(*trained)->ConstantValue((*trained)->FindValue(name)) == value) << name;
  EXPECT_EQ((*trained)->outputs().size(), model->outputs().size());

  // Inference-mode export of a training-mode model: no Dropout, BN with one output and training_mode 0.
  auto train_mode = SmallCnn(4, /*training_mode=*/true);
  auto t2 = Trainer::Create(*train_mode, Config());
  ASSERT_TRUE(t2.ok());
  auto inference = (*t2)->TrainedModel(/*inference=*/true);
  ASSERT_TRUE(inference.ok()) << inference.status().message();
  for (const ir::Node* n : (*inference)->nodes()) {
    EXPECT_NE(n->op(), ir::OpKind::kDropout) << n->Describe();
    if (n->op() == ir::OpKind::kBatchNormalization) {
      EXPECT_EQ(n->num_outputs(), 1u) << n->Describe();
      EXPECT_EQ(n->attrs().Int("training_mode", 0), 0) << n->Describe();
    }
  }

  auto fresh = Trainer::Create(**trained, Config());
  ASSERT_TRUE(fresh.ok());
  data::BatchIterator a(test, 16, false, 0, {{0.5f}, {0.2f}}, {}), b(test, 16, false, 0, {{0.5f}, {0.2f}}, {});
  auto ea = (*t)->Evaluate(a), eb = (*fresh)->Evaluate(b);
  ASSERT_TRUE(ea.ok() && eb.ok());
  EXPECT_EQ(ea->loss, eb->loss);
  EXPECT_EQ(ea->accuracy, eb->accuracy);
}

TEST(TrainLoop, EpochsEvaluateAndReportProgress) {
  auto model = SmallCnn(4);
  auto t = Trainer::Create(*model, Config());
  ASSERT_TRUE(t.ok());
  data::Dataset train = Synthetic("train"), test = Synthetic("test");
  LoopConfig loop = Loop(0);
  loop.epochs = 2;
  loop.evaluate = true;
  loop.log_every = 4;
  std::vector<Progress> progress;
  std::vector<EpochSummary> epochs;
  LoopCallbacks cb;
  cb.on_progress = [&](const Progress& p) { progress.push_back(p); };
  cb.on_epoch_end = [&](const EpochSummary& s) { epochs.push_back(s); };
  auto r = RunTraining(**t, train, &test, loop, cb);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->steps, 18);  // 2 epochs of 9 batches
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_TRUE(epochs[1].evaluated);
  EXPECT_EQ(epochs[1].test.count, 32);
  EXPECT_EQ(epochs[1].step, 18);
  ASSERT_EQ(progress.size(), 5u);  // steps 4, 8, 12, 16 and the last
  EXPECT_EQ(progress.back().step, 18);
  EXPECT_GT(progress.back().images_per_s, 0.0);
}

}  // namespace
}  // namespace amptrain::executor::train
