// CIFAR-10, binary version: data_batch_1..5.bin (train), test_batch.bin (test).
#include <sys/stat.h>

#include <cstring>

#include "executor/data/byte_source.h"
#include "executor/data/loaders.h"

namespace amptrain::executor::data {

using ir::DType;
using ir::Tensor;

namespace {

constexpr int64_t kImageBytes = 3 * 32 * 32;
constexpr int64_t kRecordBytes = 1 + kImageBytes;

bool IsDir(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

StatusOr<Dataset> LoadCifar10(const std::string& dir, const std::string& split) {
  std::string root = dir;
  // The archive unpacks to cifar-10-batches-bin/; accept its parent too.
  struct stat st{};
  if (::stat((root + "/test_batch.bin").c_str(), &st) != 0 && IsDir(root + "/cifar-10-batches-bin"))
    root += "/cifar-10-batches-bin";
  std::vector<std::string> files;
  if (split == "train") {
    for (int i = 1; i <= 5; ++i) files.push_back(root + "/data_batch_" + std::to_string(i) + ".bin");
  } else {
    files.push_back(root + "/test_batch.bin");
  }
  std::vector<std::string> contents;
  int64_t n = 0;
  for (const std::string& file : files) {
    AMP_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> src, ByteSource::Open(file));
    AMP_ASSIGN_OR_RETURN(std::string bytes, src->ReadAll());
    if (bytes.empty() || bytes.size() % kRecordBytes != 0)
      return InvalidArgument("cifar10: '", file, "' has ", bytes.size(), " bytes, not a positive multiple of the ",
                             kRecordBytes, "-byte record (1 label byte + 3x32x32 pixels)");
    n += static_cast<int64_t>(bytes.size()) / kRecordBytes;
    contents.push_back(std::move(bytes));
  }
  Dataset ds;
  ds.num_classes = 10;
  ds.sample_dims = {3, 32, 32};
  AMP_ASSIGN_OR_RETURN(ds.samples, Tensor::Zeros(DType::kUInt8, {n, 3, 32, 32}));
  AMP_ASSIGN_OR_RETURN(ds.labels, Tensor::Zeros(DType::kInt64, {n}));
  uint8_t* images = ds.samples.data<uint8_t>();
  int64_t* labels = ds.labels.data<int64_t>();
  int64_t row = 0;
  for (size_t f = 0; f < files.size(); ++f) {
    const auto* rec = reinterpret_cast<const uint8_t*>(contents[f].data());
    const int64_t records = static_cast<int64_t>(contents[f].size()) / kRecordBytes;
    for (int64_t r = 0; r < records; ++r, ++row, rec += kRecordBytes) {
      if (rec[0] >= ds.num_classes)
        return InvalidArgument("cifar10: '", files[f], "' record ", r, " has label ", int{rec[0]},
                               ", outside [0, 10)");
      labels[row] = rec[0];
      std::memcpy(images + row * kImageBytes, rec + 1, kImageBytes);
    }
  }
  return ds;
}

}  // namespace amptrain::executor::data
