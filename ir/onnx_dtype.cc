#include "ir/onnx_dtype.h"

namespace amptrain::ir {

DType DTypeFromOnnx(int64_t onnx_code) {
  switch (onnx_code) {
    case 1: return DType::kFloat32;
    case 2: return DType::kUInt8;
    case 3: return DType::kInt8;
    case 6: return DType::kInt32;
    case 7: return DType::kInt64;
    case 9: return DType::kBool;
    case 10: return DType::kFloat16;
    case 11: return DType::kFloat64;
    case 16: return DType::kBFloat16;
    default: return DType::kUndefined;
  }
}

int32_t OnnxFromDType(DType t) {
  switch (t) {
    case DType::kFloat32: return 1;
    case DType::kUInt8: return 2;
    case DType::kInt8: return 3;
    case DType::kInt32: return 6;
    case DType::kInt64: return 7;
    case DType::kBool: return 9;
    case DType::kFloat16: return 10;
    case DType::kFloat64: return 11;
    case DType::kBFloat16: return 16;
    case DType::kUndefined: return 0;
  }
  return 0;
}

std::string OnnxTypeName(int64_t onnx_code) {
  static constexpr const char* kNames[] = {
      "UNDEFINED", "FLOAT",          "UINT8",        "INT8",           "UINT16",        "INT16",      "INT32",
      "INT64",     "STRING",         "BOOL",         "FLOAT16",        "DOUBLE",        "UINT32",     "UINT64",
      "COMPLEX64", "COMPLEX128",     "BFLOAT16",     "FLOAT8E4M3FN",   "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
      "UINT4",     "INT4",           "FLOAT4E2M1",   "FLOAT8E8M0",     "UINT2",         "INT2",       "FLOAT6E2M3",
      "FLOAT6E3M2"};
  constexpr int64_t kCount = static_cast<int64_t>(sizeof(kNames) / sizeof(kNames[0]));
  if (onnx_code < 0 || onnx_code >= kCount) return "code " + std::to_string(onnx_code);
  return std::string(kNames[onnx_code]) + " (" + std::to_string(onnx_code) + ")";
}

}  // namespace amptrain::ir
