// cuDNN Conv, FusedConv and ConvGrad over NCHW, 2-D, fp32/fp16/bf16, with
// the CPU kernels' contracts (kernels/cpu/conv.cc, fused_conv.cc,
// grad_conv.cc): groups, strides, dilations, pads, optional bias; FusedConv's
// optional residual Z and "Relu" activation; ConvGrad(dY, X, W) -> dX, dW,
// dB, any of them absent (the entry skips unused outputs: dX of the first
// convolution is never computed); ConvTranspose (kernels/cpu/conv_transpose.cc)
// as the backward-data of the convolution it transposes, bias after.
//
// cuDNN accumulates in fp32 for every dtype (the convolution descriptor's
// compute type is float): fp32 data uses FMA kernels only (CUDNN_FMA_MATH, no
// TF32, like cuBLAS here), fp16/bf16 data tensor cores. The bias, residual and
// Relu are one pass after the convolution (cudnn_aux.cu), so a low-precision
// Y with a bias is rounded twice (the CPU reference: once); dB is a float
// column sum of dY (LaunchReduceSum).
//
// Declined (the entry's accepts): spatial ranks other than 2, pads whose
// begin and end differ (SAME_* with an odd total; cuDNN pads symmetrically),
// empty tensors and dims beyond int.
//
// Algorithms: chosen at the first Run, once per kernel (a kernel is made per
// plan and shape), by cudnnFind*AlgorithmEx on the run's buffers, and cached.
// Among the algorithms that succeed within the workspace, the fastest
// deterministic one wins (the bits then repeat from run to run), else the
// fastest; fp32 skips tensor-op results and always runs with FMA math.
// Without any usable result: implicit GEMM (forward) or algorithm 1
// (backward), deterministic. The workspace is the kernel's
// scratch (the executor's arena), a fixed kConvWorkspaceBytes asked at plan
// time, before any GPU work: algorithms that need more are never chosen.
#include <array>
#include <optional>
#include <string>
#include <utility>

#include <spdlog/spdlog.h>

#include "kernels/cpu/conv_geometry.h"
#include "kernels/cuda/cudnn_common.h"

namespace amptrain::kernels::cuda {

namespace {

// The workspace of every convolution kernel: enough for the implicit-GEMM,
// Winograd and most FFT-tiling algorithms at ResNet-50 sizes; live only
// during the kernel's step, so it adds at most this much to a plan's peak.
constexpr size_t kConvWorkspaceBytes = size_t{256} << 20;

struct ConvShape {
  DType t = DType::kFloat32;
  Dims4 x, w, y;
  int pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1, group = 1;
};

// What every cuDNN convolution declines (X, W and Y of `init`: 2-D, not
// empty, dims within int, symmetric pads), or "". `window` gets the resolved
// window when the checks pass; it stays empty where the node's attributes are
// malformed (the factory reports those).
std::string DeclinesShape(const KernelInit& init, bool transposed, std::optional<ir::WindowGeometry>* window) {
  if (init.inputs.size() < 2 || init.outputs.empty() || !init.attrs) return "";
  const auto& x = init.inputs[0].dims;
  const auto& w = init.inputs[1].dims;
  const auto& y = init.outputs[0].dims;
  if (x.size() != 4 || w.size() != 4 || y.size() != 4) return "only 2-D convolutions";
  for (const auto* d : {&x, &w, &y})
    for (int64_t v : *d)
      if (v <= 0) return "empty tensors";
  if (!FitsInt(x) || !FitsInt(w) || !FitsInt(y)) return "dims beyond int";
  auto g = cpu::ResolveWindow(init, {w[2], w[3]}, transposed);
  if (!g.ok()) return "";
  if (g->pads_begin != g->pads_end) return "asymmetric pads";
  *window = std::move(*g);
  return "";
}

// Why cuDNN cannot run this convolution (X, W and Y of `fwd`), or "".
std::string Declines(const KernelInit& fwd) {
  std::optional<ir::WindowGeometry> unused;
  return DeclinesShape(fwd, false, &unused);
}

StatusOr<ConvShape> PlanConv(const KernelInit& fwd, DType t) {
  const auto& x = fwd.inputs[0].dims;
  const auto& w = fwd.inputs[1].dims;
  const auto& y = fwd.outputs[0].dims;
  if (x.size() != 4 || w.size() != 4) return fwd.Error("X and W must be 4-D");
  AMP_ASSIGN_OR_RETURN(int64_t group, fwd.attrs->GetInt("group", 1));
  if (group < 1 || w[0] % group != 0 || x[1] != w[1] * group)
    return fwd.Error("channels: input ", x[1], ", weight [", w[0], ", ", w[1], ", ...], group ", group);
  AMP_ASSIGN_OR_RETURN(ir::WindowGeometry g, cpu::ResolveWindow(fwd, {w[2], w[3]}, false));
  if (y[0] != x[0] || y[1] != w[0]) return fwd.Error("output must have batch ", x[0], " and ", w[0], " channels");
  if (const std::string why = Declines(fwd); !why.empty())
    return Unimplemented(fwd.Describe(), ": cuDNN convolution: ", why);
  ConvShape s;
  s.t = t;
  s.x = ToDims4(x), s.w = ToDims4(w), s.y = ToDims4(y);
  s.pad_h = static_cast<int>(g.pads_begin[0]), s.pad_w = static_cast<int>(g.pads_begin[1]);
  s.stride_h = static_cast<int>(g.strides[0]), s.stride_w = static_cast<int>(g.strides[1]);
  s.dil_h = static_cast<int>(g.dilations[0]), s.dil_w = static_cast<int>(g.dilations[1]);
  s.group = static_cast<int>(group);
  return s;
}

struct Algo {
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

// The fastest deterministic result that succeeded within the workspace,
// else the fastest such result; nullopt if none. fp32 skips tensor-op
// results and runs the others with CUDNN_FMA_MATH (cuDNN may report
// DEFAULT_MATH, which would allow TF32; PyTorch overrides it the same way).
template <class Perf>
std::optional<Algo> PickAlgo(const Perf* perf, int n, DType t) {
  int any = -1;
  for (int i = 0; i < n && any < 0; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > kConvWorkspaceBytes) continue;
    if (t == DType::kFloat32 && perf[i].mathType != CUDNN_FMA_MATH && perf[i].mathType != CUDNN_DEFAULT_MATH) continue;
    if (perf[i].determinism == CUDNN_DETERMINISTIC) any = i;
  }
  for (int i = 0; i < n && any < 0; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > kConvWorkspaceBytes) continue;
    if (t == DType::kFloat32 && perf[i].mathType != CUDNN_FMA_MATH && perf[i].mathType != CUDNN_DEFAULT_MATH) continue;
    any = i;
  }
  if (any < 0) return std::nullopt;
  return Algo{static_cast<int>(perf[any].algo), t == DType::kFloat32 ? CUDNN_FMA_MATH : perf[any].mathType};
}

// With --verbose: what cudnnFind measured for one pass of one convolution
// (every algorithm that ran: time, workspace, math, determinism) and which
// one PickAlgo took, so a slow convolution can be told from a slow choice.
template <class Perf>
void LogFind(const char* pass, const ConvShape& s, const Perf* perf, int n, const std::optional<Algo>& chosen) {
  if (!spdlog::should_log(spdlog::level::debug)) return;
  std::string found;
  for (int i = 0; i < n; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
    found += StrCat(" ", static_cast<int>(perf[i].algo), perf[i].mathType == CUDNN_TENSOR_OP_MATH ? "t" : "",
                    perf[i].determinism == CUDNN_DETERMINISTIC ? "" : "~", ":", perf[i].time, "ms/",
                    perf[i].memory >> 20, "MiB");
  }
  spdlog::debug("cudnn {} {} x[{},{},{},{}] w[{},{},{},{}] s{} g{}: chose {} of{}", pass, ir::DTypeName(s.t), s.x.n,
                s.x.c, s.x.h, s.x.w, s.w.n, s.w.c, s.w.h, s.w.w, s.stride_h, s.group,
                chosen ? std::to_string(chosen->algo) : std::string("none"), found);
}

// The descriptors of one convolution and its chosen algorithms.
class CudnnConv {
 public:
  explicit CudnnConv(ConvShape s) : s_(s) {}

  const ConvShape& shape() const { return s_; }

  Status Forward(cudnnHandle_t h, const void* x, const void* w, void* y, void* ws) {
    AMP_RETURN_IF_ERROR(Prepare());
    if (!fwd_) {
      std::array<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> perf{};
      int n = 0;
      CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(h, xd_.get(), x, wd_.get(), w, cd_.get(), yd_.get(), y,
                                                         static_cast<int>(perf.size()), &n, perf.data(), ws,
                                                         kConvWorkspaceBytes));
      fwd_ = PickAlgo(perf.data(), n, s_.t);
      LogFind("fwd", s_, perf.data(), n, fwd_);
      if (!fwd_) fwd_ = Algo{CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, DefaultMath()};
    }
    CUDNN_CHECK(cudnnSetConvolutionMathType(cd_.get(), fwd_->math));
    const float one = 1.0f, zero = 0.0f;
    CUDNN_CHECK(cudnnConvolutionForward(h, &one, xd_.get(), x, wd_.get(), w, cd_.get(),
                                        static_cast<cudnnConvolutionFwdAlgo_t>(fwd_->algo), ws, kConvWorkspaceBytes,
                                        &zero, yd_.get(), y));
    return Status::Ok();
  }

  Status BackwardData(cudnnHandle_t h, const void* dy, const void* w, void* dx, void* ws) {
    AMP_RETURN_IF_ERROR(Prepare());
    if (!bwd_data_) {
      std::array<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT> perf{};
      int n = 0;
      CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(h, wd_.get(), w, yd_.get(), dy, cd_.get(), xd_.get(),
                                                              dx, static_cast<int>(perf.size()), &n, perf.data(), ws,
                                                              kConvWorkspaceBytes));
      bwd_data_ = PickAlgo(perf.data(), n, s_.t);
      LogFind("bwd-data", s_, perf.data(), n, bwd_data_);
      if (!bwd_data_) bwd_data_ = Algo{CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, DefaultMath()};
    }
    CUDNN_CHECK(cudnnSetConvolutionMathType(cd_.get(), bwd_data_->math));
    const float one = 1.0f, zero = 0.0f;
    CUDNN_CHECK(cudnnConvolutionBackwardData(h, &one, wd_.get(), w, yd_.get(), dy, cd_.get(),
                                             static_cast<cudnnConvolutionBwdDataAlgo_t>(bwd_data_->algo), ws,
                                             kConvWorkspaceBytes, &zero, xd_.get(), dx));
    return Status::Ok();
  }

  Status BackwardFilter(cudnnHandle_t h, const void* x, const void* dy, void* dw, void* ws) {
    AMP_RETURN_IF_ERROR(Prepare());
    if (!bwd_filter_) {
      std::array<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT> perf{};
      int n = 0;
      CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(h, xd_.get(), x, yd_.get(), dy, cd_.get(),
                                                                wd_.get(), dw, static_cast<int>(perf.size()), &n,
                                                                perf.data(), ws, kConvWorkspaceBytes));
      bwd_filter_ = PickAlgo(perf.data(), n, s_.t);
      LogFind("bwd-filter", s_, perf.data(), n, bwd_filter_);
      if (!bwd_filter_) bwd_filter_ = Algo{CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, DefaultMath()};
    }
    CUDNN_CHECK(cudnnSetConvolutionMathType(cd_.get(), bwd_filter_->math));
    const float one = 1.0f, zero = 0.0f;
    CUDNN_CHECK(cudnnConvolutionBackwardFilter(h, &one, xd_.get(), x, yd_.get(), dy, cd_.get(),
                                               static_cast<cudnnConvolutionBwdFilterAlgo_t>(bwd_filter_->algo), ws,
                                               kConvWorkspaceBytes, &zero, wd_.get(), dw));
    return Status::Ok();
  }

 private:
  cudnnMathType_t DefaultMath() const { return s_.t == DType::kFloat32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH; }

  // The descriptors, made at the first call (they need the cuDNN library
  // loaded, which creation must not require).
  Status Prepare() {
    if (prepared_) return Status::Ok();
    AMP_RETURN_IF_ERROR(SetTensor4d(xd_, s_.t, s_.x));
    AMP_RETURN_IF_ERROR(SetTensor4d(yd_, s_.t, s_.y));
    AMP_RETURN_IF_ERROR(wd_.Make());
    CUDNN_CHECK(cudnnSetFilter4dDescriptor(wd_.get(), CudnnType(s_.t), CUDNN_TENSOR_NCHW, s_.w.n, s_.w.c, s_.w.h,
                                           s_.w.w));
    AMP_RETURN_IF_ERROR(cd_.Make());
    CUDNN_CHECK(cudnnSetConvolution2dDescriptor(cd_.get(), s_.pad_h, s_.pad_w, s_.stride_h, s_.stride_w, s_.dil_h,
                                                s_.dil_w, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CUDNN_CHECK(cudnnSetConvolutionGroupCount(cd_.get(), s_.group));
    CUDNN_CHECK(cudnnSetConvolutionMathType(cd_.get(), DefaultMath()));
    int n = 0, c = 0, hh = 0, ww = 0;
    CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(cd_.get(), xd_.get(), wd_.get(), &n, &c, &hh, &ww));
    if (n != s_.y.n || c != s_.y.c || hh != s_.y.h || ww != s_.y.w)
      return Internal("cuDNN's convolution output [", n, ", ", c, ", ", hh, ", ", ww, "] differs from the planned one");
    prepared_ = true;
    return Status::Ok();
  }

  ConvShape s_;
  bool prepared_ = false;
  TensorDesc xd_, yd_;
  FilterDesc wd_;
  ConvDesc cd_;
  std::optional<Algo> fwd_, bwd_data_, bwd_filter_;
};

// Conv(X, W, B?) and FusedConv(X, W, B?, Z?): the convolution, then bias,
// residual and Relu in one pass.
class ConvKernel final : public Kernel {
 public:
  ConvKernel(ConvShape s, bool relu) : conv_(s), relu_(relu) {}

  Status Run(KernelContext& ctx) override {
    const cudaStream_t stream = StreamOf(ctx);
    AMP_ASSIGN_OR_RETURN(cudnnHandle_t h, CudnnHandle(stream));
    void* y = ctx.outputs[0].data;
    AMP_RETURN_IF_ERROR(conv_.Forward(h, ctx.inputs[0].data, ctx.inputs[1].data, y, ctx.scratch));
    const void* bias = ctx.inputs.size() > 2 ? ctx.inputs[2].data : nullptr;
    const void* z = ctx.inputs.size() > 3 ? ctx.inputs[3].data : nullptr;
    const Dims4& d = conv_.shape().y;
    CUDA_CHECK(LaunchBiasAct(*ElemOf(conv_.shape().t), y, bias, z, d.n, d.c, int64_t{d.h} * d.w, relu_, stream));
    return Status::Ok();
  }
  size_t scratch_bytes() const override { return kConvWorkspaceBytes; }

 private:
  CudnnConv conv_;
  bool relu_;
};

StatusOr<std::unique_ptr<Kernel>> MakeConv(const KernelInit& init) {
  const bool fused = init.op == OpKind::kFusedConv;
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, fused ? 4 : 3, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {1, 2, 3}, {0}));
  AMP_ASSIGN_OR_RETURN(ConvShape s, PlanConv(init, t));
  if (init.inputs.size() > 2 && init.inputs[2].present() && init.inputs[2].dims != std::vector<int64_t>{s.w.n})
    return init.Error("bias must have ", s.w.n, " elements");
  bool relu = false;
  if (fused) {
    AMP_ASSIGN_OR_RETURN(std::string act, init.attrs->GetString("activation", ""));
    if (act != "" && act != "Relu") return init.Error("activation '", act, "' is not supported");
    relu = act == "Relu";
    if (init.inputs.size() > 3 && init.inputs[3].present() && init.inputs[3].dims != init.outputs[0].dims)
      return init.Error("residual Z must have the shape of Y");
  }
  return std::unique_ptr<Kernel>(std::make_unique<ConvKernel>(s, relu));
}

// ConvGrad(dY, X, W) -> dX?, dW?, dB?: outputs with data == nullptr skipped.
class ConvGradKernel final : public Kernel {
 public:
  explicit ConvGradKernel(ConvShape s) : conv_(s) {
    const Dims4& y = s.y;
    db_.kept_rank = 1, db_.red_rank = 2;
    db_.kept_dims[0] = y.c, db_.kept_strides[0] = int64_t{y.h} * y.w;
    db_.red_dims[0] = y.n, db_.red_strides[0] = int64_t{y.c} * y.h * y.w;
    db_.red_dims[1] = int64_t{y.h} * y.w, db_.red_strides[1] = 1;
    db_.outputs = y.c, db_.count = int64_t{y.n} * y.h * y.w;
  }

  Status Run(KernelContext& ctx) override {
    const cudaStream_t stream = StreamOf(ctx);
    AMP_ASSIGN_OR_RETURN(cudnnHandle_t h, CudnnHandle(stream));
    const void* dy = ctx.inputs[0].data;
    const void* x = ctx.inputs[1].data;
    const void* w = ctx.inputs[2].data;
    if (void* dx = ctx.outputs[0].data) AMP_RETURN_IF_ERROR(conv_.BackwardData(h, dy, w, dx, ctx.scratch));
    if (ctx.outputs.size() > 1 && ctx.outputs[1].data)
      AMP_RETURN_IF_ERROR(conv_.BackwardFilter(h, x, dy, ctx.outputs[1].data, ctx.scratch));
    if (ctx.outputs.size() > 2 && ctx.outputs[2].data)
      CUDA_CHECK(LaunchReduceSum(*ElemOf(conv_.shape().t), dy, ctx.outputs[2].data, db_, 1.0f, stream));
    return Status::Ok();
  }
  size_t scratch_bytes() const override { return kConvWorkspaceBytes; }

 private:
  CudnnConv conv_;
  Reduction db_;  // dB = dY summed over N and the plane
};

StatusOr<std::unique_ptr<Kernel>> MakeConvGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 3, 3, 1, 3));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {1, 2}, {0, 1, 2}));
  const auto& dy = init.inputs[0].dims;
  const auto& x = init.inputs[1].dims;
  const auto& w = init.inputs[2].dims;
  if (x.size() != 4 || w.size() != 4 || dy.size() != 4 || dy[0] != x[0] || dy[1] != w[0])
    return init.Error("dY, X and W must be 4-D, dY [N, M, out...]");
  AMP_ASSIGN_OR_RETURN(ConvShape s, PlanConv(ForwardOf(init, 1), t));
  if (init.outputs[0].dims != x) return init.Error("dX must have X's dims");
  if (init.outputs.size() > 1 && init.outputs[1].dims != w) return init.Error("dW must have W's dims");
  if (init.outputs.size() > 2 && init.outputs[2].dims != std::vector<int64_t>{w[0]})
    return init.Error("dB must have ", w[0], " elements");
  return std::unique_ptr<Kernel>(std::make_unique<ConvGradKernel>(s));
}

// ConvTranspose(X, W, B?) -> Y: cuDNN's backward-data with the roles
// transposed. ConvTranspose's X [N, C, ih, iw] is the convolution's dY, its
// W [C, M/group, kh, kw] the convolution's filter (C output channels, M/group
// input channels per group) and its Y [N, M, oh, ow] the convolution's dX.
// The forward convolution of Y must give back X's dims, which holds for
// symmetric non-negative pads and output_padding < stride (each dim); the
// rest is declined.
std::string DeclinesTransposed(const KernelInit& init) {
  std::optional<ir::WindowGeometry> g;
  if (std::string why = DeclinesShape(init, true, &g); !why.empty() || !g) return why;
  const auto& x = init.inputs[0].dims;
  const auto& y = init.outputs[0].dims;
  for (size_t d = 0; d < 2; ++d) {
    if (g->pads_begin[d] < 0) return "negative pads";
    // The convolution of Y back to X's size: floor((o + 2p - dk) / s) + 1.
    const int64_t span = y[2 + d] + 2 * g->pads_begin[d] - g->extent(d);
    if (span < 0 || span / g->strides[d] + 1 != x[2 + d]) return "output_padding not below the stride";
  }
  return "";
}

class ConvTransposeKernel final : public Kernel {
 public:
  explicit ConvTransposeKernel(ConvShape s) : conv_(s) {}

  Status Run(KernelContext& ctx) override {
    const cudaStream_t stream = StreamOf(ctx);
    AMP_ASSIGN_OR_RETURN(cudnnHandle_t h, CudnnHandle(stream));
    void* y = ctx.outputs[0].data;
    AMP_RETURN_IF_ERROR(conv_.BackwardData(h, ctx.inputs[0].data, ctx.inputs[1].data, y, ctx.scratch));
    const void* bias = ctx.inputs.size() > 2 ? ctx.inputs[2].data : nullptr;
    const Dims4& d = conv_.shape().x;  // the convolution's input: Y
    CUDA_CHECK(LaunchBiasAct(*ElemOf(conv_.shape().t), y, bias, nullptr, d.n, d.c, int64_t{d.h} * d.w, false, stream));
    return Status::Ok();
  }
  size_t scratch_bytes() const override { return kConvWorkspaceBytes; }

 private:
  CudnnConv conv_;
};

StatusOr<std::unique_ptr<Kernel>> MakeConvTranspose(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 3, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {1, 2}, {0}));
  const auto& x = init.inputs[0].dims;
  const auto& w = init.inputs[1].dims;
  const auto& y = init.outputs[0].dims;
  if (x.size() != 4 || w.size() != 4 || y.size() != 4) {
    if (const std::string why = DeclinesTransposed(init); !why.empty())
      return Unimplemented(init.Describe(), ": cuDNN convolution: ", why);
    return init.Error("X, W and Y must be 4-D");
  }
  AMP_ASSIGN_OR_RETURN(int64_t group, init.attrs->GetInt("group", 1));
  if (group < 1 || x[1] % group != 0 || x[1] != w[0])
    return init.Error("channels: input ", x[1], ", weight [", w[0], ", ", w[1], ", ...], group ", group);
  const int64_t m = w[1] * group;
  if (y[0] != x[0] || y[1] != m) return init.Error("output must have batch ", x[0], " and ", m, " channels");
  if (init.inputs.size() > 2 && init.inputs[2].present() && init.inputs[2].dims != std::vector<int64_t>{m})
    return init.Error("bias must have ", m, " elements");
  AMP_ASSIGN_OR_RETURN(ir::WindowGeometry g, cpu::ResolveWindow(init, {w[2], w[3]}, true));
  if (const std::string why = DeclinesTransposed(init); !why.empty())
    return Unimplemented(init.Describe(), ": cuDNN convolution: ", why);
  ConvShape s;
  s.t = t;
  s.x = ToDims4(y), s.w = ToDims4(w), s.y = ToDims4(x);
  s.pad_h = static_cast<int>(g.pads_begin[0]), s.pad_w = static_cast<int>(g.pads_begin[1]);
  s.stride_h = static_cast<int>(g.strides[0]), s.stride_w = static_cast<int>(g.strides[1]);
  s.dil_h = static_cast<int>(g.dilations[0]), s.dil_w = static_cast<int>(g.dilations[1]);
  s.group = static_cast<int>(group);
  return std::unique_ptr<Kernel>(std::make_unique<ConvTransposeKernel>(s));
}

}  // namespace

void RegisterCudnnConv(Registry& r) {
  for (OpKind op : {OpKind::kConv, OpKind::kFusedConv}) {
    KernelEntry e = CudaEntry(op, "cudnn", MakeConv);
    e.accepts = [](const KernelInit& init) { return Declines(init).empty(); };
    r.Add(std::move(e));
  }
  KernelEntry e = CudaEntry(OpKind::kConvGrad, "cudnn", MakeConvGrad);
  e.accepts = [](const KernelInit& init) { return init.inputs.size() < 3 || Declines(ForwardOf(init, 1)).empty(); };
  e.skips_unused_outputs = true;
  r.Add(std::move(e));
  KernelEntry t = CudaEntry(OpKind::kConvTranspose, "cudnn", MakeConvTranspose);
  t.accepts = [](const KernelInit& init) { return DeclinesTransposed(init).empty(); };
  r.Add(std::move(t));
}

void RegisterCudnn(Registry& r) {
  RegisterCudnnConv(r);
  RegisterCudnnBatchNorm(r);
  RegisterCudnnPool(r);
}

}  // namespace amptrain::kernels::cuda
