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
// Channels-last (TensorSpec::channels_last, set by the executor's layout step
// where every producer and reader of a value takes it): fp16/bf16 X and Y
// (dY and dX; FusedConv's Z) stored NHWC. cuDNN runs a convolution NHWC
// when any of its activations is stored so and its channels per group (in
// and out) are multiples of 8, which its NHWC tensor-core kernels need, else
// NCHW (ResNet's first convolution, 3 input channels). Activations stored in
// the other layout (the batch, a graph input, before the first convolution;
// a Y whose readers take NCHW only; the NHWC neighbours of an NCHW run) go
// through the kernel's scratch (LayoutSides): an input copied into the run's
// layout first, an output computed in it and copied back after, so the
// layout step never has to put a convolution's neighbours back to NCHW
// because of it. cuDNN's NHWC tensor-core kernels want the filter
// NHWC too (KRSC): the kernel transposes W from the node's KCRS into its
// scratch for the forward and backward-data passes, and computes dW as KRSC
// in scratch before transposing it into the KCRS output. The bias/residual/
// Relu pass and dB see NHWC as [N*H*W, C]. fp32 declines channels-last.
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
  bool nhwc = false;  // cuDNN runs NHWC (KRSC filter)

  size_t FilterBytes() const { return static_cast<size_t>(w.n) * w.c * w.h * w.w * ir::DTypeSize(t); }
  // The scratch: the workspace, then (NHWC) the KRSC filter, then LayoutSides'.
  size_t FilterEnd() const { return kConvWorkspaceBytes + (nhwc ? (FilterBytes() + 255) / 256 * 256 : 0); }
};

int64_t Elements(const Dims4& d) { return int64_t{d.n} * d.c * d.h * d.w; }

// The copy of logical [N, C, H, W] `d` from NCHW into NHWC (to_nhwc:
// y[n, h, w, c] = x[n, c, h, w]) or back.
Broadcast Relayout(const Dims4& d, bool to_nhwc) {
  const int64_t hw = int64_t{d.h} * d.w;
  Broadcast bc;
  bc.rank = 4;
  if (to_nhwc) {
    const int64_t out[4] = {d.n, d.h, d.w, d.c}, st[4] = {d.c * hw, d.w, 1, hw};
    for (int i = 0; i < 4; ++i) bc.out_dims[i] = out[i], bc.a_strides[i] = st[i];
  } else {
    const int64_t out[4] = {d.n, d.c, d.h, d.w}, st[4] = {hw * d.c, 1, int64_t{d.w} * d.c, d.c};
    for (int i = 0; i < 4; ++i) bc.out_dims[i] = out[i], bc.a_strides[i] = st[i];
  }
  return bc;
}

// The activations of one call (Conv: X, Z, Y; ConvGrad: dY, X, dX) in the
// layout cuDNN runs in (`nhwc`): each one stored in the other layout goes
// through a scratch region placed from `begin`: an input copied into the
// run's layout before (In), an output computed in it (Out) and copied back
// after (Done). Absent tensors take nothing.
class LayoutSides {
 public:
  struct Tensor {
    Dims4 dims;
    bool present = false, channels_last = false;
  };
  LayoutSides() = default;
  LayoutSides(const std::vector<Tensor>& tensors, DType t, bool nhwc, size_t begin) : t_(t), nhwc_(nhwc) {
    size_t end = begin;
    for (const Tensor& x : tensors) {
      const bool convert = x.present && x.channels_last != nhwc;
      sides_.push_back({x.dims, convert ? end : 0, convert});
      if (convert) end += (static_cast<size_t>(Elements(x.dims)) * ir::DTypeSize(t) + 255) / 256 * 256;
    }
    end_ = end;
  }
  size_t end() const { return end_; }

  StatusOr<const void*> In(size_t i, const void* data, void* scratch, cudaStream_t stream) const {
    const Side& s = sides_[i];
    if (!s.convert || !data) return data;
    void* copy = static_cast<std::byte*>(scratch) + s.offset;
    CUDA_CHECK(LaunchBroadcastCopy(ir::DTypeSize(t_), data, copy, Elements(s.dims), Relayout(s.dims, nhwc_), stream));
    return static_cast<const void*>(copy);
  }
  void* Out(size_t i, void* data, void* scratch) const {
    const Side& s = sides_[i];
    return s.convert && data ? static_cast<std::byte*>(scratch) + s.offset : data;
  }
  Status Done(size_t i, void* data, void* scratch, cudaStream_t stream) const {
    const Side& s = sides_[i];
    if (s.convert && data)
      CUDA_CHECK(LaunchBroadcastCopy(ir::DTypeSize(t_), static_cast<std::byte*>(scratch) + s.offset, data,
                                     Elements(s.dims), Relayout(s.dims, !nhwc_), stream));
    return Status::Ok();
  }

 private:
  struct Side {
    Dims4 dims;
    size_t offset;
    bool convert;
  };
  std::vector<Side> sides_;
  DType t_ = DType::kFloat32;
  bool nhwc_ = false;
  size_t end_ = 0;
};

// The copy of the filter between the node's KCRS and cuDNN's NHWC-format
// KRSC: y[k, r, s, c] = x[k, c, r, s] (to_krsc), or back.
Broadcast FilterPermutation(const Dims4& w, bool to_krsc) {
  const int64_t k = w.n, c = w.c, r = w.h, s = w.w;
  Broadcast bc;
  bc.rank = 4;
  if (to_krsc) {  // read KCRS (strides c*r*s, r*s, s, 1) in K, R, S, C order
    const int64_t out[4] = {k, r, s, c}, st[4] = {c * r * s, s, 1, r * s};
    for (int d = 0; d < 4; ++d) bc.out_dims[d] = out[d], bc.a_strides[d] = st[d];
  } else {  // read KRSC (strides r*s*c, s*c, c, 1) in K, C, R, S order
    const int64_t out[4] = {k, c, r, s}, st[4] = {r * s * c, 1, s * c, c};
    for (int d = 0; d < 4; ++d) bc.out_dims[d] = out[d], bc.a_strides[d] = st[d];
  }
  return bc;
}

// The LayoutSides of a call's activation specs, as LayoutSides::Tensor, and
// the layout cuDNN runs `s` in (s.nhwc): NHWC when any present one is
// channels-last and the channels per group, in and out, are multiples of 8.
// Channels-last specs are 2-byte data only: channels-last fp32 is an error,
// so the layout step keeps fp32 NCHW.
StatusOr<std::vector<LayoutSides::Tensor>> Activations(const KernelInit& init,
                                                       const std::vector<const TensorSpec*>& specs, ConvShape& s) {
  std::vector<LayoutSides::Tensor> out;
  bool any = false;
  for (const TensorSpec* spec : specs) {
    LayoutSides::Tensor x;
    x.present = spec->present();
    if (x.present) x.dims = ToDims4(spec->dims);
    x.channels_last = x.present && spec->channels_last;
    any = any || x.channels_last;
    out.push_back(x);
  }
  if (any && !ChannelsLastDType(s.t))
    return init.Error("channels-last ", ir::DTypeName(s.t), " is not taken (fp16/bf16 only)");
  s.nhwc = any && s.w.c % 8 == 0 && (s.w.n / s.group) % 8 == 0;
  return out;
}

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

  // The filter as cuDNN reads it: `w` itself (NCHW), or its KRSC copy in the
  // scratch after the workspace.
  StatusOr<const void*> Filter(const void* w, void* scratch, cudaStream_t stream) const {
    if (!s_.nhwc) return w;
    void* krsc = FilterScratch(scratch);
    CUDA_CHECK(LaunchBroadcastCopy(ir::DTypeSize(s_.t), w, krsc, FilterElements(), FilterPermutation(s_.w, true),
                                   stream));
    return static_cast<const void*>(krsc);
  }
  // Where cuDNN writes dW: `dw` (NCHW), or the KRSC scratch that
  // FinishFilterGrad then copies into `dw`.
  void* FilterGradTarget(void* dw, void* scratch) const { return s_.nhwc ? FilterScratch(scratch) : dw; }
  Status FinishFilterGrad(void* dw, void* scratch, cudaStream_t stream) const {
    if (s_.nhwc)
      CUDA_CHECK(LaunchBroadcastCopy(ir::DTypeSize(s_.t), FilterScratch(scratch), dw, FilterElements(),
                                     FilterPermutation(s_.w, false), stream));
    return Status::Ok();
  }

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
  int64_t FilterElements() const { return int64_t{s_.w.n} * s_.w.c * s_.w.h * s_.w.w; }
  void* FilterScratch(void* scratch) const { return static_cast<std::byte*>(scratch) + kConvWorkspaceBytes; }

  // The descriptors, made at the first call (they need the cuDNN library
  // loaded, which creation must not require).
  Status Prepare() {
    if (prepared_) return Status::Ok();
    AMP_RETURN_IF_ERROR(SetTensor4d(xd_, s_.t, s_.x, s_.nhwc));
    AMP_RETURN_IF_ERROR(SetTensor4d(yd_, s_.t, s_.y, s_.nhwc));
    AMP_RETURN_IF_ERROR(wd_.Make());
    CUDNN_CHECK(cudnnSetFilter4dDescriptor(wd_.get(), CudnnType(s_.t), s_.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                           s_.w.n, s_.w.c, s_.w.h, s_.w.w));
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
  // sides: X, Z, Y.
  ConvKernel(ConvShape s, bool relu, LayoutSides sides) : conv_(s), relu_(relu), sides_(std::move(sides)) {}

  Status Run(KernelContext& ctx) override {
    const cudaStream_t stream = StreamOf(ctx);
    AMP_ASSIGN_OR_RETURN(cudnnHandle_t h, CudnnHandle(stream));
    void* scratch = ctx.scratch;
    AMP_ASSIGN_OR_RETURN(const void* x, sides_.In(0, ctx.inputs[0].data, scratch, stream));
    const void* z_in = ctx.inputs.size() > 3 ? ctx.inputs[3].data : nullptr;
    AMP_ASSIGN_OR_RETURN(const void* z, sides_.In(1, z_in, scratch, stream));
    void* y = sides_.Out(2, ctx.outputs[0].data, scratch);
    AMP_ASSIGN_OR_RETURN(const void* w, conv_.Filter(ctx.inputs[1].data, scratch, stream));
    AMP_RETURN_IF_ERROR(conv_.Forward(h, x, w, y, scratch));
    const void* bias = ctx.inputs.size() > 2 ? ctx.inputs[2].data : nullptr;
    const ConvShape& s = conv_.shape();
    const Dims4& d = s.y;
    const int64_t plane = int64_t{d.h} * d.w;
    // NHWC is [N*H*W, C] with planes of one element.
    CUDA_CHECK(LaunchBiasAct(*ElemOf(s.t), y, bias, z, s.nhwc ? d.n * plane : d.n, d.c, s.nhwc ? 1 : plane, relu_,
                             stream));
    return sides_.Done(2, ctx.outputs[0].data, scratch, stream);
  }
  size_t scratch_bytes() const override { return sides_.end(); }

 private:
  CudnnConv conv_;
  bool relu_;
  LayoutSides sides_;
};

StatusOr<std::unique_ptr<Kernel>> MakeConv(const KernelInit& init) {
  const bool fused = init.op == OpKind::kFusedConv;
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, fused ? 4 : 3, 1, 1));
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckDTypes(init, t, {1, 2, 3}, {0}));
  AMP_ASSIGN_OR_RETURN(ConvShape s, PlanConv(init, t));
  const TensorSpec none;
  const TensorSpec* z_spec = init.inputs.size() > 3 ? &init.inputs[3] : &none;
  AMP_ASSIGN_OR_RETURN(std::vector<LayoutSides::Tensor> acts,
                       Activations(init, {&init.inputs[0], z_spec, &init.outputs[0]}, s));
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
  LayoutSides sides(acts, t, s.nhwc, s.FilterEnd());
  return std::unique_ptr<Kernel>(std::make_unique<ConvKernel>(s, relu, std::move(sides)));
}

// ConvGrad(dY, X, W) -> dX?, dW?, dB?: outputs with data == nullptr skipped.
class ConvGradKernel final : public Kernel {
 public:
  // sides: dY, X, dX.
  ConvGradKernel(ConvShape s, LayoutSides sides) : conv_(s), sides_(std::move(sides)) {
    const Dims4& y = s.y;
    const int64_t plane = int64_t{y.h} * y.w;
    db_.kept_rank = 1;
    db_.kept_dims[0] = y.c;
    if (s.nhwc) {  // dY [N*H*W, C]
      db_.red_rank = 1;
      db_.kept_strides[0] = 1;
      db_.red_dims[0] = y.n * plane, db_.red_strides[0] = y.c;
    } else {  // dY [N, C, H*W]
      db_.red_rank = 2;
      db_.kept_strides[0] = plane;
      db_.red_dims[0] = y.n, db_.red_strides[0] = int64_t{y.c} * plane;
      db_.red_dims[1] = plane, db_.red_strides[1] = 1;
    }
    db_.outputs = y.c, db_.count = int64_t{y.n} * plane;
  }

  Status Run(KernelContext& ctx) override {
    const cudaStream_t stream = StreamOf(ctx);
    AMP_ASSIGN_OR_RETURN(cudnnHandle_t h, CudnnHandle(stream));
    void* scratch = ctx.scratch;
    AMP_ASSIGN_OR_RETURN(const void* dy, sides_.In(0, ctx.inputs[0].data, scratch, stream));
    AMP_ASSIGN_OR_RETURN(const void* x, sides_.In(1, ctx.inputs[1].data, scratch, stream));
    if (ctx.outputs[0].data) {
      void* dx = sides_.Out(2, ctx.outputs[0].data, scratch);
      AMP_ASSIGN_OR_RETURN(const void* w, conv_.Filter(ctx.inputs[2].data, scratch, stream));
      AMP_RETURN_IF_ERROR(conv_.BackwardData(h, dy, w, dx, scratch));
      AMP_RETURN_IF_ERROR(sides_.Done(2, ctx.outputs[0].data, scratch, stream));
    }
    if (ctx.outputs.size() > 1 && ctx.outputs[1].data) {  // after dX: the KRSC scratch is free again
      void* dw = ctx.outputs[1].data;
      AMP_RETURN_IF_ERROR(conv_.BackwardFilter(h, x, dy, conv_.FilterGradTarget(dw, scratch), scratch));
      AMP_RETURN_IF_ERROR(conv_.FinishFilterGrad(dw, scratch, stream));
    }
    if (ctx.outputs.size() > 2 && ctx.outputs[2].data)
      CUDA_CHECK(LaunchReduceSum(*ElemOf(conv_.shape().t), dy, ctx.outputs[2].data, db_, 1.0f, stream));
    return Status::Ok();
  }
  size_t scratch_bytes() const override { return sides_.end(); }

 private:
  CudnnConv conv_;
  LayoutSides sides_;
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
  AMP_ASSIGN_OR_RETURN(std::vector<LayoutSides::Tensor> acts,
                       Activations(init, {&init.inputs[0], &init.inputs[1], &init.outputs[0]}, s));
  if (init.outputs[0].present() && init.outputs[0].dims != x) return init.Error("dX must have X's dims");
  if (init.outputs.size() > 1 && init.outputs[1].dims != w) return init.Error("dW must have W's dims");
  if (init.outputs.size() > 2 && init.outputs[2].dims != std::vector<int64_t>{w[0]})
    return init.Error("dB must have ", w[0], " elements");
  LayoutSides sides(acts, t, s.nhwc, s.FilterEnd());
  return std::unique_ptr<Kernel>(std::make_unique<ConvGradKernel>(s, std::move(sides)));
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
    e.channels_last_inputs = op == OpKind::kFusedConv ? 0b1001u : 0b1u;  // X (and Z)
    e.channels_last_outputs = 0b1;                                       // Y
    r.Add(std::move(e));
  }
  KernelEntry e = CudaEntry(OpKind::kConvGrad, "cudnn", MakeConvGrad);
  e.accepts = [](const KernelInit& init) { return init.inputs.size() < 3 || Declines(ForwardOf(init, 1)).empty(); };
  e.skips_unused_outputs = true;
  e.channels_last_inputs = 0b11;  // dY, X
  e.channels_last_outputs = 0b1;  // dX
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
