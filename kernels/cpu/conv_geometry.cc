#include "kernels/cpu/conv_geometry.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

namespace amptrain::kernels::cpu {

int64_t SpatialSize(const std::vector<int64_t>& dims, size_t from) {
  int64_t n = 1;
  for (size_t i = from; i < dims.size(); ++i) n *= dims[i];
  return n;
}

StatusOr<ir::WindowGeometry> ResolveWindow(const KernelInit& init, const std::vector<int64_t>& kernel,
                                           bool transposed) {
  const std::vector<int64_t>& x = init.inputs[0].dims;
  if (x.size() < 3) return init.Error("input has rank ", x.size(), ", expected [N, C, spatial...]");
  if (!init.attrs) return init.Error("no attributes");
  auto g = ir::DecodeWindow(*init.attrs, x.size() - 2, kernel, transposed);
  if (!g.ok()) return init.Error(g.status().message());
  std::vector<int64_t> in(x.begin() + 2, x.end());
  auto out = transposed ? g->ResolveTransposed(in) : g->Resolve(in);
  if (!out.ok()) return init.Error(out.status().message());
  const std::vector<int64_t>& y = init.outputs[0].dims;
  if (SpatialSize(x) > INT32_MAX || SpatialSize(y) > INT32_MAX)
    return init.Error("spatial planes of 2^31 or more elements are not supported");
  if (y.size() != x.size() || !std::equal(out->begin(), out->end(), y.begin() + 2))
    return init.Error("output dims do not match the window geometry of input dims");
  return g;
}

template <class Offset>
std::vector<Offset> BuildWindowTable(const ir::WindowGeometry& g, const std::vector<int64_t>& in_dims,
                                     const std::vector<int64_t>& out_dims, bool transposed) {
  const size_t rank = g.rank();
  int64_t ksize = 1, osize = 1;
  for (size_t d = 0; d < rank; ++d) ksize *= g.kernel[d], osize *= out_dims[d];
  std::vector<Offset> table(static_cast<size_t>(ksize * osize), -1);
  std::vector<int64_t> k(rank, 0);
  for (int64_t ki = 0; ki < ksize; ++ki) {
    std::vector<int64_t> o(rank, 0);
    for (int64_t oi = 0; oi < osize; ++oi) {
      int64_t offset = 0;
      bool valid = true;
      for (size_t d = 0; d < rank && valid; ++d) {
        int64_t i;
        if (!transposed) {
          i = o[d] * g.strides[d] - g.pads_begin[d] + k[d] * g.dilations[d];
        } else {
          int64_t t = o[d] + g.pads_begin[d] - k[d] * g.dilations[d];
          valid = t >= 0 && t % g.strides[d] == 0;
          i = t / g.strides[d];
        }
        valid = valid && i >= 0 && i < in_dims[d];
        offset = offset * in_dims[d] + i;
      }
      table[ki * osize + oi] = valid ? static_cast<Offset>(offset) : -1;
      for (size_t d = rank; d-- > 0;) {  // next output multi-index
        if (++o[d] < out_dims[d]) break;
        o[d] = 0;
      }
    }
    for (size_t d = rank; d-- > 0;) {
      if (++k[d] < g.kernel[d]) break;
      k[d] = 0;
    }
  }
  return table;
}

template std::vector<int32_t> BuildWindowTable<int32_t>(const ir::WindowGeometry&, const std::vector<int64_t>&,
                                                        const std::vector<int64_t>&, bool);
template std::vector<int64_t> BuildWindowTable<int64_t>(const ir::WindowGeometry&, const std::vector<int64_t>&,
                                                        const std::vector<int64_t>&, bool);

std::optional<KernelInit> LiftWindow1d(const KernelInit& init, ir::Attributes& attrs) {
  if (init.inputs.empty() || init.inputs[0].dims.size() != 3 || !init.attrs) return std::nullopt;
  KernelInit lifted = init;
  auto lift = [](TensorSpec& spec) {
    if (spec.present() && spec.dims.size() == 3) spec.dims.insert(spec.dims.begin() + 2, 1);
  };
  for (TensorSpec& spec : lifted.inputs) lift(spec);
  for (TensorSpec& spec : lifted.outputs) lift(spec);
  attrs = *init.attrs;
  // Each window attribute gets the unit dim's entry in front (pads: at both ends).
  const std::pair<const char*, int64_t> leading[] = {
      {"kernel_shape", 1}, {"strides", 1}, {"dilations", 1}, {"output_padding", 0}, {"pads", 0}};
  for (const auto& [name, unit] : leading) {
    if (!attrs.Has(name)) continue;
    StatusOr<std::vector<int64_t>> v = attrs.GetInts(name);
    const size_t n = std::string(name) == "pads" ? 2 : 1;
    if (!v.ok() || v->size() != n) return std::nullopt;  // the 2-D kernel would not read it right: decline
    attrs.Set(name, n == 1 ? std::vector<int64_t>{unit, (*v)[0]} : std::vector<int64_t>{unit, (*v)[0], unit, (*v)[1]});
  }
  if (attrs.Has("output_shape")) {  // ConvTranspose: [L] or [N, C, L]
    StatusOr<std::vector<int64_t>> v = attrs.GetInts("output_shape");
    if (!v.ok() || v->empty()) return std::nullopt;
    std::vector<int64_t> shape = *v;
    shape.insert(shape.end() - 1, 1);
    attrs.Set("output_shape", shape);
  }
  lifted.attrs = &attrs;
  return lifted;
}

}  // namespace amptrain::kernels::cpu
