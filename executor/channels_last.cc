// Step 4 of the plan (executor/plan.h, AssignChannelsLast): channels-last
// intermediates between kernels that take them.
#include <spdlog/spdlog.h>

#include <utility>
#include <vector>

#include "executor/plan.h"

namespace amptrain::executor {

namespace {

bool Bit(uint32_t mask, size_t i) { return i < 32 && ((mask >> i) & 1u) != 0; }

// Elements per (n, c) plane of a rank-4 slot; 0 for other ranks.
int64_t PlaneOf(const Slot& s) { return s.dims.size() == 4 ? s.dims[2] * s.dims[3] : 0; }

}  // namespace

void AssignChannelsLast(Plan& plan, const PlanOptions& options) {
  const size_t n = plan.slots.size();
  std::vector<std::vector<std::pair<size_t, size_t>>> readers(n);  // (step, input index)
  std::vector<int> producer(n, -1);
  std::vector<size_t> producer_output(n, 0);
  for (size_t si = 0; si < plan.steps.size(); ++si) {
    const Step& step = plan.steps[si];
    for (size_t i = 0; i < step.inputs.size(); ++i)
      if (step.inputs[i] >= 0) readers[static_cast<size_t>(step.inputs[i])].push_back({si, i});
    for (size_t o = 0; o < step.outputs.size(); ++o)
      if (step.outputs[o] >= 0) {
        producer[static_cast<size_t>(step.outputs[o])] = static_cast<int>(si);
        producer_output[static_cast<size_t>(step.outputs[o])] = o;
      }
  }
  auto takes = [&](size_t slot) {
    const Slot& s = plan.slots[slot];
    if (s.storage != Storage::kArena || PlaneOf(s) <= 1 || !ir::IsFloat(s.dtype) || readers[slot].empty() ||
        producer[slot] < 0)
      return false;
    const kernels::KernelEntry* pe = plan.steps[static_cast<size_t>(producer[slot])].entry;
    if (!pe || !Bit(pe->channels_last_outputs, producer_output[slot])) return false;
    for (const auto& [r, i] : readers[slot]) {
      const kernels::KernelEntry* re = plan.steps[r].entry;
      if (!re || !Bit(re->channels_last_inputs, i)) return false;
    }
    return true;
  };
  std::vector<char> touched(plan.steps.size(), 0);
  auto touch = [&](size_t slot) {
    touched[static_cast<size_t>(producer[slot])] = 1;
    for (const auto& [r, i] : readers[slot]) touched[r] = 1;
  };
  size_t values = 0;
  for (size_t slot = 0; slot < n; ++slot) {
    if (!takes(slot)) continue;
    plan.slots[slot].channels_last = true;
    ++values;
    touch(slot);
  }
  auto unmark = [&](int slot) {
    if (slot < 0 || !plan.slots[static_cast<size_t>(slot)].channels_last) return;
    plan.slots[static_cast<size_t>(slot)].channels_last = false;
    --values;
    touch(static_cast<size_t>(slot));
  };
  // Entries that take their layouts together (KernelEntry::
  // channels_last_together): a step with both kinds among the slots it
  // claims puts them all plain, which may unsettle its neighbours.
  auto settle = [&] {
    for (bool again = true; again;) {
      again = false;
      for (const Step& step : plan.steps) {
        if (!step.entry || !step.entry->channels_last_together) continue;
        std::vector<int> claimed;
        for (size_t i = 0; i < step.inputs.size(); ++i)
          if (Bit(step.entry->channels_last_inputs, i) && step.inputs[i] >= 0) claimed.push_back(step.inputs[i]);
        for (size_t o = 0; o < step.outputs.size(); ++o)
          if (Bit(step.entry->channels_last_outputs, o) && step.outputs[o] >= 0) claimed.push_back(step.outputs[o]);
        bool any_last = false, any_plain = false;
        for (int slot : claimed) {
          const Slot& s = plan.slots[static_cast<size_t>(slot)];
          if (PlaneOf(s) > 1) (s.channels_last ? any_last : any_plain) = true;
        }
        if (!any_last || !any_plain) continue;
        for (int slot : claimed) unmark(slot);
        again = true;
      }
    }
  };
  // Make the touched kernels again; a step whose factory declines puts its
  // values back to plain, which touches their other ends: repeat until every
  // kernel takes the layouts it is given.
  size_t declined = 0;
  // Each decline unmarks at least one value (a factory that made a kernel
  // from plain specs makes it again), so this ends; the bound is a guard.
  size_t rounds = 0;
  for (bool again = values > 0; again && rounds++ <= n;) {
    again = false;
    settle();
    for (size_t si = 0; si < plan.steps.size() && !again; ++si) {
      if (!touched[si]) continue;
      Step& step = plan.steps[si];
      StatusOr<std::unique_ptr<kernels::Kernel>> k = step.entry->factory(KernelInitOf(plan, step, options));
      if (k.ok()) {
        step.kernel = std::move(*k);
        touched[si] = 0;
        continue;
      }
      spdlog::debug("channels-last: {} declines ({}); its values stay plain", step.node->Describe(),
                    k.status().message());
      ++declined;
      for (int slot : step.inputs) unmark(slot);
      for (int slot : step.outputs) unmark(slot);
      touched[si] = 1;
      again = true;  // settle again before making more kernels
    }
  }
  if (values > 0 || declined > 0) spdlog::debug("channels-last: {} values ({} kernels declined)", values, declined);
}

}  // namespace amptrain::executor
