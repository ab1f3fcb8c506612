// The kernel interface and registry, keyed by (op, device, dtype).
//
// A kernel is created once per plan from a KernelInit (op, attributes,
// concrete input/output types, constant input values known at plan time) and
// run many times on views of preallocated buffers. Creation validates every
// precondition; Run() assumes them. "Supported?" is answered before anything
// runs: Registry::Supports / Registry::Create return a clean Status naming the
// op and dtype when no kernel fits.
//
// kernels/ knows nothing of graphs: it uses ir's types (DType, Tensor,
// Attributes, OpKind) only.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/attribute.h"
#include "ir/dtype.h"
#include "ir/op_schema.h"
#include "ir/status.h"
#include "ir/tensor.h"
#include "kernels/device.h"

namespace amptrain::kernels {

using ir::DType;
using ir::OpKind;


struct TensorSpec {
  DType dtype = DType::kUndefined;   // kUndefined: optional input absent
  std::vector<int64_t> dims;
  const ir::Tensor* value = nullptr; // set when the value is known at plan time
  // kFloat16 or kBFloat16 for a kFloat32 tensor that holds low-precision
  // values stored widened: an input whose every value is exact in `holds`, or
  // an output the kernel must round to `holds`. Given only to kernels whose
  // entry sets KernelEntry::takes_widened (the executor's cast fusion).
  DType holds = DType::kUndefined;
  // A rank-4 tensor stored channels-last: dims stay N, C, H, W and the
  // buffer holds element (n, c, h, w) at ((n * H + h) * W + w) * C + c.
  // Given only where the entry sets that slot's bit of
  // KernelEntry::channels_last_inputs/_outputs (the executor's layout step).
  bool channels_last = false;

  bool present() const { return dtype != DType::kUndefined; }
  int64_t num_elements() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
};

// The empty attribute set: what KernelInit::attrs points at until a node's own
// are given, so kernels of ops without attributes (GradCheck) need no caller to
// make one up.
const ir::Attributes& NoAttributes();

struct KernelInit {
  OpKind op = OpKind::kIdentity;
  const ir::Attributes* attrs = &NoAttributes();
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;  // inferred types; kernels may rely on them
  std::string node_name;            // for error messages only
  DeviceKind device = DeviceKind::kCpu;
  // Training: Dropout drops (with `seed`), BatchNormalization uses batch statistics
  // regardless of the model's mode. Inference: Dropout is the identity and BN
  // follows the node (training_mode attribute or training-mode output count).
  bool training = false;
  // Inference convolutions with constant weights may use Winograd where it
  // is faster (3x3, stride 1, fp32; kernels/cpu/onednn_conv.cc): its rounding differs
  // from the direct convolution's but is of the same size (measured there).
  // Off: direct only.
  bool winograd = true;
  uint64_t seed = 0;
  int threads = 1;

  // "Conv node 'conv1' (float32)": prefix for errors.
  std::string Describe() const;
  template <class... A> Status Error(const A&... a) const {
    return InvalidArgument(Describe(), ": ", a...);
  }
};

struct KernelContext {
  std::vector<ir::TensorView> inputs;   // absent optional inputs have data == nullptr
  std::vector<ir::TensorView> outputs;
  void* scratch = nullptr;              // Kernel::scratch_bytes() bytes, 64-byte aligned
  // Per-run seed of random kernels (training Dropout), mixed with KernelInit::seed so that each
  // run (training step) draws fresh values while staying reproducible; 0 = KernelInit::seed alone.
  uint64_t seed = 0;
  // The run's stream, workspace and threads (kernels/device.h); set by the
  // executor for every call, null only in direct kernel tests on the CPU.
  const RunContext* run = nullptr;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual Status Run(KernelContext& ctx) = 0;
  virtual size_t scratch_bytes() const { return 0; }
  // Output i may be written in place over input j (the executor may then alias them).
  virtual int inplace_input(size_t /*output*/) const { return -1; }
  // Output 0 is input 0's bytes unchanged under other dims (Reshape and its
  // kin): the executor may give both one buffer even while the input is read
  // after this node (no copy), and the kernel then does nothing. Implies
  // inplace_input(0) == 0.
  virtual bool is_view() const { return false; }
};

// Error unless `init` has attributes, min..max inputs, min..max outputs and
// its first `min_inputs` inputs present. Shared by the kernel families.
Status CheckArity(const KernelInit& init, size_t min_inputs, size_t max_inputs, size_t min_outputs,
                  size_t max_outputs);

using KernelFactory = std::function<StatusOr<std::unique_ptr<Kernel>>(const KernelInit&)>;

struct KernelEntry {
  OpKind op;
  DeviceKind device;
  std::string impl;                 // "reference", "onednn", "cudnn", ...
  int priority = 0;                 // higher wins among entries that accept
  std::vector<DType> dtypes;        // accepted dtype of the op's type input; empty = any
  KernelFactory factory;
  // Optional finer check (rank, attributes); nullptr = accepts all.
  std::function<bool(const KernelInit&)> accepts;
  // Optional: where it returns false the entry is chosen only by name (an
  // explicit impl), not by priority. oneDNN's bf16 kernels on a CPU where
  // bf16 is not faster than fp32 (cpu::CpuInfo::bf16_faster) say so.
  std::function<bool(const KernelInit&)> preferred;
  // The factory also takes fp32 specs with TensorSpec::holds in place of
  // fp16/bf16 ones (storage-only kernels that compute in fp32 anyway, and
  // Cast): the executor then stores such a value widened instead of paying a
  // Cast plus a conversion inside the kernel (executor/plan.h, cast fusion).
  bool takes_widened = false;
  // The factory also takes fp16/bf16 specs where the node has fp32 ones, for
  // the inputs and outputs of its data (BatchNormalization's X/Y, its
  // gradient's dY/X/dX): it widens such an input exactly and rounds such an
  // output once, to nearest even, from the fp32 result it computes anyway.
  // The executor then lets it read a Cast's low source instead of the Cast's
  // fp32 result, or write the low value that a Cast of its output would make:
  // the same bits, without the Cast (executor/plan.h, cast fusion).
  bool fuses_casts = false;
  // Run() takes outputs with data == nullptr and leaves them uncomputed: the
  // executor passes that for an output the graph never reads (a ConvGrad's dX
  // of the first convolution, whose input is data) and allocates nothing for it.
  bool skips_unused_outputs = false;
  // Bit i: the factory also takes input (output) i of rank 4 stored
  // channels-last (TensorSpec::channels_last). The executor then keeps a
  // value channels-last when its producer and all its readers take it so,
  // and the kernels between them skip their layout reorders.
  uint32_t channels_last_inputs = 0, channels_last_outputs = 0;
  // Those inputs and outputs take one layout together: all channels-last or
  // all plain (a tensor whose H * W is 1 reads the same either way).
  bool channels_last_together = false;
};

// `e` for an elementwise kernel that reads its operands as flat arrays: the
// inputs and outputs of the masks may all be channels-last together (their
// bytes are then permuted alike), so the entry declines channels-last
// operands whose dims differ (a broadcast), which would not line up.
KernelEntry ElementwiseChannelsLast(KernelEntry e, uint32_t inputs, uint32_t outputs);

class Registry {
 public:
  // The process-wide registry, with every built-in kernel set registered.
  static Registry& Global();

  void Add(KernelEntry entry);
  bool Supports(OpKind op, DeviceKind device, DType dtype) const;
  // Highest-priority accepting entry; `impl` restricts to one implementation
  // ("reference" in tests that use the reference kernels as the oracle).
  StatusOr<std::unique_ptr<Kernel>> Create(const KernelInit& init, const std::string& impl = "") const;
  // The entry Create would use (same rules and errors), for callers that report the implementation.
  StatusOr<const KernelEntry*> Select(const KernelInit& init, const std::string& impl = "") const;
  std::vector<const KernelEntry*> Entries(OpKind op, DeviceKind device) const;

 private:
  std::vector<KernelEntry> entries_;
};

// The dtype a registry lookup keys on: the op's "type input". Input 0 for
// most ops; Where: input 1; ops without inputs: output 0.
DType KeyDType(const KernelInit& init);

// Explicit registration, one call per kernel set (no static initializers).
void RegisterCpuReferenceKernels(Registry& registry);
void RegisterCpuOneDnnKernels(Registry& registry);
#ifdef AMPTRAIN_WITH_CUDA
void RegisterCudaKernels(Registry& registry);
#endif

}  // namespace amptrain::kernels
