// Converted graphs survive export and re-import: the ONNX the exporter writes
// from them (Cast `to` attributes, value_info, fp16/bf16 initializers) passes
// the importer's validation and its own type inference again.
#include <gtest/gtest.h>

#include <cstdlib>

#include "amp_test_util.h"
#include "importer/onnx_export.h"
#include "importer/onnx_import.h"
#include "models/builders.h"

namespace amptrain::amp {
namespace {

TEST(AmpExport, ConvertedResNetRoundTrips) {
  for (ir::DType low : {ir::DType::kFloat16, ir::DType::kBFloat16}) {
    for (Level level : {Level::kO1, Level::kO2, Level::kO3}) {
      models::ResNetConfig c;
      c.depth = 18;
      c.num_classes = 10;
      c.height = c.width = 32;
      auto g = models::BuildResNet(c);
      ASSERT_TRUE(g.ok());
      ASSERT_TRUE((*g)->InferShapes().ok());
      Policy p;
      p.level = level;
      p.low = low;
      ASSERT_TRUE(Convert(**g, p).ok());
      std::string path = ::testing::TempDir() + "/amp_resnet_" + LevelName(level) + "_" +
                         std::string(ir::DTypeName(low)) + ".onnx";
      Status st = importer::ExportModelFile(**g, path);
      ASSERT_TRUE(st.ok()) << st.ToString();
      auto back = importer::ImportModelFile(path);
      ASSERT_TRUE(back.ok()) << back.status().ToString();
      testing::ExpectWellFormed(**back);
      EXPECT_EQ(testing::Count(**back, ir::OpKind::kCast), testing::Count(**g, ir::OpKind::kCast));
      if (!std::getenv("AMP_KEEP_EXPORTS")) std::remove(path.c_str());
    }
  }
}

}  // namespace
}  // namespace amptrain::amp
