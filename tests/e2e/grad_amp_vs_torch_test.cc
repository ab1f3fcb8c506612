// `amptrain grad --amp O1` against PyTorch's own mixed precision, with a
// float64 reference as the judge (TESTING.md): the training-mode exports of
// SimpleCNN and ResNet-18, and (fp32 only) a BN after a large-mean activation (models/torch/amp_reference_grads.py, run at test
// time with the venv's torch; skipped with a message without it).
//
// Per parameter, error = ||g - g64|| / max(||g64||, 1e-2) (the floor as in
// grad_vs_torch_test.cc: conv biases before a training-mode BN have a true
// gradient of 0). Checks:
//   bf16: our O1 error <= 2x the error of torch.autocast("cpu", bfloat16)
//         (the yardstick for rounding, not a hand-picked tolerance);
//   fp16: PyTorch 1.13's CPU autocast has no fp16, so there is no yardstick;
//         with 3 more mantissa bits our fp16 error must stay below our bf16
//         error, and within 2x of the bf16 yardstick like bf16;
//   fp32: our error <= max(10x torch fp32's, 1e-5), the fp32 check of
//         TESTING.md, on the same export.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "executor/npy.h"
#include "tests/e2e/e2e_util.h"

namespace amptrain {
namespace {

using testing::HaveTorch;
using testing::Py;
using testing::PySkip;
using testing::ReadFile;
using testing::Sh;

namespace fs = std::filesystem;

const std::string kBin = std::string(AMPTRAIN_BINARY_DIR) + "/tools/amptrain";
const std::string kSrc = AMPTRAIN_SOURCE_DIR;

double Error(const ir::Tensor& g, const ir::Tensor& ref) { return testing::FlooredRelL2(g, ref); }

// The file name `amptrain grad` and the script give a parameter.
std::string FileOf(std::string name) {
  for (char& c : name)
    if (c == '/' || c == '\\' || c == ':') c = '_';
  return name + ".npy";
}

struct Case {
  std::string model, flags;
};

class GradAmpVsTorch : public ::testing::TestWithParam<Case> {};

TEST_P(GradAmpVsTorch, ErrorsWithinTheAutocastYardstick) {
  if (!HaveTorch()) GTEST_SKIP() << PySkip("torch, torchvision");
  const Case& c = GetParam();
  fs::path dir = fs::path(AMPTRAIN_BINARY_DIR) / "grad_amp_vs_torch" / c.model;
  fs::remove_all(dir);
  fs::create_directories(dir);
  ASSERT_EQ(Sh("cd " + kSrc + "/models/torch && " + Py() + "amp_reference_grads.py --model " + c.model + " --out " +
               dir.string() + " " + c.flags + " > " + (dir / "torch.log").string() + " 2>&1"),
            0)
      << "see " << (dir / "torch.log");
  const std::string grad = kBin + " grad " + (dir / "model.onnx").string() + " --input " +
                           (dir / "input_0.npy").string() + " --labels " + (dir / "labels.npy").string() +
                           " --threads 2 --output-dir ";
  for (const auto& [name, flags] : std::vector<std::pair<std::string, std::string>>{
           {"fp32", ""}, {"bf16", " --amp O1 --dtype bf16"}, {"fp16", " --amp O1 --dtype fp16"}})
    ASSERT_EQ(Sh(grad + (dir / name).string() + flags + " > " + (dir / (name + ".log")).string() + " 2>&1"), 0)
        << "see " << (dir / (name + ".log"));

  auto meta = nlohmann::json::parse(ReadFile(dir / "meta.json"));
  ASSERT_FALSE(meta["params"].empty());
  // No fp32 near-tie in a max-pool window: there the fp32 winner, and with it the fp32 gradients, would
  // depend on this CPU's convolution summation order (docs/torchvision_coverage.md, root cause 4).
  if (meta.contains("maxpool_min_gap") && !meta["maxpool_min_gap"].is_null()) {
    ASSERT_GE(meta["maxpool_min_gap"].get<double>(), 1e-5)
        << "a max-pool near-tie in the test data: pick another --seed";
  }
  auto load = [&](const std::string& folder, const std::string& param) {
    auto t = executor::ReadNpy((dir / folder / FileOf(param)).string());
    EXPECT_TRUE(t.ok()) << folder << "/" << param << ": " << t.status().ToString();
    return t.ok() ? *t : ir::Tensor();
  };
  double worst_ratio = 0;
  for (const auto& p : meta["params"]) {
    const std::string param = p.get<std::string>();
    ir::Tensor ref = load("grads64", param);
    const double torch32 = Error(load("grads32", param), ref);
    const double autocast = Error(load("grads_autocast_bf16", param), ref);
    const double ours32 = Error(load("fp32/grads", param), ref);
    const double bf16 = Error(load("bf16/grads", param), ref);
    const double fp16 = Error(load("fp16/grads", param), ref);
    EXPECT_LE(ours32, std::max(10 * torch32, 1e-5)) << param;
    EXPECT_LE(bf16, 2 * autocast) << param << ": bf16 error " << bf16 << ", autocast bf16 " << autocast;
    EXPECT_LE(fp16, bf16) << param << ": fp16 error " << fp16 << " above our bf16 error " << bf16;
    EXPECT_LE(fp16, 2 * autocast) << param;
    worst_ratio = std::max(worst_ratio, bf16 / autocast);
  }
  std::printf("%s: worst bf16 error / autocast bf16 error = %.3f over %zu parameters\n", c.model.c_str(), worst_ratio,
              meta["params"].size());
}

// fp32 only: Conv -> x * 0.05 + 20 -> training-mode BN -> ReLU -> Linear
// (issue 10, item 5). Before the direct BN kernels, the oneDNN BN backward
// gave the BN bias 3.5e-3 relative error where PyTorch fp32 had 1e-6, and the
// conv weight 6e-2 against 1.1e-5. Each parameter's error must stay within 2x
// torch fp32's (or 1e-5): the rounding of x * 0.05 + 20 itself, which both
// pay, is most of it.
TEST(GradFp32VsTorch, BatchNormAfterALargeMean) {
  if (!HaveTorch()) GTEST_SKIP() << PySkip("torch, torchvision");
  fs::path dir = fs::path(AMPTRAIN_BINARY_DIR) / "grad_amp_vs_torch" / "largemeanbn";
  fs::remove_all(dir);
  fs::create_directories(dir);
  ASSERT_EQ(Sh("cd " + kSrc + "/models/torch && " + Py() + "amp_reference_grads.py --model largemeanbn --out " +
               dir.string() + " --batch 4 > " + (dir / "torch.log").string() + " 2>&1"),
            0)
      << "see " << (dir / "torch.log");
  ASSERT_EQ(Sh(kBin + " grad " + (dir / "model.onnx").string() + " --input " + (dir / "input_0.npy").string() +
               " --labels " + (dir / "labels.npy").string() + " --threads 2 --output-dir " + (dir / "fp32").string() +
               " > " + (dir / "fp32.log").string() + " 2>&1"),
            0)
      << "see " << (dir / "fp32.log");
  auto meta = nlohmann::json::parse(ReadFile(dir / "meta.json"));
  ASSERT_EQ(meta["params"].size(), 6u);
  for (const auto& p : meta["params"]) {
    const std::string param = p.get<std::string>();
    auto ref = executor::ReadNpy((dir / "grads64" / FileOf(param)).string());
    auto torch32 = executor::ReadNpy((dir / "grads32" / FileOf(param)).string());
    auto ours = executor::ReadNpy((dir / "fp32/grads" / FileOf(param)).string());
    ASSERT_TRUE(ref.ok() && torch32.ok() && ours.ok()) << param;
    const double yardstick = Error(*torch32, *ref), err = Error(*ours, *ref);
    EXPECT_LE(err, std::max(2 * yardstick, 1e-5)) << param << ": ours " << err << ", torch fp32 " << yardstick;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, GradAmpVsTorch,
                         // Seed 0's SimpleCNN data has a max-pool window (features.7) whose top two values
                         // are 1.7e-6 apart (relative, float64): AVX2's convolutions pick the other one.
                         // Seed 1's closest pair is 1.9e-5 apart.
                         ::testing::Values(Case{"simplecnn", "--batch 8 --seed 1"},
                                           Case{"resnet18", "--batch 4 --image-size 32 --small-input"}),
                         [](const auto& info) { return info.param.model; });

}  // namespace
}  // namespace amptrain
