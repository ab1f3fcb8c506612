// safetensors: round trip, the on-disk layout, and untrusted input.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "executor/npy.h"
#include "executor/train/safetensors.h"
#include "executor/train/sha256.h"
#include "tests/common/python_env.h"

namespace amptrain::executor::train {
namespace {

using ::amptrain::testing::Py;
using ::amptrain::testing::PyHas;
using ::amptrain::testing::PySkip;

using ir::DType;
using ir::Tensor;
using nlohmann::json;

std::map<std::string, Tensor> AllDTypes() {
  std::map<std::string, Tensor> m;
  const DType types[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt64,
                         DType::kInt32,   DType::kInt8,    DType::kUInt8,    DType::kBool};
  int k = 0;
  for (DType t : types) {
    Tensor x = *Tensor::Zeros(t, {2, 3});
    for (size_t i = 0; i < x.nbytes(); ++i) static_cast<unsigned char*>(x.raw())[i] = static_cast<unsigned char>(i * 7 + k);
    if (t == DType::kBool)
      for (int64_t i = 0; i < 6; ++i) x.data<uint8_t>()[i] = i % 2;
    m.emplace(StrCat("t", k++, "_", ir::DTypeName(t)), x);
  }
  m.emplace("scalar", Tensor::Scalar(3.5f));
  m.emplace("empty", *Tensor::Zeros(DType::kFloat32, {0, 4}));
  return m;
}

uint64_t HeaderLength(const std::string& bytes) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  return n;
}

std::string WithHeader(const std::string& header, const std::string& data) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

TEST(SafetensorsTest, RoundTripIsBitwise) {
  auto tensors = AllDTypes();
  auto bytes = SerializeSafetensors(tensors, {{"format", "pt"}});
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto back = ParseSafetensors(*bytes, "mem");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->metadata.at("format"), "pt");
  ASSERT_EQ(back->tensors.size(), tensors.size());
  for (const auto& [name, t] : tensors) EXPECT_TRUE(back->tensors.at(name) == t) << name;
  // Deterministic bytes.
  EXPECT_EQ(*SerializeSafetensors(tensors, {{"format", "pt"}}), *bytes);
}

// The layout the Hugging Face reader expects, checked by hand.
TEST(SafetensorsTest, HeaderLayout) {
  auto tensors = AllDTypes();
  std::string bytes = *SerializeSafetensors(tensors, {{"format", "pt"}});
  uint64_t n = HeaderLength(bytes);
  ASSERT_LE(n + 8, bytes.size());
  EXPECT_EQ((n + 8) % 8, 0u);
  std::string header = bytes.substr(8, n);
  EXPECT_EQ(header[0], '{');
  json j = json::parse(header);
  EXPECT_EQ(j["__metadata__"]["format"], "pt");
  EXPECT_EQ(j["t0_float32"]["dtype"], "F32");
  EXPECT_EQ(j["t1_float16"]["dtype"], "F16");
  EXPECT_EQ(j["t2_bfloat16"]["dtype"], "BF16");
  EXPECT_EQ(j["t8_bool"]["dtype"], "BOOL");
  EXPECT_EQ(j["t0_float32"]["shape"], json::array({2, 3}));
  EXPECT_EQ(j["scalar"]["shape"], json::array());
  // Tensors packed in name order, no gaps, covering the buffer.
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    EXPECT_EQ(j[name]["data_offsets"][0], offset) << name;
    offset += t.nbytes();
    EXPECT_EQ(j[name]["data_offsets"][1], offset) << name;
    EXPECT_EQ(std::memcmp(bytes.data() + 8 + n + j[name]["data_offsets"][0].get<uint64_t>(), t.raw(), t.nbytes()), 0);
  }
  EXPECT_EQ(8 + n + offset, bytes.size());
}

// When the Python safetensors package exists, it must read our file.
TEST(SafetensorsTest, PythonSafetensorsReadsOurFile) {
  if (!PyHas("safetensors.numpy"))
    GTEST_SKIP() << "Python's safetensors is not installed; the header layout test covers the format";
  auto dir = std::filesystem::temp_directory_path() / StrCat("amptrain_st_", ::getpid());
  std::filesystem::create_directories(dir);
  Tensor t = Tensor::Floats({1.5f, -2.0f, 3.25f}, {3});
  ASSERT_TRUE(WriteSafetensors((dir / "x.safetensors").string(), {{"w", t}}, {}).ok());
  std::string cmd = StrCat(Py(), "-c \"import numpy as np, safetensors.numpy as s; d = s.load_file('",
                           (dir / "x.safetensors").string(), "'); np.save('", (dir / "w.npy").string(), "', d['w'])\"");
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  auto w = ReadNpy((dir / "w.npy").string());
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_TRUE(*w == t);
  std::filesystem::remove_all(dir);
}

TEST(SafetensorsTest, UntrustedInputGivesCleanErrors) {
  const std::string f32x2 = std::string(8, '\0');
  const std::string ok_entry = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  ASSERT_TRUE(ParseSafetensors(WithHeader("{" + ok_entry + "}", f32x2), "ok.st").ok());
  struct Case {
    std::string what, bytes;
  };
  std::string huge_len = WithHeader("{}", "");
  huge_len[7] = '\x7f';
  const Case cases[] = {
      {"too short", "abc"},
      {"header length beyond the file", huge_len},
      {"not JSON", WithHeader("{not json", f32x2)},
      {"not an object", WithHeader("[1,2]", f32x2)},
      {"empty header", WithHeader("", f32x2)},
      {"duplicate key", WithHeader("{" + ok_entry + "," + ok_entry + "}", f32x2)},
      {"unknown dtype", WithHeader(R"({"a":{"dtype":"F8_E4M3","shape":[8],"data_offsets":[0,8]}})", f32x2)},
      {"negative dim", WithHeader(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", f32x2)},
      {"fractional dim", WithHeader(R"({"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", f32x2)},
      {"overflowing dims",
       WithHeader(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", f32x2)},
      {"offsets past the end", WithHeader(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", f32x2)},
      {"reversed offsets", WithHeader(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", f32x2)},
      {"size mismatch", WithHeader(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", f32x2)},
      {"overlap", WithHeader(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                             f32x2)},
      {"gap", WithHeader(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", f32x2)},
      {"uncovered tail", WithHeader(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", f32x2)},
      {"missing field", WithHeader(R"({"a":{"dtype":"F32","shape":[2]}})", f32x2)},
      {"metadata not strings", WithHeader(R"({"__metadata__":{"k":1}})", "")},
      {"deep nesting", WithHeader(std::string(5000, '[') + std::string(5000, ']'), "")},
  };
  for (const Case& c : cases) {
    auto r = ParseSafetensors(c.bytes, "bad.safetensors");
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_NE(r.status().message().find("bad.safetensors"), std::string::npos) << c.what << ": " << r.status().message();
  }
  EXPECT_EQ(ReadSafetensors("/nonexistent/x.safetensors").status().code(), StatusCode::kNotFound);
}

TEST(Sha256Test, KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

}  // namespace
}  // namespace amptrain::executor::train
