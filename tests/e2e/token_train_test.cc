// Token-id models trained from the CLI (issue 10, item 4): PyTorch's
// training-mode exports of a small transformer classifier (int64 token ids
// -> Embedding -> 2 TransformerEncoderLayers -> mean pool -> Linear) and of
// the same with a second input, a float mask weighting the pool, trained by
// `amptrain train` on npy files named by model input. The loss falls; data
// that does not fit the model's inputs, or an output that is not there, is
// one error line before any step, with no file written. A sequence-major GRU
// (ids [16, batch], batch_first=False) trains on the same [N, 16] rows with
// --batch-axis 1, or without it where the export's dynamic dims say so, and
// its trained export keeps the [16, batch] input.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "executor/npy.h"
#include "importer/onnx_import.h"
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

const std::string kModels = std::string(AMPTRAIN_BINARY_DIR) + "/token_models";

bool ExportOnce() {
  return testing::RunOnceLocked(kModels, Py() + AMPTRAIN_SOURCE_DIR "/models/torch/export_models.py --quiet --out " +
                                             kModels + " --models transformer,masked_transformer,gru_seq_major --opsets 17 "
                                             "--modes train >> " + kModels + ".log 2>&1");
}

constexpr int64_t kSeq = 16, kVocab = 1000, kClasses = 4;

class TokenTrainTest : public testing::CliFixture {
 protected:
  void SetUp() override {
    if (!HaveTorch()) GTEST_SKIP() << PySkip("torch, torchvision");
    CliFixture::SetUp();
    ASSERT_TRUE(ExportOnce()) << "export failed, see " << kModels << ".log";
    WriteData(384, 11);
  }

  // Class c draws the kept tokens of a row from [250 c, 250 c + 250); the
  // first L positions (L in [4, 16]) are kept (mask 1), the rest are noise
  // from the whole vocabulary (mask 0).
  void WriteData(int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    ir::Tensor ids = *ir::Tensor::Zeros(ir::DType::kInt64, {n, kSeq});
    ir::Tensor mask = *ir::Tensor::Zeros(ir::DType::kFloat32, {n, kSeq});
    ir::Tensor labels = *ir::Tensor::Zeros(ir::DType::kInt64, {n});
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = rng() % kClasses, kept = 4 + rng() % (kSeq - 3);
      labels.data<int64_t>()[i] = c;
      for (int64_t j = 0; j < kSeq; ++j) {
        const bool keep = j < kept;
        ids.data<int64_t>()[i * kSeq + j] = keep ? 250 * c + rng() % 250 : rng() % kVocab;
        mask.data<float>()[i * kSeq + j] = keep ? 1.0f : 0.0f;
      }
    }
    ASSERT_TRUE(executor::WriteNpy(Path("ids.npy"), ids).ok());
    ASSERT_TRUE(executor::WriteNpy(Path("mask.npy"), mask).ok());
    ASSERT_TRUE(executor::WriteNpy(Path("labels.npy"), labels).ok());
  }

  std::string Train(const std::string& model, const std::string& data, const std::string& extra) {
    return "train " + kModels + "/" + model + ".onnx --data npy:" + data +
           " --batch-size 32 --threads 1 --seed 2 --log-every 5 --lr 3e-3 " + extra;
  }
  std::string Ids() const { return "input_0=" + Path("ids.npy"); }
  std::string Mask() const { return "input_1=" + Path("mask.npy"); }
  std::string Labels() const { return "labels=" + Path("labels.npy"); }
};

TEST_F(TokenTrainTest, TransformerOnTokenIdsTrainsAndItsLossFalls) {
  CliResult r = Cli(Train("transformer_train_op17", Ids() + "," + Labels(),
                          "--steps 40 --metrics " + Path("m.jsonl") + " --export " + Path("trained.onnx")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("0 other initializers not trained"), std::string::npos) << r.out;
  auto [first, last] = FirstAndLastLoss(Path("m.jsonl"));
  EXPECT_LT(last, 0.35 * first) << "loss " << first << " -> " << last;
  ASSERT_TRUE(fs::exists(Path("trained.onnx")));
  r = Cli("eval " + Path("trained.onnx") + " --data npy:" + Ids() + "," + Labels() + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("accuracy"), std::string::npos) << r.out;
}

TEST_F(TokenTrainTest, TwoInputsOfTwoDTypesTrainByName) {
  CliResult r = Cli(Train("masked_transformer_train_op17", Mask() + "," + Ids() + "," + Labels(),
                          "--steps 40 --metrics " + Path("m.jsonl")));
  ASSERT_EQ(r.code, 0) << r.err;
  auto [first, last] = FirstAndLastLoss(Path("m.jsonl"));
  EXPECT_LT(last, 0.35 * first) << "loss " << first << " -> " << last;
}

TEST_F(TokenTrainTest, SequenceMajorGruTrainsThroughItsBatchAxis) {
  const std::string model = "gru_seq_major_train_op17";
  CliResult r = Cli(Train(model, Ids() + "," + Labels(),
                          "--steps 60 --batch-axis 1 --metrics " + Path("m.jsonl") + " --export " + Path("trained.onnx")));
  ASSERT_EQ(r.code, 0) << r.err;
  auto [first, last] = FirstAndLastLoss(Path("m.jsonl"));
  EXPECT_LT(last, 0.5 * first) << "loss " << first << " -> " << last;
  auto trained = importer::ImportModelFile(Path("trained.onnx"));
  ASSERT_TRUE(trained.ok()) << trained.status().ToString();
  const ir::TensorType& in = (*trained)->type((*trained)->inputs()[0]);
  ASSERT_EQ(in.shape.rank(), 2u);
  EXPECT_EQ(in.shape[0], ir::Dim::Static(kSeq)) << "the export lost the model's [seq, batch] layout";
  r = Cli("eval " + Path("trained.onnx") + " --data npy:" + Ids() + "," + Labels() + " --batch-axis 1 --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  // Without the flag, the export's dims say it ([16, batch] ids, [batch, 10] logits): the same training.
  r = Cli(Train(model, Ids() + "," + Labels(), "--steps 60 --metrics " + Path("m2.jsonl")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("input 'input_0' takes its batch at axis 1 (its dynamic dim there is the outputs' first)"),
            std::string::npos) << r.out;
  EXPECT_EQ(FirstAndLastLoss(Path("m2.jsonl")), FirstAndLastLoss(Path("m.jsonl")));
  // --batch-axis 0 reads the input as it is: its first dim, 16, is then a fixed batch, which --batch-size 32 is not.
  ExpectRefused(Train(model, Ids() + "," + Labels(), "--steps 1 --batch-axis 0"),
                "the model's inputs have a fixed batch of 16 (input 'input_0' is int64[16,batch])");
}

TEST_F(TokenTrainTest, DataThatDoesNotFitTheInputsIsRefusedBeforeAnyStep) {
  const std::string model = "masked_transformer_train_op17";
  const std::string out = " --metrics " + Path("m.jsonl") + " --export " + Path("x.onnx");
  ExpectRefused(Train(model, Path("ids.npy") + "," + Path("labels.npy"), out),
                "the model has 2 data inputs ('input_0', 'input_1') but the data set has one unnamed input");
  ExpectRefused(Train(model, Ids() + "," + Labels(), out), "the model's input 'input_1' gets no data");
  ExpectRefused(Train(model, Ids() + ",mask=" + Path("mask.npy") + "," + Labels(), out),
                "the data set has an input 'mask' but the model's data inputs are 'input_0', 'input_1'");
  ExpectRefused(Train(model, "input_0=" + Path("mask.npy") + "," + Mask() + "," + Labels(), out),
                "input 'input_0': the data holds float32 but the model takes int64");
  ExpectRefused(Train(model, Ids() + "," + Mask() + "," + Labels(), out + " --output logits"),
                "--output 'logits' is not an output of the model; its outputs are 'output_0'");
}

}  // namespace
}  // namespace amptrain
