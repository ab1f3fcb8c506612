// The trainer's device path (state in device buffers, the batch staged, the
// loss, logits and check results copied back, checkpoints and export from
// host copies) on kernels::StagedCpuDevice(): the CPU kernels on memory the
// trainer reaches only through the device's copies, as on a GPU. Every step,
// the final state, evaluation, export and a resumed run must equal the host
// trainer's bitwise: the device path moves bytes, never changes them.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <limits>

#include "executor/train/train_loop.h"
#include "executor/train/trainer.h"
#include "ir/infer/infer_util.h"
#include "kernels/device.h"
#include "tests/executor/trainer_test_util.h"

namespace amptrain::executor::train {
namespace {

namespace fs = std::filesystem;
using ir::DType;
using testing::ExpectBitwiseEqual;
using testing::Loop;
using testing::SmallCnn;
using testing::Synthetic;

struct Case {
  std::string name;
  std::string optimizer = "adam";
  std::optional<amp::Level> level;
  DType low = DType::kFloat16;
  bool scaler = false;
  double clip = 0.0;
  int64_t nan_step = -1;  // a NaN injected into one gradient at this step
};

TrainConfig Config(const Case& c, std::shared_ptr<kernels::Device> device) {
  TrainConfig t;
  t.graph.num_classes = 4;
  t.threads = 1;
  t.seed = 7;
  t.optimizer.kind = c.optimizer;
  if (c.optimizer == "sgd") t.optimizer.momentum = 0.9f;
  t.clip_grad_norm = c.clip;
  if (c.level) {
    amp::Policy p;
    p.level = *c.level;
    p.low = c.low;
    t.graph.amp = p;
    t.low_weights = true;  // the low copies on every CPU, so that the test covers them
  }
  if (c.scaler) {
    LossScalerConfig s;
    s.init_scale = 1024.0f;
    s.growth_interval = 2;
    t.loss_scaler = s;
  }
  if (c.nan_step >= 0)
    t.gradient_hook = [step_at = c.nan_step](int64_t step, std::map<std::string, ir::Tensor>& grads) {
      if (step == step_at) ir::SetElementFromDouble(grads.begin()->second, 0, std::numeric_limits<double>::quiet_NaN());
    };
  t.device = std::move(device);
  return t;
}

std::map<std::string, ir::Tensor> Host(const StatusOr<std::map<std::string, ir::Tensor>>& s) {
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : std::map<std::string, ir::Tensor>{};
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

class StagedDevice : public ::testing::TestWithParam<Case> {};

TEST_P(StagedDevice, StepsStateEvaluationAndExportEqualTheHostBitwise) {
  const Case& c = GetParam();
  auto model = SmallCnn(4);
  auto host = Trainer::Create(*model, Config(c, nullptr));
  auto staged = Trainer::Create(*model, Config(c, kernels::StagedCpuDevice()));
  ASSERT_TRUE(host.ok()) << host.status().message();
  ASSERT_TRUE(staged.ok()) << staged.status().message();
  EXPECT_FALSE((*staged)->device().host_memory());

  data::Dataset train = Synthetic("train"), test = Synthetic("test");
  data::BatchIterator batches(train, 32, true, 0, {{0.5f}, {0.2f}}, {});
  ir::Tensor x, y;
  for (int64_t step = 0; step < 6; ++step) {
    ASSERT_TRUE(*batches.Next(&x, &y));
    auto a = (*host)->Step(x, y);
    auto b = (*staged)->Step(x, y);
    ASSERT_TRUE(a.ok()) << a.status().message();
    ASSERT_TRUE(b.ok()) << b.status().message();
    EXPECT_TRUE(SameBits(a->loss, b->loss)) << "step " << step << ": " << a->loss << " vs " << b->loss;
    EXPECT_EQ(a->correct, b->correct) << step;
    EXPECT_EQ(a->applied, b->applied) << step;
    EXPECT_EQ(a->applied, step != c.nan_step) << step;
    EXPECT_EQ(a->loss_scale, b->loss_scale) << step;
    EXPECT_TRUE(SameBits(a->grad_norm, b->grad_norm)) << step;
    EXPECT_EQ(a->overflow, b->overflow) << step;
  }
  ExpectBitwiseEqual(Host((*host)->HostModelState()), Host((*staged)->HostModelState()));
  ExpectBitwiseEqual(Host((*host)->HostOptimizerState()), Host((*staged)->HostOptimizerState()));
  EXPECT_EQ((*host)->optimizer().step_count(), (*staged)->optimizer().step_count());

  data::BatchIterator ha(test, 32, false, 0, {{0.5f}, {0.2f}}, {}), hb(test, 32, false, 0, {{0.5f}, {0.2f}}, {});
  auto ea = (*host)->Evaluate(ha);
  auto eb = (*staged)->Evaluate(hb);
  ASSERT_TRUE(ea.ok() && eb.ok()) << (ea.ok() ? eb.status().message() : ea.status().message());
  EXPECT_TRUE(SameBits(ea->loss, eb->loss));
  EXPECT_EQ(ea->accuracy, eb->accuracy);

  // Training goes on after an evaluation (the arenas were released).
  ASSERT_TRUE(*batches.Next(&x, &y));
  auto a = (*host)->Step(x, y);
  auto b = (*staged)->Step(x, y);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(SameBits(a->loss, b->loss));

  auto ga = (*host)->TrainedModel(true);
  auto gb = (*staged)->TrainedModel(true);
  ASSERT_TRUE(ga.ok() && gb.ok());
  for (const auto& [name, t] : Host((*host)->HostModelState())) {
    const ir::Tensor* va = (*ga)->ConstantValue((*ga)->FindValue(name));
    const ir::Tensor* vb = (*gb)->ConstantValue((*gb)->FindValue(name));
    ASSERT_TRUE(va && vb) << name;
    EXPECT_TRUE(*va == *vb) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Trainer, StagedDevice,
    ::testing::Values(Case{"fp32_adam"}, Case{"fp32_sgd_clipped", "sgd", {}, DType::kFloat16, false, 0.5},
                      Case{"o2_fp16_scaled_nan", "adam", amp::Level::kO2, DType::kFloat16, true, 0.0, 2},
                      Case{"o1_bf16_clipped", "adamw", amp::Level::kO1, DType::kBFloat16, false, 1.0},
                      Case{"o3_bf16", "adam", amp::Level::kO3, DType::kBFloat16}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(TrainerDevice, ResumedStagedRunEqualsAStraightHostRun) {
  auto model = SmallCnn(4);
  data::Dataset train = Synthetic("train");
  Case c{"resume", "sgd", amp::Level::kO2, DType::kBFloat16};
  fs::path straight_dir = testing::TempDir("device_straight"), resumed_dir = testing::TempDir("device_resumed");
  auto straight = Trainer::Create(*model, Config(c, nullptr));
  ASSERT_TRUE(straight.ok());
  ASSERT_TRUE(RunTraining(**straight, train, nullptr, Loop(12, straight_dir.string())).ok());

  auto first = Trainer::Create(*model, Config(c, kernels::StagedCpuDevice()));
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(RunTraining(**first, train, nullptr, Loop(6, resumed_dir.string())).ok());
  auto second = Trainer::Create(*model, Config(c, kernels::StagedCpuDevice()));
  ASSERT_TRUE(second.ok());
  LoopConfig resume = Loop(12, resumed_dir.string());
  resume.resume = "auto";
  auto r = RunTraining(**second, train, nullptr, resume);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->start_step, 6);
  ExpectBitwiseEqual(Host((*straight)->HostModelState()), Host((*second)->HostModelState()));
  ExpectBitwiseEqual(Host((*straight)->HostOptimizerState()), Host((*second)->HostOptimizerState()));
  // The checkpoints the two runs wrote at step 12 hold the same tensors.
  auto a = LoadCheckpoint(CheckpointPath(straight_dir.string(), 12));
  auto b = LoadCheckpoint(CheckpointPath(resumed_dir.string(), 12));
  ASSERT_TRUE(a.ok() && b.ok());
  ExpectBitwiseEqual(a->model, b->model);
  ExpectBitwiseEqual(a->optimizer, b->optimizer);
  fs::remove_all(straight_dir);
  fs::remove_all(resumed_dir);
}

TEST(TrainerDevice, DebugOverflowNeedsHostMemory) {
  auto model = SmallCnn(4);
  TrainConfig c = Config(Case{"x"}, kernels::StagedCpuDevice());
  c.debug_overflow = true;
  auto t = Trainer::Create(*model, c);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("--debug-overflow"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("staged as a device"), std::string::npos) << t.status().message();
}

}  // namespace
}  // namespace amptrain::executor::train
