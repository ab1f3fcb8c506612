// The execution plan: schedule, shape specialization, kernels, memory plan.
//
// BuildPlan(graph, input_types, options) specializes a graph to one set of
// concrete input types and prepares everything a run needs:
//
//  1. Schedule: the graph's stable topological order, restricted to the nodes
//     some graph output depends on.
//  2. Shape specialization: each node's shape rule runs with concrete input
//     types and the values known so far (initializers, Constants, values
//     propagated by shape-arithmetic rules). The user's graph is not touched.
//     A node whose outputs all get propagated values is folded: its outputs
//     become constants and it does not run. Every other value must end up
//     with a static shape, else an error names the node and the value.
//  3. Kernels: one per remaining node, created through kernels::Registry with
//     TensorSpec::value set for inputs known at plan time. Unsupported
//     op/dtype/attribute combinations fail here, naming the node. An output
//     nothing reads, of a kernel that can skip it
//     (KernelEntry::skips_unused_outputs), becomes absent: not computed,
//     not allocated.
//  4. Layout (AssignChannelsLast below): an intermediate whose producer and
//     readers all take it channels-last is stored so, and the convolutions
//     between them skip their nchw <-> nhwc reorders.
//  5. Cast fusion (FuseWidenedCasts below): kernels that convert in
//     registers absorb the Casts beside them; a storage-only kernel, which
//     computes a fp16/bf16 node in fp32 anyway, reads and writes fp32 values
//     that hold the low type instead of paying for a Cast beside it. It
//     weighs each fusion by the scratch of the kernels it would make, so it
//     runs on the layouts step 4 chose (the Casts take their neighbours'
//     layout, in and out alike).
//  6. Memory: intermediates live in one 64-byte aligned arena. Every value
//     (and every kernel's scratch) has a liveness interval [first, last] in
//     schedule steps; buffers are packed greedily, largest first, each into
//     the best-fitting gap among the buffers that are live at the same time.
//     With `inplace`, an output shares its input's buffer when the kernel
//     allows it (Kernel::inplace_input) and the input dies at that node, or
//     when the kernel is a view (Kernel::is_view: Reshape, Flatten, Squeeze,
//     Unsqueeze) whatever the input's later readers: the buffer then lives
//     until its last reader, and nothing writes in place over it before.
//     Graph inputs, constants and graph outputs are not in the arena: graph
//     outputs get fresh tensors per run (a graph output that is an input or a
//     constant is copied out). A view of one of them reads its memory
//     (Storage::kAlias; nothing writes in place over an alias) instead of a
//     copy in the arena: the loss head's Reshape of the logits output.
//
//   input x ─▶ Relu ─▶ a ─▶ Relu ─▶ b ─▶ Add(a?) ...
//   Value        storage   buffer  interval
//   a            kArena    0       [0, 1]
//   b            kArena    1       [1, 2]
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "ir/tensor.h"
#include "kernels/kernel.h"

namespace amptrain::executor {

struct PlanOptions {
  kernels::DeviceKind device = kernels::DeviceKind::kCpu;
  std::string kernel_impl;  // "" = best available, "reference" = reference kernels only
  // Ops that take the reference kernel whatever kernel_impl says (`run
  // --reference-ops`: which op's kernel an output's error comes from).
  std::set<ir::OpKind> reference_ops;
  bool training = false;    // passed to kernels (Dropout, BatchNormalization)
  int threads = 1;          // passed to kernels
  bool inplace = true;      // allow output-over-input aliasing
  uint64_t seed = 0;        // base seed of random kernels (training Dropout)
  bool fuse_widened_casts = true;  // step 5 (off only to compare against it)
  bool channels_last = true;       // step 4 (off only to compare against it)
  bool winograd = true;            // KernelInit::winograd
};

enum class Storage {
  kInput,     // a graph input: the caller's tensor
  kConstant,  // initializer, Constant or folded value: Slot::constant
  kArena,     // intermediate: Slot::offset into the arena
  kOutput,    // graph output computed by a node: a fresh tensor per run
  kAbsent,    // an optional output the node does not produce
  kAlias,     // a view (Reshape, Flatten, ...) of a graph input, constant or
              // graph output: that slot's memory (Slot::alias_of), no copy
};

// One runtime value.
struct Slot {
  ir::Value value;
  std::string name;
  ir::DType dtype = ir::DType::kUndefined;
  std::vector<int64_t> dims;
  size_t bytes = 0;
  Storage storage = Storage::kArena;
  ir::Tensor constant;  // kConstant only
  // kFloat16/kBFloat16 for a kFloat32 slot whose values are exact in that
  // type: a low-precision value stored widened by cast fusion.
  ir::DType holds = ir::DType::kUndefined;
  // kArena, rank 4: stored channels-last (kernels::TensorSpec::channels_last).
  bool channels_last = false;
  int buffer = -1;      // kArena only: index into Plan::buffers
  int alias_of = -1;    // kAlias only: the slot whose memory this one reads
  // Schedule steps of the definition and the last use (kArena only).
  int first = 0, last = 0;
};

// A region of the arena; several slots share one buffer when aliased in place.
struct Buffer {
  size_t offset = 0;
  size_t bytes = 0;
  int first = 0, last = 0;
};

struct Step {
  const ir::Node* node = nullptr;
  std::unique_ptr<kernels::Kernel> kernel;
  std::vector<int> inputs;   // slot index per input; -1 for an absent optional input
  std::vector<int> outputs;  // slot index per output
  int scratch_buffer = -1;   // index into Plan::buffers, -1 without scratch
  std::string impl;          // the kernel's implementation ("onednn", "reference", ...)
  const kernels::KernelEntry* entry = nullptr;  // the registry entry that made `kernel`
};

struct Plan {
  std::vector<Step> steps;
  std::vector<Slot> slots;
  std::vector<Buffer> buffers;
  std::vector<int> inputs;   // slot per graph input, in graph input order
  std::vector<int> outputs;  // slot per graph output, in graph output order
  size_t peak_bytes = 0;     // arena size
  size_t naive_bytes = 0;    // sum of all arena buffers without reuse
  size_t live_bytes = 0;     // most bytes live at one step: no packing does better than this
  size_t folded_nodes = 0;   // nodes turned into constants
  std::map<ir::Value, int> slot_of;

  int SlotOf(ir::Value v) const;  // -1 when the value has no slot
};

// Checks concrete input types against the graph's inputs: every input given
// (and no other name), exact dtype, same rank, equal static dims, static
// concrete dims. Errors name the input.
Status CheckInputTypes(const ir::Graph& graph, const std::map<std::string, ir::TensorType>& input_types);

// Builds the plan. `graph` must outlive the plan (steps point at its nodes).
// `input_values` (optional) holds graph inputs whose values are fixed for this
// plan: the ones ShapeInputs() names, so that a Reshape whose target shape is
// a graph input still gets static shapes. The caller re-plans when they change.
// `value_dependent_counts` (optional): for each NonZero whose input is not
// known at plan time, the count of nonzero elements this plan is for, by the
// NonZero's output name (InferenceSession measures them; ValueDependentNodes).
StatusOr<Plan> BuildPlan(const ir::Graph& graph, const std::map<std::string, ir::TensorType>& input_types,
                         const PlanOptions& options, const std::map<std::string, ir::Tensor>* input_values = nullptr,
                         const std::map<std::string, int64_t>* value_dependent_counts = nullptr);

// The NonZero nodes of `graph` that some output depends on: the nodes whose
// output shape only the data can tell.
std::vector<const ir::Node*> ValueDependentNodes(const ir::Graph& graph);

// Names of the graph inputs whose values reach a value input of some node
// (ir::OpSchema::value_inputs: Reshape's shape, Slice's starts, ...) through
// any chain of nodes. A plan is specialized on their values.
std::vector<std::string> ShapeInputs(const ir::Graph& graph);

// The KernelInit of a step from its slots (TensorSpec::holds only for a step
// whose entry takes widened tensors).
kernels::KernelInit KernelInitOf(const Plan& plan, const Step& step, const PlanOptions& options);

// Cast fusion, on a plan whose kernels are created and whose layouts are chosen
// (executor/widened_casts.cc).
// First, on any CPU, kernels that compute in fp32 and convert their data in
// registers (KernelEntry::fuses_casts: the direct BatchNormalization and its
// gradient) absorb the Casts beside them:
//  - a Cast of a low value to fp32 read only by such kernels: they read the
//    low value (O1: the fp32 BatchNormalization after a low Conv, and its
//    gradient, keep the Conv output in 2 bytes instead of its fp32 copy);
//      before: Conv[bf16] ─▶ y:bf16 ─▶ Cast(fp32) ─▶ y':fp32 ─▶ BN, BNGrad
//      after:  Conv[bf16] ─▶ y:bf16 ─▶ BN, BNGrad (widening in registers)
//  - an fp32 output of such a kernel read only by a Cast to a low type: the
//    kernel writes the low value, rounded once (BNGrad's dX for ConvGrad).
// Then storage-only kernels (KernelEntry::takes_widened: the oneDNN kernels that
// widen fp16/bf16 to fp32 on a CPU without native low precision) convert
// their 2-byte tensors on every call. Where a Cast sits beside them, the
// value is stored as fp32 holding the low type instead (Slot::holds), which
// gives the same bits with fewer conversions:
//  - output: a widened kernel whose low output is read only by a Cast to
//    fp32 writes the Cast's output, rounded to the low type; the Cast goes.
//      before: Conv[bf16] ─▶ y:bf16 ─▶ Cast(fp32) ─▶ z:fp32
//      after:  Conv[bf16] ─▶ z:fp32 holding bf16
//  - input: a Cast to the low type read only by widened kernels (of a master
//    weight, the batch, or O1's fp32 activations before a low Conv) rounds
//    in fp32 instead, once per run; its readers use the result in place
//    instead of widening it each. The value then takes 4 bytes per element
//    instead of 2, while the readers' fp32 copies go from their scratch.
//      before: w:fp32 ─▶ Cast(bf16) ─▶ w':bf16 ─▶ Gemm, Gemm (each widens w')
//      after:  w:fp32 ─▶ Cast(bf16) ─▶ w':fp32 holding bf16 ─▶ Gemm, Gemm
// A fused value takes 4 bytes per element instead of 2 for its whole life, so
// a rewrite is made only where it does not raise the most bytes live at one
// step (counting the readers' widening scratch it saves): O1's activations,
// cast for a low Conv and saved for its backward, stay low.
// Every step keeps its node, so errors and the overflow observer still name
// the graph's nodes. A rewrite the kernels decline is not made.
void FuseWidenedCasts(Plan& plan, const PlanOptions& options);

// Step 4: a rank-4 float arena value is stored channels-last when the entry
// of its producer sets that output's bit of
// KernelEntry::channels_last_outputs and the entry of every reader sets that
// input's bit of channels_last_inputs; those steps' kernels are made again
// with TensorSpec::channels_last. A value a kernel then declines goes back to
// plain. Graph inputs, outputs and constants stay plain, so nothing outside
// a run sees the layout; values stay bitwise what the plain plan computes.
//   before: Conv ─▶ y (nchw) ─▶ FusedConv   each reorders nchw <-> nhwc
//   after:  Conv ─▶ y (nhwc) ─▶ FusedConv   no reorder between them
void AssignChannelsLast(Plan& plan, const PlanOptions& options);

// Memory plan of a plan whose steps, slots and kernels are set: liveness of
// the arena slots, in-place aliasing (when `inplace`), scratch buffers, then
// PackBuffers. Fills buffers, Slot::buffer/first/last, peak and naive bytes.
void PlanMemory(Plan& plan, bool inplace);

// Assigns offsets to `buffers` (sizes multiples of 64, intervals set) so that
// buffers whose intervals overlap do not overlap in memory; returns the arena
// size. PackBuffersBySize below, or PackBuffersInOrder for plans of more
// than kMaxBuffersPackedBySize buffers (the first is quadratic: a 20k-node
// training chain spent 4 s in it).
inline constexpr size_t kMaxBuffersPackedBySize = 4096;
// The bytes an arena buffer of `n` bytes takes: a multiple of 64.
inline size_t ArenaBytes(size_t n) { return (n + 63) / 64 * 64; }
size_t PackBuffers(std::vector<Buffer>& buffers);
// Greedy by size (largest first), each into the smallest gap that fits among
// the buffers already placed that are live at the same time. O(n^2 log n).
size_t PackBuffersBySize(std::vector<Buffer>& buffers);
// In order of first use, each into the best-fitting free block (freed blocks
// coalesce), else at the end of the arena. O(n log n).
size_t PackBuffersInOrder(std::vector<Buffer>& buffers);

}  // namespace amptrain::executor
