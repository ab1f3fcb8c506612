// Mapping between ONNX TensorProto.DataType codes and ir::DType.
//
// Shared by the importer/exporter (tensor and value_info element types) and
// the Cast shape rule (its `to` attribute). Codes amptrain has no DType for
// (strings, uint16, float8, ...) map to kUndefined.
#pragma once

#include <cstdint>
#include <string>

#include "ir/dtype.h"

namespace amptrain::ir {

// FLOAT=1 UINT8=2 INT8=3 INT32=6 INT64=7 BOOL=9 FLOAT16=10 DOUBLE=11 BFLOAT16=16;
// any other code gives kUndefined.
DType DTypeFromOnnx(int64_t onnx_code);
// The TensorProto.DataType code of `t`; 0 (UNDEFINED) for kUndefined.
int32_t OnnxFromDType(DType t);
// "FLOAT4E2M1 (23)": the name of a TensorProto.DataType code as onnx.proto
// spells it (codes up to IR version 14), with the code; "code 99" for others.
// For errors about element types amptrain has no DType for.
std::string OnnxTypeName(int64_t onnx_code);

}  // namespace amptrain::ir
