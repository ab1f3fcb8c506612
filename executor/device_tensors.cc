#include "executor/device_tensors.h"

#include <algorithm>
#include <cstring>

namespace amptrain::executor {

using ir::Tensor;

namespace {

Status SameBytes(const Tensor& dst, const Tensor& src, const char* what) {
  if (dst.nbytes() != src.nbytes())
    return Internal(what, ": ", dst.nbytes(), " bytes of destination for ", src.nbytes(), " bytes of source");
  return Status::Ok();
}

// On the host every copy is a memmove (a no-op onto itself).
void HostCopy(const Tensor& dst, const Tensor& src) {
  if (dst.raw() != src.raw() && src.nbytes()) std::memmove(const_cast<void*>(dst.raw()), src.raw(), src.nbytes());
}

}  // namespace

StatusOr<Tensor> DeviceTensors::Zeros(ir::DType dtype, const std::vector<int64_t>& dims) const {
  if (on_host()) return Tensor::Zeros(dtype, dims);
  AMP_ASSIGN_OR_RETURN(Tensor zeros, Tensor::Zeros(dtype, dims));
  return Upload(zeros);
}

StatusOr<Tensor> DeviceTensors::Upload(const Tensor& host) const {
  if (on_host()) return host.Clone();
  AMP_ASSIGN_OR_RETURN(kernels::DeviceBuffer buffer, device->Allocate(std::max<size_t>(host.nbytes(), 1)));
  AMP_ASSIGN_OR_RETURN(Tensor t, Tensor::OverBuffer(host.dtype(), host.dims(), std::move(buffer)));
  AMP_RETURN_IF_ERROR(device->CopyToDevice(t.raw(), host.raw(), host.nbytes(), *run));
  // `host` may be a temporary of the caller: the copy finishes before it goes.
  AMP_RETURN_IF_ERROR(device->Synchronize(*run));
  return t;
}

StatusOr<Tensor> DeviceTensors::Download(const Tensor& t) const {
  if (on_host()) return t;
  AMP_ASSIGN_OR_RETURN(Tensor host, Tensor::Zeros(t.dtype(), t.dims()));
  AMP_RETURN_IF_ERROR(CopyOut(host, t));
  return host;
}

Status DeviceTensors::CopyIn(const Tensor& dst, const Tensor& src) const {
  AMP_RETURN_IF_ERROR(SameBytes(dst, src, "copy to the device"));
  if (on_host()) {
    HostCopy(dst, src);
    return Status::Ok();
  }
  return device->CopyToDevice(const_cast<void*>(dst.raw()), src.raw(), src.nbytes(), *run);
}

Status DeviceTensors::CopyOut(const Tensor& dst, const Tensor& src) const {
  AMP_RETURN_IF_ERROR(SameBytes(dst, src, "copy to the host"));
  if (on_host()) {
    HostCopy(dst, src);
    return Status::Ok();
  }
  AMP_RETURN_IF_ERROR(device->CopyToHost(const_cast<void*>(dst.raw()), src.raw(), src.nbytes(), *run));
  return device->Synchronize(*run);
}

Status DeviceTensors::CopyOnDevice(const Tensor& dst, const Tensor& src) const {
  AMP_RETURN_IF_ERROR(SameBytes(dst, src, "copy on the device"));
  if (on_host()) {
    HostCopy(dst, src);
    return Status::Ok();
  }
  return device->CopyOnDevice(const_cast<void*>(dst.raw()), src.raw(), src.nbytes(), *run);
}

Status DeviceTensors::Synchronize() const { return on_host() ? Status::Ok() : device->Synchronize(*run); }

}  // namespace amptrain::executor
