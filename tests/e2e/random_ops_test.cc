// Models that draw random values (RandomUniformLike, RandomNormalLike,
// RandomUniform, RandomNormal, Bernoulli: PyTorch's exports of randn_like,
// rand_like, bernoulli and training-mode stochastic depth) import with their
// output dtype pinned, run, train under AMP with a fresh draw each step
// (reproducibly for one --seed), export what other tools load; `run` warns
// that the model draws, `eval` takes a dropout mask at its expectation and
// warns about the random ops that are no such mask.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "executor/npy.h"
#include "executor/session.h"
#include "importer/onnx_export.h"
#include "importer/onnx_import.h"
#include "ir/onnx_dtype.h"
#include "tests/e2e/cli_fixture.h"
#include "tests/e2e/e2e_util.h"
#include "tests/importer/model_builder.h"

namespace amptrain {
namespace {

namespace fs = std::filesystem;
namespace mb = importer::testing;
using ir::DType;
using ir::OpKind;

// x f32[N,1,8,8] (dynamic batch):
//   h    = Conv(x, conv.w[4,1,3,3], conv.b, pads 1)        [N,4,8,8]
//   keep = Cast(Less(RandomUniformLike(h), 0.75), float)   stochastic depth's mask, as torch exports it
//   d    = Mul(h, keep)
//   n    = Add(d, Mul(RandomNormalLike(d), 0.01))          noise injection (randn_like)
//   y    = Gemm(Flatten(n), fc.w[4,256], fc.b, transB)
// Weights are small (|w| <= 0.1) so that training starts from a sane loss.
onnx::ModelProto NoisyCnn() {
  onnx::ModelProto m = mb::NewModel(17);
  mb::AddInput(m, "x", {-1, 1, 8, 8});
  auto fill = [&](const std::string& name, const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.1f * std::sin(1.7f * static_cast<float>(i) + 0.3f);
    mb::FillFloats(m.mutable_graph()->add_initializer(), name, dims, v);
  };
  fill("conv.w", {4, 1, 3, 3});
  fill("conv.b", {4});
  fill("fc.w", {4, 256});
  fill("fc.b", {4});
  mb::FillFloats(m.mutable_graph()->add_initializer(), "survive", {}, {0.75f});
  mb::FillFloats(m.mutable_graph()->add_initializer(), "sigma", {}, {0.01f});
  auto* conv = mb::AddNode(m, "Conv", {"x", "conv.w", "conv.b"}, {"h"}, "conv");
  mb::SetInts(conv, "pads", {1, 1, 1, 1});
  mb::AddNode(m, "RandomUniformLike", {"h"}, {"u"}, "uniform");
  mb::AddNode(m, "Less", {"u", "survive"}, {"keep_b"}, "less");
  mb::SetInt(mb::AddNode(m, "Cast", {"keep_b"}, {"keep"}, "cast"), "to", onnx::TensorProto::FLOAT);
  mb::AddNode(m, "Mul", {"h", "keep"}, {"d"}, "drop");
  mb::AddNode(m, "RandomNormalLike", {"d"}, {"z"}, "normal");
  mb::AddNode(m, "Mul", {"z", "sigma"}, {"zs"}, "scale_noise");
  mb::AddNode(m, "Add", {"d", "zs"}, {"n"}, "add_noise");
  mb::SetInt(mb::AddNode(m, "Flatten", {"n"}, {"f"}, "flatten"), "axis", 1);
  mb::SetInt(mb::AddNode(m, "Gemm", {"f", "fc.w", "fc.b"}, {"y"}, "fc"), "transB", 1);
  mb::AddOutput(m, "y");
  return m;
}

// p f32[3,1000] -> Bernoulli; and RandomNormal(shape [2,500], mean 3, scale 0.5, seed 7), fp64.
onnx::ModelProto Samplers() {
  onnx::ModelProto m = mb::NewModel(17);
  mb::AddInput(m, "p", {3, 1000});
  mb::AddNode(m, "Bernoulli", {"p"}, {"b"}, "bernoulli");
  auto* normal = mb::AddNode(m, "RandomNormal", {}, {"r"}, "normal");
  mb::SetInts(normal, "shape", {2, 500});
  mb::SetFloat(normal, "mean", 3.0f);
  mb::SetFloat(normal, "scale", 0.5f);
  mb::SetFloat(normal, "seed", 7.0f);
  mb::SetInt(normal, "dtype", onnx::TensorProto::DOUBLE);
  mb::AddOutput(m, "b");
  mb::AddOutput(m, "r");
  return m;
}

TEST(RandomOps, ImportPinsTheOutputDType) {
  auto g = importer::ImportModelBytes(mb::Bytes(NoisyCnn()), "");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  for (const char* name : {"uniform", "normal"}) {
    const ir::Node* n = testing::NodeNamed(**g, name);
    ASSERT_NE(n, nullptr) << name;
    // The model's dtype, written down: a low-precision input under AMP cannot change it.
    EXPECT_EQ(n->attrs().Int("dtype", -1), onnx::TensorProto::FLOAT) << name;
    EXPECT_EQ((*g)->type(n->output(0)).dtype, DType::kFloat32) << name;
  }
}

TEST(RandomOps, SamplersRunAndInferenceRepeatsItsDraws) {
  auto g = importer::ImportModelBytes(mb::Bytes(Samplers()), "");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto session = executor::InferenceSession::Create(std::move(*g));
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  ir::Tensor p = *ir::Tensor::Zeros(DType::kFloat32, {3, 1000});
  for (int64_t i = 0; i < 1000; ++i) {
    p.data<float>()[i] = 0.0f;           // row 0: never
    p.data<float>()[1000 + i] = 1.0f;    // row 1: always
    p.data<float>()[2000 + i] = 0.5f;    // row 2: a fair coin
  }
  auto a = (*session)->Run({{"p", p}});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  const ir::Tensor &b = (*a)[0], &r = (*a)[1];
  ASSERT_EQ(b.dtype(), DType::kFloat32);
  ASSERT_EQ(r.dtype(), DType::kFloat64);
  int64_t heads = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    ASSERT_EQ(b.GetAsDouble(i), 0.0) << i;
    ASSERT_EQ(b.GetAsDouble(1000 + i), 1.0) << i;
    heads += b.GetAsDouble(2000 + i) == 1.0;
  }
  EXPECT_NEAR(heads, 500, 80);  // Binomial(1000, 0.5): sd 15.8
  double mean = 0.0;
  for (int64_t i = 0; i < 1000; ++i) mean += r.GetAsDouble(i) / 1000.0;
  EXPECT_NEAR(mean, 3.0, 0.1);  // standard error 0.016
  auto again = (*session)->Run({{"p", p}});
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE((*again)[0] == b) << "an inference run draws what the last one drew";
  EXPECT_TRUE((*again)[1] == r);
}

class RandomOpsCli : public testing::CliFixture {};

TEST_F(RandomOpsCli, TrainsUnderAmpFreshEachStepReproduciblyAndExports) {
  const std::string model = Path("noisy.onnx");
  std::ofstream(model, std::ios::binary) << mb::Bytes(NoisyCnn());
  for (const char* amp : {"O0", "O1", "O2"}) {
    SCOPED_TRACE(amp);
    auto train = [&](int seed, const std::string& out) {
      return Cli("train " + model + " --data " + testing::kSmallData + " --batch-size 32 --threads 1 --steps 12 --amp " +
                 amp + " --seed " + std::to_string(seed) + " --export " + Path(out));
    };
    testing::CliResult r = train(3, "a.onnx");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ((r.out + r.err).find("nan"), std::string::npos) << r.out << r.err;
    ASSERT_EQ(train(3, "b.onnx").code, 0);
    ASSERT_EQ(train(4, "c.onnx").code, 0);
    const std::string a = testing::ReadFile(Path("a.onnx"));
    EXPECT_EQ(a, testing::ReadFile(Path("b.onnx"))) << "one --seed, one result";
    EXPECT_NE(a, testing::ReadFile(Path("c.onnx"))) << "another --seed, another run";
    onnx::ModelProto exported;
    ASSERT_TRUE(exported.ParseFromString(a));
    int random_nodes = 0;
    for (const auto& n : exported.graph().node())
      random_nodes += n.op_type() == "RandomUniformLike" || n.op_type() == "RandomNormalLike";
    EXPECT_EQ(random_nodes, 2) << "the export keeps the model's random ops";
  }
  // run (and convert) say that the model draws in inference too; eval takes
  // the stochastic-depth mask at its expectation and names the noise only.
  testing::CliResult e = Cli("eval " + Path("a.onnx") + " --data " + testing::kSmallData + " --threads 1");
  ASSERT_EQ(e.code, 0) << e.err;
  const std::string log_text = e.out + e.err;
  EXPECT_NE(log_text.find("RandomNormalLike node"), std::string::npos) << log_text;
  EXPECT_NE(log_text.find("still draws random numbers"), std::string::npos) << log_text;
  EXPECT_EQ(log_text.find("RandomUniformLike node 'uniform'"), std::string::npos) << log_text;
  const std::string x = Path("x.npy");
  ir::Tensor ones = *ir::Tensor::Zeros(DType::kFloat32, {2, 1, 8, 8});
  for (int64_t i = 0; i < ones.num_elements(); ++i) ones.data<float>()[i] = 1.0f;
  ASSERT_TRUE(executor::WriteNpy(x, ones).ok());
  testing::CliResult r = Cli("run " + Path("a.onnx") + " --input x=" + x + " --output-dir " + Path("run_out"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE((r.out + r.err).find("the model has 2 random op(s), the first RandomUniformLike node 'uniform'"),
            std::string::npos)
      << r.out << r.err;
  if (!testing::HaveOrt()) GTEST_SKIP() << testing::PySkip("onnxruntime, onnx");
  const std::string log = Path("ort.log");
  EXPECT_EQ(testing::Sh(testing::Py() +
                        "-c 'import sys, numpy as np, onnx, onnxruntime as ort; onnx.checker.check_model(sys.argv[1], "
                        "full_check=True); s = ort.InferenceSession(sys.argv[1], providers=[\"CPUExecutionProvider\"]); "
                        "y = s.run(None, {\"x\": np.ones((5, 1, 8, 8), np.float32)})[0]; "
                        "assert y.shape == (5, 4) and np.isfinite(y).all(), y' " +
                        Path("a.onnx") + " > " + log + " 2>&1"),
            0)
      << "the onnx checker or ONNX Runtime rejected the trained export:\n"
      << testing::ReadFile(log);
}

}  // namespace
}  // namespace amptrain
