// The widened oneDNN kernels (bf16/fp16 stored, fp32 computed) run Conv,
// FusedConv, ConvGrad, Gemm and MatMul in slices of the batch
// (kernels/cpu/onednn_common.h, SetWidenedSliceBytes). With the slice size
// set to 1 byte every problem here slices at the minimum (slices of 16 rows,
// and a shorter last slice), so each role is
// exercised: rows split, whole tensors, and weight gradients summed over
// slices. Each output is checked against the reference kernel with the
// tolerances of tests/kernels/onednn_match.h, on the bf16 and fp16
// widened paths (every CPU). A summed output that is larger than the saving
// keeps the whole batch; the scratch sizes show which path was taken.
#include "kernels/cpu/onednn_common.h"
#include "tests/kernels/onednn_match.h"

namespace amptrain::kernels::gradtest {
namespace {

using ir::Attributes;
using ir::DType;
using ir::Tensor;
using I = std::vector<int64_t>;

class WidenedSlices : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override { cpu::onednn::SetWidenedSliceBytes(1); }
  void TearDown() override { cpu::onednn::SetWidenedSliceBytes(saved_); }

  // The widened kernel against the reference, every output.
  static void ExpectMatch(const std::string& what, OpKind op, const Attributes& a, const std::vector<Tensor>& in,
                          size_t outputs, std::vector<bool> unused = {}) {
    ExpectMatchesReference(what, op, a, in, outputs, std::move(unused), "onednn-widened");
  }

 private:
  size_t saved_ = cpu::onednn::WidenedSliceBytes();
};

INSTANTIATE_TEST_SUITE_P(Paths, WidenedSlices, ::testing::Values(DType::kBFloat16, DType::kFloat16),
                         [](const auto& info) { return std::string(info.param == DType::kBFloat16 ? "bf16" : "fp16"); });

Attributes Pads(int64_t p) {
  Attributes a;
  a.Set("pads", I{p, p, p, p});
  return a;
}

TEST_P(WidenedSlices, ConvAndFusedConvByRows) {
  const DType t = GetParam();
  for (int64_t n : {37, 32, 7}) {  // slices 16+16+5, 16+16, one slice
    Tensor x = Random({n, 4, 7, 7}, 1, t), w = Random({6, 4, 3, 3}, 2, t), b = Random({6}, 3, t);
    ExpectMatch("Conv n=" + std::to_string(n), OpKind::kConv, Pads(1), {x, w, b}, 1);
    Attributes fused = Pads(1);
    fused.Set("activation", std::string("Relu"));
    Tensor z = Random({n, 6, 7, 7}, 4, t);
    ExpectMatch("FusedConv + Z + Relu n=" + std::to_string(n), OpKind::kFusedConv, fused, {x, w, b, z}, 1);
  }
}

TEST_P(WidenedSlices, ConvGradSplitsRowsAndSumsWeights) {
  const DType t = GetParam();
  const Attributes a = Pads(1);
  Tensor x = Random({37, 4, 7, 7}, 5, t), w = Random({6, 4, 3, 3}, 6, t), dy = Random({37, 6, 7, 7}, 7, t);
  ExpectMatch("ConvGrad", OpKind::kConvGrad, a, {dy, x, w}, 3);
  ExpectMatch("ConvGrad dW unused", OpKind::kConvGrad, a, {dy, x, w}, 3, {false, true, false});
  ExpectMatch("ConvGrad dX unused", OpKind::kConvGrad, a, {dy, x, w}, 3, {true, false, false});
  ExpectMatch("ConvGrad dX only", OpKind::kConvGrad, a, {dy, x, w}, 1);
}

TEST_P(WidenedSlices, GemmAndMatMul) {
  const DType t = GetParam();
  Attributes plain, trans_b, trans_a;
  trans_b.Set("transB", int64_t{1});
  trans_a.Set("transA", int64_t{1});
  Tensor a = Random({37, 12}, 8, t), w = Random({5, 12}, 9, t);
  ExpectMatch("Gemm transB, bias [N]", OpKind::kGemm, trans_b, {a, w, Random({5}, 10, t)}, 1);
  ExpectMatch("Gemm, C [1, N]", OpKind::kGemm, plain, {a, Random({12, 5}, 12, t), Random({1, 5}, 13, t)}, 1);
  // The weight gradient dY^T X: rows are the batch, the result is summed.
  ExpectMatch("Gemm transA (dW)", OpKind::kGemm, trans_a, {Random({37, 5}, 14, t), a}, 1);
  ExpectMatch("MatMul 2-D", OpKind::kMatMul, plain, {a, Random({12, 7}, 15, t)}, 1);
  ExpectMatch("MatMul 3-D x 2-D", OpKind::kMatMul, plain, {Random({37, 3, 12}, 16, t), Random({12, 7}, 17, t)}, 1);
}

// Scratch: slicing shrinks it; a summed output larger than the saving (a
// wide dW from a short batch) keeps the whole batch.
TEST_P(WidenedSlices, SlicingOnlyWhereItSavesScratch) {
  const DType t = GetParam();
  auto scratch = [&](OpKind op, const Attributes& a, const std::vector<Tensor>& in, size_t bytes) {
    cpu::onednn::SetWidenedSliceBytes(bytes);
    ir::InferContext ictx;
    ictx.attrs = &a;
    ictx.opset = 21;
    for (const Tensor& x : in) {
      ictx.inputs.push_back(ir::TensorType::Of(x.dtype(), x.dims()));
      ictx.values.push_back(nullptr);
    }
    ictx.outputs.resize(1);
    ictx.output_values.resize(1);
    EXPECT_TRUE(ir::Schema(op).infer(ictx).ok());
    KernelInit init;
    init.op = op;
    init.attrs = &a;
    init.threads = 2;
    for (const Tensor& x : in) init.inputs.push_back(TensorSpec{x.dtype(), x.dims(), nullptr});
    init.outputs.push_back(TensorSpec{ictx.outputs[0].dtype, ictx.outputs[0].shape.static_dims(), nullptr});
    auto k = Registry::Global().Create(init, "onednn-widened");
    EXPECT_TRUE(k.ok()) << k.status().ToString();
    return k.ok() ? (*k)->scratch_bytes() : size_t{0};
  };
  const Attributes pads = Pads(1);
  const std::vector<Tensor> conv = {Random({128, 4, 8, 8}, 1, t), Random({8, 4, 3, 3}, 2, t)};
  EXPECT_LT(scratch(OpKind::kConv, pads, conv, 1), scratch(OpKind::kConv, pads, conv, size_t{1} << 30) / 4);
  Attributes trans_a;
  trans_a.Set("transA", int64_t{1});
  const std::vector<Tensor> dw = {Random({40, 64}, 3, t), Random({40, 256}, 4, t)};  // dW [64, 256] from 40 rows
  EXPECT_EQ(scratch(OpKind::kGemm, trans_a, dw, 1), scratch(OpKind::kGemm, trans_a, dw, size_t{1} << 30));
}

}  // namespace
}  // namespace amptrain::kernels::gradtest
