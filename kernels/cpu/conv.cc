// Reference Conv: X [N, C, in...], W [M, C/group, k...], optional B [M]
// -> Y [N, M, out...], any spatial rank. For each (n, m) the output plane is
// accumulated in double over (c, kernel offset) through the precomputed
// gather table of kernels/cpu/conv_geometry.h, so the inner loop is a plain
// strided multiply-add with no geometry arithmetic. The same loop serves
// ConvTranspose (kernels/cpu/conv_transpose.cc), whose table is built in
// transposed form and whose weight is laid out [C, M/group, k...].
#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/conv_geometry.h"
#include "kernels/cpu/nn_kernels.h"

namespace amptrain::kernels::cpu::nn {

namespace {

template <class T>
class GatherConv : public Kernel {
 public:
  GatherConv(const KernelInit& init, const ir::WindowGeometry& g, int64_t group, bool transposed)
      : threads_(Threads(init)), group_(group), transposed_(transposed) {
    const auto& x = init.inputs[0].dims;
    const auto& w = init.inputs[1].dims;
    const auto& y = init.outputs[0].dims;
    n_ = x[0], c_ = x[1], m_ = y[1];
    in_size_ = SpatialSize(x), out_size_ = SpatialSize(y), k_size_ = SpatialSize(w);
    table_ = BuildWindowTable<int32_t>(g, {x.begin() + 2, x.end()}, {y.begin() + 2, y.end()}, transposed);
  }

  Status Run(KernelContext& ctx) override {
    const T* x = ctx.inputs[0].as<const T>();
    const T* w = ctx.inputs[1].as<const T>();
    const T* b = ctx.inputs.size() > 2 ? ctx.inputs[2].as<const T>() : nullptr;
    T* y = ctx.outputs[0].as<T>();
    const int64_t cg = c_ / group_, mg = m_ / group_;
#pragma omp parallel num_threads(threads_)
    {
      std::vector<double> acc(out_size_);
#pragma omp for collapse(2) schedule(dynamic)
      for (int64_t n = 0; n < n_; ++n) {
        for (int64_t m = 0; m < m_; ++m) {
          const int64_t g = m / mg, ml = m % mg;
          std::fill(acc.begin(), acc.end(), b ? static_cast<double>(b[m]) : 0.0);
          for (int64_t c = 0; c < cg; ++c) {
            const T* xc = x + (n * c_ + g * cg + c) * in_size_;
            const T* wc = w + (transposed_ ? (g * cg + c) * mg + ml : m * cg + c) * k_size_;
            for (int64_t k = 0; k < k_size_; ++k) {
              const double wk = static_cast<double>(wc[k]);
              const int32_t* tab = table_.data() + k * out_size_;
              for (int64_t o = 0; o < out_size_; ++o)
                if (tab[o] >= 0) acc[o] += wk * static_cast<double>(xc[tab[o]]);
            }
          }
          T* yp = y + (n * m_ + m) * out_size_;
          for (int64_t o = 0; o < out_size_; ++o) yp[o] = static_cast<T>(static_cast<Acc<T>>(acc[o]));
        }
      }
    }
    return Status::Ok();
  }

 private:
  int threads_;
  int64_t group_;
  bool transposed_;
  int64_t n_ = 0, c_ = 0, m_ = 0, in_size_ = 0, out_size_ = 0, k_size_ = 0;
  std::vector<int32_t> table_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> MakeGatherConv(const KernelInit& init, const ir::WindowGeometry& g, int64_t group,
                                                 bool transposed) {
  const auto& x = init.inputs[0].dims;
  const auto& w = init.inputs[1].dims;
  const auto& y = init.outputs[0].dims;
  const int64_t m = transposed ? w[1] * group : w[0];
  if (y[0] != x[0] || y[1] != m) return init.Error("output must have batch ", x[0], " and ", m, " channels");
  std::unique_ptr<Kernel> kernel;
  AMP_RETURN_IF_ERROR(DispatchFloat(init.inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernel = std::make_unique<GatherConv<T>>(init, g, group, transposed);
    return Status::Ok();
  }));
  return kernel;
}

StatusOr<std::unique_ptr<Kernel>> MakeConvReference(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 3, 1, 1));
  AMP_RETURN_IF_ERROR(CheckSameDType(init, 1, 3));
  const auto& x = init.inputs[0].dims;
  const auto& w = init.inputs[1].dims;
  if (w.size() != x.size()) return init.Error("weight rank ", w.size(), " != input rank ", x.size());
  AMP_ASSIGN_OR_RETURN(int64_t group, init.attrs->GetInt("group", 1));
  if (group < 1 || w[0] % group != 0 || x[1] != w[1] * group)
    return init.Error("channels: input ", x[1], ", weight [", w[0], ", ", w[1], ", ...], group ", group);
  if (init.inputs.size() > 2 && init.inputs[2].present() &&
      (init.inputs[2].dims.size() != 1 || init.inputs[2].dims[0] != w[0]))
    return init.Error("bias must have ", w[0], " elements");
  AMP_ASSIGN_OR_RETURN(ir::WindowGeometry g, ResolveWindow(init, {w.begin() + 2, w.end()}, false));
  return MakeGatherConv(init, g, group, false);
}

}  // namespace amptrain::kernels::cpu::nn
