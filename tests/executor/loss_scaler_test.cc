// TESTING.md's loss-scaler scenarios that need no model, after PyTorch's
// GradScaler tests.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "executor/train/loss_scaler.h"
#include "executor/train/optimizer.h"

namespace amptrain::executor::train {
namespace {

using ir::DType;
using ir::Tensor;
using TensorMap = std::map<std::string, Tensor>;

LossScaler Make(const LossScalerConfig& c) {
  auto s = LossScaler::Create(c);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return *s;
}

TensorMap CloneAll(const TensorMap& m) {
  TensorMap out;
  for (const auto& [name, t] : m) out.emplace(name, t.Clone());
  return out;
}

// PyTorch's test_grad_scaling_update_scale: scale 4, growth interval 2.
TEST(LossScalerTest, GrowthAndBackoff) {
  LossScaler s = Make({.init_scale = 4.0f, .growth_interval = 2});
  EXPECT_TRUE(*s.Update(false));
  EXPECT_EQ(s.scale(), 4.0f);
  EXPECT_EQ(s.growth_tracker(), 1);
  EXPECT_TRUE(*s.Update(false));
  EXPECT_EQ(s.scale(), 8.0f);
  EXPECT_EQ(s.growth_tracker(), 0);
  EXPECT_TRUE(*s.Update(false));
  EXPECT_EQ(s.growth_tracker(), 1);
  EXPECT_FALSE(*s.Update(true, "fc.weight"));
  EXPECT_EQ(s.scale(), 4.0f);
  EXPECT_EQ(s.growth_tracker(), 0);  // the tracker resets
  EXPECT_EQ(s.skipped_steps(), 1);
}

TEST(LossScalerTest, FloorAndCeiling) {
  LossScaler s = Make({.init_scale = 2.0f, .growth_interval = 1, .max_scale = 8.0f, .max_consecutive_overflows = 0});
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(*s.Update(false));
  EXPECT_EQ(s.scale(), 8.0f);
  for (int i = 0; i < 10; ++i) ASSERT_FALSE(*s.Update(true));
  EXPECT_EQ(s.scale(), 1.0f);
}

TEST(LossScalerTest, StaticScaleSkipsOverflowsWithoutMoving) {
  LossScaler s = Make({.dynamic = false, .init_scale = 128.0f, .growth_interval = 1});
  EXPECT_TRUE(*s.Update(false));
  EXPECT_FALSE(*s.Update(true));
  EXPECT_EQ(s.scale(), 128.0f);
  EXPECT_EQ(s.skipped_steps(), 1);
}

// The check reads the gradients without writing them; the square sum is of
// the unscaled values; fp16/bf16 gradients (O3) are checked the same way.
TEST(LossScalerTest, CheckUnscalesInRegistersAndSumsSquares) {
  GradientChecker checker;
  TensorMap grads = {{"a", Tensor::Floats({1024.0f, -3.0f * 1024.0f}, {2})}, {"b", Tensor::Floats({2048.0f}, {1})}};
  const TensorMap before = CloneAll(grads);
  auto r = checker.Check(grads, 1024.0f);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->found_inf);
  EXPECT_EQ(r->sum_squares, 1.0 + 9.0 + 4.0);
  for (const auto& [name, t] : before) EXPECT_TRUE(grads[name] == t) << name << " was written";
  EXPECT_EQ(GradientChecker::InverseScale(3.0f), static_cast<float>(1.0 / 3.0));
  Tensor half = *Tensor::Zeros(DType::kFloat16, {3});
  half.data<uint16_t>()[1] = ir::FloatToHalf(std::numeric_limits<float>::infinity());
  TensorMap mixed = {{"a", grads["a"]}, {"h", half}};
  auto m = checker.Check(mixed, 2.0f);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(m->found_inf);
  EXPECT_EQ(m->first_overflow, "h");
  EXPECT_FALSE(checker.Check(grads, 0.0f).ok());
  // A finite gradient whose unscaled value overflows fp32 is caught too.
  TensorMap big = {{"w", Tensor::Floats({3e38f}, {1})}};
  EXPECT_TRUE(checker.Check(big, 0.5f)->found_inf);
}

// inf/NaN at every gradient position: detected every time, named, and the
// skipped step changes no parameter or moment (bitwise).
TEST(LossScalerTest, NonFiniteAtEveryPositionIsDetectedAndSkipped) {
  auto opt = std::move(Optimizer::Create(OptimizerConfig{.kind = "adam"})).value();
  TensorMap params = {{"a", Tensor::Floats({0.5f, -1.0f, 2.0f}, {3})}, {"b", Tensor::Floats({1.0f, 3.0f}, {2})}};
  const TensorMap clean = {{"a", Tensor::Floats({8.0f, -16.0f, 4.0f}, {3})}, {"b", Tensor::Floats({2.0f, 1.0f}, {2})}};
  ASSERT_TRUE(opt->Step(params, clean, 0.01f).ok());  // moments exist before the overflows
  const TensorMap params_before = CloneAll(params);
  const TensorMap slots_before = CloneAll(opt->StateTensors());
  LossScaler scaler = Make({.max_consecutive_overflows = 0});
  GradientChecker checker;
  int cases = 0;
  for (const char* name : {"a", "b"}) {
    for (int64_t i = 0; i < clean.at(name).num_elements(); ++i) {
      for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                        std::numeric_limits<float>::quiet_NaN()}) {
        TensorMap grads = CloneAll(clean);
        grads[name].data<float>()[i] = bad;
        auto check = checker.Check(grads, scaler.scale());
        ASSERT_TRUE(check.ok());
        EXPECT_TRUE(check->found_inf) << name << "[" << i << "] = " << bad;
        EXPECT_EQ(check->first_overflow, name);
        auto applies = scaler.Update(check->found_inf, check->first_overflow);
        ASSERT_TRUE(applies.ok());
        if (*applies) {
          ASSERT_TRUE(opt->Step(params, grads, 0.01f).ok());
        }
        EXPECT_FALSE(*applies);
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 15);
  EXPECT_EQ(scaler.skipped_steps(), 15);
  EXPECT_EQ(opt->step_count(), 1);
  for (const auto& [name, t] : params_before) EXPECT_TRUE(params[name] == t) << name;
  for (const auto& [name, t] : opt->StateTensors()) EXPECT_TRUE(slots_before.at(name) == t) << name;
}

// Starting from 1e38 the first steps overflow (fp16 gradients become inf),
// are skipped, and the scale halves until a step applies.
TEST(LossScalerTest, HugeInitialScaleBacksOffUntilStepsApply) {
  LossScaler scaler = Make({.init_scale = 1e38f, .max_consecutive_overflows = 0});
  GradientChecker checker;
  const float true_grad = 10.0f;
  int skipped = 0;
  float last_overflowing_scale = 0.0f;
  while (true) {
    const float scale = scaler.scale();
    // The fp16 backward: the scaled gradient rounded to fp16, then widened.
    TensorMap grads = {{"w", Tensor::Floats({ir::HalfToFloat(ir::FloatToHalf(true_grad * scale))}, {1})}};
    auto check = checker.Check(grads, scale);
    ASSERT_TRUE(check.ok());
    auto applies = scaler.Update(check->found_inf, check->first_overflow);
    ASSERT_TRUE(applies.ok());
    if (*applies) {
      EXPECT_NEAR(std::sqrt(check->sum_squares), true_grad, true_grad * 1e-3);
      break;
    }
    EXPECT_EQ(scaler.scale(), scale * 0.5f);
    last_overflowing_scale = scale;
    ASSERT_LT(++skipped, 200);
  }
  EXPECT_GT(skipped, 100);  // log2(1e38 * 10 / 65504) ~ 113.5
  EXPECT_EQ(scaler.skipped_steps(), skipped);
  EXPECT_GT(true_grad * last_overflowing_scale, ir::kHalfMax);
  EXPECT_LE(true_grad * scaler.scale(), ir::kHalfMax);
}

TEST(LossScalerTest, StuckGuardNamesTheFirstOverflow) {
  LossScaler s = Make({.max_consecutive_overflows = 5});
  for (int i = 0; i < 4; ++i) ASSERT_FALSE(*s.Update(true, "conv1.weight"));
  ASSERT_TRUE(*s.Update(false));  // a clean step resets the count
  for (int i = 0; i < 4; ++i) ASSERT_FALSE(*s.Update(true, i == 0 ? "layer4.0.bn1.bias" : "fc.weight"));
  auto stuck = s.Update(true, "fc.weight");
  ASSERT_FALSE(stuck.ok());
  EXPECT_EQ(stuck.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(stuck.status().message().find("5 consecutive"), std::string::npos) << stuck.status().message();
  EXPECT_NE(stuck.status().message().find("'layer4.0.bn1.bias'"), std::string::npos) << stuck.status().message();
}

TEST(LossScalerTest, StateRoundTripContinuesExactly) {
  LossScaler a = Make({.init_scale = 1024.0f, .growth_interval = 3});
  for (bool inf : {false, false, false, true, false, true, false}) ASSERT_TRUE(a.Update(inf, "x").ok());
  LossScaler b = Make({.init_scale = 1024.0f, .growth_interval = 3});
  ASSERT_TRUE(b.LoadStateJson(nlohmann::json::parse(a.StateJson().dump())).ok());
  EXPECT_EQ(b.StateJson(), a.StateJson());
  for (bool inf : {false, false, true, false, false, false}) {
    EXPECT_EQ(*a.Update(inf), *b.Update(inf));
    EXPECT_EQ(a.scale(), b.scale());
    EXPECT_EQ(a.growth_tracker(), b.growth_tracker());
  }
  nlohmann::json bad = a.StateJson();
  bad["scale"] = -1.0;
  EXPECT_FALSE(b.LoadStateJson(bad).ok());
  bad = a.StateJson();
  bad.erase("growth_tracker");
  EXPECT_FALSE(b.LoadStateJson(bad).ok());
  LossScaler fixed = Make({.dynamic = false});
  EXPECT_FALSE(fixed.LoadStateJson(a.StateJson()).ok());
}

TEST(LossScalerTest, RejectsBadConfigs) {
  EXPECT_FALSE(LossScaler::Create({.init_scale = 0.0f}).ok());
  EXPECT_FALSE(LossScaler::Create({.backoff_factor = 1.0f}).ok());
  EXPECT_FALSE(LossScaler::Create({.growth_interval = 0}).ok());
  EXPECT_FALSE(LossScaler::Create({.min_scale = 4.0f, .max_scale = 2.0f}).ok());
}

}  // namespace
}  // namespace amptrain::executor::train
