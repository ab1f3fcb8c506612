// Image folders (images: data sets): decoding and resizing against torchvision
// (ImageFolder + Resize + CenterCrop on PIL, the oracle script beside this
// file), the folder layouts and splits, and every bad input by name.
#include <gtest/gtest.h>
#include <jpeglib.h>
#include <png.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "executor/data/dataset.h"
#include "executor/data/image.h"
#include "executor/npy.h"
#include "tests/common/python_env.h"
#include "tests/common/scratch_dir.h"

namespace amptrain::executor::data {
namespace {

namespace fs = std::filesystem;
using ir::Tensor;
using ::amptrain::testing::Py;
using ::amptrain::testing::PyHas;
using ::amptrain::testing::PySkip;

// A w x h picture with `channels` channels (1 or 3): gradients and an edge.
std::vector<uint8_t> Picture(int h, int w, int channels, int seed) {
  std::vector<uint8_t> p(static_cast<size_t>(h * w * channels));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < channels; ++c)
        p[(y * w + x) * channels + c] = static_cast<uint8_t>((x * 7 + y * 3 + c * 50 + seed * 31 + (x > w / 2) * 90) % 256);
  return p;
}

void WritePng(const std::string& path, int h, int w, int channels, int seed) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(w);
  png.height = static_cast<png_uint_32>(h);
  png.format = channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  const std::vector<uint8_t> p = Picture(h, w, channels, seed);
  ASSERT_TRUE(png_image_write_to_file(&png, path.c_str(), 0, p.data(), 0, nullptr)) << png.message;
}

std::string JpegBytes(int h, int w, int seed) {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr err;
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(w);
  cinfo.image_height = static_cast<JDIMENSION>(h);
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 90, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  std::vector<uint8_t> p = Picture(h, w, 3, seed);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = p.data() + static_cast<size_t>(cinfo.next_scanline) * w * 3;
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::string bytes(reinterpret_cast<char*>(buffer), size);
  std::free(buffer);
  return bytes;
}

class ImageFolderTest : public ::amptrain::testing::ScratchDirTest {
 protected:
  ImageFolderTest() : ScratchDirTest("images") {}
  void Png(const std::string& rel, int h = 12, int w = 10, int channels = 3, int seed = 0) {
    fs::create_directories(fs::path(Path(rel)).parent_path());
    WritePng(Path(rel), h, w, channels, seed);
  }
  void Raw(const std::string& rel, const std::string& bytes) { WriteFile(rel, bytes); }
  StatusOr<Dataset> Load(const std::string& split, int size = 8, int channels = 3, const std::string& sub = "",
                         int resize = 0) {
    DataSpec spec;
    spec.kind = "images";
    spec.path = sub.empty() ? dir_.string() : Path(sub);
    spec.params = {{"height", std::to_string(size)}, {"width", std::to_string(size)},
                   {"channels", std::to_string(channels)}};
    if (resize) spec.params["resize"] = std::to_string(resize);
    return LoadDataset(spec, split);
  }
};

void ExpectError(const StatusOr<Dataset>& r, const std::string& needle) {
  ASSERT_FALSE(r.ok()) << "expected an error containing '" << needle << "'";
  EXPECT_NE(r.status().ToString().find(needle), std::string::npos) << r.status().ToString();
}

// Every pixel as torchvision makes it, in ImageFolder's order, for RGB and gray models.
TEST_F(ImageFolderTest, MatchesTorchvisionResizeAndCenterCrop) {
  if (!PyHas("torchvision, PIL")) GTEST_SKIP() << PySkip("torchvision, PIL");
  for (int channels : {3, 1}) {
    // (crop, resize first): Resize(32) + CenterCrop(32), Resize(24) + CenterCrop(24), Resize(28) + CenterCrop(24).
    for (auto [size, resize] : {std::pair{32, 0}, std::pair{24, 0}, std::pair{24, 28}}) {
      fs::remove_all(dir_);
      fs::create_directories(dir_);
      const std::string cmd = Py() + "'" AMPTRAIN_SOURCE_DIR "/tests/executor/image_folder_oracle.py' '" +
                              dir_.string() + "' " + std::to_string(size) + " " + std::to_string(channels) +
                              (resize ? " " + std::to_string(resize) : "");
      ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
      for (const char* split : {"train", "test"}) {
        SCOPED_TRACE(std::string(split) + " size " + std::to_string(size) + " resize " + std::to_string(resize) +
                     " channels " + std::to_string(channels));
        StatusOr<Dataset> ds = Load(split, size, channels, "", resize);
        ASSERT_TRUE(ds.ok()) << ds.status().ToString();
        const std::string name = std::string(split) == "train" ? "train" : "val";
        auto expected = ReadNpy(Path("expected_" + name + ".npy"));
        auto labels = ReadNpy(Path("labels_" + name + ".npy"));
        ASSERT_TRUE(expected.ok() && labels.ok());
        EXPECT_EQ(ds->num_classes, 3);
        ASSERT_EQ(ds->samples.dims(), expected->dims());
        EXPECT_TRUE(ds->labels == *labels);
        const uint8_t* got = ds->samples.data<uint8_t>();
        const uint8_t* want = expected->data<uint8_t>();
        int64_t differ = 0;
        for (int64_t i = 0; i < expected->num_elements(); ++i) differ += got[i] != want[i];
        EXPECT_EQ(differ, 0) << "of " << expected->num_elements() << " values";
      }
    }
  }
}

TEST_F(ImageFolderTest, ClassFoldersAloneSplitNinetyTen) {
  for (int i = 0; i < 12; ++i) Png("a/" + std::to_string(i) + ".png", 9, 9, 3, i);
  for (int i = 0; i < 8; ++i) Png("b/x/" + std::to_string(i) + ".png", 9, 9, 1, i);
  auto train = Load("train"), test = Load("test");
  ASSERT_TRUE(train.ok() && test.ok()) << train.status().ToString() << test.status().ToString();
  EXPECT_EQ(train->size(), 18);
  EXPECT_EQ(test->size(), 2);
  EXPECT_EQ(train->num_classes, 2);
  EXPECT_EQ(train->sample_dims, (std::vector<int64_t>{3, 8, 8}));
  int64_t b = 0;
  for (int64_t i = 0; i < train->size(); ++i) b += train->labels.data<int64_t>()[i];
  for (int64_t i = 0; i < test->size(); ++i) b += test->labels.data<int64_t>()[i];
  EXPECT_EQ(b, 8);  // class "b" is index 1: all 8 of its images, across the two parts
}

TEST_F(ImageFolderTest, TrainAndTestFoldersAndClassesByName) {
  Png("train/cat/1.png");
  Png("train/dog/1.png");
  Png("train/emu/1.png");
  Png("test/emu/1.png");  // test/ when there is no val/
  auto test = Load("test");
  ASSERT_TRUE(test.ok()) << test.status().ToString();
  EXPECT_EQ(test->size(), 1);
  EXPECT_EQ(test->labels.data<int64_t>()[0], 2);  // emu is the training folder's third class
  EXPECT_EQ(test->num_classes, 3);
  Png("test/fox/1.png");
  ExpectError(Load("test"), "test/fox' is a class that the training folder does not have");
}

TEST_F(ImageFolderTest, OtherFilesAreIgnoredAndHiddenOnesSkipped) {
  Png("a/1.png");
  Png("a/2.PNG");
  Raw("a/notes.txt", "hello");
  Raw("a/.DS_Store", "x");
  Raw("README", "x");
  Png("b/1.png");
  Raw("b/.hidden.png", "not an image");
  auto train = Load("train");
  ASSERT_TRUE(train.ok()) << train.status().ToString();
  EXPECT_EQ(train->size() + Load("test")->size(), 3);
}

TEST_F(ImageFolderTest, BadInputsAreNamed) {
  ExpectError(Load("train", 8, 3, "missing"), "does not exist");
  Raw("file", "x");
  ExpectError(Load("train", 8, 3, "file"), "is not a folder");
  fs::create_directories(Path("empty"));
  ExpectError(Load("train", 8, 3, "empty"), "has no class folders");

  Png("one/a/1.png");
  fs::create_directories(Path("one/b"));
  ExpectError(Load("train", 8, 3, "one"), "class folder '" + Path("one/b") + "' holds no .jpg");

  Png("corrupt/a/1.png");
  Raw("corrupt/a/2.jpg", "this is text");
  ExpectError(Load("train", 8, 3, "corrupt"), "2.jpg': neither a JPEG nor a PNG");

  const std::string jpeg = JpegBytes(200, 300, 1);
  Raw("cut/a/1.jpg", jpeg.substr(0, jpeg.size() / 2));  // inside the scan
  ExpectError(Load("train", 8, 3, "cut"), "1.jpg': the JPEG data ends early");
  Raw("badpng/a/1.png", std::string("\x89PNG\r\n\x1a\n", 8) + "garbage");
  ExpectError(Load("train", 8, 3, "badpng"), "1.png': not a readable PNG");

  Png("fifo/a/1.png");
  ASSERT_EQ(::mkfifo(Path("fifo/a/2.jpg").c_str(), 0600), 0);
  ExpectError(Load("train", 8, 3, "fifo"), "2.jpg' is a FIFO");

  Png("link/a/1.png");
  fs::create_symlink(Path("link/a/nothing.png"), Path("link/a/2.png"));
  ExpectError(Load("train", 8, 3, "link"), "is a link to nothing");

  ExpectError(Load("train", 8, 4, "one"), "1 (gray) or 3 (RGB)");
  ExpectError(Load("train", 8, 3, "one", 7), "a resize to 7 is smaller than the 8x8 crop");
}

TEST_F(ImageFolderTest, LinkedFoldersAreWalkedOnce) {
  Png("a/1.png");
  Png("a/sub/2.png");
  fs::create_directory_symlink(Path("a"), Path("a/sub/loop"));  // a cycle
  Png("b/1.png");
  auto train = Load("train"), test = Load("test");
  ASSERT_TRUE(train.ok()) << train.status().ToString();
  EXPECT_EQ(train->size() + test->size(), 3);
}

TEST(ImageDecode, JpegAtReducedScaleAndPngChannels) {
  const std::string jpeg = JpegBytes(200, 300, 2);
  auto full = DecodeImage(jpeg, "full.jpg");
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  EXPECT_EQ(full->height, 200);
  EXPECT_EQ(full->width, 300);
  EXPECT_EQ(full->channels, 3);
  auto quarter = DecodeImage(jpeg, "q.jpg", 25, 25);  // 200 >= 2 * 25 * 4, not * 8
  ASSERT_TRUE(quarter.ok());
  EXPECT_EQ(quarter->height, 50);
  EXPECT_EQ(quarter->width, 75);
  Image gray = ToChannels(*full, 1);
  ASSERT_EQ(gray.channels, 1);
  const uint8_t* p = full->pixels.data();
  EXPECT_EQ(gray.pixels[0], (p[0] * 19595u + p[1] * 38470u + p[2] * 7471u + 0x8000u) >> 16);
  Image back = ToChannels(gray, 3);
  EXPECT_EQ(back.pixels[0], gray.pixels[0]);
  EXPECT_EQ(back.pixels[2], gray.pixels[0]);
}

TEST(ImageDecode, OversizedHeadersAreRefusedBeforeDecoding) {
  // A PNG header claiming 60000 x 60000 pixels (3.6e9 > kMaxImagePixels).
  std::string png("\x89PNG\r\n\x1a\n", 8);
  const unsigned char ihdr[] = {0, 0, 0, 13, 'I', 'H', 'D', 'R', 0, 0, 0xEA, 0x60, 0, 0, 0xEA, 0x60, 8, 2, 0, 0, 0};
  png.append(reinterpret_cast<const char*>(ihdr), sizeof ihdr);
  auto chunk_end = [&png](const unsigned char* type_and_data, unsigned n) {
    const auto crc = static_cast<uint32_t>(crc32(0, type_and_data, n));
    for (int s = 24; s >= 0; s -= 8) png.push_back(static_cast<char>((crc >> s) & 0xFF));
  };
  chunk_end(ihdr + 4, 17);
  const unsigned char idat[] = {0, 0, 0, 0, 'I', 'D', 'A', 'T'};  // libpng's header read stops at the first IDAT
  png.append(reinterpret_cast<const char*>(idat), sizeof idat);
  chunk_end(idat + 4, 4);
  auto r = DecodeImage(png, "huge.png");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().ToString().find("60000x60000 pixels is more than"), std::string::npos) << r.status().ToString();
}

TEST(ImageDecode, ResizeKeepsAnExactSizeImageUnchanged) {
  Image im;
  im.height = 5;
  im.width = 7;
  im.channels = 1;
  im.pixels = Picture(5, 7, 1, 3);
  std::vector<uint8_t> out(5 * 5);
  ResizeAndCenterCrop(im, 5, 5, out.data());  // no resampling: the centre 5 columns (offset round(2 / 2) = 1)
  for (int y = 0; y < 5; ++y)
    for (int x = 0; x < 5; ++x) EXPECT_EQ(out[y * 5 + x], im.pixels[y * 7 + x + 1]);
}

}  // namespace
}  // namespace amptrain::executor::data
