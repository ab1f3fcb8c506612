// Tests of the model builders: structure, parameter counts and names against
// PyTorch, init statistics, determinism, shape inference.
#include "models/builders.h"
#include "tests/common/python_env.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "importer/onnx_export.h"
#include "ir/verifier.h"

namespace amptrain::models {
namespace {

using ::amptrain::testing::Py;
using ::amptrain::testing::PyHas;
using ::amptrain::testing::PySkip;

namespace fs = std::filesystem;

std::unique_ptr<ir::Graph> Build(const SimpleCnnConfig& c) {
  auto g = BuildSimpleCnn(c);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? std::move(g).value() : nullptr;
}

std::unique_ptr<ir::Graph> Build(const ResNetConfig& c) {
  auto g = BuildResNet(c);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? std::move(g).value() : nullptr;
}

bool IsRunningStat(const std::string& name) {
  return name.ends_with(".running_mean") || name.ends_with(".running_var");
}

// Trainable parameters, as sum(p.numel() for p in model.parameters()).
int64_t CountParams(const ir::Graph& g) {
  int64_t n = 0;
  for (ir::Value v : g.initializers())
    if (!IsRunningStat(g.name(v))) n += g.ConstantValue(v)->num_elements();
  return n;
}

const ir::Tensor& Init(const ir::Graph& g, const std::string& name) {
  ir::Value v = g.FindValue(name);
  EXPECT_TRUE(v.valid()) << name;
  return *g.ConstantValue(v);
}

std::vector<const ir::Node*> NodesOf(const ir::Graph& g, ir::OpKind op) {
  std::vector<const ir::Node*> out;
  for (const ir::Node* n : g.nodes())
    if (n->op() == op) out.push_back(n);
  return out;
}

// "<name> <dim> <dim>..." per initializer, in graph order: the state_dict dump format.
std::vector<std::string> InitializerLines(const ir::Graph& g) {
  std::vector<std::string> lines;
  for (ir::Value v : g.initializers()) {
    std::ostringstream line;
    line << g.name(v);
    for (int64_t d : g.ConstantValue(v)->dims()) line << ' ' << d;
    lines.push_back(line.str());
  }
  return lines;
}

// "<node> <op> <in,in> <out0> <attr=value>..." per compute node in creation
// order (a topological order: the builders add nodes in forward order).
std::vector<std::string> NodeLines(const ir::Graph& g) {
  std::vector<std::string> lines;
  for (const ir::Node* n : g.nodes()) {
    if (n->op() == ir::OpKind::kInput || n->op() == ir::OpKind::kInitializer) continue;
    std::ostringstream line;
    line << n->name() << ' ' << n->op_name() << ' ';
    for (size_t i = 0; i < n->num_inputs(); ++i) line << (i ? "," : "") << g.name(n->input(i));
    line << ' ' << n->output_info(0).name;
    for (const auto& [name, value] : n->attrs().all()) {
      if (name == "value") continue;
      line << ' ' << name << '=';
      if (auto* i = std::get_if<int64_t>(&value)) line << *i;
      if (auto* f = std::get_if<float>(&value)) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.6g", static_cast<double>(*f));
        line << buf;
      }
      if (auto* v = std::get_if<std::vector<int64_t>>(&value))
        for (size_t k = 0; k < v->size(); ++k) line << (k ? "," : "") << (*v)[k];
    }
    lines.push_back(line.str());
  }
  return lines;
}

// Lines "#tag" then entries, as the dump scripts print them.
std::map<std::string, std::vector<std::string>> ReadTagged(const fs::path& file) {
  std::map<std::string, std::vector<std::string>> out;
  std::ifstream in(file);
  std::string line, tag;
  while (std::getline(in, line)) {
    if (line.starts_with("#")) tag = line.substr(1);
    else out[tag].push_back(line);
  }
  return out;
}

fs::path TempDir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / (name + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

TEST(SimpleCnn, VerifiesWithTorchLayout) {
  auto g = Build(SimpleCnnConfig{});
  ASSERT_TRUE(g);
  ASSERT_TRUE(ir::Verify(*g).ok()) << ir::Verify(*g).ToString();
  // conv 1*64*9+64, bn 2*64, conv 64*128*9+128, bn 2*128, fc 6272*512+512, fc 512*10+10.
  EXPECT_EQ(CountParams(*g), 3291786);
  EXPECT_EQ(g->info().opset, 17);
  EXPECT_EQ(g->info().ir_version, 8);
  EXPECT_EQ(g->info().producer_name, "amptrain");
  ASSERT_EQ(g->inputs().size(), 1u);
  EXPECT_EQ(g->name(g->inputs()[0]), "input_0");
  EXPECT_EQ(g->type(g->inputs()[0]).ToString(), "float32[batch,1,28,28]");
  ASSERT_EQ(g->outputs().size(), 1u);
  EXPECT_EQ(g->name(g->outputs()[0]), "output_0");
  EXPECT_EQ(g->type(g->outputs()[0]).ToString(), "float32[batch,10]");
  EXPECT_TRUE(g->FindValue("classifier.1.weight").valid());
  EXPECT_EQ(Init(*g, "classifier.1.weight").dims(), (std::vector<int64_t>{512, 6272}));

  auto gemms = NodesOf(*g, ir::OpKind::kGemm);
  ASSERT_EQ(gemms.size(), 2u);
  EXPECT_EQ(gemms[0]->name(), "/classifier/classifier.1/Gemm");
  EXPECT_EQ(gemms[0]->attrs().Int("transB", 0), 1);
  EXPECT_EQ(NodesOf(*g, ir::OpKind::kConv)[0]->attrs().Ints("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
}

TEST(SimpleCnn, TrainingModeHasBatchStatsAndDropout) {
  auto g = Build(SimpleCnnConfig{});
  ASSERT_TRUE(g);
  for (const ir::Node* bn : NodesOf(*g, ir::OpKind::kBatchNormalization)) {
    EXPECT_EQ(bn->num_outputs(), 3u) << bn->name();
    EXPECT_EQ(bn->attrs().Int("training_mode", 0), 1);
    EXPECT_FLOAT_EQ(bn->attrs().Float("momentum", 0), 0.9f);
    EXPECT_FLOAT_EQ(bn->attrs().Float("epsilon", 0), 1e-5f);
  }
  auto drops = NodesOf(*g, ir::OpKind::kDropout);
  ASSERT_EQ(drops.size(), 1u);
  ASSERT_EQ(drops[0]->num_inputs(), 3u);
  const ir::Tensor* ratio = g->ConstantValue(drops[0]->input(1));
  const ir::Tensor* mode = g->ConstantValue(drops[0]->input(2));
  ASSERT_TRUE(ratio && mode);
  EXPECT_EQ(ratio->dtype(), ir::DType::kFloat32);
  EXPECT_EQ(ratio->GetAsDouble(0), 0.5);
  EXPECT_EQ(mode->dtype(), ir::DType::kBool);
  EXPECT_EQ(mode->GetAsInt64(0), 1);
  // Dropout's scalars are Constant nodes, not initializers: initializers stay the state_dict.
  EXPECT_EQ(g->initializers().size(), 16u);
}

TEST(SimpleCnn, EvalModeHasPlainBatchNormAndNoDropout) {
  SimpleCnnConfig c;
  c.training_mode = false;
  auto g = Build(c);
  ASSERT_TRUE(g);
  ASSERT_TRUE(ir::Verify(*g).ok());
  for (const ir::Node* bn : NodesOf(*g, ir::OpKind::kBatchNormalization)) {
    EXPECT_EQ(bn->num_outputs(), 1u);
    EXPECT_EQ(bn->attrs().Int("training_mode", -1), 0);
  }
  EXPECT_TRUE(NodesOf(*g, ir::OpKind::kDropout).empty());
  EXPECT_TRUE(NodesOf(*g, ir::OpKind::kConstant).empty());
}

TEST(SimpleCnn, RejectsBadConfigs) {
  SimpleCnnConfig c;
  c.height = 3;
  auto g = BuildSimpleCnn(c);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("simplecnn"), std::string::npos);
  c = SimpleCnnConfig{};
  c.num_classes = 0;
  EXPECT_FALSE(BuildSimpleCnn(c).ok());
  c = SimpleCnnConfig{};
  c.opset = 11;
  EXPECT_EQ(BuildSimpleCnn(c).status().code(), StatusCode::kUnimplemented);
}

TEST(ResNet, ParameterCountsMatchTorchvision) {
  const std::map<int, int64_t> expected = {{18, 11689512}, {34, 21797672}, {50, 25557032}};
  for (auto [depth, count] : expected) {
    ResNetConfig c;
    c.depth = depth;
    auto g = Build(c);
    ASSERT_TRUE(g);
    ASSERT_TRUE(ir::Verify(*g).ok()) << depth << ": " << ir::Verify(*g).ToString();
    EXPECT_EQ(CountParams(*g), count) << "resnet" << depth;
    EXPECT_EQ(g->type(g->outputs()[0]).ToString(), "float32[batch,1000]");
    EXPECT_EQ(g->info().graph_name, "resnet" + std::to_string(depth));
  }
}

TEST(ResNet, Resnet50LayoutIsTorchvisionV15) {
  auto g = Build(ResNetConfig{});
  ASSERT_TRUE(g);
  // v1.5: the stride-2 of the first block of layer2 sits on its 3x3 conv2, not conv1.
  auto consumer = [&](const std::string& param) { return g->node(g->uses(g->FindValue(param))[0].node); };
  const ir::Node* conv1 = consumer("layer2.0.conv1.weight");
  const ir::Node* conv2 = consumer("layer2.0.conv2.weight");
  EXPECT_EQ(conv1->name(), "/layer2/layer2.0/conv1/Conv");
  EXPECT_EQ(conv1->attrs().Ints("strides"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(conv2->attrs().Ints("strides"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Init(*g, "layer1.0.downsample.0.weight").dims(), (std::vector<int64_t>{256, 64, 1, 1}));
  EXPECT_EQ(Init(*g, "fc.weight").dims(), (std::vector<int64_t>{1000, 2048}));
  EXPECT_EQ(NodesOf(*g, ir::OpKind::kMaxPool).size(), 1u);
  EXPECT_EQ(NodesOf(*g, ir::OpKind::kAdd).size(), 16u);
  for (const ir::Node* bn : NodesOf(*g, ir::OpKind::kBatchNormalization)) EXPECT_EQ(bn->num_outputs(), 1u);
}

TEST(ResNet, SmallInputStem) {
  ResNetConfig c;
  c.depth = 18;
  c.small_input = true;
  c.num_classes = 10;
  c.height = c.width = 32;
  c.training_mode = true;
  auto g = Build(c);
  ASSERT_TRUE(g);
  ASSERT_TRUE(ir::Verify(*g).ok());
  EXPECT_EQ(Init(*g, "conv1.weight").dims(), (std::vector<int64_t>{64, 3, 3, 3}));
  EXPECT_TRUE(NodesOf(*g, ir::OpKind::kMaxPool).empty());
  EXPECT_EQ(g->type(g->inputs()[0]).ToString(), "float32[batch,3,32,32]");
  for (const ir::Node* bn : NodesOf(*g, ir::OpKind::kBatchNormalization)) EXPECT_EQ(bn->num_outputs(), 3u);
}

TEST(ResNet, RejectsUnknownDepth) {
  ResNetConfig c;
  c.depth = 20;
  auto g = BuildResNet(c);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("depth 20"), std::string::npos);
}

// Population statistics of the init: torchvision's kaiming_normal_(fan_out),
// PyTorch's default uniform for Linear/Conv, BN constants.
TEST(Init, FollowsPyTorchDefaults) {
  ResNetConfig rc;
  rc.depth = 18;
  auto r = Build(rc);
  ASSERT_TRUE(r);
  const ir::Tensor& w = Init(*r, "layer3.0.conv1.weight");  // [256,128,3,3], fan_out 256*9
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < w.num_elements(); ++i) {
    sum += w.data<float>()[i];
    sq += double(w.data<float>()[i]) * w.data<float>()[i];
  }
  double n = double(w.num_elements()), mean = sum / n, std = std::sqrt(sq / n - mean * mean);
  EXPECT_NEAR(mean, 0.0, 1e-3);
  EXPECT_NEAR(std, std::sqrt(2.0 / (256 * 9)), 0.01 * std::sqrt(2.0 / (256 * 9)));

  auto within = [](const ir::Tensor& t, double bound) {
    float lo = 0, hi = 0;
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      lo = std::min(lo, t.data<float>()[i]);
      hi = std::max(hi, t.data<float>()[i]);
    }
    EXPECT_LE(hi, bound);
    EXPECT_GE(lo, -bound);
    EXPECT_GT(hi, 0.8 * bound);  // fills the range (>= 128 samples)
    EXPECT_LT(lo, -0.8 * bound);
  };
  within(Init(*r, "fc.weight"), 1.0 / std::sqrt(512.0));
  within(Init(*r, "fc.bias"), 1.0 / std::sqrt(512.0));
  auto s = Build(SimpleCnnConfig{});
  ASSERT_TRUE(s);
  within(Init(*s, "features.0.weight"), 1.0 / 3.0);
  within(Init(*s, "features.4.bias"), 1.0 / std::sqrt(64.0 * 9));
  within(Init(*s, "classifier.1.weight"), 1.0 / std::sqrt(6272.0));
  const ir::Tensor& var = Init(*s, "features.1.running_var");
  const ir::Tensor& bias = Init(*s, "features.1.bias");
  for (int64_t i = 0; i < 64; ++i) {
    EXPECT_EQ(var.data<float>()[i], 1.0f);
    EXPECT_EQ(bias.data<float>()[i], 0.0f);
  }
}

TEST(Init, DeterministicPerSeed) {
  SimpleCnnConfig c;
  auto a = Build(c), b = Build(c);
  c.seed = 1;
  auto d = Build(c);
  ASSERT_TRUE(a && b && d);
  ASSERT_EQ(a->initializers().size(), b->initializers().size());
  for (size_t i = 0; i < a->initializers().size(); ++i) {
    const std::string& name = a->name(a->initializers()[i]);
    const ir::Tensor& x = *a->ConstantValue(a->initializers()[i]);
    EXPECT_TRUE(x == Init(*b, name)) << name;
    bool random = name.starts_with("features.0") || name.starts_with("features.4") || name.starts_with("classifier");
    EXPECT_EQ(x == Init(*d, name), !random) << name;
  }
}

// Verifies the graph's shape rules agree with the builder's declared output.
TEST(ShapeInference, OutputsAreBatchByClasses) {
  SimpleCnnConfig sc;
  sc.in_channels = 3;
  sc.height = sc.width = 32;
  ResNetConfig rc;
  rc.depth = 18;
  rc.height = rc.width = 64;
  std::unique_ptr<ir::Graph> graphs[] = {Build(sc), Build(rc)};
  for (auto& g : graphs) {
    ASSERT_TRUE(g);
    std::string declared = g->type(g->outputs()[0]).ToString();
    Status s = g->InferShapes();
    if (!s.ok() && s.message().find("shape rule pending") != std::string::npos)
      GTEST_SKIP() << "shape rules not all written yet: " << s.message();
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(g->type(g->outputs()[0]).ToString(), declared);
  }
}

// Initializer names, order and shapes equal PyTorch's state_dict (minus
// num_batches_tracked), dumped by Debian's torch + torchvision.
TEST(TorchParity, InitializersEqualStateDict) {
  if (!PyHas("torchvision"))
    GTEST_SKIP() << PySkip("torchvision");
  fs::path dir = TempDir("amptrain_models_keys");
  {
    std::ofstream py(dir / "dump.py");
    py << "import sys\nimport torch.nn as nn\nimport torchvision\n"
       << "sys.path.insert(0, '" << AMPTRAIN_SOURCE_DIR << "/models/torch')\n"
       << "import export_models as E\n"
       << "def dump(tag, m):\n"
       << "    print('#' + tag)\n"
       << "    for k, v in m.state_dict().items():\n"
       << "        if not k.endswith('num_batches_tracked'): print(k, *v.shape)\n"
       << "dump('simplecnn', E.SimpleCNN())\n"
       << "dump('simplecnn_3_32_100', E.SimpleCNN(3, 32, 100))\n"
       << "dump('resnet18', torchvision.models.resnet18())\n"
       << "dump('resnet50', torchvision.models.resnet50())\n"
       << "m = torchvision.models.resnet34(num_classes=10)\n"
       << "m.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)\n"
       << "m.maxpool = nn.Identity()\n"
       << "dump('resnet34_small', m)\n";
  }
  std::string cmd = Py() + (dir / "dump.py").string() + " > " + (dir / "keys.txt").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto torch = ReadTagged(dir / "keys.txt");
  fs::remove_all(dir);

  SimpleCnnConfig s2;
  s2.in_channels = 3;
  s2.height = s2.width = 32;
  s2.num_classes = 100;
  ResNetConfig r18, r50, r34;
  r18.depth = 18;
  r34.depth = 34;
  r34.small_input = true;
  r34.num_classes = 10;
  std::vector<std::pair<std::string, std::unique_ptr<ir::Graph>>> ours;
  ours.emplace_back("simplecnn", Build(SimpleCnnConfig{}));
  ours.emplace_back("simplecnn_3_32_100", Build(s2));
  ours.emplace_back("resnet18", Build(r18));
  ours.emplace_back("resnet50", Build(r50));
  ours.emplace_back("resnet34_small", Build(r34));
  for (auto& [name, g] : ours) {
    ASSERT_TRUE(g) << name;
    ASSERT_FALSE(torch[name].empty()) << name;
    EXPECT_EQ(InitializerLines(*g), torch[name]) << name;
  }
}

// Node names, op types, wiring and attributes equal torch.onnx.export's
// (torch 1.13, opset 17). Only the first output is compared: torch's Dropout
// also writes its mask, which the builders leave out.
TEST(TorchParity, NodesEqualTorchExport) {
  if (!PyHas("torchvision"))
    GTEST_SKIP() << PySkip("torchvision");
  if (!PyHas("onnx")) GTEST_SKIP() << PySkip("onnx");
  fs::path dir = TempDir("amptrain_models_nodes");
  {
    std::ofstream py(dir / "export.py");
    py << "import sys\nimport torch\nimport torchvision\n"
       << "sys.path.insert(0, '" << AMPTRAIN_SOURCE_DIR << "/models/torch')\n"
       << "import export_models as E\n"
       << "out = sys.argv[1]\n"
       << "E.export(E.SimpleCNN(), torch.randn(2, 1, 28, 28), out + '/simplecnn.onnx', 17, 'train')\n"
       << "E.export(torchvision.models.resnet18(), torch.randn(2, 3, 64, 64), out + '/resnet18.onnx', 17, 'eval')\n"
       << "E.export(torchvision.models.resnet50(), torch.randn(2, 3, 64, 64), out + '/resnet50.onnx', 17, 'train')\n";
    std::ofstream dump(dir / "dump.py");
    dump << "import sys\nimport onnx\n"
         << "def fmt(a):\n"
         << "    v = onnx.helper.get_attribute_value(a)\n"
         << "    if isinstance(v, float): return '%.6g' % v\n"
         << "    if isinstance(v, list): return ','.join(str(i) for i in v)\n"
         << "    return str(v)\n"
         << "for tag in ('simplecnn', 'resnet18', 'resnet50'):\n"
         << "    print('#' + tag)\n"
         << "    for n in onnx.load(sys.argv[1] + '/' + tag + '.onnx').graph.node:\n"
         << "        attrs = [a.name + '=' + fmt(a) for a in sorted(n.attribute, key=lambda a: a.name) if a.name != 'value']\n"
         << "        print(' '.join([n.name, n.op_type, ','.join(n.input), n.output[0]] + attrs))\n";
  }
  std::string d = dir.string();
  std::string cmd = Py() + d + "/export.py " + d + " && " + Py() + d + "/dump.py " + d + " > " + d +
                    "/nodes.txt";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto torch = ReadTagged(dir / "nodes.txt");
  fs::remove_all(dir);

  ResNetConfig r18, r50;
  r18.depth = 18;
  r18.height = r18.width = r50.height = r50.width = 64;
  r50.training_mode = true;
  std::vector<std::pair<std::string, std::unique_ptr<ir::Graph>>> ours;
  ours.emplace_back("simplecnn", Build(SimpleCnnConfig{}));
  ours.emplace_back("resnet18", Build(r18));
  ours.emplace_back("resnet50", Build(r50));
  for (auto& [name, g] : ours) {
    ASSERT_TRUE(g) << name;
    ASSERT_FALSE(torch[name].empty()) << name;
    EXPECT_EQ(NodeLines(*g), torch[name]) << name;
  }
}

// The exported models pass onnx.checker (full_check) and run in ONNX Runtime
// on random inputs, in training and eval form and at an older opset.
TEST(OnnxRuntime, ExportedModelsLoadAndRun) {
  if (!PyHas("onnxruntime"))
    GTEST_SKIP() << PySkip("onnxruntime");
  fs::path dir = TempDir("amptrain_models_ort");
  SimpleCnnConfig train, eval13;
  eval13.training_mode = false;
  eval13.opset = 13;
  ResNetConfig r18;
  r18.depth = 18;
  r18.small_input = true;
  r18.num_classes = 10;
  r18.height = r18.width = 32;
  ResNetConfig r50 = r18;
  r50.depth = 50;
  r50.training_mode = true;
  std::vector<std::pair<std::string, std::unique_ptr<ir::Graph>>> cases;
  cases.emplace_back("simplecnn_train", Build(train));
  cases.emplace_back("simplecnn_eval_op13", Build(eval13));
  cases.emplace_back("resnet18_eval", Build(r18));
  cases.emplace_back("resnet50_train", Build(r50));
  for (auto& [name, g] : cases) {
    ASSERT_TRUE(g) << name;
    fs::path model = dir / (name + ".onnx");
    Status s = importer::ExportModelFile(*g, model.string());
    ASSERT_TRUE(s.ok()) << name << ": " << s.ToString();
    std::string cmd = StrCat(Py(), AMPTRAIN_SOURCE_DIR, "/tests/tools/ort_run.py ", model.string(),
                             " --check --batch 2 --random-inputs ", (dir / (name + "_in")).string(),
                             " --output-dir ", (dir / (name + "_out")).string());
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    EXPECT_TRUE(fs::exists(dir / (name + "_out") / "output_0.npy")) << name;
  }
  fs::remove_all(dir);
}

// The architecture computes what PyTorch's does: our exported weights loaded
// into the PyTorch module by state_dict name give the same eval-mode output
// as ONNX Runtime on our model (fp32, tolerance 1e-4 of the output's scale:
// the two convolution implementations sum in different orders).
TEST(TorchParity, ForwardMatchesTorchWithOurWeights) {
  if (!PyHas("torchvision"))
    GTEST_SKIP() << PySkip("torchvision");
  if (!PyHas("onnxruntime"))
    GTEST_SKIP() << PySkip("onnxruntime");
  fs::path dir = TempDir("amptrain_models_fwd");
  {
    std::ofstream dump(dir / "weights.py");
    dump << "import sys\nimport numpy as np\nimport onnx\nfrom onnx import numpy_helper\n"
         << "m = onnx.load(sys.argv[1])\n"
         << "np.savez(sys.argv[2], **{t.name: numpy_helper.to_array(t) for t in m.graph.initializer})\n";
    std::ofstream run(dir / "torch_run.py");
    run << "import sys\nimport numpy as np\nimport torch\nimport torchvision\n"
        << "sys.path.insert(0, '" << AMPTRAIN_SOURCE_DIR << "/models/torch')\n"
        << "import export_models as E\n"
        << "ok = True\n"
        << "for name in sys.argv[2:]:\n"
        << "    d = sys.argv[1] + '/' + name\n"
        << "    model = E.SimpleCNN() if name == 'simplecnn' else torchvision.models.resnet18()\n"
        << "    w = np.load(d + '.npz')\n"
        << "    r = model.load_state_dict({k: torch.from_numpy(w[k]) for k in w.files}, strict=False)\n"
        << "    assert not r.unexpected_keys and all(k.endswith('num_batches_tracked') for k in r.missing_keys), r\n"
        << "    model.eval()\n"
        << "    with torch.no_grad(): out = model(torch.from_numpy(np.load(d + '_in/input_0.npy'))).numpy()\n"
        << "    ref = np.load(d + '_out/output_0.npy')\n"
        << "    err = np.abs(out - ref).max() / max(1.0, np.abs(ref).max())\n"
        << "    print(name, 'max scaled error', err)\n"
        << "    ok = ok and err < 1e-4\n"
        << "sys.exit(0 if ok else 1)\n";
  }
  SimpleCnnConfig sc;
  sc.training_mode = false;
  ResNetConfig rc;
  rc.depth = 18;
  rc.height = rc.width = 64;
  std::vector<std::pair<std::string, std::unique_ptr<ir::Graph>>> cases;
  cases.emplace_back("simplecnn", Build(sc));
  cases.emplace_back("resnet18", Build(rc));
  std::string names;
  for (auto& [name, g] : cases) {
    ASSERT_TRUE(g) << name;
    std::string d = (dir / name).string();
    ASSERT_TRUE(importer::ExportModelFile(*g, d + ".onnx").ok()) << name;
    std::string cmd = StrCat(Py(), AMPTRAIN_SOURCE_DIR, "/tests/tools/ort_run.py ", d, ".onnx --batch 2",
                             " --random-inputs ", d, "_in --output-dir ", d, "_out && ", Py(), dir.string(),
                             "/weights.py ", d, ".onnx ", d, ".npz");
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    names += " " + name;
  }
  std::string cmd = StrCat(Py(), dir.string(), "/torch_run.py ", dir.string(), names);
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace amptrain::models
