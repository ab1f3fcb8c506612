// BatchIterator: shuffling, batching, normalization and augmentation.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "executor/data/dataset.h"
#include "executor/data/image.h"
#include "executor/data/rng.h"

namespace amptrain::executor::data {

using ir::DType;
using ir::Tensor;

namespace {
enum Stream : uint64_t { kShuffle = 11, kAugment = 12 };
}  // namespace

BatchIterator::BatchIterator(const Dataset& ds, int64_t batch_size, bool shuffle, uint64_t seed, Normalization norm,
                             Augmentation aug, bool drop_last)
    : ds_(ds),
      batch_size_(batch_size),
      shuffle_(shuffle),
      seed_(seed),
      norm_(std::move(norm)),
      aug_(aug),
      drop_last_(drop_last) {
  config_ = Configure();
  MakePermutation();
}

Status BatchIterator::Configure() {
  if (batch_size_ < 1) return InvalidArgument("batch iterator: batch size must be >= 1, got ", batch_size_);
  const DType st = ds_.samples.dtype();
  raw_ = st == DType::kInt64 || st == DType::kBool || (st == DType::kUInt8 && ds_.raw_samples);
  if (st != DType::kUInt8 && st != DType::kFloat32 && !raw_)
    return InvalidArgument("batch iterator: samples must be uint8, float32, int64 or bool, got ", ir::DTypeName(st));
  const int64_t n = ds_.size();
  int64_t sample = 1;
  for (int64_t d : ds_.sample_dims) sample *= d;
  if (ds_.samples.num_elements() != n * sample)
    return InvalidArgument("batch iterator: samples hold ", ds_.samples.num_elements(), " values, not N=", n,
                           " times the sample size ", sample);
  const DType lt = ds_.labels.dtype();
  if ((lt != DType::kInt64 && lt != DType::kFloat32) || ds_.labels.rank() < 1 || ds_.labels.dims()[0] != n)
    return InvalidArgument("batch iterator: labels must be int64 or float32 [N=", n, ", ...]");
  for (const InputColumn& c : ds_.more_inputs)
    if (c.values.rank() < 1 || c.values.dims()[0] != n)
      return InvalidArgument("batch iterator: input '", c.name, "' has ", c.values.rank() ? c.values.dims()[0] : 0,
                             " rows, not N=", n);
  if (raw_) {
    if (!norm_.mean.empty() || !norm_.std.empty())
      return InvalidArgument("batch iterator: normalization applies to uint8 or float samples, not ",
                             ir::DTypeName(st));
    if (aug_.random_crop_padding > 0 || aug_.horizontal_flip || aug_.fit_channels > 0 || aug_.window_height > 0)
      return InvalidArgument("batch iterator: crop/flip augmentation and resizing apply to images normalized to "
                             "float, not to ", ir::DTypeName(st), " samples fed as they are");
    channels_ = 1;
    plane_ = out_plane_ = sample;
    batch_dims_ = ds_.sample_dims;
    return Status::Ok();
  }

  const bool image = ds_.sample_dims.size() == 3;
  channels_ = image ? ds_.sample_dims[0] : 1;
  plane_ = sample / std::max<int64_t>(channels_, 1);
  if (image) {
    height_ = ds_.sample_dims[1];
    width_ = ds_.sample_dims[2];
  }
  const bool fit = aug_.fit_channels > 0;
  if (fit) {
    if (!image || st != DType::kUInt8)
      return InvalidArgument("batch iterator: fitting images to the model needs uint8 C x H x W samples");
    if (aug_.window_height > 0 || aug_.window_width > 0)
      return InvalidArgument("batch iterator: a random window and fitting images to the model are exclusive");
    if ((channels_ != 1 && channels_ != 3) || (aug_.fit_channels != 1 && aug_.fit_channels != 3))
      return InvalidArgument("batch iterator: images convert between 1 and 3 channels only, not ", channels_, " to ",
                             aug_.fit_channels);
    if (aug_.fit_height < 1 || aug_.fit_width < 1)
      return InvalidArgument("batch iterator: cannot fit images to ", aug_.fit_height, "x", aug_.fit_width);
    if (channels_ == 3 && aug_.fit_channels == 1 && norm_.mean.size() == 3 && norm_.std.size() == 3) {
      // RGB statistics for a gray model: weighted as the luma weights the channels.
      constexpr float kLuma[3] = {0.299f, 0.587f, 0.114f};
      Normalization gray{{0.0f}, {0.0f}};
      for (size_t c = 0; c < 3; ++c) {
        gray.mean[0] += kLuma[c] * norm_.mean[c];
        gray.std[0] += kLuma[c] * norm_.std[c];
      }
      norm_ = gray;
    }
    channels_ = aug_.fit_channels;
    height_ = aug_.fit_height;
    width_ = aug_.fit_width;
    plane_ = height_ * width_;
  }
  if (aug_.random_crop_padding < 0)
    return InvalidArgument("batch iterator: crop padding must be >= 0, got ", aug_.random_crop_padding);
  const bool window = aug_.window_height > 0 || aug_.window_width > 0;
  if ((aug_.random_crop_padding > 0 || aug_.horizontal_flip || window) && !image)
    return InvalidArgument("batch iterator: crop/flip augmentation needs C x H x W samples, got rank ",
                           ds_.sample_dims.size());
  batch_dims_ = fit ? std::vector<int64_t>{channels_, height_, width_} : ds_.sample_dims;
  out_plane_ = plane_;
  if (window) {
    if (aug_.random_crop_padding > 0)
      return InvalidArgument("batch iterator: a random window and crop padding are exclusive");
    if (aug_.window_height < 1 || aug_.window_width < 1 || aug_.window_height > ds_.sample_dims[1] ||
        aug_.window_width > ds_.sample_dims[2])
      return InvalidArgument("batch iterator: a ", aug_.window_height, "x", aug_.window_width,
                             " window does not fit the ", ds_.sample_dims[1], "x", ds_.sample_dims[2], " samples");
    batch_dims_ = {channels_, aug_.window_height, aug_.window_width};
    out_plane_ = aug_.window_height * aug_.window_width;
  }

  const size_t nm = norm_.mean.size(), ns = norm_.std.size();
  if (nm != ns || (nm > 1 && nm != static_cast<size_t>(channels_)))
    return InvalidArgument("batch iterator: normalization has ", nm, " means and ", ns,
                           " stds; expected equal counts of 0, 1 or ", channels_, " (the channels)");
  std::vector<float> mean(channels_, 0.0f), stddev(channels_, 1.0f);
  for (int64_t c = 0; c < channels_ && nm > 0; ++c) {
    mean[c] = norm_.mean[nm == 1 ? 0 : c];
    stddev[c] = norm_.std[nm == 1 ? 0 : c];
    if (!(stddev[c] > 0.0f)) return InvalidArgument("batch iterator: normalization std ", stddev[c], " is not > 0");
  }
  scale_.resize(channels_);
  shift_.resize(channels_);
  for (int64_t c = 0; c < channels_; ++c) {
    scale_[c] = 1.0f / stddev[c];
    shift_[c] = -mean[c] / stddev[c];
  }
  if (st == DType::kUInt8) {
    lut_.resize(channels_ * 256);
    for (int64_t c = 0; c < channels_; ++c)
      for (int v = 0; v < 256; ++v) lut_[c * 256 + v] = (static_cast<float>(v) / 255.0f - mean[c]) / stddev[c];
  }
  return Status::Ok();
}

void BatchIterator::MakePermutation() {
  const int64_t n = ds_.size();
  perm_.resize(n);
  std::iota(perm_.begin(), perm_.end(), 0);
  if (!shuffle_) return;
  Rng rng{seed_, static_cast<uint64_t>(epoch_), kShuffle};
  for (int64_t i = n - 1; i > 0; --i) std::swap(perm_[i], perm_[rng.Below(static_cast<uint64_t>(i) + 1)]);
}

void BatchIterator::Seek(Cursor c) {
  epoch_ = c.epoch;
  index_ = c.index;
  MakePermutation();
}

void BatchIterator::NextEpoch() {
  ++epoch_;
  index_ = 0;
  MakePermutation();
}

int64_t BatchIterator::batches_per_epoch() const {
  if (!config_.ok()) return 0;
  const int64_t n = ds_.size();
  return drop_last_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
}

void BatchIterator::FitSample(int64_t sample, std::vector<uint8_t>* out) const {
  Image img;
  img.channels = ds_.sample_dims[0];
  img.height = ds_.sample_dims[1];
  img.width = ds_.sample_dims[2];
  const int64_t plane = img.height * img.width;
  const uint8_t* src = ds_.samples.data<uint8_t>() + sample * img.channels * plane;
  img.pixels.resize(static_cast<size_t>(img.channels * plane));
  for (int64_t c = 0; c < img.channels; ++c)  // CHW -> HWC
    for (int64_t p = 0; p < plane; ++p) img.pixels[p * img.channels + c] = src[c * plane + p];
  if (img.channels != channels_) img = ToChannels(img, channels_);
  out->resize(static_cast<size_t>(channels_ * plane_));
  if (img.height != height_ || img.width != width_) {
    ResizeAndCenterCrop(img, height_, width_, out->data());
    return;
  }
  for (int64_t c = 0; c < channels_; ++c)  // HWC -> CHW
    for (int64_t p = 0; p < plane_; ++p) (*out)[c * plane_ + p] = img.pixels[p * channels_ + c];
}

void BatchIterator::FillSample(int64_t sample, int64_t position, float* out) const {
  const bool u8 = ds_.samples.dtype() == DType::kUInt8;
  std::vector<uint8_t> fitted;
  if (aug_.fit_channels > 0) FitSample(sample, &fitted);
  const uint8_t* src8 = nullptr;
  if (u8) src8 = fitted.empty() ? ds_.samples.data<uint8_t>() + sample * channels_ * plane_ : fitted.data();
  const float* src32 = u8 ? nullptr : ds_.samples.data<float>() + sample * channels_ * plane_;
  auto value = [&](int64_t c, int64_t i) {
    return u8 ? lut_[c * 256 + src8[i]] : src32[i] * scale_[c] + shift_[c];
  };
  const int64_t pad = aug_.random_crop_padding;
  const bool window = aug_.window_height > 0;
  if (pad == 0 && !aug_.horizontal_flip && !window) {
    for (int64_t c = 0; c < channels_; ++c) {
      float* o = out + c * plane_;
      const int64_t base = c * plane_;
      if (u8) {
        const float* lut = lut_.data() + c * 256;
        for (int64_t i = 0; i < plane_; ++i) o[i] = lut[src8[base + i]];
      } else {
        for (int64_t i = 0; i < plane_; ++i) o[i] = src32[base + i] * scale_[c] + shift_[c];
      }
    }
    return;
  }
  Rng rng{seed_, static_cast<uint64_t>(epoch_), static_cast<uint64_t>(position), kAugment};
  if (window) {
    // A window at a random offset inside the stored image, then the mirror.
    const int64_t h = height_, w = width_;
    const int64_t oh = aug_.window_height, ow = aug_.window_width;
    const auto top = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(h - oh + 1)));
    const auto left = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(w - ow + 1)));
    const bool flip = aug_.horizontal_flip && (rng.Next() >> 63);
    for (int64_t c = 0; c < channels_; ++c)
      for (int64_t y = 0; y < oh; ++y) {
        float* o = out + (c * oh + y) * ow;
        const int64_t row = c * plane_ + (top + y) * w + left;
        for (int64_t x = 0; x < ow; ++x) o[x] = value(c, row + (flip ? ow - 1 - x : x));
      }
    return;
  }
  // Crop of the zero-padded image at offset (dy, dx) in [0, 2 pad], then the mirror.
  const int64_t dy = pad ? static_cast<int64_t>(rng.Below(2 * pad + 1)) - pad : 0;
  const int64_t dx = pad ? static_cast<int64_t>(rng.Below(2 * pad + 1)) - pad : 0;
  const bool flip = aug_.horizontal_flip && (rng.Next() >> 63);
  const int64_t h = height_, w = width_;
  for (int64_t c = 0; c < channels_; ++c) {
    const float zero = u8 ? lut_[c * 256] : shift_[c];  // the raw value 0, normalized
    for (int64_t y = 0; y < h; ++y) {
      float* o = out + (c * h + y) * w;
      const int64_t sy = y + dy;
      if (sy < 0 || sy >= h) {
        std::fill(o, o + w, zero);
        continue;
      }
      const int64_t row = c * plane_ + sy * w;
      for (int64_t x = 0; x < w; ++x) {
        const int64_t sx = (flip ? w - 1 - x : x) + dx;
        o[x] = sx < 0 || sx >= w ? zero : value(c, row + sx);
      }
    }
  }
}

namespace {

// `previous` when nothing else holds it and it is `dtype` [b, row_dims...]:
// the next batch is written over the last one's buffer. Else a new tensor.
StatusOr<Tensor> BatchTensor(Tensor previous, DType dtype, int64_t b, const std::vector<int64_t>& row_dims) {
  const std::vector<int64_t>& d = previous.dims();
  if (previous.sole_owner() && previous.dtype() == dtype && !d.empty() && d[0] == b &&
      std::equal(d.begin() + 1, d.end(), row_dims.begin(), row_dims.end()))
    return previous;
  std::vector<int64_t> dims = {b};
  dims.insert(dims.end(), row_dims.begin(), row_dims.end());
  return Tensor::Zeros(dtype, std::move(dims));
}

// Rows `perm[0..b)` of `src` [N, ...] into a [b, ...] tensor (`previous`'s
// buffer when BatchTensor may reuse it).
StatusOr<Tensor> GatherRows(const Tensor& src, const int64_t* perm, int64_t b, Tensor previous) {
  const std::vector<int64_t>& dims = src.dims();
  const int64_t n = dims[0];
  AMP_ASSIGN_OR_RETURN(Tensor out, BatchTensor(std::move(previous), src.dtype(), b,
                                                std::vector<int64_t>(dims.begin() + 1, dims.end())));
  const size_t row = n ? src.nbytes() / static_cast<size_t>(n) : 0;
  const auto* from = static_cast<const std::byte*>(src.raw());
  auto* to = static_cast<std::byte*>(out.raw());
  for (int64_t i = 0; i < b; ++i) std::memcpy(to + i * row, from + perm[i] * row, row);
  return out;
}

}  // namespace

StatusOr<bool> BatchIterator::Next(Batch* batch) {
  AMP_RETURN_IF_ERROR(config_);
  const int64_t n = ds_.size();
  // Only Seek() (a resumed checkpoint's data cursor) puts index_ out of range.
  if (index_ < 0 || index_ > n)
    return OutOfRange("cannot continue epoch ", epoch_ + 1, " at sample ", index_, ": the data set has only ", n,
                      " samples (a checkpoint written on a larger data set cannot resume on this one)");
  const int64_t remaining = n - index_;
  if (remaining == 0 || (drop_last_ && remaining < batch_size_)) return false;
  const int64_t b = std::min(batch_size_, remaining);
  const int64_t* rows = perm_.data() + index_;

  // The last batch's tensors are reused where the caller let go of them
  // (the trainer does after each step): steady-state batches allocate nothing.
  Batch out = std::move(*batch);
  const size_t columns = 1 + ds_.more_inputs.size();
  out.inputs.resize(columns);
  if (raw_) {
    AMP_ASSIGN_OR_RETURN(out.inputs[0].second, GatherRows(ds_.samples, rows, b, std::move(out.inputs[0].second)));
  } else {
    AMP_ASSIGN_OR_RETURN(out.inputs[0].second,
                         BatchTensor(std::move(out.inputs[0].second), DType::kFloat32, b, batch_dims_));
    const int64_t sample_size = channels_ * out_plane_;
    float* dst = out.inputs[0].second.data<float>();
    for (int64_t i = 0; i < b; ++i) FillSample(rows[i], index_ + i, dst + i * sample_size);
  }
  out.inputs[0].first = ds_.sample_input;
  for (size_t c = 0; c < ds_.more_inputs.size(); ++c) {
    const InputColumn& col = ds_.more_inputs[c];
    AMP_ASSIGN_OR_RETURN(out.inputs[c + 1].second, GatherRows(col.values, rows, b, std::move(out.inputs[c + 1].second)));
    out.inputs[c + 1].first = col.name;
  }
  AMP_ASSIGN_OR_RETURN(out.labels, GatherRows(ds_.labels, rows, b, std::move(out.labels)));
  index_ += b;
  *batch = std::move(out);
  return true;
}

StatusOr<bool> BatchIterator::Next(Tensor* images, Tensor* labels) {
  if (!ds_.more_inputs.empty())
    return InvalidArgument("batch iterator: the data set has ", ds_.more_inputs.size() + 1,
                           " inputs; read its batches whole");
  Batch batch;
  AMP_ASSIGN_OR_RETURN(bool more, Next(&batch));
  if (!more) return false;
  *images = std::move(batch.inputs[0].second);
  *labels = std::move(batch.labels);
  return true;
}

}  // namespace amptrain::executor::data
