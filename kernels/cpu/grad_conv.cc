// Reference ConvGrad(dY, X, W) -> dX, dW, dB: the transpose of the loops of
// kernels/cpu/conv.cc, over the same gather table (kernels/cpu/conv_geometry.h),
// any spatial rank, groups, dilations, pads, strides.
//   dX[n, g*Cg + c, tab[k, o]] += W[m, c, k] * dY[n, m, o]   (m in group g)
//   dW[m, c, k] = sum_{n, o} dY[n, m, o] * X[n, g*Cg + c, tab[k, o]]
//   dB[m]       = sum_{n, o} dY[n, m, o]
// Each work item owns what it writes (an (n, input channel) plane of dX, a
// (m, c) kernel of dW, a channel of dB) and sums in double in a fixed order:
// no races, the same bits for any thread count.
#include <vector>

#include "kernels/cpu/conv_geometry.h"
#include "kernels/cpu/grad_kernels.h"

namespace amptrain::kernels::cpu::grad {

namespace {

template <class T>
class ConvGradReference : public Kernel {
 public:
  ConvGradReference(const KernelInit& init, const ir::WindowGeometry& g, int64_t group)
      : threads_(Threads(init)), group_(group) {
    const auto& dy = init.inputs[0].dims;
    const auto& x = init.inputs[1].dims;
    const auto& w = init.inputs[2].dims;
    n_ = x[0], c_ = x[1], m_ = w[0];
    in_size_ = SpatialSize(x), out_size_ = SpatialSize(dy), k_size_ = SpatialSize(w);
    table_ = BuildWindowTable(g, {x.begin() + 2, x.end()}, {dy.begin() + 2, dy.end()}, false);
  }

  Status Run(KernelContext& ctx) override {
    const T* dy = ctx.inputs[0].as<const T>();
    const T* x = ctx.inputs[1].as<const T>();
    const T* w = ctx.inputs[2].as<const T>();
    if (T* dx = ctx.outputs[0].as<T>()) InputGrad(dy, w, dx);
    if (ctx.outputs.size() > 1 && ctx.outputs[1].data) WeightGrad(dy, x, ctx.outputs[1].as<T>());
    if (ctx.outputs.size() > 2 && ctx.outputs[2].data) BiasGrad(dy, ctx.outputs[2].as<T>());
    return Status::Ok();
  }

 private:
  void InputGrad(const T* dy, const T* w, T* dx) const {
    const int64_t cg = c_ / group_, mg = m_ / group_;
#pragma omp parallel num_threads(threads_)
    {
      std::vector<double> acc(in_size_);
#pragma omp for collapse(2) schedule(dynamic)
      for (int64_t n = 0; n < n_; ++n) {
        for (int64_t ci = 0; ci < c_; ++ci) {
          const int64_t g = ci / cg, c = ci % cg;
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t m = g * mg; m < (g + 1) * mg; ++m) {
            const T* dym = dy + (n * m_ + m) * out_size_;
            const T* wc = w + (m * cg + c) * k_size_;
            for (int64_t k = 0; k < k_size_; ++k) {
              const double wk = Load(wc[k]);
              const int64_t* tab = table_.data() + k * out_size_;
              for (int64_t o = 0; o < out_size_; ++o)
                if (tab[o] >= 0) acc[tab[o]] += wk * Load(dym[o]);
            }
          }
          T* dxp = dx + (n * c_ + ci) * in_size_;
          for (int64_t i = 0; i < in_size_; ++i) dxp[i] = Store<T>(acc[i]);
        }
      }
    }
  }

  void WeightGrad(const T* dy, const T* x, T* dw) const {
    const int64_t cg = c_ / group_, mg = m_ / group_;
#pragma omp parallel num_threads(threads_)
    {
      std::vector<double> acc(k_size_);
#pragma omp for collapse(2) schedule(dynamic)
      for (int64_t m = 0; m < m_; ++m) {
        for (int64_t c = 0; c < cg; ++c) {
          const int64_t g = m / mg;
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t n = 0; n < n_; ++n) {
            const T* dym = dy + (n * m_ + m) * out_size_;
            const T* xc = x + (n * c_ + g * cg + c) * in_size_;
            for (int64_t k = 0; k < k_size_; ++k) {
              const int64_t* tab = table_.data() + k * out_size_;
              double s = 0.0;
              for (int64_t o = 0; o < out_size_; ++o)
                if (tab[o] >= 0) s += Load(dym[o]) * Load(xc[tab[o]]);
              acc[k] += s;
            }
          }
          T* dwp = dw + (m * cg + c) * k_size_;
          for (int64_t k = 0; k < k_size_; ++k) dwp[k] = Store<T>(acc[k]);
        }
      }
    }
  }

  void BiasGrad(const T* dy, T* db) const {
#pragma omp parallel for num_threads(threads_) schedule(static)
    for (int64_t m = 0; m < m_; ++m) {
      double s = 0.0;
      for (int64_t n = 0; n < n_; ++n) {
        const T* dym = dy + (n * m_ + m) * out_size_;
        for (int64_t o = 0; o < out_size_; ++o) s += Load(dym[o]);
      }
      db[m] = Store<T>(s);
    }
  }

  int threads_;
  int64_t group_, n_ = 0, c_ = 0, m_ = 0, in_size_ = 0, out_size_ = 0, k_size_ = 0;
  std::vector<int64_t> table_;
};

}  // namespace

StatusOr<std::unique_ptr<Kernel>> MakeConvGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 3, 3, 1, 3));
  AMP_RETURN_IF_ERROR(CheckSameDType(init, 0, {1, 2}));
  const auto& x = init.inputs[1].dims;
  const auto& w = init.inputs[2].dims;
  if (x.size() < 3 || w.size() != x.size()) return init.Error("X must be [N, C, spatial...] and W of the same rank");
  AMP_ASSIGN_OR_RETURN(int64_t group, init.attrs->GetInt("group", 1));
  if (group < 1 || w[0] % group != 0 || x[1] != w[1] * group)
    return init.Error("channels: input ", x[1], ", weight [", w[0], ", ", w[1], ", ...], group ", group);
  if (init.inputs[0].dims.size() != x.size() || init.inputs[0].dims[0] != x[0] || init.inputs[0].dims[1] != w[0])
    return init.Error("dY must be [N, M, out...]");
  AMP_ASSIGN_OR_RETURN(ir::WindowGeometry g, ResolveWindow(ForwardInit(init, 1), {w.begin() + 2, w.end()}, false));
  std::unique_ptr<Kernel> kernel;
  AMP_RETURN_IF_ERROR(DispatchFloat(init.inputs[0].dtype, [&](auto tag) {
    kernel = std::make_unique<ConvGradReference<typename decltype(tag)::type>>(init, g, group);
    return Status::Ok();
  }));
  return kernel;
}

}  // namespace amptrain::kernels::cpu::grad
