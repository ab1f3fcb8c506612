// The per-format loaders behind LoadDataset (dataset.h), and the IDX reader.
// Every loader returns a fully validated Dataset for one split
// ("train" or "test"); `kind` names the dataset in messages.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "executor/data/dataset.h"

namespace amptrain::executor::data {

// An IDX file (raw or gzip) of unsigned bytes: magic 00 00 08 <rank>, `rank`
// big-endian uint32 dims, then the bytes. Returns uint8 [dims...]. Other
// element types are Unimplemented; a bad magic, a header promising more than
// the file holds, a short or overlong file are errors naming the file.
StatusOr<ir::Tensor> ReadIdxFile(const std::string& path);

// MNIST-layout directory: {train,t10k}-images-idx3-ubyte[.gz] and
// {train,t10k}-labels-idx1-ubyte[.gz]; 10 classes, samples uint8 [N,1,H,W].
StatusOr<Dataset> LoadIdxDir(const std::string& kind, const std::string& dir, const std::string& split);

// CIFAR-10 (`kind` "cifar10") or CIFAR-100 ("cifar100", its 100 fine
// classes), binary or python version (torchvision's download), in `dir` or
// the folder its archive unpacks to (cifar.cc); samples uint8 [N, 3, 32, 32].
StatusOr<Dataset> LoadCifar(const std::string& kind, const std::string& dir, const std::string& split);

// `files`: {X, Y} (split 90/10) or {X, Y, X_test, Y_test}, or NAME=FILE
// items. Integer labels equal to `ignored_label` mark positions that count in
// no loss (they are not classes); other negative labels are errors.
StatusOr<Dataset> LoadNpyFiles(const std::vector<std::string>& files, const std::string& split,
                               int64_t ignored_label = kDefaultIgnoredLabel);

// The arrays of one .npz archive (np.savez, np.savez_compressed;
// executor/npz.h), taken as LoadNpyFiles takes files: x_train, y_train (and
// x_test, y_test for a given test split; Keras's mnist.npz), or x and y (X,
// Y), or arrays named as the model's inputs beside `labels` (test.NAME and
// test.labels for a given test split).
StatusOr<Dataset> LoadNpzFile(const std::string& path, const std::string& split,
                              int64_t ignored_label = kDefaultIgnoredLabel);

// An image folder (torchvision's ImageFolder layout): `dir`/<class>/...
// or `dir`/train/<class>/... with `dir`/val/ (or test/) beside it; JPEG and
// PNG files at any depth below a class folder, classes indexed in name order.
// `params` holds "height", "width" and "channels" (1 or 3), which the caller
// takes from the model's input. Each image is decoded, converted to the
// channels and resized as torchvision's Resize + CenterCrop would
// (image.h), into uint8 [N, C, H, W].
StatusOr<Dataset> LoadImageFolder(const std::string& dir, const std::string& split,
                                  const std::map<std::string, std::string>& params);

// CSV (TSV for a .tsv name) files: `files` is {FILE} (split 90/10) or
// {TRAIN, TEST}. A header row is recognised (a first row of text); the
// label column is `label` (a header name or a 0-based index), by default
// the last one; every other column is a float32 feature ([N, D] samples).
// Labels that are all integers >= 0 are class ids (the count bounded by
// the largest, as for npy), text labels are class names indexed in sorted
// order (the training file's), other numbers are regression targets
// (float32 [N, 1]). Quoted fields (RFC 4180) may hold commas and newlines.
StatusOr<Dataset> LoadCsvFiles(const std::vector<std::string>& files, const std::string& label,
                               const std::string& split);

// "0: ant, 1: bee, ..." for a log line: the first 12 class names with their labels.
std::string ClassList(const std::vector<std::string>& names);

// Synthetic images with a class-dependent pattern plus noise.
StatusOr<Dataset> MakeSynthetic(const std::map<std::string, std::string>& params, const std::string& split);

// The fixed 90/10 split: the test part is N/10 samples chosen by a
// permutation with a fixed seed, the train part the rest; both keep the
// original order. Copies the selected rows.
StatusOr<Dataset> TakeSplit(const Dataset& all, const std::string& split);
// The rows of that split among n, in order.
std::vector<int64_t> SplitIndices(int64_t n, const std::string& split);

// Labels must be int64 in [0, num_classes); `file` names them in the error.
Status CheckLabels(const ir::Tensor& labels, int64_t num_classes, const std::string& file);

}  // namespace amptrain::executor::data
