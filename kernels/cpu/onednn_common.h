// Shared plumbing of the oneDNN kernels (kernels/cpu/onednn_*.cc).
//
// One process-wide CPU engine. A kernel builds its primitive once at
// creation from the concrete shapes of its KernelInit and, at Run, wraps the
// executor's buffers (plain row-major layouts) in dnnl::memory objects and
// executes on its stream; a kernel that lets oneDNN pick blocked layouts
// (Conv: onednn_conv.cc) reorders into and out of its scratch buffer. Constant
// weights (TensorSpec::value set) may be reordered once at creation into the
// layout oneDNN prefers; that copy is owned by the kernel.
//
// oneDNN throws dnnl::error; nothing here lets an exception escape: creation
// and Run turn it into a Status naming the node.
#pragma once

#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "kernels/kernel.h"

namespace amptrain::kernels::cpu::onednn {

dnnl::engine& Engine();

// f32 for kFloat32, bf16 for kBFloat16; undef otherwise.
dnnl::memory::data_type DataType(DType t);
dnnl::memory::dims Dims(const std::vector<int64_t>& dims);
// A convolution's dilations as oneDNN counts them (the gaps: dilation - 1).
dnnl::memory::dims Dilations(const std::vector<int64_t>& dilations);
// A pooling window of X [N, C, in...] -> Y [N, C, out...] in oneDNN's terms
// (`max` or average, count_include_pad read from `attrs`): ceil_mode's
// overhang becomes extra right padding, so that oneDNN's floor formula gives
// ONNX's output size. An error where oneDNN would count that overhang (an
// average with count_include_pad), so the caller declines.
struct PoolWindow {
  dnnl::algorithm alg;
  dnnl::memory::dims strides, kernel, dilations, pads_begin, pads_end;
};
StatusOr<PoolWindow> ResolvePoolWindow(const KernelInit& forward, bool max, const std::vector<int64_t>& x,
                                       const std::vector<int64_t>& y);
// A convolution weight [O, I/group, k...] as oneDNN's grouped one
// [group, O/group, I/group, k...] (unchanged for one group).
std::vector<int64_t> GroupedWeightDims(const std::vector<int64_t>& w, int64_t group);
// Row-major (a, ab, abc, ...) descriptor of `dims` and `t`.
dnnl::memory::desc PlainDesc(const std::vector<int64_t>& dims, DType t);
// The desc of a kernel spec's buffer: plain, or nhwc for a channels-last one.
dnnl::memory::desc SpecDesc(const TensorSpec& spec);

// Where a primitive argument comes from at Run time.
struct Binding {
  enum Source { kInput, kOutput, kOwned };
  int arg;  // DNNL_ARG_*
  Source source;
  size_t index;             // input/output slot, or index into owned memories
  dnnl::memory::desc desc;  // ignored for kOwned
};

// The arguments of one primitive's calls, made once: a memory per argument
// over a handle that each call repoints (Set), and the C argument array that
// dnnl_primitive_execute takes, so that a call builds no map, vector or
// memory object (oneDNN's own execution context still allocates inside).
class ExecArgs {
 public:
  // An argument over a memory of `desc` whose buffer Set gives; its index.
  size_t Add(int arg, const dnnl::memory::desc& desc);
  // An argument over a memory that stays as it is (a kernel-owned weight).
  size_t Add(int arg, const dnnl::memory& fixed);
  void Set(size_t index, void* data) { memories_[index].set_data_handle(data); }
  // DNNL_ARG_SCRATCHPAD over `bytes` of the kernel's scratch (UserScratchpad);
  // nothing when `bytes` is 0. SetScratchpad repoints it (a no-op without one).
  void AddScratchpad(size_t bytes);
  void SetScratchpad(void* data) {
    if (scratchpad_ >= 0) Set(static_cast<size_t>(scratchpad_), data);
  }
  bool empty() const { return memories_.empty(); }
  const dnnl::memory& memory(size_t index) const { return memories_[index]; }
  // Runs `p` on `s` with these arguments; throws dnnl::error as execute does.
  void Execute(const dnnl::primitive& p, dnnl::stream& s) const;

 private:
  std::vector<dnnl::memory> memories_;
  std::vector<dnnl_exec_arg_t> c_args_;
  int scratchpad_ = -1;  // index of DNNL_ARG_SCRATCHPAD, if any
};

// A kernel that executes one primitive with the given bindings; its scratch
// is the primitive's scratchpad (made with UserScratchpad; none otherwise).
class PrimitiveKernel : public Kernel {
 public:
  PrimitiveKernel(std::string describe, dnnl::primitive primitive, std::vector<Binding> bindings,
                  std::vector<dnnl::memory> owned);
  size_t scratch_bytes() const override { return scratchpad_bytes_; }
  Status Run(KernelContext& ctx) override;

 private:
  std::string describe_;
  dnnl::primitive primitive_;
  std::vector<Binding> bindings_;
  ExecArgs args_;  // one per binding, in bindings_ order (holding the owned memories), then the scratchpad
  size_t scratchpad_bytes_ = 0;
  dnnl::stream stream_;
};

// Copies the constant tensor `value` (plain layout `plain`) into a new memory
// of layout `wanted` (a reorder when they differ).
dnnl::memory ReorderConstant(const ir::Tensor& value, const dnnl::memory::desc& plain,
                             const dnnl::memory::desc& wanted);

// A primitive argument in the layout oneDNN chose (format_tag::any) for a
// tensor the executor holds plain: an input is reordered from the plain
// buffer into scratch before the primitive runs, an output is computed in
// scratch and reordered into the plain buffer after. When the chosen layout
// is the plain one, the buffer is used as it is and takes no scratch.
class LayoutArg {
 public:
  LayoutArg() = default;
  // Places the scratch copy (if any) at *scratch_end, which it advances.
  LayoutArg(const dnnl::memory::desc& plain, const dnnl::memory::desc& chosen, bool input, size_t* scratch_end);
  // The memory the primitive reads: `data` itself, or its reordered copy.
  // The memories returned are the LayoutArg's own, repointed at each call:
  // valid until its next In/Target/Out.
  dnnl::memory In(dnnl::stream& s, void* data, std::byte* scratch);
  // The memory the primitive writes; Out() then reorders it into `data`.
  dnnl::memory Target(void* data, std::byte* scratch);
  void Out(dnnl::stream& s, const dnnl::memory& computed, void* data);
  bool reordered() const { return static_cast<bool>(reorder_); }

 private:
  dnnl::memory::desc plain_, chosen_;
  dnnl::reorder reorder_;  // empty when chosen == plain
  size_t offset_ = 0;
  // The plain buffer and the scratch copy (DNNL_ARG_FROM/TO of the reorder,
  // in its direction), repointed at each call.
  ExecArgs reorder_args_;
  size_t plain_arg_ = 0, chosen_arg_ = 0;
};

// oneDNN's scratchpad (a primitive's temporary workspace) comes from the
// kernel's scratch: the convolution, ConvGrad and matmul primitives and those
// of PrimitiveKernel are made with scratchpad_mode::user, and the kernel adds
// ScratchpadBytes to scratch_bytes() and passes that region as
// DNNL_ARG_SCRATCHPAD (the oneDNN training BatchNormalization, its gradient
// and MaxPoolGrad, fallbacks behind the direct kernels, keep the library's
// mode). In the default (library) mode each primitive owns its
// scratchpad for its lifetime: a training plan's bf16 backward-weights
// convolutions alone held 19 MB that way (ResNet-18, batch 128), outside the
// arena, where the planner could not reuse it.
dnnl::primitive_attr UserScratchpad(dnnl::primitive_attr attr = dnnl::primitive_attr());
size_t ScratchpadBytes(const dnnl::primitive_desc_base& pd);
// The offset of a scratchpad of `bytes` placed at *scratch_end (64-byte
// aligned), which it advances past it.
size_t PlaceScratchpad(size_t bytes, size_t* scratch_end);

// True when oneDNN picked a gemm-based implementation (im2col + gemm).
bool IsGemmImpl(const dnnl::primitive_desc_base& pd);

// True when oneDNN picked its portable reference implementation ("ref:any"):
// the kernels then decline, so the project's own reference kernel (parallel,
// double accumulation) runs instead.
bool IsReferenceImpl(const dnnl::primitive_desc_base& pd);

// Runs `build` and converts a dnnl::error into a Status naming the node.
template <class Fn>
StatusOr<std::unique_ptr<Kernel>> Guarded(const KernelInit& init, Fn&& build) {
  try {
    return build();
  } catch (const dnnl::error& e) {
    return Unimplemented(init.Describe(), ": oneDNN: ", e.what());
  }
}

// Entry with impl "onednn", priority 10, dtypes f32/bf16 (or `dtypes`); its
// `accepts` runs `factory` and answers whether it succeeded, so a
// configuration oneDNN rejects falls back to the next implementation.
KernelEntry OneDnnEntry(OpKind op, KernelFactory factory,
                        std::vector<DType> dtypes = {DType::kFloat32, DType::kBFloat16});

// The storage-only twin of a oneDNN kernel: impl "onednn-widened", priority 5,
// for ops whose type input is bf16 or fp16. Every 2-byte float input is
// widened to fp32 into scratch, `factory` builds the fp32 kernel of the same
// op, and its 2-byte float outputs are narrowed back (one rounding, as the
// native kernels round their fp32 accumulators once). This is the path of a
// CPU without native bf16 (oneDNN below avx512_core) and of fp16 on every
// CPU here: values stay 2 bytes in memory and compute at fp32 speed. The
// copies are flat (whole batch rows), so a channels-last spec reaches the
// fp32 kernel as it is; the caller sets the entry's channels-last masks.
KernelEntry WidenedEntry(OpKind op, KernelFactory factory);

// The widened kernels of Conv, FusedConv, ConvGrad, Gemm and MatMul run in
// slices of the batch whose fp32 copies take at most this many bytes
// (default 8 MiB; a slice has at least 16 rows, and 2 per thread). Tests set it
// small so that small problems slice too; it applies to kernels created
// afterwards.
void SetWidenedSliceBytes(size_t bytes);
size_t WidenedSliceBytes();

// Adds OneDnnEntry(op, factory, dtypes) and WidenedEntry(op, factory).
void AddOneDnn(Registry& r, OpKind op, KernelFactory factory,
               std::vector<DType> dtypes = {DType::kFloat32, DType::kBFloat16});

// Registration of each family, called by RegisterOneDnn.
void RegisterOneDnnConv(Registry& r);
void RegisterOneDnnMatMul(Registry& r);
void RegisterOneDnnPool(Registry& r);
void RegisterOneDnnBatchNorm(Registry& r);
void RegisterOneDnnSoftmax(Registry& r);  // onednn_softmax.cc: Softmax

}  // namespace amptrain::kernels::cpu::onednn
