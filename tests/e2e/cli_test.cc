// The `amptrain` binary end to end: --version/--help, inspect/run/export on a
// tiny model written by the exporter, and every bad-input case giving exactly
// one line on stderr and a non-zero exit code, with no partial output.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "executor/npy.h"
#include "importer/onnx_export.h"
#include "importer/onnx_import.h"
#include "ir/graph.h"
#include "tests/e2e/e2e_util.h"

namespace amptrain {
namespace {

using testing::ReadFile;

namespace fs = std::filesystem;
using ir::DType;
using ir::Tensor;

struct CliResult {
  int code = -1;
  std::string out, err;
};

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    binary_ = AMPTRAIN_BINARY_DIR "/tools/amptrain";
    ASSERT_TRUE(fs::exists(binary_)) << binary_ << " is not built (make amptrain)";
    dir_ = fs::temp_directory_path() / ("amptrain_cli_test_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    model_ = (dir_ / "tiny.onnx").string();
    ASSERT_TRUE(importer::ExportModelFile(*TinyGraph(), model_).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  // y = Relu(x) + b and "out/z:0" = Neg(x); x: float32[batch,3], b: float32[3].
  static std::unique_ptr<ir::Graph> TinyGraph() {
    auto g = std::make_unique<ir::Graph>();
    g->info().producer_name = "cli_test";
    ir::Value x = g->AddInput("x", ir::TensorType::Of(DType::kFloat32, ir::Shape({ir::Dim::Symbolic("batch"),
                                                                                  ir::Dim::Static(3)})));
    ir::Value b = g->AddInitializer("b", Tensor::Floats({10, 20, 30}, {3}));
    ir::Value r = g->AddNode(ir::OpKind::kRelu, {x}, 1, "act", {"h"})->output(0);
    g->AddOutput(g->AddNode(ir::OpKind::kAdd, {r, b}, 1, "plus", {"y"})->output(0));
    g->AddOutput(g->AddNode(ir::OpKind::kNeg, {x}, 1, "neg", {"out/z:0"})->output(0));
    EXPECT_TRUE(g->InferShapes().ok());
    return g;
  }

  // `env`: "NAME=value " assignments for the command.
  CliResult Cli(const std::string& args, const std::string& env = "") const {
    fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    std::string cmd = env + binary_ + " " + args + " >" + out.string() + " 2>" + err.string();
    int status = std::system(cmd.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFile(out), ReadFile(err)};
  }

  // A failure: non-zero exit, exactly one stderr line "amptrain: error: ..." mentioning `fragment`.
  void ExpectOneLineError(const std::string& args, const std::string& fragment, int code = 1) const {
    CliResult r = Cli(args);
    EXPECT_EQ(r.code, code) << args << "\nstderr: " << r.err;
    EXPECT_EQ(r.err.rfind("amptrain: error: ", 0), 0u) << args << "\nstderr: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\nstderr: " << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << args << "\nstderr: " << r.err;
  }

  std::string WriteInput(const std::string& name, const Tensor& t) const {
    std::string path = (dir_ / name).string();
    EXPECT_TRUE(executor::WriteNpy(path, t).ok());
    return path;
  }

  std::string binary_;
  fs::path dir_;
  std::string model_;
};

Tensor X() { return Tensor::Floats({-1, 2, -3, 4, 0.5f, -6}, {2, 3}); }

TEST_F(CliTest, VersionAndHelp) {
  CliResult v = Cli("--version");
  EXPECT_EQ(v.code, 0);
  EXPECT_EQ(v.out.rfind("amptrain ", 0), 0u) << v.out;
  // The version line, then this CPU's capabilities (kernels/cpu/cpu_info.h).
  for (const char* key : {"\ncpu: ", "\ncpu flags: ", "\nonednn isa: ", "\nbf16: ", "\nfp16: "})
    EXPECT_NE(v.out.find(key), std::string::npos) << key << " missing from:\n" << v.out;
  CliResult capped = Cli("--version", "ONEDNN_MAX_CPU_ISA=AVX2 ");
  EXPECT_NE(capped.out.find("capped"), std::string::npos) << capped.out;

  CliResult h = Cli("--help");
  EXPECT_EQ(h.code, 0);
  for (const char* word : {"inspect", "run", "export", "--version", "--verbose"})
    EXPECT_NE(h.out.find(word), std::string::npos) << word;
  for (const auto& [cmd, flag] : std::vector<std::pair<std::string, std::string>>{
           {"inspect", "--json"}, {"run", "--output-dir"}, {"run", "--threads"}, {"export", "--opset"}}) {
    CliResult sub = Cli(cmd + " --help");
    EXPECT_EQ(sub.code, 0) << cmd;
    EXPECT_NE(sub.out.find(flag), std::string::npos) << cmd << " --help lacks " << flag;
  }
}

TEST_F(CliTest, BadCommandLinesExitWithCode2) {
  ExpectOneLineError("", "subcommand", 2);
  ExpectOneLineError("frobnicate", "frobnicate", 2);
  ExpectOneLineError("run " + model_ + " -o " + dir_.string() + " --bogus", "--bogus", 2);
  ExpectOneLineError("run " + model_, "--output-dir", 2);
  ExpectOneLineError("run " + model_ + " -o " + dir_.string() + " --threads -2", "threads", 2);
  ExpectOneLineError("inspect", "MODEL", 2);
}

TEST_F(CliTest, InspectTextAndJson) {
  CliResult r = Cli("inspect " + model_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  for (const char* want : {"x: float32[batch,3]", "y: float32[batch,3]", "Relu 1", "Add 1", "Neg 1", "cli_test",
                           "parameters  3 in 1 initializers (12 B)", "nodes       3"})
    EXPECT_NE(r.out.find(want), std::string::npos) << "missing '" << want << "' in:\n" << r.out;

  CliResult j = Cli("inspect --json " + model_);
  ASSERT_EQ(j.code, 0) << j.err;
  nlohmann::json d = nlohmann::json::parse(j.out);
  EXPECT_EQ(d["nodes"], 3);
  EXPECT_EQ(d["parameters"], 3);
  EXPECT_EQ(d["parameter_bytes"], 12);
  EXPECT_EQ(d["op_histogram"]["Relu"], 1);
  EXPECT_EQ(d["producer_name"], "cli_test");
  EXPECT_EQ(d["inputs"][0]["name"], "x");
  EXPECT_EQ(d["inputs"][0]["dtype"], "float32");
  EXPECT_EQ(d["inputs"][0]["shape"], nlohmann::json::parse(R"(["batch", 3])"));
  EXPECT_EQ(d["outputs"][1]["name"], "out/z:0");
  for (const char* key : {"ir_version", "opset", "producer_version", "graph_name", "initializers", "model"})
    EXPECT_TRUE(d.contains(key)) << key;
}

TEST_F(CliTest, RunWritesOutputs) {
  std::string x = WriteInput("x.npy", X());
  fs::path out = dir_ / "nested" / "out";
  for (std::string input : {"x=" + x, x}) {
    fs::remove_all(dir_ / "nested");
    CliResult r = Cli("run " + model_ + " --input " + input + " --output-dir " + out.string() + " --threads 1");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(r.err.empty()) << r.err;
    EXPECT_NE(r.out.find("y: float32[2,3]"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("ran in"), std::string::npos) << r.out;
    auto y = executor::ReadNpy((out / "y.npy").string());
    ASSERT_TRUE(y.ok()) << y.status().ToString();
    std::vector<float> want = {10, 22, 30, 14, 20.5f, 30};  // relu(x) + b, b per column
    ASSERT_EQ(y->num_elements(), 6);
    for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(y->data<float>()[i], want[i]);
    auto z = executor::ReadNpy((out / "out_z_0.npy").string());  // "out/z:0" sanitized
    ASSERT_TRUE(z.ok()) << z.status().ToString();
    EXPECT_FLOAT_EQ(z->data<float>()[0], 1.0f);
  }
  CliResult ref = Cli("run " + model_ + " -i " + x + " -o " + out.string() + " --reference");
  EXPECT_EQ(ref.code, 0) << ref.err;
}

TEST_F(CliTest, RunErrorsLeaveNoOutput) {
  std::string out = (dir_ / "out").string();
  std::string x = WriteInput("x.npy", X());
  std::string run = "run " + model_ + " -o " + out + " ";
  ExpectOneLineError(run + "-i w=" + x, "unknown input 'w'");
  ExpectOneLineError(run, "missing input 'x'");
  ExpectOneLineError(run + "-i x=" + x + " -i x=" + x, "given twice");
  ExpectOneLineError(run + "-i x=" + WriteInput("i.npy", Tensor::Int64s({1, 2, 3}, {1, 3})), "dtype int64");
  ExpectOneLineError(run + "-i x=" + WriteInput("s.npy", Tensor::Floats({1, 2, 3, 4}, {1, 4})), "[1,4]");
  ExpectOneLineError(run + "-i x=" + (dir_ / "absent.npy").string(), "does not exist");
  std::string bytes = ReadFile(x);
  std::ofstream((dir_ / "trunc.npy").string(), std::ios::binary) << bytes.substr(0, bytes.size() - 3);
  ExpectOneLineError(run + "-i x=" + (dir_ / "trunc.npy").string(), "truncated");
  EXPECT_FALSE(fs::exists(dir_ / "out" / "y.npy"));
}

TEST_F(CliTest, BadModelFiles) {
  ExpectOneLineError("inspect " + (dir_ / "absent.onnx").string(), "absent.onnx");
  std::ofstream((dir_ / "text.onnx").string()) << "this is not a protobuf\n";
  ExpectOneLineError("inspect " + (dir_ / "text.onnx").string(), "text.onnx");
  // An op no one supports: the exported bytes with op_type "Relu" renamed.
  std::string bytes = ReadFile(model_);
  size_t at = bytes.find("Relu");
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bytes.find("Relu", at + 1), std::string::npos) << "'Relu' is not only the op type";
  bytes.replace(at, 4, "Rxlu");
  std::ofstream((dir_ / "unsupported.onnx").string(), std::ios::binary) << bytes;
  ExpectOneLineError("inspect " + (dir_ / "unsupported.onnx").string(), "Rxlu");
  ExpectOneLineError("run " + (dir_ / "unsupported.onnx").string() + " -o " + (dir_ / "o").string(), "Rxlu");
  EXPECT_FALSE(fs::exists(dir_ / "o"));
}

TEST_F(CliTest, ExportRoundTrip) {
  std::string out = (dir_ / "copy.onnx").string();
  CliResult r = Cli("export " + model_ + " -o " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  auto g = importer::ImportModelFile(out);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ((*g)->outputs().size(), 2u);
  EXPECT_EQ((*g)->info().producer_name, "cli_test");
  CliResult i = Cli("inspect " + out);
  EXPECT_EQ(i.code, 0) << i.err;

  ExpectOneLineError("export " + model_ + " -o " + (dir_ / "no" / "such" / "dir.onnx").string(), "dir.onnx");
  ExpectOneLineError("export " + model_, "--output", 2);
  for (const auto& entry : fs::directory_iterator(dir_))
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
}

}  // namespace
}  // namespace amptrain

namespace amptrain {
namespace {

// Hostile input F1 (issue 9): an empty batch must never reach oneDNN (its
// matmul creation divided by M = 0: SIGFPE). `run` gives empty outputs;
// a mean loss over nothing (`grad`) is a clear refusal, with no output left.
TEST_F(CliTest, EmptyBatchGivesEmptyOutputsOrAClearRefusal) {
  const std::string model = (dir_ / "cnn.onnx").string(), x = (dir_ / "empty.npy").string(),
                    y = (dir_ / "labels.npy").string(), out = (dir_ / "out").string();
  ASSERT_EQ(Cli("models write simplecnn -o " + model).code, 0);
  ASSERT_TRUE(executor::WriteNpy(x, *Tensor::Zeros(DType::kFloat32, {0, 1, 28, 28})).ok());
  ASSERT_TRUE(executor::WriteNpy(y, *Tensor::Zeros(DType::kInt64, {0})).ok());
  CliResult r = Cli("run " + model + " -i " + x + " -o " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  auto logits = executor::ReadNpy(out + "/output_0.npy");
  ASSERT_TRUE(logits.ok()) << logits.status().ToString();
  EXPECT_EQ(logits->dims(), (std::vector<int64_t>{0, 10}));
  for (const char* impl : {"", " --reference"}) {
    const std::string gout = (dir_ / "grads").string();
    ExpectOneLineError("grad " + model + " -i " + x + " --labels " + y + " -o " + gout + impl,
                       "mean loss over an empty batch");
    EXPECT_FALSE(fs::exists(gout)) << impl;
  }
}

}  // namespace
}  // namespace amptrain

namespace amptrain {
namespace {

// Hostile input F8 (issue 9): an output path that is a device, FIFO or
// folder is refused and left as it was (run as root, `export -o /dev/null`
// used to replace /dev/null by a regular file). The device here is a copy of
// /dev/null's node in the test's folder, made only when running as root.
TEST_F(CliTest, OutputsThatAreNotRegularFilesAreRefusedAndKept) {
  const std::string fifo = (dir_ / "fifo").string(), folder = (dir_ / "folder").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_directories(folder);
  std::vector<std::string> targets = {fifo, folder};
  const std::string dev = (dir_ / "null").string();
  if (::geteuid() == 0 && ::mknod(dev.c_str(), S_IFCHR | 0666, ::makedev(1, 3)) == 0) targets.push_back(dev);
  for (const std::string& t : targets) {
    ExpectOneLineError("export " + model_ + " -o " + t, "writes regular files only");
    ExpectOneLineError("convert " + model_ + " -o " + t, "writes regular files only");
    ExpectOneLineError("models write simplecnn -o " + t, "writes regular files only");
  }
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_TRUE(fs::is_directory(folder));
  EXPECT_TRUE(fs::is_empty(folder));
  if (targets.size() == 3) EXPECT_TRUE(fs::is_character_file(dev));
}

// F11/F12: convert's report may be neither the input nor the model output,
// and train's outputs may not be the model; nothing is written or lost.
TEST_F(CliTest, OutputsThatAreTheInputAreRefused) {
  const std::string before = ReadFile(model_), out = (dir_ / "o.onnx").string();
  ExpectOneLineError("convert " + model_ + " -o " + model_, "is the input model");
  ExpectOneLineError("convert " + model_ + " -o " + out + " --report " + model_, "is the input model");
  ExpectOneLineError("convert " + model_ + " -o " + out + " --report " + out, "the same file");
  ExpectOneLineError("train " + model_ + " --data synthetic:N=16,C=3,H=1,W=1,classes=3 --metrics " + model_,
                     "is the model being trained");
  EXPECT_EQ(ReadFile(model_), before);
  EXPECT_FALSE(fs::exists(out));
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
}

}  // namespace
}  // namespace amptrain

namespace amptrain {
namespace {

// F9 (issue 9): `run` deleted the previous run's outputs when a later output
// failed to write (here a 300-character name). Now all or nothing.
TEST_F(CliTest, RunOutputsAreAllOrNothing) {
  auto g = std::make_unique<ir::Graph>();
  ir::Value x = g->AddInput("x", ir::TensorType::Of(DType::kFloat32, ir::Shape({ir::Dim::Static(1), ir::Dim::Static(3)})));
  g->AddOutput(g->AddNode(ir::OpKind::kRelu, {x}, 1, "a", {"y"})->output(0));
  g->AddOutput(g->AddNode(ir::OpKind::kNeg, {x}, 1, "b", {std::string(300, 'z')})->output(0));
  ASSERT_TRUE(g->InferShapes().ok());
  const std::string model = (dir_ / "long.onnx").string(), x_npy = (dir_ / "x.npy").string();
  ASSERT_TRUE(importer::ExportModelFile(*g, model).ok());
  ASSERT_TRUE(executor::WriteNpy(x_npy, Tensor::Floats({1, -2, 3}, {1, 3})).ok());
  const fs::path out = dir_ / "out";
  fs::create_directories(out);
  std::ofstream(out / "y.npy") << "the previous run's output";
  ExpectOneLineError("run " + model + " -i " + x_npy + " -o " + out.string(), "nothing was written");
  EXPECT_EQ(ReadFile(out / "y.npy"), "the previous run's output");
  for (const auto& e : fs::directory_iterator(out)) EXPECT_EQ(e.path().filename(), "y.npy") << "left behind: " << e.path();
}

// F10: initializers "w/1" and "w:1" both became grads/w_1.npy (one silently
// overwritten); a failure left loss.npy and some gradients behind.
TEST_F(CliTest, GradFileNamesAreUniqueAndWritesAreAllOrNothing) {
  auto g = std::make_unique<ir::Graph>();
  ir::Value x = g->AddInput("x", ir::TensorType::Of(DType::kFloat32, ir::Shape({ir::Dim::Symbolic("N"), ir::Dim::Static(2)})));
  ir::Value a = g->AddInitializer("w/1", Tensor::Floats({1, 2}, {2}));
  ir::Value b = g->AddInitializer("w:1", Tensor::Floats({3, 4}, {2}));
  ir::Value h = g->AddNode(ir::OpKind::kMul, {x, a}, 1, "m1")->output(0);
  g->AddOutput(g->AddNode(ir::OpKind::kMul, {h, b}, 1, "m2", {"logits"})->output(0));
  ASSERT_TRUE(g->InferShapes().ok());
  const std::string model = (dir_ / "w.onnx").string(), x_npy = (dir_ / "x.npy").string(),
                    y_npy = (dir_ / "y.npy").string();
  ASSERT_TRUE(importer::ExportModelFile(*g, model).ok());
  ASSERT_TRUE(executor::WriteNpy(x_npy, Tensor::Floats({1, -2, 3, 0.5f}, {2, 2})).ok());
  ASSERT_TRUE(executor::WriteNpy(y_npy, Tensor::Int64s({0, 1}, {2})).ok());
  const fs::path out = dir_ / "grads_out";
  const std::string grad = "grad " + model + " -i " + x_npy + " --labels " + y_npy + " -o " + out.string();
  CliResult r = Cli(grad);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(out / "grads" / "w_1.npy"));
  EXPECT_TRUE(fs::exists(out / "grads" / "w_1_2.npy"));
  auto g1 = executor::ReadNpy((out / "grads" / "w_1.npy").string());
  auto g2 = executor::ReadNpy((out / "grads" / "w_1_2.npy").string());
  ASSERT_TRUE(g1.ok() && g2.ok());
  EXPECT_FALSE(*g1 == *g2) << "two different gradients";

  // A target that cannot be written (a folder where w_1_2.npy goes): nothing is written.
  fs::remove_all(out);
  fs::create_directories(out / "grads" / "w_1_2.npy");
  ExpectOneLineError(grad, "w_1_2.npy");
  EXPECT_FALSE(fs::exists(out / "loss.npy"));
  EXPECT_FALSE(fs::exists(out / "grads" / "w_1.npy"));
}

}  // namespace
}  // namespace amptrain

namespace amptrain {
namespace {

// Issue 9, silent acceptance: numeric flags say their range in words
// (CLI11's was "Value 0 not in range 0.000000 to 1797...", 320 characters),
// and nothing wraps or saturates: --seed -1, a --steps beyond int64, an
// --epochs count whose steps overflow, --threads 10000.
TEST_F(CliTest, NumericFlagsNameTheirRangeAndNeverWrap) {
  ExpectOneLineError("train " + model_ + " --batch-size 0", "--batch-size: must be an integer >= 1, got '0'", 2);
  ExpectOneLineError("train " + model_ + " --seed -1", "--seed: must be an integer >= 0", 2);
  ExpectOneLineError("train " + model_ + " --steps 99999999999999999999", "--steps: must be an integer >= 1", 2);
  ExpectOneLineError("run " + model_ + " --threads 10000", "--threads: must be an integer from 0 to 1024", 2);
  ExpectOneLineError("train " + model_ + " --lr -1", "--lr: must be a finite number >= 0", 2);
  const std::string cnn = (dir_ / "cnn.onnx").string();
  ASSERT_EQ(Cli("models write simplecnn -o " + cnn).code, 0);
  ExpectOneLineError("train " + cnn + " --epochs 9223372036854775807", "more steps than can be counted");
}

}  // namespace
}  // namespace amptrain

namespace amptrain {
namespace {

// F5 for the model (issue 9): a FIFO as MODEL blocked forever, a folder was
// "exceeds 2 GiB". Each is now one line naming what the path is.
TEST_F(CliTest, ModelThatIsNotARegularFileIsNamed) {
  const std::string fifo = (dir_ / "model.fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ExpectOneLineError("inspect " + fifo, "a FIFO, not a regular file");
  ExpectOneLineError("inspect " + dir_.string(), "is a folder");
}

}  // namespace
}  // namespace amptrain

namespace amptrain {
namespace {

// F16 (issue 9): a node named with the bytes \xff\xfe made `convert
// --report` fail with an internal JSON exception and leave o.onnx.tmp-<pid>
// behind. JSON output now replaces invalid UTF-8 (U+FFFD).
TEST_F(CliTest, NonUtf8NamesAreEscapedInJsonOutput) {
  auto g = std::make_unique<ir::Graph>();
  ir::Value x = g->AddInput("x", ir::TensorType::Of(DType::kFloat32, ir::Shape({ir::Dim::Static(1), ir::Dim::Static(3)})));
  ir::Value w = g->AddInitializer("w", Tensor::Floats({1, 2, 3, 4, 5, 6}, {3, 2}));
  g->AddOutput(g->AddNode(ir::OpKind::kMatMul, {x, w}, 1, "mm\xff\xfe", {"y"})->output(0));
  ASSERT_TRUE(g->InferShapes().ok());
  const std::string model = (dir_ / "bad_name.onnx").string(), out = (dir_ / "o.onnx").string(),
                    report = (dir_ / "r.json").string();
  ASSERT_TRUE(importer::ExportModelFile(*g, model).ok());
  CliResult r = Cli("convert " + model + " -o " + out + " --report " + report);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(ReadFile(report), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << "the report is not valid JSON";
  EXPECT_NE(j.dump().find("mm\xEF\xBF\xBD"), std::string::npos) << "the name keeps its valid part, U+FFFD for the rest";
  CliResult inspect = Cli("inspect " + model + " --json");
  EXPECT_EQ(inspect.code, 0) << inspect.err;
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
}

}  // namespace
}  // namespace amptrain
