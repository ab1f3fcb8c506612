// Shared helpers of the Trainer suites (trainer_test.cc, amp_trainer_test.cc):
// a small SimpleCNN (8x8 inputs, `classes` classes), synthetic data for it,
// a loop configuration, temporary folders and bitwise state comparison.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "executor/train/train_loop.h"
#include "executor/train/trainer.h"
#include "models/builders.h"

namespace amptrain::executor::train::testing {

namespace fs = std::filesystem;

inline std::unique_ptr<ir::Graph> SmallCnn(int64_t classes, bool training_mode = true) {
  models::SimpleCnnConfig c;
  c.height = c.width = 8;
  c.num_classes = classes;
  c.training_mode = training_mode;
  c.seed = 3;
  auto g = models::BuildSimpleCnn(c);
  EXPECT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE((*g)->InferShapes().ok());
  return std::move(*g);
}

inline data::Dataset Synthetic(const std::string& split) {
  auto spec = data::ParseDataSpec("synthetic:N=320,C=1,H=8,W=8,classes=4,seed=1");
  EXPECT_TRUE(spec.ok());
  auto ds = data::LoadDataset(*spec, split);
  EXPECT_TRUE(ds.ok()) << ds.status().message();
  return *ds;
}

inline LoopConfig Loop(int64_t steps, const std::string& dir = "") {
  LoopConfig l;
  l.steps = steps;
  l.batch_size = 32;
  l.seed = 5;
  l.normalization = {{0.5f}, {0.2f}};
  l.checkpoint_dir = dir;
  l.evaluate = false;
  l.log_every = 1000;
  return l;
}

inline fs::path TempDir(const std::string& name, const std::string& prefix = "amptrain_trainer_") {
  fs::path p = fs::temp_directory_path() / (prefix + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  return p;
}

inline void ExpectBitwiseEqual(const std::map<std::string, ir::Tensor>& a, const std::map<std::string, ir::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) {
    ASSERT_TRUE(b.count(name)) << name;
    EXPECT_TRUE(t == b.at(name)) << name << " differs";
  }
}

}  // namespace amptrain::executor::train::testing
