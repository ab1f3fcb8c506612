// JPEG/PNG decoding and PIL-compatible resizing for the images: data sets.
#include "executor/data/image.h"

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <cmath>

// libjpeg's header needs <cstdio> first.
#include <jpeglib.h>
#include <jerror.h>
#include <png.h>

namespace amptrain::executor::data {

namespace {

// --- JPEG -------------------------------------------------------------------
// libjpeg reports a fatal error by calling error_exit, which must not
// return: it longjmps back into DecodeJpegInto. That function therefore holds
// no C++ object with a destructor, and its output buffer belongs to the caller.

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool ended_early;
};

void JpegErrorExit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings (level -1) and trace messages: silent, except that a stream which
// ends before its last scan is remembered (PIL refuses such a file).
void JpegEmitMessage(j_common_ptr cinfo, int msg_level) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  if (msg_level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) err->ended_early = true;
}

struct JpegOut {
  unsigned char* pixels = nullptr;  // malloc'ed; freed by the caller
  int64_t height = 0, width = 0, channels = 0;
  int64_t file_height = 0, file_width = 0;
  bool too_large = false;
  bool unsupported_color = false;
};

// False on a libjpeg error (its message in err->message) or when `out` says why.
bool DecodeJpegInto(const unsigned char* data, unsigned long size, int64_t min_h, int64_t min_w, int64_t max_pixels,
                    JpegOut* out, JpegError* err) {
  jpeg_decompress_struct cinfo;
  cinfo.err = jpeg_std_error(&err->mgr);
  err->mgr.error_exit = JpegErrorExit;
  err->mgr.emit_message = JpegEmitMessage;
  err->ended_early = false;
  err->message[0] = '\0';
  if (setjmp(err->jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, size);
  jpeg_read_header(&cinfo, TRUE);
  out->file_height = cinfo.image_height;
  out->file_width = cinfo.image_width;
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    out->unsupported_color = true;
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  cinfo.out_color_space = cinfo.num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  // The largest reduction (1/8, 1/4, 1/2) that keeps twice the wanted size,
  // chosen as PIL's draft() chooses it.
  cinfo.scale_num = 1;
  cinfo.scale_denom = 1;
  if (min_h > 0 && min_w > 0) {
    for (unsigned denom : {8u, 4u, 2u}) {
      if (static_cast<int64_t>(cinfo.image_height) >= 2 * min_h * denom &&
          static_cast<int64_t>(cinfo.image_width) >= 2 * min_w * denom) {
        cinfo.scale_denom = denom;
        break;
      }
    }
  }
  jpeg_calc_output_dimensions(&cinfo);
  out->height = cinfo.output_height;
  out->width = cinfo.output_width;
  out->channels = cinfo.output_components;
  if (out->height * out->width > max_pixels) {
    out->too_large = true;
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_start_decompress(&cinfo);
  const size_t row_bytes = static_cast<size_t>(out->width * out->channels);
  out->pixels = static_cast<unsigned char*>(std::malloc(row_bytes * static_cast<size_t>(out->height)));
  if (out->pixels == nullptr) {
    out->too_large = true;
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out->pixels + row_bytes * cinfo.output_scanline;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

StatusOr<Image> DecodeJpeg(std::string_view bytes, const std::string& name, int64_t min_h, int64_t min_w,
                           int64_t max_pixels) {
  JpegOut out;
  JpegError err;
  const bool ok = DecodeJpegInto(reinterpret_cast<const unsigned char*>(bytes.data()),
                                 static_cast<unsigned long>(bytes.size()), min_h, min_w, max_pixels, &out, &err);
  Image image;
  if (ok && !err.ended_early) {
    image.height = out.height;
    image.width = out.width;
    image.channels = out.channels;
    image.pixels.assign(out.pixels, out.pixels + out.height * out.width * out.channels);
  }
  std::free(out.pixels);
  if (out.unsupported_color)
    return Unimplemented("image '", name, "': a CMYK/YCCK JPEG (only gray and RGB JPEGs are read)");
  if (out.too_large)
    return InvalidArgument("image '", name, "': ", out.file_width, "x", out.file_height,
                           " pixels is more than the ", max_pixels, " that one image may decode to");
  if (!ok) return InvalidArgument("image '", name, "': not a readable JPEG (", err.message, ")");
  if (err.ended_early) return InvalidArgument("image '", name, "': the JPEG data ends early (a truncated file)");
  return image;
}

// --- PNG --------------------------------------------------------------------

StatusOr<Image> DecodePng(std::string_view bytes, const std::string& name, int64_t max_pixels) {
  png_image png;
  std::memset(&png, 0, sizeof png);
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&png, bytes.data(), bytes.size()))
    return InvalidArgument("image '", name, "': not a readable PNG (", png.message, ")");
  const bool color = (png.format & PNG_FORMAT_FLAG_COLOR) != 0;
  if (static_cast<int64_t>(png.width) * png.height > max_pixels) {
    png_image_free(&png);
    return InvalidArgument("image '", name, "': ", png.width, "x", png.height, " pixels is more than the ",
                           max_pixels, " that one image may decode to");
  }
  // Read with alpha (never composited onto a background), then drop it.
  png.format = color ? PNG_FORMAT_RGBA : PNG_FORMAT_GA;
  const int64_t read_channels = color ? 4 : 2;
  std::vector<uint8_t> buffer(static_cast<size_t>(png.width) * png.height * read_channels);
  if (!png_image_finish_read(&png, nullptr, buffer.data(), 0, nullptr))
    return InvalidArgument("image '", name, "': not a readable PNG (", png.message, ")");
  Image image;
  image.height = png.height;
  image.width = png.width;
  image.channels = color ? 3 : 1;
  const int64_t n = image.height * image.width;
  image.pixels.resize(static_cast<size_t>(n * image.channels));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < image.channels; ++c) image.pixels[i * image.channels + c] = buffer[i * read_channels + c];
  return image;
}

// --- Resizing ---------------------------------------------------------------

// PIL's fixed point for resampling weights: 32 bits less 8 for the pixel and 2 of headroom.
constexpr int kPrecisionBits = 22;

// The weights of one output index along one axis: taps [first, first + weights.size()).
struct Taps {
  int64_t first = 0;
  std::vector<int32_t> weights;
};

// Antialiased bilinear weights of output indices [begin, end) of an axis that
// scales in_size to out_size; the triangle's support widens with the reduction.
std::vector<Taps> AxisTaps(int64_t in_size, int64_t out_size, int64_t begin, int64_t end) {
  const double scale = static_cast<double>(in_size) / static_cast<double>(out_size);
  const double filterscale = std::max(scale, 1.0);
  const double support = 1.0 * filterscale;
  std::vector<Taps> taps;
  taps.reserve(static_cast<size_t>(end - begin));
  std::vector<double> w;
  for (int64_t xx = begin; xx < end; ++xx) {
    const double center = (static_cast<double>(xx) + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    const int64_t xmin = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), 0);
    const int64_t xmax = std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), in_size) - xmin;
    w.assign(static_cast<size_t>(std::max<int64_t>(xmax, 0)), 0.0);
    double total = 0.0;
    for (int64_t x = 0; x < xmax; ++x) {
      const double t = std::fabs((static_cast<double>(x + xmin) - center + 0.5) * ss);
      w[static_cast<size_t>(x)] = t < 1.0 ? 1.0 - t : 0.0;
      total += w[static_cast<size_t>(x)];
    }
    Taps t;
    t.first = xmin;
    t.weights.resize(w.size());
    for (size_t x = 0; x < w.size(); ++x) {
      const double k = (total != 0.0 ? w[x] / total : 0.0) * static_cast<double>(1 << kPrecisionBits);
      t.weights[x] = static_cast<int32_t>(k < 0 ? k - 0.5 : k + 0.5);
    }
    taps.push_back(std::move(t));
  }
  return taps;
}

// Sums of 8-bit values times weights that add up to about 2^22 stay below
// 2^31 (255 * 2^22 ~ 1.07e9), as in PIL's own 32-bit accumulators.
uint8_t Clip8(int32_t acc) {
  const int32_t v = acc >> kPrecisionBits;
  return static_cast<uint8_t>(std::clamp<int32_t>(v, 0, 255));
}

// Python's round(d / 2) for a non-negative integer d: halves go to the even neighbour.
int64_t HalfRoundedEven(int64_t d) {
  const int64_t q = d / 2;
  if (d % 2 == 0) return q;
  return q % 2 == 0 ? q : q + 1;
}

}  // namespace

StatusOr<Image> DecodeImage(std::string_view bytes, const std::string& name, int64_t min_height, int64_t min_width,
                            int64_t max_pixels) {
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF)
    return DecodeJpeg(bytes, name, min_height, min_width, max_pixels);
  if (bytes.size() >= 8 && std::memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0) return DecodePng(bytes, name, max_pixels);
  return InvalidArgument("image '", name, "': neither a JPEG nor a PNG (judged by its first bytes, not its name)");
}

Image ToChannels(const Image& image, int64_t channels) {
  if (image.channels == channels) return image;
  Image out;
  out.height = image.height;
  out.width = image.width;
  out.channels = channels;
  const int64_t n = image.height * image.width;
  out.pixels.resize(static_cast<size_t>(n * channels));
  const uint8_t* in = image.pixels.data();
  if (channels == 3) {  // gray -> RGB
    for (int64_t i = 0; i < n; ++i) out.pixels[3 * i] = out.pixels[3 * i + 1] = out.pixels[3 * i + 2] = in[i];
  } else {  // RGB -> gray
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t l = in[3 * i] * 19595u + in[3 * i + 1] * 38470u + in[3 * i + 2] * 7471u + 0x8000u;
      out.pixels[i] = static_cast<uint8_t>(l >> 16);
    }
  }
  return out;
}

void ResizeAndCenterCrop(const Image& image, int64_t out_height, int64_t out_width, uint8_t* out, int64_t resize) {
  const int64_t h = image.height, w = image.width, c = image.channels;
  int64_t rh, rw;
  if (resize > 0) {
    // torchvision's Resize(resize): the shorter side becomes `resize`, the
    // longer one int(resize * long / short); the caller keeps resize >= the crop.
    if (w <= h) {
      rw = resize;
      rh = static_cast<int64_t>(static_cast<double>(resize) * h / w);
    } else {
      rh = resize;
      rw = static_cast<int64_t>(static_cast<double>(resize) * w / h);
    }
  } else if (static_cast<double>(out_height) / h >= static_cast<double>(out_width) / w) {
    // The binding axis becomes the target, the other keeps the aspect ratio
    // (truncated, as torchvision's int()) and covers its target.
    rh = out_height;
    rw = std::max<int64_t>(out_width, static_cast<int64_t>(static_cast<double>(out_height) * w / h));
  } else {
    rw = out_width;
    rh = std::max<int64_t>(out_height, static_cast<int64_t>(static_cast<double>(out_width) * h / w));
  }
  const int64_t top = HalfRoundedEven(rh - out_height), left = HalfRoundedEven(rw - out_width);
  const std::vector<Taps> cols = AxisTaps(w, rw, left, left + out_width);
  const std::vector<Taps> rows = AxisTaps(h, rh, top, top + out_height);
  // The input rows the vertical pass reads.
  int64_t row_lo = h, row_hi = 0;
  for (const Taps& t : rows) {
    row_lo = std::min(row_lo, t.first);
    row_hi = std::max(row_hi, t.first + static_cast<int64_t>(t.weights.size()));
  }
  row_hi = std::max(row_hi, row_lo);
  // Horizontal pass (skipped, as in PIL, when the width does not change)
  // into an 8-bit intermediate: rows [row_lo, row_hi) x out_width x c.
  const bool horizontal = rw != w;
  const int64_t mid_w = horizontal ? out_width : w;
  std::vector<uint8_t> mid(static_cast<size_t>((row_hi - row_lo) * mid_w * c));
  for (int64_t y = row_lo; y < row_hi; ++y) {
    const uint8_t* src = image.pixels.data() + y * w * c;
    uint8_t* dst = mid.data() + (y - row_lo) * mid_w * c;
    if (!horizontal) {
      std::memcpy(dst, src, static_cast<size_t>(w * c));
      continue;
    }
    for (int64_t x = 0; x < out_width; ++x) {
      const Taps& t = cols[static_cast<size_t>(x)];
      int32_t sum[3] = {1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1)};
      const uint8_t* tap = src + t.first * c;
      for (size_t k = 0; k < t.weights.size(); ++k, tap += c)
        for (int64_t ch = 0; ch < c; ++ch) sum[ch] += tap[ch] * t.weights[k];
      for (int64_t ch = 0; ch < c; ++ch) dst[x * c + ch] = Clip8(sum[ch]);
    }
  }
  // Vertical pass, a whole output row at a time (the taps outside, the
  // contiguous row inside), written CHW; the window's left edge is already
  // applied unless the horizontal pass was skipped.
  const int64_t x0 = horizontal ? 0 : left;
  const bool vertical = rh != h;
  const int64_t row_values = out_width * c;
  std::vector<int32_t> acc(static_cast<size_t>(row_values));
  std::vector<uint8_t> rounded(static_cast<size_t>(row_values));
  for (int64_t y = 0; y < out_height; ++y) {
    const uint8_t* row;
    if (!vertical) {
      row = mid.data() + ((y + top - row_lo) * mid_w + x0) * c;
    } else {
      const Taps& t = rows[static_cast<size_t>(y)];
      std::fill(acc.begin(), acc.end(), int32_t{1} << (kPrecisionBits - 1));
      for (size_t k = 0; k < t.weights.size(); ++k) {
        const uint8_t* in = mid.data() + ((t.first + static_cast<int64_t>(k) - row_lo) * mid_w + x0) * c;
        const int32_t wk = t.weights[k];
        for (int64_t i = 0; i < row_values; ++i) acc[static_cast<size_t>(i)] += in[i] * wk;
      }
      for (int64_t i = 0; i < row_values; ++i) rounded[static_cast<size_t>(i)] = Clip8(acc[static_cast<size_t>(i)]);
      row = rounded.data();
    }
    for (int64_t x = 0; x < out_width; ++x)
      for (int64_t ch = 0; ch < c; ++ch) out[(ch * out_height + y) * out_width + x] = row[x * c + ch];
  }
}

}  // namespace amptrain::executor::data
