// libFuzzer target: CSV data sets (executor/data/csv.cc) through LoadDataset
// as `train --data csv:FILE` calls it, both parts of the 90/10 split.
//
// The first byte picks the label column: 0-127 the default (the last one),
// else the 0-based index byte - 128. The rest is the file. Every input must
// give a data set or a Status. A data set that loads must be consistent: as
// many labels as samples, class labels in [0, num_classes), float32 samples
// of sample_dims [D], every value finite.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <spdlog/spdlog.h>

#include "executor/data/dataset.h"

namespace {

namespace data = amptrain::executor::data;

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_csv: %s\n", what.c_str());
  std::abort();
}

std::string g_file;  // the CSV each input is written to, in a scratch folder

void Check(const data::Dataset& ds) {
  const int64_t n = ds.size();
  if (ds.samples.rank() != 2 || ds.sample_dims.size() != 1 || ds.samples.dims()[1] != ds.sample_dims[0])
    Fail("samples are not [N, D]");
  if (ds.labels.dims().empty() || ds.labels.dims()[0] != n) Fail("label count differs from the sample count");
  const float* x = ds.samples.data<float>();
  for (int64_t i = 0; i < ds.samples.num_elements(); ++i)
    if (!std::isfinite(x[i])) Fail("a non-finite feature");
  if (ds.num_classes > 0)
    for (int64_t i = 0; i < n; ++i) {
      const int64_t y = ds.labels.data<int64_t>()[i];
      if (y < 0 || y >= ds.num_classes) Fail("a label outside [0, num_classes)");
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);  // the loaders' progress lines, once per input
  char dir[] = "/tmp/amptrain-fuzz-csv-XXXXXX";
  if (!::mkdtemp(dir)) Fail("mkdtemp failed");
  g_file = std::string(dir) + "/data.csv";
  static const std::string root = dir;
  std::atexit([] { std::filesystem::remove_all(root); });  // libFuzzer ends with exit()
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size == 0) return 0;
  std::ofstream(g_file, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(bytes + 1), static_cast<std::streamsize>(size - 1));
  data::DataSpec spec;
  spec.kind = "csv";
  spec.path = g_file;
  if (bytes[0] >= 128) spec.path += ",label=" + std::to_string(bytes[0] - 128);
  for (const char* split : {"train", "test"}) {
    amptrain::StatusOr<data::Dataset> ds = data::LoadDataset(spec, split);
    if (ds.ok()) Check(*ds);
  }
  return 0;
}
