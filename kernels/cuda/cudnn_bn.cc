// cuDNN BatchNormalization (training and inference) and
// BatchNormalizationGrad over NCHW ([N, C, ...] of any rank >= 2, seen by
// cuDNN as [N, C, prod(spatial), 1]), spatial mode (statistics per channel
// over N and the spatial dims). X/Y/dY/dX in fp32, fp16 or bf16, one dtype
// per node, or fp32 beside a 2-byte X (below); scale, B, mean, var, the
// running statistics and dScale/dBias in fp32 (the AMP plans keep them fp32
// at O1/O2; O3's low BN parameters are declined). Computed in fp32 by cuDNN,
// data rounded once.
//
// Cast fusion (KernelEntry::fuses_casts, executor/widened_casts.cc): Y, dY and
// dX may each be fp32 beside a 2-byte X, as the CPU's direct kernels take
// them, so that O1's fp32 BatchNormalization reads the low Conv output
// instead of a 4-byte Cast of it that would live until the backward. Such a
// call runs cuDNN in fp32: its 2-byte inputs are widened (exactly) into
// scratch first and its 2-byte outputs computed in scratch and rounded once
// after (DataSides): the fp32 copies live for the call only.
//
// Channels-last (TensorSpec::channels_last, 4-D): X, Y (dY, X, dX) stored
// NHWC together (channels_last_together), given to cuDNN as NHWC
// descriptors of [N, C, H*W, 1].
//
// Semantics of the CPU kernels (kernels/cpu/batchnorm.cc, grad_norm.cc):
//   training (KernelInit::training, training_mode=1 or 3 outputs): batch
//     mean and biased variance normalize; the running outputs are
//       running_mean = input_mean * momentum + mean * (1 - momentum)
//       running_var  = input_var  * momentum + var  * (1 - momentum)
//     with the *biased* var. cuDNN's own running update uses the unbiased
//     variance, so cuDNN writes the batch mean and unbiased variance to
//     scratch (factor 1, over zeroed scratch) and LaunchBnRunningUpdate
//     rescales by (count - 1) / count and blends. A training node with
//     running outputs and one element per channel (count 1) is declined.
//   inference: Y = scale * (X - mean) / sqrt(var + eps) + B.
//   grad: statistics recomputed from X (cuDNN without saved statistics);
//     dBias = sum dY, dScale = sum dY * xhat, dX as in grad_norm.cc. Absent
//     dScale/dBias outputs are written to scratch.
#include "kernels/cuda/cudnn_common.h"

namespace amptrain::kernels::cuda {

namespace {

struct BnShape {
  DType t = DType::kFloat32;
  Dims4 x;            // [N, C, plane, 1]
  int64_t count = 1;  // N * plane
  bool nhwc = false;  // the data stored [N, plane, C]
};

BnShape ShapeOf(const std::vector<int64_t>& x, DType t) {
  int64_t plane = 1;
  for (size_t d = 2; d < x.size(); ++d) plane *= x[d];
  BnShape s;
  s.t = t;
  s.x = Dims4{static_cast<int>(x[0]), static_cast<int>(x[1]), static_cast<int>(plane), 1};
  s.count = x[0] * plane;
  return s;
}

// X's dims fit cuDNN: rank >= 2, non-empty, within int.
bool DataFits(const std::vector<int64_t>& x) {
  if (x.size() < 2 || !FitsInt(x)) return false;
  for (int64_t d : x)
    if (d <= 0) return false;
  return true;
}

bool Fp32Vectors(const std::vector<TensorSpec>& specs, size_t from, size_t to) {
  for (size_t i = from; i < to && i < specs.size(); ++i)
    if (specs[i].dtype != DType::kFloat32) return false;
  return true;
}

// The descriptors: X (= Y, dY, dX) and the derived fp32 [1, C, 1, 1].
struct BnDescs {
  TensorDesc x, bn;
  bool made = false;
  Status Make(const BnShape& s) {
    if (made) return Status::Ok();
    AMP_RETURN_IF_ERROR(SetTensor4d(x, s.t, s.x, s.nhwc));
    AMP_RETURN_IF_ERROR(bn.Make());
    CUDNN_CHECK(cudnnDeriveBNTensorDescriptor(bn.get(), x.get(), CUDNN_BATCHNORM_SPATIAL));
    made = true;
    return Status::Ok();
  }
};

// The data tensors of one call (X and Y; dY, X and dX) and the dtype cuDNN
// computes in: theirs when they share one, else fp32, with each 2-byte one
// converted through a scratch region placed after `begin` bytes.
class DataSides {
 public:
  DataSides() = default;
  DataSides(const std::vector<DType>& dtypes, int64_t elements, size_t begin) : elements_(elements) {
    compute_ = dtypes.front();
    for (DType t : dtypes)
      if (t != compute_) compute_ = DType::kFloat32;
    size_t end = (begin + 255) / 256 * 256;
    for (DType t : dtypes) {
      const bool convert = t != compute_;
      sides_.push_back({t, convert ? end : 0, convert});
      if (convert) end += (static_cast<size_t>(elements) * sizeof(float) + 255) / 256 * 256;
    }
    end_ = end;
  }
  DType compute() const { return compute_; }
  size_t end() const { return end_; }

  // Input i as cuDNN reads it: `data`, or its fp32 copy widened into scratch.
  StatusOr<const void*> In(size_t i, const void* data, void* scratch, cudaStream_t stream) const {
    const Side& s = sides_[i];
    if (!s.convert) return data;
    void* wide = static_cast<std::byte*>(scratch) + s.offset;
    CUDA_CHECK(LaunchCast(*ElemOf(s.dtype), Elem::kF32, data, wide, elements_, stream));
    return static_cast<const void*>(wide);
  }
  // Where cuDNN writes output i: `data`, or an fp32 region that Done rounds into it.
  void* Out(size_t i, void* data, void* scratch) const {
    const Side& s = sides_[i];
    return s.convert ? static_cast<std::byte*>(scratch) + s.offset : data;
  }
  Status Done(size_t i, void* data, void* scratch, cudaStream_t stream) const {
    const Side& s = sides_[i];
    if (s.convert)
      CUDA_CHECK(LaunchCast(Elem::kF32, *ElemOf(s.dtype), static_cast<std::byte*>(scratch) + s.offset, data,
                            elements_, stream));
    return Status::Ok();
  }

 private:
  struct Side {
    DType dtype;
    size_t offset;
    bool convert;
  };
  std::vector<Side> sides_;
  DType compute_ = DType::kFloat32;
  int64_t elements_ = 0;
  size_t end_ = 0;
};

int64_t Elements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}


// A data tensor beside X: X's dtype, or fp32 (the far side of a fused Cast).
Status CheckSide(const KernelInit& init, DType x, DType side, const char* what) {
  if (side == x || side == DType::kFloat32) return Status::Ok();
  return init.Error(what, " is ", ir::DTypeName(side), "; it pairs with ", ir::DTypeName(x), " X as ",
                    ir::DTypeName(x), " or float32");
}

enum class BnMode { kInference, kTrainingNoStats, kTraining };

class BatchNormKernel final : public Kernel {
 public:
  // s.t: the dtype cuDNN computes in (sides.compute()).
  BatchNormKernel(BnShape s, BnMode mode, double eps, float momentum, DataSides sides)
      : s_(s), mode_(mode), eps_(eps), momentum_(momentum), sides_(std::move(sides)) {}

  Status Run(KernelContext& ctx) override {
    const cudaStream_t stream = StreamOf(ctx);
    AMP_ASSIGN_OR_RETURN(cudnnHandle_t h, CudnnHandle(stream));
    AMP_RETURN_IF_ERROR(d_.Make(s_));
    AMP_ASSIGN_OR_RETURN(const void* x, sides_.In(0, ctx.inputs[0].data, ctx.scratch, stream));
    void* y = sides_.Out(1, ctx.outputs[0].data, ctx.scratch);
    AMP_RETURN_IF_ERROR(Normalize(ctx, h, x, y, stream));
    return sides_.Done(1, ctx.outputs[0].data, ctx.scratch, stream);
  }
  size_t scratch_bytes() const override { return sides_.end(); }
  // The scratch of the batch mean and unbiased variance (training), before
  // DataSides' conversions.
  static size_t StatsBytes(BnMode mode, int64_t c) {
    return mode == BnMode::kTraining ? 2 * sizeof(float) * static_cast<size_t>(c) : 0;
  }

 private:
  Status Normalize(KernelContext& ctx, cudnnHandle_t h, const void* x, void* y, cudaStream_t stream) {
    const float one = 1.0f, zero = 0.0f;
    const void* scale = ctx.inputs[1].data;
    const void* bias = ctx.inputs[2].data;
    if (mode_ == BnMode::kInference) {
      CUDNN_CHECK(cudnnBatchNormalizationForwardInference(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, d_.x.get(), x,
                                                          d_.x.get(), y, d_.bn.get(), scale, bias,
                                                          ctx.inputs[3].data, ctx.inputs[4].data, eps_));
      return Status::Ok();
    }
    if (mode_ == BnMode::kTrainingNoStats) {
      CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, d_.x.get(), x,
                                                         d_.x.get(), y, d_.bn.get(), scale, bias, 0.0, nullptr,
                                                         nullptr, eps_, nullptr, nullptr));
      return Status::Ok();
    }
    // Factor 1 makes cuDNN's running outputs the batch mean and unbiased
    // variance; the scratch is zeroed first (0 * NaN would poison them).
    auto* batch_mean = static_cast<float*>(ctx.scratch);
    float* batch_var = batch_mean + s_.x.c;
    CUDA_CHECK(cudaMemsetAsync(ctx.scratch, 0, StatsBytes(mode_, s_.x.c), stream));
    CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, d_.x.get(), x,
                                                       d_.x.get(), y, d_.bn.get(), scale, bias, 1.0, batch_mean,
                                                       batch_var, eps_, nullptr, nullptr));
    const float unbias = static_cast<float>(static_cast<double>(s_.count - 1) / static_cast<double>(s_.count));
    CUDA_CHECK(LaunchBnRunningUpdate(s_.x.c, static_cast<const float*>(ctx.inputs[3].data),
                                     static_cast<const float*>(ctx.inputs[4].data), batch_mean, batch_var,
                                     static_cast<float*>(ctx.outputs[1].data), static_cast<float*>(ctx.outputs[2].data),
                                     momentum_, unbias, stream));
    return Status::Ok();
  }

  BnShape s_;
  BnMode mode_;
  double eps_;
  float momentum_;
  DataSides sides_;
  BnDescs d_;
};

// Input i and output o of `init` are fp32 vectors of c elements.
Status CheckVectors(const KernelInit& init, const std::vector<size_t>& inputs, const std::vector<size_t>& outputs,
                    int64_t c) {
  const std::vector<int64_t> want{c};
  for (size_t i : inputs)
    if (init.inputs[i].dtype != DType::kFloat32 || init.inputs[i].dims != want)
      return init.Error("input ", i, " must be a float32 vector of ", c, " elements");
  for (size_t o : outputs)
    if (o < init.outputs.size() && (init.outputs[o].dtype != DType::kFloat32 || init.outputs[o].dims != want))
      return init.Error("output ", o, " must be a float32 vector of ", c, " elements");
  return Status::Ok();
}

bool Training(const KernelInit& init) {
  return init.training || init.attrs->Int("training_mode", 0) != 0 || init.outputs.size() == 3;
}

StatusOr<std::unique_ptr<Kernel>> MakeBatchNorm(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 5, 5, 1, 3));
  if (init.outputs.size() == 2) return init.Error("2 outputs; training mode has 3 (Y, running_mean, running_var)");
  const auto& x = init.inputs[0].dims;
  const DType t = init.inputs[0].dtype;
  AMP_RETURN_IF_ERROR(CheckSide(init, t, init.outputs[0].dtype, "Y"));
  if (init.outputs[0].dims != x) return init.Error("Y must have X's dims");
  if (!DataFits(x)) return Unimplemented(init.Describe(), ": cuDNN batch norm needs a non-empty [N, C, ...] within int");
  AMP_RETURN_IF_ERROR(CheckVectors(init, {1, 2, 3, 4}, {1, 2}, x[1]));
  AMP_ASSIGN_OR_RETURN(float eps, init.attrs->GetFloat("epsilon", 1e-5f));
  AMP_ASSIGN_OR_RETURN(float momentum, init.attrs->GetFloat("momentum", 0.9f));
  const BnMode mode = !Training(init)            ? BnMode::kInference
                      : init.outputs.size() == 3 ? BnMode::kTraining
                                                 : BnMode::kTrainingNoStats;
  DataSides sides({t, init.outputs[0].dtype}, Elements(x), BatchNormKernel::StatsBytes(mode, x[1]));
  BnShape s = ShapeOf(x, sides.compute());
  AMP_ASSIGN_OR_RETURN(s.nhwc, ChannelsLastTogether(init, {&init.inputs[0], &init.outputs[0]}));
  if (mode == BnMode::kTraining && s.count < 2)
    return Unimplemented(init.Describe(), ": one element per channel (cuDNN's unbiased variance is undefined)");
  return std::unique_ptr<Kernel>(
      std::make_unique<BatchNormKernel>(s, mode, static_cast<double>(eps), momentum, std::move(sides)));
}

class BatchNormGradKernel final : public Kernel {
 public:
  // s.t: the dtype cuDNN computes in (sides.compute()); sides: dY, X, dX.
  BatchNormGradKernel(BnShape s, double eps, DataSides sides) : s_(s), eps_(eps), sides_(std::move(sides)) {}

  Status Run(KernelContext& ctx) override {
    const cudaStream_t stream = StreamOf(ctx);
    AMP_ASSIGN_OR_RETURN(cudnnHandle_t h, CudnnHandle(stream));
    AMP_RETURN_IF_ERROR(d_.Make(s_));
    const float one = 1.0f, zero = 0.0f;
    auto* spare = static_cast<float*>(ctx.scratch);
    void* dscale = ctx.outputs.size() > 1 && ctx.outputs[1].data ? ctx.outputs[1].data : spare;
    void* dbias = ctx.outputs.size() > 2 && ctx.outputs[2].data ? ctx.outputs[2].data : spare + s_.x.c;
    AMP_ASSIGN_OR_RETURN(const void* dy, sides_.In(0, ctx.inputs[0].data, ctx.scratch, stream));
    AMP_ASSIGN_OR_RETURN(const void* x, sides_.In(1, ctx.inputs[1].data, ctx.scratch, stream));
    void* dx = sides_.Out(2, ctx.outputs[0].data, ctx.scratch);
    CUDNN_CHECK(cudnnBatchNormalizationBackward(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, d_.x.get(), x,
                                                d_.x.get(), dy, d_.x.get(), dx, d_.bn.get(), ctx.inputs[2].data,
                                                dscale, dbias, eps_, nullptr, nullptr));
    return sides_.Done(2, ctx.outputs[0].data, ctx.scratch, stream);
  }
  size_t scratch_bytes() const override { return sides_.end(); }
  // The spare dScale/dBias the node lacks, before DataSides' conversions.
  static size_t SpareBytes(int64_t c) { return 2 * sizeof(float) * static_cast<size_t>(c); }

 private:
  BnShape s_;
  double eps_;
  DataSides sides_;
  BnDescs d_;
};

StatusOr<std::unique_ptr<Kernel>> MakeBatchNormGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 3, 3, 1, 3));
  const DType t = init.inputs[1].dtype;
  AMP_RETURN_IF_ERROR(CheckSide(init, t, init.inputs[0].dtype, "dY"));
  AMP_RETURN_IF_ERROR(CheckSide(init, t, init.outputs[0].dtype, "dX"));
  const auto& x = init.inputs[1].dims;
  if (init.inputs[0].dims != x || init.outputs[0].dims != x) return init.Error("dY, X and dX must have one shape");
  if (!DataFits(x)) return Unimplemented(init.Describe(), ": cuDNN batch norm needs a non-empty [N, C, ...] within int");
  AMP_RETURN_IF_ERROR(CheckVectors(init, {2}, {1, 2}, x[1]));
  AMP_ASSIGN_OR_RETURN(float eps, init.attrs->GetFloat("epsilon", 1e-5f));
  DataSides sides({init.inputs[0].dtype, t, init.outputs[0].dtype}, Elements(x), BatchNormGradKernel::SpareBytes(x[1]));
  BnShape s = ShapeOf(x, sides.compute());
  AMP_ASSIGN_OR_RETURN(s.nhwc, ChannelsLastTogether(init, {&init.inputs[0], &init.inputs[1], &init.outputs[0]}));
  return std::unique_ptr<Kernel>(std::make_unique<BatchNormGradKernel>(s, static_cast<double>(eps), std::move(sides)));
}

}  // namespace

void RegisterCudnnBatchNorm(Registry& r) {
  KernelEntry fwd = CudaEntry(OpKind::kBatchNormalization, "cudnn", MakeBatchNorm);
  // fp32 parameters and statistics, X within cuDNN's int dims; a training
  // node with running outputs needs two or more elements per channel.
  fwd.accepts = [](const KernelInit& init) {
    if (init.inputs.size() != 5 || !init.attrs || !DataFits(init.inputs[0].dims)) return false;
    if (!Fp32Vectors(init.inputs, 1, 5) || !Fp32Vectors(init.outputs, 1, 3)) return false;
    return !(init.outputs.size() == 3 && Training(init) && ShapeOf(init.inputs[0].dims, init.inputs[0].dtype).count < 2);
  };
  fwd.fuses_casts = true;  // Y fp32 beside a 2-byte X
  fwd.channels_last_inputs = fwd.channels_last_outputs = 0b1;  // X, Y
  fwd.channels_last_together = true;
  r.Add(std::move(fwd));
  KernelEntry grad = CudaEntry(OpKind::kBatchNormalizationGrad, "cudnn", MakeBatchNormGrad);
  grad.accepts = [](const KernelInit& init) {
    return init.inputs.size() == 3 && DataFits(init.inputs[1].dims) && Fp32Vectors(init.inputs, 2, 3) &&
           Fp32Vectors(init.outputs, 1, 3);
  };
  grad.fuses_casts = true;  // dY and dX each fp32 or X's 2-byte type
  grad.channels_last_inputs = 0b11;  // dY, X
  grad.channels_last_outputs = 0b1;  // dX
  grad.channels_last_together = true;
  r.Add(std::move(grad));
}

}  // namespace amptrain::kernels::cuda
