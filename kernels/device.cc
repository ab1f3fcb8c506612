#include "kernels/device.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "ir/tensor.h"
#include "kernels/cpu/cpu_info.h"

namespace amptrain::kernels {

const char* DeviceKindName(DeviceKind d) { return d == DeviceKind::kCpu ? "cpu" : "cuda"; }

std::string DeviceSpec::ToString() const {
  return kind == DeviceKind::kCpu ? "cpu" : StrCat("cuda:", index);
}

StatusOr<DeviceSpec> ParseDeviceSpec(const std::string& text) {
  DeviceSpec spec;
  if (text == "cpu") return spec;
  spec.kind = DeviceKind::kCuda;
  if (text == "cuda") return spec;
  if (text.rfind("cuda:", 0) == 0 && text.size() > 5 && text.size() <= 8 &&
      text.find_first_not_of("0123456789", 5) == std::string::npos) {
    spec.index = std::stoi(text.substr(5));
    return spec;
  }
  return InvalidArgument("unknown device '", text, "': expected cpu, cuda or cuda:N");
}

namespace {

class HostDevice : public Device {
 public:
  DeviceKind kind() const override { return DeviceKind::kCpu; }
  int index() const override { return 0; }
  std::string Describe() const override { return StrCat("cpu (", cpu::Cpu().model, ")"); }

  StatusOr<DeviceBuffer> Allocate(size_t bytes) override {
    DeviceBuffer p = ir::AllocateAligned(bytes);
    if (!p && bytes > 0)
      return Status(StatusCode::kOutOfRange, StrCat("out of memory allocating ", bytes, " bytes on the cpu"));
    return p;
  }
  Status CopyToDevice(void* dst, const void* src, size_t bytes, const RunContext&) override {
    if (bytes) std::memcpy(dst, src, bytes);
    return Status::Ok();
  }
  Status CopyToHost(void* dst, const void* src, size_t bytes, const RunContext&) override {
    if (bytes) std::memcpy(dst, src, bytes);
    return Status::Ok();
  }
  Status CopyOnDevice(void* dst, const void* src, size_t bytes, const RunContext&) override {
    if (bytes && dst != src) std::memmove(dst, src, bytes);
    return Status::Ok();
  }
  Status Synchronize(const RunContext&) override { return Status::Ok(); }
  StatusOr<RunContext> NewRunContext(int threads) override {
    RunContext run;
    run.threads = threads > 1 ? threads : 1;
    return run;
  }
  size_t memory_in_use() const override {
    long pages = 0, resident = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
      std::fclose(f);
    }
    return static_cast<size_t>(resident) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
  }
  size_t peak_memory() const override {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<size_t>(u.ru_maxrss) * 1024;
  }
};

class StagedHostDevice final : public HostDevice {
 public:
  bool host_memory() const override { return false; }
  std::string Describe() const override { return StrCat("cpu (", cpu::Cpu().model, "; staged as a device)"); }
};

}  // namespace

std::shared_ptr<Device> CpuDevice() {
  static const std::shared_ptr<Device> cpu = std::make_shared<HostDevice>();
  return cpu;
}

std::shared_ptr<Device> StagedCpuDevice() {
  static const std::shared_ptr<Device> staged = std::make_shared<StagedHostDevice>();
  return staged;
}

StatusOr<std::shared_ptr<Device>> OpenDevice(const DeviceSpec& spec) {
  if (spec.kind == DeviceKind::kCpu) return CpuDevice();
#ifdef AMPTRAIN_WITH_CUDA
  return cuda::OpenCudaDevice(spec.index);
#else
  return Unimplemented("device ", spec.ToString(),
                       ": this amptrain was built without the CUDA backend (configure with -DAMPTRAIN_CUDA=ON where "
                       "/usr/local/cuda has nvcc, cuDNN and cuBLAS)");
#endif
}

}  // namespace amptrain::kernels
