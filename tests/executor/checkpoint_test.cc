// Checkpoints: bitwise round trip, keep-last pruning, corruption detection,
// compatibility checks, and atomicity under SIGKILL.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "executor/train/checkpoint.h"

namespace amptrain::executor::train {
namespace {

namespace fs = std::filesystem;
using ir::DType;
using ir::Tensor;
using TensorMap = std::map<std::string, Tensor>;

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            StrCat("amptrain_ckpt_", ::getpid(), "_", ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::string> Entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  std::string dir_;
};

TensorMap Model(float v) {
  Tensor w = Tensor::Floats({v, 2, 3, 4, 5, 6}, {2, 3});
  return {{"conv.weight", w}, {"bn.running_mean", Tensor::Floats({0.5f, -0.25f}, {2})},
          {"bn.num_batches_tracked", Tensor::Int64s({12345}, {})}};
}

TensorMap Slots(float v) {
  return {{"conv.weight.exp_avg", Tensor::Floats({v, 0, 0, 0, 0, 1e-30f}, {2, 3})},
          {"conv.weight.exp_avg_sq", Tensor::Floats({1, 2, 3, 4, 5, v}, {2, 3})}};
}

TrainerState State(int64_t step) {
  TrainerState s;
  s.step = step;
  s.epoch = 3;
  s.lr_step = step - 1;
  s.optimizer_step = step - 1;
  s.data_epoch = 3;
  s.data_index = 640;
  s.config = {{"optimizer", {{"kind", "adamw"}, {"lr", 0.001}}}, {"amp", "O2"}};
  s.scaler = {{"scale", 32768.0}, {"growth_tracker", 17}};
  s.rng_state = 0xfedcba9876543210ull;
  s.precision_plan_hash = "sha256:0123abcd";
  return s;
}

TEST_F(CheckpointTest, RoundTripIsBitwise) {
  ASSERT_TRUE(SaveCheckpoint(dir_, Model(1.5f), Slots(0.25f), State(7), 3).ok());
  const std::string path = CheckpointPath(dir_, 7);
  EXPECT_EQ(fs::path(path).filename(), "ckpt-00000007");
  auto ckpt = LoadCheckpoint(path);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  for (const auto& [name, t] : Model(1.5f)) EXPECT_TRUE(ckpt->model.at(name) == t) << name;
  for (const auto& [name, t] : Slots(0.25f)) EXPECT_TRUE(ckpt->optimizer.at(name) == t) << name;
  EXPECT_EQ(ckpt->model.size(), 3u);
  const TrainerState want = State(7);
  const TrainerState& got = ckpt->state;
  EXPECT_EQ(got.step, want.step);
  EXPECT_EQ(got.epoch, want.epoch);
  EXPECT_EQ(got.lr_step, want.lr_step);
  EXPECT_EQ(got.optimizer_step, want.optimizer_step);
  EXPECT_EQ(got.data_epoch, want.data_epoch);
  EXPECT_EQ(got.data_index, want.data_index);
  EXPECT_EQ(got.config, want.config);
  EXPECT_EQ(got.scaler, want.scaler);
  EXPECT_EQ(got.rng_state, want.rng_state);
  EXPECT_EQ(got.precision_plan_hash, want.precision_plan_hash);
  EXPECT_EQ(*FindLatestCheckpoint(dir_), path);
  EXPECT_EQ(Entries(), std::vector<std::string>{"ckpt-00000007"});
  // Saving the same step again replaces it.
  ASSERT_TRUE(SaveCheckpoint(dir_, Model(2.5f), Slots(0.25f), State(7), 3).ok());
  EXPECT_TRUE(LoadCheckpoint(path)->model.at("conv.weight") == Model(2.5f).at("conv.weight"));
  EXPECT_EQ(Entries(), std::vector<std::string>{"ckpt-00000007"});
}

TEST_F(CheckpointTest, KeepsTheLastK) {
  EXPECT_EQ(FindLatestCheckpoint(dir_).status().code(), StatusCode::kNotFound);
  for (int64_t step = 1; step <= 5; ++step) ASSERT_TRUE(SaveCheckpoint(dir_, Model(step), Slots(0), State(step), 2).ok());
  EXPECT_EQ(Entries(), (std::vector<std::string>{"ckpt-00000004", "ckpt-00000005"}));
  // A temp folder of a dead writer is ignored, then cleaned by the next save.
  fs::create_directories(dir_ + "/.tmp-ckpt-9-999999999");
  std::ofstream(dir_ + "/.tmp-ckpt-9-999999999/trainer_state.json") << "{";
  EXPECT_EQ(*FindLatestCheckpoint(dir_), CheckpointPath(dir_, 5));
  ASSERT_TRUE(SaveCheckpoint(dir_, Model(6), Slots(0), State(6), 0).ok());  // 0 keeps all
  EXPECT_EQ(Entries(), (std::vector<std::string>{"ckpt-00000004", "ckpt-00000005", "ckpt-00000006"}));
  EXPECT_FALSE(SaveCheckpoint(dir_, Model(6), Slots(0), State(-1), 1).ok());
}

TEST_F(CheckpointTest, CorruptionIsACleanErrorNamingTheFile) {
  struct Case {
    const char* file;
    bool truncate;  // else flip one byte
    size_t at;
  };
  const Case cases[] = {{"model.safetensors", false, 200}, {"model.safetensors", false, 12},
                        {"optimizer.safetensors", true, 40}, {"trainer_state.json", false, 60},
                        {"trainer_state.json", true, 10}};
  for (const Case& c : cases) {
    fs::remove_all(dir_);
    ASSERT_TRUE(SaveCheckpoint(dir_, Model(1), Slots(1), State(1), 2).ok());
    ASSERT_TRUE(SaveCheckpoint(dir_, Model(2), Slots(2), State(2), 2).ok());
    const std::string file = CheckpointPath(dir_, 2) + "/" + c.file;
    if (c.truncate) {
      fs::resize_file(file, c.at);
    } else {
      std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
      f.seekg(static_cast<std::streamoff>(c.at));
      char b = 0;
      f.get(b);
      f.seekp(static_cast<std::streamoff>(c.at));
      f.put(static_cast<char>(b ^ 0x04));
    }
    auto loaded = LoadCheckpoint(CheckpointPath(dir_, 2));
    ASSERT_FALSE(loaded.ok()) << c.file << " at " << c.at;
    EXPECT_NE(loaded.status().message().find(c.file), std::string::npos) << loaded.status().message();
    EXPECT_EQ(*FindLatestCheckpoint(dir_), CheckpointPath(dir_, 1)) << c.file;
  }
}

// A FIFO, a folder or a device in place of a checkpoint file (issue 9 F5):
// refused at once, naming it, and resume falls back to the previous one.
TEST_F(CheckpointTest, SpecialFilesAreRefusedWithoutBlocking) {
  for (const char* file : {"model.safetensors", "optimizer.safetensors", "trainer_state.json"}) {
    for (const char* kind : {"fifo", "folder", "device"}) {
      fs::remove_all(dir_);
      ASSERT_TRUE(SaveCheckpoint(dir_, Model(1), Slots(1), State(1), 2).ok());
      ASSERT_TRUE(SaveCheckpoint(dir_, Model(2), Slots(2), State(2), 2).ok());
      const std::string path = CheckpointPath(dir_, 2) + "/" + file;
      fs::remove(path);
      if (std::string(kind) == "fifo") {
        ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
      } else if (std::string(kind) == "folder") {
        fs::create_directory(path);
      } else {
        fs::create_symlink("/dev/zero", path);
      }
      auto loaded = LoadCheckpoint(CheckpointPath(dir_, 2));
      ASSERT_FALSE(loaded.ok()) << file << " as a " << kind;
      EXPECT_NE(loaded.status().message().find(file), std::string::npos) << loaded.status().message();
      EXPECT_EQ(*FindLatestCheckpoint(dir_), CheckpointPath(dir_, 1)) << file << " as a " << kind;
    }
  }
}

// A trainer_state.json nested 200,000 deep overflowed the stack in
// nlohmann's recursive dump() while the checksum was checked (found with the
// fuzz_checkpoint target): refused by its depth, and resume falls back.
TEST_F(CheckpointTest, DeeplyNestedStateIsRefused) {
  ASSERT_TRUE(SaveCheckpoint(dir_, Model(1), Slots(1), State(1), 2).ok());
  ASSERT_TRUE(SaveCheckpoint(dir_, Model(2), Slots(2), State(2), 2).ok());
  const std::string path = CheckpointPath(dir_, 2) + "/trainer_state.json";
  std::ofstream(path, std::ios::trunc) << "{\"checksum\":\"x\",\"a\":" << std::string(200000, '[')
                                       << std::string(200000, ']') << "}";
  auto loaded = LoadCheckpoint(CheckpointPath(dir_, 2));
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("nested more than"), std::string::npos) << loaded.status().message();
  EXPECT_EQ(*FindLatestCheckpoint(dir_), CheckpointPath(dir_, 1));
}

TEST_F(CheckpointTest, FolderNameMustMatchTheStep) {
  ASSERT_TRUE(SaveCheckpoint(dir_, Model(1), Slots(1), State(1), 2).ok());
  fs::rename(CheckpointPath(dir_, 1), CheckpointPath(dir_, 3));
  auto loaded = LoadCheckpoint(CheckpointPath(dir_, 3));
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("step 1"), std::string::npos) << loaded.status().message();
  auto latest = FindLatestCheckpoint(dir_);  // a checkpoint exists but none is usable
  EXPECT_EQ(latest.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(latest.status().message().find("ckpt-00000003"), std::string::npos) << latest.status().message();
}

TEST(CheckCompatibleTest, NamesTheFirstMismatch) {
  const TensorMap model = Model(1);
  EXPECT_TRUE(CheckCompatible(Model(2), model).ok());
  TensorMap c = Model(1);
  c.erase("bn.running_mean");
  EXPECT_NE(CheckCompatible(c, model).message().find("'bn.running_mean' is missing"), std::string::npos);
  c = Model(1);
  c["fc.bias"] = Tensor::Floats({1}, {1});
  EXPECT_NE(CheckCompatible(c, model).message().find("'fc.bias' is not in the model"), std::string::npos);
  c = Model(1);
  c["conv.weight"] = Tensor::Floats({1, 2, 3, 4, 5, 6}, {3, 2});
  Status s = CheckCompatible(c, model);
  EXPECT_NE(s.message().find("float32[3,2]"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("float32[2,3]"), std::string::npos) << s.message();
  c = Model(1);
  c["bn.num_batches_tracked"] = Tensor::Floats({1}, {});
  EXPECT_NE(CheckCompatible(c, model).message().find("'bn.num_batches_tracked'"), std::string::npos);
}

// A child writes 32 MB checkpoints in a loop (about 0.3 s each, so the kills
// land inside writes, fsyncs, renames and pruning alike) and is SIGKILLed at random
// moments; every ckpt-* folder left must load and hold the data its step
// wrote, and the newest must be what FindLatestCheckpoint returns.
TEST_F(CheckpointTest, SigkillLeavesTheLastCheckpointsLoadable) {
  constexpr int64_t kElements = 8 << 20;  // 32 MB of fp32
  auto big = [&](int64_t step) {
    Tensor t = *Tensor::Zeros(DType::kFloat32, {kElements});
    std::fill(t.data<float>(), t.data<float>() + kElements, static_cast<float>(step));
    return TensorMap{{"big", t}};
  };
  ASSERT_TRUE(SaveCheckpoint(dir_, big(1), Slots(1), State(1), 2).ok());
  std::mt19937 rng(20240601);
  int64_t next = 2;
  for (int round = 0; round < 3; ++round) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int64_t step = next;; ++step)
        if (!SaveCheckpoint(dir_, big(step), Slots(step), State(step), 2).ok()) ::_exit(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(100, 700)(rng)));
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer failed before it was killed";

    auto latest = FindLatestCheckpoint(dir_);
    ASSERT_TRUE(latest.ok()) << latest.status().ToString();
    int complete = 0;
    int64_t newest = -1;
    for (const auto& e : fs::directory_iterator(dir_)) {
      std::string name = e.path().filename().string();
      if (name.rfind("ckpt-", 0) != 0) continue;
      auto ckpt = LoadCheckpoint(e.path().string());
      ASSERT_TRUE(ckpt.ok()) << "round " << round << ": " << ckpt.status().ToString();
      const float want = static_cast<float>(ckpt->state.step);
      const float* data = ckpt->model.at("big").data<float>();
      ASSERT_TRUE(std::all_of(data, data + kElements, [&](float v) { return v == want; })) << name;
      EXPECT_GE(*latest, e.path().string());
      newest = std::max(newest, ckpt->state.step);
      ++complete;
    }
    EXPECT_GE(complete, 1);
    EXPECT_EQ(*latest, CheckpointPath(dir_, newest));
    next = newest + 1;
  }
  // The killed writers' temp folders go with the next save.
  ASSERT_TRUE(SaveCheckpoint(dir_, Model(1), Slots(1), State(next), 2).ok());
  for (const std::string& name : Entries()) EXPECT_EQ(name.rfind(".tmp", 0), std::string::npos) << name;
}

}  // namespace
}  // namespace amptrain::executor::train
