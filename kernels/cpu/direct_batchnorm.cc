// Direct BatchNormalization (training and inference) and
// BatchNormalizationGrad over NCHW, impl "direct": X/Y/dY/dX in fp32, fp16
// or bf16; scale/B/mean/var and their outputs in fp32 (the AMP plan keeps BN
// parameters and statistics fp32 at O1/O2) or in X's type (O3 stores them
// low: each is read as fp32 and written rounded once). Semantics of the reference kernels
// (batchnorm.cc, grad_norm.cc): biased batch variance, running statistics
// input * momentum + batch * (1 - momentum), statistics recomputed from X in
// the backward.
//
// One channel per work item on OpenMP; 2-byte data is widened to fp32 in
// thread-local blocks. Statistics take one pass: sums of x - K, (x - K)^2,
// dy and dy * (x - K) with K = the channel's first element (the shifted-data
// algorithm: no cancellation unless the mean is far from K in units of the
// standard deviation), in 8 fp32 lanes per block of at most kBlock elements
// and in double across blocks. Y and dX are one multiply-add per element in
// fp32, rounded once. Not bitwise equal to the reference (which sums in
// double, two-pass): tests/kernels/direct_test.cc bounds the difference.
// Planes of fewer than 16 elements ([N, C] inputs) go to the other kernels.
#include <immintrin.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/direct_kernels.h"
#include "kernels/cpu/float_convert.h"

namespace amptrain::kernels::cpu::direct {

namespace {

constexpr int64_t kBlock = 2048;

struct Shape {
  int64_t n = 0, c = 0, plane = 0;
  double count() const { return static_cast<double>(n * plane); }
};

// Calls fn(f, len, offset) over the channel-c elements of `data` in blocks
// of at most kBlock fp32 values (widened into `buf` for 2-byte T); offset is
// the block's element index in data.
template <class T, class Fn>
void ForBlocks(const Shape& s, int64_t c, const T* data, std::vector<float>& buf, Fn&& fn) {
  for (int64_t n = 0; n < s.n; ++n) {
    const int64_t base = (n * s.c + c) * s.plane;
    for (int64_t i = 0; i < s.plane; i += kBlock) {
      const int64_t len = std::min(kBlock, s.plane - i);
      if constexpr (std::is_same_v<T, float>) {
        fn(data + base + i, len, base + i);
      } else {
        buf.resize(kBlock);
        WidenSpan(StorageDType<T>(), data + base + i, buf.data(), len);
        fn(buf.data(), len, base + i);
      }
    }
  }
}

inline double Sum8(__m256 v) {
  alignas(32) float l[8];
  _mm256_store_ps(l, v);
  double s = 0.0;
  for (float f : l) s += f;
  return s;
}

// sum(x - k) and sum((x - k)^2) over one block.
void ShiftedSums(const float* x, int64_t len, float k, double& s1, double& s2) {
  __m256 a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps();
  const __m256 vk = _mm256_set1_ps(k);
  int64_t i = 0;
  for (; i + 8 <= len; i += 8) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), vk);
    a1 = _mm256_add_ps(a1, d);
    a2 = _mm256_add_ps(a2, _mm256_mul_ps(d, d));
  }
  double t1 = Sum8(a1), t2 = Sum8(a2);
  for (; i < len; ++i) {
    const double d = static_cast<double>(x[i]) - k;
    t1 += d, t2 += d * d;
  }
  s1 += t1, s2 += t2;
}

// sum(dy) and sum(dy * (x - k)) over one block.
void GradSums(const float* dy, const float* x, int64_t len, float k, double& sdy, double& sdyx) {
  __m256 a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps();
  const __m256 vk = _mm256_set1_ps(k);
  int64_t i = 0;
  for (; i + 8 <= len; i += 8) {
    const __m256 g = _mm256_loadu_ps(dy + i);
    a1 = _mm256_add_ps(a1, g);
    a2 = _mm256_add_ps(a2, _mm256_mul_ps(g, _mm256_sub_ps(_mm256_loadu_ps(x + i), vk)));
  }
  double t1 = Sum8(a1), t2 = Sum8(a2);
  for (; i < len; ++i) {
    t1 += dy[i];
    t2 += static_cast<double>(dy[i]) * (static_cast<double>(x[i]) - k);
  }
  sdy += t1, sdyx += t2;
}

// out[i] = T(a * x[i] + b (+ c * z[i] when z is set)), rounded once.
template <class T>
void Affine(const float* x, const float* z, int64_t len, float a, float b, float c, T* out, float* tmp) {
  float* y = std::is_same_v<T, float> ? reinterpret_cast<float*>(out) : tmp;
  const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b), vc = _mm256_set1_ps(c);
  int64_t i = 0;
  for (; i + 8 <= len; i += 8) {
    __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), va), vb);
    if (z) v = _mm256_add_ps(v, _mm256_mul_ps(_mm256_loadu_ps(z + i), vc));
    _mm256_storeu_ps(y + i, v);
  }
  for (; i < len; ++i) y[i] = z ? x[i] * a + b + z[i] * c : x[i] * a + b;
  if constexpr (!std::is_same_v<T, float>) NarrowSpan(StorageDType<T>(), tmp, out, len);
}

// Element c of a per-channel vector, fp32 or a 2-byte float; and its store,
// rounded once. Per channel, so never on a hot path.
float VecAt(const ir::TensorView& v, int64_t c) {
  if (v.dtype == DType::kFloat32) return v.as<const float>()[c];
  float f;
  WidenSpan(v.dtype, static_cast<const std::byte*>(v.data) + c * DTypeSize(v.dtype), &f, 1);
  return f;
}
void SetVec(const ir::TensorView& v, int64_t c, double value) {
  const float f = static_cast<float>(value);
  if (v.dtype == DType::kFloat32) v.as<float>()[c] = f;
  else NarrowSpan(v.dtype, &f, static_cast<std::byte*>(v.data) + c * DTypeSize(v.dtype), 1);
}

template <class T>
float First(const T* x, const Shape& s, int64_t c) {
  return static_cast<float>(x[c * s.plane]);
}

template <class T>
class BatchNormKernel final : public Kernel {
 public:
  BatchNormKernel(Shape s, bool training, double eps, double momentum, int threads)
      : s_(s), training_(training), eps_(eps), momentum_(momentum), threads_(threads) {}

  Status Run(KernelContext& ctx) override {
    const T* x = ctx.inputs[0].as<const T>();
    T* y = ctx.outputs[0].as<T>();
    const ir::TensorView &scale = ctx.inputs[1], &bias = ctx.inputs[2];
    const ir::TensorView &in_mean = ctx.inputs[3], &in_var = ctx.inputs[4];
    const bool run_mean = ctx.outputs.size() > 1 && ctx.outputs[1].data;
    const bool run_var = ctx.outputs.size() > 2 && ctx.outputs[2].data;
#pragma omp parallel num_threads(threads_)
    {
      std::vector<float> buf, tmp(kBlock);
#pragma omp for schedule(static)
      for (int64_t c = 0; c < s_.c; ++c) {
        double mean = VecAt(in_mean, c), var = VecAt(in_var, c);
        if (training_) {
          const float k = First(x, s_, c);
          double s1 = 0.0, s2 = 0.0;
          ForBlocks(s_, c, x, buf, [&](const float* f, int64_t len, int64_t) { ShiftedSums(f, len, k, s1, s2); });
          const double d = s1 / s_.count();
          mean = k + d;
          var = std::max(s2 / s_.count() - d * d, 0.0);
          if (run_mean) SetVec(ctx.outputs[1], c, VecAt(in_mean, c) * momentum_ + mean * (1.0 - momentum_));
          if (run_var) SetVec(ctx.outputs[2], c, VecAt(in_var, c) * momentum_ + var * (1.0 - momentum_));
        }
        const double a = VecAt(scale, c) / std::sqrt(var + eps_), b = VecAt(bias, c) - mean * a;
        ForBlocks(s_, c, x, buf, [&](const float* f, int64_t len, int64_t at) {
          Affine(f, nullptr, len, static_cast<float>(a), static_cast<float>(b), 0.0f, y + at, tmp.data());
        });
      }
    }
    return Status::Ok();
  }

 private:
  Shape s_;
  bool training_;
  double eps_, momentum_;
  int threads_;
};

template <class T>
class BatchNormGradKernel final : public Kernel {
 public:
  BatchNormGradKernel(Shape s, double eps, int threads) : s_(s), eps_(eps), threads_(threads) {}

  Status Run(KernelContext& ctx) override {
    const T* dy = ctx.inputs[0].as<const T>();
    const T* x = ctx.inputs[1].as<const T>();
    const ir::TensorView& scale = ctx.inputs[2];
    T* dx = ctx.outputs[0].as<T>();
    const bool dscale = ctx.outputs.size() > 1 && ctx.outputs[1].data;
    const bool dbias = ctx.outputs.size() > 2 && ctx.outputs[2].data;
    const double count = s_.count();
#pragma omp parallel num_threads(threads_)
    {
      std::vector<float> xbuf, dybuf(kBlock), tmp(kBlock);
#pragma omp for schedule(static)
      for (int64_t c = 0; c < s_.c; ++c) {
        const float k = First(x, s_, c);
        double s1 = 0.0, s2 = 0.0, sdy = 0.0, sdyk = 0.0;
        ForBlocks(s_, c, x, xbuf, [&](const float* f, int64_t len, int64_t at) {
          ShiftedSums(f, len, k, s1, s2);
          GradSums(DyBlock(dy + at, len, dybuf), f, len, k, sdy, sdyk);
        });
        const double d = s1 / count, mean = k + d;
        const double inv = 1.0 / std::sqrt(std::max(s2 / count - d * d, 0.0) + eps_);
        const double sdyx = inv * (sdyk - d * sdy);  // sum dy * xhat
        if (dscale) SetVec(ctx.outputs[1], c, sdyx);
        if (dbias) SetVec(ctx.outputs[2], c, sdy);
        if (!dx) continue;
        // dX = scale * inv / M * (M * dy - sdy - xhat * sdyx) = k1 * dy + k2 * x + k3.
        const double a = VecAt(scale, c) * inv / count;
        const double k1 = a * count, k2 = -a * inv * sdyx, k3 = -a * sdy + a * mean * inv * sdyx;
        ForBlocks(s_, c, x, xbuf, [&](const float* f, int64_t len, int64_t at) {
          Affine(f, DyBlock(dy + at, len, dybuf), len, static_cast<float>(k2), static_cast<float>(k3),
                 static_cast<float>(k1), dx + at, tmp.data());
        });
      }
    }
    return Status::Ok();
  }

 private:
  static const float* DyBlock(const T* dy, int64_t len, std::vector<float>& buf) {
    if constexpr (std::is_same_v<T, float>) {
      return dy;
    } else {
      WidenSpan(StorageDType<T>(), dy, buf.data(), len);
      return buf.data();
    }
  }

  Shape s_;
  double eps_;
  int threads_;
};

// [N, C, spatial...] with planes of at least 16 elements; the listed
// inputs and outputs vectors of C, fp32 or all in X's type.
StatusOr<Shape> Check(const KernelInit& init, size_t x_input, const std::vector<size_t>& vec_inputs,
                      size_t first_vec_output) {
  const std::vector<int64_t>& x = init.inputs[x_input].dims;
  if (x.size() < 3) return init.Error("the direct BatchNormalization takes [N, C, spatial...]");
  Shape s{x[0], x[1], 1};
  for (size_t d = 2; d < x.size(); ++d) s.plane *= x[d];
  if (s.plane < 16 || s.n * s.plane == 0) return init.Error("planes of fewer than 16 elements");
  const std::vector<int64_t> c = {x[1]};
  const DType vec = init.inputs[vec_inputs.front()].dtype;
  if (vec != DType::kFloat32 && vec != init.inputs[x_input].dtype)
    return init.Error("the parameters must be fp32 or X's type, not ", DTypeName(vec));
  for (size_t i : vec_inputs)
    if (init.inputs[i].dtype != vec || init.inputs[i].dims != c)
      return init.Error("input ", i, " must be a ", DTypeName(vec), " vector of ", x[1]);
  for (size_t o = first_vec_output; o < init.outputs.size(); ++o)
    if (init.outputs[o].present() && (init.outputs[o].dtype != vec || init.outputs[o].dims != c))
      return init.Error("output ", o, " must be a ", DTypeName(vec), " vector of ", x[1]);
  return s;
}

StatusOr<std::unique_ptr<Kernel>> MakeBatchNorm(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(kernels::CheckArity(init, 5, 5, 1, 3));
  if (init.outputs.size() == 2) return init.Error("2 outputs; training mode has 3");
  const auto& x = init.inputs[0].dims;
  if (init.outputs[0].dtype != init.inputs[0].dtype || init.outputs[0].dims != x)
    return init.Error("Y must have X's type");
  AMP_ASSIGN_OR_RETURN(Shape s, Check(init, 0, {1, 2, 3, 4}, 1));
  AMP_ASSIGN_OR_RETURN(float eps, init.attrs->GetFloat("epsilon", 1e-5f));
  AMP_ASSIGN_OR_RETURN(float momentum, init.attrs->GetFloat("momentum", 0.9f));
  AMP_ASSIGN_OR_RETURN(int64_t mode, init.attrs->GetInt("training_mode", 0));
  const bool training = init.training || mode != 0 || init.outputs.size() == 3;
  return ForDType<BatchNormKernel>(init.inputs[0].dtype, s, training, eps, momentum, Threads(init));
}

StatusOr<std::unique_ptr<Kernel>> MakeBatchNormGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(kernels::CheckArity(init, 3, 3, 1, 3));
  const auto& x = init.inputs[1].dims;
  const DType t = init.inputs[1].dtype;
  if (init.inputs[0].dtype != t || init.inputs[0].dims != x || init.outputs[0].dtype != t)
    return init.Error("dY, X and dX must share dtype and dims");
  AMP_ASSIGN_OR_RETURN(Shape s, Check(init, 1, {2}, 1));
  AMP_ASSIGN_OR_RETURN(float eps, init.attrs->GetFloat("epsilon", 1e-5f));
  return ForDType<BatchNormGradKernel>(t, s, eps, Threads(init));
}

}  // namespace

void RegisterDirectBatchNorm(Registry& r) {
  r.Add(DirectEntry(OpKind::kBatchNormalization, MakeBatchNorm));
  r.Add(DirectEntry(OpKind::kBatchNormalizationGrad, MakeBatchNormGrad));
}

}  // namespace amptrain::kernels::cpu::direct
