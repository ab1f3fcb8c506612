#include "ir/dtype.h"

namespace amptrain::ir {

size_t DTypeSize(DType t) {
  switch (t) {
    case DType::kFloat32: case DType::kInt32: return 4;
    case DType::kFloat16: case DType::kBFloat16: return 2;
    case DType::kFloat64: case DType::kInt64: return 8;
    case DType::kInt8: case DType::kUInt8: case DType::kBool: return 1;
    case DType::kUndefined: return 0;
  }
  return 0;
}

std::string_view DTypeName(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat64: return "float64";
    case DType::kInt64: return "int64";
    case DType::kInt32: return "int32";
    case DType::kInt8: return "int8";
    case DType::kUInt8: return "uint8";
    case DType::kBool: return "bool";
    case DType::kUndefined: return "undefined";
  }
  return "undefined";
}

bool IsFloat(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16 || t == DType::kFloat64;
}
bool IsLowPrecision(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }
bool IsInteger(DType t) {
  return t == DType::kInt64 || t == DType::kInt32 || t == DType::kInt8 || t == DType::kUInt8;
}

DType ParseDType(std::string_view n) {
  if (n == "float32" || n == "fp32" || n == "float") return DType::kFloat32;
  if (n == "float16" || n == "fp16" || n == "half") return DType::kFloat16;
  if (n == "bfloat16" || n == "bf16") return DType::kBFloat16;
  if (n == "float64" || n == "fp64" || n == "double") return DType::kFloat64;
  if (n == "int64") return DType::kInt64;
  if (n == "int32") return DType::kInt32;
  if (n == "int8") return DType::kInt8;
  if (n == "uint8") return DType::kUInt8;
  if (n == "bool") return DType::kBool;
  return DType::kUndefined;
}

}  // namespace amptrain::ir
