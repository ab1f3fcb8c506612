// BatchIterator: coverage of each epoch, shuffling per (seed, epoch), cursor
// seeks that reproduce the rest of an epoch bitwise, normalization values,
// crop and flip, configuration errors and the speed of batch assembly.
#include <gtest/gtest.h>

#include <set>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <numeric>

#include "executor/data/dataset.h"
#include "executor/data/image.h"

namespace amptrain::executor::data {
namespace {

using ir::DType;
using ir::Tensor;

// N images C x H x W whose pixel (c, y, x) of sample i is (i + 3c + 5y + 7x) mod 256;
// label i (so a batch's labels say which samples it holds).
Dataset Indexed(int64_t n, int64_t c = 1, int64_t h = 4, int64_t w = 5) {
  Dataset ds;
  ds.sample_dims = {c, h, w};
  ds.num_classes = n;
  ds.samples = *Tensor::Zeros(DType::kUInt8, {n, c, h, w});
  ds.labels = *Tensor::Zeros(DType::kInt64, {n});
  uint8_t* px = ds.samples.data<uint8_t>();
  for (int64_t i = 0; i < n; ++i) {
    ds.labels.data<int64_t>()[i] = i;
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x) *px++ = static_cast<uint8_t>(i + 3 * ch + 5 * y + 7 * x);
  }
  return ds;
}

// The sample order of one epoch, read from the labels.
std::vector<int64_t> EpochOrder(BatchIterator& it) {
  std::vector<int64_t> order;
  Tensor images, labels;
  while (true) {
    auto more = it.Next(&images, &labels);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) return order;
    for (int64_t v : labels.ToInt64Vector()) order.push_back(v);
  }
}

// raw_samples (a model that takes uint8 images): batches of the stored bytes,
// uint8, in the epoch's order; normalization or augmentation is refused.
TEST(BatchIteratorTest, RawUint8SamplesComeAsStored) {
  Dataset ds = Indexed(6, 3, 2, 2);
  ds.raw_samples = true;
  BatchIterator it(ds, 4, /*shuffle=*/true, /*seed=*/5, {}, {});
  Tensor images, labels;
  ASSERT_TRUE(*it.Next(&images, &labels));
  ASSERT_EQ(images.dtype(), DType::kUInt8);
  ASSERT_EQ(images.dims(), (std::vector<int64_t>{4, 3, 2, 2}));
  const std::vector<int64_t> rows = labels.ToInt64Vector();
  for (size_t b = 0; b < rows.size(); ++b)
    for (int64_t e = 0; e < 12; ++e)
      EXPECT_EQ(images.data<uint8_t>()[b * 12 + e], ds.samples.data<uint8_t>()[rows[b] * 12 + e]);
  BatchIterator normalized(ds, 4, false, 0, {{0.5f}, {0.2f}}, {});
  EXPECT_FALSE(normalized.status().ok());
  Augmentation flip;
  flip.horizontal_flip = true;
  BatchIterator flipped(ds, 4, false, 0, {}, flip);
  EXPECT_NE(flipped.status().message().find("fed as they are"), std::string::npos) << flipped.status().message();
}

TEST(BatchIteratorTest, EverySampleOncePerEpochInAFreshOrder) {
  Dataset ds = Indexed(37);
  BatchIterator it(ds, 8, /*shuffle=*/true, /*seed=*/42, {}, {});
  EXPECT_EQ(it.batches_per_epoch(), 5);
  Tensor images, labels;
  ASSERT_TRUE(*it.Next(&images, &labels));
  EXPECT_EQ(images.dtype(), DType::kFloat32);
  EXPECT_EQ(images.dims(), (std::vector<int64_t>{8, 1, 4, 5}));
  EXPECT_EQ(labels.dims(), (std::vector<int64_t>{8}));
  it.Seek({0, 0});
  std::vector<int64_t> first = EpochOrder(it);
  std::vector<int64_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> all(37);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(sorted, all);
  EXPECT_NE(first, all) << "not shuffled";
  EXPECT_EQ(it.cursor().index, 37);
  EXPECT_FALSE(*it.Next(&images, &labels));  // stays at the end until NextEpoch()

  it.NextEpoch();
  EXPECT_EQ(it.cursor().epoch, 1);
  std::vector<int64_t> second = EpochOrder(it);
  EXPECT_NE(first, second);
  std::sort(second.begin(), second.end());
  EXPECT_EQ(second, all);

  BatchIterator same(ds, 5, true, 42, {}, {});  // the order depends on (seed, epoch), not the batch size
  EXPECT_EQ(EpochOrder(same), first);
  BatchIterator other(ds, 8, true, 43, {}, {});
  EXPECT_NE(EpochOrder(other), first);
  BatchIterator plain(ds, 8, false, 42, {}, {});
  EXPECT_EQ(EpochOrder(plain), all);
}

TEST(BatchIteratorTest, LastBatchAndDropLast) {
  Dataset ds = Indexed(37);
  BatchIterator keep(ds, 8, true, 1, {}, {});
  Tensor images, labels;
  std::vector<int64_t> sizes;
  while (*keep.Next(&images, &labels)) sizes.push_back(images.dims()[0]);
  EXPECT_EQ(sizes, (std::vector<int64_t>{8, 8, 8, 8, 5}));
  BatchIterator drop(ds, 8, true, 1, {}, {}, /*drop_last=*/true);
  EXPECT_EQ(drop.batches_per_epoch(), 4);
  EXPECT_EQ(EpochOrder(drop).size(), 32u);
}

TEST(BatchIteratorTest, SeekReproducesTheRestOfTheEpochBitwise) {
  Dataset ds = Indexed(50, 3, 6, 6);
  Augmentation aug{2, true};
  Normalization norm{{0.4f, 0.5f, 0.6f}, {0.2f, 0.25f, 0.3f}};
  BatchIterator it(ds, 7, true, 9, norm, aug);
  Tensor images, labels;
  while (*it.Next(&images, &labels)) {
  }
  it.NextEpoch();
  ASSERT_TRUE(*it.Next(&images, &labels));
  ASSERT_TRUE(*it.Next(&images, &labels));
  BatchIterator::Cursor saved = it.cursor();
  EXPECT_EQ(saved.epoch, 1);
  EXPECT_EQ(saved.index, 14);
  std::vector<Tensor> rest_images, rest_labels;
  while (*it.Next(&images, &labels)) {
    rest_images.push_back(images);
    rest_labels.push_back(labels);
  }
  BatchIterator resumed(ds, 7, true, 9, norm, aug);
  resumed.Seek(saved);
  for (size_t b = 0; b < rest_images.size(); ++b) {
    ASSERT_TRUE(*resumed.Next(&images, &labels));
    EXPECT_TRUE(images == rest_images[b]) << "batch " << b;
    EXPECT_TRUE(labels == rest_labels[b]) << "batch " << b;
  }
  EXPECT_FALSE(*resumed.Next(&images, &labels));
}

TEST(BatchIteratorTest, NormalizationValues) {
  Dataset ds = Indexed(3, 3, 2, 2);
  Normalization norm{{0.1f, 0.2f, 0.3f}, {0.5f, 0.25f, 2.0f}};
  BatchIterator it(ds, 3, false, 0, norm, {});
  Tensor images, labels;
  ASSERT_TRUE(*it.Next(&images, &labels));
  const float* out = images.data<float>();
  for (int64_t i = 0; i < ds.samples.num_elements(); ++i) {
    const int64_t c = (i / 4) % 3;
    const float expect = (ds.samples.data<uint8_t>()[i] / 255.0f - norm.mean[c]) / norm.std[c];
    EXPECT_NEAR(out[i], expect, 1e-6f) << i;
  }
  // Without normalization uint8 becomes x / 255; one value applies to every channel.
  BatchIterator scaled(ds, 3, false, 0, {}, {});
  ASSERT_TRUE(*scaled.Next(&images, &labels));
  EXPECT_FLOAT_EQ(images.data<float>()[5], ds.samples.data<uint8_t>()[5] / 255.0f);
  BatchIterator shared(ds, 3, false, 0, {{0.5f}, {0.5f}}, {});
  ASSERT_TRUE(*shared.Next(&images, &labels));
  EXPECT_FLOAT_EQ(images.data<float>()[11], (ds.samples.data<uint8_t>()[11] / 255.0f - 0.5f) / 0.5f);

  // Float features are normalized as (x - mean) / std; regression labels are copied row by row.
  Dataset feat;
  feat.sample_dims = {2};
  feat.samples = Tensor::Floats({1, 2, 3, 4, 5, 6}, {3, 2});
  feat.labels = Tensor::Floats({10, 11, 20, 21, 30, 31}, {3, 2});
  BatchIterator fit(feat, 2, false, 0, {{1.0f}, {2.0f}}, {});
  ASSERT_TRUE(*fit.Next(&images, &labels));
  EXPECT_EQ(images.dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_FLOAT_EQ(images.data<float>()[3], 1.5f);
  EXPECT_EQ(labels.dtype(), DType::kFloat32);
  EXPECT_EQ(labels.dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(labels.data<float>()[3], 21.0f);
}

// Each augmented image is the original shifted by (dy, dx) in [-pad, pad],
// zero-filled, and mirrored or not; returns the (dy, dx, flip) that match.
bool MatchShift(const float* out, const float* orig, int64_t c, int64_t h, int64_t w, int64_t pad, float zero,
                int* dy_out, int* dx_out, bool* flip_out) {
  for (int flip = 0; flip < 2; ++flip)
    for (int dy = -static_cast<int>(pad); dy <= pad; ++dy)
      for (int dx = -static_cast<int>(pad); dx <= pad; ++dx) {
        bool ok = true;
        for (int64_t ch = 0; ch < c && ok; ++ch)
          for (int64_t y = 0; y < h && ok; ++y)
            for (int64_t x = 0; x < w && ok; ++x) {
              const int64_t sy = y + dy, sx = (flip ? w - 1 - x : x) + dx;
              const float want = sy < 0 || sy >= h || sx < 0 || sx >= w ? zero : orig[(ch * h + sy) * w + sx];
              ok = out[(ch * h + y) * w + x] == want;
            }
        if (ok) {
          *dy_out = dy, *dx_out = dx, *flip_out = flip;
          return true;
        }
      }
  return false;
}

TEST(BatchIteratorTest, CropAndFlip) {
  Dataset ds = Indexed(64, 2, 5, 7);
  Normalization norm{{0.5f}, {0.25f}};
  const float zero = (0.0f - 0.5f) / 0.25f;
  BatchIterator plain(ds, 64, false, 3, norm, {});
  Tensor orig, labels;
  ASSERT_TRUE(*plain.Next(&orig, &labels));
  const int64_t sample = 2 * 5 * 7;

  BatchIterator flip_only(ds, 64, false, 3, norm, {0, true});
  Tensor flipped;
  ASSERT_TRUE(*flip_only.Next(&flipped, &labels));
  EXPECT_EQ(flipped.dims(), orig.dims());
  int mirrored = 0;
  for (int64_t i = 0; i < 64; ++i) {
    int dy = 9, dx = 9;
    bool flip = false;
    ASSERT_TRUE(MatchShift(flipped.data<float>() + i * sample, orig.data<float>() + i * sample, 2, 5, 7, 0, zero, &dy,
                           &dx, &flip))
        << "sample " << i;
    mirrored += flip;
    if (flip) {  // pixel (c=1, y=2, x=0) comes from x = 6
      EXPECT_EQ(flipped.data<float>()[i * sample + 35 + 14], orig.data<float>()[i * sample + 35 + 14 + 6]);
    }
  }
  EXPECT_GT(mirrored, 16);  // about half of 64
  EXPECT_LT(mirrored, 48);

  BatchIterator crop(ds, 64, false, 3, norm, {2, true});
  Tensor cropped;
  ASSERT_TRUE(*crop.Next(&cropped, &labels));
  EXPECT_EQ(cropped.dims(), orig.dims());
  int shifted = 0;
  for (int64_t i = 0; i < 64; ++i) {
    int dy = 9, dx = 9;
    bool flip = false;
    ASSERT_TRUE(MatchShift(cropped.data<float>() + i * sample, orig.data<float>() + i * sample, 2, 5, 7, 2, zero, &dy,
                           &dx, &flip))
        << "sample " << i;
    shifted += dy != 0 || dx != 0;
  }
  EXPECT_GT(shifted, 40);  // 24 of the 25 offsets move the image
}

// A random window of a larger stored image (images: with --image-resize):
// each batch row is the window at some offset of its sample, mirrored or not,
// and every offset occurs.
TEST(BatchIteratorTest, RandomWindow) {
  Dataset ds = Indexed(200, 2, 6, 7);
  Normalization norm{{0.5f}, {0.25f}};
  auto normalized = [](int64_t i, int64_t c, int64_t y, int64_t x) {
    return (static_cast<float>(static_cast<uint8_t>(i + 3 * c + 5 * y + 7 * x)) / 255.0f - 0.5f) / 0.25f;
  };
  Augmentation aug;
  aug.window_height = 4;
  aug.window_width = 5;
  aug.horizontal_flip = true;
  BatchIterator it(ds, 200, true, 7, norm, aug);
  Tensor images, labels;
  ASSERT_TRUE(*it.Next(&images, &labels));
  ASSERT_EQ(images.dims(), (std::vector<int64_t>{200, 2, 4, 5}));
  std::set<std::pair<int64_t, int64_t>> offsets;
  int mirrored = 0;
  for (int64_t b = 0; b < 200; ++b) {
    const int64_t i = labels.data<int64_t>()[b];
    const float* row = images.data<float>() + b * 40;
    bool found = false;
    for (int64_t top = 0; top <= 2 && !found; ++top)
      for (int64_t left = 0; left <= 2 && !found; ++left)
        for (bool flip : {false, true}) {
          bool all = true;
          for (int64_t c = 0; c < 2 && all; ++c)
            for (int64_t y = 0; y < 4 && all; ++y)
              for (int64_t x = 0; x < 5 && all; ++x)
                all = row[(c * 4 + y) * 5 + x] == normalized(i, c, top + y, left + (flip ? 4 - x : x));
          if (all) {
            found = true;
            offsets.insert({top, left});
            mirrored += flip;
            break;
          }
        }
    EXPECT_TRUE(found) << "batch row " << b << " is no window of sample " << i;
  }
  EXPECT_EQ(offsets.size(), 9u);  // 3 x 3 offsets, all drawn among 200 samples
  EXPECT_GT(mirrored, 60);
  EXPECT_LT(mirrored, 140);

  Tensor again;
  BatchIterator second(ds, 200, true, 7, norm, aug);
  ASSERT_TRUE(*second.Next(&again, &labels));
  EXPECT_TRUE(again == images);  // the same seed, epoch and position: the same windows

  Augmentation too_big = aug;
  too_big.window_height = 7;
  EXPECT_FALSE(BatchIterator(ds, 4, true, 0, {}, too_big).Next(&images, &labels).ok());
  Augmentation with_padding = aug;
  with_padding.random_crop_padding = 2;
  EXPECT_FALSE(BatchIterator(ds, 4, true, 0, {}, with_padding).Next(&images, &labels).ok());
}

// Fitting images to a model input of another size or channel count: each
// sample is what ToChannels and ResizeAndCenterCrop (image.h, checked
// against torchvision in image_folder_test.cc) make of it, then normalized;
// gray to RGB repeats the channel; RGB statistics for a gray fit combine
// with the luma weights; crop augmentation runs at the fitted size.
TEST(BatchIteratorTest, FitImagesToTheModel) {
  const Dataset gray = Indexed(3, 1, 4, 5);
  Augmentation fit;
  fit.fit_channels = 3;
  fit.fit_height = 8;
  fit.fit_width = 8;
  BatchIterator it(gray, 3, /*shuffle=*/false, 0, {{0.5f}, {0.25f}}, fit);
  Batch batch;
  ASSERT_TRUE(*it.Next(&batch));
  const Tensor& x = batch.inputs[0].second;
  ASSERT_EQ(x.dims(), (std::vector<int64_t>{3, 3, 8, 8}));
  for (int64_t i = 0; i < 3; ++i) {
    Image img{4, 5, 1, {}};
    img.pixels.assign(gray.samples.data<uint8_t>() + i * 20, gray.samples.data<uint8_t>() + (i + 1) * 20);
    std::vector<uint8_t> want(3 * 64);
    ResizeAndCenterCrop(ToChannels(img, 3), 8, 8, want.data());
    for (int64_t k = 0; k < 3 * 64; ++k)
      ASSERT_EQ(x.data<float>()[i * 192 + k], (static_cast<float>(want[k]) / 255.0f - 0.5f) / 0.25f) << i << " " << k;
    for (int64_t k = 0; k < 64; ++k) ASSERT_EQ(x.data<float>()[i * 192 + k], x.data<float>()[i * 192 + 128 + k]);
  }
  // RGB to gray, same size: PIL's luma, normalized by the luma-weighted statistics.
  const Dataset rgb = Indexed(2, 3, 4, 4);
  Augmentation to_gray;
  to_gray.fit_channels = 1;
  to_gray.fit_height = 4;
  to_gray.fit_width = 4;
  BatchIterator g(rgb, 2, false, 0, {{0.4f, 0.5f, 0.6f}, {0.2f, 0.3f, 0.4f}}, to_gray);
  ASSERT_TRUE(*g.Next(&batch));
  ASSERT_EQ(batch.inputs[0].second.dims(), (std::vector<int64_t>{2, 1, 4, 4}));
  const float mean = 0.299f * 0.4f + 0.587f * 0.5f + 0.114f * 0.6f, stdev = 0.299f * 0.2f + 0.587f * 0.3f + 0.114f * 0.4f;
  const uint8_t* px = rgb.samples.data<uint8_t>();
  for (int64_t p = 0; p < 16; ++p) {  // sample 0, pixel p: channels at p, 16 + p, 32 + p
    const uint32_t luma = (px[p] * 19595u + px[16 + p] * 38470u + px[32 + p] * 7471u + (1u << 15)) >> 16;
    EXPECT_FLOAT_EQ(batch.inputs[0].second.data<float>()[p], (static_cast<float>(luma) / 255.0f - mean) / stdev) << p;
  }
  // Crop padding at the fitted size; a window and a fit are exclusive; 2 channels cannot convert.
  fit.random_crop_padding = 2;
  BatchIterator crop(gray, 3, false, 0, {}, fit);
  ASSERT_TRUE(*crop.Next(&batch));
  EXPECT_EQ(batch.inputs[0].second.dims(), (std::vector<int64_t>{3, 3, 8, 8}));
  fit.random_crop_padding = 0;
  fit.window_height = fit.window_width = 2;
  EXPECT_FALSE(BatchIterator(gray, 3, false, 0, {}, fit).Next(&batch).ok());
  fit.window_height = fit.window_width = 0;
  EXPECT_FALSE(BatchIterator(Indexed(2, 2, 4, 4), 2, false, 0, {}, fit).Next(&batch).ok());
}

TEST(BatchIteratorTest, ConfigurationErrors) {
  Dataset ds = Indexed(10, 3, 4, 4);
  Tensor images, labels;
  EXPECT_FALSE(BatchIterator(ds, 0, true, 0, {}, {}).Next(&images, &labels).ok());
  EXPECT_FALSE(BatchIterator(ds, 4, true, 0, {{0.1f, 0.2f}, {1.0f, 1.0f}}, {}).Next(&images, &labels).ok());
  EXPECT_FALSE(BatchIterator(ds, 4, true, 0, {{0.1f}, {0.0f}}, {}).Next(&images, &labels).ok());
  EXPECT_FALSE(BatchIterator(ds, 4, true, 0, {}, {-1, false}).Next(&images, &labels).ok());
  Dataset feat;
  feat.sample_dims = {2};
  feat.samples = Tensor::Floats({1, 2, 3, 4}, {2, 2});
  feat.labels = Tensor::Int64s({0, 1}, {2});
  EXPECT_FALSE(BatchIterator(feat, 1, true, 0, {}, {0, true}).Next(&images, &labels).ok());
  BatchIterator it(ds, 4, true, 0, {}, {});
  it.Seek({0, 11});
  auto r = it.Next(&images, &labels);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kOutOfRange);
}

// Fashion-MNIST-sized data, batch 128: assembly with normalization (and with
// crop + flip) must stay far below a millisecond per batch on the dev machine.
TEST(BatchIteratorTest, BatchAssemblySpeed) {
  Dataset ds;
  ds.sample_dims = {1, 28, 28};
  ds.num_classes = 10;
  ds.samples = *Tensor::Zeros(DType::kUInt8, {60000, 1, 28, 28});
  ds.labels = *Tensor::Zeros(DType::kInt64, {60000});
  for (int64_t i = 0; i < ds.samples.num_elements(); ++i) ds.samples.data<uint8_t>()[i] = static_cast<uint8_t>(i * 131);
  for (Augmentation aug : {Augmentation{}, Augmentation{2, true}}) {
    BatchIterator it(ds, 128, true, 0, {{0.2860f}, {0.3530f}}, aug);
    Tensor images, labels;
    const int batches = 100;
    auto start = std::chrono::steady_clock::now();
    for (int b = 0; b < batches; ++b) ASSERT_TRUE(*it.Next(&images, &labels));
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / batches;
    std::cout << "batch of 128 (crop " << aug.random_crop_padding << ", flip " << aug.horizontal_flip << "): " << us
              << " us\n";
    EXPECT_LT(us, 5000.0);  // loose for loaded CI and sanitizer builds
  }
}

}  // namespace
}  // namespace amptrain::executor::data
