// Datasets of the trainer: loading labelled image/feature sets into memory,
// and the batch iterator that shuffles, normalizes and augments them.
//
// Every loader validates its input and returns a Status naming the file:
// missing file, wrong magic, truncated data or gzip stream, image/label count
// mismatch, labels outside [0, num_classes), files of the wrong size, shape
// mismatch between features and labels. Gzip members are detected by their
// magic bytes (not the file name) and inflated through zlib with an output
// cap, so a small file can never make us allocate gigabytes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/status.h"
#include "ir/tensor.h"

namespace amptrain::executor::data {

// Integer labels equal to this count in no loss and no accuracy (PyTorch's
// CrossEntropyLoss ignore_index default; Hugging Face marks padding with it).
inline constexpr int64_t kDefaultIgnoredLabel = -100;

// A further model input of a multi-input set: [N, ...] rows batched with the samples.
struct InputColumn {
  std::string name;  // the model input it feeds
  ir::Tensor values;  // float32, int64 or bool [N, ...]
};

// A labelled image/feature dataset held in memory.
struct Dataset {
  std::vector<int64_t> sample_dims;  // {C, H, W} for image sets, {D} or any rank for features
  int64_t num_classes = 0;           // 0 for regression (labels are float32)
  // True when num_classes is only the largest label + 1 (npy): the data set
  // fixes no class count, so a model with more classes fits it too (a small
  // set need not hold every class).
  bool classes_from_labels = false;
  // uint8 [N, sample_dims...] for image sets (normalized at batch time),
  // float32 [N, sample_dims...] for features, or int64/bool (token ids,
  // masks: batched as they are, never normalized).
  ir::Tensor samples;
  // The model input the samples feed; "" for the model's only data input
  // (every kind but npy with named files).
  std::string sample_input;
  // uint8 samples batched as they are, not normalized to float32: the model
  // takes its images as uint8 and normalizes them itself (tools' FeedRawImages).
  bool raw_samples = false;
  // The other model inputs (npy with named files), batched as they are.
  std::vector<InputColumn> more_inputs;
  // int64 [N] with values in [0, num_classes) (classification; or [N, d...]:
  // a class per token or pixel; npy labels may also hold the ignored index),
  // or float32 [N, ...] (regression).
  ir::Tensor labels;
  int64_t size() const;
};

// SPEC strings, the one parser for the CLI ("kind" or "kind:rest"):
//   "fashion-mnist"              default root /usr/share/datasets/fashion-mnist
//   "fashion-mnist:/dir", "mnist:/dir"
//       IDX files {train,t10k}-{images-idx3,labels-idx1}-ubyte, raw or .gz, in
//       /dir, /dir/raw or torchvision's /dir/{MNIST,FashionMNIST}/raw
//   "cifar10:/dir", "cifar100:/dir"  the binary or the python (pickled,
//                                torchvision's download) version, in /dir or the
//                                folder its archive unpacks to (loaders.h)
//   "npy:X.npy,Y.npy"            one pair, split 90/10 deterministically
//   "npy:X.npy,Y.npy,Xt.npy,Yt.npy"  train pair and test pair
//   "npy:ids=X.npy,mask=M.npy,labels=Y.npy[,test.ids=Xt.npy,test.mask=Mt.npy,test.labels=Yt.npy]"
//       named model inputs (any number, any dtype: float -> float32, integers
//       -> int64, bool), the labels, and optionally the test files of each
//       (else the 90/10 split); the first input is the samples
//   "csv:data.csv[,test.csv][,label=COLUMN]"  numeric feature columns and a label
//                                column (the last by default; a header name or an
//                                index); .tsv files split on tabs (loaders.h)
//   "images:/dir"                an image folder: /dir/<class>/**.{jpg,jpeg,png}, or
//                                /dir/train/<class>/... with /dir/val/ (or test/);
//                                decoded at the size in `params` ("height", "width",
//                                "channels"), which the CLI fills in from the model
//   "synthetic" or "synthetic:N=1024,C=1,H=28,W=28,classes=10,seed=0"
// For synthetic, `params` holds the given keys (unknown keys and non-integer
// values are errors); for the other kinds `path` holds the rest of the string.
struct DataSpec {
  std::string kind, path;
  std::map<std::string, std::string> params;
};
StatusOr<DataSpec> ParseDataSpec(const std::string& spec);

// split: "train" or "test". npy with one pair and synthetic use a fixed 90/10
// split of the samples (test = a seeded-permutation-chosen N/10 samples, both
// parts kept in file order), so train and test never overlap.
StatusOr<Dataset> LoadDataset(const DataSpec& spec, const std::string& split);

// Per-channel mean/std in the [0, 1] scale of x/255 (uint8 samples) or the
// raw scale (float samples). Empty vectors mean "no normalization" (uint8 is
// still divided by 255). One entry applies to every channel.
struct Normalization {
  std::vector<float> mean, std;
};
// Fashion-MNIST 0.2860/0.3530, MNIST 0.1307/0.3081, CIFAR-10
// (0.4914, 0.4822, 0.4465)/(0.2470, 0.2435, 0.2616), CIFAR-100
// (0.5071, 0.4865, 0.4409)/(0.2673, 0.2564, 0.2762), synthetic 0.5/0.2 per
// channel, images ImageNet's (0.485, 0.456, 0.406)/(0.229, 0.224, 0.225)
// (gray: 0.449/0.226), npy and csv none.
Normalization DefaultNormalization(const DataSpec& spec);

// Image augmentation (samples of rank 3, C x H x W, only): a random crop of
// the image padded by `random_crop_padding` zero pixels on each side (the raw
// value 0, i.e. -mean/std after normalization, as torchvision's RandomCrop
// before Normalize), then a horizontal flip with probability 1/2.
//
// `window_height` x `window_width` > 0 (exclusive with the padding): each
// sample is a random window of that size inside the stored, larger image
// (images: stored at --image-resize for training), so the batches are
// C x window_height x window_width: torchvision's RandomCrop after Resize.
struct Augmentation {
  int64_t random_crop_padding = 0;
  bool horizontal_flip = false;
  int64_t window_height = 0, window_width = 0;
  // fit_channels > 0: every uint8 image is first made fit_channels x
  // fit_height x fit_width, as torchvision's Grayscale(num_output_channels)
  // (gray repeated, or ITU-R 601 luma) and Resize + CenterCrop make a PIL
  // image (image.h), then augmented and normalized at that size: a data set
  // whose images differ from the model's input (FitImages in tools/common.h).
  // Exclusive with a window. Normalization then has 1 or fit_channels
  // entries; RGB statistics for a gray fit are combined with the luma weights.
  int64_t fit_channels = 0, fit_height = 0, fit_width = 0;
};

// `aug`'s fit to the model (fit_*) without its random parts: what evaluation applies.
inline Augmentation FitOnly(const Augmentation& aug) {
  Augmentation fit;
  fit.fit_channels = aug.fit_channels;
  fit.fit_height = aug.fit_height;
  fit.fit_width = aug.fit_width;
  return fit;
}

// One batch: the tensors of the model's data inputs, by input name ("" for
// the model's only data input), and the labels.
struct Batch {
  std::vector<std::pair<std::string, ir::Tensor>> inputs;
  ir::Tensor labels;
  int64_t size() const { return labels.dims().empty() ? 0 : labels.dims()[0]; }
};

// Shuffling, batching, normalization and augmentation, deterministic given
// (seed, epoch, cursor): the permutation of an epoch is derived from
// (seed, epoch) alone and the augmentation of a sample from (seed, epoch,
// its position in the epoch), so Seek() to a saved cursor reproduces the
// rest of the epoch bitwise. Keeps a shallow copy of `ds` (tensors share
// their buffers). Configuration errors (normalization of the wrong length,
// augmentation of non-image samples, batch_size < 1, a cursor out of range)
// are reported by Next().
class BatchIterator {
 public:
  BatchIterator(const Dataset& ds, int64_t batch_size, bool shuffle, uint64_t seed, Normalization norm,
                Augmentation aug, bool drop_last = false);

  // Position: the epoch and the index of the next sample within the epoch's
  // permutation (the checkpoint's "data cursor").
  struct Cursor {
    int64_t epoch = 0;
    int64_t index = 0;
  };
  Cursor cursor() const { return {epoch_, index_}; }
  void Seek(Cursor c);

  // Fills the batch with fresh tensors: the samples (float32 [B,
  // sample_dims...] normalized from uint8/float32; int64/bool as they are)
  // under Dataset::sample_input, the other inputs, and the labels (int64
  // [B], or float32 [B, ...] for regression); B is batch_size except for a
  // last partial batch (never with drop_last). Returns false, leaving the
  // batch untouched, at the end of the epoch (then call NextEpoch()).
  StatusOr<bool> Next(Batch* batch);
  // The same for a single-input set (no more_inputs): the samples and labels.
  StatusOr<bool> Next(ir::Tensor* images, ir::Tensor* labels);
  void NextEpoch();
  int64_t batches_per_epoch() const;
  // Why the iterator yields nothing, where its configuration is wrong (Ok otherwise).
  const Status& status() const { return config_; }

 private:
  Status Configure();
  void MakePermutation();
  void FillSample(int64_t sample, int64_t position, float* out) const;
  // Augmentation::fit_*: sample `sample`'s uint8 image as the fitted CHW bytes.
  void FitSample(int64_t sample, std::vector<uint8_t>* out) const;

  Dataset ds_;
  int64_t batch_size_;
  bool shuffle_;
  uint64_t seed_;
  Normalization norm_;
  Augmentation aug_;
  bool drop_last_;
  Status config_;                     // the constructor's verdict, returned by Next()
  bool raw_ = false;                  // int64/bool samples: copied as they are
  int64_t channels_ = 1, plane_ = 1;  // sample = channels_ x plane_ values (after any fit)
  int64_t height_ = 0, width_ = 0;    // image samples: the plane's dims (after any fit)
  std::vector<int64_t> batch_dims_;   // a batch row: sample_dims, or C x the window
  int64_t out_plane_ = 1;             // values per channel of a batch row
  std::vector<float> lut_;            // uint8 -> float per channel: [channels_][256]
  std::vector<float> scale_, shift_;  // float samples: x * scale + shift per channel
  int64_t epoch_ = 0, index_ = 0;
  std::vector<int64_t> perm_;
};

}  // namespace amptrain::executor::data
