// CIFAR-10 and CIFAR-100, in both of the layouts they are distributed in:
//   binary   CIFAR-10:  data_batch_1..5.bin, test_batch.bin (records of 1
//                       label byte + 3x32x32 pixels), in DIR or
//                       DIR/cifar-10-batches-bin;
//            CIFAR-100: train.bin, test.bin (records of a coarse and a fine
//                       label byte + pixels; the fine label is the class), in
//                       DIR or DIR/cifar-100-binary;
//   python   (what torchvision's datasets.CIFAR10/100(root) download)
//            CIFAR-10:  data_batch_1..5, test_batch, in DIR or
//                       DIR/cifar-10-batches-py;
//            CIFAR-100: train, test, in DIR or DIR/cifar-100-python;
//            each a pickled dict whose 'data' is a uint8 [N, 3072] numpy
//            array and 'labels' (CIFAR-10) / 'fine_labels' (CIFAR-100) a
//            list of ints, read by executor/data/pickle.h, which runs none
//            of the pickle's code.
// The binary layout wins where a folder holds both.
#include <sys/stat.h>

#include <cstring>

#include "executor/data/byte_source.h"
#include "executor/data/loaders.h"
#include "executor/data/pickle.h"

namespace amptrain::executor::data {

using ir::DType;
using ir::Tensor;

namespace {

constexpr int64_t kImageBytes = 3 * 32 * 32;

struct Layout {
  std::string root;   // the folder holding the files
  bool python = false;
  std::vector<std::string> files;
};

bool IsFile(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

StatusOr<Layout> FindLayout(const std::string& kind, const std::string& dir, const std::string& split) {
  const bool c100 = kind == "cifar100";
  const bool train = split == "train";
  std::vector<std::string> bin_names, py_names;
  if (c100) {
    bin_names = {train ? "train.bin" : "test.bin"};
    py_names = {train ? "train" : "test"};
  } else if (train) {
    for (int i = 1; i <= 5; ++i) {
      bin_names.push_back("data_batch_" + std::to_string(i) + ".bin");
      py_names.push_back("data_batch_" + std::to_string(i));
    }
  } else {
    bin_names = {"test_batch.bin"};
    py_names = {"test_batch"};
  }
  // The test split's file tells a folder of either layout.
  const std::string bin_probe = c100 ? "test.bin" : "test_batch.bin", py_probe = c100 ? "test" : "test_batch";
  const std::string bin_sub = c100 ? "cifar-100-binary" : "cifar-10-batches-bin";
  const std::string py_sub = c100 ? "cifar-100-python" : "cifar-10-batches-py";
  for (const std::string& root : {dir, dir + "/" + bin_sub})
    if (IsFile(root + "/" + bin_probe)) return Layout{root, false, bin_names};
  for (const std::string& root : {dir, dir + "/" + py_sub})
    if (IsFile(root + "/" + py_probe)) return Layout{root, true, py_names};
  return NotFound(kind, ": '", dir, "' holds neither layout: no ", bin_probe, " (binary version) in it or in ", bin_sub,
                  "/, no ", py_probe, " (python version, as torchvision downloads it) in it or in ", py_sub, "/");
}

// One binary file's records: `label_bytes` (1, or 2 for CIFAR-100: coarse
// then fine) then the pixels; the last label byte is the class.
Status ReadBinary(const std::string& kind, const std::string& file, int64_t label_bytes, int64_t classes,
                  std::vector<uint8_t>* pixels, std::vector<int64_t>* labels) {
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> src, ByteSource::Open(file));
  AMP_ASSIGN_OR_RETURN(std::string bytes, src->ReadAll());
  const int64_t record = label_bytes + kImageBytes;
  if (bytes.empty() || static_cast<int64_t>(bytes.size()) % record != 0)
    return InvalidArgument(kind, ": '", file, "' has ", bytes.size(), " bytes, not a positive multiple of the ", record,
                           "-byte record (", label_bytes, " label byte", label_bytes > 1 ? "s" : "", " + 3x32x32 pixels)");
  const auto* rec = reinterpret_cast<const uint8_t*>(bytes.data());
  for (int64_t r = 0; r < static_cast<int64_t>(bytes.size()) / record; ++r, rec += record) {
    const uint8_t label = rec[label_bytes - 1];
    if (label >= classes)
      return InvalidArgument(kind, ": '", file, "' record ", r, " has label ", int{label}, ", outside [0, ", classes, ")");
    labels->push_back(label);
    pixels->insert(pixels->end(), rec + label_bytes, rec + record);
  }
  return Status::Ok();
}

// One pickled batch: 'data' uint8 [N, 3072], 'labels' or 'fine_labels' [N].
Status ReadPython(const std::string& kind, const std::string& file, int64_t classes, std::vector<uint8_t>* pixels,
                  std::vector<int64_t>* labels) {
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> src, ByteSource::Open(file));
  AMP_ASSIGN_OR_RETURN(std::string bytes, src->ReadAll());
  const std::string what = StrCat(kind, ": '", file, "'");
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<Pickle> pickle, ParsePickle(bytes, what));
  const PickleValue& root = pickle->root();
  const char* label_key = kind == "cifar100" ? "fine_labels" : "labels";
  const PickleValue* data = root.Find("data");
  const PickleValue* label_list = root.Find(label_key);
  if (!data || !label_list)
    return InvalidArgument(what, " is a pickled ", PickleValue::KindName(root.kind), " without 'data' and '", label_key,
                           "' entries: not a CIFAR batch");
  AMP_ASSIGN_OR_RETURN(Tensor images, NumpyUInt8Array(*data, what + "'s 'data'"));
  AMP_ASSIGN_OR_RETURN(Tensor batch_labels, IntList(*label_list, StrCat(what, "'s '", label_key, "'")));
  const int64_t n = batch_labels.num_elements();
  if (images.rank() != 2 || images.dims()[0] != n || images.dims()[1] != kImageBytes)
    return InvalidArgument(what, "'s 'data' is uint8 ", ir::Shape::FromStatic(images.dims()).ToString(), ", expected [",
                           n, ", ", kImageBytes, "] (one 3x32x32 image per label)");
  for (int64_t i = 0; i < n; ++i) {
    const int64_t label = batch_labels.data<int64_t>()[i];
    if (label < 0 || label >= classes)
      return InvalidArgument(what, " label ", i, " is ", label, ", outside [0, ", classes, ")");
    labels->push_back(label);
  }
  pixels->insert(pixels->end(), images.data<uint8_t>(), images.data<uint8_t>() + images.num_elements());
  return Status::Ok();
}

}  // namespace

StatusOr<Dataset> LoadCifar(const std::string& kind, const std::string& dir, const std::string& split) {
  const int64_t classes = kind == "cifar100" ? 100 : 10;
  AMP_ASSIGN_OR_RETURN(Layout layout, FindLayout(kind, dir, split));
  std::vector<uint8_t> pixels;
  std::vector<int64_t> labels;
  for (const std::string& name : layout.files) {
    const std::string file = layout.root + "/" + name;
    if (layout.python) AMP_RETURN_IF_ERROR(ReadPython(kind, file, classes, &pixels, &labels));
    else AMP_RETURN_IF_ERROR(ReadBinary(kind, file, kind == "cifar100" ? 2 : 1, classes, &pixels, &labels));
  }
  const int64_t n = static_cast<int64_t>(labels.size());
  Dataset ds;
  ds.num_classes = classes;
  ds.sample_dims = {3, 32, 32};
  AMP_ASSIGN_OR_RETURN(ds.samples, Tensor::Zeros(DType::kUInt8, {n, 3, 32, 32}));
  AMP_ASSIGN_OR_RETURN(ds.labels, Tensor::Zeros(DType::kInt64, {n}));
  std::memcpy(ds.samples.data<uint8_t>(), pixels.data(), pixels.size());
  std::memcpy(ds.labels.data<int64_t>(), labels.data(), labels.size() * sizeof(int64_t));
  return ds;
}

}  // namespace amptrain::executor::data
