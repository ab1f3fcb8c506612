// Memory plan: liveness intervals, in-place aliasing and greedy arena packing.
#include <algorithm>
#include <numeric>

#include "executor/plan.h"

namespace amptrain::executor {

namespace {

size_t AlignUp(size_t n) { return (n + 63) / 64 * 64; }

bool Overlap(const Buffer& a, const Buffer& b) { return a.first <= b.last && b.first <= a.last; }

// Liveness: a value lives from the step that defines it to its last reader.
void ComputeIntervals(Plan& plan) {
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const int step = static_cast<int>(s);
    for (int o : plan.steps[s].outputs) plan.slots[o].first = plan.slots[o].last = step;
    for (int i : plan.steps[s].inputs)
      if (i >= 0) plan.slots[i].last = std::max(plan.slots[i].last, step);
  }
}

// The buffer output `o` of step `s` may share: its kernel's in-place input
// when that input is an arena value read only once here and dead afterwards.
int InplaceBuffer(const Plan& plan, size_t s, size_t o) {
  const Step& step = plan.steps[s];
  const Slot& out = plan.slots[step.outputs[o]];
  int j = step.kernel ? step.kernel->inplace_input(o) : -1;
  if (j < 0 || static_cast<size_t>(j) >= step.inputs.size() || step.inputs[j] < 0) return -1;
  const Slot& in = plan.slots[step.inputs[j]];
  if (in.storage != Storage::kArena || in.buffer < 0 || in.bytes != out.bytes) return -1;
  if (std::count(step.inputs.begin(), step.inputs.end(), step.inputs[j]) != 1) return -1;
  const Buffer& b = plan.buffers[in.buffer];
  if (in.last != static_cast<int>(s) || b.last != static_cast<int>(s)) return -1;
  for (size_t k = 0; k < o; ++k)  // an earlier output of this step already took it
    if (plan.slots[step.outputs[k]].buffer == in.buffer) return -1;
  return in.buffer;
}

}  // namespace

void PlanMemory(Plan& plan, bool inplace) {
  ComputeIntervals(plan);
  plan.buffers.clear();
  plan.naive_bytes = 0;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    Step& step = plan.steps[s];
    for (size_t o = 0; o < step.outputs.size(); ++o) {
      Slot& out = plan.slots[step.outputs[o]];
      if (out.storage != Storage::kArena) continue;
      plan.naive_bytes += AlignUp(out.bytes);
      int shared = inplace ? InplaceBuffer(plan, s, o) : -1;
      if (shared >= 0) {
        out.buffer = shared;
        plan.buffers[shared].last = std::max(plan.buffers[shared].last, out.last);
        continue;
      }
      out.buffer = static_cast<int>(plan.buffers.size());
      plan.buffers.push_back(Buffer{0, AlignUp(out.bytes), out.first, out.last});
    }
    size_t scratch = step.kernel ? step.kernel->scratch_bytes() : 0;
    if (scratch > 0) {
      step.scratch_buffer = static_cast<int>(plan.buffers.size());
      plan.buffers.push_back(Buffer{0, AlignUp(scratch), static_cast<int>(s), static_cast<int>(s)});
      plan.naive_bytes += AlignUp(scratch);
    }
  }
  plan.peak_bytes = PackBuffers(plan.buffers);
}

size_t PackBuffers(std::vector<Buffer>& buffers) {
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buffers[a].bytes != buffers[b].bytes) return buffers[a].bytes > buffers[b].bytes;
    return buffers[a].first < buffers[b].first;
  });
  std::vector<size_t> placed;
  size_t arena = 0;
  for (size_t i : order) {
    Buffer& buf = buffers[i];
    buf.offset = 0;
    if (buf.bytes == 0) continue;
    std::vector<const Buffer*> live;
    for (size_t p : placed)
      if (Overlap(buffers[p], buf)) live.push_back(&buffers[p]);
    std::sort(live.begin(), live.end(), [](const Buffer* a, const Buffer* b) { return a->offset < b->offset; });
    size_t end = 0, best_gap = SIZE_MAX;
    bool found = false;
    for (const Buffer* other : live) {
      if (other->offset >= end) {
        size_t gap = other->offset - end;
        if (gap >= buf.bytes && gap < best_gap) {
          best_gap = gap;
          buf.offset = end;
          found = true;
        }
      }
      end = std::max(end, other->offset + other->bytes);
    }
    if (!found) buf.offset = end;
    arena = std::max(arena, buf.offset + buf.bytes);
    placed.push_back(i);
  }
  return arena;
}

}  // namespace amptrain::executor
