// Optimizers against PyTorch 1.13 (when the venv has torch), LR
// schedules against hand values, global-norm clipping.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <unistd.h>

#include "executor/npy.h"
#include "executor/train/clip.h"
#include "executor/train/lr_schedule.h"
#include "executor/train/optimizer.h"
#include "ir/infer/infer_util.h"
#include "tests/common/python_env.h"

namespace amptrain::executor::train {
namespace {

using ::amptrain::testing::Py;
using ::amptrain::testing::PyHas;
using ::amptrain::testing::PySkip;

using ir::DType;
using ir::Tensor;
using TensorMap = std::map<std::string, Tensor>;

// Deterministic uniform values in [-1, 1).
Tensor Seeded(std::vector<int64_t> dims, uint64_t seed) {
  Tensor t = *Tensor::Zeros(DType::kFloat32, dims);
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    t.data<float>()[i] = static_cast<float>(static_cast<double>(s >> 40) / static_cast<double>(1ull << 23) - 1.0);
  }
  return t;
}

std::unique_ptr<Optimizer> Make(const OptimizerConfig& c) {
  auto opt = Optimizer::Create(c);
  EXPECT_TRUE(opt.ok()) << opt.status().ToString();
  return opt.ok() ? std::move(opt).value() : nullptr;
}

constexpr int kSteps = 5;
float StepLr(float base, int k) { return base * (1.0f + 0.25f * static_cast<float>(k)); }

TensorMap InitialParams() { return {{"b", Seeded({7}, 1)}, {"w", Seeded({4, 5}, 2)}}; }
TensorMap Grads(int k) { return {{"b", Seeded({7}, 100 + k)}, {"w", Seeded({4, 5}, 200 + k)}}; }

struct TorchCase {
  std::string name;
  OptimizerConfig config;
  std::string torch_ctor;  // python expression building the optimizer over `params`
};

std::vector<TorchCase> TorchCases() {
  std::vector<TorchCase> cases;
  OptimizerConfig sgd;
  sgd.kind = "sgd";
  sgd.lr = 0.05f;
  sgd.momentum = 0.0f;
  cases.push_back({"sgd_plain", sgd, "torch.optim.SGD(params, lr=f(0.05), foreach=False)"});
  sgd.momentum = 0.9f;
  sgd.weight_decay = 0.01f;
  cases.push_back({"sgd_momentum", sgd, "torch.optim.SGD(params, lr=f(0.05), momentum=f(0.9), weight_decay=f(0.01), foreach=False)"});
  sgd.nesterov = true;
  cases.push_back({"sgd_nesterov", sgd,
                   "torch.optim.SGD(params, lr=f(0.05), momentum=f(0.9), nesterov=True, weight_decay=f(0.01), foreach=False)"});
  OptimizerConfig adam;
  adam.kind = "adam";
  adam.lr = 0.01f;
  adam.weight_decay = 0.01f;
  cases.push_back({"adam", adam,
                   "torch.optim.Adam(params, lr=f(0.01), betas=(f(0.9), f(0.999)), eps=f(1e-8), weight_decay=f(0.01), foreach=False)"});
  adam.kind = "adamw";
  adam.weight_decay = 0.1f;
  cases.push_back({"adamw", adam,
                   "torch.optim.AdamW(params, lr=f(0.01), betas=(f(0.9), f(0.999)), eps=f(1e-8), weight_decay=f(0.1), foreach=False)"});
  return cases;
}

bool HaveTorch() { return PyHas("torch"); }

// Writes the inputs and a script applying kSteps steps of every case in
// PyTorch; returns the folder holding <case>_<param>.npy and slot files.
std::string RunTorch(const std::vector<TorchCase>& cases) {
  std::string dir = (std::filesystem::temp_directory_path() / ("amptrain_optim_" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  for (const auto& [name, t] : InitialParams()) EXPECT_TRUE(WriteNpy(dir + "/init_" + name + ".npy", t).ok());
  for (int k = 0; k < kSteps; ++k)
    for (const auto& [name, t] : Grads(k))
      EXPECT_TRUE(WriteNpy(dir + "/grad" + std::to_string(k) + "_" + name + ".npy", t).ok());
  std::ofstream py(dir + "/run.py");
  py << "import sys, numpy as np, torch\n"
        "d = sys.argv[1]\n"
        "f = lambda x: float(np.float32(x))\n"
        "cases = {\n";
  for (const auto& c : cases) py << "  '" << c.name << "': (lambda params: " << c.torch_ctor << ", " << c.config.lr << "),\n";
  py << "}\n"
        "for case, (ctor, lr) in cases.items():\n"
        "  params = [torch.nn.Parameter(torch.from_numpy(np.load(f'{d}/init_{n}.npy'))) for n in ('b', 'w')]\n"
        "  opt = ctor(params)\n"
        "  for k in range("
     << kSteps
     << "):\n"
        "    for g in opt.param_groups: g['lr'] = f(np.float32(f(lr)) * np.float32(1 + 0.25 * k))\n"
        "    for p, n in zip(params, ('b', 'w')): p.grad = torch.from_numpy(np.load(f'{d}/grad{k}_{n}.npy'))\n"
        "    opt.step()\n"
        "  for p, n in zip(params, ('b', 'w')):\n"
        "    np.save(f'{d}/{case}_{n}.npy', p.detach().numpy())\n"
        "    for slot, v in opt.state[p].items():\n"
        "      if slot != 'step' and v is not None: np.save(f'{d}/{case}_{n}.{slot}.npy', v.numpy())\n";
  py.close();
  int rc = std::system((Py() + dir + "/run.py " + dir).c_str());
  EXPECT_EQ(rc, 0) << "the PyTorch reference script failed";
  return dir;
}

// Close to PyTorch within 1e-6 relative (absolute 1e-9 near zero): the same
// fp32 operations in the same order; PyTorch's vectorised loops use FMA
// where our loops round twice, a last-bit difference per operation.
void ExpectClose(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dims(), want.dims()) << what;
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    double a = got.data<float>()[i], b = want.data<float>()[i];
    ASSERT_LE(std::fabs(a - b), 1e-6 * std::fabs(b) + 1e-9) << what << " element " << i << ": " << a << " vs " << b;
  }
}

TEST(OptimizerTest, MatchesPyTorch) {
  if (!HaveTorch()) GTEST_SKIP() << PySkip("torch") << "; the PyTorch comparison is skipped";
  auto cases = TorchCases();
  std::string dir = RunTorch(cases);
  struct Cleanup {
    std::string dir;
    ~Cleanup() { std::filesystem::remove_all(dir); }
  } cleanup{dir};
  for (const auto& c : cases) {
    auto opt = Optimizer::Create(c.config);
    ASSERT_TRUE(opt.ok()) << opt.status().ToString();
    TensorMap params = InitialParams();
    for (int k = 0; k < kSteps; ++k) ASSERT_TRUE((*opt)->Step(params, Grads(k), StepLr(c.config.lr, k)).ok());
    EXPECT_EQ((*opt)->step_count(), kSteps);
    for (const auto& [name, p] : params) {
      auto want = ReadNpy(dir + "/" + c.name + "_" + name + ".npy");
      ASSERT_TRUE(want.ok()) << want.status().ToString();
      ExpectClose(p, *want, c.name + " parameter " + name);
    }
    int slots_checked = 0;
    for (const auto& [slot, t] : (*opt)->StateTensors()) {
      auto want = ReadNpy(dir + "/" + c.name + "_" + slot + ".npy");
      ASSERT_TRUE(want.ok()) << c.name << " slot " << slot << " has no PyTorch counterpart";
      ExpectClose(t, *want, c.name + " slot " + slot);
      ++slots_checked;
    }
    EXPECT_EQ(slots_checked, c.name == "sgd_plain" ? 0 : c.config.kind == "sgd" ? 2 : 4) << c.name;
  }
}

TEST(OptimizerTest, RejectsBadConfigs) {
  OptimizerConfig c;
  c.kind = "lamb";
  EXPECT_NE(Optimizer::Create(c).status().message().find("lamb"), std::string::npos);
  c.kind = "sgd";
  c.momentum = 0.0f;
  c.nesterov = true;
  EXPECT_FALSE(Optimizer::Create(c).ok());
  c = OptimizerConfig{};
  c.beta2 = 1.0f;
  EXPECT_FALSE(Optimizer::Create(c).ok());
  c = OptimizerConfig{};
  c.lr = -1.0f;
  EXPECT_FALSE(Optimizer::Create(c).ok());
}

TEST(OptimizerTest, BadGradientsChangeNothing) {
  auto opt = Make(OptimizerConfig{});
  TensorMap params = InitialParams();
  ASSERT_TRUE(opt->Step(params, Grads(0), 0.01f).ok());
  TensorMap before = {{"b", params["b"].Clone()}, {"w", params["w"].Clone()}};
  auto slots_before = opt->StateTensors();
  for (auto& [name, t] : slots_before) t = t.Clone();

  TensorMap bad = Grads(1);
  bad["w"] = Seeded({5, 4}, 3);
  Status s = opt->Step(params, bad, 0.01f);
  EXPECT_NE(s.message().find("'w'"), std::string::npos) << s.ToString();
  bad = Grads(1);
  bad["nope"] = Seeded({2}, 4);
  EXPECT_EQ(opt->Step(params, bad, 0.01f).code(), StatusCode::kNotFound);
  bad = Grads(1);
  bad["b"] = *Tensor::Zeros(DType::kFloat64, {7});
  EXPECT_EQ(opt->Step(params, bad, 0.01f).code(), StatusCode::kUnimplemented);

  EXPECT_EQ(opt->step_count(), 1);
  for (const auto& [name, t] : before) EXPECT_TRUE(params[name] == t) << name;
  for (const auto& [name, t] : opt->StateTensors()) EXPECT_TRUE(slots_before[name] == t) << name;
}

// AMP's low gradients of fp32 master weights: the update from a bf16 or
// fp16 gradient has the bits of the update from that gradient widened to
// fp32 (lengths past the kernels' 512-element blocks, with a tail).
TEST(OptimizerTest, LowGradientOfFp32ParameterUpdatesAsItsWidening) {
  for (const char* kind : {"sgd", "adam", "adamw"})
    for (DType low : {DType::kBFloat16, DType::kFloat16}) {
      SCOPED_TRACE(std::string(kind) + " " + std::string(ir::DTypeName(low)));
      OptimizerConfig c;
      c.kind = kind;
      c.weight_decay = 0.01f;
      auto narrow = Make(c), wide = Make(c);
      TensorMap pa = {{"w", Seeded({3, 701}, 5)}}, pb = {{"w", pa["w"].Clone()}};
      for (int step = 0; step < 3; ++step) {
        const Tensor g32 = Seeded({3, 701}, 300 + step);
        Tensor g = *Tensor::Zeros(low, g32.dims());
        for (int64_t i = 0; i < g.num_elements(); ++i) ir::SetElementFromDouble(g, i, g32.GetAsDouble(i));
        Tensor widened = *Tensor::Zeros(DType::kFloat32, g32.dims());
        for (int64_t i = 0; i < g.num_elements(); ++i) widened.data<float>()[i] = static_cast<float>(g.GetAsDouble(i));
        ASSERT_TRUE(narrow->Step(pa, {{"w", g}}, 0.01f, {0.5f, 0.75f}).ok());
        ASSERT_TRUE(wide->Step(pb, {{"w", widened}}, 0.01f, {0.5f, 0.75f}).ok());
      }
      EXPECT_TRUE(pa["w"] == pb["w"]);
      auto sa = narrow->StateTensors(), sb = wide->StateTensors();
      for (const auto& [name, t] : sb) EXPECT_TRUE(sa.at(name) == t) << name;
    }
}

TEST(OptimizerTest, StateRoundTripContinuesBitwise) {
  for (const char* kind : {"sgd", "adam", "adamw"}) {
    OptimizerConfig c;
    c.kind = kind;
    c.weight_decay = 0.05f;
    auto a = Make(c);
    TensorMap pa = InitialParams();
    for (int k = 0; k < 3; ++k) ASSERT_TRUE(a->Step(pa, Grads(k), 0.01f).ok());
    auto b = Make(c);
    ASSERT_TRUE(b->LoadState(a->StateTensors(), a->step_count()).ok());
    TensorMap pb = {{"b", pa["b"].Clone()}, {"w", pa["w"].Clone()}};
    for (int k = 3; k < 5; ++k) {
      ASSERT_TRUE(a->Step(pa, Grads(k), 0.01f).ok());
      ASSERT_TRUE(b->Step(pb, Grads(k), 0.01f).ok());
    }
    for (const auto& [name, t] : pa) EXPECT_TRUE(pb[name] == t) << kind << " " << name;
  }
  auto sgd = Make(OptimizerConfig{.kind = "sgd"});
  EXPECT_FALSE(sgd->LoadState({{"w.exp_avg", Seeded({2}, 1)}}, 1).ok());
}

TEST(LrScheduleTest, HandValues) {
  auto constant = *LrSchedule::Create({.kind = "constant", .base_lr = 0.1f});
  EXPECT_EQ(constant.At(0), 0.1f);
  EXPECT_EQ(constant.At(123456), 0.1f);

  auto step = *LrSchedule::Create({.kind = "step", .base_lr = 1.0f, .step_size = 3, .gamma = 0.5f});
  EXPECT_EQ(step.At(0), 1.0f);
  EXPECT_EQ(step.At(2), 1.0f);
  EXPECT_EQ(step.At(3), 0.5f);
  EXPECT_EQ(step.At(6), 0.25f);
  EXPECT_EQ(step.At(8), 0.25f);

  auto cosine = *LrSchedule::Create(
      {.kind = "warmup_cosine", .base_lr = 1.0f, .warmup_steps = 4, .total_steps = 14, .min_lr = 0.1f});
  EXPECT_FLOAT_EQ(cosine.At(0), 0.25f);
  EXPECT_FLOAT_EQ(cosine.At(1), 0.5f);
  EXPECT_FLOAT_EQ(cosine.At(3), 1.0f);
  EXPECT_FLOAT_EQ(cosine.At(4), 1.0f);
  EXPECT_FLOAT_EQ(cosine.At(9), 0.55f);                                      // halfway: (1 + cos(pi/2)) / 2
  EXPECT_FLOAT_EQ(cosine.At(6), 0.1f + 0.9f * 0.5f * (1.0f + 0.80901699f));  // cos(pi/5)
  EXPECT_FLOAT_EQ(cosine.At(13), 0.1f + 0.9f * 0.5f * (1.0f - 0.95105652f)); // cos(9pi/10)
  EXPECT_EQ(cosine.At(14), 0.1f);
  EXPECT_EQ(cosine.At(1000), 0.1f);
  // Pure function: asking again, in any order, gives the same bits.
  EXPECT_EQ(cosine.At(7), cosine.At(7));
}

TEST(LrScheduleTest, RejectsBadConfigs) {
  EXPECT_FALSE(LrSchedule::Create({.kind = "linear"}).ok());
  EXPECT_FALSE(LrSchedule::Create({.kind = "step", .step_size = 0}).ok());
  EXPECT_FALSE(LrSchedule::Create({.kind = "warmup_cosine", .warmup_steps = 10, .total_steps = 10}).ok());
  EXPECT_FALSE(LrSchedule::Create({.kind = "warmup_cosine", .base_lr = 0.1f, .total_steps = 10, .min_lr = 0.2f}).ok());
}

TEST(ClipTest, ClipsToMaxNorm) {
  TensorMap grads = {{"a", Tensor::Floats({3, 4}, {2})}, {"b", Tensor::Floats({12}, {1})}};
  auto r = ClipGradNorm(grads, 20.0);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->norm, 13.0);
  EXPECT_FALSE(r->clipped);
  EXPECT_EQ(grads["b"].data<float>()[0], 12.0f);

  r = ClipGradNorm(grads, 6.5);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->clipped);
  EXPECT_DOUBLE_EQ(r->norm, 13.0);
  EXPECT_NEAR(GlobalGradNorm(grads)->norm, 6.5, 1e-5);
  EXPECT_FLOAT_EQ(grads["a"].data<float>()[1], 2.0f);
}

TEST(ClipTest, NonFiniteIsReportedAndNothingChanges) {
  TensorMap grads = {{"a", Tensor::Floats({3, 4}, {2})}, {"b", Tensor::Floats({1, NAN}, {2})},
                     {"c", Tensor::Floats({INFINITY}, {1})}};
  auto r = ClipGradNorm(grads, 1.0);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->finite);
  EXPECT_EQ(r->first_nonfinite, "b");
  EXPECT_EQ(grads["a"].data<float>()[0], 3.0f);
  EXPECT_FALSE(ClipGradNorm(grads, 0.0).ok());
}

TEST(ClipTest, LowPrecisionAndWrongDTypes) {
  Tensor h = *Tensor::Zeros(DType::kFloat16, {2});
  h.data<uint16_t>()[0] = ir::FloatToHalf(6.0f);
  h.data<uint16_t>()[1] = ir::FloatToHalf(8.0f);
  TensorMap grads = {{"h", h}};
  auto r = ClipGradNorm(grads, 5.0);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->norm, 10.0);
  EXPECT_NEAR(ir::HalfToFloat(grads["h"].data<uint16_t>()[0]), 3.0f, 2e-3);
  TensorMap ints = {{"i", Tensor::Int64s({1}, {1})}};
  EXPECT_EQ(GlobalGradNorm(ints).status().code(), StatusCode::kUnimplemented);
}

TEST(ClipTest, AccumulatesInDouble) {
  // 2^24 + 1 ones: an fp32 sum stops at 2^24, fp64 gets the last one.
  Tensor ones = *Tensor::Zeros(DType::kFloat32, {(1 << 24) + 1});
  std::fill(ones.data<float>(), ones.data<float>() + ones.num_elements(), 1.0f);
  auto r = GlobalGradNorm({{"x", ones}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->norm * r->norm, 16777217.0);
}

}  // namespace
}  // namespace amptrain::executor::train
