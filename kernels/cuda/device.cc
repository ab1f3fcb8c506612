// The CUDA Device: cudaMalloc memory counted by the device itself, copies
// and synchronization on the run's stream (kernels/device.h).
#include "kernels/cuda/device.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/device.h"
#include "kernels/kernel.h"

namespace amptrain::kernels {

namespace cuda {

namespace {

// "cudaErrorNoDevice: no CUDA-capable device is detected".
std::string Describe(cudaError_t err) { return StrCat(cudaGetErrorName(err), ": ", cudaGetErrorString(err)); }

std::string GiB(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

// Bytes held by one device's buffers; shared with every buffer's deleter so
// that a buffer may outlive the Device object that made it.
struct Counters {
  std::atomic<size_t> in_use{0}, peak{0};
  void Add(size_t bytes) {
    const size_t now = in_use.fetch_add(bytes) + bytes;
    size_t p = peak.load();
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
  }
};

class CudaDevice final : public Device {
 public:
  CudaDevice(int index, const cudaDeviceProp& prop)
      : index_(index),
        describe_(StrCat("cuda:", index, " (", prop.name, ", sm_", prop.major, prop.minor, ", ",
                         GiB(prop.totalGlobalMem), ")")),
        counters_(std::make_shared<Counters>()) {}

  DeviceKind kind() const override { return DeviceKind::kCuda; }
  int index() const override { return index_; }
  std::string Describe() const override { return describe_; }

  StatusOr<DeviceBuffer> Allocate(size_t bytes) override {
    CUDA_CHECK(cudaSetDevice(index_));
    // At least 256 bytes: an empty tensor still has a distinct non-null
    // address, as on the CPU. cudaMalloc aligns to 256 bytes.
    const size_t size = bytes < 256 ? 256 : bytes;
    void* p = nullptr;
    const cudaError_t err = cudaMalloc(&p, size);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      size_t free_bytes = 0, total = 0;
      cudaMemGetInfo(&free_bytes, &total);
      cudaGetLastError();
      return Status(StatusCode::kOutOfRange,
                    StrCat("out of memory allocating ", bytes, " bytes on ", describe_, ": amptrain holds ",
                           counters_->in_use.load(), " bytes, the device has ", free_bytes, " of ", total, " free"));
    }
    CUDA_CHECK(err);
    counters_->Add(size);
    std::shared_ptr<Counters> counters = counters_;
    return DeviceBuffer(static_cast<std::byte*>(p), [counters, size](std::byte* q) {
      cudaFree(q);  // a deleter cannot report; a failure here means the context is already gone
      counters->in_use.fetch_sub(size);
    });
  }

  Status CopyToDevice(void* dst, const void* host_src, size_t bytes, const RunContext& run) override {
    if (bytes) CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, Stream(run)));
    return Status::Ok();
  }
  Status CopyToHost(void* host_dst, const void* src, size_t bytes, const RunContext& run) override {
    if (bytes) CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, Stream(run)));
    return Status::Ok();
  }
  Status CopyOnDevice(void* dst, const void* src, size_t bytes, const RunContext& run) override {
    if (bytes && dst != src) CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, Stream(run)));
    return Status::Ok();
  }
  Status Synchronize(const RunContext& run) override {
    CUDA_CHECK(cudaStreamSynchronize(Stream(run)));
    return Status::Ok();
  }

  // A stream of its own per context (non-blocking: it does not wait for the
  // legacy default stream). The device keeps it until the process exits:
  // RunContext owns nothing, and process-wide devices are never destroyed,
  // so no stream is destroyed after the CUDA runtime has shut down.
  StatusOr<RunContext> NewRunContext(int threads) override {
    CUDA_CHECK(cudaSetDevice(index_));
    cudaStream_t stream = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    {
      std::lock_guard<std::mutex> lock(mu_);
      streams_.push_back(stream);
    }
    RunContext run;
    run.stream = stream;
    run.threads = threads > 1 ? threads : 1;
    return run;
  }

  size_t memory_in_use() const override { return counters_->in_use.load(); }
  size_t peak_memory() const override { return counters_->peak.load(); }

 private:
  static cudaStream_t Stream(const RunContext& run) { return static_cast<cudaStream_t>(run.stream); }

  const int index_;
  const std::string describe_;
  std::shared_ptr<Counters> counters_;
  std::mutex mu_;
  std::vector<cudaStream_t> streams_;
};

}  // namespace

StatusOr<DeviceInfo> QueryDevices() {
  DeviceInfo info;
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver) {
    cudaGetLastError();  // clear the sticky error
    return info;
  }
  if (err != cudaSuccess) return Internal("cudaGetDeviceCount failed: ", cudaGetErrorString(err));
  info.count = count;
  if (count > 0) {
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    info.name = prop.name;
    info.major = prop.major;
    info.minor = prop.minor;
    info.memory_bytes = prop.totalGlobalMem;
  }
  return info;
}

std::string NoDeviceReason() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    // The runtime says "driver version is insufficient" also where there is
    // no driver at all; say which.
    if (err == cudaErrorInsufficientDriver) {
      if (void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
        dlclose(lib);
      } else {
        return "no CUDA device: no NVIDIA driver on this machine (libcuda.so.1 not found)";
      }
    }
    return StrCat("no CUDA device: ", Describe(err));
  }
  if (count == 0) return "no CUDA device: the CUDA runtime sees 0 devices";
  return "";
}

StatusOr<std::shared_ptr<Device>> OpenCudaDevice(int index) {
  const std::string no_device = NoDeviceReason();
  if (!no_device.empty()) return FailedPrecondition(no_device);
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  if (index < 0 || index >= count)
    return OutOfRange("device cuda:", index, " does not exist: this machine has ", count, " CUDA device",
                      count == 1 ? "" : "s", " (cuda:0", count > 1 ? StrCat("..cuda:", count - 1) : "", ")");
  // One Device per GPU for the whole process, so that its memory counters
  // cover every buffer the process holds there. Never destroyed (see above).
  static std::mutex mu;
  static auto* devices = new std::vector<std::shared_ptr<Device>>();
  std::lock_guard<std::mutex> lock(mu);
  if (devices->size() < static_cast<size_t>(count)) devices->resize(static_cast<size_t>(count));
  std::shared_ptr<Device>& dev = (*devices)[static_cast<size_t>(index)];
  if (!dev) {
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
    CUDA_CHECK(cudaSetDevice(index));
    CUDA_CHECK(cudaFree(nullptr));  // creates the context now: a broken driver fails here, not in a kernel
    dev = std::make_shared<CudaDevice>(index, prop);
  }
  return dev;
}

}  // namespace cuda

}  // namespace amptrain::kernels
