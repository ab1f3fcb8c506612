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

// Integer labels of any width; the largest one that is not `ignored`, or -1 when none.
StatusOr<int64_t> MaxLabel(const Tensor& labels, const std::string& file, int64_t ignored) {
  int64_t max = -1;
  for (int64_t i = 0; i < labels.num_elements(); ++i) {
    int64_t v = labels.GetAsInt64(i);
    if (v == ignored) continue;
    if (v < 0)
      return InvalidArgument("npy: '", file, "' label ", i, " (flat index) is ", v, "; labels must be >= 0, or ",
                             ignored, " for an ignored position (--ignore-index)");
    max = std::max(max, v);
  }
  return max;
}

bool IsClassLabel(DType t) { return ir::IsInteger(t); }

// Integers of any width as int64.
StatusOr<Tensor> ToInt64(const Tensor& t) {
  if (t.dtype() == DType::kInt64) return t;
  AMP_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(DType::kInt64, t.dims()));
  int64_t* dst = out.data<int64_t>();
  for (int64_t i = 0; i < t.num_elements(); ++i) dst[i] = t.GetAsInt64(i);
  return out;
}

// Labels as the trainer takes them: integers of any width -> int64 [N]
// (classes), or [N, d...] (a class per token or pixel); floats -> float32
// [N, ...] (regression targets).
StatusOr<Tensor> LabelTensor(const Tensor& y, const std::string& y_path) {
  if (IsClassLabel(y.dtype())) return ToInt64(y);
  if (ir::IsFloat(y.dtype())) return ToFloat32(y);
  return Unimplemented("npy: labels '", y_path, "' are ", ir::DTypeName(y.dtype()),
                       "; expected int64/int32 (classes) or float (regression)");
}

// A named input's values: floats -> float32, integers of any width -> int64
// (token ids; the trainer converts them to the model input's integer type),
// bool as it is.
StatusOr<Tensor> InputValues(const Tensor& x, const std::string& path) {
  if (ir::IsFloat(x.dtype())) return ToFloat32(x);
  if (x.dtype() == DType::kBool) return x;
  if (ir::IsInteger(x.dtype())) return ToInt64(x);
  return Unimplemented("npy: '", path, "' holds ", ir::DTypeName(x.dtype()), "; inputs are float, integer or bool");
}

// The files of a named spec: `name=FILE` per model input, `labels=FILE`, and
// the same with a `test.` prefix for a given test split.
using NamedPaths = std::vector<std::pair<std::string, std::string>>;  // model input -> file

struct NamedFiles {
  NamedPaths inputs, test_inputs;
  std::string labels, test_labels;
};

// The file named for `name`, or null.
const std::string* FindPath(const NamedPaths& paths, const std::string& name) {
  for (const auto& p : paths)
    if (p.first == name) return &p.second;
  return nullptr;
}

StatusOr<NamedFiles> ParseNamedFiles(const std::vector<std::string>& items) {
  NamedFiles f;
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      return InvalidArgument("npy: '", item, "' is not NAME=FILE (with named inputs every item names its input: "
                             "ids=X.npy,labels=Y.npy[,test.ids=Xt.npy,test.labels=Yt.npy])");
    std::string key = item.substr(0, eq);
    const std::string path = item.substr(eq + 1);
    const bool test = key.rfind("test.", 0) == 0;
    if (test) key = key.substr(5);
    if (key.empty()) return InvalidArgument("npy: '", item, "' names no input after 'test.'");
    auto& inputs = test ? f.test_inputs : f.inputs;
    std::string& labels = test ? f.test_labels : f.labels;
    const bool seen = key == "labels" ? !labels.empty() : FindPath(inputs, key) != nullptr;
    if (seen) return InvalidArgument("npy: '", test ? "test." : "", key, "' is given twice");
    if (key == "labels") labels = path;
    else inputs.emplace_back(key, path);
  }
  if (f.labels.empty()) return InvalidArgument("npy: named inputs need a labels=FILE item");
  if (f.inputs.empty()) return InvalidArgument("npy: no input file besides the labels");
  const bool any_test = !f.test_labels.empty() || !f.test_inputs.empty();
  if (any_test) {
    if (f.test_labels.empty()) return InvalidArgument("npy: test inputs are given but no test.labels=FILE");
    for (const auto& [name, path] : f.inputs)
      if (!FindPath(f.test_inputs, name))
        return InvalidArgument("npy: input '", name, "' has no test file (test.", name, "=FILE)");
    for (const auto& [name, path] : f.test_inputs)
      if (!FindPath(f.inputs, name))
        return InvalidArgument("npy: test.", name, " names no training input '", name, "'");
  }
  return f;
}

// The named inputs and labels of one split, validated; the first input is the samples.
StatusOr<Dataset> LoadNamedSet(const NamedPaths& inputs,
                               const std::string& labels_path) {
  Dataset ds;
  AMP_ASSIGN_OR_RETURN(Tensor y, ReadNpy(labels_path));
  if (y.rank() < 1) return InvalidArgument("npy: labels '", labels_path, "' are a scalar, expected [N] or [N, ...]");
  AMP_ASSIGN_OR_RETURN(ds.labels, LabelTensor(y, labels_path));
  for (const auto& [name, path] : inputs) {
    AMP_ASSIGN_OR_RETURN(Tensor raw, ReadNpy(path));
    if (raw.rank() < 1) return InvalidArgument("npy: input '", name, "' ('", path, "') is a scalar, expected [N, ...]");
    if (raw.dims()[0] != y.dims()[0])
      return InvalidArgument("npy: '", path, "' (input '", name, "') holds ", raw.dims()[0], " rows but '",
                             labels_path, "' holds ", y.dims()[0], " labels");
    AMP_ASSIGN_OR_RETURN(Tensor values, InputValues(raw, path));
    if (ds.sample_input.empty()) {
      ds.sample_input = name;
      ds.sample_dims.assign(values.dims().begin() + 1, values.dims().end());
      ds.samples = std::move(values);
    } else {
      ds.more_inputs.push_back({name, std::move(values)});
    }
  }
  return ds;
}

// One X/Y pair, validated; num_classes is left to the caller (0 = regression).
StatusOr<Dataset> LoadPair(const std::string& x_path, const std::string& y_path) {
  AMP_ASSIGN_OR_RETURN(Tensor x, ReadNpy(x_path));
  AMP_ASSIGN_OR_RETURN(Tensor y, ReadNpy(y_path));
  if (x.rank() < 2)
    return InvalidArgument("npy: features '", x_path, "' have rank ", x.rank(), ", expected [N, ...] with rank >= 2");
  if (y.rank() < 1) return InvalidArgument("npy: labels '", y_path, "' are a scalar, expected [N] or [N, ...]");
  if (y.dims()[0] != x.dims()[0])
    return InvalidArgument("npy: '", x_path, "' holds ", x.dims()[0], " samples but '", y_path, "' holds ",
                           y.dims()[0], " labels");
  Dataset ds;
  ds.sample_dims.assign(x.dims().begin() + 1, x.dims().end());
  if (x.dtype() == DType::kUInt8) {
    ds.samples = x;  // images, normalized at batch time
  } else {
    AMP_ASSIGN_OR_RETURN(ds.samples, InputValues(x, x_path));  // float features, or integer token ids
  }
  AMP_ASSIGN_OR_RETURN(ds.labels, LabelTensor(y, y_path));
  return ds;
}

// The class count covers every label file, so train and test agree on it.
Status CountClasses(Dataset& ds, const std::string& labels_path, const std::string& other_labels_path,
                    int64_t ignored) {
  if (ds.labels.dtype() != DType::kInt64) return Status::Ok();
  AMP_ASSIGN_OR_RETURN(int64_t max, MaxLabel(ds.labels, labels_path, ignored));
  if (!other_labels_path.empty()) {
    AMP_ASSIGN_OR_RETURN(Tensor other_labels, ReadNpy(other_labels_path));
    if (!IsClassLabel(other_labels.dtype()))
      return InvalidArgument("npy: '", labels_path, "' holds class labels but '", other_labels_path, "' holds ",
                             ir::DTypeName(other_labels.dtype()));
    if (other_labels.rank() != ds.labels.rank() ||
        !std::equal(other_labels.dims().begin() + 1, other_labels.dims().end(), ds.labels.dims().begin() + 1))
      return InvalidArgument("npy: the labels of '", labels_path, "' are ",
                             ir::TensorType::Of(DType::kInt64, ds.labels.dims()).ToString(), " but those of '",
                             other_labels_path, "' are ",
                             ir::TensorType::Of(DType::kInt64, other_labels.dims()).ToString(),
                             "; both must have the same shape per sample");
    AMP_ASSIGN_OR_RETURN(int64_t other_max, MaxLabel(other_labels, other_labels_path, ignored));
    max = std::max(max, other_max);
  }
  if (max < 0 && ds.labels.num_elements() > 0)
    return InvalidArgument("npy: every label of '", labels_path, "'",
                           other_labels_path.empty() ? "" : StrCat(" and '", other_labels_path, "'"),
                           " is the ignored index ", ignored);
  ds.num_classes = max + 1;
  ds.classes_from_labels = true;
  return Status::Ok();
}

StatusOr<Dataset> LoadNamedNpy(const std::vector<std::string>& items, const std::string& split, int64_t ignored) {
  AMP_ASSIGN_OR_RETURN(NamedFiles f, ParseNamedFiles(items));
  const bool given_split = !f.test_labels.empty();
  const bool test = given_split && split == "test";
  NamedPaths inputs = f.inputs;
  if (test)  // the training inputs' order, the test files (ParseNamedFiles checked each has one)
    for (auto& [name, path] : inputs) path = *FindPath(f.test_inputs, name);
  AMP_ASSIGN_OR_RETURN(Dataset ds, LoadNamedSet(inputs, test ? f.test_labels : f.labels));
  AMP_RETURN_IF_ERROR(CountClasses(ds, test ? f.test_labels : f.labels,
                                   given_split ? (test ? f.labels : f.test_labels) : std::string(), ignored));
  if (given_split) return ds;
  return TakeSplit(ds, split);
}

}  // namespace

StatusOr<Dataset> LoadNpyFiles(const std::vector<std::string>& files, const std::string& split,
                               int64_t ignored_label) {
  if (std::any_of(files.begin(), files.end(), [](const std::string& f) { return f.find('=') != std::string::npos; }))
    return LoadNamedNpy(files, split, ignored_label);
  if (files.size() != 2 && files.size() != 4)
    return InvalidArgument("npy: expected 'X.npy,Y.npy' or 'X.npy,Y.npy,X_test.npy,Y_test.npy', got ", files.size(),
                           " file(s)");
  const bool given_split = files.size() == 4;
  const size_t at = given_split && split == "test" ? 2 : 0;
  AMP_ASSIGN_OR_RETURN(Dataset ds, LoadPair(files[at], files[at + 1]));
  AMP_RETURN_IF_ERROR(
      CountClasses(ds, files[at + 1], given_split ? files[at == 0 ? 3 : 1] : std::string(), ignored_label));
  if (given_split) return ds;
  return TakeSplit(ds, split);
}

}  // namespace amptrain::executor::data
