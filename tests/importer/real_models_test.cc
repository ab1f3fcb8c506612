// Imports the models torch 1.13 exports (models/torch/export_models.py):
// simplecnn, resnet18 and transformer at opsets 13 and 17, train and eval.
// Skips with a message when the venv has no torch.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "importer/onnx_export.h"
#include "importer/onnx_import.h"
#include "tests/common/python_env.h"

namespace amptrain::importer {
namespace {

using ::amptrain::testing::Py;
using ::amptrain::testing::PyHas;
using ::amptrain::testing::PySkip;

namespace fs = std::filesystem;

// Exports once per test binary run; empty path when torch is unavailable.
const fs::path& ExportedModels() {
  static const fs::path dir = [] {
    fs::path out = fs::path(AMPTRAIN_BINARY_DIR) / "importer_test_models";
    if (!PyHas("torch"))
      return fs::path();
    fs::remove_all(out);
    std::string cmd = Py() + AMPTRAIN_SOURCE_DIR "/models/torch/export_models.py --quiet --out " +
                      out.string() + " --models simplecnn,resnet18,transformer --opsets 13,17 --modes train,eval"
                      " >" + (out.string() + ".log") + " 2>&1";
    if (std::system(cmd.c_str()) != 0) return fs::path();
    return out;
  }();
  return dir;
}

TEST(RealModels, TorchExportsImportAndRoundTrip) {
  const fs::path& dir = ExportedModels();
  if (dir.empty()) GTEST_SKIP() << PySkip("torch") << " (or the export failed): no torch models";
  std::vector<fs::path> models;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".onnx") models.push_back(e.path());
  std::sort(models.begin(), models.end());
  ASSERT_GE(models.size(), 12u);
  for (const fs::path& p : models) {
    SCOPED_TRACE(p.filename().string());
    auto g = ImportModelFile(p.string());
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    EXPECT_EQ((*g)->inputs().size(), 1u);
    EXPECT_EQ((*g)->name((*g)->inputs()[0]), "input_0");
    ASSERT_EQ((*g)->outputs().size(), 1u);
    EXPECT_EQ((*g)->name((*g)->outputs()[0]), "output_0");
    const ir::TensorType& out = (*g)->type((*g)->outputs()[0]);
    EXPECT_TRUE(out.has_shape) << out.ToString();
    auto bytes = ExportModelBytes(**g);
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    auto again = ImportModelBytes(*bytes, "");
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ((*again)->num_nodes(), (*g)->num_nodes());
  }
}

}  // namespace
}  // namespace amptrain::importer
