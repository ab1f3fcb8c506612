// Direct LayerNormalization and LayerNormalizationGrad (fp32, fp16, bf16):
// X viewed as rows [rows, cols] (cols = the normalized tail X[axis:]), with
// Scale (and B) of cols elements, no broadcast. The reference kernels
// (softmax.cc, grad_norm.cc) sum each row in double one element after
// another, so every sum waits on the adder's latency: a transformer's
// [2048, 128] activations took 0.27 ms forward and 0.5 ms backward there on
// 2 threads. Here each row sum runs in eight double lanes (RowSum: lane l
// takes elements l, l + 8, ...; the lanes then add pairwise), the same order
// on every CPU (no fused multiply-add: -ffp-contract=off), and every other
// formula is the reference's, in double, rounded once:
//   forward:  mean = sum(x) / n, var = sum((x - mean)^2) / n,
//             inv = 1 / sqrt(var + epsilon), y = (x - mean) * inv * s + b
//             (b = 0 without B, as the reference adds it);
//   backward: mean and inv again, g = dy * s,
//             dx = inv * (g - sum(g) / n - (x - mean) * inv * sum(g * (x - mean) * inv) / n),
//             dScale = sum over rows of dy * (x - mean) * inv, dBias = sum over
//             rows of dy, summed while each row is in cache: per column, each
//             block of 32 rows in row order, then the blocks in order (the
//             reference reads X and dY a second time for these sums, in row
//             order; the kernel is bound by memory bandwidth).
// 2-byte values are widened into thread-local rows of floats and rounded
// back from fp32 as the reference's double -> float -> 2-byte stores.
// Not the reference's bits: the row sums run in another order, so mean and
// inv can differ in the last bits of a double, and a rounded output by one
// ulp where the exact value lies that close to a rounding boundary
// (DirectMath.LayerNorm* tests in tests/kernels). The bits do not depend on
// the thread count or the CPU. Declined, for the reference to run: a
// broadcast Scale or B, the forward's Mean and InvStdDev outputs.
#include <cmath>
#include <vector>

#include "kernels/cpu/direct_kernels.h"
#include "kernels/cpu/grad_kernels.h"

namespace amptrain::kernels::cpu::direct {

namespace {

constexpr int64_t kRowLanes = 8;
constexpr int64_t kRowBlock = 32;          // rows per work item (and per partial dScale/dBias sum)
constexpr int64_t kParallelMin = 1 << 14;  // elements below which one thread runs

// sum over k in [0, n) of f(k): lane l adds the terms k = l, l + 8, ... in
// increasing k; the lanes then add as ((0 + 1) + (2 + 3)) + ((4 + 5) + (6 + 7)).
template <class F>
inline double RowSum(int64_t n, F f) {
  double acc[kRowLanes] = {};
  int64_t k = 0;
  for (; k + kRowLanes <= n; k += kRowLanes)
    for (int64_t l = 0; l < kRowLanes; ++l) acc[l] += f(k + l);
  for (int64_t l = 0; k + l < n; ++l) acc[l] += f(k + l);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

struct RowStats {
  double mean, inv;
};

inline RowStats Stats(const float* x, int64_t n, double epsilon) {
  const double mean = RowSum(n, [&](int64_t k) { return static_cast<double>(x[k]); }) / static_cast<double>(n);
  const double sq = RowSum(n, [&](int64_t k) {
    const double d = static_cast<double>(x[k]) - mean;
    return d * d;
  });
  return {mean, 1.0 / std::sqrt(sq / static_cast<double>(n) + epsilon)};
}

// y = (x - mean) * inv * s + b over one row.
__attribute__((target_clones("avx512f", "avx2", "default"))) void NormalizeRow(const float* x, int64_t n,
                                                                             double epsilon, const double* s,
                                                                             const double* b, float* y) {
  const RowStats st = Stats(x, n, epsilon);
  for (int64_t k = 0; k < n; ++k)
    y[k] = static_cast<float>((static_cast<double>(x[k]) - st.mean) * st.inv * s[k] + b[k]);
}

// dx over one row (dx may be null); g is scratch of n doubles. Adds the
// row's dy * (x - mean) * inv and dy to dscale and dbias (either may be null).
__attribute__((target_clones("avx512f", "avx2", "default"))) void GradRow(const float* x, const float* dy, int64_t n,
                                                                        double epsilon, const double* s, double* g,
                                                                        float* dx, double* dscale, double* dbias) {
  const RowStats st = Stats(x, n, epsilon);
  if (dx) {
    for (int64_t k = 0; k < n; ++k) g[k] = static_cast<double>(dy[k]) * s[k];
    const double sg = RowSum(n, [&](int64_t k) { return g[k]; }) / static_cast<double>(n);
    const double sgx = RowSum(n, [&](int64_t k) { return g[k] * (static_cast<double>(x[k]) - st.mean) * st.inv; }) /
                       static_cast<double>(n);
    for (int64_t k = 0; k < n; ++k)
      dx[k] = static_cast<float>(st.inv * (g[k] - sg - (static_cast<double>(x[k]) - st.mean) * st.inv * sgx));
  }
  if (dscale)
    for (int64_t k = 0; k < n; ++k) dscale[k] += static_cast<double>(dy[k]) * (static_cast<double>(x[k]) - st.mean) * st.inv;
  if (dbias)
    for (int64_t k = 0; k < n; ++k) dbias[k] += static_cast<double>(dy[k]);
}

// rows x cols for X of `dims` normalized from `axis` (negative: from the end).
bool RowsAndCols(const std::vector<int64_t>& dims, int64_t axis, int64_t& rows, int64_t& cols) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (axis < 0) axis += rank;
  if (rank == 0 || axis < 0 || axis >= rank) return false;
  rows = cols = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? rows : cols) *= dims[static_cast<size_t>(d)];
  return true;
}

// The rows both kernels walk, known at creation.
class RowsKernel : public Kernel {
 public:
  RowsKernel(int64_t rows, int64_t cols, double epsilon, int threads)
      : rows_(rows), cols_(cols), epsilon_(epsilon), threads_(rows * cols >= kParallelMin ? threads : 1) {}

 protected:
  int64_t rows_, cols_;
  double epsilon_;
  int threads_;
};

template <class T>
class LayerNormKernel : public RowsKernel {
 public:
  using RowsKernel::RowsKernel;
  int inplace_input(size_t output) const override { return output == 0 ? 0 : -1; }

  Status Run(KernelContext& ctx) override {
    const T* x = ctx.inputs[0].as<const T>();
    T* y = ctx.outputs[0].as<T>();
    const std::vector<double> s = grad::ReadVector(ctx.inputs[1]);
    const std::vector<double> b = ctx.inputs.size() > 2 && ctx.inputs[2].data
                                      ? grad::ReadVector(ctx.inputs[2])
                                      : std::vector<double>(static_cast<size_t>(cols_), 0.0);
#pragma omp parallel num_threads(threads_) if (threads_ > 1)
    {
      std::vector<float> in, out(static_cast<size_t>(cols_));
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows_; ++r) {
        const float* xr = Widened(x + r * cols_, cols_, in);
        float* yr = out.data();
        if constexpr (std::is_same_v<T, float>) yr = y + r * cols_;  // in place over X is fine: a row is read first
        NormalizeRow(xr, cols_, epsilon_, s.data(), b.data(), yr);
        StoreNarrowed(yr, y + r * cols_, cols_);
      }
    }
    return Status::Ok();
  }
};

template <class T>
class LayerNormGradKernel : public RowsKernel {
 public:
  using RowsKernel::RowsKernel;

  Status Run(KernelContext& ctx) override {
    const T* dy = ctx.inputs[0].as<const T>();
    const T* x = ctx.inputs[1].as<const T>();
    T* dx = ctx.outputs[0].data ? ctx.outputs[0].as<T>() : nullptr;
    const std::vector<double> s = grad::ReadVector(ctx.inputs[2]);
    const bool want_scale = ctx.outputs.size() > 1 && ctx.outputs[1].data;
    const bool want_bias = ctx.outputs.size() > 2 && ctx.outputs[2].data;
    const int64_t blocks = (rows_ + kRowBlock - 1) / kRowBlock;
    const size_t n = static_cast<size_t>(cols_);
    // Per row block: its partial dScale and dBias sums.
    std::vector<double> partial_scale(want_scale ? n * static_cast<size_t>(blocks) : 0, 0.0);
    std::vector<double> partial_bias(want_bias ? n * static_cast<size_t>(blocks) : 0, 0.0);
#pragma omp parallel num_threads(threads_) if (threads_ > 1 && blocks > 1)
    {
      std::vector<float> xb, dyb, dxb(n);
      std::vector<double> g(n);
#pragma omp for schedule(static)
      for (int64_t blk = 0; blk < blocks; ++blk) {
        double* ps = want_scale ? partial_scale.data() + blk * cols_ : nullptr;
        double* pb = want_bias ? partial_bias.data() + blk * cols_ : nullptr;
        for (int64_t r = blk * kRowBlock; r < std::min(rows_, (blk + 1) * kRowBlock); ++r) {
          const float* xr = Widened(x + r * cols_, cols_, xb);
          const float* dyr = Widened(dy + r * cols_, cols_, dyb);
          float* dxr = nullptr;
          if constexpr (std::is_same_v<T, float>) dxr = dx ? dx + r * cols_ : nullptr;
          else dxr = dx ? dxb.data() : nullptr;
          GradRow(xr, dyr, cols_, epsilon_, s.data(), g.data(), dxr, ps, pb);
          if (dx) StoreNarrowed(dxr, dx + r * cols_, cols_);
        }
      }
    }
    if (want_scale) grad::WriteVector(ctx.outputs[1], SumBlocks(partial_scale, blocks));
    if (want_bias) grad::WriteVector(ctx.outputs[2], SumBlocks(partial_bias, blocks));
    return Status::Ok();
  }

 private:
  // Per column: the blocks' partial sums added in block order.
  std::vector<double> SumBlocks(const std::vector<double>& partial, int64_t blocks) const {
    std::vector<double> sum(static_cast<size_t>(cols_), 0.0);
    for (int64_t b = 0; b < blocks; ++b)
      for (int64_t j = 0; j < cols_; ++j) sum[static_cast<size_t>(j)] += partial[static_cast<size_t>(b * cols_ + j)];
    return sum;
  }
};

StatusOr<std::unique_ptr<Kernel>> MakeLayerNorm(const KernelInit& init) {
  if (init.inputs.size() < 2 || init.inputs.size() > 3 || init.outputs.empty())
    return init.Error("expects X, Scale and an optional B");
  for (size_t o = 1; o < init.outputs.size(); ++o)
    if (init.outputs[o].present()) return init.Error("the Mean and InvStdDev outputs are the reference's");
  AMP_ASSIGN_OR_RETURN(int64_t axis, init.attrs->GetInt("axis", -1));
  AMP_ASSIGN_OR_RETURN(float epsilon, init.attrs->GetFloat("epsilon", 1e-5f));
  int64_t rows, cols;
  if (!RowsAndCols(init.inputs[0].dims, axis, rows, cols)) return init.Error("axis ", axis, " is out of range");
  for (size_t i = 1; i < init.inputs.size(); ++i)
    if (init.inputs[i].present() &&
        (init.inputs[i].dtype != init.inputs[0].dtype || init.inputs[i].num_elements() != cols))
      return init.Error("input ", i, " is broadcast or of another dtype");
  if (init.outputs[0].dims != init.inputs[0].dims || init.outputs[0].dtype != init.inputs[0].dtype)
    return init.Error("Y must have X's shape and dtype");
  return ForDType<LayerNormKernel>(init.inputs[0].dtype, rows, cols, static_cast<double>(epsilon), Threads(init));
}

StatusOr<std::unique_ptr<Kernel>> MakeLayerNormGrad(const KernelInit& init) {
  if (init.inputs.size() != 3 || init.outputs.empty() || init.outputs.size() > 3)
    return init.Error("expects dY, X, Scale and up to 3 outputs");
  const auto& x = init.inputs[1].dims;
  AMP_ASSIGN_OR_RETURN(int64_t axis, init.attrs->GetInt("axis", -1));
  AMP_ASSIGN_OR_RETURN(float epsilon, init.attrs->GetFloat("epsilon", 1e-5f));
  int64_t rows, cols;
  if (!RowsAndCols(x, axis, rows, cols)) return init.Error("axis ", axis, " is out of range");
  const DType t = init.inputs[1].dtype;
  if (init.inputs[0].dims != x || init.inputs[0].dtype != t || init.inputs[2].dtype != t ||
      init.inputs[2].num_elements() != cols)
    return init.Error("dY, X and Scale must share a dtype, dY X's shape, Scale X[axis:]'s elements");
  if (init.outputs[0].present() && (init.outputs[0].dims != x || init.outputs[0].dtype != t))
    return init.Error("dX must have X's shape and dtype");
  for (size_t o = 1; o < init.outputs.size(); ++o)
    if (init.outputs[o].present() &&
        (init.outputs[o].dims != init.inputs[2].dims || !ir::IsFloat(init.outputs[o].dtype)))
      return init.Error("output ", o, " must have Scale's shape and a float dtype");
  return ForDType<LayerNormGradKernel>(t, rows, cols, static_cast<double>(epsilon), Threads(init));
}

}  // namespace

void RegisterDirectLayerNorm(Registry& r) {
  r.Add(DirectEntry(OpKind::kLayerNormalization, MakeLayerNorm));
  r.Add(DirectEntry(OpKind::kLayerNormalizationGrad, MakeLayerNormGrad));
}

}  // namespace amptrain::kernels::cpu::direct
