// TensorBoard event files: CRC-32C, the TFRecord framing, and Python's
// tensorboard package reading our scalars back.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "executor/train/file_util.h"
#include "executor/train/tensorboard.h"
#include "tests/common/python_env.h"

namespace amptrain::executor::train {
namespace {

namespace fs = std::filesystem;
using ::amptrain::testing::Py;
using ::amptrain::testing::PyHas;
using ::amptrain::testing::PySkip;

class TensorBoardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           StrCat("amptrain_tb_", ::getpid(), "_", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
};

uint32_t ReadLittleEndian(const std::string& bytes, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  return static_cast<uint32_t>(v);
}

uint32_t Masked(std::string_view bytes) {
  uint32_t c = Crc32c(bytes);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

// Vectors from RFC 3720 B.4 and the usual check string.
TEST(TensorBoardCrcTest, Crc32cKnownVectors) {
  EXPECT_EQ(Crc32c(""), 0u);
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string up, down;
  for (int i = 0; i < 32; ++i) {
    up += static_cast<char>(i);
    down += static_cast<char>(31 - i);
  }
  EXPECT_EQ(Crc32c(up), 0x46DD794Eu);
  EXPECT_EQ(Crc32c(down), 0x113FDB5Cu);
}

// Without the oracle: one record per event, each with both CRCs correct.
TEST_F(TensorBoardTest, RecordsAreFramedAndChecksummed) {
  auto writer = TensorBoardWriter::Open(dir_.string());
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  ASSERT_TRUE((*writer)->Scalars(1, {{"loss", 0.5}}).ok());
  ASSERT_TRUE((*writer)->Scalars(2, {{"loss", 0.25}, {"lr", 1e-3}}).ok());
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_EQ(fs::path((*writer)->path()).parent_path(), dir_);
  EXPECT_EQ(fs::path((*writer)->path()).filename().string().rfind("events.out.tfevents.", 0), 0u);

  auto bytes = ReadFileBytes((*writer)->path());
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  std::vector<std::string> records;
  for (size_t at = 0; at < bytes->size();) {
    ASSERT_LE(at + 12, bytes->size());
    const uint64_t length = ReadLittleEndian(*bytes, at, 4) | (uint64_t{ReadLittleEndian(*bytes, at + 4, 4)} << 32);
    EXPECT_EQ(ReadLittleEndian(*bytes, at + 8, 4), Masked(std::string_view(*bytes).substr(at, 8)));
    ASSERT_LE(at + 16 + length, bytes->size());
    records.push_back(bytes->substr(at + 12, length));
    EXPECT_EQ(ReadLittleEndian(*bytes, at + 12 + length, 4), Masked(records.back()));
    at += 16 + length;
  }
  ASSERT_EQ(records.size(), 3u);
  EXPECT_NE(records[0].find("brain.Event:2"), std::string::npos);
  EXPECT_NE(records[2].find("lr"), std::string::npos);
}

// The reader TensorBoard itself uses must see every tag, step and value; it
// also rechecks each record's CRCs, which the accumulator only logs on failure.
TEST_F(TensorBoardTest, PythonTensorBoardReadsOurScalars) {
  if (!PyHas("tensorboard")) GTEST_SKIP() << PySkip("tensorboard");
  const std::vector<std::pair<int64_t, std::vector<std::pair<std::string, double>>>> steps = {
      {0, {{"train/loss", 2.5}, {"train/lr", 0.1}}},
      {10, {{"train/loss", 1.125}, {"train/lr", 0.05}, {"train/loss_scale", 65536}}},
      {25, {{"train/loss", 0.3}, {"train/lr", 1e-4}}},
  };
  auto writer = TensorBoardWriter::Open((dir_ / "logs").string());
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  for (const auto& [step, values] : steps) ASSERT_TRUE((*writer)->Scalars(step, values).ok());
  ASSERT_TRUE((*writer)->Flush().ok());

  const fs::path script = dir_ / "read.py", out = dir_ / "scalars.txt";
  std::ofstream(script) << R"(import struct, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c
path, out = sys.argv[1], sys.argv[2]
data, at, records = open(path, 'rb').read(), 0, 0
while at < len(data):
    (n,) = struct.unpack('<Q', data[at:at + 8])
    assert struct.unpack('<I', data[at + 8:at + 12])[0] == masked_crc32c(data[at:at + 8])
    assert struct.unpack('<I', data[at + 12 + n:at + 16 + n])[0] == masked_crc32c(data[at + 12:at + 12 + n])
    at, records = at + 16 + n, records + 1
acc = EventAccumulator(path)
acc.Reload()
with open(out, 'w') as f:
    f.write('records %d version %r\n' % (records, acc.file_version))
    for tag in sorted(acc.Tags()['scalars']):
        for e in acc.Scalars(tag):
            f.write('%s %d %r\n' % (tag, e.step, e.value))
)";
  const std::string cmd = StrCat(Py(), "'", script.string(), "' '", (*writer)->path(), "' '", out.string(), "'");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;

  std::ifstream in(out);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(line, "records 4 version 2.0");
  std::map<std::string, std::vector<std::pair<int64_t, double>>> read;
  std::string tag;
  int64_t step;
  double value;
  while (in >> tag >> step >> value) read[tag].emplace_back(step, value);
  std::map<std::string, std::vector<std::pair<int64_t, double>>> expected;
  for (const auto& [s, values] : steps)
    for (const auto& [t, v] : values) expected[t].emplace_back(s, static_cast<float>(v));  // simple_value is a float
  EXPECT_EQ(read, expected);
}

TEST_F(TensorBoardTest, RefusesARegularFileAsDirectory) {
  fs::create_directories(dir_);
  const fs::path file = dir_ / "not_a_dir";
  std::ofstream(file) << "keep me";
  auto writer = TensorBoardWriter::Open(file.string());
  ASSERT_FALSE(writer.ok());
  EXPECT_EQ(writer.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(writer.status().message().find(file.string()), std::string::npos) << writer.status().message();
  EXPECT_EQ(*ReadFileBytes(file.string()), "keep me");
  EXPECT_FALSE(TensorBoardWriter::Open("").ok());
}

// Two writers opened in the same second by one process get distinct files;
// missing parents are created; a closed writer and an empty tag are clean errors.
TEST_F(TensorBoardTest, NeverOverwritesAndChecksItsInputs) {
  const std::string nested = (dir_ / "a" / "b").string();
  auto first = TensorBoardWriter::Open(nested);
  auto second = TensorBoardWriter::Open(nested);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_NE((*first)->path(), (*second)->path());
  EXPECT_TRUE(fs::exists((*first)->path()));
  EXPECT_TRUE(fs::exists((*second)->path()));

  Status empty_tag = (*first)->Scalars(3, {{"", 1.0}});
  EXPECT_EQ(empty_tag.code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE((*first)->Close().ok());
  EXPECT_TRUE((*first)->Close().ok());
  Status closed = (*first)->Scalars(4, {{"loss", 1.0}});
  EXPECT_EQ(closed.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(closed.message().find((*first)->path()), std::string::npos) << closed.message();
}

}  // namespace
}  // namespace amptrain::executor::train
