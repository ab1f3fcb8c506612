// `amptrain convert` on PyTorch exports (issue 4, acceptance 2):
// SimpleCNN, ResNet-50 (64x64 input) and the small transformer encoder
// (MatMul, Softmax, LayerNormalization, Gelu/Erf, Gather), opset 17, eval
// mode, converted at O1, O2 and O3 with fp16 and bf16. Every converted model
//   - passes the PyPI onnx checker (full_check) and runs in ONNX Runtime's CPU
//     provider; where that provider has no bf16 kernel for an op, its
//     NOT_IMPLEMENTED error is accepted and `amptrain run` gives the outputs;
//   - matches the fp32 model run by ONNX Runtime on the same seeded random
//     inputs within 1e-2 relative L2 error at O1 and O2 (fp16 has a 2^-11
//     relative rounding step and bf16 2^-8; errors stay well below 1e-2 when
//     the denylist keeps Softmax/LayerNorm/reductions fp32). O3 (BN and
//     every op in low precision, the denylist included) has no accuracy
//     target in the issue; it must give finite outputs within kO3Bound.
// O2 fp16 weights take at most 52% of the fp32 initializer bytes (counted in
// the written files).
// Models are exported at test time by models/torch/export_models.py with
// the venv's torch (tests/common/python_env.h); tests skip with a message without it or
// without its onnx/onnxruntime.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "amp/passes.h"
#include "executor/npy.h"
#include "importer/onnx_import.h"
#include "tests/e2e/e2e_util.h"
#include "ir/graph.h"

namespace amptrain {
namespace {

using testing::Sh;
using testing::HaveTorch;
using testing::HaveOrt;
using testing::ReadFile;
using testing::RelL2;
using testing::Py;
using testing::PySkip;

namespace fs = std::filesystem;

const std::string kBin = std::string(AMPTRAIN_BINARY_DIR) + "/tools/amptrain";
const std::string kSrc = AMPTRAIN_SOURCE_DIR;
const std::string kModels = std::string(AMPTRAIN_BINARY_DIR) + "/amp_models";
const std::string kOrt = Py() + kSrc + "/tests/tools/ort_run.py ";

// O3 runs Softmax, LayerNorm and BN in the low type: only a sanity bound
// (measured: at most 2e-2, ResNet-50 in bf16; fp16 stays below 5e-3).
constexpr double kO3Bound = 0.05;
// Exports once for all test processes (ctest runs each case in its own).
bool ExportOnce() {
  std::string script = Py() + kSrc + "/models/torch/export_models.py --quiet --out " + kModels +
                       " --opsets 17 --modes eval";
  std::string log = " >> " + kModels + ".log 2>&1";
  return testing::RunOnceLocked(kModels, script + " --models simplecnn,transformer" + log + " && " + script +
                                             " --models resnet50 --image-size 64" + log);
}

// ONNX Runtime on the fp32 model with seeded random inputs, once per model:
// inputs in <stem>.amp_inputs/, outputs in <stem>.amp_fp32/.
bool ReferenceOnce(const std::string& model) {
  const std::string stem = kModels + "/" + model + "_eval_op17";
  return testing::RunOnceLocked(stem + ".amp_ref", kOrt + stem + ".onnx --random-inputs " + stem +
                                                       ".amp_inputs --seed 0 --batch 2 --output-dir " + stem +
                                                       ".amp_fp32 > " + stem + ".amp_fp32.log 2>&1");
}

// Bytes of the float initializers of the model file as written.
int64_t InitializerBytes(const std::string& path) {
  importer::ImportOptions options;
  options.fold_constants = false;
  options.remove_identity = false;
  auto g = importer::ImportModelFile(path, options);
  EXPECT_TRUE(g.ok()) << g.status().message();
  if (!g.ok()) return -1;
  int64_t bytes = 0;
  for (ir::Value v : (*g)->initializers()) {
    const ir::Tensor* t = (*g)->ConstantValue(v);
    if (t && ir::IsFloat(t->dtype())) bytes += static_cast<int64_t>(t->nbytes());
  }
  return bytes;
}

struct Case {
  std::string model, level, dtype;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.model << " " << c.level << " " << c.dtype; }

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  return info.param.model + "_" + info.param.level + "_" + info.param.dtype;
}

class AmpConvert : public ::testing::TestWithParam<Case> {};

TEST_P(AmpConvert, CheckerOrtAndAccuracy) {
  if (!HaveTorch()) GTEST_SKIP() << PySkip("torch, torchvision");
  if (!HaveOrt()) GTEST_SKIP() << PySkip("onnxruntime, onnx");
  ASSERT_TRUE(ExportOnce()) << "export failed, see " << kModels << "/export.log";
  const Case& c = GetParam();
  const std::string stem = kModels + "/" + c.model + "_eval_op17";
  ASSERT_TRUE(ReferenceOnce(c.model)) << "ONNX Runtime failed on the fp32 model, see " << stem << ".amp_fp32.log";

  const std::string out = stem + "." + c.level + "." + c.dtype;
  fs::remove(out + ".onnx");
  fs::remove_all(out + ".outputs");
  ASSERT_EQ(Sh(kBin + " convert " + stem + ".onnx -o " + out + ".onnx --amp " + c.level + " --dtype " + c.dtype +
               " --report " + out + ".json > " + out + ".convert.log 2>&1"),
            0)
      << "amptrain convert failed:\n" << ReadFile(out + ".convert.log");

  const std::string input = " --input input_0=" + stem + ".amp_inputs/input_0.npy --output-dir " + out + ".outputs";
  if (Sh(kOrt + out + ".onnx --check" + input + " > " + out + ".ort.log 2>&1") != 0) {
    std::string log = ReadFile(out + ".ort.log");
    ASSERT_NE(log.find("onnx.checker OK"), std::string::npos) << "onnx checker rejected " << out << ".onnx:\n" << log;
    ASSERT_TRUE(c.dtype == "bf16" && log.find("NOT_IMPLEMENTED") != std::string::npos)
        << "ONNX Runtime failed on " << out << ".onnx:\n" << log;
    std::cout << "[ ORT CPU has no bf16 kernel here; amptrain run gives the outputs ] "
              << log.substr(log.find("NOT_IMPLEMENTED"), 160) << "\n";
    ASSERT_EQ(Sh(kBin + " run " + out + ".onnx" + input + " > " + out + ".run.log 2>&1"), 0)
        << "amptrain run failed:\n" << ReadFile(out + ".run.log");
  }

  auto got = executor::ReadNpy(out + ".outputs/output_0.npy");
  auto want = executor::ReadNpy(stem + ".amp_fp32/output_0.npy");
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_TRUE(want.ok()) << want.status().message();
  ASSERT_EQ(got->dims(), want->dims());
  double err = RelL2(*got, *want);
  std::cout << "[ " << c.model << " " << c.level << " " << c.dtype << " ] relative L2 error vs fp32: " << err << "\n";
  RecordProperty("rel_l2", std::to_string(err));
  ASSERT_TRUE(std::isfinite(err)) << "non-finite outputs";
  EXPECT_LT(err, c.level == "O3" ? kO3Bound : 1e-2) << c.model << " " << c.level << " " << c.dtype
                                                    << ", per node dtypes in " << out << ".json";

  if (c.level == "O2" && c.dtype == "fp16") {
    int64_t before = InitializerBytes(stem + ".onnx"), after = InitializerBytes(out + ".onnx");
    std::cout << "[ " << c.model << " O2 fp16 ] initializer bytes " << before << " -> " << after << "\n";
    EXPECT_LE(static_cast<double>(after), 0.52 * static_cast<double>(before)) << before << " -> " << after;
  }
  if (!HasFailure()) fs::remove(out + ".onnx");  // ResNet-50 copies add up; kept when a check failed
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (const char* model : {"simplecnn", "resnet50", "transformer"})
    for (const char* level : {"O1", "O2", "O3"})
      for (const char* dtype : {"fp16", "bf16"}) cases.push_back({model, level, dtype});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(TorchModels, AmpConvert, ::testing::ValuesIn(AllCases()), CaseName);

// Plan rule 8 lets an export's denylist ops that ONNX Runtime computes in
// fp32 inside its fp16 kernels take and give fp16 without a Cast pair: that
// must hold for every op the capability names, in the ONNX Runtime the tests use.
TEST(AmpConvertCapability, OnnxRuntimeComputesItsListInFp32Inside) {
  if (!HaveOrt()) GTEST_SKIP() << PySkip("onnx, onnxruntime");
  std::string ops;
  for (int k = 0; k < static_cast<int>(ir::OpKind::kNumOps); ++k)
    if (amp::Capability::OnnxRuntimeComputesFp32Inside(static_cast<ir::OpKind>(k)))
      ops += " " + std::string(ir::Schema(static_cast<ir::OpKind>(k)).onnx_type);
  ASSERT_FALSE(ops.empty());
  const std::string log = std::string(AMPTRAIN_BINARY_DIR) + "/ort_fp32_inside.log";
  int rc = Sh(Py() + kSrc + "/tests/tools/ort_fp32_inside.py" + ops + " > " + log + " 2>&1");
  std::string out = ReadFile(log);
  std::cout << out;
  EXPECT_EQ(rc, 0) << out;
}

}  // namespace
}  // namespace amptrain
