// Feature/label pairs stored as .npy files.
#include <algorithm>
#include <cstring>

#include "executor/data/loaders.h"
#include "executor/npy.h"

namespace amptrain::executor::data {

using ir::DType;
using ir::Tensor;

namespace {

StatusOr<Tensor> ToFloat32(const Tensor& t) {
  if (t.dtype() == DType::kFloat32) return t;
  AMP_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(DType::kFloat32, t.dims()));
  float* dst = out.data<float>();
  for (int64_t i = 0; i < t.num_elements(); ++i) dst[i] = static_cast<float>(t.GetAsDouble(i));
  return out;
}

// Integer labels of any width -> int64; the largest label, or -1 when none.
StatusOr<int64_t> MaxLabel(const Tensor& labels, const std::string& file) {
  int64_t max = -1;
  for (int64_t i = 0; i < labels.num_elements(); ++i) {
    int64_t v = labels.GetAsInt64(i);
    if (v < 0) return InvalidArgument("npy: '", file, "' label ", i, " is ", v, ", labels must be >= 0");
    max = std::max(max, v);
  }
  return max;
}

bool IsClassLabel(DType t) { return ir::IsInteger(t); }

// One X/Y pair, validated; num_classes is left to the caller (0 = regression).
StatusOr<Dataset> LoadPair(const std::string& x_path, const std::string& y_path) {
  AMP_ASSIGN_OR_RETURN(Tensor x, ReadNpy(x_path));
  AMP_ASSIGN_OR_RETURN(Tensor y, ReadNpy(y_path));
  if (x.rank() < 2)
    return InvalidArgument("npy: features '", x_path, "' have rank ", x.rank(), ", expected [N, ...] with rank >= 2");
  if (x.dtype() != DType::kFloat32 && x.dtype() != DType::kUInt8 && x.dtype() != DType::kFloat64 &&
      x.dtype() != DType::kFloat16)
    return Unimplemented("npy: features '", x_path, "' are ", ir::DTypeName(x.dtype()),
                         "; expected float32, float64, float16 or uint8");
  if (y.rank() < 1) return InvalidArgument("npy: labels '", y_path, "' are a scalar, expected [N] or [N, ...]");
  if (y.dims()[0] != x.dims()[0])
    return InvalidArgument("npy: '", x_path, "' holds ", x.dims()[0], " samples but '", y_path, "' holds ",
                           y.dims()[0], " labels");
  Dataset ds;
  ds.sample_dims.assign(x.dims().begin() + 1, x.dims().end());
  if (x.dtype() == DType::kUInt8) {
    ds.samples = x;
  } else {
    AMP_ASSIGN_OR_RETURN(ds.samples, ToFloat32(x));
  }
  if (IsClassLabel(y.dtype())) {
    if (y.rank() != 1)
      return InvalidArgument("npy: integer labels '", y_path, "' have rank ", y.rank(), ", expected [N]");
    AMP_ASSIGN_OR_RETURN(ds.labels, Tensor::Zeros(DType::kInt64, y.dims()));
    int64_t* dst = ds.labels.data<int64_t>();
    for (int64_t i = 0; i < y.num_elements(); ++i) dst[i] = y.GetAsInt64(i);
  } else if (ir::IsFloat(y.dtype())) {
    AMP_ASSIGN_OR_RETURN(ds.labels, ToFloat32(y));
  } else {
    return Unimplemented("npy: labels '", y_path, "' are ", ir::DTypeName(y.dtype()),
                         "; expected int64/int32 (classes) or float (regression)");
  }
  return ds;
}

}  // namespace

StatusOr<Dataset> LoadNpyFiles(const std::vector<std::string>& files, const std::string& split) {
  if (files.size() != 2 && files.size() != 4)
    return InvalidArgument("npy: expected 'X.npy,Y.npy' or 'X.npy,Y.npy,X_test.npy,Y_test.npy', got ", files.size(),
                           " file(s)");
  const bool given_split = files.size() == 4;
  const size_t at = given_split && split == "test" ? 2 : 0;
  AMP_ASSIGN_OR_RETURN(Dataset ds, LoadPair(files[at], files[at + 1]));
  if (ds.labels.dtype() == DType::kInt64) {
    // The class count covers every label file, so train and test agree on it.
    AMP_ASSIGN_OR_RETURN(int64_t max, MaxLabel(ds.labels, files[at + 1]));
    if (given_split) {
      const std::string& other = files[at == 0 ? 3 : 1];
      AMP_ASSIGN_OR_RETURN(Tensor other_labels, ReadNpy(other));
      if (!IsClassLabel(other_labels.dtype()))
        return InvalidArgument("npy: '", files[at + 1], "' holds class labels but '", other, "' holds ",
                               ir::DTypeName(other_labels.dtype()));
      AMP_ASSIGN_OR_RETURN(int64_t other_max, MaxLabel(other_labels, other));
      max = std::max(max, other_max);
    }
    ds.num_classes = max + 1;
    ds.classes_from_labels = true;
  }
  if (given_split) return ds;
  return TakeSplit(ds, split);
}

}  // namespace amptrain::executor::data
