#include "kernels/cpu/onednn_common.h"

#include <string>
#include <unordered_map>

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

dnnl::memory::desc PlainDesc(const std::vector<int64_t>& dims, DType t) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return dnnl::memory::desc(Dims(dims), DataType(t), strides);
}

PrimitiveKernel::PrimitiveKernel(std::string describe, dnnl::primitive primitive, std::vector<Binding> bindings,
                                 std::vector<dnnl::memory> owned)
    : describe_(std::move(describe)),
      primitive_(std::move(primitive)),
      bindings_(std::move(bindings)),
      owned_(std::move(owned)),
      stream_(Engine()) {}

Status PrimitiveKernel::Run(KernelContext& ctx) {
  try {
    std::unordered_map<int, dnnl::memory> args;
    for (const Binding& b : bindings_) {
      if (b.source == Binding::kOwned) {
        args.emplace(b.arg, owned_[b.index]);
        continue;
      }
      void* data = b.source == Binding::kInput ? ctx.inputs[b.index].data : ctx.outputs[b.index].data;
      args.emplace(b.arg, dnnl::memory(b.desc, Engine(), data));
    }
    primitive_.execute(stream_, args);
    stream_.wait();
  } catch (const dnnl::error& e) {
    return Internal(describe_, ": oneDNN execution failed: ", e.what());
  }
  return Status::Ok();
}

bool IsReferenceImpl(const dnnl::primitive_desc_base& pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
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
  KernelEntry e{op, Device::kCpu, "onednn", 10, std::move(dtypes), factory, nullptr};
  e.accepts = [factory](const KernelInit& init) { return !HasEmptyTensor(init) && factory(init).ok(); };
  return e;
}

namespace {

size_t Align64(size_t n) { return (n + 63) / 64 * 64; }

// Runs an fp32 kernel on fp32 copies of the 2-byte float inputs and narrows
// its outputs back. Scratch: [inner scratch | widened inputs | fp32 outputs].
class WidenedKernel : public Kernel {
 public:
  WidenedKernel(std::unique_ptr<Kernel> inner, std::vector<ir::Tensor> constants, const KernelInit& init)
      : inner_(std::move(inner)), constants_(std::move(constants)), threads_(init.threads) {
    size_t offset = Align64(inner_->scratch_bytes());
    auto slots = [&](const std::vector<TensorSpec>& specs, std::vector<Slot>& out) {
      for (const TensorSpec& s : specs) {
        Slot slot{s.present() && IsTwoByteFloat(s.dtype), s.dtype, offset, s.num_elements()};
        if (slot.widened) offset += Align64(static_cast<size_t>(slot.n) * sizeof(float));
        out.push_back(slot);
      }
    };
    slots(init.inputs, inputs_);
    slots(init.outputs, outputs_);
    scratch_ = offset;
  }

  size_t scratch_bytes() const override { return scratch_; }

  Status Run(KernelContext& ctx) override {
    auto* base = static_cast<std::byte*>(ctx.scratch);
    KernelContext inner{ctx.inputs, ctx.outputs, base, ctx.seed};
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const Slot& s = inputs_[i];
      if (!s.widened || !ctx.inputs[i].data) continue;
      auto* f = reinterpret_cast<float*>(base + s.offset);
      WidenToFloat(s.dtype, ctx.inputs[i].data, f, s.n, threads_);
      inner.inputs[i] = ir::TensorView{f, DType::kFloat32, ctx.inputs[i].dims};
    }
    for (size_t o = 0; o < outputs_.size(); ++o) {
      if (!outputs_[o].widened || !ctx.outputs[o].data) continue;
      inner.outputs[o] = ir::TensorView{base + outputs_[o].offset, DType::kFloat32, ctx.outputs[o].dims};
    }
    AMP_RETURN_IF_ERROR(inner_->Run(inner));
    for (size_t o = 0; o < outputs_.size(); ++o) {
      const Slot& s = outputs_[o];
      if (s.widened && ctx.outputs[o].data)
        NarrowFromFloat(s.dtype, reinterpret_cast<const float*>(base + s.offset), ctx.outputs[o].data, s.n, threads_);
    }
    return Status::Ok();
  }

 private:
  struct Slot {
    bool widened;
    DType dtype;
    size_t offset;  // of the fp32 copy in scratch
    int64_t n;
  };
  std::unique_ptr<Kernel> inner_;
  std::vector<ir::Tensor> constants_;  // fp32 copies of constant inputs, alive as long as the kernel
  std::vector<Slot> inputs_, outputs_;
  size_t scratch_ = 0;
  int threads_;
};

StatusOr<std::unique_ptr<Kernel>> MakeWidened(const KernelFactory& factory, const KernelInit& init) {
  if (!IsTwoByteFloat(KeyDType(init))) return init.Error("the widened oneDNN kernels take bf16 and fp16 only");
  KernelInit wide = init;
  std::vector<ir::Tensor> constants;
  constants.reserve(init.inputs.size());
  for (TensorSpec& s : wide.inputs) {
    if (!s.present() || !IsTwoByteFloat(s.dtype)) continue;
    if (s.value) {
      AMP_ASSIGN_OR_RETURN(ir::Tensor f, ir::Tensor::Zeros(DType::kFloat32, s.value->dims()));
      WidenToFloat(s.dtype, s.value->raw(), f.data<float>(), f.num_elements(), init.threads);
      constants.push_back(std::move(f));
      s.value = &constants.back();
    }
    s.dtype = DType::kFloat32;
  }
  for (TensorSpec& s : wide.outputs)
    if (s.present() && IsTwoByteFloat(s.dtype)) s.dtype = DType::kFloat32;
  AMP_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> inner, factory(wide));
  return std::unique_ptr<Kernel>(new WidenedKernel(std::move(inner), std::move(constants), init));
}

}  // namespace

KernelEntry WidenedEntry(OpKind op, KernelFactory factory) {
  KernelFactory widened = [factory](const KernelInit& init) { return MakeWidened(factory, init); };
  KernelEntry e{op, Device::kCpu, "onednn-widened", 5, {DType::kBFloat16, DType::kFloat16}, widened, nullptr};
  e.accepts = [widened](const KernelInit& init) { return !HasEmptyTensor(init) && widened(init).ok(); };
  return e;
}

void AddOneDnn(Registry& r, OpKind op, KernelFactory factory, std::vector<DType> dtypes) {
  r.Add(OneDnnEntry(op, factory, std::move(dtypes)));
  r.Add(WidenedEntry(op, std::move(factory)));
}

}  // namespace amptrain::kernels::cpu::onednn
