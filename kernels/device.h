// The device seam: where a plan's buffers live and how its kernels are driven.
//
// A Device owns memory and ordering for one processor: the host CPU (device
// memory is host memory, copies are memcpy, everything is synchronous) or
// one CUDA GPU (cudaMalloc memory, copies and kernels ordered on a stream).
// The executor allocates a plan's arena, its uploaded constants and the
// session's persistent buffers through it, and gives every kernel call a
// RunContext: the stream, the workspace and the thread count of this run.
//
//   AMP_ASSIGN_OR_RETURN(std::shared_ptr<Device> dev, OpenDevice(ParseDeviceSpec("cuda:0")));
//   AMP_ASSIGN_OR_RETURN(DeviceBuffer buf, dev->Allocate(bytes));
//   AMP_RETURN_IF_ERROR(dev->CopyToDevice(buf.get(), host, bytes, run));
//   ... kernels run with KernelContext::run = &run ...
//   AMP_RETURN_IF_ERROR(dev->Synchronize(run));
//
// Kernels never allocate: what they need beyond their inputs and outputs is
// Kernel::scratch_bytes() (from the arena) or RunContext::workspace.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "ir/status.h"

namespace amptrain::kernels {

enum class DeviceKind { kCpu, kCuda };
const char* DeviceKindName(DeviceKind d);

// "cpu", "cuda" (index 0) or "cuda:N", as --device takes it.
struct DeviceSpec {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;
  std::string ToString() const;  // "cpu", "cuda:0"
};
StatusOr<DeviceSpec> ParseDeviceSpec(const std::string& text);

// What one run (one training step, one inference call) gives every kernel.
struct RunContext {
  void* stream = nullptr;          // cudaStream_t on CUDA; nullptr on the CPU
  std::byte* workspace = nullptr;  // device memory shared by the run's kernels, one at a time
  size_t workspace_bytes = 0;
  int threads = 1;                 // CPU threads a kernel may use (>= 1)
};

// Device memory: a shared pointer whose deleter frees it on its device.
using DeviceBuffer = std::shared_ptr<std::byte>;

class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceKind kind() const = 0;
  virtual int index() const = 0;
  // Whether the host reads and writes this device's memory directly (the
  // CPU). When not, the executor reaches it only through the copies below.
  virtual bool host_memory() const { return kind() == DeviceKind::kCpu; }
  // "cpu (AMD EPYC)", "cuda:0 (NVIDIA H200, sm_90, 139.8 GiB)".
  virtual std::string Describe() const = 0;

  // `bytes` of uninitialised device memory, 256-byte aligned; a clear
  // out-of-memory error naming the size and the device when it fails.
  virtual StatusOr<DeviceBuffer> Allocate(size_t bytes) = 0;
  // Copies ordered on `run`'s stream (synchronous on the CPU). A host pointer
  // must stay valid until the next Synchronize.
  virtual Status CopyToDevice(void* dst, const void* host_src, size_t bytes, const RunContext& run) = 0;
  virtual Status CopyToHost(void* host_dst, const void* src, size_t bytes, const RunContext& run) = 0;
  virtual Status CopyOnDevice(void* dst, const void* src, size_t bytes, const RunContext& run) = 0;
  // Waits until everything queued on `run`'s stream has finished.
  virtual Status Synchronize(const RunContext& run) = 0;
  // A context for runs on this device with `threads` host threads: on CUDA
  // a stream of its own, which lives as long as the device (a session makes
  // one at its creation); no workspace yet.
  virtual StatusOr<RunContext> NewRunContext(int threads) = 0;
  // Bytes this process holds on the device now and at most so far (the
  // CPU: resident set, and its peak).
  virtual size_t memory_in_use() const = 0;
  virtual size_t peak_memory() const = 0;
};

// The host CPU. Process-wide, never fails.
std::shared_ptr<Device> CpuDevice();

// The CPU treated as a device with memory of its own (host_memory() false):
// its memory is host memory, but the executor and the trainer reach it only
// through the copies, as they do a GPU's, with the CPU kernels. Tests run the
// device code paths with it and compare them bitwise with the host's.
std::shared_ptr<Device> StagedCpuDevice();

// The device `spec` names. CUDA: an error when this build has no CUDA backend
// ("built without the CUDA backend"), when no GPU is visible ("no CUDA
// device: ..."), or when the index is out of range (naming the count).
StatusOr<std::shared_ptr<Device>> OpenDevice(const DeviceSpec& spec);

#ifdef AMPTRAIN_WITH_CUDA
namespace cuda {
// Implemented in kernels/cuda/device.cc.
StatusOr<std::shared_ptr<Device>> OpenCudaDevice(int index);
}  // namespace cuda
#endif

}  // namespace amptrain::kernels
