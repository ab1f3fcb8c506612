// libFuzzer target: JPEG and PNG files of an image folder (executor/data/image.h).
//
// Every input must give an image or a Status. An image that decodes must
// have the dimensions it claims, convert to 1 and 3 channels, and resize to
// a few target sizes (smaller, larger, another aspect ratio) without reading
// or writing outside its buffers (ASan watches).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "executor/data/image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace amptrain::executor::data;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // The first byte varies the DCT-scaling hint; the decoder still sees every byte.
  const int64_t hint = size > 0 ? data[0] % 8 : 0;
  // 2^22 pixels at most: the full cap (2^27) with ASan's overhead passes libFuzzer's 2 GiB limit.
  amptrain::StatusOr<Image> image = DecodeImage(bytes, "fuzz", hint, hint, int64_t{1} << 22);
  if (!image.ok()) return 0;
  const Image& im = *image;
  if (im.height < 1 || im.width < 1 || (im.channels != 1 && im.channels != 3) ||
      im.pixels.size() != static_cast<size_t>(im.height * im.width * im.channels)) {
    std::fprintf(stderr, "fuzz_image: inconsistent image %lldx%lldx%lld with %zu bytes\n",
                 static_cast<long long>(im.height), static_cast<long long>(im.width),
                 static_cast<long long>(im.channels), im.pixels.size());
    std::abort();
  }
  if (im.height * im.width > (int64_t{1} << 20)) return 0;  // resizing big images only slows the search
  for (int64_t channels : {int64_t{1}, int64_t{3}}) {
    const Image converted = ToChannels(im, channels);
    const int64_t sizes[][2] = {{1, 1}, {7, 5}, {im.height * 2 + 1, im.width + 3}};
    for (const auto& s : sizes) {
      std::vector<uint8_t> out(static_cast<size_t>(channels * s[0] * s[1]));
      ResizeAndCenterCrop(converted, s[0], s[1], out.data());
    }
  }
  return 0;
}
