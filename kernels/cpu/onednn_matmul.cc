// oneDNN MatMul and Gemm via dnnl::matmul, fp32 and bf16.
//   MatMul: numpy semantics; 1-D operands are promoted and both operands are
//           given the same rank with leading 1s so oneDNN broadcasts batches.
//   Gemm:   transA/transB are strided memory descriptors (no copies); alpha
//           is an output scale; C is fused as a broadcast bias when
//           alpha == 1 and beta == 1 (ignored when beta == 0). Other
//           alpha/beta/C combinations fall back to the reference kernel.
// A constant B (weights known at plan time) is reordered once into the
// layout oneDNN picks for it. Where oneDNN 2.6 has only its reference
// implementation (e.g. a bias broadcast along N: C of shape [M, 1] or [M, N])
// the reference kernel runs instead.
#include "kernels/cpu/onednn_common.h"

namespace amptrain::kernels::cpu::onednn {

namespace {

using dims_t = std::vector<int64_t>;

dnnl::memory::desc Strided(const dims_t& dims, const dims_t& strides, DType t) {
  return dnnl::memory::desc(Dims(dims), DataType(t), Dims(strides));
}

struct MatMulShapes {
  dnnl::memory::desc a, b, dst, bias;
  dims_t b_dims;
  float alpha = 1.0f;
  bool has_bias = false;
};

StatusOr<MatMulShapes> GemmShapes(const KernelInit& init, DType t) {
  const dims_t& ad = init.inputs[0].dims;
  const dims_t& bd = init.inputs[1].dims;
  if (ad.size() != 2 || bd.size() != 2) return init.Error("A and B must be 2-D");
  const bool ta = init.attrs->Int("transA", 0) != 0, tb = init.attrs->Int("transB", 0) != 0;
  AMP_ASSIGN_OR_RETURN(float alpha, init.attrs->GetFloat("alpha", 1.0f));
  AMP_ASSIGN_OR_RETURN(float beta, init.attrs->GetFloat("beta", 1.0f));
  const int64_t m = ta ? ad[1] : ad[0], k = ta ? ad[0] : ad[1], n = tb ? bd[0] : bd[1];
  MatMulShapes s;
  s.alpha = alpha;
  s.a = Strided({m, k}, ta ? dims_t{1, m} : dims_t{k, 1}, t);
  s.b_dims = {k, n};
  s.b = Strided({k, n}, tb ? dims_t{1, k} : dims_t{n, 1}, t);
  s.dst = PlainDesc({m, n}, t);
  if (init.inputs.size() > 2 && init.inputs[2].present() && beta != 0.0f) {
    const dims_t& cd = init.inputs[2].dims;
    if (alpha != 1.0f || beta != 1.0f) return init.Error("C with alpha/beta other than 1 is not fused");
    if (cd.size() > 2 || init.inputs[2].dtype != t) return init.Error("C shape/dtype");
    s.bias = PlainDesc({cd.size() == 2 ? cd[0] : 1, cd.empty() ? 1 : cd.back()}, t);
    s.has_bias = true;
  }
  return s;
}

StatusOr<MatMulShapes> MatMulShapesOf(const KernelInit& init, DType t) {
  dims_t ad = init.inputs[0].dims, bd = init.inputs[1].dims;
  if (ad.empty() || bd.empty() || init.inputs.size() != 2) return init.Error("operands must have rank >= 1");
  if (ad.size() == 1) ad.insert(ad.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  const size_t rank = std::max(ad.size(), bd.size());
  ad.insert(ad.begin(), rank - ad.size(), 1);
  bd.insert(bd.begin(), rank - bd.size(), 1);
  dims_t yd(rank);
  for (size_t i = 0; i + 2 < rank; ++i) yd[i] = std::max(ad[i], bd[i]);
  yd[rank - 2] = ad[rank - 2], yd[rank - 1] = bd[rank - 1];
  MatMulShapes s;
  s.a = PlainDesc(ad, t);
  s.b_dims = bd;
  s.b = PlainDesc(bd, t);
  s.dst = PlainDesc(yd, t);
  return s;
}

StatusOr<std::unique_ptr<Kernel>> MakeMatMul(const KernelInit& init) {
  if (!init.attrs || init.inputs.size() < 2 || init.outputs.size() != 1)
    return init.Error("expects inputs A, B[, C] and one output");
  const DType t = init.inputs[0].dtype;
  if (init.inputs[1].dtype != t) return init.Error("mixed dtypes");
  auto shapes = init.op == OpKind::kGemm ? GemmShapes(init, t) : MatMulShapesOf(init, t);
  if (!shapes.ok()) return shapes.status();
  MatMulShapes& s = *shapes;
  return Guarded(init, [&]() -> StatusOr<std::unique_ptr<Kernel>> {
    const ir::Tensor* bval = init.inputs[1].value;
    const bool reorder = bval && bval->dtype() == t;
    dnnl::memory::desc b_any =
        reorder ? dnnl::memory::desc(Dims(s.b_dims), DataType(t), dnnl::memory::format_tag::any) : s.b;
    auto desc = s.has_bias ? dnnl::matmul::desc(s.a, b_any, s.bias, s.dst) : dnnl::matmul::desc(s.a, b_any, s.dst);
    dnnl::primitive_attr attr = UserScratchpad();
    if (s.alpha != 1.0f) attr.set_output_scales(0, {s.alpha});
    dnnl::matmul::primitive_desc pd(desc, attr, Engine());
    if (IsReferenceImpl(pd)) return Unimplemented(init.Describe(), ": oneDNN has only its reference matmul here");
    std::vector<Binding> bind = {{DNNL_ARG_SRC, Binding::kInput, 0, s.a}, {DNNL_ARG_DST, Binding::kOutput, 0, s.dst}};
    std::vector<dnnl::memory> owned;
    if (reorder) {
      owned.push_back(ReorderConstant(*bval, s.b, pd.weights_desc()));
      bind.push_back({DNNL_ARG_WEIGHTS, Binding::kOwned, 0, {}});
    } else {
      bind.push_back({DNNL_ARG_WEIGHTS, Binding::kInput, 1, s.b});
    }
    if (s.has_bias) bind.push_back({DNNL_ARG_BIAS, Binding::kInput, 2, s.bias});
    return std::unique_ptr<Kernel>(
        new PrimitiveKernel(init.Describe(), dnnl::matmul(pd), std::move(bind), std::move(owned)));
  });
}

}  // namespace

void RegisterOneDnnMatMul(Registry& r) {
  AddOneDnn(r, OpKind::kMatMul, MakeMatMul);
  AddOneDnn(r, OpKind::kGemm, MakeMatMul);
}

}  // namespace amptrain::kernels::cpu::onednn
