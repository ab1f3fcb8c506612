// Step 5 of the plan (executor/plan.h, AssignChannelsLast): channels-last
// intermediates between kernels that take them.
#include <spdlog/spdlog.h>

#include <utility>
#include <vector>

#include "executor/plan.h"

namespace amptrain::executor {

namespace {

bool Bit(uint32_t mask, size_t i) { return i < 32 && ((mask >> i) & 1u) != 0; }

}  // namespace

void AssignChannelsLast(Plan& plan, const PlanOptions& options) {
  const size_t n = plan.slots.size();
  std::vector<std::vector<std::pair<size_t, size_t>>> readers(n);  // (step, input index)
  std::vector<std::pair<int, size_t>> producer(n, {-1, 0});          // (step, output index)
  for (size_t si = 0; si < plan.steps.size(); ++si) {
    const Step& step = plan.steps[si];
    for (size_t i = 0; i < step.inputs.size(); ++i)
      if (step.inputs[i] >= 0) readers[static_cast<size_t>(step.inputs[i])].push_back({si, i});
    for (size_t o = 0; o < step.outputs.size(); ++o)
      if (step.outputs[o] >= 0) producer[static_cast<size_t>(step.outputs[o])] = {static_cast<int>(si), o};
  }
  auto takes = [&](size_t slot) {
    const Slot& s = plan.slots[slot];
    if (s.storage != Storage::kArena || s.dims.size() != 4 || !ir::IsFloat(s.dtype) || readers[slot].empty())
      return false;
    const auto [p, o] = producer[slot];
    if (p < 0) return false;
    const kernels::KernelEntry* pe = plan.steps[static_cast<size_t>(p)].entry;
    if (!pe || !Bit(pe->channels_last_outputs, o)) return false;
    for (const auto& [r, i] : readers[slot]) {
      const kernels::KernelEntry* re = plan.steps[r].entry;
      if (!re || !Bit(re->channels_last_inputs, i)) return false;
    }
    return true;
  };
  std::vector<char> touched(plan.steps.size(), 0);
  size_t values = 0;
  for (size_t slot = 0; slot < n; ++slot) {
    if (!takes(slot)) continue;
    plan.slots[slot].channels_last = true;
    ++values;
    touched[static_cast<size_t>(producer[slot].first)] = 1;
    for (const auto& [r, i] : readers[slot]) touched[r] = 1;
  }
  if (values == 0) return;
  // Make the touched kernels again; a step whose factory declines puts its
  // values back to plain, which touches their other ends: repeat until every
  // kernel takes the layouts it is given.
  size_t declined = 0;
  for (bool again = true; again;) {
    again = false;
    for (size_t si = 0; si < plan.steps.size(); ++si) {
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
      for (int list : {0, 1})
        for (int slot : list == 0 ? step.inputs : step.outputs) {
          if (slot < 0 || !plan.slots[static_cast<size_t>(slot)].channels_last) continue;
          plan.slots[static_cast<size_t>(slot)].channels_last = false;
          --values;
          touched[static_cast<size_t>(producer[static_cast<size_t>(slot)].first)] = 1;
          for (const auto& [r, i] : readers[static_cast<size_t>(slot)]) touched[r] = 1;
        }
      again = true;
    }
  }
  spdlog::debug("channels-last: {} values ({} kernels declined)", values, declined);
}

}  // namespace amptrain::executor
