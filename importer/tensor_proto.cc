#include "importer/tensor_proto.h"

#include <onnx/onnx_pb.h>

#include <climits>
#include <cstring>
#include <fstream>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "importer/import_internal.h"
#include "ir/file_io.h"
#include "ir/onnx_dtype.h"

namespace amptrain::importer {

namespace {

constexpr int kMaxTensorRank = 64;

std::string Label(const onnx::TensorProto& proto) { return StrCat("tensor '", proto.name(), "'"); }

// Converts the int32_data field into the tensor's storage, checking ranges.
Status FillFromInt32(const onnx::TensorProto& proto, ir::Tensor& t) {
  const auto& src = proto.int32_data();
  auto check = [&](int64_t lo, int64_t hi) -> Status {
    for (int i = 0; i < src.size(); ++i)
      if (src[i] < lo || src[i] > hi)
        return InvalidArgument(Label(proto), ": int32_data[", i, "] = ", src[i], " does not fit ",
                               ir::DTypeName(t.dtype()));
    return Status::Ok();
  };
  switch (t.dtype()) {
    case ir::DType::kInt32:
      std::memcpy(t.raw(), src.data(), t.nbytes());
      return Status::Ok();
    case ir::DType::kInt8:
      AMP_RETURN_IF_ERROR(check(INT8_MIN, INT8_MAX));
      for (int i = 0; i < src.size(); ++i) t.data<int8_t>()[i] = static_cast<int8_t>(src[i]);
      return Status::Ok();
    case ir::DType::kUInt8:
    case ir::DType::kBool:
      AMP_RETURN_IF_ERROR(check(0, t.dtype() == ir::DType::kBool ? 1 : UINT8_MAX));
      for (int i = 0; i < src.size(); ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(src[i]);
      return Status::Ok();
    case ir::DType::kFloat16:
    case ir::DType::kBFloat16:
      AMP_RETURN_IF_ERROR(check(0, UINT16_MAX));
      for (int i = 0; i < src.size(); ++i) t.data<uint16_t>()[i] = static_cast<uint16_t>(src[i]);
      return Status::Ok();
    default:
      return Internal(Label(proto), ": int32_data used for ", ir::DTypeName(t.dtype()));
  }
}

// Number of elements in the typed field that holds `dtype`'s data.
int64_t TypedCount(const onnx::TensorProto& proto, ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kFloat32: return proto.float_data_size();
    case ir::DType::kFloat64: return proto.double_data_size();
    case ir::DType::kInt64: return proto.int64_data_size();
    default: return proto.int32_data_size();
  }
}

bool HasAnyTypedData(const onnx::TensorProto& proto) {
  return proto.float_data_size() || proto.double_data_size() || proto.int64_data_size() ||
         proto.int32_data_size() || proto.string_data_size() || proto.uint64_data_size();
}

}  // namespace

StatusOr<ir::Tensor> TensorFromProto(const onnx::TensorProto& proto, const std::string& model_dir) {
  ir::DType dtype = ir::DTypeFromOnnx(proto.data_type());
  if (dtype == ir::DType::kUndefined)
    return Unimplemented(Label(proto), ": ONNX element type ", ir::OnnxTypeName(proto.data_type()), " is not supported");
  if (proto.has_segment()) return Unimplemented(Label(proto), ": segmented tensors are not supported");
  if (proto.dims_size() > kMaxTensorRank)
    return InvalidArgument(Label(proto), ": rank ", proto.dims_size(), " exceeds ", kMaxTensorRank);
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] < 0) return InvalidArgument(Label(proto), ": dim ", i, " is negative (", dims[i], ")");
  int64_t n = 0;
  if (!ir::CheckedNumElements(dims, &n))
    return InvalidArgument(Label(proto), ": element count of dims overflows int64");
  const size_t es = ir::DTypeSize(dtype);
  if (n > INT64_MAX / static_cast<int64_t>(es))
    return InvalidArgument(Label(proto), ": byte size of ", n, " elements overflows");
  const size_t nbytes = static_cast<size_t>(n) * es;

  const bool external = proto.data_location() == onnx::TensorProto::EXTERNAL;
  const int sources = int{external} + int{proto.has_raw_data()} + int{HasAnyTypedData(proto)};
  if (sources > 1) return InvalidArgument(Label(proto), ": has more than one of raw_data, typed data, external data");
  if (external) {
    if (model_dir.empty()) return InvalidArgument(Label(proto), ": external data is not allowed here");
  } else if (proto.has_raw_data()) {
    if (proto.raw_data().size() != nbytes)
      return InvalidArgument(Label(proto), ": raw_data has ", proto.raw_data().size(), " bytes, expected ", nbytes,
                             " (", n, " x ", ir::DTypeName(dtype), ")");
  } else if (TypedCount(proto, dtype) != n) {
    return InvalidArgument(Label(proto), ": typed data has ", TypedCount(proto, dtype), " elements, expected ", n);
  }

  if (external) return ReadExternalData(proto, model_dir, dtype, std::move(dims), nbytes);
  AMP_ASSIGN_OR_RETURN(ir::Tensor t, ir::Tensor::Zeros(dtype, std::move(dims)));
  if (n == 0) return t;
  if (proto.has_raw_data()) {
    std::memcpy(t.raw(), proto.raw_data().data(), nbytes);  // little-endian host, as ONNX stores it
    return t;
  }
  switch (dtype) {
    case ir::DType::kFloat32: std::memcpy(t.raw(), proto.float_data().data(), nbytes); break;
    case ir::DType::kFloat64: std::memcpy(t.raw(), proto.double_data().data(), nbytes); break;
    case ir::DType::kInt64: std::memcpy(t.raw(), proto.int64_data().data(), nbytes); break;
    default: AMP_RETURN_IF_ERROR(FillFromInt32(proto, t)); break;
  }
  return t;
}

void TensorToProto(const ir::Tensor& tensor, const std::string& name, onnx::TensorProto* proto) {
  proto->Clear();
  proto->set_name(name);
  proto->set_data_type(ir::OnnxFromDType(tensor.dtype()));
  for (int64_t d : tensor.dims()) proto->add_dims(d);
  proto->set_raw_data(static_cast<const char*>(tensor.raw()), tensor.nbytes());
}

StatusOr<ir::Tensor> ReadTensorProtoFile(const std::string& path) {
  AMP_ASSIGN_OR_RETURN(std::string bytes, detail::ReadWholeFile(path, "tensor"));
  google::protobuf::io::ArrayInputStream stream(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetTotalBytesLimit(INT_MAX);
  onnx::TensorProto proto;
  if (!proto.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    return InvalidArgument("tensor file '", path, "' is not a valid TensorProto");
  auto t = TensorFromProto(proto, detail::ParentDir(path));
  if (!t.ok()) return t.status().WithContext(StrCat("in '", path, "'"));
  return t;
}

namespace detail {

StatusOr<std::string> ReadWholeFile(const std::string& path, const char* what) {
  // Regular files only, opened without blocking: a FIFO as the model hung
  // forever and a folder was reported as "exceeds 2 GiB" (issue 9, F5).
  return ir::ReadRegularFile(path, INT_MAX, StrCat(what, " file"));
}

std::string ParentDir(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace detail

}  // namespace amptrain::importer
