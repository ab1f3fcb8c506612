#include "ir/tensor.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

namespace amptrain::ir {

namespace {

// Buffers from this size on are mapped pages of their own, not malloc's. glibc
// raises its mmap threshold to the size of every mapped chunk freed (up to
// 32 MiB), after which a tensor of a few MiB comes from the heap and stays
// resident when freed: the evaluation's widened weights and arena, freed
// before training resumes, kept 45 MB (ResNet-18 at O3) in the peak RSS of
// every later step. Mapped pages go back when freed, arrive zeroed (no memset
// pass), and those an arena never touches (its rounding) never become resident.
// Under AddressSanitizer every buffer comes from malloc, which it guards
// (mapped pages have no redzones to catch an overrun).
#if defined(__SANITIZE_ADDRESS__)
#define AMP_MAP_LARGE_TENSORS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AMP_MAP_LARGE_TENSORS 0
#endif
#endif
#ifndef AMP_MAP_LARGE_TENSORS
#define AMP_MAP_LARGE_TENSORS 1
#endif
constexpr size_t kMappedBytes = AMP_MAP_LARGE_TENSORS ? size_t{1} << 20 : ~size_t{0};

}  // namespace

std::shared_ptr<std::byte> AllocateAligned(size_t nbytes) {
  size_t rounded = (nbytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;  // keep data() non-null for empty tensors
  if (rounded >= kMappedBytes) {
    void* m = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return nullptr;
    return std::shared_ptr<std::byte>(static_cast<std::byte*>(m), [rounded](std::byte* q) { munmap(q, rounded); });
  }
  void* p = std::aligned_alloc(64, rounded);
  if (!p) return nullptr;
  std::memset(p, 0, rounded);
  return std::shared_ptr<std::byte>(static_cast<std::byte*>(p), [](std::byte* q) { std::free(q); });
}

namespace {

// The element count of `dims`, or why no tensor of `dtype` can have them.
StatusOr<int64_t> CheckedCount(DType dtype, const std::vector<int64_t>& dims) {
  int64_t n = 0;
  if (!CheckedNumElements(dims, &n)) return InvalidArgument("tensor dims are negative or their product overflows");
  if (dtype == DType::kUndefined) return InvalidArgument("tensor dtype is undefined");
  if (n > static_cast<int64_t>((int64_t{1} << 46) / static_cast<int64_t>(DTypeSize(dtype))))
    return InvalidArgument("tensor of ", n, " elements is too large");
  return n;
}

}  // namespace

StatusOr<size_t> Tensor::NBytes(DType dtype, const std::vector<int64_t>& dims) {
  AMP_ASSIGN_OR_RETURN(const int64_t n, CheckedCount(dtype, dims));
  return static_cast<size_t>(n) * DTypeSize(dtype);
}

StatusOr<Tensor> Tensor::OverBuffer(DType dtype, std::vector<int64_t> dims, std::shared_ptr<std::byte> buffer) {
  AMP_ASSIGN_OR_RETURN(const int64_t n, CheckedCount(dtype, dims));
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.num_elements_ = n;
  t.buffer_ = std::move(buffer);
  return t;
}

StatusOr<Tensor> Tensor::Zeros(DType dtype, std::vector<int64_t> dims) {
  AMP_ASSIGN_OR_RETURN(const size_t bytes, NBytes(dtype, dims));
  std::shared_ptr<std::byte> buffer = AllocateAligned(bytes);
  if (!buffer) return Status(StatusCode::kOutOfRange, StrCat("out of memory allocating ", bytes, " bytes"));
  return OverBuffer(dtype, std::move(dims), std::move(buffer));
}

Tensor Tensor::Scalar(float v) { return Floats({v}, {}); }

Tensor Tensor::Int64s(const std::vector<int64_t>& values, std::vector<int64_t> dims) {
  Tensor t = *Zeros(DType::kInt64, std::move(dims));
  if (!values.empty()) std::memcpy(t.raw(), values.data(), values.size() * sizeof(int64_t));  // an empty vector's data() may be null
  return t;
}

Tensor Tensor::Floats(const std::vector<float>& values, std::vector<int64_t> dims) {
  Tensor t = *Zeros(DType::kFloat32, std::move(dims));
  if (!values.empty()) std::memcpy(t.raw(), values.data(), values.size() * sizeof(float));
  return t;
}

Tensor Tensor::Clone() const {
  if (empty()) return Tensor();
  Tensor t = *Zeros(dtype_, dims_);
  std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

StatusOr<Tensor> Tensor::Reshaped(std::vector<int64_t> dims) const {
  int64_t n = 0;
  if (!CheckedNumElements(dims, &n) || n != num_elements_)
    return InvalidArgument("cannot reshape ", num_elements_, " elements to a different element count");
  Tensor t = *this;
  t.dims_ = std::move(dims);
  return t;
}

double Tensor::GetAsDouble(int64_t i) const {
  switch (dtype_) {
    case DType::kFloat32: return data<float>()[i];
    case DType::kFloat16: return HalfToFloat(data<uint16_t>()[i]);
    case DType::kBFloat16: return BFloat16ToFloat(data<uint16_t>()[i]);
    case DType::kFloat64: return data<double>()[i];
    case DType::kInt64: return static_cast<double>(data<int64_t>()[i]);
    case DType::kInt32: return data<int32_t>()[i];
    case DType::kInt8: return data<int8_t>()[i];
    case DType::kUInt8: return data<uint8_t>()[i];
    case DType::kBool: return data<uint8_t>()[i] ? 1.0 : 0.0;
    case DType::kUndefined: return 0.0;
  }
  return 0.0;
}

int64_t Tensor::GetAsInt64(int64_t i) const {
  switch (dtype_) {
    case DType::kInt64: return data<int64_t>()[i];
    case DType::kInt32: return data<int32_t>()[i];
    case DType::kInt8: return data<int8_t>()[i];
    case DType::kUInt8: case DType::kBool: return data<uint8_t>()[i];
    default: return static_cast<int64_t>(GetAsDouble(i));
  }
}

bool Tensor::operator==(const Tensor& o) const {
  if (dtype_ != o.dtype_ || dims_ != o.dims_) return false;
  return nbytes() == 0 || std::memcmp(raw(), o.raw(), nbytes()) == 0;
}

std::vector<int64_t> Tensor::ToInt64Vector() const {
  std::vector<int64_t> v(static_cast<size_t>(num_elements_));
  for (int64_t i = 0; i < num_elements_; ++i) v[static_cast<size_t>(i)] = GetAsInt64(i);
  return v;
}

}  // namespace amptrain::ir
