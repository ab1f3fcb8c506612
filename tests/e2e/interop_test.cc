// Interop with real exporter output and other runtimes (issue 2, acceptance 1-2):
//   - PyTorch 1.13 exports of SimpleCNN, ResNet-50 and a small transformer
//     (eval and training mode, opsets 13 and 17) run through `amptrain run`
//     and match PyTorch's outputs within 1e-4 relative L2 error;
//   - `amptrain export` output loads in ONNX Runtime and matches ONNX
//     Runtime on the original model within 1e-6 max abs (fp32).
// The models are exported at test time by models/torch/export_models.py with
// the venv's torch (tests/common/python_env.h); tests skip with a message without it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "executor/npy.h"
#include "tests/e2e/e2e_util.h"

namespace amptrain {
namespace {

using testing::Sh;
using testing::HaveTorch;
using testing::HaveOrt;
using testing::RelL2;
using testing::Py;
using testing::PySkip;

namespace fs = std::filesystem;

const std::string kBin = std::string(AMPTRAIN_BINARY_DIR) + "/tools/amptrain";
const std::string kSrc = AMPTRAIN_SOURCE_DIR;
const std::string kModels = std::string(AMPTRAIN_BINARY_DIR) + "/interop_models";
// Exports once for all test processes (ctest runs each case in its own).
bool ExportOnce() {
  const std::string log = " >> " + kModels + ".log 2>&1";
  return testing::RunOnceLocked(
      kModels, Py() + kSrc + "/models/torch/export_models.py --quiet --out " + kModels +
                   " --models simplecnn,transformer --opsets 13,17 --modes train,eval" + log + " && " + Py() +
                   kSrc + "/models/torch/export_models.py --quiet --out " + kModels +
                   " --models resnet50 --opsets 13,17 --modes train,eval --batch 2" + log);
}

class TorchExport : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchExport, RunMatchesPyTorch) {
  if (!HaveTorch()) GTEST_SKIP() << PySkip("torch, torchvision");
  ASSERT_TRUE(ExportOnce()) << "export failed, see " << kModels << ".log";
  const std::string stem = kModels + "/" + GetParam();
  const std::string out = stem + ".amptrain_out";
  fs::remove_all(out);
  ASSERT_EQ(Sh(kBin + " run " + stem + ".onnx --input input_0=" + stem + ".data/input_0.npy --output-dir " + out +
               " > " + out + ".log 2>&1"), 0)
      << "amptrain run failed, see " << out << ".log";
  auto got = executor::ReadNpy(out + "/output_0.npy");
  auto want = executor::ReadNpy(stem + ".data/output_0.npy");
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_TRUE(want.ok()) << want.status().message();
  ASSERT_EQ(got->dims(), want->dims());
  double err = RelL2(*got, *want);
  // 1e-4: PyTorch and amptrain both compute in fp32 with different summation
  // orders (oneDNN vs MKL-DNN/ATen); batch-statistics BN amplifies that a little.
  EXPECT_LT(err, 1e-4) << GetParam() << " relative L2 error " << err;
}

INSTANTIATE_TEST_SUITE_P(Models, TorchExport,
                         ::testing::Values("simplecnn_eval_op13", "simplecnn_eval_op17", "simplecnn_train_op13",
                                           "simplecnn_train_op17", "resnet50_eval_op13", "resnet50_eval_op17",
                                           "resnet50_train_op13", "resnet50_train_op17", "transformer_eval_op13",
                                           "transformer_eval_op17"));

class ExportRoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(ExportRoundTrip, OrtMatchesOriginal) {
  if (!HaveTorch()) GTEST_SKIP() << PySkip("torch, torchvision");
  if (!HaveOrt()) GTEST_SKIP() << PySkip("onnxruntime, onnx");
  ASSERT_TRUE(ExportOnce());
  const std::string stem = kModels + "/" + GetParam();
  const std::string exported = stem + ".amptrain_export.onnx";
  fs::remove(exported);
  ASSERT_EQ(Sh(kBin + " export " + stem + ".onnx -o " + exported + " > " + exported + ".log 2>&1"), 0)
      << "amptrain export failed, see " << exported << ".log";
  const std::string ort = Py() + kSrc + "/tests/tools/ort_run.py ";
  const std::string in = " --input input_0=" + stem + ".data/input_0.npy";
  ASSERT_EQ(Sh(ort + stem + ".onnx" + in + " --output-dir " + stem + ".ort_orig > /dev/null 2>&1"), 0);
  ASSERT_EQ(Sh(ort + exported + " --check" + in + " --output-dir " + stem + ".ort_export > " + stem + ".ort_export.log 2>&1"), 0)
      << "ONNX Runtime or the onnx checker rejected the exported model, see " << stem << ".ort_export.log";
  EXPECT_EQ(Sh(Py() + kSrc + "/tests/tools/compare_npy.py " + stem + ".ort_export " + stem +
               ".ort_orig --max-abs 1e-6"), 0);
}

INSTANTIATE_TEST_SUITE_P(Models, ExportRoundTrip,
                         ::testing::Values("simplecnn_train_op13", "simplecnn_eval_op17", "resnet50_eval_op13",
                                           "resnet50_train_op17", "transformer_eval_op13", "transformer_train_op17"));

}  // namespace
}  // namespace amptrain
