// Internal to the direct CPU kernels (kernels/cpu/direct_*.cc): hand-written
// loops for the ops where oneDNN 2.6 on plain layouts, or the widened
// (convert, run fp32, convert back) path, is slow. They take fp32 and the
// 2-byte float types, convert 2-byte values in registers or thread-local
// rows, and give the same bits as the reference kernels unless a file's
// header says otherwise. impl "direct", priority 20: above oneDNN (10) and
// its widened twin (5); a configuration a kernel does not take is declined
// at creation and the next implementation runs.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "kernels/cpu/element.h"
#include "kernels/cpu/float_convert.h"
#include "kernels/kernel.h"

namespace amptrain::kernels::cpu::direct {

// fn(Tag<T>) for the storage type T of `t` (fp32, fp16, bf16).
template <class Fn>
StatusOr<std::unique_ptr<Kernel>> WithDType(DType t, Fn&& fn) {
  switch (t) {
    case DType::kFloat32: return fn(Tag<float>{});
    case DType::kFloat16: return fn(Tag<Half>{});
    case DType::kBFloat16: return fn(Tag<BFloat16>{});
    default: return Unimplemented("the direct kernels take fp32, fp16 and bf16, not ", ir::DTypeName(t));
  }
}

// new K<T>(args...) for the storage type T of `t`.
template <template <class> class K, class... Args>
StatusOr<std::unique_ptr<Kernel>> ForDType(DType t, Args&&... args) {
  return WithDType(t, [&](auto tag) -> StatusOr<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(new K<typename decltype(tag)::type>(std::forward<Args>(args)...));
  });
}

inline int Threads(const KernelInit& init) { return init.threads > 1 ? init.threads : 1; }

// Elementwise kernels that compute in fp32 (direct_erf.cc, direct_dropout.cc):
// fn(a, b, y, first, count) over [0, n) in chunks of kFloatChunk elements,
// split over `threads`; a and y are input 0 and output 0 of dtype t, b an
// optional second input of t (nullptr when absent). fp32 tensors are passed
// in place; fp16 and bf16 chunks are widened into fp32 rows of the kernel's
// scratch (FloatChunkScratch bytes: one row per input and one for the
// output, per thread) and the output row narrowed back.
inline constexpr int64_t kFloatChunk = 4096;
inline size_t FloatChunkScratch(DType t, int threads, int inputs) {
  return t == DType::kFloat32 ? 0 : static_cast<size_t>(threads) * static_cast<size_t>(inputs + 1) * kFloatChunk * sizeof(float);
}
template <class Fn>
void ForFloatChunks(DType t, int threads, void* scratch, int64_t n, const void* a, const void* b, void* y, Fn&& fn) {
  const int64_t chunks = (n + kFloatChunk - 1) / kFloatChunk;
  const size_t width = ir::DTypeSize(t);
  const auto* pa = static_cast<const std::byte*>(a);
  const auto* pb = static_cast<const std::byte*>(b);
  auto* py = static_cast<std::byte*>(y);
#pragma omp parallel num_threads(threads) if (threads > 1 && n >= (int64_t{1} << 15))
  {
    float* rows = static_cast<float*>(scratch) + omp_get_thread_num() * (pb ? 3 : 2) * kFloatChunk;
#pragma omp for schedule(static)
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t i = c * kFloatChunk, len = std::min(kFloatChunk, n - i);
      const size_t at = static_cast<size_t>(i) * width;
      if (t == DType::kFloat32) {
        fn(reinterpret_cast<const float*>(pa + at), pb ? reinterpret_cast<const float*>(pb + at) : nullptr,
           reinterpret_cast<float*>(py + at), i, len);
        continue;
      }
      float *fa = rows, *fb = pb ? rows + kFloatChunk : nullptr, *fy = rows + (pb ? 2 : 1) * kFloatChunk;
      WidenSpan(t, pa + at, fa, len);
      if (pb) WidenSpan(t, pb + at, fb, len);
      fn(fa, fb, fy, i, len);
      NarrowSpan(t, fy, py + at, len);
    }
  }
}

// A thread-local fp32 copy of n values of T in `buf` (the values themselves for float).
template <class T>
const float* Widened(const T* values, int64_t n, std::vector<float>& buf) {
  if constexpr (std::is_same_v<T, float>) {
    return values;
  } else {
    buf.resize(static_cast<size_t>(n));
    WidenSpan(StorageDType<T>(), values, buf.data(), n);
    return buf.data();
  }
}

// Stores n fp32 values into T, rounded (a copy for float, none where f is out).
template <class T>
void StoreNarrowed(const float* f, T* out, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    if (f != out) std::memcpy(out, f, static_cast<size_t>(n) * sizeof(float));
  } else {
    NarrowSpan(StorageDType<T>(), f, out, n);
  }
}

// Entry with impl "direct", priority 20, for fp32/fp16/bf16 (or `dtypes`);
// its `accepts` runs `factory`, so a declined configuration falls through.
// tanh and sigmoid of n fp32 values, in double and rounded once (within one
// ulp of the exact value; NaN kept); y may be x (direct_erf.cc).
void TanhSpan(const float* x, float* y, int64_t n);
void SigmoidSpan(const float* x, float* y, int64_t n);

KernelEntry DirectEntry(OpKind op, KernelFactory factory,
                        std::vector<DType> dtypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16});

void RegisterDirectPool(Registry& r);         // direct_pool.cc: MaxPool, AveragePool, GlobalAveragePool, MaxPoolGrad (2-D)
void RegisterDirectElementwise(Registry& r);  // direct_elementwise.cc: Relu, ReluGrad, Cast fp32 <-> 2-byte
void RegisterDirectBatchNorm(Registry& r);    // direct_batchnorm.cc: BatchNormalization and its grad, fp32 params
void RegisterDirectDropout(Registry& r);      // direct_dropout.cc: Dropout (training), DropoutGrad
void RegisterDirectErf(Registry& r);          // direct_erf.cc: Erf, UnaryGrad of Erf, Gelu(Grad), Tanh, Pow x^2 x^3
void RegisterDirectLoss(Registry& r);         // direct_loss.cc: SoftmaxCrossEntropyLoss and its grad, fp32 rows
void RegisterDirectDepthwise(Registry& r);    // direct_depthwise.cc: ConvGrad of depthwise convs oneDNN declines
void RegisterDirectLayerNorm(Registry& r);    // direct_layernorm.cc: LayerNormalization and its grad, unbroadcast Scale/B
void RegisterDirectReduce(Registry& r);       // direct_reduce.cc: ReduceSumTo (any layout but a sum to one element)
void RegisterDirectRnn(Registry& r);          // direct_rnn.cc: RNN, GRU, LSTM and their backward ops (GEMMs per step)
void RegisterDirectResize(Registry& r);       // direct_resize.cc: Resize, ResizeGrad of the last two axes

}  // namespace amptrain::kernels::cpu::direct
