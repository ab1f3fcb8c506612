// CastLike (opset 15; every dynamo export made with optimize=False has it)
// becomes Cast(to = like's dtype) at import (importer/opset_adapters.h): the
// graph holds only Casts, it runs as Cast does, and export writes Cast, which
// the onnx checker accepts (when the venv has onnx).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "executor/session.h"
#include "importer/onnx_export.h"
#include "importer/onnx_import.h"
#include "ir/onnx_dtype.h"
#include "tests/e2e/e2e_util.h"
#include "tests/importer/model_builder.h"

namespace amptrain {
namespace {

namespace fs = std::filesystem;
namespace mb = importer::testing;
using ir::DType;
using ir::OpKind;

// x f32[2,3], ids i64[3], half f16[1] (only a dtype donor):
//   xh  = CastLike(x, half)               fp32 -> fp16
//   idf = CastLike(ids, x)                int64 -> fp32
//   xi  = CastLike(x, Neg(ids))           fp32 -> int64; Neg is then dead
//   sum = Add(idf, x)
onnx::ModelProto CastLikeModel() {
  onnx::ModelProto m = mb::NewModel(17);
  mb::AddInput(m, "x", {2, 3});
  mb::AddInput(m, "ids", {3}, onnx::TensorProto::INT64);
  mb::AddInput(m, "half", {1}, onnx::TensorProto::FLOAT16);
  mb::AddNode(m, "CastLike", {"x", "half"}, {"xh"}, "to_half");
  mb::AddNode(m, "CastLike", {"ids", "x"}, {"idf"}, "ids_to_float");
  mb::AddNode(m, "Neg", {"ids"}, {"neg_ids"}, "neg");
  mb::AddNode(m, "CastLike", {"x", "neg_ids"}, {"xi"}, "to_int");
  mb::AddNode(m, "Add", {"idf", "x"}, {"sum"}, "add");
  for (const char* out : {"xh", "idf", "xi", "sum"}) mb::AddOutput(m, out);
  return m;
}

TEST(CastLike, ImportLowersToCastWithTheLikeDType) {
  auto g = importer::ImportModelBytes(mb::Bytes(CastLikeModel()), "");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  for (const ir::Node* n : (*g)->nodes()) EXPECT_NE(n->op(), OpKind::kCastLike) << n->name();
  EXPECT_EQ(testing::NodeNamed(**g, "neg"), nullptr) << "the Neg that only fed `like` stays";
  const std::pair<const char*, DType> want[] = {
      {"to_half", DType::kFloat16}, {"ids_to_float", DType::kFloat32}, {"to_int", DType::kInt64}};
  for (const auto& [name, dtype] : want) {
    const ir::Node* n = testing::NodeNamed(**g, name);
    ASSERT_NE(n, nullptr) << name;
    EXPECT_EQ(n->op(), OpKind::kCast) << name;
    EXPECT_EQ(n->num_inputs(), 1u) << name;
    EXPECT_EQ(n->attrs().Int("to", -1), ir::OnnxFromDType(dtype)) << name;
    EXPECT_EQ((*g)->type(n->output(0)).dtype, dtype) << name;
  }
  std::vector<std::string> outs;
  for (ir::Value v : (*g)->outputs()) outs.push_back((*g)->name(v));
  EXPECT_EQ(outs, (std::vector<std::string>{"xh", "idf", "xi", "sum"}));
  EXPECT_EQ((*g)->inputs().size(), 3u) << "graph inputs stay, used or not";
}

TEST(CastLike, RunsAsCast) {
  auto g = importer::ImportModelBytes(mb::Bytes(CastLikeModel()), "");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto session = executor::InferenceSession::Create(std::move(*g));
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  // 1 + 2^-11 ties to 1 in fp16; 65520 overflows to inf; -2.7 truncates to -2.
  const std::vector<float> xs = {1.0f + 0.00048828125f, -2.7f, 65520.0f, 0.1f, 3.0f, -0.5f};
  ir::Tensor x = *ir::Tensor::Zeros(DType::kFloat32, {2, 3});
  std::copy(xs.begin(), xs.end(), x.data<float>());
  auto outs = (*session)->Run({{"x", x},
                               {"ids", ir::Tensor::Int64s({-1, 0, 16777217}, {3})},
                               {"half", *ir::Tensor::Zeros(DType::kFloat16, {1})}});
  ASSERT_TRUE(outs.ok()) << outs.status().ToString();
  ASSERT_EQ(outs->size(), 4u);
  const ir::Tensor &xh = (*outs)[0], &idf = (*outs)[1], &xi = (*outs)[2], &sum = (*outs)[3];
  ASSERT_EQ(xh.dtype(), DType::kFloat16);
  ASSERT_EQ(idf.dtype(), DType::kFloat32);
  ASSERT_EQ(xi.dtype(), DType::kInt64);
  const std::vector<double> half_want = {1.0, -2.69921875, INFINITY, 0.0999755859375, 3.0, -0.5};
  const std::vector<int64_t> int_want = {1, -2, 65520, 0, 3, 0};
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_EQ(xh.GetAsDouble(i), half_want[i]) << i;
    EXPECT_EQ(xi.GetAsInt64(i), int_want[i]) << i;
    EXPECT_EQ(sum.GetAsDouble(i), static_cast<double>(static_cast<float>(idf.GetAsDouble(i % 3)) + xs[i])) << i;
  }
  // 2^24 + 1 rounds to 2^24 in fp32.
  EXPECT_EQ(idf.GetAsDouble(0), -1.0);
  EXPECT_EQ(idf.GetAsDouble(2), 16777216.0);
}

TEST(CastLike, ExportWritesCastAndPassesTheChecker) {
  auto g = importer::ImportModelBytes(mb::Bytes(CastLikeModel()), "");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  auto bytes = importer::ExportModelBytes(**g);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(*bytes));
  int casts = 0;
  for (const auto& n : m.graph().node()) {
    EXPECT_NE(n.op_type(), "CastLike");
    if (n.op_type() != "Cast") continue;
    ++casts;
    ASSERT_EQ(n.input_size(), 1) << n.name();
    ASSERT_EQ(n.attribute_size(), 1) << n.name();
    EXPECT_EQ(n.attribute(0).name(), "to");
  }
  EXPECT_EQ(casts, 3);
  auto again = importer::ImportModelBytes(*bytes, "");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  auto bytes2 = importer::ExportModelBytes(**again);
  ASSERT_TRUE(bytes2.ok());
  EXPECT_EQ(*bytes2, *bytes) << "export -> import -> export is not a fixed point";

  if (!testing::PyHas("onnx")) GTEST_SKIP() << testing::PySkip("onnx");
  const fs::path dir = fs::path(AMPTRAIN_BINARY_DIR) / "castlike_test";
  fs::create_directories(dir);
  const fs::path path = dir / "castlike_exported.onnx";
  std::ofstream(path, std::ios::binary) << *bytes;
  const std::string log = (dir / "checker.log").string();
  EXPECT_EQ(testing::Sh(testing::Py() + "-c 'import onnx, sys; onnx.checker.check_model(sys.argv[1], full_check=True)' " +
                        path.string() + " > " + log + " 2>&1"),
            0)
      << "the onnx checker rejected " << path << ", see " << log;
}

}  // namespace
}  // namespace amptrain
