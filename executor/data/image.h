// Image files for the `images:` data sets: JPEG (libjpeg-turbo) and PNG
// (libpng) decoding, channel conversion, and torchvision's eval resize
// (Resize to cover the target, then CenterCrop) with antialiased bilinear
// weights, as PIL computes them.
//
// Decoding never trusts the file: the format comes from its magic bytes, not
// its name; a truncated or corrupt stream, an unsupported color space and an
// image of more than kMaxImagePixels decoded pixels are errors naming the
// file. Benign JPEG warnings (extraneous bytes before a marker, which many
// cameras write) are ignored, as PIL ignores them; a JPEG stream that ends
// early is an error, as it is in PIL.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/status.h"

namespace amptrain::executor::data {

// Decoded pixels past this count (after any JPEG DCT scaling) are refused:
// 2^27 pixels, 384 MiB as RGB. PIL refuses past 2 x 89.5 M.
inline constexpr int64_t kMaxImagePixels = int64_t{1} << 27;

// 8-bit pixels, row-major, channels interleaved (HWC); channels 1 (gray) or 3 (RGB).
struct Image {
  int64_t height = 0, width = 0, channels = 0;
  std::vector<uint8_t> pixels;
};

// Decodes a JPEG or PNG held in `bytes`; `name` (the file) is named in errors.
// Alpha is dropped (PIL's convert("RGB") does the same), palettes and 16-bit
// samples become 8-bit gray or RGB. `min_height`/`min_width` > 0 let a large
// JPEG decode at 1/2, 1/4 or 1/8 of its size through libjpeg's scaled IDCT,
// only while the result stays at least twice those sizes, so that the
// resize after it still sees more pixels than it keeps.
// `max_pixels`: the cap on decoded pixels (the fuzz target lowers it to stay
// within its memory limit).
StatusOr<Image> DecodeImage(std::string_view bytes, const std::string& name, int64_t min_height = 0,
                            int64_t min_width = 0, int64_t max_pixels = kMaxImagePixels);

// The same image with `channels` channels (1 or 3): gray to RGB repeats the
// value, RGB to gray is ITU-R 601-2 luma in PIL's fixed point
// (R*19595 + G*38470 + B*7471 + 2^15) >> 16.
Image ToChannels(const Image& image, int64_t channels);

// torchvision's Resize + CenterCrop to out_height x out_width on a PIL image:
// scaled by the smallest factor whose result covers the target (for a square
// target: the shorter side becomes the target, the longer one
// int(target * long / short)), then the centered window (offsets rounded half
// to even, as Python's round). Resampling is bilinear with PIL's antialiasing
// (the triangle widened by the reduction factor), horizontal pass first with an
// 8-bit intermediate, each value rounded half up and clamped. Writes
// image.channels x out_height x out_width bytes (CHW) to `out`.
// `resize` > 0 (at least out_height and out_width): the image is first
// resized as torchvision's Resize(resize) does (its shorter side becomes
// `resize`), then cropped: the ImageNet evaluation's Resize(256) +
// CenterCrop(224).
void ResizeAndCenterCrop(const Image& image, int64_t out_height, int64_t out_width, uint8_t* out,
                         int64_t resize = 0);

}  // namespace amptrain::executor::data
