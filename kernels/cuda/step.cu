// The fused optimizer-step kernels on CUDA: GradCheck, Adam/AdamW and SGD.
// Per element, the operations of kernels/cpu/step_math.h in the same order;
// the build passes --fmad=false and sqrtf/division are IEEE (no fast math),
// so parameters, moments and low copies get the CPU kernels' bits. The
// per-step scalars are read from the device hyper-parameter tensor, so a
// step needs no host round trip.
#include <type_traits>

#include "kernels/cuda/elem.cuh"

namespace amptrain::kernels::cuda {

namespace {

// ---- GradCheck ----

constexpr int kCheckBlocks = 512;  // partials per gradient, summed in order by one block

struct CheckPartial {
  double sum;
  int bad;
};

template <class G>
__global__ void GradCheckPartials(const G* g, int64_t n, const float* scale, CheckPartial* partial) {
  __shared__ double sums[kThreads];
  __shared__ int bads[kThreads];
  const float inv = static_cast<float>(1.0 / static_cast<double>(*scale));
  double s = 0.0;
  int bad = 0;
  AMP_GRID_STRIDE(i, n) {
    const float x = ToF(g[i]);
    const float r = inv == 1.0f ? x : x * inv;
    bad |= !isfinite(x) || !isfinite(r);
    s += static_cast<double>(r) * static_cast<double>(r);
  }
  sums[threadIdx.x] = s;
  bads[threadIdx.x] = bad;
  __syncthreads();
  for (int k = kThreads / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) {
      sums[threadIdx.x] += sums[threadIdx.x + k];
      bads[threadIdx.x] |= bads[threadIdx.x + k];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = CheckPartial{sums[0], bads[0]};
}

__global__ void GradCheckFinish(const CheckPartial* partial, int blocks, double* stats) {
  if (threadIdx.x != 0) return;
  double s = 0.0;
  int bad = 0;
  for (int b = 0; b < blocks; ++b) {
    s += partial[b].sum;
    bad |= partial[b].bad;
  }
  stats[0] = bad ? 1.0 : 0.0;
  stats[1] = s;
}

// ---- Adam / SGD ----

// Storage type of an optional low copy: void for none.
template <class L, class P>
__device__ __forceinline__ void StoreLow(L* low, int64_t i, float v) {
  if constexpr (!std::is_void_v<L>) low[i] = FromF<L>(v);
}

template <class P, class G, class L>
__global__ void AdamKernel(AdamAttrs a, const float* hyper, P* p, const G* g, float* m, float* v, L* low, int64_t n) {
  const float neg_step = hyper[0], bc2_sqrt = hyper[1], decay = hyper[2], inv_scale = hyper[3], clip = hyper[4];
  AMP_GRID_STRIDE(j, n) {
    float pj = ToF(p[j]);
    if (a.apply_decay) pj = pj * decay;
    float gj = ToF(g[j]);
    if (inv_scale != 1.0f) gj = gj * inv_scale;
    if (clip != 1.0f) gj = gj * clip;
    if (a.l2 != 0.0f) gj = gj + a.l2 * pj;
    const float mj = m[j] * a.beta1 + a.omb1 * gj;
    const float vj = v[j] * a.beta2 + a.omb2 * gj * gj;
    m[j] = mj;
    v[j] = vj;
    const float denom = sqrtf(vj) / bc2_sqrt + a.eps;
    const float updated = pj + neg_step * mj / denom;
    p[j] = FromF<P>(updated);
    StoreLow<L, P>(low, j, updated);
  }
}

template <class P, class G, class L>
__global__ void SgdKernel(SgdAttrs a, const float* hyper, P* p, const G* g, float* buf, L* low, int64_t n) {
  const float neg_lr = -hyper[0], inv_scale = hyper[1], clip = hyper[2];
  const bool first = hyper[3] != 0.0f;
  AMP_GRID_STRIDE(j, n) {
    const float pj = ToF(p[j]);
    float gj = ToF(g[j]);
    if (inv_scale != 1.0f) gj = gj * inv_scale;
    if (clip != 1.0f) gj = gj * clip;
    float d = a.weight_decay != 0.0f ? gj + a.weight_decay * pj : gj;
    if (a.momentum != 0.0f) {
      const float bj = first ? d : buf[j] * a.momentum + d;
      buf[j] = bj;
      d = a.nesterov ? d + a.momentum * bj : bj;
    }
    const float updated = pj + neg_lr * d;
    p[j] = FromF<P>(updated);
    StoreLow<L, P>(low, j, updated);
  }
}

// fn(Tag<P>, Tag<G>, Tag<L>) for the allowed combinations: fp32 p with any
// gradient and an optional fp16/bf16 low copy, or 2-byte p and g alike.
template <class Fn>
cudaError_t DispatchStep(Elem p_t, Elem g_t, Elem low_t, bool has_low, Fn&& fn) {
  if (p_t != Elem::kF32) {
    if (g_t != p_t || has_low) return cudaErrorInvalidValue;
    return DispatchElem(p_t, [&](auto p) { return fn(p, p, Tag<void>{}); });
  }
  return DispatchElem(g_t, [&](auto g) {
    if (!has_low) return fn(Tag<float>{}, g, Tag<void>{});
    if (low_t == Elem::kF16) return fn(Tag<float>{}, g, Tag<__half>{});
    if (low_t == Elem::kBF16) return fn(Tag<float>{}, g, Tag<__nv_bfloat16>{});
    return cudaErrorInvalidValue;
  });
}

}  // namespace

size_t GradCheckScratchBytes() { return sizeof(CheckPartial) * kCheckBlocks; }

cudaError_t LaunchGradCheck(Elem t, const void* g, int64_t n, const float* scale, double* stats, void* scratch,
                            cudaStream_t stream) {
  auto* partial = static_cast<CheckPartial*>(scratch);
  const int64_t want = (n + kThreads * 8 - 1) / (kThreads * 8);  // ~8 elements per thread
  const int blocks = static_cast<int>(want < 1 ? 1 : want > kCheckBlocks ? kCheckBlocks : want);
  cudaError_t err = DispatchElem(t, [&](auto tag) {
    using G = typename decltype(tag)::type;
    GradCheckPartials<G><<<blocks, kThreads, 0, stream>>>(static_cast<const G*>(g), n, scale, partial);
    return cudaGetLastError();
  });
  if (err != cudaSuccess) return err;
  GradCheckFinish<<<1, 32, 0, stream>>>(partial, blocks, stats);
  return cudaGetLastError();
}

cudaError_t LaunchAdam(const AdamAttrs& a, const float* hyper, Elem p_t, void* p, Elem g_t, const void* g, float* m,
                       float* v, Elem low_t, void* low, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  return DispatchStep(p_t, g_t, low_t, low != nullptr, [&](auto pt, auto gt, auto lt) {
    using P = typename decltype(pt)::type;
    using G = typename decltype(gt)::type;
    using L = typename decltype(lt)::type;
    AdamKernel<P, G, L><<<Blocks(n), kThreads, 0, stream>>>(a, hyper, static_cast<P*>(p), static_cast<const G*>(g), m,
                                                            v, static_cast<L*>(low), n);
    return cudaGetLastError();
  });
}

cudaError_t LaunchSgd(const SgdAttrs& a, const float* hyper, Elem p_t, void* p, Elem g_t, const void* g, float* buf,
                      Elem low_t, void* low, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  return DispatchStep(p_t, g_t, low_t, low != nullptr, [&](auto pt, auto gt, auto lt) {
    using P = typename decltype(pt)::type;
    using G = typename decltype(gt)::type;
    using L = typename decltype(lt)::type;
    SgdKernel<P, G, L><<<Blocks(n), kThreads, 0, stream>>>(a, hyper, static_cast<P*>(p), static_cast<const G*>(g), buf,
                                                           static_cast<L*>(low), n);
    return cudaGetLastError();
  });
}

}  // namespace amptrain::kernels::cuda
