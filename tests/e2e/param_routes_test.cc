// No parameter is silently frozen (issue 10, item 2): `amptrain grad` gives
// every float initializer of a model a gradient whatever route it takes to
// the loss (tests/common/param_routes.h: Transpose(w) -> MatMul, Gather with
// constant indices, Split/Slice, Reshape/Unsqueeze/Squeeze/Cast, Mul/Div by a
// constant, Concat, Expand of a class token, tied embeddings), and each
// gradient matches central differences of the same model in float64.
// Import-time constant folding used to turn these weights into constants,
// so they got no gradient (or, tied, half of one). `--freeze` leaves a
// parameter bitwise unchanged through `train` while the others move, and the
// log names every initializer left untrained with the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "autodiff/loss.h"
#include "executor/npy.h"
#include "executor/session.h"
#include "executor/train/train_graph.h"
#include "importer/onnx_export.h"
#include "importer/onnx_import.h"
#include "tests/common/param_routes.h"
#include "tests/e2e/cli_fixture.h"

namespace amptrain {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;

// d(mean cross-entropy)/d(every float initializer) of the float64 model by
// central differences (eps 1e-6, TESTING.md), reference kernels.
std::map<std::string, ir::Tensor> FiniteDifferences(const std::string& route) {
  std::unique_ptr<ir::Graph> g = testing::BuildRoute(route, ir::DType::kFloat64);
  auto head = autodiff::AttachCrossEntropy(*g, g->outputs()[0]);
  EXPECT_TRUE(head.ok()) << head.status().ToString();
  std::map<std::string, ir::Tensor> feeds = testing::RouteFeeds(*g, ir::DType::kFloat64);
  std::vector<std::string> params;
  for (ir::Value v : std::vector<ir::Value>(g->initializers()))
    if (ir::IsFloat(g->type(v).dtype)) {
      params.push_back(g->name(v));
      feeds[g->name(v)] = g->ConstantValue(v)->Clone();
    }
  for (const std::string& p : params) EXPECT_TRUE(executor::train::InitializerToInput(*g, p).ok()) << p;
  const std::string loss = g->name(head->loss);
  executor::SessionOptions o;
  o.kernel_impl = "reference";
  o.threads = 1;
  o.training = true;
  auto session = executor::InferenceSession::Create(std::move(g), o);
  EXPECT_TRUE(session.ok()) << session.status().ToString();
  if (!session.ok()) return {};
  size_t loss_index = 0;
  for (size_t k = 0; k < (*session)->graph().outputs().size(); ++k)
    if ((*session)->graph().name((*session)->graph().outputs()[k]) == loss) loss_index = k;
  auto loss_at = [&](const std::map<std::string, ir::Tensor>& f) {
    auto out = (*session)->Run(f);
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    return out.ok() ? (*out)[loss_index].GetAsDouble(0) : 0.0;
  };
  constexpr double kEps = 1e-6;
  std::map<std::string, ir::Tensor> grads;
  for (const std::string& p : params) {
    const ir::Tensor base = feeds.at(p);
    ir::Tensor grad = *ir::Tensor::Zeros(ir::DType::kFloat64, base.dims());
    for (int64_t e = 0; e < base.num_elements(); ++e) {
      std::map<std::string, ir::Tensor> f = feeds;
      ir::Tensor x = base.Clone();
      f[p] = x;
      x.data<double>()[e] = base.data<double>()[e] + kEps;
      const double up = loss_at(f);
      x.data<double>()[e] = base.data<double>()[e] - kEps;
      grad.data<double>()[e] = (up - loss_at(f)) / (2 * kEps);
    }
    grads[p] = std::move(grad);
  }
  return grads;
}

class ParamRoutes : public testing::CliFixture {
 protected:
  // Writes the float32 model of `route` and its inputs; returns the grad flags.
  std::string WriteRoute(const std::string& route, std::unique_ptr<ir::Graph>* model = nullptr) {
    std::unique_ptr<ir::Graph> g = testing::BuildRoute(route, ir::DType::kFloat32);
    EXPECT_TRUE(importer::ExportModelFile(*g, Path(route + ".onnx")).ok());
    std::string flags = Path(route + ".onnx");
    for (const auto& [name, t] : testing::RouteFeeds(*g, ir::DType::kFloat32)) {
      EXPECT_TRUE(executor::WriteNpy(Path(name + ".npy"), t).ok());
      flags += name == "labels" ? " --labels " + Path("labels.npy") : " --input " + name + "=" + Path(name + ".npy");
    }
    if (model) *model = std::move(g);
    return flags;
  }
  void ExpectEveryGradient(const std::string& route);
};

// `grad` writes one gradient per float initializer of the route's model, each
// equal to central differences of its float64 copy.
void ParamRoutes::ExpectEveryGradient(const std::string& route) {
  std::unique_ptr<ir::Graph> model;
  const std::string out = Path(route + "_grads");
  CliResult r = Cli("grad " + WriteRoute(route, &model) + " --output-dir " + out + " --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  std::set<std::string> expected, written;
  for (ir::Value v : model->initializers())
    if (ir::IsFloat(model->type(v).dtype)) expected.insert(model->name(v) + ".npy");
  for (const auto& e : fs::directory_iterator(fs::path(out) / "grads")) written.insert(e.path().filename().string());
  EXPECT_EQ(written, expected);
  for (const char* reason : {"frozen by", "does not depend", "structurally zero"})
    EXPECT_EQ(r.out.find(reason), std::string::npos) << r.out;

  // Tolerance: float32 gradients of a model this small carry rounding
  // errors near 1e-7; TESTING.md's 1e-5 + 1e-3 |numeric| leaves room.
  for (const auto& [name, numeric] : FiniteDifferences(route)) {
    auto ours = executor::ReadNpy((fs::path(out) / "grads" / (name + ".npy")).string());
    if (!ours.ok()) continue;  // reported above
    ASSERT_EQ(ours->dims(), numeric.dims()) << name;
    bool all_zero = true;
    for (int64_t e = 0; e < numeric.num_elements(); ++e) {
      const double a = ours->GetAsDouble(e), n = numeric.GetAsDouble(e);
      all_zero = all_zero && a == 0.0;
      EXPECT_LE(std::abs(a - n), 1e-5 + 1e-3 * std::abs(n)) << name << "[" << e << "]: ours " << a << ", numeric " << n;
    }
    EXPECT_FALSE(all_zero) << name << ": the gradient is all zeros";
  }
}

// One test per route (tests/common/param_routes.h).
TEST_F(ParamRoutes, TransposedWeightIntoMatMul) { ExpectEveryGradient("transpose"); }
TEST_F(ParamRoutes, PositionTableGatheredWithConstantIndices) { ExpectEveryGradient("gather"); }
TEST_F(ParamRoutes, SplitAndSlicedPackedWeights) { ExpectEveryGradient("split_slice"); }
TEST_F(ParamRoutes, ReshapedUnsqueezedSqueezedAndCastWeights) { ExpectEveryGradient("reshape_cast"); }
TEST_F(ParamRoutes, WeightsScaledByConstants) { ExpectEveryGradient("scaled"); }
TEST_F(ParamRoutes, ConcatenatedWeights) { ExpectEveryGradient("concat"); }
TEST_F(ParamRoutes, ExpandedClassToken) { ExpectEveryGradient("expand_cls"); }
TEST_F(ParamRoutes, TiedEmbeddingGetsBothContributions) { ExpectEveryGradient("tied"); }

// The model `train` sees: 1x8x8 images, 4 classes, Flatten -> MatMul(x, Transpose(w)) + b.
std::unique_ptr<ir::Graph> ImageRoute() {
  testing::RouteBuilder r(ir::DType::kFloat32);
  ir::Value x = r.Input("image", ir::Shape({ir::Dim::Symbolic("N"), ir::Dim::Static(1), ir::Dim::Static(8),
                                             ir::Dim::Static(8)}));
  ir::Value flat = r.Op(ir::OpKind::kFlatten, {x}, testing::RouteBuilder::Attr("axis", int64_t{1}));
  return r.Finish(r.Add(r.MatMul(flat, r.T(r.Param("w", {4, 64}))), r.Param("b", {4})));
}

std::map<std::string, ir::Tensor> Initializers(const std::string& path) {
  auto g = importer::ImportModelFile(path);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  std::map<std::string, ir::Tensor> values;
  if (g.ok())
    for (ir::Value v : (*g)->initializers()) values[(*g)->name(v)] = *(*g)->ConstantValue(v);
  return values;
}

TEST_F(ParamRoutes, FreezeKeepsAParameterBitwiseWhileTheOthersTrain) {
  ASSERT_TRUE(importer::ExportModelFile(*ImageRoute(), Path("route.onnx")).ok());
  const auto before = Initializers(Path("route.onnx"));
  const std::string train = "train " + Path("route.onnx") + " --data " + testing::kSmallData +
                            " --batch-size 4 --steps 3 --threads 1 --optimizer sgd --lr 0.1 --export ";
  CliResult r = Cli(train + Path("frozen_b.onnx") + " --freeze b");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("parameters: 1 trained (256 elements), 1 frozen (4 elements)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not trained (frozen by --freeze): b"), std::string::npos) << r.out;
  auto after = Initializers(Path("frozen_b.onnx"));
  ASSERT_TRUE(after.count("w") && after.count("b"));
  EXPECT_TRUE(after.at("b") == before.at("b")) << "the frozen b changed";
  EXPECT_FALSE(after.at("w") == before.at("w")) << "w (read through Transpose) did not train";

  // A regex, comma-separated with an exact name: both frozen, nothing left to train.
  ExpectOneLineError(train + Path("none.onnx") + " --freeze 're:w.*',b", "besides the 2 frozen ones");
  ExpectOneLineError(train + Path("none.onnx") + " --freeze wieght", "freeze pattern 'wieght'");
  ExpectOneLineError(train + Path("none.onnx") + " --freeze 're:bias.*'", "matches no parameter");

  // Without --freeze both train.
  r = Cli(train + Path("all.onnx"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("parameters: 2 trained (260 elements), 0 frozen"), std::string::npos) << r.out;
  after = Initializers(Path("all.onnx"));
  EXPECT_FALSE(after.at("b") == before.at("b"));
  EXPECT_FALSE(after.at("w") == before.at("w"));
}

// One line per reason, naming every initializer that gets no gradient.
TEST_F(ParamRoutes, TheLogListsEveryUntrainedInitializerWithItsReason) {
  testing::RouteBuilder r(ir::DType::kFloat32);
  ir::Value x = r.Input("x", {4, 2, 3});
  ir::Value pos = r.Op(ir::OpKind::kGather, {r.Param("pos", {6, 3}), r.Ints("positions", {0, 1})});
  ir::Value h = r.Op(ir::OpKind::kFlatten, {r.Add(x, pos)}, testing::RouteBuilder::Attr("axis", int64_t{1}));
  // Pad's constant_value is no differentiable slot; the pads come from a Constant node.
  ir::Value pads = r.Op(ir::OpKind::kConstant, {}, testing::RouteBuilder::Attr("value", ir::Tensor::Int64s({0, 0, 0, 1}, {4})));
  ir::Value padded = r.Op(ir::OpKind::kPad, {h, pads, r.Param("pad_value", {})});
  r.Param("spare", {2, 2});  // used by nothing
  std::unique_ptr<ir::Graph> g = r.Finish(r.Add(r.MatMul(padded, r.Param("head", {7, 3})), r.Param("b", {3})));
  ASSERT_TRUE(importer::ExportModelFile(*g, Path("m.onnx")).ok());
  for (const auto& [name, t] : testing::RouteFeeds(*g, ir::DType::kFloat32))
    ASSERT_TRUE(executor::WriteNpy(Path(name + ".npy"), t).ok());
  CliResult c = Cli("grad " + Path("m.onnx") + " --input x=" + Path("x.npy") + " --labels " + Path("labels.npy") +
                    " --output-dir " + Path("out") + " --threads 1 --freeze b");
  ASSERT_EQ(c.code, 0) << c.err;
  for (const char* line :
       {"parameters: 2 trained (39 elements), 1 frozen (3 elements), 0 BN running statistics (0 elements), 3 other "
        "initializers not trained",
        "not trained (frozen by --freeze): b\n",
        "not trained (integer or bool initializers are not parameters): positions\n",
        "not trained (the loss depends on it only through inputs without a gradient, so its gradient is "
        "structurally zero): pad_value\n",
        "not trained (the loss does not depend on it): spare\n"})
    EXPECT_NE(c.out.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << c.out;
  std::set<std::string> written;
  for (const auto& e : fs::directory_iterator(Path("out/grads"))) written.insert(e.path().filename().string());
  EXPECT_EQ(written, (std::set<std::string>{"head.npy", "pos.npy"}));
}

}  // namespace
}  // namespace amptrain
