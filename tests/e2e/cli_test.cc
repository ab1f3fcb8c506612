// The `amptrain` binary end to end: --version/--help, inspect/run/export on a
// tiny model written by the exporter, and every bad-input case giving exactly
// one line on stderr and a non-zero exit code, with no partial output. The
// hostile inputs of issue 9 are tests/e2e/hostile_input_test.cc.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

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
using ir::DType;
using ir::Tensor;

class CliTest : public testing::CliFixture {
 protected:
  void SetUp() override {
    CliFixture::SetUp();
    model_ = Path("tiny.onnx");
    ASSERT_TRUE(importer::ExportModelFile(*TinyGraph(), model_).ok());
  }

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

  std::string WriteInput(const std::string& name, const Tensor& t) const {
    std::string path = (dir_ / name).string();
    EXPECT_TRUE(executor::WriteNpy(path, t).ok());
    return path;
  }

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
  // The model's own ops, without the inference optimizations: the same values here.
  CliResult plain = Cli("run " + model_ + " -i " + x + " -o " + out.string() + " --no-optimize --no-winograd");
  ASSERT_EQ(plain.code, 0) << plain.err;
  auto y = executor::ReadNpy((out / "y.npy").string());
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_FLOAT_EQ(y->data<float>()[1], 22.0f);
  // Chosen op types on the reference kernels, the rest as usual (backward ops,
  // for `grad`, by their IR names).
  CliResult some =
      Cli("run " + model_ + " -i " + x + " -o " + out.string() + " --no-optimize --reference-ops Relu,Add,ReluGrad");
  ASSERT_EQ(some.code, 0) << some.err;
  y = executor::ReadNpy((out / "y.npy").string());
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_FLOAT_EQ(y->data<float>()[1], 22.0f);
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
  ExpectOneLineError(run + "-i x=" + x + " --reference-ops Relu,Bogus", "'Bogus' is not an op amptrain knows");
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
