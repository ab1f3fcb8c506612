// Mixed-precision training through the Trainer (not the scaler class alone),
// on the small SimpleCNN of trainer_test.cc with synthetic data: the
// GradScaler scenarios of ../shared/docs/TESTING.md (fault injection through
// TrainConfig::gradient_hook), the precision plan, and checkpoints of the
// scaler state.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include "executor/train/train_loop.h"
#include "ir/infer/infer_util.h"
#include "executor/train/trainer.h"
#include "models/builders.h"
#include "tests/executor/trainer_test_util.h"

namespace amptrain::executor::train {
namespace {

namespace fs = std::filesystem;
using ir::DType;
using testing::ExpectBitwiseEqual;
using testing::Loop;
using testing::Synthetic;

std::unique_ptr<ir::Graph> SmallCnn() { return testing::SmallCnn(4); }
fs::path TempDir(const std::string& name) { return testing::TempDir(name, "amptrain_amp_trainer_"); }

amp::Policy Policy(amp::Level level, DType low) {
  amp::Policy p;
  p.level = level;
  p.low = low;
  return p;
}

// No policy: fp32.
TrainConfig Config(std::optional<amp::Policy> policy, std::optional<LossScalerConfig> scaler = {}) {
  TrainConfig c;
  c.graph.num_classes = 4;
  c.graph.amp = std::move(policy);
  c.loss_scaler = scaler;
  c.threads = 1;
  c.seed = 7;
  return c;
}

std::map<std::string, ir::Tensor> DeepCopy(const std::map<std::string, ir::Tensor>& m) {
  std::map<std::string, ir::Tensor> out;
  for (const auto& [name, t] : m) out.emplace(name, t.Clone());
  return out;
}

// Mean loss of the first and of the last three steps of three epochs.
std::pair<double, double> TrainThreeEpochs(Trainer& trainer) {
  data::Dataset train = Synthetic("train");
  data::BatchIterator batches(train, 32, true, 0, {{0.5f}, {0.2f}}, {});
  std::vector<double> losses;
  ir::Tensor x, y;
  for (int epoch = 0; epoch < 3; ++epoch, batches.NextEpoch()) {
    while (*batches.Next(&x, &y)) {
      auto r = trainer.Step(x, y);
      EXPECT_TRUE(r.ok()) << r.status().message();
      if (!r.ok()) return {0, 0};
      if (r->applied) losses.push_back(r->loss);
    }
  }
  double first = (losses[0] + losses[1] + losses[2]) / 3, last = 0;
  for (size_t i = losses.size() - 3; i < losses.size(); ++i) last += losses[i] / 3;
  return {first, last};
}

int LowNodes(const amp::Report& r, DType low) {
  int n = 0;
  for (const amp::NodeReport& node : r.nodes) n += node.dtype == low;
  return n;
}

// The backward's low gradients go to the optimizer and the gradient check
// without a Cast to fp32 (TrainGraphOptions::low_gradients), and the forward
// reads low copies of the masters that the optimizer keeps (low_weights):
// the same bits as with the Casts, under SGD with momentum and AdamW,
// dynamic scaling and clipping.
TEST(AmpTrainer, LowGradientsAndWeightsTrainBitwiseAsCastOnes) {
  auto model = SmallCnn();
  for (auto [level, low] : {std::pair{amp::Level::kO2, DType::kBFloat16}, std::pair{amp::Level::kO1, DType::kFloat16}})
    for (const char* kind : {"adamw", "sgd"}) {
      SCOPED_TRACE(std::string(amp::LevelName(level)) + " " + std::string(ir::DTypeName(low)) + " " + kind);
      TrainConfig fused = Config(Policy(level, low), LossScalerConfig{});
      fused.optimizer.kind = kind;
      fused.optimizer.momentum = 0.9f;
      fused.optimizer.weight_decay = 0.01f;
      fused.clip_grad_norm = 0.5;
      fused.low_weights = true;
      TrainConfig cast = fused;
      cast.graph.low_gradients = false;
      cast.low_weights = false;
      int low_grads = 0;
      fused.gradient_hook = [&](int64_t step, std::map<std::string, ir::Tensor>& grads) {
        if (step == 0)
          for (const auto& [name, g] : grads) low_grads += g.dtype() == low;
      };
      auto a = Trainer::Create(*model, fused);
      auto b = Trainer::Create(*model, cast);
      ASSERT_TRUE(a.ok() && b.ok());
      data::Dataset train = Synthetic("train");
      data::BatchIterator batches(train, 32, true, 0, {{0.5f}, {0.2f}}, {});
      ir::Tensor x, y;
      for (int step = 0; step < 6 && *batches.Next(&x, &y); ++step) {
        auto ra = (*a)->Step(x, y);
        auto rb = (*b)->Step(x, y);
        ASSERT_TRUE(ra.ok() && rb.ok());
        EXPECT_EQ(ra->grad_norm, rb->grad_norm) << "step " << step;
      }
      EXPECT_GT(low_grads, 0) << "no gradient came out low";
      ExpectBitwiseEqual((*b)->ModelState(), (*a)->ModelState());
      ExpectBitwiseEqual((*b)->optimizer().StateTensors(), (*a)->optimizer().StateTensors());
    }
}

TEST(AmpTrainer, LossFallsAsInFp32UnderEachLevelAndType) {
  auto model = SmallCnn();
  auto fp32 = Trainer::Create(*model, Config({}));
  ASSERT_TRUE(fp32.ok()) << fp32.status().message();
  EXPECT_EQ((*fp32)->amp_report(), nullptr);
  auto [first32, last32] = TrainThreeEpochs(**fp32);
  struct Case { amp::Level level; DType low; bool scaled; };
  for (Case c : {Case{amp::Level::kO1, DType::kBFloat16, false}, Case{amp::Level::kO2, DType::kBFloat16, false},
                 Case{amp::Level::kO1, DType::kFloat16, true}, Case{amp::Level::kO2, DType::kFloat16, true}}) {
    std::string what = std::string(amp::LevelName(c.level)) + " " + std::string(ir::DTypeName(c.low));
    auto t = Trainer::Create(*model, Config(Policy(c.level, c.low),
                                            c.scaled ? std::optional(LossScalerConfig{}) : std::nullopt));
    ASSERT_TRUE(t.ok()) << what << ": " << t.status().message();
    ASSERT_NE((*t)->amp_report(), nullptr) << what;
    // The opset-17 model's Conv runs low in training although ONNX allows a
    // bf16 Conv only from opset 22: training asks the kernels, not the opset.
    EXPECT_GE(LowNodes(*(*t)->amp_report(), c.low), 2) << what;
    EXPECT_FALSE((*t)->precision_plan_hash().empty());
    auto [first, last] = TrainThreeEpochs(**t);
    EXPECT_LT(last, 0.5 * first) << what << ": first " << first << " last " << last;
    // Low precision rounds differently, but learns as much (fp32: last32).
    EXPECT_LT(last, 1.5 * last32 + 0.05) << what << " vs fp32 " << last32;
    for (const auto& [name, p] : (*t)->params()) EXPECT_EQ(p.dtype(), DType::kFloat32) << "master " << name;
  }
  // O3: weights and BN statistics stored low, no master; it still learns.
  for (DType low : {DType::kBFloat16, DType::kFloat16}) {
    std::string what = "O3 " + std::string(ir::DTypeName(low));
    auto t = Trainer::Create(*model, Config(Policy(amp::Level::kO3, low)));
    ASSERT_TRUE(t.ok()) << what << ": " << t.status().message();
    for (const auto& [name, p] : (*t)->params()) EXPECT_EQ(p.dtype(), low) << what << " stores " << name << " low";
    for (const auto& [name, s] : (*t)->ModelState()) {
      if (name.find("running") == std::string::npos) continue;
      EXPECT_EQ(s.dtype(), low) << what << " " << name;
    }
    auto [first, last] = TrainThreeEpochs(**t);
    EXPECT_LT(last, 0.5 * first) << what << ": first " << first << " last " << last;
    for (const auto& [name, s] : (*t)->ModelState()) EXPECT_EQ(s.dtype(), low) << what << " after training: " << name;
    auto fp32_state = (*t)->Fp32ModelState();
    ASSERT_TRUE(fp32_state.ok()) << fp32_state.status().message();
    for (const auto& [name, s] : *fp32_state) EXPECT_EQ(s.dtype(), DType::kFloat32) << name;
    auto exported = (*t)->TrainedModel(true);
    EXPECT_TRUE(exported.ok()) << what << ": " << exported.status().message();
  }
}

TEST(AmpTrainer, AnOverflowingStepChangesNothing) {
  // A static scale of 1e38 overflows every fp16 gradient: the step is skipped.
  auto model = SmallCnn();
  LossScalerConfig huge;
  huge.dynamic = false;
  huge.init_scale = 1e38f;
  auto t = Trainer::Create(*model, Config(Policy(amp::Level::kO2, DType::kFloat16), huge));
  ASSERT_TRUE(t.ok()) << t.status().message();
  auto before = DeepCopy((*t)->ModelState());
  auto slots = DeepCopy((*t)->optimizer().StateTensors());
  data::Dataset train = Synthetic("train");
  data::BatchIterator batches(train, 32, true, 0, {{0.5f}, {0.2f}}, {});
  ir::Tensor x, y;
  ASSERT_TRUE(*batches.Next(&x, &y));
  for (int i = 1; i <= 3; ++i) {
    auto r = (*t)->Step(x, y);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_FALSE(r->applied);
    EXPECT_FALSE(r->overflow.empty());
    EXPECT_TRUE(std::isfinite(r->loss)) << "the loss of a skipped step is still reported";
    EXPECT_EQ(r->skipped_steps, i);
    EXPECT_EQ(r->loss_scale, 1e38f);
  }
  ExpectBitwiseEqual(before, (*t)->ModelState());  // parameters and BN running statistics
  ExpectBitwiseEqual(slots, (*t)->optimizer().StateTensors());
  EXPECT_EQ((*t)->optimizer().step_count(), 0);
  EXPECT_EQ((*t)->lr_step(), 0) << "LR schedules count applied steps only";
  EXPECT_EQ((*t)->step(), 3);
}

// The SimpleCNN without its Dropout: no randomness, so a run that skips a
// batch can be compared bitwise with one that never saw it.
std::unique_ptr<ir::Graph> SmallCnnWithoutDropout() {
  auto g = SmallCnn();
  std::vector<ir::Node*> dropouts;
  for (ir::Node* n : g->nodes())
    if (n->op() == ir::OpKind::kDropout) dropouts.push_back(n);
  for (ir::Node* n : dropouts) {
    g->ReplaceAllUsesWith(n->output(0), n->input(0));
    EXPECT_TRUE(g->RemoveNode(n).ok());
  }
  g->RemoveDeadNodes();
  return g;
}

// inf, -inf and NaN injected into every gradient in turn (first, middle and
// last element), under O2 fp16 with dynamic scaling and in fp32 without a
// scaler: detected every time and named, and the skipped step changes no
// parameter, optimizer moment or BN running statistic (bitwise).
TEST(AmpTrainer, NonFiniteAtEveryGradientIsDetectedAndChangesNothing) {
  for (bool amp : {true, false}) {
    SCOPED_TRACE(amp ? "O2 fp16, dynamic scaling" : "fp32, no scaler");
    auto model = SmallCnn();
    std::optional<LossScalerConfig> scaler;
    if (amp) {
      scaler = LossScalerConfig{};
      scaler->max_consecutive_overflows = 0;  // never stop
    }
    std::optional<std::pair<std::string, int64_t>> inject;  // gradient, element
    float bad = 0.0f;
    TrainConfig config = Config(amp ? std::optional(Policy(amp::Level::kO2, DType::kFloat16)) : std::nullopt, scaler);
    config.gradient_hook = [&](int64_t, std::map<std::string, ir::Tensor>& grads) {
      if (!inject) return;
      ir::Tensor& g = grads.at(inject->first);
      ir::SetElementFromDouble(g, inject->second, bad);
    };
    auto t = Trainer::Create(*model, config);
    ASSERT_TRUE(t.ok()) << t.status().message();
    data::Dataset train = Synthetic("train");
    data::BatchIterator batches(train, 32, true, 0, {{0.5f}, {0.2f}}, {});
    ir::Tensor x, y;
    ASSERT_TRUE(*batches.Next(&x, &y));
    // Clean steps until one applies, so that moments exist.
    for (int i = 0; i < 5 && (*t)->optimizer().step_count() == 0; ++i) ASSERT_TRUE((*t)->Step(x, y).ok());
    ASSERT_EQ((*t)->optimizer().step_count(), 1);
    const auto state = DeepCopy((*t)->ModelState());
    const auto slots = DeepCopy((*t)->optimizer().StateTensors());
    const int64_t applied = (*t)->optimizer().step_count(), lr_step = (*t)->lr_step();
    int cases = 0;
    for (const auto& [name, value] : (*t)->params()) {
      const int64_t n = value.num_elements();
      for (int64_t element : {int64_t{0}, n / 2, n - 1}) {
        for (float v : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                        std::numeric_limits<float>::quiet_NaN()}) {
          inject = std::make_pair(name, element);
          bad = v;
          auto r = (*t)->Step(x, y);
          ASSERT_TRUE(r.ok()) << r.status().message();
          EXPECT_FALSE(r->applied) << name << "[" << element << "] = " << v;
          EXPECT_EQ(r->overflow, name);
          EXPECT_TRUE(std::isfinite(r->loss));
          ++cases;
        }
      }
    }
    EXPECT_EQ(cases, static_cast<int>((*t)->params().size()) * 9);
    EXPECT_GE(cases, 9 * 8);
    ExpectBitwiseEqual(state, (*t)->ModelState());
    ExpectBitwiseEqual(slots, (*t)->optimizer().StateTensors());
    EXPECT_EQ((*t)->optimizer().step_count(), applied);
    EXPECT_EQ((*t)->lr_step(), lr_step);
  }
}

// A run with one injected overflow ends with the parameters, moments and BN
// statistics of a run that never took that batch (no scaler, and a static
// scale of 1024), bitwise.
TEST(AmpTrainer, AnInjectedOverflowEqualsARunThatSkippedTheStep) {
  auto model = SmallCnnWithoutDropout();
  for (bool with_scaler : {false, true}) {
    SCOPED_TRACE(with_scaler ? "static scale 1024" : "no scaler");
    std::optional<LossScalerConfig> scaler;
    if (with_scaler) {
      scaler = LossScalerConfig{};
      scaler->dynamic = false;
      scaler->init_scale = 1024.0f;
    }
    constexpr int64_t kSkipped = 2, kSteps = 6;
    TrainConfig injected = Config({}, scaler);
    injected.schedule.kind = "warmup_cosine";  // the schedule must count applied steps only
    injected.schedule.warmup_steps = 2;
    injected.schedule.total_steps = kSteps;
    TrainConfig reference = injected;
    injected.gradient_hook = [&](int64_t step, std::map<std::string, ir::Tensor>& grads) {
      if (step == kSkipped) ir::SetElementFromDouble(grads.begin()->second, 0, std::numeric_limits<double>::quiet_NaN());
    };
    auto a = Trainer::Create(*model, injected);
    auto b = Trainer::Create(*model, reference);
    ASSERT_TRUE(a.ok() && b.ok());
    data::Dataset train = Synthetic("train");
    data::BatchIterator batches(train, 32, true, 0, {{0.5f}, {0.2f}}, {});
    ir::Tensor x, y;
    for (int64_t step = 0; step < kSteps; ++step) {
      ASSERT_TRUE(*batches.Next(&x, &y));
      auto ra = (*a)->Step(x, y);
      ASSERT_TRUE(ra.ok()) << ra.status().message();
      EXPECT_EQ(ra->applied, step != kSkipped);
      if (step == kSkipped) continue;
      ASSERT_TRUE((*b)->Step(x, y).ok());
    }
    ExpectBitwiseEqual((*b)->ModelState(), (*a)->ModelState());
    ExpectBitwiseEqual((*b)->optimizer().StateTensors(), (*a)->optimizer().StateTensors());
    EXPECT_EQ((*a)->optimizer().step_count(), kSteps - 1);
    EXPECT_EQ((*a)->lr_step(), (*b)->lr_step());
  }
}

// PyTorch's test_grad_scaling_update_scale through the trainer: scale 4,
// growth interval 2, backoff 0.25: two clean steps give 8, an inf step gives
// 2 and resets the growth tracker, two more clean steps give 4.
TEST(AmpTrainer, GrowthAndBackoffSequence) {
  auto model = SmallCnn();
  LossScalerConfig c;
  c.init_scale = 4.0f;
  c.growth_interval = 2;
  c.backoff_factor = 0.25f;
  c.min_scale = 0.5f;
  std::set<int64_t> overflow_steps = {2};
  TrainConfig config = Config(Policy(amp::Level::kO1, DType::kFloat16), c);
  config.gradient_hook = [&](int64_t step, std::map<std::string, ir::Tensor>& grads) {
    if (overflow_steps.count(step)) ir::SetElementFromDouble(grads.rbegin()->second, 0, std::numeric_limits<double>::infinity());
  };
  auto t = Trainer::Create(*model, config);
  ASSERT_TRUE(t.ok()) << t.status().message();
  data::Dataset train = Synthetic("train");
  data::BatchIterator batches(train, 32, true, 0, {{0.5f}, {0.2f}}, {});
  ir::Tensor x, y;
  ASSERT_TRUE(*batches.Next(&x, &y));
  const float want_scale_before[] = {4, 4, 8, 2, 2};
  const bool want_applied[] = {true, true, false, true, true};
  for (int i = 0; i < 5; ++i) {
    auto r = (*t)->Step(x, y);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->loss_scale, want_scale_before[i]) << "step " << i;
    EXPECT_EQ(r->applied, want_applied[i]) << "step " << i;
  }
  EXPECT_EQ((*t)->scaler()->scale(), 4.0f);
  EXPECT_EQ((*t)->scaler()->growth_tracker(), 0);
  EXPECT_EQ((*t)->scaler()->skipped_steps(), 1);
  EXPECT_EQ((*t)->optimizer().step_count(), 4);
}

TEST(AmpTrainer, DynamicScaleBacksOffFromHugeUntilStepsApply) {
  auto model = SmallCnn();
  LossScalerConfig c;
  c.init_scale = 1e38f;
  c.backoff_factor = 1e-6f;  // 1e38 -> 1e32 -> ... reaches fp16's range in a few steps
  auto t = Trainer::Create(*model, Config(Policy(amp::Level::kO1, DType::kFloat16), c));
  ASSERT_TRUE(t.ok()) << t.status().message();
  data::Dataset train = Synthetic("train");
  data::BatchIterator batches(train, 32, true, 0, {{0.5f}, {0.2f}}, {});
  ir::Tensor x, y;
  ASSERT_TRUE(*batches.Next(&x, &y));
  float last_scale = 2e38f;
  int skipped = 0;
  for (int i = 0; i < 20; ++i) {
    auto r = (*t)->Step(x, y);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_LT(r->loss_scale, last_scale);
    last_scale = r->loss_scale;
    if (r->applied) break;
    ++skipped;
  }
  EXPECT_GE(skipped, 1);
  ASSERT_LT(skipped, 20) << "no step applied";
  EXPECT_EQ((*t)->scaler()->skipped_steps(), skipped);
  EXPECT_EQ((*t)->optimizer().step_count(), 1);
  EXPECT_EQ((*t)->lr_step(), 1);
}

// O2 fp16 (fp32 masters) and O3 fp16 (fp16 weights and statistics in the
// checkpoint), both with a dynamic scale that moves within the run.
TEST(AmpTrainer, ScalerStateRoundTripsAndResumeIsBitwise) {
  auto model = SmallCnn();
  data::Dataset train = Synthetic("train");
  LossScalerConfig sc;
  sc.growth_interval = 3;  // the scale moves within the run
  for (amp::Level level : {amp::Level::kO2, amp::Level::kO3}) {
    SCOPED_TRACE(amp::LevelName(level));
    TrainConfig c = Config(Policy(level, DType::kFloat16), sc);
    fs::path straight_dir = TempDir("straight"), resumed_dir = TempDir("resumed");
    auto straight = Trainer::Create(*model, c);
    ASSERT_TRUE(straight.ok()) << straight.status().message();
    ASSERT_TRUE(RunTraining(**straight, train, nullptr, Loop(12, straight_dir.string())).ok());
    auto first = Trainer::Create(*model, c);
    ASSERT_TRUE(first.ok());
    ASSERT_TRUE(RunTraining(**first, train, nullptr, Loop(7, resumed_dir.string())).ok());
    auto second = Trainer::Create(*model, c);
    ASSERT_TRUE(second.ok());
    LoopConfig resume = Loop(12, resumed_dir.string());
    resume.resume = "auto";
    auto r = RunTraining(**second, train, nullptr, resume);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->start_step, 7);
    ExpectBitwiseEqual((*straight)->ModelState(), (*second)->ModelState());
    ExpectBitwiseEqual((*straight)->optimizer().StateTensors(), (*second)->optimizer().StateTensors());
    EXPECT_EQ((*straight)->scaler()->StateJson(), (*second)->scaler()->StateJson());
    auto ckpt = LoadCheckpoint(CheckpointPath(straight_dir.string(), 12));
    ASSERT_TRUE(ckpt.ok()) << ckpt.status().message();
    EXPECT_EQ(ckpt->state.scaler, (*straight)->scaler()->StateJson());
    EXPECT_EQ(ckpt->state.precision_plan_hash, (*straight)->precision_plan_hash());
    const DType stored = level == amp::Level::kO3 ? DType::kFloat16 : DType::kFloat32;
    for (const auto& [name, t] : ckpt->model) EXPECT_EQ(t.dtype(), stored) << name;
    fs::remove_all(straight_dir);
    fs::remove_all(resumed_dir);
  }
}

TEST(AmpTrainer, ResumeUnderAnotherPrecisionPlanNeedsForce) {
  auto model = SmallCnn();
  data::Dataset train = Synthetic("train");
  fs::path dir = TempDir("plan");
  auto fp32 = Trainer::Create(*model, Config({}));
  ASSERT_TRUE(fp32.ok());
  ASSERT_TRUE(RunTraining(**fp32, train, nullptr, Loop(2, dir.string())).ok());
  auto ckpt = LoadCheckpoint(CheckpointPath(dir.string(), 2));
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().message();
  TrainConfig c = Config(Policy(amp::Level::kO2, DType::kBFloat16));
  auto bf16 = Trainer::Create(*model, c);
  ASSERT_TRUE(bf16.ok());
  Status s = (*bf16)->Restore(*ckpt);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("--force"), std::string::npos) << s.message();
  EXPECT_EQ((*bf16)->step(), 0) << "a refused resume changes nothing";
  c.force_plan_mismatch = true;
  auto forced = Trainer::Create(*model, c);
  ASSERT_TRUE(forced.ok());
  EXPECT_TRUE((*forced)->Restore(*ckpt).ok());
  EXPECT_EQ((*forced)->step(), 2);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace amptrain::executor::train

namespace amptrain::executor::train {
namespace {

// A classifier built to overflow in fp16: x [N, 4, 1, 1] -> Flatten -> Gemm
// -> Mul(3e4) -> Mul(1/3e4) -> logits [N, 2]. In fp32 the two Muls cancel; at
// O1 fp16 the Muls follow the fp16 Gemm and the first one overflows
// (|Gemm| > 2.2, so |y| > 65504).
std::unique_ptr<ir::Graph> OverflowingModel() {
  auto g = std::make_unique<ir::Graph>();
  g->info().opset = 17;
  ir::Value x = g->AddInput("x", ir::TensorType::Of(DType::kFloat32, ir::Shape({ir::Dim::Symbolic("N"), ir::Dim::Static(4),
                                                                                ir::Dim::Static(1), ir::Dim::Static(1)})));
  ir::Node* flat = g->AddNode(ir::OpKind::kFlatten, {x}, 1, "flatten");
  ir::Value w = g->AddInitializer("fc.weight", ir::Tensor::Floats({5.0f, -4.0f, 3.0f, 6.0f, -2.0f, 7.0f, 4.0f, -5.0f}, {2, 4}));
  ir::Value b = g->AddInitializer("fc.bias", ir::Tensor::Floats({0.1f, -0.1f}, {2}));
  ir::Node* fc = g->AddNode(ir::OpKind::kGemm, {flat->output(0), w, b}, 1, "fc");
  fc->attrs().Set("transB", int64_t{1});
  ir::Value big = g->AddInitializer("big", ir::Tensor::Scalar(3e4f));  // fits fp16 (65504); the products do not
  ir::Value small = g->AddInitializer("small", ir::Tensor::Scalar(1.0f / 3e4f));
  ir::Node* up = g->AddNode(ir::OpKind::kMul, {fc->output(0), big}, 1, "scale_up");
  ir::Node* down = g->AddNode(ir::OpKind::kMul, {up->output(0), small}, 1, "scale_down");
  g->AddOutput(down->output(0));
  EXPECT_TRUE(g->InferShapes().ok());
  return g;
}

data::Dataset TwoClassData() {
  auto spec = data::ParseDataSpec("synthetic:N=64,C=4,H=1,W=1,classes=2,seed=2");
  EXPECT_TRUE(spec.ok());
  auto ds = data::LoadDataset(*spec, "train");
  EXPECT_TRUE(ds.ok()) << ds.status().message();
  return *ds;
}

// O1 fp16 on OverflowingModel with `scaler`, and its first batch in *x, *y.
TrainConfig OverflowConfig(const LossScalerConfig& scaler, ir::Tensor* x, ir::Tensor* y) {
  static const data::Dataset train = TwoClassData();
  TrainConfig c;
  c.graph.num_classes = 2;
  c.graph.amp = Policy(amp::Level::kO1, DType::kFloat16);
  c.loss_scaler = scaler;
  c.threads = 1;
  data::BatchIterator batches(train, 16, false, 0, {}, {});
  EXPECT_TRUE(*batches.Next(x, y));
  return c;
}

TEST(AmpTrainer, StuckScaleStopsNamingTheNodeAndThePolicyFixLetsItTrain) {
  auto model = OverflowingModel();
  LossScalerConfig sc;
  sc.init_scale = 8.0f;  // 8 -> 4 -> 2 -> 1 (the floor) -> 1 ...
  sc.max_consecutive_overflows = 6;
  ir::Tensor x, y;
  TrainConfig c = OverflowConfig(sc, &x, &y);
  auto t = Trainer::Create(*model, c);
  ASSERT_TRUE(t.ok()) << t.status().message();
  Status stuck = Status::Ok();
  std::vector<float> scales;
  for (int i = 0; i < 10 && stuck.ok(); ++i) {
    auto r = (*t)->Step(x, y);
    if (!r.ok()) {
      stuck = r.status();
      break;
    }
    EXPECT_FALSE(r->applied);
    scales.push_back((*t)->scaler()->scale());
    if (scales.size() == 3) {  // the first step at the floor is diagnosed
      ASSERT_TRUE(r->site.has_value());
      EXPECT_EQ(r->site->node, "scale_up");
      EXPECT_EQ(r->site->dtype, "float16");
    }
  }
  EXPECT_EQ(scales, (std::vector<float>{4, 2, 1, 1, 1})) << "backoff to the floor";
  EXPECT_EQ(stuck.code(), StatusCode::kFailedPrecondition) << stuck.ToString();
  for (const char* part : {"6 consecutive steps overflowed", "node 'scale_up' (Mul, float16)", "fp32_nodes: [\"scale_up\"]"})
    EXPECT_NE(stuck.message().find(part), std::string::npos) << part << " missing from: " << stuck.message();

  // The fix the error proposes: scale_up in fp32 (scale_down then follows it).
  c.graph.amp->node_overrides.push_back({"scale_up", false, DType::kFloat32});
  auto fixed = Trainer::Create(*model, c);
  ASSERT_TRUE(fixed.ok()) << fixed.status().message();
  for (int i = 0; i < 5; ++i) {
    auto r = (*fixed)->Step(x, y);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_TRUE(r->applied) << "step " << i;
  }
}

// F.normalize as PyTorch exports it, x / Clip(ReduceL2(x), 1e-12), at O2
// fp16: the trainer's graph stores the eps Constant low once, clamped to
// 2^-24 as the export stores it (tests/amp/passes_test.cc checks the value);
// a Cast at run time rounded it to 0, and `amptrain train` of swin_v2_t
// (padded attention windows: all-zero rows) got a NaN loss from 0 / 0.
TEST(AmpTrainer, NormalizeOfZeroRowsStaysFiniteInFp16) {
  auto g = std::make_unique<ir::Graph>();
  g->info().opset = 17;
  ir::Value x =
      g->AddInput("x", ir::TensorType::Of(DType::kFloat32, ir::Shape({ir::Dim::Symbolic("N"), ir::Dim::Static(4)})));
  ir::Value w = g->AddInitializer(
      "fc.weight", ir::Tensor::Floats({0.5f, -0.25f, 0.75f, 1.0f, -0.5f, 0.25f, 1.0f, -1.0f}, {4, 2}));
  ir::Node* fc = g->AddNode(ir::OpKind::kMatMul, {x, w}, 1, "fc");
  ir::Node* norm = g->AddNode(ir::OpKind::kReduceL2, {fc->output(0)}, 1, "norm");
  norm->attrs().Set("axes", std::vector<int64_t>{1});
  ir::Node* eps = g->AddNode(ir::OpKind::kConstant, {}, 1, "eps");
  eps->attrs().Set("value", ir::Tensor::Scalar(1e-12f));
  ir::Node* clip = g->AddNode(ir::OpKind::kClip, {norm->output(0), eps->output(0)}, 1, "clip");
  ir::Node* div = g->AddNode(ir::OpKind::kDiv, {fc->output(0), clip->output(0)}, 1, "normalize");
  g->AddOutput(div->output(0));
  ASSERT_TRUE(g->InferShapes().ok());

  TrainConfig c;
  c.graph.num_classes = 2;
  c.graph.amp = Policy(amp::Level::kO2, DType::kFloat16);
  LossScalerConfig sc;
  sc.init_scale = 1.0f;
  c.loss_scaler = sc;
  c.threads = 1;
  auto t = Trainer::Create(*g, c);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_NE((*t)->amp_report(), nullptr);
  EXPECT_EQ((*t)->amp_report()->clamped_values, 1);
  // Rows 1 and 3 are zero: their logits are 0 / eps.
  ir::Tensor xs = ir::Tensor::Floats({1, 2, 3, 4, 0, 0, 0, 0, -1, 1, -2, 2, 0, 0, 0, 0}, {4, 4});
  ir::Tensor ys = ir::Tensor::Zeros(DType::kInt64, {4}).value();
  ys.data<int64_t>()[1] = ys.data<int64_t>()[2] = 1;
  auto r = (*t)->Step(xs, ys);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(std::isfinite(r->loss)) << r->loss;
}

TEST(AmpTrainer, DebugOverflowObservesTheStepItself) {
  auto model = OverflowingModel();
  ir::Tensor x, y;
  TrainConfig c = OverflowConfig(LossScalerConfig{}, &x, &y);
  c.debug_overflow = true;
  auto t = Trainer::Create(*model, c);
  ASSERT_TRUE(t.ok()) << t.status().message();
  auto r = (*t)->Step(x, y);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->applied);
  ASSERT_TRUE(r->site.has_value());
  EXPECT_EQ(r->site->node, "scale_up");
  EXPECT_EQ(r->site->model_node, "scale_up");
  EXPECT_FALSE(r->site->backward);
  EXPECT_GT(r->site->nonfinite, 0);
}

}  // namespace
}  // namespace amptrain::executor::train
