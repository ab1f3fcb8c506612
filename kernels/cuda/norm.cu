// Softmax, LogSoftmax, LayerNormalization and their gradients, in float with
// one rounding per stored value (the CPU kernels: double). A lane (softmax)
// or row (layer norm) of many contiguous elements gets a block whose threads
// combine their partials in a fixed tree; strided or short softmax lanes get
// a thread each. Either way every sum has a fixed order: the same bits on
// every run.
#include "kernels/cuda/elem.cuh"

namespace amptrain::kernels::cuda {

namespace {

constexpr int kRowThreads = 128;

// y of one element from v = x - max. The max skips NaN (fmaxf, as the CPU's
// std::fmax); exp(NaN - max) then makes the lane's sum, and so the lane, NaN.
__device__ __forceinline__ float SoftmaxOut(bool log, float v, float sum, float log_sum) {
  return log ? v - log_sum : expf(v) / sum;
}

template <class T>
__global__ void SoftmaxRows(bool log, const T* x, T* y, int64_t rows, int64_t n) {
  __shared__ float shared[kRowThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    float mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) mx = fmaxf(mx, ToF(xr[j]));
    mx = BlockReduce<kRowThreads, true>(mx, shared);
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) sum += expf(ToF(xr[j]) - mx);
    sum = BlockReduce<kRowThreads, false>(sum, shared);
    const float log_sum = logf(sum);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) yr[j] = FromF<T>(SoftmaxOut(log, ToF(xr[j]) - mx, sum, log_sum));
  }
}

template <class T>
__global__ void SoftmaxLanes(bool log, const T* x, T* y, SoftmaxShape s) {
  AMP_GRID_STRIDE(lane, s.outer * s.inner) {
    const int64_t base = lane / s.inner * s.n * s.inner + lane % s.inner;
    float mx = -INFINITY;
    for (int64_t j = 0; j < s.n; ++j) mx = fmaxf(mx, ToF(x[base + j * s.inner]));
    float sum = 0.0f;
    for (int64_t j = 0; j < s.n; ++j) sum += expf(ToF(x[base + j * s.inner]) - mx);
    const float log_sum = logf(sum);
    for (int64_t j = 0; j < s.n; ++j) {
      const int64_t e = base + j * s.inner;
      y[e] = FromF<T>(SoftmaxOut(log, ToF(x[e]) - mx, sum, log_sum));
    }
  }
}

__device__ __forceinline__ float SoftmaxGradTerm(bool log, float dy, float y) { return log ? dy : dy * y; }
__device__ __forceinline__ float SoftmaxGradOut(bool log, float dy, float y, float s) {
  return log ? dy - expf(y) * s : y * (dy - s);
}

template <class T>
__global__ void SoftmaxGradRows(bool log, const T* dy, const T* y, T* dx, int64_t rows, int64_t n) {
  __shared__ float shared[kRowThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t base = r * n;
    float s = 0.0f;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s += SoftmaxGradTerm(log, ToF(dy[base + j]), ToF(y[base + j]));
    s = BlockReduce<kRowThreads, false>(s, shared);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
      dx[base + j] = FromF<T>(SoftmaxGradOut(log, ToF(dy[base + j]), ToF(y[base + j]), s));
  }
}

template <class T>
__global__ void SoftmaxGradLanes(bool log, const T* dy, const T* y, T* dx, SoftmaxShape s) {
  AMP_GRID_STRIDE(lane, s.outer * s.inner) {
    const int64_t base = lane / s.inner * s.n * s.inner + lane % s.inner;
    float sum = 0.0f;
    for (int64_t j = 0, e = base; j < s.n; ++j, e += s.inner) sum += SoftmaxGradTerm(log, ToF(dy[e]), ToF(y[e]));
    for (int64_t j = 0, e = base; j < s.n; ++j, e += s.inner) dx[e] = FromF<T>(SoftmaxGradOut(log, ToF(dy[e]), ToF(y[e]), sum));
  }
}

// A lane per block when the lanes are contiguous and long enough to share.
bool RowPerBlock(const SoftmaxShape& s) { return s.inner == 1 && s.n >= 64; }

unsigned RowBlocks(int64_t rows) { return static_cast<unsigned>(rows < (1 << 20) ? rows : (1 << 20)); }

// Offset of column j of the normalized dims under strides (rank 0: j).
__device__ __forceinline__ int64_t ParamOffset(const Broadcast& bc, const int64_t* strides, int64_t j) {
  if (bc.rank == 0) return j;
  int64_t off = 0;
  for (int d = bc.rank - 1; d >= 0; --d) {
    off += j % bc.out_dims[d] * strides[d];
    j /= bc.out_dims[d];
  }
  return off;
}

// Mean and 1 / sqrt(var + eps) of one row (two passes), on every thread.
template <class T>
__device__ void RowStats(const T* xr, int64_t cols, float eps, float* shared, float* mean, float* inv) {
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum += ToF(xr[j]);
  const float m = BlockReduce<kRowThreads, false>(sum, shared) / static_cast<float>(cols);
  float sq = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const float d = ToF(xr[j]) - m;
    sq += d * d;
  }
  sq = BlockReduce<kRowThreads, false>(sq, shared);
  *mean = m;
  *inv = 1.0f / sqrtf(sq / static_cast<float>(cols) + eps);
}

template <class T, class S>
__global__ void LayerNormRows(const T* x, const T* scale, const T* bias, T* y, S* mean_out, S* inv_out,
                              LayerNormShape s) {
  __shared__ float shared[kRowThreads];
  for (int64_t r = blockIdx.x; r < s.rows; r += gridDim.x) {
    const T* xr = x + r * s.cols;
    float mean, inv;
    RowStats(xr, s.cols, s.epsilon, shared, &mean, &inv);
    for (int64_t j = threadIdx.x; j < s.cols; j += blockDim.x) {
      const float g = ToF(scale[ParamOffset(s.scale_bc, s.scale_bc.a_strides, j)]);
      const float b = bias ? ToF(bias[ParamOffset(s.scale_bc, s.scale_bc.b_strides, j)]) : 0.0f;
      y[r * s.cols + j] = FromF<T>((ToF(xr[j]) - mean) * inv * g + b);
    }
    if (threadIdx.x == 0) {
      if (mean_out) mean_out[r] = FromF<S>(mean);
      if (inv_out) inv_out[r] = FromF<S>(inv);
    }
  }
}

// Per row: mean and inv into stats[2 r], stats[2 r + 1]; dX when asked:
//   g = dY * scale; dX = inv * (g - mean(g) - xhat * mean(g * xhat)).
template <class T>
__global__ void LayerNormGradRows(const T* dy, const T* x, const T* scale, T* dx, float* stats, LayerNormShape s) {
  __shared__ float shared[kRowThreads];
  for (int64_t r = blockIdx.x; r < s.rows; r += gridDim.x) {
    const T* xr = x + r * s.cols;
    const T* dyr = dy + r * s.cols;
    float mean, inv;
    RowStats(xr, s.cols, s.epsilon, shared, &mean, &inv);
    if (threadIdx.x == 0) stats[2 * r] = mean, stats[2 * r + 1] = inv;
    if (!dx) continue;
    float sg = 0.0f, sgx = 0.0f;
    for (int64_t j = threadIdx.x; j < s.cols; j += blockDim.x) {
      const float g = ToF(dyr[j]) * ToF(scale[j]);
      sg += g;
      sgx += g * (ToF(xr[j]) - mean) * inv;
    }
    sg = BlockReduce<kRowThreads, false>(sg, shared) / static_cast<float>(s.cols);
    sgx = BlockReduce<kRowThreads, false>(sgx, shared) / static_cast<float>(s.cols);
    for (int64_t j = threadIdx.x; j < s.cols; j += blockDim.x) {
      const float g = ToF(dyr[j]) * ToF(scale[j]);
      dx[r * s.cols + j] = FromF<T>(inv * (g - sg - (ToF(xr[j]) - mean) * inv * sgx));
    }
  }
}

// Per column, over the rows in order: dBias = sum dY, dScale = sum dY * xhat.
template <class T>
__global__ void LayerNormGradColumns(const T* dy, const T* x, const float* stats, T* dscale, T* dbias,
                                     LayerNormShape s) {
  AMP_GRID_STRIDE(j, s.cols) {
    float db = 0.0f, ds = 0.0f;
    for (int64_t r = 0; r < s.rows; ++r) {
      const float d = ToF(dy[r * s.cols + j]);
      db += d;
      ds += d * (ToF(x[r * s.cols + j]) - stats[2 * r]) * stats[2 * r + 1];
    }
    if (dscale) dscale[j] = FromF<T>(ds);
    if (dbias) dbias[j] = FromF<T>(db);
  }
}

}  // namespace

cudaError_t LaunchSoftmax(Elem t, bool log, const void* x, void* y, const SoftmaxShape& s, cudaStream_t stream) {
  const int64_t lanes = s.outer * s.inner;
  if (lanes <= 0 || s.n <= 0) return cudaSuccess;
  return DispatchElem(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = static_cast<const T*>(x);
    T* py = static_cast<T*>(y);
    if (RowPerBlock(s)) SoftmaxRows<T><<<RowBlocks(lanes), kRowThreads, 0, stream>>>(log, px, py, lanes, s.n);
    else SoftmaxLanes<T><<<Blocks(lanes), kThreads, 0, stream>>>(log, px, py, s);
    return cudaGetLastError();
  });
}

cudaError_t LaunchSoftmaxGrad(Elem t, bool log, const void* dy, const void* y, void* dx, const SoftmaxShape& s,
                              cudaStream_t stream) {
  const int64_t lanes = s.outer * s.inner;
  if (lanes <= 0 || s.n <= 0) return cudaSuccess;
  return DispatchElem(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pdy = static_cast<const T*>(dy);
    const T* py = static_cast<const T*>(y);
    T* pdx = static_cast<T*>(dx);
    if (RowPerBlock(s)) SoftmaxGradRows<T><<<RowBlocks(lanes), kRowThreads, 0, stream>>>(log, pdy, py, pdx, lanes, s.n);
    else SoftmaxGradLanes<T><<<Blocks(lanes), kThreads, 0, stream>>>(log, pdy, py, pdx, s);
    return cudaGetLastError();
  });
}

cudaError_t LaunchLayerNorm(Elem t, const void* x, const void* scale, const void* bias, void* y, Elem stash,
                            void* mean, void* inv_std, const LayerNormShape& s, cudaStream_t stream) {
  if (s.rows <= 0 || s.cols <= 0) return cudaSuccess;
  return DispatchElem(t, [&](auto tag) {
    return DispatchElem(stash, [&](auto stash_tag) {
      using T = typename decltype(tag)::type;
      using S = typename decltype(stash_tag)::type;
      LayerNormRows<T, S><<<RowBlocks(s.rows), kRowThreads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<const T*>(scale), static_cast<const T*>(bias), static_cast<T*>(y),
          static_cast<S*>(mean), static_cast<S*>(inv_std), s);
      return cudaGetLastError();
    });
  });
}

size_t LayerNormGradScratchBytes(const LayerNormShape& s) {
  return sizeof(float) * 2 * static_cast<size_t>(s.rows > 0 ? s.rows : 1);
}

cudaError_t LaunchLayerNormGrad(Elem t, const void* dy, const void* x, const void* scale, void* dx, void* dscale,
                                void* dbias, const LayerNormShape& s, void* scratch, cudaStream_t stream) {
  if (s.cols <= 0) return cudaSuccess;
  return DispatchElem(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pdy = static_cast<const T*>(dy);
    const T* px = static_cast<const T*>(x);
    float* stats = static_cast<float*>(scratch);
    if (s.rows > 0) {
      LayerNormGradRows<T><<<RowBlocks(s.rows), kRowThreads, 0, stream>>>(pdy, px, static_cast<const T*>(scale),
                                                                          static_cast<T*>(dx), stats, s);
      const cudaError_t err = cudaGetLastError();
      if (err != cudaSuccess) return err;
    }
    if (!dscale && !dbias) return cudaSuccess;
    LayerNormGradColumns<T><<<Blocks(s.cols), kThreads, 0, stream>>>(pdy, px, stats, static_cast<T*>(dscale),
                                                                     static_cast<T*>(dbias), s);
    return cudaGetLastError();
  });
}

}  // namespace amptrain::kernels::cuda
