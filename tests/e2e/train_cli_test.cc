// `amptrain train` and `amptrain eval` end to end on a small SimpleCNN (8x8
// inputs, 4 classes, written by `amptrain models write`) and synthetic data:
// training with checkpoints, metrics and export; a resumed run equal to a
// straight one byte for byte; and every bad input (missing or corrupt data
// set, a model that does not fit the classes, labels out of range, a corrupt
// or mismatched checkpoint) giving one error line, a non-zero exit and no
// file written or overwritten. The hostile inputs of issue 9 (F13-F15 among
// them) are tests/e2e/hostile_input_test.cc.
#include <gtest/gtest.h>
#include <png.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "executor/npy.h"
#include "importer/onnx_export.h"
#include "importer/onnx_import.h"
#include "ir/graph.h"
#include "tests/e2e/cli_fixture.h"

namespace amptrain {
namespace {

using testing::CliResult;
using testing::ReadFile;

namespace fs = std::filesystem;

using testing::kSmallData;
using testing::SmallTrain;
using testing::Snapshot;

using TrainCliTest = testing::SmallModelFixture;

// Flatten(features) -> Gemm(fc.w [4, in], fc.b = 0, transB) -> the 4-class
// logits, the graph's output; `fc` holds 4 x in weights.
void AddFourClassHead(ir::Graph& g, ir::Value features, const std::vector<float>& fc) {
  ir::Node* flat = g.AddNode(ir::OpKind::kFlatten, {features}, 1, "flatten");
  flat->attrs().Set("axis", int64_t{1});
  const int64_t in = static_cast<int64_t>(fc.size()) / 4;
  ir::Node* gemm = g.AddNode(ir::OpKind::kGemm,
                             {flat->output(0), g.AddInitializer("fc.w", ir::Tensor::Floats(fc, {4, in})),
                              g.AddInitializer("fc.b", ir::Tensor::Floats({0, 0, 0, 0}, {4}))},
                             1, "fc");
  gemm->attrs().Set("transB", int64_t{1});
  g.AddOutput(gemm->output(0));
}

TEST_F(TrainCliTest, TrainsEvaluatesExportsAndResumesBitwise) {
  const std::string straight = Path("straight"), resumed = Path("resumed");
  CliResult r = Cli(SmallTrain(model_, "--steps 12 --log-every 4 --checkpoint-dir " + straight + " --export " +
                                           Path("trained.onnx") + " --metrics " + Path("m.jsonl")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("step 12/12 loss"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("img/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("test loss"), std::string::npos) << r.out;  // epoch end at step 9
  ASSERT_TRUE(fs::exists(Path("trained.onnx")));
  std::istringstream metrics(ReadFile(Path("m.jsonl")));
  int progress = 0, epochs = 0;
  for (std::string line; std::getline(metrics, line);) {
    auto j = nlohmann::json::parse(line);
    progress += j["event"] == "progress";
    epochs += j["event"] == "epoch";
  }
  EXPECT_EQ(progress, 3);
  EXPECT_EQ(epochs, 1);

  ASSERT_EQ(Cli(SmallTrain(model_, "--steps 6 --checkpoint-dir " + resumed)).code, 0);
  r = Cli(SmallTrain(model_, "--steps 12 --resume auto --checkpoint-dir " + resumed));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("resumed from"), std::string::npos) << r.out;
  for (const char* file : {"model.safetensors", "optimizer.safetensors"}) {
    std::string a = ReadFile(fs::path(straight) / "ckpt-00000012" / file);
    EXPECT_FALSE(a.empty()) << file;
    EXPECT_TRUE(a == ReadFile(fs::path(resumed) / "ckpt-00000012" / file)) << file << " differs after resume";
  }

  r = Cli("eval " + Path("trained.onnx") + " --data " + kSmallData + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("(32 samples): loss"), std::string::npos) << r.out;
}

// An image folder of PNGs (gray and RGB, sizes other than the model's): the
// class is in the picture (a bright quarter), so training learns it.
TEST_F(TrainCliTest, TrainsAndEvaluatesOnAnImageFolder) {
  const std::string root = Path("pictures");
  auto write = [&](const std::string& split, int cls, int i) {
    const std::string folder = root + "/" + split + "/class" + std::to_string(cls);
    fs::create_directories(folder);
    const int h = 12 + i % 5, w = 10 + i % 7, channels = i % 2 ? 3 : 1;
    std::vector<uint8_t> p(static_cast<size_t>(h * w * channels));
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        for (int c = 0; c < channels; ++c)
          p[(y * w + x) * channels + c] = static_cast<uint8_t>(
              ((y < h / 2) == (cls / 2 == 0) && (x < w / 2) == (cls % 2 == 0) ? 200 : 30) + (x * 7 + y * 13 + i) % 20);
    png_image png{};
    png.version = PNG_IMAGE_VERSION;
    png.width = static_cast<png_uint_32>(w);
    png.height = static_cast<png_uint_32>(h);
    png.format = channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
    const std::string file = folder + "/" + std::to_string(i) + ".png";
    ASSERT_TRUE(png_image_write_to_file(&png, file.c_str(), 0, p.data(), 0, nullptr)) << png.message;
  };
  for (int cls = 0; cls < 4; ++cls) {
    for (int i = 0; i < 16; ++i) write("train", cls, i);
    for (int i = 0; i < 4; ++i) write("val", cls, 100 + i);
  }
  CliResult r = Cli("train " + model_ + " --data images:" + root +
                    " --batch-size 16 --threads 1 --epochs 6 --lr 0.01 --export " + Path("trained.onnx"));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string all = r.out + r.err;
  EXPECT_NE(all.find("images: 64 train images of 4 classes"), std::string::npos) << all;
  EXPECT_NE(all.find("decoded to 1x8x8"), std::string::npos) << all;
  EXPECT_NE(all.find("test loss"), std::string::npos) << all;
  r = Cli("eval " + Path("trained.onnx") + " --data images:" + root + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("(16 samples): loss"), std::string::npos) << r.out;
  const size_t at = r.out.find("accuracy ");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_GE(std::stod(r.out.substr(at + 9)), 75.0) << r.out;  // four easy classes
  r = Cli("eval " + Path("trained.onnx") + " --data images:" + root + " --image-resize 10 --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("decoded to 1x8x8 (resized to 10 first)"), std::string::npos) << r.out;
  ExpectOneLineError("eval " + model_ + " --data images:" + root + " --image-resize 7", "smaller than the 8x8 crop");
  // Resize(11) + RandomCrop(8) for training, Resize(11) + CenterCrop(8) for the test images.
  r = Cli("train " + model_ + " --data images:" + root + " --image-resize 11 --augment crop,flip --batch-size 16 "
          "--threads 1 --epochs 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("64 train images of 4 classes from " + root + "/train, decoded to 1x11x11 (resized to 11 first)"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("16 test images of 4 classes from " + root + "/val, decoded to 1x8x8 (resized to 11 first)"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("test loss"), std::string::npos) << r.out;
  ExpectOneLineError("train " + model_ + " --data " + testing::kSmallData + " --image-resize 8",
                     "--image-resize applies to images: data sets only");

  // --image-size resizes to what the model does not take: the model's own error, by name.
  ExpectOneLineError("train " + model_ + " --data images:" + root + " --image-size 9 --steps 1",
                     "--image-size 9 decodes the images to 9x9 but the model expects [batch,1,8,8]");
  ExpectOneLineError("train " + model_ + " --data " + testing::kSmallData + " --image-size 8",
                     "--image-size applies to images: data sets only");
  ExpectOneLineError("train " + model_ + " --data images:" + root + " --image-size 0x8", "--image-size '0x8'");
  ExpectOneLineError("train " + model_ + " --data images:" + Path("nowhere"), "does not exist");
  ExpectOneLineError("eval " + model_ + " --data images:", "images needs a path");
}

// A CSV of three separable classes named by text: an MLP trains on it from
// the CLI, evaluates, and the export evaluates on the test file.
TEST_F(TrainCliTest, TrainsAnMlpOnACsvFile) {
  ir::Graph g;
  ir::Value x = g.AddInput("features", ir::TensorType::Of(ir::DType::kFloat32,
                                                           ir::Shape({ir::Dim::Symbolic("N"), ir::Dim::Static(4)})));
  std::vector<float> w1(16 * 4), w2(3 * 16);
  for (size_t i = 0; i < w1.size(); ++i) w1[i] = 0.3f * static_cast<float>(static_cast<int>(i * 7 % 11) - 5) / 5;
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = 0.3f * static_cast<float>(static_cast<int>(i * 5 % 13) - 6) / 6;
  ir::Node* fc1 = g.AddNode(ir::OpKind::kGemm,
                            {x, g.AddInitializer("fc1.w", ir::Tensor::Floats(w1, {16, 4})),
                             g.AddInitializer("fc1.b", ir::Tensor::Floats(std::vector<float>(16, 0.f), {16}))},
                            1, "fc1");
  fc1->attrs().Set("transB", int64_t{1});
  ir::Value h = g.AddNode(ir::OpKind::kRelu, {fc1->output(0)}, 1, "relu")->output(0);
  ir::Node* fc2 = g.AddNode(ir::OpKind::kGemm,
                            {h, g.AddInitializer("fc2.w", ir::Tensor::Floats(w2, {3, 16})),
                             g.AddInitializer("fc2.b", ir::Tensor::Floats({0, 0, 0}, {3}))},
                            1, "fc2");
  fc2->attrs().Set("transB", int64_t{1});
  g.AddOutput(fc2->output(0));
  ASSERT_TRUE(g.InferShapes().ok());
  const std::string mlp = Path("mlp.onnx");
  ASSERT_TRUE(importer::ExportModelFile(g, mlp).ok());
  auto table = [](int rows, int seed) {
    std::string t = "id_a,id_b,\"size, cm\",weight,kind\n";
    const char* kinds[] = {"apple", "pear", "plum"};
    for (int i = 0; i < rows; ++i) {
      const int k = (i * 7 + seed) % 3;
      const float j = static_cast<float>((i * 13 + seed) % 10) / 20;
      t += std::to_string(k * 2 + j) + "," + std::to_string(1 - k + j) + "," + std::to_string(j) + "," +
           std::to_string(k == 1 ? 2 - j : j) + "," + kinds[k] + "\n";
    }
    return t;
  };
  std::ofstream(Path("train.csv")) << table(300, 0);
  std::ofstream(Path("test.csv")) << table(60, 1);
  const std::string data = "csv:" + Path("train.csv") + "," + Path("test.csv");
  CliResult r = Cli("train " + mlp + " --data " + data + " --batch-size 30 --threads 1 --epochs 8 --lr 0.02 --export " +
                    Path("trained.onnx"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("test loss"), std::string::npos) << r.out;
  r = Cli("eval " + Path("trained.onnx") + " --data " + data + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("(60 samples): loss"), std::string::npos) << r.out;
  const size_t at = r.out.find("accuracy ");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_GE(std::stod(r.out.substr(at + 9)), 90.0) << r.out;
  ExpectOneLineError("train " + mlp + " --data csv:" + Path("train.csv") + ",label=colour", "has no column 'colour'");
}

TEST_F(TrainCliTest, MissingOrCorruptDataSet) {
  ExpectOneLineError("train " + model_ + " --data fashion-mnist:" + Path("nowhere"), "nowhere");
  fs::create_directories(Path("bad"));
  for (const char* f : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                        "t10k-labels-idx1-ubyte"})
    std::ofstream(Path("bad") + "/" + f) << "not an idx file at all";
  ExpectOneLineError("train " + model_ + " --data fashion-mnist:" + Path("bad") + " --export " + Path("x.onnx"),
                     "train-");
  EXPECT_FALSE(fs::exists(Path("x.onnx")));
}

TEST_F(TrainCliTest, ModelThatDoesNotFitTheClasses) {
  ExpectOneLineError("train " + model_ + " --data synthetic:N=320,C=1,H=8,W=8,classes=10 --threads 1", "10 classes");
  // Labels beyond the model's classes make a data set with more classes than the output has.
  ir::Tensor x = *ir::Tensor::Zeros(ir::DType::kFloat32, {20, 1, 8, 8});
  std::vector<int64_t> labels(20);
  for (int i = 0; i < 20; ++i) labels[i] = i % 7;
  ASSERT_TRUE(executor::WriteNpy(Path("x.npy"), x).ok());
  ASSERT_TRUE(executor::WriteNpy(Path("y.npy"), ir::Tensor::Int64s(labels, {20})).ok());
  ExpectOneLineError("train " + model_ + " --data npy:" + Path("x.npy") + "," + Path("y.npy") + " --threads 1",
                     "classes");
}

// Conv layers and no BatchNormalization: the export may have folded BN into
// the Convs (issue 10). `train` warns and trains; SimpleCNN (with BN) draws
// no warning.
TEST_F(TrainCliTest, WarnsWhenConvLayersComeWithoutBatchNorm) {
  ir::Graph g;
  ir::Value x = g.AddInput("x", ir::TensorType::Of(ir::DType::kFloat32,
                                                    ir::Shape({ir::Dim::Symbolic("N"), ir::Dim::Static(1),
                                                               ir::Dim::Static(8), ir::Dim::Static(8)})));
  std::vector<float> w(2 * 9, 0.1f), fc(4 * 72, 0.01f);
  ir::Value conv = g.AddNode(ir::OpKind::kConv, {x, g.AddInitializer("w", ir::Tensor::Floats(w, {2, 1, 3, 3}))}, 1,
                             "conv")->output(0);
  AddFourClassHead(g, conv, fc);
  ASSERT_TRUE(g.InferShapes().ok());
  const std::string folded = Path("folded.onnx");
  ASSERT_TRUE(importer::ExportModelFile(g, folded).ok());
  const std::string warning = "Conv layer(s) and no BatchNormalization";
  CliResult r = Cli(SmallTrain(folded, "--steps 1"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE((r.out + r.err).find("the model has 1 " + warning), std::string::npos) << r.out << r.err;
  r = Cli(SmallTrain(model_, "--steps 1"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ((r.out + r.err).find(warning), std::string::npos) << r.out << r.err;
}

// A model exported with a fixed batch (no dynamic batch dim) used to fail at
// the last, partial batch of the first epoch, after training it. Now its
// batch is the batch size (taken from the model when -b is not given; a
// different -b is refused up front with the fix), and partial batches of the
// training and the test set are left out, with a warning that counts them.
TEST_F(TrainCliTest, AModelOfFixedBatchTrainsOnWholeBatchesOnly) {
  ir::Graph g;
  ir::Value x = g.AddInput("x", ir::TensorType::Of(ir::DType::kFloat32, {4, 1, 8, 8}));
  AddFourClassHead(g, x, std::vector<float>(4 * 64, 0.01f));
  ASSERT_TRUE(g.InferShapes().ok());
  const std::string fixed = Path("fixed.onnx");
  ASSERT_TRUE(importer::ExportModelFile(g, fixed).ok());
  // 90 samples: 81 train (20 batches of 4, 1 left out), 9 test (2 batches, 1 left out).
  const std::string data = " --data synthetic:N=90,C=1,H=8,W=8,classes=4 --threads 1 --epochs 2";
  CliResult r = Cli("train " + fixed + data + " --export " + Path("trained.onnx"));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string log = r.out + r.err;
  EXPECT_NE(log.find("fixed batch of 4 (input 'x'): using --batch-size 4"), std::string::npos) << log;
  EXPECT_NE(log.find("leaves out 1 of the 81 training samples"), std::string::npos) << log;
  EXPECT_NE(log.find("leaves out 1 of the 9 test samples"), std::string::npos) << log;
  EXPECT_NE(log.find("40 steps of batch 4"), std::string::npos) << log;
  r = Cli("eval " + Path("trained.onnx") + " --data synthetic:N=90,C=1,H=8,W=8,classes=4 --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE((r.out + r.err).find("(8 samples)"), std::string::npos) << r.out << r.err;
  ExpectRefused("train " + fixed + data + " -b 8 --export " + Path("other.onnx"),
                "--batch-size 8: the model's inputs have a fixed batch of 4 (input 'x' is float32[4,1,8,8]); use "
                "--batch-size 4");
  EXPECT_FALSE(fs::exists(Path("other.onnx")));
  ExpectRefused("eval " + Path("trained.onnx") + " --data synthetic:N=90,C=1,H=8,W=8,classes=4 -b 3",
                "fixed batch of 4");
}

// x [batch, 3, H, W] -> Conv(3 -> 4, 3x3, pad 1) -> Relu -> GlobalAveragePool
// -> Flatten -> Gemm -> 4 classes; H and W fixed, or dynamic ("h", "w").
void WriteRgbConvNet(const std::string& path, int64_t side) {
  ir::Graph g;
  const ir::Dim b = ir::Dim::Symbolic("batch");
  const ir::Dim h = side ? ir::Dim::Static(side) : ir::Dim::Symbolic("h");
  const ir::Dim w = side ? ir::Dim::Static(side) : ir::Dim::Symbolic("w");
  ir::Value x = g.AddInput("x", ir::TensorType::Of(ir::DType::kFloat32, ir::Shape({b, ir::Dim::Static(3), h, w})));
  std::vector<float> k(4 * 3 * 9);
  for (size_t i = 0; i < k.size(); ++i) k[i] = 0.05f * static_cast<float>(static_cast<int>(i % 7) - 3);
  ir::Node* conv =
      g.AddNode(ir::OpKind::kConv, {x, g.AddInitializer("conv.w", ir::Tensor::Floats(k, {4, 3, 3, 3}))}, 1, "conv");
  conv->attrs().Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  ir::Value relu = g.AddNode(ir::OpKind::kRelu, {conv->output(0)}, 1, "relu")->output(0);
  ir::Value pool = g.AddNode(ir::OpKind::kGlobalAveragePool, {relu}, 1, "pool")->output(0);
  std::vector<float> fc(16);
  for (size_t i = 0; i < fc.size(); ++i) fc[i] = 0.1f * static_cast<float>(static_cast<int>(i % 5) - 2);
  AddFourClassHead(g, pool, fc);
  ASSERT_TRUE(g.InferShapes().ok());
  ASSERT_TRUE(importer::ExportModelFile(g, path).ok());
}

// Gray 8x8 images for an RGB model: replicated to 3 channels, and resized
// where the model fixes another size; a dynamic size trains at the data's and
// the exported model keeps it dynamic. eval fits the images the same way.
TEST_F(TrainCliTest, ImagesAreFittedToTheModelsInput) {
  const std::string data = " --data synthetic:N=64,C=1,H=8,W=8,classes=4 --threads 1 --steps 4 -b 16";
  WriteRgbConvNet(Path("dyn.onnx"), 0);
  CliResult r = Cli("train " + Path("dyn.onnx") + data + " --export " + Path("dyn_trained.onnx"));
  ASSERT_EQ(r.code, 0) << r.err;
  std::string log = r.out + r.err;
  EXPECT_NE(log.find("images (1x8x8) go to the model's input 'x' as 3x8x8, made as torchvision's "
                     "Grayscale(num_output_channels=3) makes them"),
            std::string::npos)
      << log;
  auto exported = importer::ImportModelFile(Path("dyn_trained.onnx"));
  ASSERT_TRUE(exported.ok()) << exported.status().ToString();
  EXPECT_EQ((*exported)->type((*exported)->inputs()[0]).ToString(), "float32[batch,3,h,w]");
  r = Cli("eval " + Path("dyn_trained.onnx") + " --data synthetic:N=64,C=1,H=8,W=8,classes=4 --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;

  WriteRgbConvNet(Path("fixed12.onnx"), 12);
  r = Cli("train " + Path("fixed12.onnx") + data);
  ASSERT_EQ(r.code, 0) << r.err;
  log = r.out + r.err;
  EXPECT_NE(log.find("as 3x12x12, made as torchvision's Grayscale(num_output_channels=3) and Resize(12) makes them"),
            std::string::npos)
      << log;
  ExpectRefused("train " + Path("fixed12.onnx") + " --data synthetic:N=64,C=2,H=8,W=8,classes=4 --steps 1",
                "takes 3 channels and the synthetic images have 2; amptrain converts between 1 (gray) and 3 (RGB) only");
}

// A resume under another --freeze said "checkpoint tensor 'features.0.weight'
// is not in the model" (it is; it is frozen now). Both directions are refused
// naming the parameter and the fix, and nothing is written.
TEST_F(TrainCliTest, ResumeUnderAnotherFreezeIsRefusedByName) {
  const std::string trained_all = Path("ckpt_all"), frozen_one = Path("ckpt_frozen");
  ASSERT_EQ(Cli(SmallTrain(model_, "--steps 2 --checkpoint-dir " + trained_all)).code, 0);
  ASSERT_EQ(Cli(SmallTrain(model_, "--steps 2 --freeze features.0.weight --checkpoint-dir " + frozen_one)).code, 0);
  ExpectRefused(SmallTrain(model_, "--steps 4 --resume auto --freeze features.0.weight --checkpoint-dir " + trained_all),
                "trained 'features.0.weight', which this run freezes (frozen by --freeze); resume with the --freeze");
  ExpectRefused(SmallTrain(model_, "--steps 4 --resume auto --checkpoint-dir " + frozen_one),
                "has no 'features.0.weight', which this run trains: it was frozen in the run that wrote it");
}

TEST_F(TrainCliTest, CorruptOrMismatchedCheckpoint) {
  const std::string ckpt = Path("ckpt");
  ASSERT_EQ(Cli(SmallTrain(model_, "--steps 2 --checkpoint-dir " + ckpt)).code, 0);
  const fs::path two = fs::path(ckpt) / "ckpt-00000002";

  // Another model (5 classes): a mismatch, named, and nothing written.
  const std::string five = Path("cnn5.onnx");
  ASSERT_EQ(Cli("models write simplecnn --image-size 8 --num-classes 5 -o " + five).code, 0);
  auto before = Snapshot(ckpt);
  ExpectOneLineError("train " + five + " --data synthetic:N=320,C=1,H=8,W=8,classes=5 --threads 1 --steps 4 " +
                         "--resume auto --checkpoint-dir " + ckpt + " --export " + Path("out.onnx"),
                     "does not fit the model");
  EXPECT_EQ(Snapshot(ckpt), before);
  EXPECT_FALSE(fs::exists(Path("out.onnx")));

  // A flipped byte in the weights: the checksum names the file.
  std::string bytes = ReadFile(two / "model.safetensors");
  bytes[bytes.size() - 5] ^= 0x40;
  std::ofstream(two / "model.safetensors", std::ios::binary | std::ios::trunc) << bytes;
  before = Snapshot(ckpt);
  ExpectOneLineError(SmallTrain(model_, "--steps 4 --resume " + two.string() + " --checkpoint-dir " + ckpt +
                                            " --export " + Path("out.onnx")),
                     "model.safetensors");
  EXPECT_EQ(Snapshot(ckpt), before);
  EXPECT_FALSE(fs::exists(Path("out.onnx")));
}

}  // namespace
}  // namespace amptrain

namespace amptrain {
namespace {

// Mixed-precision training from the CLI: the plan and the scaler are
// reported, the fp32 and the mixed-precision exports both evaluate, the
// TensorBoard events and the metrics carry the loss scale.
TEST_F(TrainCliTest, AmpTrainsReportsAndExportsBothPrecisions) {
  const std::string fp32 = Path("t.onnx"), fp16 = Path("t16.onnx"), metrics = Path("m.jsonl"), tb = Path("tb");
  CliResult r = Cli(SmallTrain(model_, "--steps 12 --log-every 6 --amp O2 --dtype fp16 --export " + fp32 +
                                           " --export-inference --export-amp " + fp16 + " --metrics " + metrics +
                                           " --tensorboard " + tb));
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  for (const char* line : {"precision: AMP O2 float16, fp32 master weights, loss scaling dynamic",
                           "precision plan: nodes", "fp16: storage only", " scale ", " skipped "})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << " missing from:\n" << r.out;
  EXPECT_NE(ReadFile(metrics).find("\"loss_scale\""), std::string::npos);
  size_t events = 0;
  for (const auto& e : fs::directory_iterator(tb)) events += e.path().filename().string().rfind("events.out.tfevents.", 0) == 0;
  EXPECT_EQ(events, 1u);
  for (const std::string& m : {fp32, fp16}) {
    CliResult e = Cli("eval " + m + " --data " + kSmallData + " --threads 1");
    EXPECT_EQ(e.code, 0) << m << ": " << e.err;
    EXPECT_NE(e.out.find("accuracy"), std::string::npos) << e.out;
  }
  ir::DType low = ir::DType::kUndefined;
  auto g = importer::ImportModelFile(fp16);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  for (const ir::Node* n : (*g)->nodes())
    if (n->op() == ir::OpKind::kConv) low = (*g)->type(n->output(0)).dtype;
  EXPECT_EQ(low, ir::DType::kFloat16) << "the --export-amp model's Conv runs in fp16";
  EXPECT_EQ((r.out + r.err).find("stay float32 because its opset"), std::string::npos) << r.out << r.err;

  // bf16 at the model's opset 17: Conv has no bf16 version before opset 22, and train says so.
  r = Cli(SmallTrain(model_, "--steps 2 --amp O2 --dtype bf16 --export " + fp32 + " --export-amp " + Path("t_bf16.onnx")));
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE((r.out + r.err).find("stay float32 because its opset 17 has no bfloat16 version of them (they have from "
                                 "opset 22): `amptrain convert " + fp32 + " -o OUT.onnx --amp O2 --dtype bf16 --opset 22`"),
            std::string::npos) << r.out << r.err;
}

TEST_F(TrainCliTest, AmpFlagsAreChecked) {
  ExpectOneLineError(SmallTrain(model_, "--steps 2 --amp O2 --loss-scale lots"), "--loss-scale");
  ExpectOneLineError(SmallTrain(model_, "--steps 2 --loss-scale=-4"), "--loss-scale");
  ExpectOneLineError(SmallTrain(model_, "--steps 2 --export-amp " + Path("x.onnx")), "--export-amp needs --amp");
  EXPECT_FALSE(fs::exists(Path("x.onnx")));
  // O3 trains (weights stored low) and says so.
  CliResult o3 = Cli(SmallTrain(model_, "--steps 2 --amp O3 --dtype bf16 --export-amp " + Path("o3.onnx")));
  EXPECT_EQ(o3.code, 0) << o3.err;
  EXPECT_NE((o3.out + o3.err).find("weights stored in the low type"), std::string::npos) << o3.out << o3.err;
  EXPECT_TRUE(fs::exists(Path("o3.onnx")));
}

// `bench --train` (issue 12): step-time percentiles, images/s, peak RSS and,
// with --profile, the step split into forward, backward and the rest; in
// JSON for the benchmark scripts, under the AMP flags of `train`.
TEST_F(TrainCliTest, BenchTrainReportsStepTimesPhasesAndMemory) {
  CliResult r = Cli("bench " + model_ + " --train --batch 8 --warmup 1 --repeat 4 --threads 1 --json --profile");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["mode"], "train");
  EXPECT_EQ(j["precision"], "fp32");
  EXPECT_EQ(j["batch"], 8);
  EXPECT_EQ(j["steps"], 4);
  EXPECT_LE(j["p10_ms"].get<double>(), j["median_ms"].get<double>());
  EXPECT_LE(j["median_ms"].get<double>(), j["p90_ms"].get<double>());
  EXPECT_NEAR(j["images_per_s"].get<double>(), 8000.0 / j["median_ms"].get<double>(), 1e-6);
  EXPECT_GT(j["peak_rss_mib"].get<double>(), 1.0);
  const auto& phases = j["phases_ms_per_step"];
  EXPECT_GT(phases["forward"].get<double>(), 0.0);
  EXPECT_GT(phases["backward"].get<double>(), 0.0);
  EXPECT_GE(phases["optimizer_and_host"].get<double>(), 0.0);
  EXPECT_NE(r.err.find("ConvGrad"), std::string::npos) << r.err;  // the kernel tables

  r = Cli("bench " + model_ + " --train --batch 8 --warmup 1 --repeat 2 --threads 1 --amp O2 --dtype bf16");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("train O2 bfloat16, batch 8: step median"), std::string::npos) << r.out;
  ExpectOneLineError("bench " + model_ + " --train --amp O9", "O9");
  ExpectOneLineError("bench " + model_ + " --train --no-winograd", "--no-winograd is for inference");
  r = Cli("bench " + model_ + " --batch 2 --warmup 0 --repeat 1 --threads 1 --no-winograd");
  EXPECT_EQ(r.code, 0) << r.err;
  // NCHW throughout, to measure channels-last against (training and inference).
  r = Cli("bench " + model_ + " --train --batch 4 --warmup 0 --repeat 1 --threads 1 --no-channels-last");
  EXPECT_EQ(r.code, 0) << r.err;
  r = Cli("bench " + model_ + " --batch 2 --warmup 0 --repeat 1 --threads 1 --no-channels-last");
  EXPECT_EQ(r.code, 0) << r.err;
}

// `bench --fma-peak`: the machine's fp32 FMA peak that the benchmark scripts
// rate achieved GFLOP/s against (a number, not a speed claim: > 0 on any CPU
// with AVX2 and FMA, which every x86 machine here has).
TEST_F(TrainCliTest, BenchFmaPeak) {
  CliResult r = Cli("bench --fma-peak --threads 1 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_GT(j["fma_peak_gflops"].get<double>(), 0.0);
  EXPECT_EQ(j["threads"], 1);
  r = Cli("bench --fma-peak --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("fp32 FMA peak: "), std::string::npos) << r.out;
  ExpectOneLineError("bench --fma-peak " + model_, "takes no MODEL");
  ExpectOneLineError("bench --threads 1", "needs a MODEL");
}

}  // namespace
}  // namespace amptrain
