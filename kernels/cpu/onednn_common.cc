#include "kernels/cpu/onednn_common.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>

#include "kernels/cpu/conv_geometry.h"
#include "kernels/cpu/cpu_info.h"
#include "kernels/cpu/float_convert.h"

namespace amptrain::kernels::cpu::onednn {

using dt = dnnl::memory::data_type;

dnnl::engine& Engine() {
  static dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

dnnl::memory::data_type DataType(DType t) {
  switch (t) {
    case DType::kFloat32:
      return dt::f32;
    case DType::kBFloat16:
      return dt::bf16;
    default:
      return dt::undef;
  }
}

dnnl::memory::dims Dims(const std::vector<int64_t>& dims) { return dnnl::memory::dims(dims.begin(), dims.end()); }

dnnl::memory::dims Dilations(const std::vector<int64_t>& dilations) {
  dnnl::memory::dims gaps;
  for (int64_t d : dilations) gaps.push_back(d - 1);
  return gaps;
}

StatusOr<PoolWindow> ResolvePoolWindow(const KernelInit& forward, bool max, const std::vector<int64_t>& x,
                                       const std::vector<int64_t>& y) {
  AMP_ASSIGN_OR_RETURN(ir::WindowGeometry g, ResolveWindow(forward, {}, false));
  const bool include_pad = !max && forward.attrs->Int("count_include_pad", 0) != 0;
  PoolWindow w{max           ? dnnl::algorithm::pooling_max
               : include_pad ? dnnl::algorithm::pooling_avg_include_padding
                             : dnnl::algorithm::pooling_avg_exclude_padding,
               Dims(g.strides), Dims(g.kernel), Dilations(g.dilations), Dims(g.pads_begin), {}};
  for (size_t d = 0; d + 2 < x.size(); ++d) {
    const int64_t needed = (y[d + 2] - 1) * g.strides[d] + g.extent(d) - x[d + 2] - g.pads_begin[d];
    if (include_pad && needed > g.pads_end[d]) return forward.Error("ceil_mode overhang with count_include_pad");
    w.pads_end.push_back(std::max(needed, int64_t{0}));
  }
  return w;
}

std::vector<int64_t> GroupedWeightDims(const std::vector<int64_t>& w, int64_t group) {
  if (group == 1) return w;
  std::vector<int64_t> dims = {group, w[0] / group};
  dims.insert(dims.end(), w.begin() + 1, w.end());
  return dims;
}

dnnl::memory::desc PlainDesc(const std::vector<int64_t>& dims, DType t) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return dnnl::memory::desc(Dims(dims), DataType(t), strides);
}

dnnl::memory::desc SpecDesc(const TensorSpec& spec) {
  if (spec.channels_last && spec.dims.size() == 4)
    return dnnl::memory::desc(Dims(spec.dims), DataType(spec.dtype), dnnl::memory::format_tag::acdb);
  return PlainDesc(spec.dims, spec.dtype);
}

PrimitiveKernel::PrimitiveKernel(std::string describe, dnnl::primitive primitive, std::vector<Binding> bindings,
                                 std::vector<dnnl::memory> owned)
    : describe_(std::move(describe)),
      primitive_(std::move(primitive)),
      bindings_(std::move(bindings)),
      stream_(Engine()) {
  for (const Binding& b : bindings_) {
    if (b.source == Binding::kOwned) args_.Add(b.arg, owned[b.index]);
    else args_.Add(b.arg, b.desc);
  }
  const_dnnl_primitive_desc_t pd = nullptr;
  dnnl::error::wrap_c_api(dnnl_primitive_get_primitive_desc(primitive_.get(), &pd), "could not get a primitive desc");
  const dnnl_memory_desc_t* pad = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  scratchpad_bytes_ = pad ? dnnl_memory_desc_get_size(pad) : 0;
  args_.AddScratchpad(scratchpad_bytes_);
}

void ExecArgs::AddScratchpad(size_t bytes) {
  if (bytes == 0) return;
  const dnnl::memory::desc d({static_cast<dnnl::memory::dim>(bytes)}, dnnl::memory::data_type::u8,
                             dnnl::memory::format_tag::a);
  scratchpad_ = static_cast<int>(Add(DNNL_ARG_SCRATCHPAD, d));
}

size_t ExecArgs::Add(int arg, const dnnl::memory::desc& desc) {
  return Add(arg, dnnl::memory(desc, Engine(), DNNL_MEMORY_NONE));
}

size_t ExecArgs::Add(int arg, const dnnl::memory& fixed) {
  memories_.push_back(fixed);
  c_args_.push_back({arg, fixed.get()});
  return memories_.size() - 1;
}

void ExecArgs::Execute(const dnnl::primitive& p, dnnl::stream& s) const {
  dnnl::error::wrap_c_api(
      dnnl_primitive_execute(p.get(), s.get(), static_cast<int>(c_args_.size()), c_args_.data()),
      "could not execute a primitive");
}

Status PrimitiveKernel::Run(KernelContext& ctx) {
  try {
    for (size_t i = 0; i < bindings_.size(); ++i) {
      const Binding& b = bindings_[i];
      if (b.source != Binding::kOwned)
        args_.Set(i, b.source == Binding::kInput ? ctx.inputs[b.index].data : ctx.outputs[b.index].data);
    }
    args_.SetScratchpad(ctx.scratch);
    args_.Execute(primitive_, stream_);
    stream_.wait();
  } catch (const dnnl::error& e) {
    return Internal(describe_, ": oneDNN execution failed: ", e.what());
  }
  return Status::Ok();
}

dnnl::primitive_attr UserScratchpad(dnnl::primitive_attr attr) {
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

size_t ScratchpadBytes(const dnnl::primitive_desc_base& pd) { return pd.scratchpad_desc().get_size(); }

size_t PlaceScratchpad(size_t bytes, size_t* scratch_end) {
  const size_t offset = (*scratch_end + 63) / 64 * 64;
  *scratch_end = offset + bytes;
  return offset;
}

bool IsReferenceImpl(const dnnl::primitive_desc_base& pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
}

bool IsGemmImpl(const dnnl::primitive_desc_base& pd) {
  return std::string(pd.impl_info_str()).find("gemm") != std::string::npos;
}

LayoutArg::LayoutArg(const dnnl::memory::desc& plain, const dnnl::memory::desc& chosen, bool input,
                     size_t* scratch_end)
    : plain_(plain), chosen_(chosen) {
  if (chosen_ == plain_) {
    plain_arg_ = reorder_args_.Add(DNNL_ARG_FROM, plain_);
    return;
  }
  reorder_ = input ? dnnl::reorder(dnnl::reorder::primitive_desc(Engine(), plain_, Engine(), chosen_))
                   : dnnl::reorder(dnnl::reorder::primitive_desc(Engine(), chosen_, Engine(), plain_));
  plain_arg_ = reorder_args_.Add(input ? DNNL_ARG_FROM : DNNL_ARG_TO, plain_);
  chosen_arg_ = reorder_args_.Add(input ? DNNL_ARG_TO : DNNL_ARG_FROM, chosen_);
  offset_ = *scratch_end;
  *scratch_end += (chosen_.get_size() + 63) / 64 * 64;
}

dnnl::memory LayoutArg::In(dnnl::stream& s, void* data, std::byte* scratch) {
  reorder_args_.Set(plain_arg_, data);
  if (!reorder_) return reorder_args_.memory(plain_arg_);
  reorder_args_.Set(chosen_arg_, scratch + offset_);
  reorder_args_.Execute(reorder_, s);
  return reorder_args_.memory(chosen_arg_);
}

dnnl::memory LayoutArg::Target(void* data, std::byte* scratch) {
  if (!reorder_) {
    reorder_args_.Set(plain_arg_, data);
    return reorder_args_.memory(plain_arg_);
  }
  reorder_args_.Set(chosen_arg_, scratch + offset_);
  return reorder_args_.memory(chosen_arg_);
}

void LayoutArg::Out(dnnl::stream& s, const dnnl::memory& computed, void* data) {
  if (!reorder_) return;
  reorder_args_.Set(plain_arg_, data);
  if (computed.get() != reorder_args_.memory(chosen_arg_).get())
    reorder_args_.Set(chosen_arg_, computed.get_data_handle());
  reorder_args_.Execute(reorder_, s);
}

dnnl::memory ReorderConstant(const ir::Tensor& value, const dnnl::memory::desc& plain,
                             const dnnl::memory::desc& wanted) {
  dnnl::memory src(plain, Engine(), const_cast<void*>(value.raw()));
  dnnl::memory dst(wanted, Engine());
  dnnl::stream stream(Engine());
  dnnl::reorder(src, dst).execute(stream, src, dst);
  stream.wait();
  return dst;
}

namespace {

// A tensor with 0 elements (an empty batch): oneDNN divides by such dims
// (SIGFPE in matmul creation), so those problems go to the reference kernels.
bool HasEmptyTensor(const KernelInit& init) {
  for (const auto* specs : {&init.inputs, &init.outputs})
    for (const TensorSpec& s : *specs)
      if (s.present() && s.num_elements() == 0) return true;
  return false;
}

}  // namespace

KernelEntry OneDnnEntry(OpKind op, KernelFactory factory, std::vector<DType> dtypes) {
  KernelEntry e{op, DeviceKind::kCpu, "onednn", 10, std::move(dtypes), factory, nullptr};
  e.accepts = [factory](const KernelInit& init) { return !HasEmptyTensor(init) && factory(init).ok(); };
  e.preferred = [](const KernelInit& init) { return KeyDType(init) != DType::kBFloat16 || Cpu().bf16_faster(); };
  return e;
}

namespace {

size_t Align64(size_t n) { return (n + 63) / 64 * 64; }

// How a widened kernel's tensors relate to the batch (axis 0 of its first
// input): a kSplit tensor is cut into slices of rows along axis 0, a kWhole
// one is passed entire to every slice, and a kSum output (a weight gradient)
// is the sum of the slices' results. Running in slices keeps the fp32 copies
// of a slice, not of the whole batch, in scratch: at batch 128 the widened
// ConvGrad of a 64-channel 32x32 layer would otherwise hold a 32 MiB fp32
// copy of dY, more than the 2-byte activations saved that training saves.
enum class Role { kWhole, kSplit, kSum };

struct Slicing {
  int64_t rows = 0;
  std::vector<Role> inputs, outputs;
};

// The slicing of an op whose results do not mix rows of the batch (or mix
// them only through a sum), or nullopt: Conv and FusedConv (X, residual and
// Y by rows), ConvGrad (dY, X and dX by rows; dW and dB summed), Gemm
// without transA and with a broadcast C (A and Y by rows), Gemm with transA and
// without transB and C (the weight gradient dY^T X: A and B by rows, Y
// summed) and MatMul of a 2-D B.
std::optional<Slicing> SlicingOf(const KernelInit& init) {
  auto present = [&](size_t i) { return i < init.inputs.size() && init.inputs[i].present(); };
  if (init.inputs.empty() || init.inputs[0].dims.empty()) return std::nullopt;
  Slicing s;
  s.inputs.assign(init.inputs.size(), Role::kWhole);
  s.outputs.assign(init.outputs.size(), Role::kSplit);
  switch (init.op) {
    case OpKind::kConv:
    case OpKind::kFusedConv:
      s.inputs[0] = Role::kSplit;
      if (present(3)) s.inputs[3] = Role::kSplit;
      break;
    case OpKind::kConvGrad:
      s.inputs[0] = s.inputs[1] = Role::kSplit;
      for (size_t o = 1; o < s.outputs.size(); ++o) s.outputs[o] = Role::kSum;
      break;
    case OpKind::kGemm: {
      const bool ta = init.attrs->Int("transA", 0) != 0, tb = init.attrs->Int("transB", 0) != 0;
      if (init.inputs[0].dims.size() != 2 || init.inputs[1].dims.size() != 2) return std::nullopt;
      s.inputs[0] = Role::kSplit;
      if (!ta) {  // a C with rows is not sliced (the oneDNN Gemm takes a broadcast bias only)
        if (present(2) && init.inputs[2].dims.size() == 2 && init.inputs[2].dims[0] != 1) return std::nullopt;
      } else {
        if (tb || present(2)) return std::nullopt;
        s.inputs[1] = Role::kSplit;
        s.outputs[0] = Role::kSum;
      }
      break;
    }
    case OpKind::kMatMul:
      if (init.inputs[0].dims.size() < 2 || init.inputs[1].dims.size() != 2) return std::nullopt;
      s.inputs[0] = Role::kSplit;
      break;
    default:
      return std::nullopt;
  }
  s.rows = init.inputs[0].dims[0];
  for (size_t i = 0; i < init.inputs.size(); ++i)
    if (s.inputs[i] == Role::kSplit && (init.inputs[i].value || init.inputs[i].dims.empty() ||
                                        init.inputs[i].dims[0] != s.rows))
      return std::nullopt;
  for (size_t o = 0; o < init.outputs.size(); ++o) {
    const TensorSpec& t = init.outputs[o];
    if (!t.present()) continue;
    if (s.outputs[o] == Role::kSplit && (t.dims.empty() || t.dims[0] != s.rows)) return std::nullopt;
    if (s.outputs[o] == Role::kSum && t.dtype != DType::kFloat32 && !IsTwoByteFloat(t.dtype)) return std::nullopt;
  }
  return s;
}

// fp32 bytes of the widened copies a slice holds at most (WidenedSliceBytes).
std::atomic<size_t> slice_bytes{size_t{8} << 20};
// Rows a slice has at least: oneDNN's backward-weights convolution loses
// up to 40% on slices of a few images (measured at 64 channels, 32x32).
constexpr int64_t kMinSliceRows = 16;

// Runs an fp32 kernel on fp32 copies of the 2-byte float inputs and narrows
// its outputs back, slice by slice of the batch where the op allows it
// (SlicingOf). Scratch: [inner scratch | fp32 copies of the inputs | fp32
// outputs | fp32 sums].
class WidenedKernel : public Kernel {
 public:
  struct Part {
    Role role = Role::kWhole;
    DType dtype = DType::kUndefined;
    bool widened = false;      // a 2-byte float (copied to fp32), else used in place
    DType round_to = DType::kUndefined;  // an fp32 output holding this 2-byte type: rounded in place
    int64_t row_elements = 0;  // kSplit: elements per row; else all elements
    size_t offset = 0;         // of the fp32 copy (or the slice's result of a kSum) in scratch
    size_t sum_offset = 0;     // kSum: of the fp32 sum in scratch
  };
  struct Setup {
    std::unique_ptr<Kernel> inner, tail;  // for `rows_per_slice` rows; for the last, shorter slice
    std::vector<ir::Tensor> constants;    // fp32 copies of constant inputs, alive as long as the kernel
    std::vector<Part> inputs, outputs;
    int64_t rows = 1, rows_per_slice = 1;
    size_t scratch = 0;
    int threads = 1;
  };
  explicit WidenedKernel(Setup s) : s_(std::move(s)) {}

  size_t scratch_bytes() const override { return s_.scratch; }

  Status Run(KernelContext& ctx) override {
    auto* base = static_cast<std::byte*>(ctx.scratch);
    KernelContext inner{ctx.inputs, ctx.outputs, base, ctx.seed};
    // Whole inputs are widened once for all slices.
    for (size_t i = 0; i < s_.inputs.size(); ++i) {
      const Part& p = s_.inputs[i];
      if (p.role != Role::kWhole || !p.widened || !ctx.inputs[i].data) continue;
      auto* f = reinterpret_cast<float*>(base + p.offset);
      WidenToFloat(p.dtype, ctx.inputs[i].data, f, p.row_elements, s_.threads);
      inner.inputs[i] = ir::TensorView{f, DType::kFloat32, ctx.inputs[i].dims};
    }
    for (int64_t r0 = 0; r0 < s_.rows; r0 += s_.rows_per_slice) {
      const int64_t nr = std::min(s_.rows_per_slice, s_.rows - r0);
      const bool first = r0 == 0;
      for (size_t i = 0; i < s_.inputs.size(); ++i) {
        const Part& p = s_.inputs[i];
        if (p.role != Role::kSplit || !ctx.inputs[i].data) continue;
        const std::byte* src = static_cast<const std::byte*>(ctx.inputs[i].data) + RowBytes(p, r0);
        std::vector<int64_t> dims = ctx.inputs[i].dims;
        dims[0] = nr;
        if (p.widened) {
          auto* f = reinterpret_cast<float*>(base + p.offset);
          WidenToFloat(p.dtype, src, f, nr * p.row_elements, s_.threads);
          inner.inputs[i] = ir::TensorView{f, DType::kFloat32, std::move(dims)};
        } else {
          inner.inputs[i] = ir::TensorView{const_cast<std::byte*>(src), p.dtype, std::move(dims)};
        }
      }
      for (size_t o = 0; o < s_.outputs.size(); ++o) {
        const Part& p = s_.outputs[o];
        if (!ctx.outputs[o].data) continue;
        std::vector<int64_t> dims = ctx.outputs[o].dims;
        if (p.role == Role::kSplit) {
          dims[0] = nr;
          inner.outputs[o] = p.widened ? ir::TensorView{base + p.offset, DType::kFloat32, std::move(dims)}
                                       : ir::TensorView{static_cast<std::byte*>(ctx.outputs[o].data) + RowBytes(p, r0),
                                                        p.dtype, std::move(dims)};
        } else if (p.role == Role::kSum) {
          inner.outputs[o] = ir::TensorView{base + (first ? p.sum_offset : p.offset), DType::kFloat32, std::move(dims)};
        } else {
          inner.outputs[o] = p.widened ? ir::TensorView{base + p.offset, DType::kFloat32, std::move(dims)}
                                       : ctx.outputs[o];
        }
      }
      AMP_RETURN_IF_ERROR((nr == s_.rows_per_slice ? *s_.inner : *s_.tail).Run(inner));
      for (size_t o = 0; o < s_.outputs.size(); ++o) {
        const Part& p = s_.outputs[o];
        if (!ctx.outputs[o].data) continue;
        if (p.role == Role::kSplit && p.widened) {
          NarrowFromFloat(p.dtype, reinterpret_cast<const float*>(base + p.offset),
                          static_cast<std::byte*>(ctx.outputs[o].data) + RowBytes(p, r0), nr * p.row_elements,
                          s_.threads);
        } else if (p.role == Role::kSplit && IsTwoByteFloat(p.round_to)) {
          auto* rows = reinterpret_cast<float*>(static_cast<std::byte*>(ctx.outputs[o].data) + RowBytes(p, r0));
          RoundToFloat(p.round_to, rows, rows, nr * p.row_elements, s_.threads);
        } else if (p.role == Role::kSum && !first) {
          auto* sum = reinterpret_cast<float*>(base + p.sum_offset);
          const auto* part = reinterpret_cast<const float*>(base + p.offset);
          const int64_t n = p.row_elements;
          const int t = n >= (int64_t{1} << 16) ? s_.threads : 1;
#pragma omp parallel for simd num_threads(t) schedule(static) if (t > 1)
          for (int64_t k = 0; k < n; ++k) sum[k] += part[k];
        }
      }
    }
    for (size_t o = 0; o < s_.outputs.size(); ++o) {
      const Part& p = s_.outputs[o];
      if (!ctx.outputs[o].data || p.role == Role::kSplit) continue;
      const auto* f = reinterpret_cast<const float*>(base + (p.role == Role::kSum ? p.sum_offset : p.offset));
      auto* out = static_cast<float*>(ctx.outputs[o].data);
      const bool round = IsTwoByteFloat(p.round_to);
      if (p.widened) NarrowFromFloat(p.dtype, f, out, p.row_elements, s_.threads);
      else if (p.role == Role::kSum && round) RoundToFloat(p.round_to, f, out, p.row_elements, s_.threads);
      else if (p.role == Role::kSum) std::memcpy(out, f, p.row_elements * sizeof(float));
      else if (round) RoundToFloat(p.round_to, out, out, p.row_elements, s_.threads);
    }
    return Status::Ok();
  }

 private:
  static size_t RowBytes(const Part& p, int64_t row) {
    return static_cast<size_t>(row * p.row_elements) * DTypeSize(p.dtype);
  }
  Setup s_;
};

// The low type of a widened kernel: its key dtype, or (after the executor's
// cast fusion) the type an fp32 tensor of it holds (TensorSpec::holds).
DType LowDType(const KernelInit& init) {
  if (IsTwoByteFloat(KeyDType(init))) return KeyDType(init);
  for (const auto* specs : {&init.inputs, &init.outputs})
    for (const TensorSpec& t : *specs)
      if (t.dtype == DType::kFloat32 && IsTwoByteFloat(t.holds)) return t.holds;
  return DType::kUndefined;
}

StatusOr<std::unique_ptr<Kernel>> MakeWidened(const KernelFactory& factory, const KernelInit& init) {
  if (!IsTwoByteFloat(LowDType(init))) return init.Error("the widened oneDNN kernels take bf16 and fp16 only");
  WidenedKernel::Setup s;
  s.threads = init.threads;
  KernelInit wide = init;
  s.constants.reserve(init.inputs.size());
  for (TensorSpec& t : wide.inputs) {
    t.holds = DType::kUndefined;  // exact fp32 values: the fp32 kernel reads them in place
    if (!t.present() || !IsTwoByteFloat(t.dtype)) continue;
    if (t.value) {
      AMP_ASSIGN_OR_RETURN(ir::Tensor f, ir::Tensor::Zeros(DType::kFloat32, t.value->dims()));
      WidenToFloat(t.dtype, t.value->raw(), f.data<float>(), f.num_elements(), init.threads);
      s.constants.push_back(std::move(f));
      t.value = &s.constants.back();
    }
    t.dtype = DType::kFloat32;
  }
  for (TensorSpec& t : wide.outputs) {
    t.holds = DType::kUndefined;
    if (t.present() && IsTwoByteFloat(t.dtype)) t.dtype = DType::kFloat32;
  }

  // Rows per slice: as many as fit WidenedSliceBytes() of fp32 copies; no slicing
  // when that would not shrink the scratch (a summed output needs a second
  // fp32 buffer, which outweighs the slices' saving for a large weight).
  std::optional<Slicing> slicing = SlicingOf(init);
  if (slicing) {
    size_t row_bytes = 0, whole_bytes = 0, sum_bytes = 0;
    auto add = [&](const TensorSpec& t, Role r) {
      if (!t.present()) return;
      const size_t bytes = static_cast<size_t>(t.num_elements()) * sizeof(float);
      if (r == Role::kSum) sum_bytes += bytes;
      // A tensor stored widened counts as the copy it would be otherwise, so
      // that cast fusion never changes the slicing, and so the bits of a sum.
      if (!IsTwoByteFloat(t.dtype) && !IsTwoByteFloat(t.holds)) return;
      whole_bytes += bytes;
      if (r == Role::kSplit) row_bytes += bytes / static_cast<size_t>(slicing->rows);
    };
    for (size_t i = 0; i < init.inputs.size(); ++i) add(init.inputs[i], slicing->inputs[i]);
    for (size_t o = 0; o < init.outputs.size(); ++o) add(init.outputs[o], slicing->outputs[o]);
    s.rows = slicing->rows;
    s.rows_per_slice = std::max<int64_t>(static_cast<int64_t>(slice_bytes.load() / std::max<size_t>(row_bytes, 1)),
                                         std::max<int64_t>(kMinSliceRows, 2 * std::max(init.threads, 1)));
    const size_t sliced_bytes =
        whole_bytes - row_bytes * static_cast<size_t>(s.rows - std::min(s.rows, s.rows_per_slice)) + sum_bytes;
    if (s.rows_per_slice >= s.rows || row_bytes == 0 || sliced_bytes >= whole_bytes) slicing.reset();
  }
  if (!slicing) {  // one slice: the whole batch
    slicing = Slicing{1, std::vector<Role>(init.inputs.size(), Role::kWhole),
                      std::vector<Role>(init.outputs.size(), Role::kWhole)};
    s.rows = s.rows_per_slice = 1;
  }

  // The inner kernels, for a full slice and for the last one.
  auto make_inner = [&](int64_t rows) -> StatusOr<std::unique_ptr<Kernel>> {
    KernelInit k = wide;
    for (size_t i = 0; i < k.inputs.size(); ++i)
      if (slicing->inputs[i] == Role::kSplit) k.inputs[i].dims[0] = rows;
    for (size_t o = 0; o < k.outputs.size(); ++o)  // an absent output (skipped as unused) has no dims
      if (slicing->outputs[o] == Role::kSplit && k.outputs[o].present()) k.outputs[o].dims[0] = rows;
    return factory(k);
  };
  AMP_ASSIGN_OR_RETURN(s.inner, make_inner(s.rows_per_slice));
  size_t inner_scratch = s.inner->scratch_bytes();
  if (s.rows % s.rows_per_slice != 0) {
    AMP_ASSIGN_OR_RETURN(s.tail, make_inner(s.rows % s.rows_per_slice));
    inner_scratch = std::max(inner_scratch, s.tail->scratch_bytes());
  }

  size_t offset = Align64(inner_scratch);
  auto parts = [&](const std::vector<TensorSpec>& specs, const std::vector<Role>& roles,
                   std::vector<WidenedKernel::Part>& out) {
    for (size_t i = 0; i < specs.size(); ++i) {
      const TensorSpec& t = specs[i];
      WidenedKernel::Part p;
      p.role = roles[i];
      p.dtype = t.dtype;
      p.widened = t.present() && IsTwoByteFloat(t.dtype);
      if (&specs == &init.outputs && t.dtype == DType::kFloat32 && IsTwoByteFloat(t.holds)) p.round_to = t.holds;
      p.row_elements = p.role == Role::kSplit ? t.num_elements() / s.rows : t.num_elements();
      const int64_t copy = p.role == Role::kSplit ? s.rows_per_slice * p.row_elements : p.row_elements;
      if (p.widened || p.role == Role::kSum) {
        p.offset = offset;
        offset += Align64(static_cast<size_t>(copy) * sizeof(float));
      }
      if (p.role == Role::kSum) {
        p.sum_offset = offset;
        offset += Align64(static_cast<size_t>(p.row_elements) * sizeof(float));
      }
      out.push_back(p);
    }
  };
  parts(init.inputs, slicing->inputs, s.inputs);
  parts(init.outputs, slicing->outputs, s.outputs);
  s.scratch = offset;
  return std::unique_ptr<Kernel>(new WidenedKernel(std::move(s)));
}

}  // namespace

void SetWidenedSliceBytes(size_t bytes) { slice_bytes = bytes; }
size_t WidenedSliceBytes() { return slice_bytes; }

KernelEntry WidenedEntry(OpKind op, KernelFactory factory) {
  KernelFactory widened = [factory](const KernelInit& init) { return MakeWidened(factory, init); };
  KernelEntry e{op, DeviceKind::kCpu, "onednn-widened", 5, {DType::kBFloat16, DType::kFloat16}, widened, nullptr};
  e.accepts = [widened](const KernelInit& init) { return !HasEmptyTensor(init) && widened(init).ok(); };
  e.takes_widened = true;
  return e;
}

void AddOneDnn(Registry& r, OpKind op, KernelFactory factory, std::vector<DType> dtypes) {
  r.Add(OneDnnEntry(op, factory, std::move(dtypes)));
  r.Add(WidenedEntry(op, std::move(factory)));
}

}  // namespace amptrain::kernels::cpu::onednn
