// Cast fusion for storage-only kernels: FuseWidenedCasts (executor/plan.h).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "executor/plan.h"

namespace amptrain::executor {

namespace {

using ir::DType;

bool IsLow(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

bool TakesWidened(const Step& step) { return step.entry && step.entry->takes_widened; }

bool IsCast(const Step& step) {
  return step.node->op() == ir::OpKind::kCast && step.inputs.size() == 1 && step.inputs[0] >= 0 &&
         step.outputs.size() == 1;
}

class Fuser {
 public:
  Fuser(Plan& plan, const PlanOptions& options)
      : plan_(plan), options_(options), uses_(plan.slots.size()), removed_(plan.steps.size(), false) {
    for (size_t s = 0; s < plan.steps.size(); ++s)
      for (int i : plan.steps[s].inputs)
        if (i >= 0) uses_[i].push_back(static_cast<int>(s));
  }

  // A widened kernel's low output read only by a Cast to fp32: the kernel
  // writes the Cast's output, rounded; the Cast goes.
  void FuseOutputs() {
    for (size_t s = 0; s < plan_.steps.size(); ++s) {
      Step& producer = plan_.steps[s];
      if (!TakesWidened(producer) || IsCast(producer)) continue;
      for (size_t o = 0; o < producer.outputs.size(); ++o) {
        const int y = producer.outputs[o];
        Slot& low = plan_.slots[y];
        if (low.storage != Storage::kArena || !IsLow(low.dtype) || uses_[y].size() != 1) continue;
        const int c = uses_[y][0];
        const Step& cast = plan_.steps[c];
        if (!IsCast(cast) || removed_[c]) continue;
        Slot& wide = plan_.slots[cast.outputs[0]];
        if (wide.dtype != DType::kFloat32 || wide.holds != DType::kUndefined || wide.dims != low.dims) continue;
        producer.outputs[o] = cast.outputs[0];
        wide.holds = low.dtype;
        if (!Remake({static_cast<int>(s)})) {
          producer.outputs[o] = y;
          wide.holds = DType::kUndefined;
          continue;
        }
        low.storage = Storage::kAbsent;  // no step reads or writes it now
        removed_[c] = true;
        ++outputs_;
      }
    }
  }

  // A Cast to the low type read only by widened kernels: it rounds in fp32,
  // and they read its result in place.
  void FuseInputs() {
    for (size_t s = 0; s < plan_.steps.size(); ++s) {
      const Step& cast = plan_.steps[s];
      if (removed_[s] || !IsCast(cast) || !TakesWidened(cast)) continue;
      const Slot& source = plan_.slots[cast.inputs[0]];
      if (source.dtype != DType::kFloat32 || source.holds != DType::kUndefined) continue;
      const int w = cast.outputs[0];
      Slot& low = plan_.slots[w];
      if (low.storage != Storage::kArena || !IsLow(low.dtype) || uses_[w].empty()) continue;
      std::vector<int> remake = {static_cast<int>(s)};
      bool all_widened = true;
      for (int u : uses_[w]) {
        const Step& reader = plan_.steps[u];
        all_widened = all_widened && !removed_[u] && TakesWidened(reader) && !IsCast(reader);
        if (std::find(remake.begin(), remake.end(), u) == remake.end()) remake.push_back(u);
      }
      if (!all_widened) continue;
      const Slot saved = low;
      low.holds = low.dtype;
      low.dtype = DType::kFloat32;
      low.bytes = low.bytes / ir::DTypeSize(low.holds) * sizeof(float);
      if (!Remake(remake)) {
        low = saved;
        continue;
      }
      ++inputs_;
    }
  }

  void Finish() {
    std::vector<Step> kept;
    kept.reserve(plan_.steps.size());
    for (size_t s = 0; s < plan_.steps.size(); ++s)
      if (!removed_[s]) kept.push_back(std::move(plan_.steps[s]));
    plan_.steps = std::move(kept);
    if (outputs_ + inputs_ > 0)
      spdlog::debug("cast fusion: {} low outputs written widened, {} casts of inputs rounded in fp32", outputs_,
                    inputs_);
  }

 private:
  // New kernels for `steps` from the current slots; all or none replaced.
  bool Remake(const std::vector<int>& steps) {
    std::vector<std::unique_ptr<kernels::Kernel>> made;
    for (int s : steps) {
      const Step& step = plan_.steps[s];
      StatusOr<std::unique_ptr<kernels::Kernel>> k = step.entry->factory(KernelInitOf(plan_, step, options_));
      if (!k.ok()) {
        spdlog::debug("cast fusion declined by {}: {}", step.node->Describe(), k.status().ToString());
        return false;
      }
      made.push_back(std::move(*k));
    }
    for (size_t i = 0; i < steps.size(); ++i) plan_.steps[steps[i]].kernel = std::move(made[i]);
    return true;
  }

  Plan& plan_;
  const PlanOptions& options_;
  std::vector<std::vector<int>> uses_;  // per slot: the steps that read it
  std::vector<bool> removed_;           // per step
  int outputs_ = 0, inputs_ = 0;
};

}  // namespace

void FuseWidenedCasts(Plan& plan, const PlanOptions& options) {
  Fuser fuser(plan, options);
  fuser.FuseOutputs();
  fuser.FuseInputs();
  fuser.Finish();
}

}  // namespace amptrain::executor
