#include <algorithm>

#include "kernels/kernel.h"

namespace amptrain::kernels {

const ir::Attributes& NoAttributes() {
  static const ir::Attributes* none = new ir::Attributes();
  return *none;
}

std::string KernelInit::Describe() const {
  return StrCat(ir::Schema(op).name, " node '", node_name, "' (", ir::DTypeName(KeyDType(*this)), ")");
}

Status CheckArity(const KernelInit& init, size_t min_inputs, size_t max_inputs, size_t min_outputs,
                  size_t max_outputs) {
  if (!init.attrs) return init.Error("no attributes");
  if (init.inputs.size() < min_inputs || init.inputs.size() > max_inputs)
    return init.Error(init.inputs.size(), " inputs, expected ", min_inputs, "..", max_inputs);
  if (init.outputs.size() < min_outputs || init.outputs.size() > max_outputs)
    return init.Error(init.outputs.size(), " outputs, expected ", min_outputs, "..", max_outputs);
  for (size_t i = 0; i < min_inputs; ++i)
    if (!init.inputs[i].present()) return init.Error("required input ", i, " is absent");
  return Status::Ok();
}

DType KeyDType(const KernelInit& init) {
  if (init.op == OpKind::kWhere && init.inputs.size() > 1) return init.inputs[1].dtype;
  if (!init.inputs.empty()) return init.inputs[0].dtype;
  return init.outputs.empty() ? DType::kUndefined : init.outputs[0].dtype;
}

Registry& Registry::Global() {
  static Registry* registry = [] {
    auto* r = new Registry();
    RegisterCpuReferenceKernels(*r);
    RegisterCpuOneDnnKernels(*r);
#ifdef AMPTRAIN_WITH_CUDA
    RegisterCudaKernels(*r);
#endif
    return r;
  }();
  return *registry;
}

void Registry::Add(KernelEntry entry) { entries_.push_back(std::move(entry)); }

namespace {
bool AcceptsDType(const KernelEntry& e, DType t) {
  return e.dtypes.empty() || std::find(e.dtypes.begin(), e.dtypes.end(), t) != e.dtypes.end();
}
}  // namespace

bool Registry::Supports(OpKind op, DeviceKind device, DType dtype) const {
  for (const KernelEntry& e : entries_)
    if (e.op == op && e.device == device && AcceptsDType(e, dtype)) return true;
  return false;
}

std::vector<const KernelEntry*> Registry::Entries(OpKind op, DeviceKind device) const {
  std::vector<const KernelEntry*> out;
  for (const KernelEntry& e : entries_)
    if (e.op == op && e.device == device) out.push_back(&e);
  std::stable_sort(out.begin(), out.end(), [](auto* a, auto* b) { return a->priority > b->priority; });
  return out;
}

KernelEntry ElementwiseChannelsLast(KernelEntry e, uint32_t inputs, uint32_t outputs) {
  // Error unless the masked specs of `init` are all plain, or all of one shape.
  auto check = [inputs, outputs](const KernelInit& init) -> Status {
    const std::vector<int64_t>* dims = nullptr;
    bool any_last = false, mismatch = false;
    auto visit = [&](uint32_t mask, const std::vector<TensorSpec>& specs) {
      for (size_t i = 0; i < specs.size() && i < 32; ++i) {
        if (!((mask >> i) & 1u) || !specs[i].present()) continue;
        any_last = any_last || specs[i].channels_last;
        if (dims && *dims != specs[i].dims) mismatch = true;
        dims = &specs[i].dims;
      }
    };
    visit(inputs, init.inputs);
    visit(outputs, init.outputs);
    if (any_last && mismatch) return init.Error("channels-last operands of different dims");
    return Status::Ok();
  };
  KernelFactory factory = e.factory;
  e.factory = [factory, check](const KernelInit& init) -> StatusOr<std::unique_ptr<Kernel>> {
    AMP_RETURN_IF_ERROR(check(init));
    return factory(init);
  };
  if (e.accepts) {
    auto accepts = e.accepts;
    e.accepts = [accepts, check](const KernelInit& init) { return check(init).ok() && accepts(init); };
  }
  e.channels_last_inputs = inputs;
  e.channels_last_outputs = outputs;
  e.channels_last_together = true;
  return e;
}

StatusOr<const KernelEntry*> Registry::Select(const KernelInit& init, const std::string& impl) const {
  DType key = KeyDType(init);
  bool any_for_op = false;
  for (const KernelEntry* e : Entries(init.op, init.device)) {
    any_for_op = true;
    if (!impl.empty() && e->impl != impl) continue;
    if (!AcceptsDType(*e, key)) continue;
    if (impl.empty() && e->preferred && !e->preferred(init)) continue;
    if (e->accepts && !e->accepts(init)) continue;
    return e;
  }
  if (!any_for_op)
    return Unimplemented(init.Describe(), ": no ", DeviceKindName(init.device), " kernel for op ", ir::Schema(init.op).name);
  return Unimplemented(init.Describe(), ": no ", DeviceKindName(init.device), " kernel", impl.empty() ? "" : " '" + impl + "'",
                       " supports dtype ", ir::DTypeName(key), " with these attributes/shapes");
}

StatusOr<std::unique_ptr<Kernel>> Registry::Create(const KernelInit& init, const std::string& impl) const {
  AMP_ASSIGN_OR_RETURN(const KernelEntry* e, Select(init, impl));
  return e->factory(init);
}

}  // namespace amptrain::kernels
