// `amptrain convert` and `amptrain inspect --amp` on a tiny model written by
// the exporter (issue 4, acceptance 5 and the CLI): the report's keys, the
// flags overriding a policy file, the dry run writing nothing, and every bad
// input (unknown op, invalid regex, unknown policy key, unknown level/dtype)
// giving one clear error line, a non-zero exit and no output file.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "amp/policy.h"
#include "importer/onnx_export.h"
#include "importer/onnx_import.h"
#include "ir/graph.h"
#include "tests/e2e/e2e_util.h"

namespace amptrain {
namespace {

using testing::ReadFile;

namespace fs = std::filesystem;
using ir::DType;
using nlohmann::json;

struct CliResult {
  int code = -1;
  std::string out, err;
};

class AmpCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    binary_ = AMPTRAIN_BINARY_DIR "/tools/amptrain";
    ASSERT_TRUE(fs::exists(binary_)) << binary_ << " is not built (make amptrain)";
    dir_ = fs::temp_directory_path() / ("amptrain_amp_cli_test_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    model_ = (dir_ / "tiny.onnx").string();
    out_ = (dir_ / "out.onnx").string();
    ASSERT_TRUE(importer::ExportModelFile(*TinyGraph(), model_).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  // y = Softmax(Relu(x @ W)); x: float32[batch,3], W: float32[3,4].
  // Nodes "mm" (MatMul, allowlist), "act" (Relu, follow), "sm" (Softmax, denylist).
  static std::unique_ptr<ir::Graph> TinyGraph() {
    auto g = std::make_unique<ir::Graph>();
    ir::Value x = g->AddInput("x", ir::TensorType::Of(DType::kFloat32, ir::Shape({ir::Dim::Symbolic("batch"),
                                                                                  ir::Dim::Static(3)})));
    ir::Value w = g->AddInitializer("W", ir::Tensor::Floats({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 4}));
    ir::Value m = g->AddNode(ir::OpKind::kMatMul, {x, w}, 1, "mm", {"m"})->output(0);
    ir::Value r = g->AddNode(ir::OpKind::kRelu, {m}, 1, "act", {"r"})->output(0);
    g->AddOutput(g->AddNode(ir::OpKind::kSoftmax, {r}, 1, "sm", {"y"})->output(0));
    EXPECT_TRUE(g->InferShapes().ok());
    return g;
  }

  CliResult Cli(const std::string& args) const {
    fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    std::string cmd = binary_ + " " + args + " >" + out.string() + " 2>" + err.string();
    int status = std::system(cmd.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFile(out), ReadFile(err)};
  }

  // Non-zero exit, one stderr line "amptrain: error: ..." naming `fragment`, no OUT, no report.
  void ExpectConvertError(const std::string& flags, const std::string& fragment) const {
    std::string report = (dir_ / "report.json").string();
    CliResult r = Cli("convert " + model_ + " -o " + out_ + " --report " + report + " " + flags);
    EXPECT_NE(r.code, 0) << flags;
    EXPECT_EQ(r.err.rfind("amptrain: error: ", 0), 0u) << flags << "\nstderr: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << flags << "\nstderr: " << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << flags << "\nstderr: " << r.err;
    EXPECT_FALSE(fs::exists(out_)) << flags;
    EXPECT_FALSE(fs::exists(report)) << flags;
    for (const auto& entry : fs::directory_iterator(dir_))
      EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos) << entry.path();
  }

  std::string WritePolicy(const std::string& name, const std::string& text) const {
    std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  // The report's entry for node `name`.
  static json NodeEntry(const json& report, const std::string& name) {
    for (const json& n : report["nodes"])
      if (n["name"] == name) return n;
    ADD_FAILURE() << "no node '" << name << "' in the report";
    return json::object();
  }

  std::string binary_;
  fs::path dir_;
  std::string model_, out_;
};

TEST_F(AmpCliTest, HelpListsFlags) {
  CliResult h = Cli("convert --help");
  ASSERT_EQ(h.code, 0);
  for (const char* flag : {"--amp", "--dtype", "--fp16-ops", "--fp32-ops", "--fp16-nodes", "--fp32-nodes",
                           "--policy", "--keep-io-types", "--no-keep-io-types", "--report", "--timings", "--max-error",
                           "--validate-input", "--opset", "O2"})
    EXPECT_NE(h.out.find(flag), std::string::npos) << "convert --help lacks " << flag;
  CliResult i = Cli("inspect --help");
  for (const char* flag : {"--amp", "--policy", "--dtype"})
    EXPECT_NE(i.out.find(flag), std::string::npos) << "inspect --help lacks " << flag;
}

// --timings: one stderr line with the in-process milliseconds (the
// comparison script reads "total"); no temporary file is left behind.
TEST_F(AmpCliTest, TimingsLineAndNoTemporaryFiles) {
  CliResult r = Cli("convert " + model_ + " -o " + out_ + " --timings");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* want : {"timings: import ", " ms, amp ", " ms, export ", " ms, total "})
    EXPECT_NE(r.err.find(want), std::string::npos) << "no '" << want << "' in:\n" << r.err;
  EXPECT_TRUE(fs::exists(out_));
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
}

TEST_F(AmpCliTest, ConvertWritesModelAndReport) {
  std::string report = (dir_ / "report.json").string();
  CliResult r = Cli("convert " + model_ + " -o " + out_ + " --amp O1 --report " + report);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  for (const char* want : {"casts", "weights", "float16"})
    EXPECT_NE(r.out.find(want), std::string::npos) << "summary lacks '" << want << "':\n" << r.out;
  json d = json::parse(ReadFile(report));
  EXPECT_EQ(d["level"], "O1");
  EXPECT_EQ(d["dtype"], "float16");
  EXPECT_EQ(d["keep_io_types"], true);
  EXPECT_EQ(NodeEntry(d, "mm")["dtype"], "float16");
  EXPECT_EQ(NodeEntry(d, "mm")["reason"], amp::ReasonName(amp::Reason::kLevelAllow));
  EXPECT_EQ(NodeEntry(d, "sm")["dtype"], "float32");
  EXPECT_EQ(NodeEntry(d, "sm")["reason"], amp::ReasonName(amp::Reason::kLevelDeny));
  for (const char* key : {"original", "inserted", "removed", "final"}) EXPECT_TRUE(d["casts"].contains(key)) << key;
  EXPECT_EQ(d["weight_bytes"]["before"], 48);
  EXPECT_TRUE(d["clamped"].contains("values"));
  EXPECT_GT(d["activation_bytes"]["fp32"].get<int64_t>(), 0);

  // The written model: io types kept, casts as the report says.
  auto g = importer::ImportModelFile(out_);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ((*g)->type((*g)->inputs()[0]).dtype, DType::kFloat32);
  EXPECT_EQ((*g)->type((*g)->outputs()[0]).dtype, DType::kFloat32);
  int casts = 0;
  for (const ir::Node* n : (*g)->nodes()) casts += n->op() == ir::OpKind::kCast;
  EXPECT_EQ(casts, d["casts"]["final"].get<int>());
}

TEST_F(AmpCliTest, FlagsOverridePolicyFile) {
  std::string policy = WritePolicy("p.yaml", "level: O1\ndtype: fp16\nfp32_ops: [Relu]\nfp16_nodes: [sm]\n");
  std::string report = (dir_ / "report.json").string();
  CliResult r = Cli("convert " + model_ + " -o " + out_ + " --policy " + policy +
                    " --amp O2 --dtype bf16 --fp16-ops Relu --fp32-nodes re:^m.* --no-keep-io-types --report " + report);
  ASSERT_EQ(r.code, 0) << r.err;
  json d = json::parse(ReadFile(report));
  EXPECT_EQ(d["level"], "O2");
  EXPECT_EQ(d["dtype"], "bfloat16");
  EXPECT_EQ(d["keep_io_types"], false);
  EXPECT_EQ(NodeEntry(d, "mm")["dtype"], "float32");  // the regex flag beats the level
  EXPECT_EQ(NodeEntry(d, "mm")["reason"], amp::ReasonName(amp::Reason::kNodeOverride));
  EXPECT_EQ(NodeEntry(d, "sm")["dtype"], "bfloat16");  // the file's fp16 node follows --dtype
  EXPECT_EQ(NodeEntry(d, "sm")["reason"], amp::ReasonName(amp::Reason::kNodeOverride));
  EXPECT_EQ(NodeEntry(d, "act")["dtype"], "bfloat16");  // --fp16-ops moved Relu out of the file's fp32 list
  auto g = importer::ImportModelFile(out_);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ((*g)->type((*g)->outputs()[0]).dtype, DType::kBFloat16);  // --no-keep-io-types
}

TEST_F(AmpCliTest, Fp16NodesWinOverFp32Nodes) {
  CliResult j = Cli("inspect --json --amp O1 --fp16-nodes sm --fp32-nodes 're:^(mm|sm)$' " + model_);
  ASSERT_EQ(j.code, 0) << j.err;
  json d = json::parse(j.out)["amp"];
  EXPECT_EQ(NodeEntry(d, "mm")["dtype"], "float32");
  EXPECT_EQ(NodeEntry(d, "sm")["dtype"], "float16");  // named by both: --fp16-nodes wins, as in a policy file
  EXPECT_EQ(NodeEntry(d, "sm")["reason"], amp::ReasonName(amp::Reason::kNodeOverride));
}

TEST_F(AmpCliTest, InspectDryRunWritesNothing) {
  auto before = std::distance(fs::directory_iterator(dir_), fs::directory_iterator());
  CliResult j = Cli("inspect --json --amp O2 " + model_);
  ASSERT_EQ(j.code, 0) << j.err;
  json d = json::parse(j.out);
  ASSERT_TRUE(d.contains("amp"));
  EXPECT_EQ(d["nodes"], 3);  // the describe part is unchanged
  EXPECT_EQ(d["amp"]["level"], "O2");
  EXPECT_EQ(NodeEntry(d["amp"], "act")["dtype"], "float16");
  EXPECT_EQ(d["amp"]["weight_bytes"]["before"], 48);
  EXPECT_EQ(d["amp"]["weight_bytes"]["after"], 24);  // W only feeds the fp16 MatMul
  const json& per_level = d["amp"]["activation_bytes_per_level"];
  for (const char* level : {"O0", "O1", "O2", "O3"}) ASSERT_TRUE(per_level.contains(level)) << level;
  EXPECT_EQ(per_level["O0"], d["amp"]["activation_bytes"]["fp32"]);
  EXPECT_LE(per_level["O3"].get<int64_t>(), per_level["O0"].get<int64_t>());

  CliResult t = Cli("inspect --amp O1 --dtype bf16 " + model_);
  ASSERT_EQ(t.code, 0) << t.err;
  for (const char* want : {"amp dry run", "mm  MatMul  bfloat16", "sm  Softmax  float32", "O3 "})
    EXPECT_NE(t.out.find(want), std::string::npos) << "missing '" << want << "' in:\n" << t.out;
  // stdout.txt and stderr.txt are the only new files.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), before + 2);
}

// --max-error 0: only keeping the MatMul fp32 gives the fp32 model's output
// exactly (random validation inputs, one batch of 16 for the symbolic batch).
TEST_F(AmpCliTest, MaxErrorKeepsNodesFp32AndReportsEveryTrial) {
  std::string report = (dir_ / "report.json").string();
  CliResult r = Cli("convert " + model_ + " -o " + out_ + " --amp O2 --max-error 0 --report " + report);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("precision search (bound 0)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("policy entry: fp32_nodes: [\"mm\""), std::string::npos) << r.out;
  json s = json::parse(ReadFile(report))["precision_search"];
  EXPECT_EQ(s["max_error"], 0.0);
  EXPECT_EQ(s["inputs"], "16 standard-normal samples, seeds from 0");
  EXPECT_GT(s["trials"][0]["error"].get<double>(), 0.0);
  EXPECT_EQ(s["trials"][0]["fp32_nodes"], 0);
  EXPECT_EQ(s["chosen"]["error"], 0.0);
  ASSERT_FALSE(s["fp32_nodes"].empty());
  EXPECT_EQ(s["fp32_nodes"][0], "mm");
  EXPECT_EQ(NodeEntry(json::parse(ReadFile(report)), "mm")["dtype"], "float32");
}

// bf16 Conv and pooling are ONNX-legal only from opset 22: converting an
// opset-17 model keeps them fp32, and the summary and the report say so and
// name the opset that lifts it; --opset 22 then converts them and writes
// that opset (a valid model the importer reads back).
TEST_F(AmpCliTest, OpsetLimitIsNamedAndOpsetFlagLiftsIt) {
  ir::Graph g;
  ir::Value x = g.AddInput("x", ir::TensorType::Of(DType::kFloat32, ir::Shape::FromStatic({1, 3, 8, 8})));
  std::vector<float> w(4 * 3 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * static_cast<float>(i % 7) - 0.03f;
  ir::Value c = g.AddNode(ir::OpKind::kConv, {x, g.AddInitializer("w", ir::Tensor::Floats(w, {4, 3, 3, 3}))}, 1,
                          "conv", {"c"})->output(0);
  ir::Value r = g.AddNode(ir::OpKind::kRelu, {c}, 1, "act", {"r"})->output(0);
  g.AddOutput(g.AddNode(ir::OpKind::kGlobalAveragePool, {r}, 1, "gap", {"y"})->output(0));
  ASSERT_TRUE(g.InferShapes().ok());
  const std::string model = (dir_ / "conv17.onnx").string(), report = (dir_ / "r.json").string();
  importer::ExportOptions at17;
  at17.opset = 17;
  ASSERT_TRUE(importer::ExportModelFile(g, model, at17).ok());

  CliResult r17 = Cli("convert " + model + " -o " + out_ + " --dtype bf16 --report " + report);
  ASSERT_EQ(r17.code, 0) << r17.err;
  EXPECT_NE(r17.out.find("fp32 for opset 17: 1 Conv, 1 GlobalAveragePool (bfloat16 from opset 22: convert --opset 22)"),
            std::string::npos) << r17.out;
  json d = json::parse(ReadFile(report));
  EXPECT_EQ(d["opset"], 17);
  EXPECT_EQ(NodeEntry(d, "conv")["dtype"], "float32");
  EXPECT_EQ(NodeEntry(d, "conv")["reason"], amp::ReasonName(amp::Reason::kUnsupportedLow));
  EXPECT_EQ(NodeEntry(d, "conv")["low_from_opset"], 22);
  EXPECT_FALSE(NodeEntry(d, "act").contains("low_from_opset"));

  CliResult r22 = Cli("convert " + model + " -o " + out_ + " --dtype bf16 --opset 22 --report " + report);
  ASSERT_EQ(r22.code, 0) << r22.err;
  EXPECT_EQ(r22.out.find("fp32 for opset"), std::string::npos) << r22.out;
  d = json::parse(ReadFile(report));
  EXPECT_EQ(d["opset"], 22);
  EXPECT_EQ(NodeEntry(d, "conv")["dtype"], "bfloat16");
  auto written = importer::ImportModelFile(out_);
  ASSERT_TRUE(written.ok()) << written.status().message();
  EXPECT_EQ((*written)->info().opset, 22);
  for (const ir::Node* n : (*written)->nodes()) {
    if (n->op() == ir::OpKind::kConv) {
      EXPECT_EQ((*written)->type(n->output(0)).dtype, DType::kBFloat16);
    }
  }
}

TEST_F(AmpCliTest, BadInputIsOneClearError) {
  ExpectConvertError("--max-error -1", "--max-error");
  ExpectConvertError("--max-error nan", "--max-error");
  ExpectConvertError("--validate-input x=" + (dir_ / "x.npy").string(), "--max-error");
  ExpectConvertError("--max-error 1e-2 --validate-input x=" + (dir_ / "absent.npy").string(), "absent.npy");
  ExpectConvertError("--max-error 0 --no-keep-io-types", "no conversion meets the error bound 0");
  ExpectConvertError("--fp16-ops MatMul,Convv", "Convv");
  ExpectConvertError("--fp32-ops Sofmax", "Sofmax");
  ExpectConvertError("--fp32-nodes 're:(unclosed'", "(unclosed");
  ExpectConvertError("--amp O4", "O4");
  ExpectConvertError("--dtype fp8", "fp8");
  ExpectConvertError("--policy " + WritePolicy("k.json", R"({"level": "O1", "fp16_opz": ["MatMul"]})"), "fp16_opz");
  ExpectConvertError("--policy " + WritePolicy("l.yaml", "level: O7\n"), "O7");
  ExpectConvertError("--policy " + (dir_ / "absent.yaml").string(), "absent.yaml");
  ExpectConvertError("--keep-io-types --no-keep-io-types", "keep-io-types");
  ExpectConvertError("--opset 10", "--opset: cannot write opset 10 (supported: 11..28)");
  ExpectConvertError("--opset 29", "--opset: cannot write opset 29");
  CliResult r = Cli("inspect --amp O5 " + model_);
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("O5"), std::string::npos) << r.err;
  CliResult d = Cli("inspect --dtype bf16 " + model_);
  EXPECT_NE(d.code, 0);
  EXPECT_NE(d.err.find("--amp"), std::string::npos) << d.err;
}

}  // namespace
}  // namespace amptrain
