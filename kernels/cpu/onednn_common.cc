#include "kernels/cpu/onednn_common.h"

#include <string>
#include <unordered_map>

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

KernelEntry OneDnnEntry(OpKind op, KernelFactory factory, std::vector<DType> dtypes) {
  KernelEntry e{op, Device::kCpu, "onednn", 10, std::move(dtypes), factory, nullptr};
  e.accepts = [factory](const KernelInit& init) { return factory(init).ok(); };
  return e;
}

}  // namespace amptrain::kernels::cpu::onednn
