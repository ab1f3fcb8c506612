// Dataset loading: SPEC parsing, IDX (raw and gzip, including truncated,
// corrupt and lying files), the real Fashion-MNIST when installed, CIFAR-10
// binary batches, .npy pairs and the synthetic set (.npz archives:
// npz_test.cc).
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <set>

#include "executor/data/byte_source.h"
#include "executor/data/dataset.h"
#include "executor/data/loaders.h"
#include "executor/npy.h"
#include "tests/common/python_env.h"
#include "tests/executor/data_test_util.h"

namespace amptrain::executor::data {
namespace {

namespace fs = std::filesystem;
using ir::DType;
using ir::Tensor;

std::string Be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

// IDX of unsigned bytes; `data` defaults to a pattern of the right length.
std::string Idx(const std::vector<uint32_t>& dims, std::string data = "\x01") {
  std::string out = std::string("\0\0\x08", 3) + static_cast<char>(dims.size());
  size_t n = 1;
  for (uint32_t d : dims) {
    out += Be32(d);
    n *= d;
  }
  if (data == "\x01") {
    data.resize(n);
    for (size_t i = 0; i < n; ++i) data[i] = static_cast<char>(i * 7 + 3);
  }
  return out + data;
}

std::string Labels(const std::vector<uint8_t>& labels) {
  return Idx({static_cast<uint32_t>(labels.size())}, std::string(labels.begin(), labels.end()));
}

// A tiny MNIST-layout directory: 3 train images of 2x4, 2 test images.
void WriteTinyMnist(bool gz, const std::function<void(const std::string&, const std::string&)>& w) {
  w(std::string("train-images-idx3-ubyte") + (gz ? ".gz" : ""), Idx({3, 2, 4}));
  w(std::string("train-labels-idx1-ubyte") + (gz ? ".gz" : ""), Labels({9, 0, 4}));
  w(std::string("t10k-images-idx3-ubyte") + (gz ? ".gz" : ""), Idx({2, 2, 4}));
  w(std::string("t10k-labels-idx1-ubyte") + (gz ? ".gz" : ""), Labels({1, 2}));
}

// ---- SPEC parsing -----------------------------------------------------------

TEST(DataSpecTest, ParsesEveryKind) {
  auto fm = ParseDataSpec("fashion-mnist");
  ASSERT_TRUE(fm.ok()) << fm.status().ToString();
  EXPECT_EQ(fm->kind, "fashion-mnist");
  EXPECT_EQ(fm->path, "/usr/share/datasets/fashion-mnist");
  EXPECT_EQ(ParseDataSpec("fashion-mnist:/x/y")->path, "/x/y");
  EXPECT_EQ(ParseDataSpec("mnist:/m")->kind, "mnist");
  EXPECT_EQ(ParseDataSpec("cifar10:/c")->path, "/c");
  EXPECT_EQ(ParseDataSpec("npy:a.npy,b.npy")->path, "a.npy,b.npy");
  auto syn = ParseDataSpec("synthetic:N=100,C=3,seed=7");
  ASSERT_TRUE(syn.ok()) << syn.status().ToString();
  EXPECT_EQ(syn->params.size(), 3u);
  EXPECT_EQ(syn->params.at("N"), "100");
  EXPECT_EQ(syn->params.at("seed"), "7");
  EXPECT_TRUE(ParseDataSpec("synthetic")->params.empty());
}

TEST(DataSpecTest, RejectsBadSpecs) {
  for (const char* bad : {"", "imagenet:/x", "mnist", "cifar10:", "npy", "synthetic:foo=1", "synthetic:N=abc",
                          "synthetic:N=-3", "synthetic:N=1,N=2", "synthetic:N"}) {
    auto r = ParseDataSpec(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_NE(ParseDataSpec("synthetic:foo=1").status().message().find("foo=1"), std::string::npos);
  EXPECT_FALSE(LoadDataset(*ParseDataSpec("synthetic"), "validation").ok());
}

TEST(DataSpecTest, DefaultNormalizations) {
  Normalization fm = DefaultNormalization(*ParseDataSpec("fashion-mnist"));
  EXPECT_EQ(fm.mean, std::vector<float>{0.2860f});
  EXPECT_EQ(fm.std, std::vector<float>{0.3530f});
  Normalization m = DefaultNormalization(*ParseDataSpec("mnist:/x"));
  EXPECT_EQ(m.mean, std::vector<float>{0.1307f});
  EXPECT_EQ(m.std, std::vector<float>{0.3081f});
  Normalization c = DefaultNormalization(*ParseDataSpec("cifar10:/x"));
  EXPECT_EQ(c.mean.size(), 3u);
  EXPECT_FLOAT_EQ(c.mean[0], 0.4914f);
  EXPECT_FLOAT_EQ(c.std[2], 0.2616f);
  EXPECT_TRUE(DefaultNormalization(*ParseDataSpec("npy:a,b")).mean.empty());
}

// ---- IDX ----------------------------------------------------------------------

TEST_F(DataTest, IdxRawAndGzipRoundTrip) {
  WriteRaw("a.idx", Idx({3, 2, 4}));
  WriteGz("a.idx.gz", Idx({3, 2, 4}));
  for (const char* name : {"a.idx", "a.idx.gz"}) {
    auto t = ReadIdxFile(Path(name));
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(t->dtype(), DType::kUInt8);
    EXPECT_EQ(t->dims(), (std::vector<int64_t>{3, 2, 4}));
    for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(t->data<uint8_t>()[i], static_cast<uint8_t>(i * 7 + 3)) << name;
  }
  // Gzip is found by its magic, not the name; concatenated members read as one stream.
  std::string bytes = Idx({2, 3});
  WriteGz("m1", bytes.substr(0, 5));
  WriteGz("m2", bytes.substr(5));
  WriteRaw("multi", ReadRaw("m1") + ReadRaw("m2"));
  auto multi = ReadIdxFile(Path("multi"));
  ASSERT_TRUE(multi.ok()) << multi.status().ToString();
  EXPECT_EQ(multi->dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(multi->data<uint8_t>()[5], static_cast<uint8_t>(5 * 7 + 3));
}

TEST_F(DataTest, IdxRejectsBadFilesNamingThem) {
  std::string good = Idx({4, 3, 3});
  WriteRaw("magic", "\x12\x34" + good.substr(2));
  WriteRaw("rank0", std::string("\0\0\x08\0", 4));
  WriteRaw("short", good.substr(0, good.size() - 1));
  WriteRaw("header_cut", good.substr(0, 9));
  WriteRaw("trailing", good + "x");
  WriteRaw("liar", Idx({60000, 28, 28}, "abc"));  // promises 47 MB, holds 3 bytes
  WriteGz("liar.gz", Idx({60000, 28, 28}, "abc"));
  WriteGz("short.gz", good.substr(0, good.size() - 1));
  std::string gz_full;
  WriteGz("full.gz", good);
  gz_full = ReadRaw("full.gz");
  WriteRaw("cut.gz", gz_full.substr(0, gz_full.size() / 2));
  std::string corrupt = gz_full;
  for (size_t i = 12; i < corrupt.size() - 8; ++i) corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
  WriteRaw("corrupt.gz", corrupt);
  for (const char* name : {"magic", "rank0", "short", "header_cut", "trailing", "liar", "liar.gz", "short.gz",
                           "cut.gz", "corrupt.gz"}) {
    auto r = ReadIdxFile(Path(name));
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << name << ": " << r.status().ToString();
    EXPECT_NE(r.status().message().find(Path(name)), std::string::npos) << r.status().ToString();
  }
  EXPECT_NE(ReadIdxFile(Path("cut.gz")).status().message().find("truncated"), std::string::npos);
  EXPECT_NE(ReadIdxFile(Path("short")).status().message().find("truncated"), std::string::npos);
  EXPECT_NE(ReadIdxFile(Path("magic")).status().message().find("not an IDX file"), std::string::npos);

  WriteRaw("floats", std::string("\0\0\x0d\x01", 4) + Be32(1) + "abcd");
  EXPECT_EQ(ReadIdxFile(Path("floats")).status().code(), StatusCode::kUnimplemented);
  auto missing = ReadIdxFile(Path("nothing"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(Path("nothing")), std::string::npos);
}

TEST_F(DataTest, GzipOutputIsCapped) {
  WriteGz("zeros.gz", std::string(1 << 20, '\0'));  // 1 MiB of zeros in ~1 KiB
  EXPECT_LT(ReadRaw("zeros.gz").size(), 8000u);
  auto src = ByteSource::Open(Path("zeros.gz"));
  ASSERT_TRUE(src.ok());
  EXPECT_TRUE((*src)->gzip());
  auto all = (*src)->ReadAll(1000);
  ASSERT_FALSE(all.ok());
  EXPECT_NE(all.status().message().find("limit"), std::string::npos);
  auto full = (*ByteSource::Open(Path("zeros.gz")))->ReadAll();
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->size(), size_t{1} << 20);
}

TEST_F(DataTest, MnistDirectoryRawAndGzip) {
  for (bool gz : {false, true}) {
    WriteTinyMnist(gz, [&](const std::string& n, const std::string& b) { gz ? WriteGz(n, b) : WriteRaw(n, b); });
    auto train = LoadDataset(*ParseDataSpec("mnist:" + dir_.string()), "train");
    ASSERT_TRUE(train.ok()) << train.status().ToString();
    EXPECT_EQ(train->size(), 3);
    EXPECT_EQ(train->num_classes, 10);
    EXPECT_EQ(train->sample_dims, (std::vector<int64_t>{1, 2, 4}));
    EXPECT_EQ(train->samples.dims(), (std::vector<int64_t>{3, 1, 2, 4}));
    EXPECT_EQ(train->labels.ToInt64Vector(), (std::vector<int64_t>{9, 0, 4}));
    auto test = LoadDataset(*ParseDataSpec("fashion-mnist:" + dir_.string()), "test");
    ASSERT_TRUE(test.ok()) << test.status().ToString();
    EXPECT_EQ(test->labels.ToInt64Vector(), (std::vector<int64_t>{1, 2}));
    for (const auto& e : fs::directory_iterator(dir_)) fs::remove(e.path());
  }
}

// torchvision's datasets.MNIST / FashionMNIST(root) keep the files in
// root/MNIST/raw and root/FashionMNIST/raw: the root, the dataset folder and
// raw/ itself all find them.
TEST_F(DataTest, MnistFindsTorchvisionsLayout) {
  for (const char* kind : {"mnist", "fashion-mnist"}) {
    const std::string sub = std::string(kind) == "mnist" ? "MNIST" : "FashionMNIST";
    fs::create_directories(dir_ / sub / "raw");
    WriteTinyMnist(true, [&](const std::string& n, const std::string& b) { WriteGz(sub + "/raw/" + n, b); });
    for (const fs::path& root : {dir_, dir_ / sub, dir_ / sub / "raw"}) {
      auto train = LoadDataset(*ParseDataSpec(std::string(kind) + ":" + root.string()), "train");
      ASSERT_TRUE(train.ok()) << root << ": " << train.status().ToString();
      EXPECT_EQ(train->labels.ToInt64Vector(), (std::vector<int64_t>{9, 0, 4}));
    }
    fs::remove_all(dir_ / sub);
  }
}

TEST_F(DataTest, MnistDirectoryErrorsNameTheFile) {
  auto spec = *ParseDataSpec("mnist:" + dir_.string());
  auto missing = LoadDataset(spec, "train");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("train-images-idx3-ubyte"), std::string::npos);

  WriteRaw("train-images-idx3-ubyte", Idx({3, 2, 4}));
  WriteRaw("train-labels-idx1-ubyte", Labels({1, 2}));
  auto mismatch = LoadDataset(spec, "train");
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("3 images"), std::string::npos) << mismatch.status().ToString();
  EXPECT_NE(mismatch.status().message().find("train-labels-idx1-ubyte"), std::string::npos);

  WriteRaw("train-labels-idx1-ubyte", Labels({1, 10, 2}));
  auto range = LoadDataset(spec, "train");
  ASSERT_FALSE(range.ok());
  EXPECT_NE(range.status().message().find("train-labels-idx1-ubyte"), std::string::npos);
  EXPECT_NE(range.status().message().find("outside [0, 10)"), std::string::npos) << range.status().ToString();

  WriteRaw("train-labels-idx1-ubyte", Idx({3, 1}));
  EXPECT_NE(LoadDataset(spec, "train").status().message().find("rank"), std::string::npos);
}

TEST(FashionMnistTest, RealDataset) {
  const std::string root = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(root + "/train-images-idx3-ubyte.gz") && !fs::exists(root + "/train-images-idx3-ubyte"))
    GTEST_SKIP() << "Fashion-MNIST not installed at " << root << " (Debian package dataset-fashion-mnist)";
  auto spec = *ParseDataSpec("fashion-mnist");
  auto start = std::chrono::steady_clock::now();
  auto train = LoadDataset(spec, "train");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(train.ok()) << train.status().ToString();
  std::cout << "Fashion-MNIST train loaded in " << seconds * 1000 << " ms\n";
  EXPECT_LT(seconds, 2.0);  // well under a second on the dev machine; loose for loaded CI
  auto test = LoadDataset(spec, "test");
  ASSERT_TRUE(test.ok()) << test.status().ToString();
  EXPECT_EQ(train->size(), 60000);
  EXPECT_EQ(test->size(), 10000);
  EXPECT_EQ(train->sample_dims, (std::vector<int64_t>{1, 28, 28}));
  EXPECT_EQ(train->samples.dtype(), DType::kUInt8);
  EXPECT_EQ(train->labels.data<int64_t>()[0], 9);  // ankle boot
  EXPECT_EQ(test->labels.data<int64_t>()[0], 9);
  std::vector<int64_t> counts(10, 0);
  for (int64_t i = 0; i < train->size(); ++i) ++counts[train->labels.data<int64_t>()[i]];
  for (int64_t c : counts) EXPECT_EQ(c, 6000);  // Fashion-MNIST is balanced
}

// ---- CIFAR-10 ---------------------------------------------------------------------

std::string CifarRecords(const std::vector<uint8_t>& labels, uint8_t pixel_base) {
  std::string out;
  for (size_t r = 0; r < labels.size(); ++r) {
    out += static_cast<char>(labels[r]);
    for (int i = 0; i < 3072; ++i) out += static_cast<char>(pixel_base + r + i);
  }
  return out;
}

TEST_F(DataTest, Cifar10Batches) {
  fs::create_directories(dir_ / "cifar-10-batches-bin");
  for (int b = 1; b <= 5; ++b)
    WriteRaw("cifar-10-batches-bin/data_batch_" + std::to_string(b) + ".bin",
             CifarRecords({static_cast<uint8_t>(b), static_cast<uint8_t>(b + 4)}, static_cast<uint8_t>(10 * b)));
  WriteRaw("cifar-10-batches-bin/test_batch.bin", CifarRecords({0, 1, 9}, 0));
  for (const std::string& root : {dir_.string(), (dir_ / "cifar-10-batches-bin").string()}) {
    auto train = LoadDataset(*ParseDataSpec("cifar10:" + root), "train");
    ASSERT_TRUE(train.ok()) << train.status().ToString();
    EXPECT_EQ(train->size(), 10);
    EXPECT_EQ(train->sample_dims, (std::vector<int64_t>{3, 32, 32}));
    EXPECT_EQ(train->labels.ToInt64Vector(), (std::vector<int64_t>{1, 5, 2, 6, 3, 7, 4, 8, 5, 9}));
    const uint8_t* px = train->samples.data<uint8_t>();
    EXPECT_EQ(px[3 * 3072 + 5], static_cast<uint8_t>(20 + 1 + 5));  // batch 2, record 1, byte 5
    auto test = LoadDataset(*ParseDataSpec("cifar10:" + root), "test");
    ASSERT_TRUE(test.ok()) << test.status().ToString();
    EXPECT_EQ(test->labels.ToInt64Vector(), (std::vector<int64_t>{0, 1, 9}));
  }
  auto spec = *ParseDataSpec("cifar10:" + (dir_ / "cifar-10-batches-bin").string());
  WriteRaw("cifar-10-batches-bin/test_batch.bin", CifarRecords({0, 1}, 0) + "xyz");
  auto size = LoadDataset(spec, "test");
  ASSERT_FALSE(size.ok());
  EXPECT_NE(size.status().message().find("test_batch.bin"), std::string::npos) << size.status().ToString();
  WriteRaw("cifar-10-batches-bin/test_batch.bin", CifarRecords({0, 10}, 0));
  auto label = LoadDataset(spec, "test");
  ASSERT_FALSE(label.ok());
  EXPECT_NE(label.status().message().find("label 10"), std::string::npos) << label.status().ToString();
  fs::remove(dir_ / "cifar-10-batches-bin" / "data_batch_3.bin");
  auto missing = LoadDataset(spec, "train");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("data_batch_3.bin"), std::string::npos);
}

// CIFAR-100's binary version: a coarse and a fine label byte per record; the
// fine one is the class.
TEST_F(DataTest, Cifar100BinaryTakesTheFineLabel) {
  auto records = [](const std::vector<std::pair<uint8_t, uint8_t>>& labels) {
    std::string out;
    for (auto [coarse, fine] : labels) {
      out += static_cast<char>(coarse);
      out += static_cast<char>(fine);
      out += std::string(3072, static_cast<char>(fine));
    }
    return out;
  };
  fs::create_directories(dir_ / "cifar-100-binary");
  WriteRaw("cifar-100-binary/train.bin", records({{3, 17}, {19, 99}}));
  WriteRaw("cifar-100-binary/test.bin", records({{0, 4}}));
  auto train = LoadDataset(*ParseDataSpec("cifar100:" + dir_.string()), "train");
  ASSERT_TRUE(train.ok()) << train.status().ToString();
  EXPECT_EQ(train->num_classes, 100);
  EXPECT_EQ(train->labels.ToInt64Vector(), (std::vector<int64_t>{17, 99}));
  EXPECT_EQ(train->samples.data<uint8_t>()[3072 + 5], 99);
  WriteRaw("cifar-100-binary/test.bin", records({{0, 100}}));
  auto bad = LoadDataset(*ParseDataSpec("cifar100:" + dir_.string()), "test");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("label 100, outside [0, 100)"), std::string::npos) << bad.status().message();
  auto neither = LoadDataset(*ParseDataSpec("cifar10:" + dir_.string()), "test");
  EXPECT_EQ(neither.status().code(), StatusCode::kNotFound);
  EXPECT_NE(neither.status().message().find("holds neither layout"), std::string::npos) << neither.status().message();
}

// The python version (torchvision's download): pickled dicts read without
// running them, against Python's own unpickler (cifar_pickle_oracle.py) for
// the files as distributed (Python 2's protocol 2) and Python 3's protocols
// 2, 4 and 5, CIFAR-10 and CIFAR-100, given the root or the unpacked folder.
TEST_F(DataTest, CifarPythonVersionMatchesPythonsUnpickler) {
  using testing::Py;
  using testing::PyHas;
  using testing::PySkip;
  if (!PyHas("numpy")) GTEST_SKIP() << PySkip("numpy");
  for (const char* kind : {"cifar10", "cifar100"}) {
    for (const char* format : {"py2", "2", "4", "5"}) {
      SCOPED_TRACE(std::string(kind) + " format " + format);
      fs::remove_all(dir_);
      fs::create_directories(dir_);
      const std::string cmd = Py() + "'" AMPTRAIN_SOURCE_DIR "/tests/executor/cifar_pickle_oracle.py' '" +
                              dir_.string() + "' " + kind + " " + format;
      ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
      const std::string sub = std::string(kind) == "cifar100" ? "cifar-100-python" : "cifar-10-batches-py";
      for (const std::string& root : {dir_.string(), (dir_ / sub).string()}) {
        for (const char* split : {"train", "test"}) {
          auto ds = LoadDataset(*ParseDataSpec(std::string(kind) + ":" + root), split);
          ASSERT_TRUE(ds.ok()) << ds.status().ToString();
          auto x = ReadNpy(Path(std::string("expected_") + split + "_x.npy"));
          auto y = ReadNpy(Path(std::string("expected_") + split + "_y.npy"));
          ASSERT_TRUE(x.ok() && y.ok());
          EXPECT_EQ(ds->num_classes, std::string(kind) == "cifar100" ? 100 : 10);
          EXPECT_TRUE(ds->samples == *x);
          EXPECT_TRUE(ds->labels == *y);
        }
      }
    }
  }
  // A pickle whose batch is not CIFAR's, and one cut short: errors naming the file.
  const std::string folder = (dir_ / "cifar-100-python").string();
  std::string blob;
  {
    std::ifstream f(folder + "/test", std::ios::binary);
    blob.assign(std::istreambuf_iterator<char>(f), {});
  }
  WriteRaw("cifar-100-python/test", blob.substr(0, blob.size() / 2));
  auto cut = LoadDataset(*ParseDataSpec("cifar100:" + dir_.string()), "test");
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("cifar-100-python/test' is not a pickle amptrain reads"), std::string::npos)
      << cut.status().message();
  WriteRaw("cifar-100-python/test", std::string("\x80\x02}q\x00.", 6));
  auto empty = LoadDataset(*ParseDataSpec("cifar100:" + dir_.string()), "test");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("without 'data' and 'fine_labels' entries"), std::string::npos)
      << empty.status().message();
  // A pickle that would run code (os.system) is refused, not run.
  WriteRaw("cifar-100-python/test", std::string("cos\nsystem\n(X\x05\x00\x00\x00touchtR.", 25));
  auto code = LoadDataset(*ParseDataSpec("cifar100:" + dir_.string()), "test");
  ASSERT_FALSE(code.ok());
  EXPECT_FALSE(fs::exists("touch"));
}

// ---- npy ----------------------------------------------------------------------------

TEST_F(DataTest, NpyPairSplitsNinetyTen) {
  std::vector<float> x(40 * 2);
  std::vector<int64_t> y(40);
  for (int i = 0; i < 40; ++i) {
    x[2 * i] = static_cast<float>(i);
    x[2 * i + 1] = -static_cast<float>(i);
    y[i] = i % 4;
  }
  ASSERT_TRUE(WriteNpy(Path("x.npy"), Tensor::Floats(x, {40, 2})).ok());
  ASSERT_TRUE(WriteNpy(Path("y.npy"), Tensor::Int64s(y, {40})).ok());
  auto spec = *ParseDataSpec("npy:" + Path("x.npy") + "," + Path("y.npy"));
  auto train = LoadDataset(spec, "train");
  auto test = LoadDataset(spec, "test");
  ASSERT_TRUE(train.ok()) << train.status().ToString();
  ASSERT_TRUE(test.ok()) << test.status().ToString();
  EXPECT_EQ(train->size(), 36);
  EXPECT_EQ(test->size(), 4);
  EXPECT_EQ(train->num_classes, 4);
  EXPECT_EQ(test->num_classes, 4);
  EXPECT_EQ(train->sample_dims, (std::vector<int64_t>{2}));
  std::set<int> seen;
  for (const Dataset* ds : {&*train, &*test}) {
    for (int64_t r = 0; r < ds->size(); ++r) {
      int id = static_cast<int>(ds->samples.data<float>()[2 * r]);
      EXPECT_EQ(ds->samples.data<float>()[2 * r + 1], -static_cast<float>(id));
      EXPECT_EQ(ds->labels.data<int64_t>()[r], id % 4);  // rows stay paired
      EXPECT_TRUE(seen.insert(id).second) << "sample " << id << " in both splits";
    }
  }
  EXPECT_EQ(seen.size(), 40u);
  // The split is not simply the tail, and it is the same on every load.
  EXPECT_FALSE(test->samples.data<float>()[0] == 36 && test->samples.data<float>()[6] == 39);
  EXPECT_TRUE(LoadDataset(spec, "test")->samples == test->samples);
}

TEST_F(DataTest, NpyGivenFilesRegressionAndErrors) {
  ASSERT_TRUE(WriteNpy(Path("x.npy"), Tensor::Floats(std::vector<float>(6, 1.0f), {3, 2})).ok());
  Tensor y32 = *Tensor::Zeros(DType::kInt32, {3});
  y32.data<int32_t>()[2] = 2;
  ASSERT_TRUE(WriteNpy(Path("y.npy"), y32).ok());
  ASSERT_TRUE(WriteNpy(Path("xt.npy"), Tensor::Floats(std::vector<float>(4, 2.0f), {2, 2})).ok());
  ASSERT_TRUE(WriteNpy(Path("yt.npy"), Tensor::Int64s({0, 5}, {2})).ok());
  auto spec = *ParseDataSpec("npy:" + Path("x.npy") + "," + Path("y.npy") + "," + Path("xt.npy") + "," +
                             Path("yt.npy"));
  auto train = LoadDataset(spec, "train");
  ASSERT_TRUE(train.ok()) << train.status().ToString();
  EXPECT_EQ(train->size(), 3);
  EXPECT_EQ(train->num_classes, 6);  // covers the test labels too
  EXPECT_EQ(train->labels.dtype(), DType::kInt64);
  EXPECT_EQ(LoadDataset(spec, "test")->size(), 2);

  ASSERT_TRUE(WriteNpy(Path("yr.npy"), Tensor::Floats({1, 2, 3, 4, 5, 6}, {3, 2})).ok());
  auto reg = LoadDataset(*ParseDataSpec("npy:" + Path("x.npy") + "," + Path("yr.npy")), "train");
  ASSERT_TRUE(reg.ok()) << reg.status().ToString();
  EXPECT_EQ(reg->num_classes, 0);
  EXPECT_EQ(reg->labels.dtype(), DType::kFloat32);
  EXPECT_EQ(reg->labels.dims(), (std::vector<int64_t>{3, 2}));

  auto mismatch = LoadDataset(*ParseDataSpec("npy:" + Path("x.npy") + "," + Path("yt.npy")), "train");
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find(Path("x.npy")), std::string::npos) << mismatch.status().ToString();
  EXPECT_NE(mismatch.status().message().find(Path("yt.npy")), std::string::npos);
  ASSERT_TRUE(WriteNpy(Path("neg.npy"), Tensor::Int64s({0, -1, 1}, {3})).ok());
  auto negative = LoadDataset(*ParseDataSpec("npy:" + Path("x.npy") + "," + Path("neg.npy")), "train");
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("neg.npy"), std::string::npos);
  EXPECT_FALSE(LoadDataset(*ParseDataSpec("npy:" + Path("x.npy")), "train").ok());
  EXPECT_EQ(LoadDataset(*ParseDataSpec("npy:" + Path("none.npy") + "," + Path("y.npy")), "train").status().code(),
            StatusCode::kNotFound);
}

// A label per token: integer labels [N, T] keep their shape; the ignored
// index (-100, or `ignore_index` in the spec's params) is no class and no
// error, other negatives are; train and test labels must agree per sample;
// a split whose every label is ignored is refused; batches carry [B, T].
TEST_F(DataTest, NpyLabelsPerTokenWithIgnoredPositions) {
  ASSERT_TRUE(WriteNpy(Path("x.npy"), Tensor::Int64s({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3})).ok());
  ASSERT_TRUE(WriteNpy(Path("y.npy"), Tensor::Int64s({2, 3, -100, 5, 6, -100, 8, 9, -100}, {3, 3})).ok());
  ASSERT_TRUE(WriteNpy(Path("xt.npy"), Tensor::Int64s({1, 2, 3}, {1, 3})).ok());
  ASSERT_TRUE(WriteNpy(Path("yt.npy"), Tensor::Int64s({2, 11, -100}, {1, 3})).ok());
  const std::string files = Path("x.npy") + "," + Path("y.npy") + "," + Path("xt.npy") + "," + Path("yt.npy");
  auto spec = *ParseDataSpec("npy:" + files);
  auto train = LoadDataset(spec, "train");
  ASSERT_TRUE(train.ok()) << train.status().ToString();
  EXPECT_EQ(train->labels.dims(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(train->num_classes, 12);  // the largest label of both splits, -100 not counted
  BatchIterator batches(*train, 2, /*shuffle=*/false, 0, {}, {});
  Tensor xb, yb;
  ASSERT_TRUE(*batches.Next(&xb, &yb));
  EXPECT_EQ(yb.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(yb.data<int64_t>()[2], -100);

  // 255 as the ignored index: -100 is then an error naming the file and the value.
  ASSERT_TRUE(WriteNpy(Path("y255.npy"), Tensor::Int64s({2, 255, 1, 5, 6, 255, 8, 9, 255}, {3, 3})).ok());
  auto spec255 = *ParseDataSpec("npy:" + Path("x.npy") + "," + Path("y255.npy"));
  spec255.params["ignore_index"] = "255";
  auto void_class = LoadDataset(spec255, "train");
  ASSERT_TRUE(void_class.ok()) << void_class.status().ToString();
  EXPECT_EQ(void_class->num_classes, 10);
  spec.params["ignore_index"] = "255";
  auto negative = LoadDataset(spec, "train");
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("is -100"), std::string::npos) << negative.status().ToString();
  spec255.params["ignore_index"] = "x";
  EXPECT_FALSE(LoadDataset(spec255, "train").ok());

  // Test labels of another shape per sample, and a split of ignored labels only.
  ASSERT_TRUE(WriteNpy(Path("yt4.npy"), Tensor::Int64s({2, 3, 4, 5}, {1, 4})).ok());
  ASSERT_TRUE(WriteNpy(Path("xt4.npy"), Tensor::Int64s({1, 2, 3, 4}, {1, 4})).ok());
  auto shapes = LoadDataset(*ParseDataSpec("npy:" + Path("x.npy") + "," + Path("y.npy") + "," + Path("xt4.npy") +
                                           "," + Path("yt4.npy")),
                            "train");
  ASSERT_FALSE(shapes.ok());
  EXPECT_NE(shapes.status().message().find("same shape per sample"), std::string::npos) << shapes.status().ToString();
  ASSERT_TRUE(WriteNpy(Path("none.npy"), Tensor::Int64s(std::vector<int64_t>(9, -100), {3, 3})).ok());
  auto ignored = LoadDataset(*ParseDataSpec("npy:" + Path("x.npy") + "," + Path("none.npy")), "train");
  ASSERT_FALSE(ignored.ok());
  EXPECT_NE(ignored.status().message().find("is the ignored index -100"), std::string::npos)
      << ignored.status().ToString();
}

// Named inputs (issue 10, item 4): token ids of any integer width as int64,
// a float mask, rows kept together through the split and the batches.
TEST_F(DataTest, NpyNamedInputsSplitAndBatchTogether) {
  Tensor ids = *Tensor::Zeros(DType::kInt32, {20, 3});
  Tensor mask = *Tensor::Zeros(DType::kFloat32, {20, 3});
  std::vector<int64_t> y(20);
  for (int i = 0; i < 20; ++i) {
    for (int j = 0; j < 3; ++j) ids.data<int32_t>()[i * 3 + j] = 100 * i + j;
    mask.data<float>()[i * 3] = static_cast<float>(i);
    y[i] = i % 3;
  }
  ASSERT_TRUE(WriteNpy(Path("ids.npy"), ids).ok());
  ASSERT_TRUE(WriteNpy(Path("mask.npy"), mask).ok());
  ASSERT_TRUE(WriteNpy(Path("y.npy"), Tensor::Int64s(y, {20})).ok());
  const std::string named = "npy:ids=" + Path("ids.npy") + ",mask=" + Path("mask.npy") + ",labels=" + Path("y.npy");
  auto train = LoadDataset(*ParseDataSpec(named), "train");
  auto test = LoadDataset(*ParseDataSpec(named), "test");
  ASSERT_TRUE(train.ok()) << train.status().ToString();
  ASSERT_TRUE(test.ok()) << test.status().ToString();
  EXPECT_EQ(train->size(), 18);
  EXPECT_EQ(test->size(), 2);
  EXPECT_EQ(train->num_classes, 3);
  EXPECT_EQ(train->sample_input, "ids");
  EXPECT_EQ(train->samples.dtype(), DType::kInt64);
  ASSERT_EQ(train->more_inputs.size(), 1u);
  EXPECT_EQ(train->more_inputs[0].name, "mask");

  BatchIterator it(*train, 8, /*shuffle=*/true, 3, {}, {});
  Batch batch;
  int64_t seen = 0;
  while (*it.Next(&batch)) {
    ASSERT_EQ(batch.inputs.size(), 2u);
    const Tensor& b_ids = batch.inputs[0].second;
    const Tensor& b_mask = batch.inputs[1].second;
    EXPECT_EQ(b_ids.dtype(), DType::kInt64);
    EXPECT_EQ(b_ids.dims()[1], 3);
    for (int64_t r = 0; r < batch.size(); ++r) {
      const int64_t row = b_ids.data<int64_t>()[r * 3] / 100;
      EXPECT_EQ(b_ids.data<int64_t>()[r * 3 + 2], 100 * row + 2);
      EXPECT_EQ(b_mask.data<float>()[r * 3], static_cast<float>(row));  // the rows stay paired
      EXPECT_EQ(batch.labels.data<int64_t>()[r], row % 3);
    }
    seen += batch.size();
  }
  EXPECT_EQ(seen, 18);
  // Normalization and augmentation are for images, not token ids.
  BatchIterator normalized(*train, 8, false, 0, {{0.5f}, {0.2f}}, {});
  EXPECT_FALSE(normalized.Next(&batch).ok());

  // Given test files, in any order of the items.
  const std::string given = "npy:test.labels=" + Path("y.npy") + ",ids=" + Path("ids.npy") + ",mask=" +
                            Path("mask.npy") + ",labels=" + Path("y.npy") + ",test.mask=" + Path("mask.npy") +
                            ",test.ids=" + Path("ids.npy");
  auto given_test = LoadDataset(*ParseDataSpec(given), "test");
  ASSERT_TRUE(given_test.ok()) << given_test.status().ToString();
  EXPECT_EQ(given_test->size(), 20);
  EXPECT_EQ(given_test->sample_input, "ids");

  auto expect_error = [&](const std::string& spec, const std::string& needle) {
    auto ds = LoadDataset(*ParseDataSpec(spec), "train");
    ASSERT_FALSE(ds.ok()) << spec;
    EXPECT_NE(ds.status().message().find(needle), std::string::npos) << ds.status().message();
  };
  expect_error("npy:ids=" + Path("ids.npy"), "need a labels=FILE");
  expect_error("npy:labels=" + Path("y.npy"), "no input file besides the labels");
  expect_error("npy:ids=" + Path("ids.npy") + ",ids=" + Path("mask.npy") + ",labels=" + Path("y.npy"),
               "'ids' is given twice");
  expect_error("npy:ids=" + Path("ids.npy") + "," + Path("y.npy"), "is not NAME=FILE");
  expect_error(named + ",test.ids=" + Path("ids.npy"), "test inputs are given but no test.labels=FILE");
  expect_error(named + ",test.labels=" + Path("y.npy") + ",test.ids=" + Path("ids.npy"),
               "input 'mask' has no test file");
  ASSERT_TRUE(WriteNpy(Path("short.npy"), Tensor::Floats(std::vector<float>(6, 0.0f), {2, 3})).ok());
  expect_error("npy:ids=" + Path("ids.npy") + ",mask=" + Path("short.npy") + ",labels=" + Path("y.npy"),
               "(input 'mask') holds 2 rows but");
}

// ---- synthetic ----------------------------------------------------------------------

TEST(SyntheticTest, DeterministicAndSplit) {
  auto spec = *ParseDataSpec("synthetic:N=200,C=3,H=8,W=6,classes=5,seed=4");
  auto a = LoadDataset(spec, "train");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->size(), 180);
  EXPECT_EQ(a->sample_dims, (std::vector<int64_t>{3, 8, 6}));
  EXPECT_EQ(a->num_classes, 5);
  EXPECT_EQ(LoadDataset(spec, "test")->size(), 20);
  auto b = LoadDataset(spec, "train");
  EXPECT_TRUE(a->samples == b->samples);
  EXPECT_TRUE(a->labels == b->labels);
  auto other = LoadDataset(*ParseDataSpec("synthetic:N=200,C=3,H=8,W=6,classes=5,seed=5"), "train");
  EXPECT_FALSE(a->samples == other->samples);
  EXPECT_TRUE(ParseDataSpec("synthetic:N=0").ok());
  EXPECT_FALSE(LoadDataset(*ParseDataSpec("synthetic:N=0"), "train").ok());
  EXPECT_FALSE(LoadDataset(*ParseDataSpec("synthetic:N=100000,H=1000,W=1000"), "train").ok());
}

// The class structure is real: nearest class mean, fit on train, classifies test.
TEST(SyntheticTest, Learnable) {
  auto spec = *ParseDataSpec("synthetic:N=1000,seed=1");
  Dataset train = *LoadDataset(spec, "train"), test = *LoadDataset(spec, "test");
  const int64_t d = 28 * 28, k = 10;
  std::vector<double> mean(k * d, 0.0);
  std::vector<int64_t> count(k, 0);
  for (int64_t i = 0; i < train.size(); ++i) {
    int64_t c = train.labels.data<int64_t>()[i];
    ++count[c];
    for (int64_t j = 0; j < d; ++j) mean[c * d + j] += train.samples.data<uint8_t>()[i * d + j];
  }
  for (int64_t c = 0; c < k; ++c) {
    ASSERT_GT(count[c], 50) << "class " << c;  // labels are spread over the classes
    for (int64_t j = 0; j < d; ++j) mean[c * d + j] /= count[c];
  }
  int64_t correct = 0;
  for (int64_t i = 0; i < test.size(); ++i) {
    int64_t best = -1;
    double best_dist = 1e300;
    for (int64_t c = 0; c < k; ++c) {
      double dist = 0;
      for (int64_t j = 0; j < d; ++j) {
        double e = test.samples.data<uint8_t>()[i * d + j] - mean[c * d + j];
        dist += e * e;
      }
      if (dist < best_dist) best_dist = dist, best = c;
    }
    correct += best == test.labels.data<int64_t>()[i];
  }
  EXPECT_GT(correct, test.size() * 9 / 10) << correct << " of " << test.size();
}

}  // namespace
}  // namespace amptrain::executor::data
