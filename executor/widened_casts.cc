// Cast fusion for storage-only kernels: FuseWidenedCasts (executor/plan.h).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
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
      : plan_(plan), options_(options), uses_(plan.slots.size()), def_(plan.slots.size(), -1),
        removed_(plan.steps.size(), false), live_(plan.steps.size(), 0) {
    for (size_t s = 0; s < plan.steps.size(); ++s) {
      for (int i : plan.steps[s].inputs)
        if (i >= 0) uses_[i].push_back(static_cast<int>(s));
      for (int o : plan.steps[s].outputs) def_[o] = static_cast<int>(s);
    }
    for (size_t v = 0; v < plan.slots.size(); ++v)
      if (plan.slots[v].storage == Storage::kArena && def_[v] >= 0) AddLive(live_, def_[v], LastUse(v), Bytes(plan.slots[v]));
    for (size_t s = 0; s < plan.steps.size(); ++s)
      if (plan.steps[s].kernel) live_[s] += Bytes(plan.steps[s].kernel->scratch_bytes());
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
        std::vector<std::unique_ptr<kernels::Kernel>> made = Make({static_cast<int>(s)});
        // The fp32 value now lives from the producer on, the low one not at all.
        std::vector<int64_t> live = live_;
        if (!made.empty()) {
          live[s] += ScratchChange(static_cast<int>(s), *made[0]);
          AddLive(live, static_cast<int>(s), c, -Bytes(low));
          if (c > static_cast<int>(s)) AddLive(live, static_cast<int>(s), c - 1, Bytes(wide));
        }
        if (made.empty() || RaisesPeak(live)) {
          if (!made.empty()) ++kept_low_;  // declined by the kernel otherwise
          producer.outputs[o] = y;
          wide.holds = DType::kUndefined;
          continue;
        }
        live_ = std::move(live);
        Install({static_cast<int>(s)}, made);
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
      const int64_t low_bytes = Bytes(low);
      const Slot saved = low;
      low.holds = low.dtype;
      low.dtype = DType::kFloat32;
      low.bytes = low.bytes / ir::DTypeSize(low.holds) * sizeof(float);
      std::vector<std::unique_ptr<kernels::Kernel>> made = Make(remake);
      if (made.empty()) {
        low = saved;
        continue;
      }
      // The value doubles in size over its life; its readers' scratch for
      // widening it goes. Where that raises the peak (O1's activations saved
      // for the backward), the value stays low.
      std::vector<int64_t> live = live_;
      AddLive(live, static_cast<int>(s), LastUse(w), Bytes(low) - low_bytes);
      for (size_t i = 0; i < remake.size(); ++i) live[remake[i]] += ScratchChange(remake[i], *made[i]);
      if (RaisesPeak(live)) {
        low = saved;
        ++kept_low_;
        continue;
      }
      live_ = std::move(live);
      Install(remake, made);
      ++inputs_;
    }
  }

  void Finish() {
    std::vector<Step> kept;
    kept.reserve(plan_.steps.size());
    for (size_t s = 0; s < plan_.steps.size(); ++s)
      if (!removed_[s]) kept.push_back(std::move(plan_.steps[s]));
    plan_.steps = std::move(kept);
    if (outputs_ + inputs_ + kept_low_ > 0)
      spdlog::debug(
          "cast fusion: {} low outputs written widened, {} casts of inputs rounded in fp32, {} kept low (fused "
          "they would raise the peak of {} live bytes)",
          outputs_, inputs_, kept_low_, Peak());
  }

 private:
  // New kernels for `steps` from the current slots; empty when one declines.
  std::vector<std::unique_ptr<kernels::Kernel>> Make(const std::vector<int>& steps) const {
    std::vector<std::unique_ptr<kernels::Kernel>> made;
    for (int s : steps) {
      const Step& step = plan_.steps[s];
      StatusOr<std::unique_ptr<kernels::Kernel>> k = step.entry->factory(KernelInitOf(plan_, step, options_));
      if (!k.ok()) {
        spdlog::debug("cast fusion declined by {}: {}", step.node->Describe(), k.status().ToString());
        return {};
      }
      made.push_back(std::move(*k));
    }
    return made;
  }
  void Install(const std::vector<int>& steps, std::vector<std::unique_ptr<kernels::Kernel>>& made) {
    for (size_t i = 0; i < steps.size(); ++i) plan_.steps[steps[i]].kernel = std::move(made[i]);
  }
  int64_t ScratchChange(int step, const kernels::Kernel& made) const {
    const kernels::Kernel* old = plan_.steps[step].kernel.get();
    return Bytes(made.scratch_bytes()) - (old ? Bytes(old->scratch_bytes()) : 0);
  }

  // The last step that reads slot `v` (its definition when none does).
  int LastUse(size_t v) const {
    int last = def_[v];
    for (int u : uses_[v]) last = std::max(last, u);
    return last;
  }
  static void AddLive(std::vector<int64_t>& live, int first, int last, int64_t bytes) {
    for (int s = first; s <= last; ++s) live[s] += bytes;
  }
  int64_t Peak() const { return live_.empty() ? 0 : *std::max_element(live_.begin(), live_.end()); }
  bool RaisesPeak(const std::vector<int64_t>& live) const {
    return !live.empty() && *std::max_element(live.begin(), live.end()) > Peak();
  }
  // Bytes as the memory plan counts them.
  static int64_t Bytes(size_t n) { return static_cast<int64_t>(ArenaBytes(n)); }
  static int64_t Bytes(const Slot& slot) { return Bytes(slot.bytes); }

  Plan& plan_;
  const PlanOptions& options_;
  std::vector<std::vector<int>> uses_;  // per slot: the steps that read it
  std::vector<int> def_;                // per slot: the step that writes it, -1 for none
  std::vector<bool> removed_;           // per step
  // Arena bytes live at each step (values from definition to last read, and
  // kernel scratch), kept up to date by every rewrite; no rewrite raises its
  // maximum.
  std::vector<int64_t> live_;
  int outputs_ = 0, inputs_ = 0, kept_low_ = 0;
};

}  // namespace

void FuseWidenedCasts(Plan& plan, const PlanOptions& options) {
  Fuser fuser(plan, options);
  fuser.FuseOutputs();
  fuser.FuseInputs();
  fuser.Finish();
}

}  // namespace amptrain::executor
