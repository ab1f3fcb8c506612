// A label per token or per pixel, trained from the CLI: PyTorch's
// training-mode exports of a GPT-style language model (logits [N, 16, 1000],
// classes last) and of a small segmentation net (logits [N, 5, 16, 16],
// classes first), trained by `amptrain train` on npy labels [N, 16] and
// [N, 16, 16] with ignored positions (PyTorch's -100, and 255 by
// --ignore-index). The loss falls, and `eval` of the export counts labels,
// not samples. Labels that fit neither layout, or both, and labels below 0
// that are not the ignored index, are one error line before any step. The
// gradients themselves are checked against PyTorch in grad_vs_torch_test.cc.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "executor/npy.h"
#include "tests/e2e/cli_fixture.h"
#include "tests/e2e/e2e_util.h"

namespace amptrain {
namespace {

using testing::CliResult;
using testing::FirstAndLastLoss;
using testing::HaveTorch;
using testing::Py;
using testing::PySkip;

namespace fs = std::filesystem;

const std::string kModels = std::string(AMPTRAIN_BINARY_DIR) + "/dense_label_models";

bool ExportOnce() {
  return testing::RunOnceLocked(kModels, Py() + AMPTRAIN_SOURCE_DIR "/models/torch/export_models.py --quiet --out " +
                                             kModels + " --models token_lm,segnet --opsets 17 --modes train >> " +
                                             kModels + ".log 2>&1");
}

constexpr int64_t kSeq = 16, kImage = 16;

class DenseLabelsTest : public testing::CliFixture {
 protected:
  void SetUp() override {
    if (!HaveTorch()) GTEST_SKIP() << PySkip("torch, torchvision");
    CliFixture::SetUp();
    ASSERT_TRUE(ExportOnce()) << "export failed, see " << kModels << ".log";
  }

  // Rows of an arithmetic sequence mod 60 (start and step 1-3 drawn per
  // row); the label of each token is the next one, -100 after the last
  // token: after two tokens the rest is determined.
  void WriteTokens(int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    ir::Tensor ids = *ir::Tensor::Zeros(ir::DType::kInt64, {n, kSeq});
    ir::Tensor next = *ir::Tensor::Zeros(ir::DType::kInt64, {n, kSeq});
    for (int64_t i = 0; i < n; ++i) {
      const int64_t start = rng() % 60, step = 1 + rng() % 3;
      for (int64_t j = 0; j < kSeq; ++j) {
        ids.data<int64_t>()[i * kSeq + j] = (start + step * j) % 60;
        next.data<int64_t>()[i * kSeq + j] = j + 1 < kSeq ? (start + step * (j + 1)) % 60 : -100;
      }
    }
    ASSERT_TRUE(executor::WriteNpy(Path("ids.npy"), ids).ok());
    ASSERT_TRUE(executor::WriteNpy(Path("next.npy"), next).ok());
  }

  // Images of 3 channels; a pixel's class is the channel that is largest
  // there (0-2), 255 (ignored) where the largest two are within 0.1.
  void WritePixels(int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    ir::Tensor x = *ir::Tensor::Zeros(ir::DType::kFloat32, {n, 3, kImage, kImage});
    ir::Tensor y = *ir::Tensor::Zeros(ir::DType::kInt64, {n, kImage, kImage});
    const int64_t plane = kImage * kImage;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t p = 0; p < plane; ++p) {
        float v[3];
        for (int c = 0; c < 3; ++c) x.data<float>()[(i * 3 + c) * plane + p] = v[c] = normal(rng);
        const int best = v[0] >= v[1] && v[0] >= v[2] ? 0 : v[1] >= v[2] ? 1 : 2;
        float second = -1e30f;
        for (int c = 0; c < 3; ++c)
          if (c != best) second = std::max(second, v[c]);
        y.data<int64_t>()[i * plane + p] = v[best] - second < 0.1f ? 255 : best;
      }
    ASSERT_TRUE(executor::WriteNpy(Path("x.npy"), x).ok());
    ASSERT_TRUE(executor::WriteNpy(Path("y.npy"), y).ok());
  }

  std::string Train(const std::string& model, const std::string& data, const std::string& extra) {
    return "train " + kModels + "/" + model + "_train_op17.onnx --data npy:" + data +
           " --batch-size 32 --threads 1 --seed 2 --log-every 10 " + extra;
  }
};

TEST_F(DenseLabelsTest, LanguageModelTrainsOnNextTokenLabels) {
  WriteTokens(512, 5);
  const std::string data = Path("ids.npy") + "," + Path("next.npy");
  CliResult r = Cli(Train("token_lm", data, "--steps 60 --lr 3e-3 --metrics " + Path("m.jsonl") + " --export " +
                                                Path("lm.onnx")));
  ASSERT_EQ(r.code, 0) << r.err;
  auto [first, last] = FirstAndLastLoss(Path("m.jsonl"));
  EXPECT_LT(last, 0.5 * first) << "loss " << first << " -> " << last;
  // The test split's 51 rows hold 15 labels each (the 16th is ignored).
  r = Cli("eval " + Path("lm.onnx") + " --data npy:" + data + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("(51 samples, 765 labels)"), std::string::npos) << r.out;
}

TEST_F(DenseLabelsTest, SegmentationNetTrainsOnPixelLabelsWithAVoidClass) {
  WritePixels(256, 6);
  const std::string data = Path("x.npy") + "," + Path("y.npy");
  CliResult r = Cli(Train("segnet", data, "--steps 40 --lr 1e-2 --ignore-index 255 --amp O2 --dtype bf16 --metrics " +
                                              Path("m.jsonl")));
  ASSERT_EQ(r.code, 0) << r.err;
  auto [first, last] = FirstAndLastLoss(Path("m.jsonl"));
  EXPECT_LT(last, 0.5 * first) << "loss " << first << " -> " << last;
  // Without the flag, 255 is a class the 5-class model does not have.
  ExpectRefused(Train("segnet", data, "--steps 1"), "has 5 classes");
}

TEST_F(DenseLabelsTest, LabelsThatFitNoLayoutAreRefusedBeforeAnyStep) {
  WriteTokens(64, 7);
  const std::string out = " --metrics " + Path("m.jsonl") + " --export " + Path("x.onnx");
  // One label per row for per-token logits.
  ir::Tensor rows = *ir::Tensor::Zeros(ir::DType::kInt64, {64});
  ASSERT_TRUE(executor::WriteNpy(Path("rows.npy"), rows).ok());
  ExpectRefused(Train("token_lm", Path("ids.npy") + "," + Path("rows.npy"), out),
                "neither as [N, C, d...] nor as [N, d..., C]");
  // 15 labels per row for 16 positions.
  ir::Tensor short_rows = *ir::Tensor::Zeros(ir::DType::kInt64, {64, kSeq - 1});
  ASSERT_TRUE(executor::WriteNpy(Path("short.npy"), short_rows).ok());
  ExpectRefused(Train("token_lm", Path("ids.npy") + "," + Path("short.npy"), out), "the labels are [N, 15] per sample");
  // The classes forced on the wrong axis.
  ExpectRefused(Train("token_lm", Path("ids.npy") + "," + Path("next.npy"), out + " --class-axis first"),
                "with the classes on axis 1");
  // A negative label that is not the ignored index.
  ir::Tensor bad = *executor::ReadNpy(Path("next.npy"));
  bad.data<int64_t>()[3] = -1;
  ASSERT_TRUE(executor::WriteNpy(Path("bad.npy"), bad).ok());
  ExpectRefused(Train("token_lm", Path("ids.npy") + "," + Path("bad.npy"), out),
                "labels must be >= 0, or -100 for an ignored position (--ignore-index)");
}

}  // namespace
}  // namespace amptrain
