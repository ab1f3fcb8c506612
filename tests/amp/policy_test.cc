// Policy data: levels, validation errors, JSON and YAML policy files.
#include "amp/policy.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace amptrain::amp {
namespace {

void ExpectError(const Status& st, const std::string& needle) {
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
}

TEST(AmpPolicy, Levels) {
  EXPECT_EQ(*ParseLevel("O2"), Level::kO2);
  EXPECT_EQ(*ParseLevel("o3"), Level::kO3);
  EXPECT_STREQ(LevelName(Level::kO1), "O1");
  ExpectError(ParseLevel("O4").status(), "unknown AMP level 'O4'");
}

TEST(AmpPolicy, ValidateNamesTheProblem) {
  Policy p;
  p.low_ops = {"Convv"};
  ExpectError(p.Validate(), "unknown op 'Convv' in the fp16 op list");
  p.low_ops = {"Conv"};
  p.fp32_ops = {"Conv"};
  ExpectError(p.Validate(), "'Conv' is in both");
  p.fp32_ops = {"Shape"};
  ExpectError(p.Validate(), "'Shape' in the fp32 op list has no float computation");
  p.fp32_ops = {};
  p.node_overrides = {{"layer1.(", true, ir::DType::kFloat32}};
  ExpectError(p.Validate(), "invalid regex 'layer1.('");
  p.node_overrides = {{"conv1", false, ir::DType::kBFloat16}};
  ExpectError(p.Validate(), "node override 'conv1' asks for bfloat16");
  p.node_overrides = {};
  p.low = ir::DType::kFloat64;
  ExpectError(p.Validate(), "float64 is not supported");
}

TEST(AmpPolicy, JsonFile) {
  auto p = ParsePolicyText(R"({"level": "O2", "dtype": "bf16", "fp16_ops": ["Conv"], "fp32_ops": ["Add"],
      "fp32_nodes": ["head", "re:layer4\\..*"], "fp16_nodes": ["fc"],
      "pins": [{"node": "re:up.*", "input": 0, "dtype": "fp32"}], "keep_io_types": false})", "p.json");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->level, Level::kO2);
  EXPECT_EQ(p->low, ir::DType::kBFloat16);
  EXPECT_EQ(p->low_ops, std::set<std::string>{"Conv"});
  ASSERT_EQ(p->node_overrides.size(), 3u);
  EXPECT_TRUE(p->node_overrides[1].is_regex);
  EXPECT_EQ(p->node_overrides[1].pattern, "layer4\\..*");
  EXPECT_EQ(p->node_overrides[2].dtype, ir::DType::kBFloat16);
  ASSERT_EQ(p->pins.size(), 1u);
  EXPECT_EQ(p->pins[0].node_pattern, "up.*");
  EXPECT_FALSE(p->keep_io_types);
}

TEST(AmpPolicy, YamlFileMatchesJson) {
  std::string path = ::testing::TempDir() + "/amp_policy.yaml";
  {
    std::ofstream f(path);
    f << "# my policy\nlevel: O1\ndtype: fp16\nfp32_ops: [Gemm]\nfp16_nodes:\n  - re:block.*\n"
         "pins:\n  - {node: r, input: 1, dtype: fp32}\nkeep_io_types: true\n";
  }
  auto p = LoadPolicyFile(path);
  std::remove(path.c_str());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->level, Level::kO1);
  EXPECT_EQ(p->fp32_ops, std::set<std::string>{"Gemm"});
  ASSERT_EQ(p->node_overrides.size(), 1u);
  EXPECT_EQ(p->node_overrides[0].dtype, ir::DType::kFloat16);
  ASSERT_EQ(p->pins.size(), 1u);
  EXPECT_EQ(p->pins[0].input, 1);
}

TEST(AmpPolicy, FileErrorsNameTheProblem) {
  ExpectError(ParsePolicyText("level: O1\nfp16_op: [Conv]\n", "a.yaml").status(), "unknown key 'fp16_op'");
  ExpectError(ParsePolicyText(R"({"levl": "O1"})", "a.json").status(), "a.json: unknown key 'levl'");
  // Duplicate keys (issue 9): nlohmann and yaml-cpp kept the last one silently.
  ExpectError(ParsePolicyText(R"({"level": "O1", "level": "O2"})", "a.json").status(),
              "a.json: key \"level\" appears twice");
  ExpectError(ParsePolicyText(R"({"pins": [{"node": "a", "input": 1, "input": 2, "dtype": "fp32"}]})", "a.json")
                  .status(),
              "key \"input\" appears twice");
  ExpectError(ParsePolicyText("level: O1\nlevel: O2\n", "a.yaml").status(), "key \"level\" appears twice");
  EXPECT_TRUE(ParsePolicyText(R"({"pins": [{"node": "a", "input": 1, "dtype": "fp32"},
                                          {"node": "a", "input": 2, "dtype": "fp32"}]})", "a.json").ok())
      << "the same key in two objects is fine";
  ExpectError(ParsePolicyText("level: O5\n", "a.yaml").status(), "unknown AMP level 'O5'");
  ExpectError(ParsePolicyText("fp32_ops: [Softmaxx]\n", "a.yaml").status(), "unknown op 'Softmaxx'");
  ExpectError(ParsePolicyText("fp32_nodes: ['re:(']\n", "a.yaml").status(), "invalid regex '('");
  ExpectError(ParsePolicyText("pins: [{node: a, input: 0, dtype: fp32, slot: 2}]\n", "a.yaml").status(),
              "pins[0]: unknown key 'slot'");
  ExpectError(ParsePolicyText("dtype: fp8\n", "a.yaml").status(), "unknown dtype 'fp8'");
  ExpectError(ParsePolicyText("{\"level\": ", "a.json").status(), "a.json: invalid JSON");
  ExpectError(ParsePolicyText("level: [O1\n", "a.yaml").status(), "a.yaml: invalid YAML");
  ExpectError(LoadPolicyFile("/nonexistent/p.yaml").status(), "policy file '/nonexistent/p.yaml' does not exist");
}

}  // namespace
}  // namespace amptrain::amp

// Hostile policy files (issue 9 F2, F3, F5, F6): each is one clean error,
// never a crash, a hang or unbounded memory.
namespace amptrain::amp {
namespace {

TEST(AmpPolicyHostile, DeepNestingIsRefusedBeforeParsing) {
  // F2: {"level": [[[[...]]]]} 100,000 deep crashed nlohmann's dump() (SIGSEGV).
  const std::string deep = "{\"level\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  auto p = ParsePolicyText(deep, "deep.json");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("nested more than"), std::string::npos) << p.status().message();
  auto y = ParsePolicyText("level: " + std::string(100000, '['), "deep.yaml");
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("nested more than"), std::string::npos) << y.status().message();
}

TEST(AmpPolicyHostile, HugeValuesAreNotEchoedWhole) {
  // F2: a 500 KB string was quoted whole in the error.
  auto p = ParsePolicyText("{\"fp32_ops\": \"" + std::string(500000, 'x') + "\"}", "big.json");
  ASSERT_FALSE(p.ok());
  EXPECT_LT(p.status().message().size(), 400u) << p.status().message().substr(0, 400);
  EXPECT_NE(p.status().message().find("characters"), std::string::npos);
}

TEST(AmpPolicyHostile, NonUtf8ValueInAnErrorMessage) {
  // Found by fuzz_policy (tests/fuzz): YAML does not check UTF-8, and quoting
  // such a value in the error threw nlohmann's type_error (std::terminate).
  auto p = ParsePolicyText("fp32_ops: \xff\xfe\n", "bytes.yaml");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("expected a list of strings"), std::string::npos) << p.status().message();
}

TEST(AmpPolicyHostile, YamlAliasBombIsRefused) {
  // F3: 9 anchors, each a list of 9 aliases to the one before (9^9 values in 342 bytes): std::bad_alloc.
  std::string yaml = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    yaml += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 9; ++k) yaml += std::string(k ? ", " : "") + "*a" + std::to_string(i - 1);
    yaml += "]\n";
  }
  auto p = ParsePolicyText(yaml, "bomb.yaml");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("aliases"), std::string::npos) << p.status().message();
}

TEST(AmpPolicyHostile, OnlyRegularFilesAreRead) {
  const std::string dir = ::testing::TempDir() + "amp_policy_hostile_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  // F5: a FIFO blocked forever at open; a folder was an empty policy; F6: /dev/zero was read until OOM.
  const std::string fifo = dir + "/p.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const auto& [path, what] : std::vector<std::pair<std::string, std::string>>{
           {fifo, "not a regular file"}, {dir, "a folder"}, {"/dev/zero", "not a regular file"}}) {
    auto p = LoadPolicyFile(path);
    ASSERT_FALSE(p.ok()) << path;
    EXPECT_NE(p.status().message().find(what), std::string::npos) << p.status().message();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace amptrain::amp
