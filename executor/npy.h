// NumPy .npy files: the tensor exchange format of the CLI and the tests.
//
// Reading accepts format versions 1.0, 2.0 and 3.0, C order, little-endian
// (or byte-order-free) dtypes <f4 <f2 <f8 <i8 <i4 |i1 |u1 |b1 (i1/u1/b1 are
// also accepted with '<' or '='). The header is validated: magic, version,
// length, exactly the keys descr/fortran_order/shape, shape entries ints >= 0
// whose product does not overflow, and the data length must equal the size
// the header promises. Every problem is a Status naming the file.
//
// Writing uses version 1.0 (2.0 when the header does not fit in 64 KiB),
// pads the header to 64 bytes and writes atomically (temp file, fsync,
// rename). bfloat16 is not a NumPy dtype: bf16 tensors are written as
// float32 (exactly representable) with a comment in the header saying so.
#pragma once

#include <string>

#include "ir/status.h"
#include "ir/tensor.h"

namespace amptrain::executor {

StatusOr<ir::Tensor> ReadNpy(const std::string& path);
// Parses the bytes of a .npy file; `label` names it in errors.
StatusOr<ir::Tensor> ParseNpy(const std::string& bytes, const std::string& label);

Status WriteNpy(const std::string& path, const ir::Tensor& tensor);
// The bytes WriteNpy writes.
StatusOr<std::string> SerializeNpy(const ir::Tensor& tensor);

}  // namespace amptrain::executor
