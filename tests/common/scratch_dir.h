// A fresh folder per test, removed afterwards: tmp/amptrain_<prefix>_<pid>_<test name>.
//
//   class MyTest : public testing::ScratchDirTest {
//    protected:
//     MyTest() : ScratchDirTest("csv") {}
//   };
//   TEST_F(MyTest, X) { const std::string f = WriteFile("a.csv", "1,2\n"); ... }
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace amptrain::testing {

class ScratchDirTest : public ::testing::Test {
 protected:
  explicit ScratchDirTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("amptrain_" + prefix_ + "_" + std::to_string(::getpid()) + "_" + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // `rel` under the folder.
  std::string Path(const std::string& rel) const { return (dir_ / rel).string(); }
  // Writes `bytes` to `rel` (making its folders); returns the path.
  std::string WriteFile(const std::string& rel, const std::string& bytes) const {
    const std::filesystem::path p = dir_ / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }

  std::filesystem::path dir_;

 private:
  std::string prefix_;
};

}  // namespace amptrain::testing
