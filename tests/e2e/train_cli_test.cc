// `amptrain train` and `amptrain eval` end to end on a small SimpleCNN (8x8
// inputs, 4 classes, written by `amptrain models write`) and synthetic data:
// training with checkpoints, metrics and export; a resumed run equal to a
// straight one byte for byte; and every bad input (missing or corrupt data
// set, a model that does not fit the classes, labels out of range, a corrupt
// or mismatched checkpoint) giving one error line, a non-zero exit and no
// file written or overwritten.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "executor/npy.h"
#include "importer/onnx_import.h"
#include "tests/e2e/e2e_util.h"

namespace amptrain {
namespace {

using testing::ReadFile;

namespace fs = std::filesystem;

constexpr const char* kData = "synthetic:N=320,C=1,H=8,W=8,classes=4,seed=1";

// Names and bytes of every file under `dir`.
std::map<std::string, std::string> Snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  if (!fs::exists(dir)) return files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files[fs::relative(e.path(), dir).string()] = ReadFile(e.path());
  return files;
}

struct CliResult {
  int code = -1;
  std::string out, err;
};

class TrainCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    binary_ = AMPTRAIN_BINARY_DIR "/tools/amptrain";
    ASSERT_TRUE(fs::exists(binary_)) << binary_ << " is not built (make amptrain)";
    dir_ = fs::temp_directory_path() / ("amptrain_train_cli_test_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    model_ = Path("cnn4.onnx");
    ASSERT_EQ(Cli("models write simplecnn --image-size 8 --num-classes 4 -o " + model_).code, 0);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  CliResult Cli(const std::string& args) const {
    fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    std::string cmd = binary_ + " " + args + " >" + out.string() + " 2>" + err.string();
    int status = std::system(cmd.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFile(out), ReadFile(err)};
  }

  // Training flags shared by the tests: small batches, one thread.
  std::string Train(const std::string& model, const std::string& extra) const {
    return "train " + model + " --data " + kData + " --batch-size 32 --threads 1 --seed 3 " + extra;
  }

  void ExpectOneLineError(const std::string& args, const std::string& fragment) const {
    CliResult r = Cli(args);
    EXPECT_EQ(r.code, 1) << args << "\nstderr: " << r.err;
    EXPECT_EQ(r.err.rfind("amptrain: error: ", 0), 0u) << args << "\nstderr: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\nstderr: " << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << args << "\nstderr: " << r.err;
  }

  std::string binary_;
  fs::path dir_;
  std::string model_;
};

TEST_F(TrainCliTest, TrainsEvaluatesExportsAndResumesBitwise) {
  const std::string straight = Path("straight"), resumed = Path("resumed");
  CliResult r = Cli(Train(model_, "--steps 12 --log-every 4 --checkpoint-dir " + straight + " --export " +
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

  ASSERT_EQ(Cli(Train(model_, "--steps 6 --checkpoint-dir " + resumed)).code, 0);
  r = Cli(Train(model_, "--steps 12 --resume auto --checkpoint-dir " + resumed));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("resumed from"), std::string::npos) << r.out;
  for (const char* file : {"model.safetensors", "optimizer.safetensors"}) {
    std::string a = ReadFile(fs::path(straight) / "ckpt-00000012" / file);
    EXPECT_FALSE(a.empty()) << file;
    EXPECT_TRUE(a == ReadFile(fs::path(resumed) / "ckpt-00000012" / file)) << file << " differs after resume";
  }

  r = Cli("eval " + Path("trained.onnx") + " --data " + kData + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("(32 samples): loss"), std::string::npos) << r.out;
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

TEST_F(TrainCliTest, CorruptOrMismatchedCheckpoint) {
  const std::string ckpt = Path("ckpt");
  ASSERT_EQ(Cli(Train(model_, "--steps 2 --checkpoint-dir " + ckpt)).code, 0);
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
  ExpectOneLineError(Train(model_, "--steps 4 --resume " + two.string() + " --checkpoint-dir " + ckpt + " --export " +
                                       Path("out.onnx")),
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
  CliResult r = Cli(Train(model_, "--steps 12 --log-every 6 --amp O2 --dtype fp16 --export " + fp32 +
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
    CliResult e = Cli("eval " + m + " --data " + kData + " --threads 1");
    EXPECT_EQ(e.code, 0) << m << ": " << e.err;
    EXPECT_NE(e.out.find("accuracy"), std::string::npos) << e.out;
  }
  ir::DType low = ir::DType::kUndefined;
  auto g = importer::ImportModelFile(fp16);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  for (const ir::Node* n : (*g)->nodes())
    if (n->op() == ir::OpKind::kConv) low = (*g)->type(n->output(0)).dtype;
  EXPECT_EQ(low, ir::DType::kFloat16) << "the --export-amp model's Conv runs in fp16";
}

TEST_F(TrainCliTest, AmpFlagsAreChecked) {
  ExpectOneLineError(Train(model_, "--steps 2 --amp O2 --loss-scale lots"), "--loss-scale");
  ExpectOneLineError(Train(model_, "--steps 2 --loss-scale=-4"), "--loss-scale");
  ExpectOneLineError(Train(model_, "--steps 2 --export-amp " + Path("x.onnx")), "--export-amp needs --amp");
  EXPECT_FALSE(fs::exists(Path("x.onnx")));
  // O3 trains (weights stored low) and says so.
  CliResult o3 = Cli(Train(model_, "--steps 2 --amp O3 --dtype bf16 --export-amp " + Path("o3.onnx")));
  EXPECT_EQ(o3.code, 0) << o3.err;
  EXPECT_NE((o3.out + o3.err).find("weights stored in the low type"), std::string::npos) << o3.out << o3.err;
  EXPECT_TRUE(fs::exists(Path("o3.onnx")));
}

// F13 (issue 9): train checked its output paths only after training. Every
// output is checked (and the metrics file opened) before step 1: a bad one
// fails at once with one line, and nothing else is written.
TEST_F(TrainCliTest, BadOutputPathsFailBeforeTheFirstStep) {
  const std::string missing = Path("no/such/folder");
  fs::create_directories(Path("ro"));
  fs::permissions(Path("ro"), fs::perms::owner_read | fs::perms::owner_exec);
  std::ofstream(Path("a_file")) << "x";
  const std::pair<std::string, std::string> cases[] = {
      {"--export " + missing + "/m.onnx", "--export"},
      {"--metrics " + missing + "/m.jsonl", "--metrics"},
      {"--export-inference --export " + Path("ok.onnx") + " --metrics " + missing + "/m.jsonl", "--metrics"},
      {"--checkpoint-dir " + Path("a_file"), "--checkpoint-dir"},
      {"--tensorboard " + Path("a_file"), "--tensorboard"},
  };
  for (const auto& [flags, fragment] : cases) ExpectOneLineError(Train(model_, "--steps 200 " + flags), fragment);
  if (::geteuid() != 0) {  // root writes anywhere
    ExpectOneLineError(Train(model_, "--steps 200 --export " + Path("ro/m.onnx")), "cannot create files");
    ExpectOneLineError(Train(model_, "--steps 200 --checkpoint-dir " + Path("ro/ckpt")), "--checkpoint-dir");
  }
  EXPECT_FALSE(fs::exists(Path("ok.onnx")));
  fs::permissions(Path("ro"), fs::perms::owner_all);
}

}  // namespace
}  // namespace amptrain

namespace amptrain {
namespace {

// F15 (issue 9): --resume auto with every checkpoint corrupt started from
// scratch with rc 0, and pruning then deleted one of the old checkpoints.
TEST_F(TrainCliTest, ResumeAutoWithOnlyBrokenCheckpointsFailsAndKeepsThem) {
  const std::string ckpt = Path("ckpt");
  ASSERT_EQ(Cli(Train(model_, "--steps 3 --keep-last 0 --checkpoint-dir " + ckpt)).code, 0);
  ASSERT_EQ(Cli(Train(model_, "--steps 5 --keep-last 0 --resume auto --checkpoint-dir " + ckpt)).code, 0);
  const std::vector<std::string> old = {"ckpt-00000003", "ckpt-00000005"};
  for (const std::string& step : old) {
    const fs::path f = fs::path(ckpt) / step / "model.safetensors";
    std::string bytes = ReadFile(f);
    bytes[bytes.size() - 3] ^= 0x10;
    std::ofstream(f, std::ios::binary | std::ios::trunc) << bytes;
  }
  const auto broken = Snapshot(ckpt);
  ExpectOneLineError(Train(model_, "--steps 6 --resume auto --checkpoint-dir " + ckpt), "none of the 2 checkpoints");
  EXPECT_TRUE(Snapshot(ckpt) == broken) << "a refused resume changes nothing";
  // auto-or-fresh trains from scratch (steps 2, 4, 6 saved, keep-last 1): it
  // prunes its own checkpoints, never the broken ones it did not write.
  CliResult r = Cli(Train(model_, "--steps 6 --checkpoint-every 2 --keep-last 1 --resume auto-or-fresh --checkpoint-dir " + ckpt));
  ASSERT_EQ(r.code, 0) << r.err;
  for (const std::string& step : old)
    EXPECT_TRUE(ReadFile(fs::path(ckpt) / step / "model.safetensors") == broken.at(step + "/model.safetensors")) << step;
  EXPECT_TRUE(fs::exists(fs::path(ckpt) / "ckpt-00000006"));
  EXPECT_FALSE(fs::exists(fs::path(ckpt) / "ckpt-00000002"));
}

// F14: an empty test split (an npy set of fewer than 10 samples) failed the
// evaluation before the checkpoint and the export were written.
TEST_F(TrainCliTest, EmptyTestSplitSkipsEvaluationAndKeepsTheTrainedEpoch) {
  std::vector<float> x(8 * 64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) / 7.0f;
  ASSERT_TRUE(executor::WriteNpy(Path("x.npy"), ir::Tensor::Floats(x, {8, 1, 8, 8})).ok());
  ASSERT_TRUE(executor::WriteNpy(Path("y.npy"), ir::Tensor::Int64s({0, 1, 2, 3, 0, 1, 2, 3}, {8})).ok());
  const std::string ckpt = Path("ckpt"), out = Path("t.onnx");
  CliResult r = Cli("train " + model_ + " --data npy:" + Path("x.npy") + "," + Path("y.npy") +
                    " --batch-size 4 --threads 1 --epochs 1 --checkpoint-dir " + ckpt + " --export " + out);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE((r.out + r.err).find("the test split is empty"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(out));
  EXPECT_FALSE(Snapshot(ckpt).empty());
}

}  // namespace
}  // namespace amptrain
