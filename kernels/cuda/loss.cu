// SoftmaxCrossEntropyLoss and its gradient on CUDA, as kernels/cpu/loss.cc
// defines them (label smoothing, class weights, ignore_index, reductions).
// Forward: one block per sample (n, d) over its C classes: max, sum of exp,
// log_prob, the sample's loss and target weight; a second one-block kernel
// sums the samples in a fixed order (double) for sum/mean. Gradient: one
// block sums the target weights (mean), then one thread per element.
#include "kernels/cuda/elem.cuh"

namespace amptrain::kernels::cuda {

namespace {

constexpr int kLossThreads = 128;

template <class I>
__device__ __forceinline__ bool BadLabel(const LossShape& s, I y) {
  return (y < 0 || y >= s.c) && !(s.has_ignore && y == s.ignore_index);
}
template <class I>
__device__ __forceinline__ bool Ignored(const LossShape& s, I y) {
  return s.has_ignore && static_cast<int64_t>(y) == s.ignore_index;
}

template <class T>
__device__ __forceinline__ float Weight(const T* w, int64_t k) {
  return w ? ToF(w[k]) : 1.0f;
}

// Per sample: log_prob, and loss/target weight into per_sample[2 i], [2 i + 1]
// (kNone: the loss straight into `loss`).
template <class T, class I>
__global__ void LossSamples(LossShape s, const T* scores, const I* labels, const T* w, T* loss, T* log_prob,
                            double* per_sample) {
  __shared__ float shared[kLossThreads];
  const int64_t samples = s.n * s.d;
  for (int64_t i = blockIdx.x; i < samples; i += gridDim.x) {
    const int64_t base = i / s.d * s.c * s.d + i % s.d;
    float mx = -INFINITY;
    for (int64_t k = threadIdx.x; k < s.c; k += blockDim.x) mx = fmaxf(mx, ToF(scores[base + k * s.d]));
    mx = BlockReduce<kLossThreads, true>(mx, shared);
    float sum = 0.0f;
    for (int64_t k = threadIdx.x; k < s.c; k += blockDim.x) sum += expf(ToF(scores[base + k * s.d]) - mx);
    sum = BlockReduce<kLossThreads, false>(sum, shared);
    const float lse = mx + logf(sum);
    float smooth = 0.0f;
    for (int64_t k = threadIdx.x; k < s.c; k += blockDim.x) {
      const float lp = ToF(scores[base + k * s.d]) - lse;
      if (log_prob) log_prob[base + k * s.d] = FromF<T>(lp);
      smooth -= Weight(w, k) * lp;
    }
    smooth = BlockReduce<kLossThreads, false>(smooth, shared);
    if (threadIdx.x == 0) {
      const I y = labels[i];
      double li = 0.0, wi = 0.0;
      if (BadLabel(s, y)) {
        li = wi = NAN;
      } else if (!Ignored(s, y)) {
        const double eps = s.label_smoothing;
        wi = Weight(w, y);
        li = (1.0 - eps) * wi * (static_cast<double>(lse) - ToF(scores[base + static_cast<int64_t>(y) * s.d])) +
             eps / static_cast<double>(s.c) * smooth;
      }
      if (s.reduction == LossReduction::kNone) {
        if (loss) loss[i] = FromF<T>(static_cast<float>(li));
      } else {
        per_sample[2 * i] = li;
        per_sample[2 * i + 1] = wi;
      }
    }
  }
}

// total = sum_i per_sample[2 i] (/ sum_i per_sample[2 i + 1] for mean), in
// a fixed order: thread t sums samples t, t + blockDim, ..., then a tree.
template <class T>
__global__ void LossTotal(LossShape s, const double* per_sample, T* loss) {
  __shared__ double sums[kLossThreads], weights[kLossThreads];
  double a = 0.0, b = 0.0;
  for (int64_t i = threadIdx.x; i < s.n * s.d; i += blockDim.x) {
    a += per_sample[2 * i];
    b += per_sample[2 * i + 1];
  }
  sums[threadIdx.x] = a;
  weights[threadIdx.x] = b;
  __syncthreads();
  for (int k = kLossThreads / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) {
      sums[threadIdx.x] += sums[threadIdx.x + k];
      weights[threadIdx.x] += weights[threadIdx.x + k];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0 && loss) {
    const double total = s.reduction == LossReduction::kMean ? sums[0] / weights[0] : sums[0];
    loss[0] = FromF<T>(static_cast<float>(total));
  }
}

// scalars[0] = the gradient's scale for sum/mean (dloss, divided by the
// target weight for mean); scalars[1] = sum_c w_c.
template <class T, class I>
__global__ void GradScalars(LossShape s, const T* dloss, const I* labels, const T* w, double* scalars) {
  __shared__ double target[kLossThreads], classes[kLossThreads];
  double a = 0.0, b = 0.0;
  for (int64_t i = threadIdx.x; i < s.n * s.d; i += blockDim.x) {
    const I y = labels[i];
    a += BadLabel(s, y) ? NAN : Ignored(s, y) ? 0.0 : Weight(w, y);
  }
  for (int64_t k = threadIdx.x; k < s.c; k += blockDim.x) b += Weight(w, k);
  target[threadIdx.x] = a;
  classes[threadIdx.x] = b;
  __syncthreads();
  for (int k = kLossThreads / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) {
      target[threadIdx.x] += target[threadIdx.x + k];
      classes[threadIdx.x] += classes[threadIdx.x + k];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    double g = s.reduction == LossReduction::kNone ? 0.0 : static_cast<double>(ToF(dloss[0]));
    if (s.reduction == LossReduction::kMean) g /= target[0];
    scalars[0] = g;
    scalars[1] = classes[0];
  }
}

template <class T, class I>
__global__ void LossGrad(LossShape s, const T* dloss, const T* log_prob, const I* labels, const T* w,
                         const double* scalars, T* dscores) {
  const int64_t total = s.n * s.c * s.d;
  const float eps = static_cast<float>(s.label_smoothing);
  const float soft = static_cast<float>(s.label_smoothing / static_cast<double>(s.c));
  const float w_sum = static_cast<float>(scalars[1]);
  AMP_GRID_STRIDE(e, total) {
    const int64_t k = e / s.d % s.c, sample = e / (s.c * s.d) * s.d + e % s.d;
    const I y = labels[sample];
    float out = 0.0f;
    if (BadLabel(s, y)) {
      out = NAN;
    } else if (!Ignored(s, y)) {
      const float g = s.reduction == LossReduction::kNone ? ToF(dloss[sample]) : static_cast<float>(scalars[0]);
      const float p = expf(ToF(log_prob[e]));
      const float hard = (1.0f - eps) * Weight(w, y);
      out = g * (hard * (p - (k == y ? 1.0f : 0.0f)) + soft * (w_sum * p - Weight(w, k)));
    }
    dscores[e] = FromF<T>(out);
  }
}

template <class Fn>
cudaError_t DispatchLabels(bool int64, Fn&& fn) {
  return int64 ? fn(Tag<int64_t>{}) : fn(Tag<int32_t>{});
}

unsigned SampleBlocks(const LossShape& s) {
  const int64_t samples = s.n * s.d;
  return static_cast<unsigned>(samples < (1 << 20) ? samples : (1 << 20));
}

}  // namespace

size_t LossScratchBytes(const LossShape& s) {
  const size_t samples = static_cast<size_t>(s.n * s.d);
  return sizeof(double) * (2 * samples > 2 ? 2 * samples : 2);
}

cudaError_t LaunchSoftmaxCrossEntropy(const LossShape& s, Elem t, const void* scores, const void* labels,
                                      const void* weights, void* loss, void* log_prob, void* scratch,
                                      cudaStream_t stream) {
  return DispatchElem(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return DispatchLabels(s.labels_int64, [&](auto label_tag) {
      using I = typename decltype(label_tag)::type;
      auto* per_sample = static_cast<double*>(scratch);
      if (s.n * s.d > 0)
        LossSamples<T, I><<<SampleBlocks(s), kLossThreads, 0, stream>>>(
            s, static_cast<const T*>(scores), static_cast<const I*>(labels), static_cast<const T*>(weights),
            static_cast<T*>(loss), static_cast<T*>(log_prob), per_sample);
      cudaError_t err = cudaGetLastError();
      if (err != cudaSuccess || s.reduction == LossReduction::kNone) return err;
      LossTotal<T><<<1, kLossThreads, 0, stream>>>(s, per_sample, static_cast<T*>(loss));
      return cudaGetLastError();
    });
  });
}

cudaError_t LaunchSoftmaxCrossEntropyGrad(const LossShape& s, Elem t, const void* dloss, const void* log_prob,
                                          const void* labels, const void* weights, void* dscores, void* scratch,
                                          cudaStream_t stream) {
  const int64_t total = s.n * s.c * s.d;
  if (total <= 0) return cudaSuccess;
  return DispatchElem(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return DispatchLabels(s.labels_int64, [&](auto label_tag) {
      using I = typename decltype(label_tag)::type;
      auto* scalars = static_cast<double*>(scratch);
      const T* w = static_cast<const T*>(weights);
      const I* y = static_cast<const I*>(labels);
      GradScalars<T, I><<<1, kLossThreads, 0, stream>>>(s, static_cast<const T*>(dloss), y, w, scalars);
      cudaError_t err = cudaGetLastError();
      if (err != cudaSuccess) return err;
      LossGrad<T, I><<<Blocks(total), kThreads, 0, stream>>>(s, static_cast<const T*>(dloss),
                                                              static_cast<const T*>(log_prob), y, w, scalars,
                                                              static_cast<T*>(dscores));
      return cudaGetLastError();
    });
  });
}

// ---- MeanSquaredError (kernels/cpu/grad_misc.cc: sums in double) ----

namespace {

constexpr int kMseThreads = 256;
constexpr int kMseBlocks = 1024;  // fixed partial count: the same order on every run

// Block b sums (p - t)^2 in double over i = b * kMseThreads + thread + k *
// grid, tree-reduced in shared memory, into partial[b].
template <class T>
__global__ void MsePartials(const T* p, const T* t, int64_t n, double* partial) {
  __shared__ double shared[kMseThreads];
  double s = 0.0;
  AMP_GRID_STRIDE(i, n) {
    const double d = static_cast<double>(ToF(p[i])) - static_cast<double>(ToF(t[i]));
    s += d * d;
  }
  shared[threadIdx.x] = s;
  __syncthreads();
  for (int k = kMseThreads / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) shared[threadIdx.x] += shared[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = shared[0];
}

template <class T>
__global__ void MseTotal(const double* partial, int blocks, int64_t n, T* loss) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  double sum = 0.0;
  for (int b = 0; b < blocks; ++b) sum += partial[b];
  loss[0] = FromF<T>(static_cast<float>(sum / static_cast<double>(n)));
}

template <class T>
__global__ void MseGradKernel(const T* dloss, const T* p, const T* t, T* dx, int64_t n) {
  const double g = 2.0 * static_cast<double>(ToF(dloss[0])) / static_cast<double>(n);
  AMP_GRID_STRIDE(i, n) {
    const double d = static_cast<double>(ToF(p[i])) - static_cast<double>(ToF(t[i]));
    dx[i] = FromF<T>(static_cast<float>(g * d));
  }
}

}  // namespace

size_t MseScratchBytes() { return kMseBlocks * sizeof(double); }

cudaError_t LaunchMse(Elem t, const void* p, const void* target, void* loss, int64_t n, void* scratch,
                      cudaStream_t stream) {
  return DispatchElem(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    auto* partial = static_cast<double*>(scratch);
    int blocks = 0;
    if (n > 0) {
      const int64_t b = (n + kMseThreads - 1) / kMseThreads;
      blocks = static_cast<int>(b < kMseBlocks ? b : kMseBlocks);
      MsePartials<T><<<blocks, kMseThreads, 0, stream>>>(static_cast<const T*>(p), static_cast<const T*>(target), n,
                                                         partial);
    }
    MseTotal<T><<<1, 1, 0, stream>>>(partial, blocks, n, static_cast<T*>(loss));
    return cudaGetLastError();
  });
}

cudaError_t LaunchMseGrad(Elem t, const void* dloss, const void* p, const void* target, void* dx, int64_t n,
                          cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  return DispatchElem(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    MseGradKernel<T><<<Blocks(n), kThreads, 0, stream>>>(static_cast<const T*>(dloss), static_cast<const T*>(p),
                                                         static_cast<const T*>(target), static_cast<T*>(dx), n);
    return cudaGetLastError();
  });
}

}  // namespace amptrain::kernels::cuda
