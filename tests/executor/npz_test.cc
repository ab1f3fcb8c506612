// .npz data sets: archives in every layout the reader takes (stored,
// deflated, ZIP64) and what NumPy's savez/savez_compressed write, damaged
// archives refused naming the archive and member, and Keras's and named
// layouts loading as their .npy counterparts.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <string>
#include <vector>

#include "executor/data/dataset.h"
#include "executor/data/loaders.h"
#include "executor/npy.h"
#include "executor/npz.h"
#include "tests/common/python_env.h"
#include "tests/executor/data_test_util.h"

namespace amptrain::executor::data {
namespace {

using ir::DType;
using ir::Tensor;

void Le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

struct ZipMember {
  std::string name, data;
  uint16_t method = 0;  // 0 stored, 8 deflate
  uint16_t flags = 0;
};

// A ZIP archive of `members` as np.savez lays one out; `zip64` puts every
// size and offset in ZIP64 extra fields and records, as the format allows.
std::string Zip(const std::vector<ZipMember>& members, bool zip64 = false) {
  std::string out, dir;
  for (const ZipMember& m : members) {
    std::string packed = m.data;
    if (m.method == 8) {
      z_stream zs{};
      deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
      packed.assign(deflateBound(&zs, m.data.size()) + 16, '\0');
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(m.data.data()));
      zs.avail_in = static_cast<uInt>(m.data.size());
      zs.next_out = reinterpret_cast<Bytef*>(packed.data());
      zs.avail_out = static_cast<uInt>(packed.size());
      deflate(&zs, Z_FINISH);
      packed.resize(zs.total_out);
      deflateEnd(&zs);
    }
    const uint32_t crc = static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(m.data.data()),
                                                     static_cast<uInt>(m.data.size())));
    const uint64_t local = out.size();
    Le(out, 0x04034b50, 4), Le(out, 20, 2), Le(out, m.flags, 2), Le(out, m.method, 2), Le(out, 0, 4), Le(out, crc, 4);
    Le(out, packed.size(), 4), Le(out, m.data.size(), 4), Le(out, m.name.size(), 2), Le(out, 0, 2);
    out += m.name + packed;
    std::string extra;
    if (zip64) Le(extra, 1, 2), Le(extra, 24, 2), Le(extra, m.data.size(), 8), Le(extra, packed.size(), 8), Le(extra, local, 8);
    const uint64_t big = 0xffffffff;
    Le(dir, 0x02014b50, 4), Le(dir, 45, 2), Le(dir, 45, 2), Le(dir, m.flags, 2), Le(dir, m.method, 2), Le(dir, 0, 4);
    Le(dir, crc, 4), Le(dir, zip64 ? big : packed.size(), 4), Le(dir, zip64 ? big : m.data.size(), 4);
    Le(dir, m.name.size(), 2), Le(dir, extra.size(), 2), Le(dir, 0, 2), Le(dir, 0, 2), Le(dir, 0, 2), Le(dir, 0, 4);
    Le(dir, zip64 ? big : local, 4);
    dir += m.name + extra;
  }
  const uint64_t dir_at = out.size();
  out += dir;
  if (zip64) {
    const uint64_t rec = out.size();
    Le(out, 0x06064b50, 4), Le(out, 44, 8), Le(out, 45, 2), Le(out, 45, 2), Le(out, 0, 4), Le(out, 0, 4);
    Le(out, members.size(), 8), Le(out, members.size(), 8), Le(out, dir.size(), 8), Le(out, dir_at, 8);
    Le(out, 0x07064b50, 4), Le(out, 0, 4), Le(out, rec, 8), Le(out, 1, 4);
  }
  Le(out, 0x06054b50, 4), Le(out, 0, 2), Le(out, 0, 2);
  Le(out, zip64 ? 0xffff : members.size(), 2), Le(out, zip64 ? 0xffff : members.size(), 2);
  Le(out, zip64 ? 0xffffffff : dir.size(), 4), Le(out, zip64 ? 0xffffffff : dir_at, 4), Le(out, 0, 2);
  return out;
}

// Archives in every layout the reader takes (stored, deflated, ZIP64 records)
// give back the arrays; what NumPy itself writes (np.savez and
// np.savez_compressed of several dtypes and shapes) parses to the arrays
// numpy.save writes of the same values.
TEST_F(DataTest, NpzArchivesGiveTheirArrays) {
  const Tensor x = Tensor::Floats({1, 2, 3, 4, 5, 6}, {3, 2});
  const Tensor y = Tensor::Int64s({0, 1, 1}, {3});
  const std::string xb = *SerializeNpy(x), yb = *SerializeNpy(y);
  for (uint16_t method : {uint16_t{0}, uint16_t{8}}) {
    for (bool zip64 : {false, true}) {
      SCOPED_TRACE(std::string(method ? "deflated" : "stored") + (zip64 ? ", ZIP64" : ""));
      auto arrays = ParseNpz(Zip({{"x.npy", xb, method}, {"notes.txt", "skipped", 0}, {"y.npy", yb, method}}, zip64),
                             "t.npz");
      ASSERT_TRUE(arrays.ok()) << arrays.status().ToString();
      ASSERT_EQ(arrays->size(), 2u);
      EXPECT_EQ((*arrays)[0].first, "x");
      EXPECT_TRUE((*arrays)[0].second == x);
      EXPECT_EQ((*arrays)[1].first, "y");
      EXPECT_TRUE((*arrays)[1].second == y);
    }
  }
  using testing::Py;
  if (!testing::PyHas("numpy")) GTEST_SKIP() << testing::PySkip("numpy");
  const std::string script =
      "import numpy as np, sys; d = sys.argv[1]; r = np.random.RandomState(0)\n"
      "a = {'f4': r.randn(4, 3).astype(np.float32), 'f2': r.randn(5).astype(np.float16),\n"
      "     'f8': r.randn(2, 2, 2), 'i8': r.randint(-9, 9, 7), 'i4': r.randint(0, 9, (3, 2)).astype(np.int32),\n"
      "     'u1': r.randint(0, 255, (4, 5, 6)).astype(np.uint8), 'b1': r.rand(6) > 0.5,\n"
      "     'empty': np.zeros((0, 3), np.float32), 'test.ids': np.arange(4)}\n"
      "np.savez(d + '/plain.npz', **a); np.savez_compressed(d + '/packed.npz', **a)\n"
      "[np.save(d + '/' + k + '.npy', v) for k, v in a.items()]\n";
  WriteRaw("make.py", script);
  ASSERT_EQ(std::system((Py() + "'" + Path("make.py") + "' '" + dir_.string() + "'").c_str()), 0);
  for (const char* file : {"plain.npz", "packed.npz"}) {
    auto arrays = ReadNpz(Path(file));
    ASSERT_TRUE(arrays.ok()) << file << ": " << arrays.status().ToString();
    EXPECT_EQ(arrays->size(), 9u) << file;
    for (const auto& [name, t] : *arrays) {
      auto want = ReadNpy(Path(name + ".npy"));
      ASSERT_TRUE(want.ok()) << name;
      EXPECT_TRUE(t == *want) << file << ": " << name;
    }
  }
}

// Damaged or foreign archives: one error naming the archive and the problem.
TEST_F(DataTest, NpzRefusesDamagedArchivesNamingThem) {
  const std::string xb = *SerializeNpy(Tensor::Floats({1, 2, 3}, {3}));
  const std::string good = Zip({{"x.npy", xb, 8}});
  auto error = [](const std::string& bytes) {
    auto r = ParseNpz(bytes, "d.npz");
    return r.ok() ? std::string("ok") : r.status().message();
  };
  auto expect = [&](const std::string& bytes, const std::string& what) {
    const std::string got = error(bytes);
    EXPECT_NE(got.find(what), std::string::npos) << "expected '" << what << "', got: " << got;
  };
  ASSERT_EQ(error(good), "ok");
  expect(good.substr(0, good.size() - 3), "no ZIP end record");
  expect("PK", "shorter than a ZIP end record");
  std::string flipped = Zip({{"x.npy", xb, 0}});
  flipped[30 + 5 + 60] ^= 1;  // a byte of the array's data
  expect(flipped, "fails its CRC-32 check");
  expect(Zip({{"x.npy", xb, 0, 1}}), "is encrypted");
  expect(Zip({{"x.npy", xb, 12}}), "ZIP method 12");
  expect(Zip({{"x.npy", xb, 0}, {"x.npy", xb, 0}}), "two members are named 'x.npy'");
  expect(Zip({{"readme.txt", "hi", 0}}), "no .npy member");
  std::string lying = good;  // the central directory claims 64 KiB more than its 17 deflated bytes make
  const size_t dir = lying.rfind(std::string("PK\x01\x02", 4));
  lying[dir + 24] = '\x00', lying[dir + 25] = '\x00', lying[dir + 26] = '\x01';
  expect(lying, "the deflate stream is corrupt or does not give");
  std::string bomb = good;
  bomb[dir + 27] = '\x7f';  // 2 GiB from a few bytes
  expect(bomb, "claims");
  std::string outside = good;
  outside[outside.size() - 6] = '\x7f';  // the directory's offset
  expect(outside, "the central directory lies outside the file");
  // Through LoadDataset: the layouts it takes, and a listing of what it found otherwise.
  WriteRaw("ab.npz", Zip({{"a.npy", xb, 0}, {"b.npy", xb, 0}}));
  auto ds = LoadDataset(*ParseDataSpec("npz:" + Path("ab.npz")), "train");
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.status().message().find("holds 'a', 'b'; expected x_train and y_train"), std::string::npos)
      << ds.status().message();
}

// Keras's layout (x_train, y_train, x_test, y_test: mnist.npz's gray [N, H, W]
// images, given split), x/y with the 90/10 split, [N, H, W, C] images
// transposed, and named model inputs with a test split.
TEST_F(DataTest, NpzLayoutsLoadAsTheirNpyCounterparts) {
  Tensor gray = *Tensor::Zeros(DType::kUInt8, {5, 4, 3});
  for (int64_t i = 0; i < gray.num_elements(); ++i) gray.data<uint8_t>()[i] = static_cast<uint8_t>(i * 7);
  Tensor hwc = *Tensor::Zeros(DType::kUInt8, {2, 6, 5, 3});
  for (int64_t i = 0; i < hwc.num_elements(); ++i) hwc.data<uint8_t>()[i] = static_cast<uint8_t>(i);
  const Tensor y5 = Tensor::Int64s({0, 1, 2, 1, 0}, {5}), y2 = Tensor::Int64s({1, 0}, {2});
  WriteRaw("keras.npz", Zip({{"x_train.npy", *SerializeNpy(gray), 8}, {"y_train.npy", *SerializeNpy(y5), 8},
                             {"x_test.npy", *SerializeNpy(hwc), 0}, {"y_test.npy", *SerializeNpy(y2), 0}}));
  auto train = LoadDataset(*ParseDataSpec("npz:" + Path("keras.npz")), "train");
  auto test = LoadDataset(*ParseDataSpec("npz:" + Path("keras.npz")), "test");
  ASSERT_TRUE(train.ok()) << train.status().ToString();
  ASSERT_TRUE(test.ok()) << test.status().ToString();
  EXPECT_EQ(train->samples.dims(), (std::vector<int64_t>{5, 1, 4, 3}));
  EXPECT_EQ(std::memcmp(train->samples.raw(), gray.raw(), gray.nbytes()), 0);
  EXPECT_EQ(train->num_classes, 3);
  EXPECT_TRUE(train->labels == y5);
  ASSERT_EQ(test->samples.dims(), (std::vector<int64_t>{2, 3, 6, 5}));
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t p = 0; p < 30; ++p)
        ASSERT_EQ(test->samples.data<uint8_t>()[(n * 3 + c) * 30 + p], hwc.data<uint8_t>()[(n * 30 + p) * 3 + c]);
  // x and y: the same split as npy:X,Y.
  std::vector<float> xs(40);
  std::vector<int64_t> ys(20);
  for (int i = 0; i < 20; ++i) xs[2 * i] = static_cast<float>(i), xs[2 * i + 1] = 1, ys[i] = i % 2;
  const Tensor x = Tensor::Floats(xs, {20, 2}), y = Tensor::Int64s(ys, {20});
  WriteRaw("xy.npz", Zip({{"x.npy", *SerializeNpy(x), 0}, {"y.npy", *SerializeNpy(y), 0}}));
  ASSERT_TRUE(WriteNpy(Path("x.npy"), x).ok() && WriteNpy(Path("y.npy"), y).ok());
  for (const char* split : {"train", "test"}) {
    auto from_npz = LoadDataset(*ParseDataSpec("npz:" + Path("xy.npz")), split);
    auto from_npy = LoadDataset(*ParseDataSpec("npy:" + Path("x.npy") + "," + Path("y.npy")), split);
    ASSERT_TRUE(from_npz.ok() && from_npy.ok()) << from_npz.status().ToString();
    EXPECT_TRUE(from_npz->samples == from_npy->samples) << split;
    EXPECT_TRUE(from_npz->labels == from_npy->labels) << split;
  }
  // Named inputs, test.NAME and test.labels for the test split.
  const Tensor ids = Tensor::Int64s({1, 2, 3, 4, 5, 6}, {3, 2}), tids = Tensor::Int64s({7, 8}, {1, 2});
  WriteRaw("named.npz", Zip({{"ids.npy", *SerializeNpy(ids), 0}, {"labels.npy", *SerializeNpy(Tensor::Int64s({0, 1, 1}, {3})), 0},
                             {"test.ids.npy", *SerializeNpy(tids), 0}, {"test.labels.npy", *SerializeNpy(Tensor::Int64s({1}, {1})), 0}}));
  auto named = LoadDataset(*ParseDataSpec("npz:" + Path("named.npz")), "test");
  ASSERT_TRUE(named.ok()) << named.status().ToString();
  EXPECT_EQ(named->sample_input, "ids");
  EXPECT_TRUE(named->samples == tids);
  EXPECT_EQ(named->num_classes, 2);
}

}  // namespace
}  // namespace amptrain::executor::data
