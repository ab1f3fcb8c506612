// Tensor: an owned, 64-byte aligned, contiguous (row-major) host buffer with
// a dtype and static dims. Copies share the buffer (like a shared_ptr); use
// Clone() for a deep copy. TensorView is the non-owning view kernels get.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "ir/dtype.h"
#include "ir/shape.h"
#include "ir/status.h"

namespace amptrain::ir {

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor. Fails on a negative dim or a size that overflows.
  static StatusOr<Tensor> Zeros(DType dtype, std::vector<int64_t> dims);
  // A tensor over `buffer`, which must be 64-byte aligned and hold at least
  // NBytes(dtype, dims); its contents stay as they are (buffer pools).
  static StatusOr<Tensor> OverBuffer(DType dtype, std::vector<int64_t> dims, std::shared_ptr<std::byte> buffer);
  // The bytes a tensor of `dtype` and `dims` holds; fails like Zeros.
  static StatusOr<size_t> NBytes(DType dtype, const std::vector<int64_t>& dims);
  // Scalar or 1-D helpers for small constants (shape arithmetic, tests).
  static Tensor Scalar(float v);
  static Tensor Int64s(const std::vector<int64_t>& values, std::vector<int64_t> dims);
  static Tensor Floats(const std::vector<float>& values, std::vector<int64_t> dims);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  size_t rank() const { return dims_.size(); }
  int64_t num_elements() const { return num_elements_; }
  size_t nbytes() const { return static_cast<size_t>(num_elements_) * DTypeSize(dtype_); }
  bool empty() const { return dtype_ == DType::kUndefined; }

  void* raw() { return buffer_.get(); }
  const void* raw() const { return buffer_.get(); }
  template <class T> T* data() { return static_cast<T*>(raw()); }
  template <class T> const T* data() const { return static_cast<const T*>(raw()); }

  Tensor Clone() const;
  // No other tensor shares this one's buffer: a caller may write it without
  // changing anyone else's values (buffers reused from batch to batch).
  bool sole_owner() const { return buffer_ && buffer_.use_count() == 1; }
  // Same buffer, new dims with the same element count.
  StatusOr<Tensor> Reshaped(std::vector<int64_t> dims) const;
  // Element i converted to double / int64 (any dtype); for small constants.
  double GetAsDouble(int64_t i) const;
  int64_t GetAsInt64(int64_t i) const;
  std::vector<int64_t> ToInt64Vector() const;
  // Same dtype, dims and bytes.
  bool operator==(const Tensor& o) const;

 private:
  DType dtype_ = DType::kUndefined;
  std::vector<int64_t> dims_;
  int64_t num_elements_ = 0;
  std::shared_ptr<std::byte> buffer_;
};

// Non-owning view handed to kernels. Contiguous row-major.
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::kUndefined;
  std::vector<int64_t> dims;

  int64_t num_elements() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
  size_t nbytes() const { return static_cast<size_t>(num_elements()) * DTypeSize(dtype); }
  template <class T> T* as() const { return static_cast<T*>(data); }
  static TensorView Of(Tensor& t) { return TensorView{t.raw(), t.dtype(), t.dims()}; }
  static TensorView Of(const Tensor& t) { return TensorView{const_cast<void*>(t.raw()), t.dtype(), t.dims()}; }
};

// Allocation helper: 64-byte aligned bytes, zeroed. Returns nullptr for 0 bytes.
std::shared_ptr<std::byte> AllocateAligned(size_t nbytes);

}  // namespace amptrain::ir
