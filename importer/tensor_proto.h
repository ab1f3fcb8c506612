// TensorProto <-> ir::Tensor, with the checks untrusted files need.
//
// Reading accepts raw_data (little-endian), the typed fields of the ONNX spec
// (float_data; int32_data for int32/int8/uint8/bool and for float16/bfloat16
// bit patterns; int64_data; double_data) and external data (data_location
// EXTERNAL, keys location/offset/length) resolved only inside `model_dir`.
// Every size is checked before anything is allocated: dims >= 0, the element
// count and byte size must not overflow, raw_data / typed-field counts /
// external lengths must match the element count exactly.
//
// Writing always uses raw_data, little-endian.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ir/status.h"
#include "ir/tensor.h"

namespace onnx {
class TensorProto;
}

namespace amptrain::importer {

// A serialized TensorProto file (ONNX backend test input_K.pb/output_K.pb).
// External data in such a file is resolved against the file's folder.
StatusOr<ir::Tensor> ReadTensorProtoFile(const std::string& path);

// The payload of `proto`. `model_dir` is the folder external data is
// resolved against; "" forbids external data. Errors name the tensor.
StatusOr<ir::Tensor> TensorFromProto(const onnx::TensorProto& proto, const std::string& model_dir);

// Fills `proto` (name, data_type, dims, raw_data); clears what was there.
void TensorToProto(const ir::Tensor& tensor, const std::string& name, onnx::TensorProto* proto);

// The tensor (`dtype`, `dims`, `nbytes` bytes) held in `proto`'s external
// data. The location must be relative, without ".." components or symlinks,
// and stay under the canonical `model_dir`; offset/length are checked against
// the file size and length (when given) must equal `nbytes`. The tensor is
// allocated only after those checks, so a model of a few bytes cannot ask for
// terabytes. Defined in external_data.cc.
StatusOr<ir::Tensor> ReadExternalData(const onnx::TensorProto& proto, const std::string& model_dir, ir::DType dtype,
                                      std::vector<int64_t> dims, size_t nbytes);

}  // namespace amptrain::importer
