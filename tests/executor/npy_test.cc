// .npy reading and writing: round trips of every dtype, files written by
// numpy itself (when the venv has numpy), and malformed
// headers and truncated data.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "executor/npy.h"
#include "tests/common/python_env.h"

namespace amptrain::executor {
namespace {

using ::amptrain::testing::Py;
using ::amptrain::testing::PyHas;
using ::amptrain::testing::PySkip;

namespace fs = std::filesystem;
using ir::DType;
using ir::Tensor;

class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("amptrain_npy_test_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  void WriteBytes(const std::string& name, const std::string& bytes) const {
    std::ofstream(Path(name), std::ios::binary) << bytes;
  }
  fs::path dir_;
};

Tensor Patterned(DType dtype, std::vector<int64_t> dims) {
  Tensor t = *Tensor::Zeros(dtype, std::move(dims));
  auto* bytes = static_cast<uint8_t*>(t.raw());
  for (size_t i = 0; i < t.nbytes(); ++i) bytes[i] = static_cast<uint8_t>(i * 37 + 11);
  if (dtype == DType::kBool)
    for (int64_t i = 0; i < t.num_elements(); ++i) bytes[i] = i % 3 == 0;
  if (dtype == DType::kFloat16)  // finite halves: clear the exponent's top bit
    for (int64_t i = 0; i < t.num_elements(); ++i) t.data<uint16_t>()[i] &= 0xbfff;
  if (dtype == DType::kFloat32)
    for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = 0.5f * static_cast<float>(i) - 3.0f;
  if (dtype == DType::kFloat64)
    for (int64_t i = 0; i < t.num_elements(); ++i) t.data<double>()[i] = 1e-3 * static_cast<double>(i) - 1.0;
  return t;
}

TEST_F(NpyTest, RoundTripsEveryDType) {
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kInt64, DType::kInt32, DType::kInt8,
                      DType::kUInt8, DType::kBool}) {
    for (std::vector<int64_t> dims : {std::vector<int64_t>{2, 3, 5}, {7}, {}, {0, 4}}) {
      Tensor t = Patterned(dtype, dims);
      std::string path = Path("t.npy");
      ASSERT_TRUE(WriteNpy(path, t).ok());
      auto back = ReadNpy(path);
      ASSERT_TRUE(back.ok()) << back.status().ToString();
      EXPECT_TRUE(*back == t) << ir::DTypeName(dtype) << " dims " << dims.size();
      EXPECT_EQ(fs::file_size(path) % 64, t.nbytes() % 64) << "header not padded to 64 bytes";
    }
  }
  EXPECT_FALSE(fs::exists(Path("t.npy.tmp." + std::to_string(getpid()))));
}

TEST_F(NpyTest, BFloat16IsWrittenAsFloat32) {
  Tensor t = *Tensor::Zeros(DType::kBFloat16, {3});
  for (int i = 0; i < 3; ++i) t.data<uint16_t>()[i] = ir::FloatToBFloat16(1.5f * static_cast<float>(i) - 1.0f);
  auto bytes = SerializeNpy(t);
  ASSERT_TRUE(bytes.ok());
  EXPECT_NE(bytes->find("bfloat16"), std::string::npos);
  auto back = ParseNpy(*bytes, "bf16");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->dtype(), DType::kFloat32);
  EXPECT_EQ(back->data<float>()[0], -1.0f);
  EXPECT_EQ(back->data<float>()[2], 2.0f);
}

std::string Npy(const std::string& dict, const std::string& data, char major = 1) {
  std::string header = dict + "\n";
  std::string out = std::string("\x93NUMPY", 6) + major + '\0';
  size_t len = header.size();
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>(len >> 8);
  if (major != 1) out += std::string(2, '\0');
  return out + header + data;
}

void ExpectError(const StatusOr<Tensor>& r, const std::string& fragment) {
  ASSERT_FALSE(r.ok()) << "expected an error containing '" << fragment << "'";
  EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().message();
}

TEST_F(NpyTest, ParsesVersions2And3AndOddSpacing) {
  std::string data(8, '\0');
  data[0] = 1;
  data[4] = 2;
  for (char major : {'\1', '\2', '\3'}) {
    auto t = ParseNpy(Npy("{\"shape\":(2,),\"descr\":\"<i4\",  \"fortran_order\" : False}", data, major), "v");
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(t->dtype(), DType::kInt32);
    EXPECT_EQ(t->data<int32_t>()[1], 2);
  }
}

TEST_F(NpyTest, RejectsMalformedFiles) {
  std::string f4x2(8, '\0');
  const std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  ASSERT_TRUE(ParseNpy(Npy(ok, f4x2), "ok").ok());
  ExpectError(ParseNpy("", "f"), "bad magic");
  ExpectError(ParseNpy("hello world, not numpy", "f"), "bad magic");
  ExpectError(ParseNpy(std::string("\x93NUMPY\x01\x00", 8), "f"), "truncated .npy header");
  ExpectError(ParseNpy(Npy(ok, f4x2).substr(0, 30), "f"), "truncated .npy header");
  ExpectError(ParseNpy(Npy(ok, f4x2, '\4'), "f"), "unsupported .npy format version 4.0");
  ExpectError(ParseNpy(Npy(ok, f4x2.substr(0, 5)), "f"), "truncated file");
  ExpectError(ParseNpy(Npy(ok, f4x2 + "xx"), "f"), "data is 10 bytes");
  ExpectError(ParseNpy(Npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", f4x2), "f"), "Fortran");
  ExpectError(ParseNpy(Npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", f4x2), "f"), "big-endian");
  ExpectError(ParseNpy(Npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", f4x2), "f"),
              "dtype '<c8' is not supported");
  ExpectError(ParseNpy(Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", f4x2), "f"), ">= 0");
  ExpectError(ParseNpy(Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,), }", f4x2), "f"), "integers");
  ExpectError(ParseNpy(Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999), }", ""),
                       "f"),
              "too large");
  ExpectError(ParseNpy(Npy("{'descr': '<f4', 'shape': (2,), }", f4x2), "f"), "missing key 'fortran_order'");
  ExpectError(ParseNpy(Npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", f4x2), "f"),
              "duplicate key");
  ExpectError(ParseNpy(Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", f4x2), "f"),
              "unexpected key 'x'");
  ExpectError(ParseNpy(Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk", f4x2), "f"),
              "unexpected text");
  ExpectError(ParseNpy(Npy("['descr']", f4x2), "f"), "not a dict");
  ExpectError(ParseNpy(Npy("{'descr: '<f4'", f4x2), "f"), "bad .npy header");
  ExpectError(ReadNpy(Path("absent.npy")), "does not exist");
}

// Issue 9 F5/F6: a FIFO blocked the read forever and /dev/zero was read
// until memory ran out; a folder said "bad magic". Each is one clear error.
TEST_F(NpyTest, OnlyRegularFilesAreRead) {
  const std::string fifo = Path("in.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ExpectError(ReadNpy(fifo), "a FIFO, not a regular file");
  ExpectError(ReadNpy("/dev/zero"), "a device, not a regular file");
  ExpectError(ReadNpy(dir_.string()), "is a folder");
}

TEST_F(NpyTest, ReadsFilesWrittenByNumpy) {
  if (!PyHas("numpy"))
    GTEST_SKIP() << PySkip("numpy") << ": numpy-written files not checked";
  std::string script = Path("gen.py");
  std::ofstream(script) << "import numpy as np, sys\n"
                           "d = sys.argv[1]\n"
                           "np.save(d + '/f4.npy', np.arange(12, dtype=np.float32).reshape(3, 4) / 4)\n"
                           "np.save(d + '/f2.npy', np.array([1.5, -2.0, 65504.0], dtype=np.float16))\n"
                           "np.save(d + '/i8.npy', np.array([[-5], [7]], dtype=np.int64))\n"
                           "np.save(d + '/b1.npy', np.array([True, False, True]))\n"
                           "np.save(d + '/u1.npy', np.array(200, dtype=np.uint8))\n"
                           "np.save(d + '/f8t.npy', np.arange(6, dtype=np.float64).reshape(2, 3).T)\n"
                           "np.save(d + '/fortran.npy', np.asfortranarray(np.ones((2, 3), np.float32)))\n"
                           "np.lib.format.write_array(open(d + '/v2.npy', 'wb'), np.int32([3, 4]), version=(2, 0))\n"
                           "x = np.load(d + '/back.npy')\n"
                           "assert x.dtype == np.int32 and x.shape == (2, 2) and x.tolist() == [[1, -2], [3, 4]], x\n";
  std::vector<int32_t> back = {1, -2, 3, 4};
  Tensor bt = *Tensor::Zeros(DType::kInt32, {2, 2});
  std::copy(back.begin(), back.end(), bt.data<int32_t>());
  ASSERT_TRUE(WriteNpy(Path("back.npy"), bt).ok());
  ASSERT_EQ(std::system((Py() + script + " " + dir_.string()).c_str()), 0) << "numpy could not read our file";

  auto f4 = ReadNpy(Path("f4.npy"));
  ASSERT_TRUE(f4.ok()) << f4.status().ToString();
  EXPECT_EQ(f4->dims(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(f4->data<float>()[5], 1.25f);
  auto f2 = ReadNpy(Path("f2.npy"));
  ASSERT_TRUE(f2.ok());
  EXPECT_EQ(f2->dtype(), DType::kFloat16);
  EXPECT_EQ(ir::HalfToFloat(f2->data<uint16_t>()[2]), 65504.0f);
  auto i8 = ReadNpy(Path("i8.npy"));
  ASSERT_TRUE(i8.ok());
  EXPECT_EQ(i8->data<int64_t>()[0], -5);
  auto b1 = ReadNpy(Path("b1.npy"));
  ASSERT_TRUE(b1.ok());
  EXPECT_EQ(b1->dtype(), DType::kBool);
  EXPECT_EQ(b1->data<uint8_t>()[1], 0);
  auto u1 = ReadNpy(Path("u1.npy"));
  ASSERT_TRUE(u1.ok());
  EXPECT_EQ(u1->rank(), 0u);
  EXPECT_EQ(u1->data<uint8_t>()[0], 200);
  auto v2 = ReadNpy(Path("v2.npy"));
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  EXPECT_EQ(v2->data<int32_t>()[1], 4);
  // numpy saves a transposed C array as fortran_order True.
  ExpectError(ReadNpy(Path("f8t.npy")), "Fortran");
  ExpectError(ReadNpy(Path("fortran.npy")), "Fortran");
}

}  // namespace
}  // namespace amptrain::executor
