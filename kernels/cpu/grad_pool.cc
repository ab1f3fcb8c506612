// Reference MaxPoolGrad(dY, X) and AveragePoolGrad(dY, X) -> dX, any spatial
// rank, over the gather table of kernels/cpu/conv_geometry.h that the
// forward kernels (kernels/cpu/pool.cc) use, so the windows agree.
//   MaxPoolGrad: dY[o] goes to the first maximum of window o in the forward
//     scan order (kernel offsets row-major; NaN counts as the maximum, as in
//     the forward kernel); windows entirely in the padding get nothing.
//   AveragePoolGrad: dX[tab[k, o]] += dY[o] / divisor[o], the divisor of the
//     forward kernel (in-input elements, or with count_include_pad those
//     inside the explicit pads; the ceil_mode overhang never counts).
// One plane (n, c) per work item, summed in double: no races, the same bits
// for any thread count.
#include <vector>

#include "kernels/cpu/conv_geometry.h"
#include "kernels/cpu/grad_kernels.h"

namespace amptrain::kernels::cpu::grad {

namespace {

struct PoolGradPlan {
  bool is_max = false;
  int64_t planes = 0, in_size = 0, out_size = 0, k_size = 0;
  std::vector<int64_t> table;
  std::vector<double> divisor;  // AveragePool
};

template <class T>
class PoolGradReference : public Kernel {
 public:
  PoolGradReference(PoolGradPlan plan, int threads) : p_(std::move(plan)), threads_(threads) {}

  Status Run(KernelContext& ctx) override {
    const T* dy = ctx.inputs[0].as<const T>();
    const T* x = ctx.inputs[1].as<const T>();
    T* dx = ctx.outputs[0].as<T>();
#pragma omp parallel num_threads(threads_)
    {
      std::vector<double> acc(p_.in_size), best(p_.out_size);
      std::vector<int64_t> arg(p_.out_size);
#pragma omp for schedule(dynamic)
      for (int64_t plane = 0; plane < p_.planes; ++plane) {
        const T* xp = x + plane * p_.in_size;
        const T* dyp = dy + plane * p_.out_size;
        std::fill(acc.begin(), acc.end(), 0.0);
        if (p_.is_max) {
          std::fill(arg.begin(), arg.end(), -1);
          for (int64_t k = 0; k < p_.k_size; ++k) {
            const int64_t* tab = p_.table.data() + k * p_.out_size;
            for (int64_t o = 0; o < p_.out_size; ++o) {
              if (tab[o] < 0) continue;
              const double v = Load(xp[tab[o]]);
              if (arg[o] < 0 || v > best[o] || (v != v && best[o] == best[o])) best[o] = v, arg[o] = tab[o];
            }
          }
          for (int64_t o = 0; o < p_.out_size; ++o)
            if (arg[o] >= 0) acc[arg[o]] += Load(dyp[o]);
        } else {
          for (int64_t k = 0; k < p_.k_size; ++k) {
            const int64_t* tab = p_.table.data() + k * p_.out_size;
            for (int64_t o = 0; o < p_.out_size; ++o)
              if (tab[o] >= 0) acc[tab[o]] += Load(dyp[o]) / p_.divisor[o];
          }
        }
        T* dxp = dx + plane * p_.in_size;
        for (int64_t i = 0; i < p_.in_size; ++i) dxp[i] = Store<T>(acc[i]);
      }
    }
    return Status::Ok();
  }

 private:
  PoolGradPlan p_;
  int threads_;
};

// The forward AveragePool's divisor per output position (kernels/cpu/pool.cc):
// the in-input taps, or with count_include_pad the taps inside
// [-pads_begin, in + pads_end) per dim, multiplied over dims.
std::vector<double> Divisors(const ir::WindowGeometry& g, const std::vector<int64_t>& in,
                             const std::vector<int64_t>& out, const std::vector<int64_t>& table,
                             bool count_include_pad) {
  const int64_t osize = SpatialSize(out, 0), ksize = SpatialSize(g.kernel, 0);
  std::vector<double> div(osize, count_include_pad ? 1.0 : 0.0);
  if (!count_include_pad) {
    for (int64_t k = 0; k < ksize; ++k)
      for (int64_t o = 0; o < osize; ++o) div[o] += table[k * osize + o] >= 0 ? 1.0 : 0.0;
    return div;
  }
  for (int64_t oi = 0; oi < osize; ++oi) {
    int64_t rest = oi;
    for (size_t d = out.size(); d-- > 0;) {
      const int64_t od = rest % out[d];
      rest /= out[d];
      int64_t taps = 0;
      for (int64_t k = 0; k < g.kernel[d]; ++k) {
        const int64_t i = od * g.strides[d] - g.pads_begin[d] + k * g.dilations[d];
        taps += i >= -g.pads_begin[d] && i < in[d] + g.pads_end[d];
      }
      div[oi] *= static_cast<double>(taps);
    }
  }
  return div;
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> MakePoolGrad(const KernelInit& init) {
  AMP_RETURN_IF_ERROR(CheckArity(init, 2, 2, 1, 1));
  AMP_RETURN_IF_ERROR(CheckSameDType(init, 0, {1}));
  const auto& x = init.inputs[1].dims;
  const auto& dy = init.inputs[0].dims;
  if (x.size() < 3 || dy.size() != x.size() || dy[0] != x[0] || dy[1] != x[1])
    return init.Error("X must be [N, C, spatial...] and dY [N, C, out...]");
  AMP_ASSIGN_OR_RETURN(ir::WindowGeometry g, ResolveWindow(ForwardInit(init, 1), {}, false));
  const std::vector<int64_t> in(x.begin() + 2, x.end()), out(dy.begin() + 2, dy.end());
  PoolGradPlan plan;
  plan.is_max = init.op == OpKind::kMaxPoolGrad;
  plan.planes = x[0] * x[1];
  plan.in_size = SpatialSize(x);
  plan.out_size = SpatialSize(dy);
  plan.k_size = SpatialSize(g.kernel, 0);
  plan.table = BuildWindowTable(g, in, out, false);
  if (!plan.is_max) {
    AMP_ASSIGN_OR_RETURN(int64_t include_pad, init.attrs->GetInt("count_include_pad", 0));
    plan.divisor = Divisors(g, in, out, plan.table, include_pad != 0);
  }
  std::unique_ptr<Kernel> kernel;
  AMP_RETURN_IF_ERROR(DispatchFloat(init.inputs[0].dtype, [&](auto tag) {
    kernel = std::make_unique<PoolGradReference<typename decltype(tag)::type>>(std::move(plan), Threads(init));
    return Status::Ok();
  }));
  return kernel;
}

}  // namespace amptrain::kernels::cpu::grad
