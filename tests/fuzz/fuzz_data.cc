// libFuzzer target: the data-set readers (executor/data/loaders.h): IDX files
// raw or gzip-compressed, MNIST-layout folders and CIFAR-10 batches, through
// LoadDataset as `train --data` calls it.
//
// The first byte picks the case, the rest is file content:
//   bits 0-1  0: one IDX file (ReadIdxFile);
//             1: an MNIST folder (LoadDataset "mnist:DIR", test split): the
//                next 2 bytes (big-endian) are the length of the images
//                file, what follows them is the labels file;
//             2: a CIFAR folder (LoadDataset "cifar10:DIR", test split): the
//                rest is test_batch.bin, or with bit 4 the python version's
//                pickled test_batch (executor/data/pickle.h); with bit 5
//                CIFAR-100 ("cifar100:DIR": test.bin, or test);
//             3: as 1, with the fixed 90/10 split of the train part
//                (TakeSplit) run on what loads.
//   bit 2     gzip every file the harness writes (the fuzzer cannot make a
//             valid deflate stream by itself; seeds also hold raw gzip).
//   bit 3     with bit 2, cut the last 3 bytes of each gzip stream (a
//             truncated download).
// Every input must give a data set or a Status, never a crash. A data set
// that loads must be consistent: as many labels as samples, every label in
// [0, num_classes), sample_dims equal to the samples' trailing dims.
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <spdlog/spdlog.h>

#include "executor/data/dataset.h"
#include "executor/data/loaders.h"

namespace {

namespace data = amptrain::executor::data;
std::string g_root;

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_data: %s\n", what.c_str());
  std::abort();
}

std::string Gzip(const std::string& raw) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) Fail("deflateInit2");
  std::string out(deflateBound(&zs, raw.size()) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  zs.avail_in = static_cast<uInt>(raw.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  if (deflate(&zs, Z_FINISH) != Z_STREAM_END) Fail("deflate");
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
  if (!f) Fail("cannot write " + path);
}

void CheckConsistent(const data::Dataset& ds, const char* what) {
  const auto& dims = ds.samples.dims();
  if (dims.empty() || ds.labels.rank() != 1 || ds.labels.dims()[0] != dims[0])
    Fail(std::string(what) + ": labels do not match the samples");
  if (std::vector<int64_t>(dims.begin() + 1, dims.end()) != ds.sample_dims)
    Fail(std::string(what) + ": sample_dims differ from the samples' shape");
  if (ds.num_classes == 0) return;  // regression labels (npy only)
  const int64_t* labels = ds.labels.data<int64_t>();
  for (int64_t i = 0; i < ds.labels.dims()[0]; ++i)
    if (labels[i] < 0 || labels[i] >= ds.num_classes) Fail(std::string(what) + ": a label is out of range");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);  // the loaders' progress lines, once per input
  char dir[] = "/tmp/amptrain-fuzz-data-XXXXXX";
  if (!::mkdtemp(dir)) Fail("mkdtemp failed");
  g_root = dir;
  std::atexit([] { std::filesystem::remove_all(g_root); });  // libFuzzer ends with exit()
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = bytes[0];
  std::string rest(reinterpret_cast<const char*>(bytes) + 1, size - 1);
  auto encode = [&](std::string raw) {
    if (!(mode & 4)) return raw;
    std::string z = Gzip(raw);
    if ((mode & 8) && z.size() > 3) z.resize(z.size() - 3);
    return z;
  };
  std::filesystem::remove_all(g_root + "/d");
  std::filesystem::create_directories(g_root + "/d");
  const std::string dir = g_root + "/d";
  const std::string gz = (mode & 4) ? ".gz" : "";

  switch (mode & 3) {
    case 0: {
      const std::string path = dir + "/x-idx3-ubyte" + gz;
      Write(path, encode(rest));
      auto t = data::ReadIdxFile(path);
      if (t.ok() && (t->rank() < 1 || t->rank() > 4)) Fail("ReadIdxFile returned a rank outside 1..4");
      return 0;
    }
    case 1:
    case 3: {
      if (rest.size() < 2) return 0;
      const size_t n = std::min<size_t>(rest.size() - 2, (uint8_t(rest[0]) << 8) | uint8_t(rest[1]));
      Write(dir + "/t10k-images-idx3-ubyte" + gz, encode(rest.substr(2, n)));
      Write(dir + "/t10k-labels-idx1-ubyte" + gz, encode(rest.substr(2 + n)));
      auto spec = data::ParseDataSpec("mnist:" + dir);
      if (!spec.ok()) Fail("the mnist spec does not parse: " + spec.status().ToString());
      auto ds = data::LoadDataset(*spec, "test");
      if (!ds.ok()) return 0;
      CheckConsistent(*ds, "mnist");
      if ((mode & 3) == 3) {
        for (const char* split : {"train", "test"}) {
          auto part = data::TakeSplit(*ds, split);
          if (part.ok()) CheckConsistent(*part, split);
        }
      }
      return 0;
    }
    case 2: {
      const bool python = mode & 16, c100 = mode & 32;
      const std::string kind = c100 ? "cifar100" : "cifar10";
      Write(dir + (c100 ? "/test" : "/test_batch") + (python ? "" : ".bin"), encode(rest));
      auto spec = data::ParseDataSpec(kind + ":" + dir);
      if (!spec.ok()) Fail("the " + kind + " spec does not parse: " + spec.status().ToString());
      auto ds = data::LoadDataset(*spec, "test");
      if (ds.ok()) CheckConsistent(*ds, kind.c_str());
      return 0;
    }
  }
  return 0;
}
