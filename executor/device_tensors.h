// Tensors on a device, for the state that lives across runs (the trainer's
// parameters, statistics and optimizer slots, a session's bound outputs).
//
// A DeviceTensors names a device and the run context whose stream orders its
// copies (the session's, so that copies, kernels and optimizer steps run in
// one order). On a device with host memory (the CPU, or none given) every
// call is what the host code did before the device seam: tensors are plain
// host tensors, an upload is a deep copy, a download shares the buffer.
// Elsewhere a tensor's buffer is device memory (Tensor::OverBuffer): the
// host never reads it, only copies it.
//
//   DeviceTensors dev{session->device(), &session->run_context()};
//   AMP_ASSIGN_OR_RETURN(Tensor w, dev.Upload(host_w));        // device copy
//   AMP_ASSIGN_OR_RETURN(Tensor back, dev.Download(w));        // host copy, synchronised
#pragma once

#include <memory>
#include <vector>

#include "ir/status.h"
#include "ir/tensor.h"
#include "kernels/device.h"

namespace amptrain::executor {

struct DeviceTensors {
  std::shared_ptr<kernels::Device> device;  // null: the host
  const kernels::RunContext* run = nullptr;  // required when !on_host()

  bool on_host() const { return !device || device->host_memory(); }
  kernels::DeviceKind kind() const { return device ? device->kind() : kernels::DeviceKind::kCpu; }

  // A tensor on the device: zero-filled (on the host: Tensor::Zeros).
  StatusOr<ir::Tensor> Zeros(ir::DType dtype, const std::vector<int64_t>& dims) const;
  // A device copy of the host tensor `host` (on the host: a deep copy).
  StatusOr<ir::Tensor> Upload(const ir::Tensor& host) const;
  // `t` on the host: a synchronised copy of a device tensor, or `t` itself
  // (the same buffer) on the host.
  StatusOr<ir::Tensor> Download(const ir::Tensor& t) const;
  // Host `src` into the existing device tensor `dst` (same byte size),
  // ordered on the stream: `src` must stay valid until the next Synchronize.
  Status CopyIn(const ir::Tensor& dst, const ir::Tensor& src) const;
  // Device `src` into the existing host tensor `dst`, synchronised.
  Status CopyOut(const ir::Tensor& dst, const ir::Tensor& src) const;
  // Device to device (same byte size), ordered on the stream.
  Status CopyOnDevice(const ir::Tensor& dst, const ir::Tensor& src) const;
  Status Synchronize() const;
};

}  // namespace amptrain::executor
