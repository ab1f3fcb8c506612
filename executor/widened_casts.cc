// Cast fusion: FuseWidenedCasts (executor/plan.h).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "executor/plan.h"

namespace amptrain::executor {

namespace {

using ir::DType;

bool IsLow(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

bool TakesWidened(const Step& step) { return step.entry && step.entry->takes_widened; }

bool FusesCasts(const Step& step) { return step.entry && step.entry->fuses_casts; }

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

  // A Cast of a low value to fp32 read only by kernels that fuse casts: they
  // read the low value, widening it exactly; the Cast and its 4-byte result
  // go. The low value lives until their last read instead (O1's fp32
  // BatchNormalization: the Conv output it and its gradient read is kept in
  // 2 bytes per element, not 4).
  void AbsorbWidening() {
    for (size_t s = 0; s < plan_.steps.size(); ++s) {
      const Step& cast = plan_.steps[s];
      if (removed_[s] || !IsCast(cast)) continue;
      const int low = cast.inputs[0], wide = cast.outputs[0];
      const Slot &from = plan_.slots[low], &to = plan_.slots[wide];
      if (!IsLow(from.dtype) || from.holds != DType::kUndefined || to.dtype != DType::kFloat32 ||
          to.holds != DType::kUndefined || to.storage != Storage::kArena || uses_[wide].empty())
        continue;
      bool all_fuse = true;
      for (int u : uses_[wide]) all_fuse = all_fuse && !removed_[u] && FusesCasts(plan_.steps[u]) && !IsCast(plan_.steps[u]);
      if (!all_fuse) continue;
      const std::vector<int> readers = Distinct(uses_[wide]);
      const std::vector<std::pair<int, size_t>> moved = Retarget(readers, wide, low);
      std::vector<std::unique_ptr<kernels::Kernel>> made = Make(readers);
      std::vector<int64_t> live = live_;
      if (!made.empty()) {
        AddLive(live, static_cast<int>(s), LastUse(wide), -Bytes(to));
        if (from.storage == Storage::kArena && LastUse(wide) > LastUse(low))
          AddLive(live, LastUse(low) + 1, LastUse(wide), Bytes(from));
        for (size_t i = 0; i < readers.size(); ++i) live[readers[i]] += ScratchChange(readers[i], *made[i]);
      }
      if (made.empty() || RaisesPeak(live)) {
        for (const auto& [step, input] : moved) plan_.steps[step].inputs[input] = wide;
        continue;
      }
      live_ = std::move(live);
      Install(readers, made);
      std::vector<int>& low_uses = uses_[low];
      low_uses.erase(std::remove(low_uses.begin(), low_uses.end(), static_cast<int>(s)), low_uses.end());
      low_uses.insert(low_uses.end(), uses_[wide].begin(), uses_[wide].end());
      uses_[wide].clear();
      plan_.slots[wide].storage = Storage::kAbsent;
      removed_[s] = true;
      ++absorbed_;
    }
  }

  // An fp32 output of a kernel that fuses casts, read only by a Cast to a
  // low type: the kernel writes the Cast's output, rounded once; the Cast
  // and the 4-byte value go (the low dX of O1's BatchNormalizationGrad,
  // for the low Conv's gradient before it).
  void AbsorbNarrowing() {
    for (size_t s = 0; s < plan_.steps.size(); ++s) {
      Step& producer = plan_.steps[s];
      if (removed_[s] || !FusesCasts(producer) || IsCast(producer)) continue;
      for (size_t o = 0; o < producer.outputs.size(); ++o) {
        const int wide = producer.outputs[o];
        const Slot& from = plan_.slots[wide];
        if (from.storage != Storage::kArena || from.dtype != DType::kFloat32 || from.holds != DType::kUndefined ||
            uses_[wide].size() != 1)
          continue;
        const int c = uses_[wide][0];
        if (removed_[c] || !IsCast(plan_.steps[c])) continue;
        const int low = plan_.steps[c].outputs[0];
        const Slot& to = plan_.slots[low];
        if (!IsLow(to.dtype) || to.holds != DType::kUndefined || to.storage != Storage::kArena || to.dims != from.dims)
          continue;
        producer.outputs[o] = low;
        std::vector<std::unique_ptr<kernels::Kernel>> made = Make({static_cast<int>(s)});
        std::vector<int64_t> live = made.empty() ? live_ : LiveWithOutputMoved(static_cast<int>(s), c, from, to, *made[0]);
        if (made.empty() || RaisesPeak(live)) {
          producer.outputs[o] = wide;
          continue;
        }
        live_ = std::move(live);
        Install({static_cast<int>(s)}, made);
        def_[low] = static_cast<int>(s);
        uses_[wide].clear();
        plan_.slots[wide].storage = Storage::kAbsent;
        removed_[c] = true;
        ++absorbed_;
      }
    }
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
        std::vector<int64_t> live = made.empty() ? live_ : LiveWithOutputMoved(static_cast<int>(s), c, low, wide, *made[0]);
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
    if (absorbed_ + outputs_ + inputs_ + kept_low_ > 0)
      spdlog::debug(
          "cast fusion: {} casts absorbed by their readers or producers, {} low outputs written widened, {} casts "
          "of inputs rounded in fp32, {} kept low (fused they would raise the peak of {} live bytes)",
          absorbed_, outputs_, inputs_, kept_low_, Peak());
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

  // live_ once step s, now the kernel `made`, writes Cast c's output `to`
  // instead of `from` (read only by c): `from` lives nowhere, `to` from s on.
  std::vector<int64_t> LiveWithOutputMoved(int s, int c, const Slot& from, const Slot& to,
                                           const kernels::Kernel& made) const {
    std::vector<int64_t> live = live_;
    live[s] += ScratchChange(s, made);
    AddLive(live, s, c, -Bytes(from));
    if (c > s) AddLive(live, s, c - 1, Bytes(to));
    return live;
  }

  static std::vector<int> Distinct(std::vector<int> steps) {
    std::sort(steps.begin(), steps.end());
    steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
    return steps;
  }
  // Points the readers' inputs at slot `from` to slot `to`; the (step,
  // input) pairs it changed, for undoing exactly those.
  std::vector<std::pair<int, size_t>> Retarget(const std::vector<int>& readers, int from, int to) {
    std::vector<std::pair<int, size_t>> moved;
    for (int r : readers) {
      std::vector<int>& inputs = plan_.steps[r].inputs;
      for (size_t k = 0; k < inputs.size(); ++k) {
        if (inputs[k] != from) continue;
        inputs[k] = to;
        moved.emplace_back(r, k);
      }
    }
    return moved;
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
  int absorbed_ = 0, outputs_ = 0, inputs_ = 0, kept_low_ = 0;
};

}  // namespace

void FuseWidenedCasts(Plan& plan, const PlanOptions& options) {
  Fuser fuser(plan, options);
  fuser.AbsorbWidening();
  fuser.AbsorbNarrowing();
  fuser.FuseOutputs();
  fuser.FuseInputs();
  fuser.Finish();
}

}  // namespace amptrain::executor
