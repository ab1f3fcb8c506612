// A fixture for the suites that run the built `amptrain` binary (CliTest,
// TrainCliTest, HostileInput): a fresh folder per test case, the command's
// exit code, stdout and stderr, and the checks every refusal must pass.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/e2e/e2e_util.h"

namespace amptrain::testing {

struct CliResult {
  // The exit code: 128 + N when the binary died of signal N (as the shell
  // reports it), 124 when it ran past the fixture's timeout.
  int code = -1;
  std::string out, err;
};

// Every entry under `dir`, by relative path: a regular file's bytes, or
// "<kind>" for anything else, so that a FIFO or a folder replaced by a
// regular file, a new temporary or a deleted file all show.
inline std::map<std::string, std::string> Snapshot(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> files;
  if (!fs::exists(dir)) return files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const fs::file_status s = e.symlink_status();
    const std::string name = fs::relative(e.path(), dir).string();
    files[name] = fs::is_regular_file(s) ? ReadFile(e.path())
                  : fs::is_directory(s)  ? "<folder>"
                  : fs::is_symlink(s)    ? "<symlink to " + fs::read_symlink(e.path()).string() + ">"
                  : fs::is_fifo(s)       ? "<fifo>"
                                         : "<special>";
  }
  return files;
}

// The loss of the first and the last progress report in a --metrics file.
inline std::pair<double, double> FirstAndLastLoss(const std::string& metrics) {
  std::istringstream lines(ReadFile(metrics));
  std::vector<double> losses;
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line);
    if (j["event"] == "progress") losses.push_back(j["loss"].get<double>());
  }
  EXPECT_GE(losses.size(), 2u) << ReadFile(metrics);
  return losses.size() < 2 ? std::pair{0.0, 0.0} : std::pair{losses.front(), losses.back()};
}

class CliFixture : public ::testing::Test {
 protected:
  // A command that runs longer than this is a hang: `timeout` ends it (code 124).
  static constexpr int kTimeoutS = 300;

  void SetUp() override {
    namespace fs = std::filesystem;
    binary_ = AMPTRAIN_BINARY_DIR "/tools/amptrain";
    ASSERT_TRUE(fs::exists(binary_)) << binary_ << " is not built (make amptrain)";
    const std::string suite = ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name();
    dir_ = fs::temp_directory_path() / ("amptrain_" + suite + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::filesystem::remove_all(dir_);
    std::filesystem::remove(dir_.string() + ".stdout");
    std::filesystem::remove(dir_.string() + ".stderr");
  }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  // Runs `amptrain args` through the shell; `env`: "NAME=value " assignments.
  // stdout and stderr go to files beside dir_, not in it.
  CliResult Cli(const std::string& args, const std::string& env = "") const {
    const std::string out = dir_.string() + ".stdout", err = dir_.string() + ".stderr";
    const std::string cmd =
        env + "timeout -k 10 " + std::to_string(kTimeoutS) + " " + binary_ + " " + args + " >" + out + " 2>" + err;
    const int status = std::system(cmd.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFile(out), ReadFile(err)};
  }

  // A failure: exit code `code`, and stderr exactly one line
  // "amptrain: error: ..." that contains `fragment`.
  CliResult ExpectOneLineError(const std::string& args, const std::string& fragment, int code = 1) const {
    CliResult r = Cli(args);
    EXPECT_EQ(r.code, code) << args << "\nstderr: " << r.err;
    EXPECT_EQ(r.err.rfind("amptrain: error: ", 0), 0u) << args << "\nstderr: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\nstderr: " << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << args << "\nstderr: " << r.err;
    return r;
  }

  // ExpectOneLineError, and nothing under dir_ changed: no output, no
  // temporary file, no user file lost or rewritten.
  CliResult ExpectRefused(const std::string& args, const std::string& fragment, int code = 1) const {
    const auto before = Snapshot(dir_);
    CliResult r = ExpectOneLineError(args, fragment, code);
    const auto after = Snapshot(dir_);
    EXPECT_TRUE(after == before) << args << "\nchanged the files under " << dir_ << Changes(before, after);
    return r;
  }

  // The names that differ between two snapshots, for a failure message.
  static std::string Changes(const std::map<std::string, std::string>& before,
                             const std::map<std::string, std::string>& after) {
    std::string s;
    for (const auto& [name, bytes] : before)
      if (!after.count(name)) s += "\n  removed: " + name;
      else if (after.at(name) != bytes) s += "\n  changed: " + name;
    for (const auto& [name, bytes] : after)
      if (!before.count(name)) s += "\n  added: " + name;
    return s;
  }

  std::string binary_;
  std::filesystem::path dir_;
};

// A small classification set (320 samples of 1x8x8, 4 classes), and
// `train` on it with small batches, one thread and a fixed seed.
inline constexpr const char* kSmallData = "synthetic:N=320,C=1,H=8,W=8,classes=4,seed=1";
inline std::string SmallTrain(const std::string& model, const std::string& extra) {
  return "train " + model + " --data " + kSmallData + " --batch-size 32 --threads 1 --seed 3 " + extra;
}

// CliFixture with model_, a SimpleCNN that fits kSmallData (8x8 inputs, 4
// classes), written by `amptrain models write`.
class SmallModelFixture : public CliFixture {
 protected:
  void SetUp() override {
    CliFixture::SetUp();
    model_ = Path("cnn4.onnx");
    ASSERT_EQ(Cli("models write simplecnn --image-size 8 --num-classes 4 -o " + model_).code, 0);
  }

  std::string model_;
};

}  // namespace amptrain::testing
