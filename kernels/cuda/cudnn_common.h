// Helpers of the cuDNN kernels (cudnn_conv.cc, cudnn_bn.cc, cudnn_pool.cc):
// owned descriptors, the data type of a DType, NCHW tensor descriptors, and
// the per-family registration functions that RegisterCudnn calls.
//
// Every cuDNN kernel checks its shapes and attributes when it is created,
// on the host alone (no handle, descriptor or device memory), so that plans
// are checked on machines without a GPU; the descriptors are made at the
// first Run, with the run's handle.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cuda/common.h"
#include "kernels/cuda/library.h"

namespace amptrain::kernels::cuda {

// One cuDNN descriptor, destroyed with its owner.
template <class D, cudnnStatus_t (*Create)(D*), cudnnStatus_t (*Destroy)(D)>
class CudnnDesc {
 public:
  CudnnDesc() = default;
  CudnnDesc(const CudnnDesc&) = delete;
  CudnnDesc& operator=(const CudnnDesc&) = delete;
  ~CudnnDesc() {
    if (d_) (void)Destroy(d_);
  }
  Status Make() {
    if (!d_) CUDNN_CHECK(Create(&d_));
    return Status::Ok();
  }
  D get() const { return d_; }

 private:
  D d_ = nullptr;
};

using TensorDesc = CudnnDesc<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDesc = CudnnDesc<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvDesc =
    CudnnDesc<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;
using PoolDesc = CudnnDesc<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor, cudnnDestroyPoolingDescriptor>;

inline cudnnDataType_t CudnnType(DType t) {
  return t == DType::kFloat16 ? CUDNN_DATA_HALF : t == DType::kBFloat16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

// dims as four ints [N, C, H, W] (checked at creation by FitsInt).
struct Dims4 {
  int n = 1, c = 1, h = 1, w = 1;
};

inline bool FitsInt(const std::vector<int64_t>& dims) {
  int64_t total = 1;
  for (int64_t d : dims) {
    if (d > std::numeric_limits<int>::max()) return false;
    total *= d;
  }
  return total <= std::numeric_limits<int>::max();
}

inline Dims4 ToDims4(const std::vector<int64_t>& d) {
  return Dims4{static_cast<int>(d[0]), static_cast<int>(d[1]), static_cast<int>(d[2]), static_cast<int>(d[3])};
}

// A packed 4-D tensor descriptor of logical dims `d` ([N, C, H, W]), stored
// NCHW or, with `nhwc`, channels-last (TensorSpec::channels_last).
inline Status SetTensor4d(TensorDesc& desc, DType t, const Dims4& d, bool nhwc = false) {
  AMP_RETURN_IF_ERROR(desc.Make());
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(desc.get(), nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, CudnnType(t), d.n,
                                         d.c, d.h, d.w));
  return Status::Ok();
}

// Channels-last (NHWC) activations for the cuDNN kernels: 2-byte data only,
// where cuDNN's tensor-core kernels want that layout; fp32 stays NCHW (its
// FMA kernels, measured on the H200, and the layout the fp32 tests cover).
inline bool ChannelsLastDType(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

// Whether the activation specs of a kernel that takes its layouts together
// (KernelEntry::channels_last_together: BN, pooling) are channels-last: all
// or none, an error otherwise; a [N, C, 1, 1] tensor, the same bytes in
// either layout, counts as either.
inline StatusOr<bool> ChannelsLastTogether(const KernelInit& init, const std::vector<const TensorSpec*>& specs) {
  bool any = false, all = true;
  for (const TensorSpec* s : specs) {
    const bool point = s->dims.size() == 4 && s->dims[2] * s->dims[3] == 1;
    any = any || s->channels_last;
    all = all && (s->channels_last || point);
  }
  if (any && !all) return init.Error("activations in different layouts");
  return any;
}

// The forward init of a gradient op whose forward inputs start at `first`
// (kernels/cpu/training_register.cc's ForwardInit): output 0 = input 0's spec.
inline KernelInit ForwardOf(const KernelInit& init, size_t first) {
  KernelInit fwd = init;
  fwd.inputs.assign(init.inputs.begin() + static_cast<std::ptrdiff_t>(first), init.inputs.end());
  fwd.outputs = {init.inputs[0]};
  return fwd;
}

// Per-family registration, called by RegisterCudnn (cudnn_conv.cc).
void RegisterCudnnConv(Registry& r);       // Conv, FusedConv, ConvGrad
void RegisterCudnnBatchNorm(Registry& r);  // BatchNormalization, BatchNormalizationGrad
void RegisterCudnnPool(Registry& r);       // MaxPool, AveragePool, GlobalAveragePool and the grads

}  // namespace amptrain::kernels::cuda
