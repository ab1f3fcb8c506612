// Reference MaxPool, AveragePool and GlobalAveragePool over any spatial rank.
// X [N, C, in...] -> Y [N, C, out...]; MaxPool's optional Indices output holds
// int64 flat indices into X (batch and channel included, as ONNX Runtime):
// (n*C + c) * in_size + offset, offset row-major (storage_order 0) or
// column-major (storage_order 1). Ties keep the first maximum.
// AveragePool divides by the count of in-input elements, or with
// count_include_pad by the elements inside the explicit pads (the extra
// right overhang of ceil_mode never counts).
// GlobalAveragePool is AveragePool with the whole plane as one window.
// MaxPool also takes int8/uint8 (ONNX opset 12+).
#include <omp.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "kernels/cpu/conv_geometry.h"
#include "kernels/cpu/nn_kernels.h"

namespace amptrain::kernels::cpu::nn {

namespace {

struct PoolPlan {
  bool is_max = false;
  int64_t planes = 0, in_size = 0, out_size = 0, k_size = 0;
  std::vector<int32_t> table;     // gather table, see BuildWindowTable
  std::vector<double> divisor;    // AveragePool: per output position
  std::vector<int64_t> index_of;  // MaxPool storage_order 1: row-major offset -> column-major
};

template <class T>
class PoolReference : public Kernel {
 public:
  PoolReference(PoolPlan plan, int threads) : p_(std::move(plan)), threads_(threads) {}

  Status Run(KernelContext& ctx) override {
    const T* x = ctx.inputs[0].as<const T>();
    T* y = ctx.outputs[0].as<T>();
    int64_t* idx = ctx.outputs.size() > 1 ? ctx.outputs[1].as<int64_t>() : nullptr;
#pragma omp parallel num_threads(threads_)
    {
      std::vector<double> acc(p_.out_size);
      std::vector<int64_t> arg(p_.out_size);
#pragma omp for schedule(dynamic)
      for (int64_t plane = 0; plane < p_.planes; ++plane) {
        const T* xp = x + plane * p_.in_size;
        std::fill(acc.begin(), acc.end(), p_.is_max ? -std::numeric_limits<double>::infinity() : 0.0);
        std::fill(arg.begin(), arg.end(), 0);
        for (int64_t k = 0; k < p_.k_size; ++k) {
          const int32_t* tab = p_.table.data() + k * p_.out_size;
          for (int64_t o = 0; o < p_.out_size; ++o) {
            if (tab[o] < 0) continue;
            double v = static_cast<double>(xp[tab[o]]);
            if (!p_.is_max)
              acc[o] += v;
            else if (v > acc[o] || (v != v && acc[o] == acc[o]))
              acc[o] = v, arg[o] = tab[o];
          }
        }
        T* yp = y + plane * p_.out_size;
        for (int64_t o = 0; o < p_.out_size; ++o)
          yp[o] = static_cast<T>(static_cast<Acc<T>>(p_.is_max ? acc[o] : acc[o] / p_.divisor[o]));
        if (!idx) continue;
        for (int64_t o = 0; o < p_.out_size; ++o)
          idx[plane * p_.out_size + o] = plane * p_.in_size + (p_.index_of.empty() ? arg[o] : p_.index_of[arg[o]]);
      }
    }
    return Status::Ok();
  }

 private:
  PoolPlan p_;
  int threads_;
};

// Per output position: how many kernel offsets land inside the input, or
// (count_include_pad) inside [-pads_begin, in + pads_end).
std::vector<double> Divisors(const ir::WindowGeometry& g, const std::vector<int64_t>& in,
                             const std::vector<int64_t>& out, const std::vector<int32_t>& table,
                             bool count_include_pad) {
  int64_t osize = SpatialSize(out, 0), ksize = SpatialSize(g.kernel, 0);
  std::vector<double> div(osize, 0.0);
  if (!count_include_pad) {
    for (int64_t k = 0; k < ksize; ++k)
      for (int64_t o = 0; o < osize; ++o) div[o] += table[k * osize + o] >= 0 ? 1.0 : 0.0;
    return div;
  }
  std::vector<int64_t> o(out.size(), 0);
  for (int64_t oi = 0; oi < osize; ++oi) {
    double count = 1.0;
    for (size_t d = 0; d < out.size(); ++d) {
      int64_t n = 0;
      for (int64_t k = 0; k < g.kernel[d]; ++k) {
        int64_t i = o[d] * g.strides[d] - g.pads_begin[d] + k * g.dilations[d];
        n += i >= -g.pads_begin[d] && i < in[d] + g.pads_end[d];
      }
      count *= static_cast<double>(n);
    }
    div[oi] = count;
    for (size_t d = out.size(); d-- > 0;) {
      if (++o[d] < out[d]) break;
      o[d] = 0;
    }
  }
  return div;
}

std::vector<int64_t> ColumnMajorIndex(const std::vector<int64_t>& in) {
  std::vector<int64_t> map(SpatialSize(in, 0));
  for (int64_t r = 0; r < static_cast<int64_t>(map.size()); ++r) {
    int64_t rest = r, col = 0, stride = 1;
    std::vector<int64_t> idx(in.size());
    for (size_t d = in.size(); d-- > 0;) idx[d] = rest % in[d], rest /= in[d];
    for (size_t d = 0; d < in.size(); ++d) col += idx[d] * stride, stride *= in[d];
    map[r] = col;
  }
  return map;
}

}  // namespace

StatusOr<std::unique_ptr<Kernel>> MakePoolReference(const KernelInit& init) {
  const bool is_max = init.op == OpKind::kMaxPool, global = init.op == OpKind::kGlobalAveragePool;
  AMP_RETURN_IF_ERROR(CheckArity(init, 1, 1, 1, is_max ? 2 : 1));
  const auto& x = init.inputs[0].dims;
  if (x.size() < 3) return init.Error("input has rank ", x.size(), ", expected [N, C, spatial...]");
  std::vector<int64_t> in(x.begin() + 2, x.end());
  ir::WindowGeometry g;
  if (global) {
    if (SpatialSize(x) > INT32_MAX) return init.Error("spatial planes of 2^31 or more elements are not supported");
    g.kernel = in;
    g.strides = g.dilations = std::vector<int64_t>(in.size(), 1);
    g.pads_begin = g.pads_end = std::vector<int64_t>(in.size(), 0);
  } else {
    AMP_ASSIGN_OR_RETURN(g, ResolveWindow(init, {}, false));
  }
  std::vector<int64_t> out = global
                                 ? std::vector<int64_t>(in.size(), 1)
                                 : std::vector<int64_t>(init.outputs[0].dims.begin() + 2, init.outputs[0].dims.end());
  PoolPlan plan;
  plan.is_max = is_max;
  plan.planes = x[0] * x[1];
  plan.in_size = SpatialSize(x);
  plan.out_size = SpatialSize(out, 0);
  plan.k_size = SpatialSize(g.kernel, 0);
  plan.table = BuildWindowTable<int32_t>(g, in, out, false);
  if (!is_max) {
    AMP_ASSIGN_OR_RETURN(int64_t include_pad, init.attrs->GetInt("count_include_pad", 0));
    plan.divisor = Divisors(g, in, out, plan.table, include_pad != 0);
  } else if (init.outputs.size() > 1 && init.attrs->Int("storage_order", 0) == 1) {
    plan.index_of = ColumnMajorIndex(in);
  }
  if (is_max && init.outputs.size() > 1 && init.outputs[1].dtype != DType::kInt64)
    return init.Error("Indices output must be int64");
  std::unique_ptr<Kernel> kernel;
  const DType t = init.inputs[0].dtype;
  if (is_max && t == DType::kUInt8)
    return std::unique_ptr<Kernel>(new PoolReference<uint8_t>(std::move(plan), Threads(init)));
  if (is_max && t == DType::kInt8)
    return std::unique_ptr<Kernel>(new PoolReference<int8_t>(std::move(plan), Threads(init)));
  AMP_RETURN_IF_ERROR(DispatchFloat(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernel = std::make_unique<PoolReference<T>>(std::move(plan), Threads(init));
    return Status::Ok();
  }));
  return kernel;
}

}  // namespace amptrain::kernels::cpu::nn
