// Memory plan: liveness intervals, in-place aliasing and greedy arena packing.
#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <numeric>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "executor/plan.h"

namespace amptrain::executor {

namespace {

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
// when that input is an arena value read only once here and dead afterwards,
// or, for a view (Kernel::is_view: a Reshape), read later too. A shared
// buffer lives until its last slot dies, and an in-place write needs the
// whole buffer dead after it (b.last == s), so a view and its input are never
// overwritten while the other is still to be read.
int InplaceBuffer(const Plan& plan, size_t s, size_t o) {
  const Step& step = plan.steps[s];
  const Slot& out = plan.slots[step.outputs[o]];
  int j = step.kernel ? step.kernel->inplace_input(o) : -1;
  if (j < 0 || static_cast<size_t>(j) >= step.inputs.size() || step.inputs[j] < 0) return -1;
  const Slot& in = plan.slots[step.inputs[j]];
  if (in.storage != Storage::kArena || in.buffer < 0 || in.bytes != out.bytes) return -1;
  if (std::count(step.inputs.begin(), step.inputs.end(), step.inputs[j]) != 1) return -1;
  const Buffer& b = plan.buffers[in.buffer];
  const bool view = o == 0 && j == 0 && step.kernel->is_view();
  if (!view && (in.last != static_cast<int>(s) || b.last != static_cast<int>(s))) return -1;
  for (size_t k = 0; k < o; ++k)  // an earlier output of this step already took it
    if (plan.slots[step.outputs[k]].buffer == in.buffer) return -1;
  return in.buffer;
}

// The slot whose memory output `o` of step `s` reads without a copy, or -1:
// when the kernel is a view and its input is (a view of) a graph input,
// constant or graph output, of the same bytes and storage type.
int AliasOf(const Plan& plan, size_t s, size_t o) {
  const Step& step = plan.steps[s];
  if (o != 0 || !step.kernel || !step.kernel->is_view() || step.inputs.empty() || step.inputs[0] < 0) return -1;
  const Slot& out = plan.slots[step.outputs[o]];
  const Slot& in = plan.slots[step.inputs[0]];
  const int root = in.storage == Storage::kAlias ? in.alias_of : step.inputs[0];
  const Storage st = plan.slots[root].storage;
  if (st != Storage::kInput && st != Storage::kConstant && st != Storage::kOutput) return -1;
  if (in.bytes != out.bytes || in.dtype != out.dtype || in.holds != out.holds || in.channels_last ||
      out.channels_last)
    return -1;
  return root;
}

// What is live at `step`, in MB by how it is stored: "float32 12.5, bfloat16
// 3.1, float32 holding bfloat16 2.0, scratch 0.4" (buffers shared in place
// count once, under their first slot).
std::string LiveBreakdown(const Plan& plan, int step) {
  std::map<std::string, size_t> bytes;
  std::vector<bool> counted(plan.buffers.size(), false);
  for (const Slot& slot : plan.slots) {
    if (slot.storage != Storage::kArena || slot.buffer < 0 || counted[slot.buffer]) continue;
    const Buffer& b = plan.buffers[slot.buffer];
    if (b.first > step || b.last < step) continue;
    counted[slot.buffer] = true;
    std::string kind(ir::DTypeName(slot.dtype));
    if (slot.holds != ir::DType::kUndefined) kind = fmt::format("{} holding {}", kind, ir::DTypeName(slot.holds));
    bytes[kind] += b.bytes;
  }
  for (const Step& s : plan.steps)
    if (s.scratch_buffer >= 0 && !counted[s.scratch_buffer]) {
      const Buffer& b = plan.buffers[s.scratch_buffer];
      if (b.first <= step && step <= b.last) bytes["scratch"] += b.bytes;
    }
  std::string out;
  for (const auto& [kind, n] : bytes) out += fmt::format("{}{} {:.1f} MB", out.empty() ? "" : ", ", kind, n / 1e6);
  return out;
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
      if (inplace && (out.alias_of = AliasOf(plan, s, o)) >= 0) {
        out.storage = Storage::kAlias;
        continue;
      }
      plan.naive_bytes += ArenaBytes(out.bytes);
      int shared = inplace ? InplaceBuffer(plan, s, o) : -1;
      if (shared >= 0) {
        out.buffer = shared;
        plan.buffers[shared].last = std::max(plan.buffers[shared].last, out.last);
        continue;
      }
      out.buffer = static_cast<int>(plan.buffers.size());
      plan.buffers.push_back(Buffer{0, ArenaBytes(out.bytes), out.first, out.last});
    }
    size_t scratch = step.kernel ? step.kernel->scratch_bytes() : 0;
    if (scratch > 0) {
      step.scratch_buffer = static_cast<int>(plan.buffers.size());
      plan.buffers.push_back(Buffer{0, ArenaBytes(scratch), static_cast<int>(s), static_cast<int>(s)});
      plan.naive_bytes += ArenaBytes(scratch);
    }
  }
  std::vector<size_t> live(plan.steps.size() + 1, 0);  // bytes starting minus bytes ending, per step
  for (const Buffer& b : plan.buffers) {
    live[b.first] += b.bytes;
    live[b.last + 1] -= b.bytes;
  }
  size_t now = 0, peak_step = 0;
  plan.live_bytes = 0;
  for (size_t s = 0; s < live.size(); ++s)
    if ((now += live[s]) > plan.live_bytes) plan.live_bytes = now, peak_step = s;
  if (peak_step < plan.steps.size() && plan.steps[peak_step].node && spdlog::should_log(spdlog::level::debug))
    spdlog::debug("memory plan: most bytes live ({}) at step {}, {}; {}", plan.live_bytes, peak_step,
                  plan.steps[peak_step].node->Describe(), LiveBreakdown(plan, static_cast<int>(peak_step)));
  plan.peak_bytes = PackBuffers(plan.buffers);
}

size_t PackBuffers(std::vector<Buffer>& buffers) {
  return buffers.size() > kMaxBuffersPackedBySize ? PackBuffersInOrder(buffers) : PackBuffersBySize(buffers);
}

size_t PackBuffersBySize(std::vector<Buffer>& buffers) {
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

size_t PackBuffersInOrder(std::vector<Buffer>& buffers) {
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return buffers[a].first < buffers[b].first; });
  // Free blocks, by offset (to coalesce neighbours) and by size (best fit).
  std::map<size_t, size_t> free_at;                // offset -> bytes
  std::multimap<size_t, size_t> free_by_size;      // bytes -> offset
  auto erase_block = [&](std::map<size_t, size_t>::iterator it) {
    auto range = free_by_size.equal_range(it->second);
    for (auto s = range.first; s != range.second; ++s)
      if (s->second == it->first) {
        free_by_size.erase(s);
        break;
      }
    return free_at.erase(it);
  };
  auto release = [&](size_t offset, size_t bytes) {
    auto next = free_at.lower_bound(offset);
    if (next != free_at.end() && offset + bytes == next->first) {
      bytes += next->second;
      next = erase_block(next);
    }
    if (next != free_at.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        offset = prev->first;
        bytes += prev->second;
        erase_block(prev);
      }
    }
    free_at.emplace(offset, bytes);
    free_by_size.emplace(bytes, offset);
  };
  using Live = std::pair<int, size_t>;  // (last step, buffer index), earliest last on top
  std::priority_queue<Live, std::vector<Live>, std::greater<Live>> live;
  size_t arena = 0;
  for (size_t i : order) {
    Buffer& buf = buffers[i];
    buf.offset = 0;
    if (buf.bytes == 0) continue;
    while (!live.empty() && live.top().first < buf.first) {
      release(buffers[live.top().second].offset, buffers[live.top().second].bytes);
      live.pop();
    }
    auto fit = free_by_size.lower_bound(buf.bytes);
    if (fit != free_by_size.end()) {
      const size_t offset = fit->second, bytes = fit->first;
      erase_block(free_at.find(offset));
      buf.offset = offset;
      if (bytes > buf.bytes) release(offset + buf.bytes, bytes - buf.bytes);
    } else if (auto last = free_at.empty() ? free_at.end() : std::prev(free_at.end());
               last != free_at.end() && last->first + last->second == arena) {
      buf.offset = last->first;  // the free tail of the arena grows to fit
      erase_block(last);
      arena = buf.offset + buf.bytes;
    } else {
      buf.offset = arena;
      arena += buf.bytes;
    }
    live.emplace(buf.last, i);
  }
  return arena;
}

}  // namespace amptrain::executor
