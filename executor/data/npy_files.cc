// Feature/label pairs stored as .npy files, or as the arrays of one .npz
// archive (np.savez / np.savez_compressed).
#include <algorithm>
#include <cstring>
#include <functional>
#include <map>

#include <spdlog/spdlog.h>

#include "executor/data/loaders.h"
#include "executor/npy.h"
#include "executor/npz.h"

namespace amptrain::executor::data {

using ir::DType;
using ir::Tensor;

namespace {

// The samples are the first axis of every file; a model that takes its batch
// elsewhere ([T, B, ...]) reads them through train's --batch-axis.
constexpr const char* kRowsFirst =
    " (a file holds one sample per row of its first axis; for a model that takes [T, B, ...], keep the data "
    "[N, T, ...] and pass --batch-axis 1)";

// Where the arrays come from: .npy files by path, or the members of one .npz
// archive by name; `kind` ("npy" or "npz") starts every message.
struct ArraySource {
  std::string kind;
  std::function<StatusOr<Tensor>(const std::string&)> read;
};

StatusOr<Tensor> ToFloat32(const Tensor& t) {
  if (t.dtype() == DType::kFloat32) return t;
  AMP_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(DType::kFloat32, t.dims()));
  float* dst = out.data<float>();
  for (int64_t i = 0; i < t.num_elements(); ++i) dst[i] = static_cast<float>(t.GetAsDouble(i));
  return out;
}

// Integer labels of any width; the largest one that is not `ignored`, or -1 when none.
StatusOr<int64_t> MaxLabel(const ArraySource& src, const Tensor& labels, const std::string& file, int64_t ignored) {
  int64_t max = -1;
  for (int64_t i = 0; i < labels.num_elements(); ++i) {
    int64_t v = labels.GetAsInt64(i);
    if (v == ignored) continue;
    if (v < 0)
      return InvalidArgument(src.kind, ": '", file, "' label ", i, " (flat index) is ", v, "; labels must be >= 0, or ",
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
StatusOr<Tensor> LabelTensor(const ArraySource& src, const Tensor& y, const std::string& y_path) {
  if (IsClassLabel(y.dtype())) return ToInt64(y);
  if (ir::IsFloat(y.dtype())) return ToFloat32(y);
  return Unimplemented(src.kind, ": labels '", y_path, "' are ", ir::DTypeName(y.dtype()),
                       "; expected int64/int32 (classes) or float (regression)");
}

// A named input's values: floats -> float32, integers of any width -> int64
// (token ids; the trainer converts them to the model input's integer type),
// bool as it is.
StatusOr<Tensor> InputValues(const ArraySource& src, const Tensor& x, const std::string& path) {
  if (ir::IsFloat(x.dtype())) return ToFloat32(x);
  if (x.dtype() == DType::kBool) return x;
  if (ir::IsInteger(x.dtype())) return ToInt64(x);
  return Unimplemented(src.kind, ": '", path, "' holds ", ir::DTypeName(x.dtype()), "; inputs are float, integer or bool");
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

StatusOr<NamedFiles> ParseNamedFiles(const ArraySource& src, const std::vector<std::string>& items) {
  NamedFiles f;
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      return InvalidArgument(src.kind, ": '", item, "' is not NAME=FILE (with named inputs every item names its input: "
                             "ids=X.npy,labels=Y.npy[,test.ids=Xt.npy,test.labels=Yt.npy])");
    std::string key = item.substr(0, eq);
    const std::string path = item.substr(eq + 1);
    const bool test = key.rfind("test.", 0) == 0;
    if (test) key = key.substr(5);
    if (key.empty()) return InvalidArgument(src.kind, ": '", item, "' names no input after 'test.'");
    auto& inputs = test ? f.test_inputs : f.inputs;
    std::string& labels = test ? f.test_labels : f.labels;
    const bool seen = key == "labels" ? !labels.empty() : FindPath(inputs, key) != nullptr;
    if (seen) return InvalidArgument(src.kind, ": '", test ? "test." : "", key, "' is given twice");
    if (key == "labels") labels = path;
    else inputs.emplace_back(key, path);
  }
  if (f.labels.empty()) return InvalidArgument(src.kind, ": named inputs need a labels=FILE item");
  if (f.inputs.empty()) return InvalidArgument(src.kind, ": no input file besides the labels");
  const bool any_test = !f.test_labels.empty() || !f.test_inputs.empty();
  if (any_test) {
    if (f.test_labels.empty()) return InvalidArgument(src.kind, ": test inputs are given but no test.labels=FILE");
    for (const auto& [name, path] : f.inputs)
      if (!FindPath(f.test_inputs, name))
        return InvalidArgument(src.kind, ": input '", name, "' has no test file (test.", name, "=FILE)");
    for (const auto& [name, path] : f.test_inputs)
      if (!FindPath(f.inputs, name))
        return InvalidArgument(src.kind, ": test.", name, " names no training input '", name, "'");
  }
  return f;
}

// The named inputs and labels of one split, validated; the first input is the samples.
StatusOr<Dataset> LoadNamedSet(const ArraySource& src, const NamedPaths& inputs, const std::string& labels_path) {
  Dataset ds;
  AMP_ASSIGN_OR_RETURN(Tensor y, src.read(labels_path));
  if (y.rank() < 1) return InvalidArgument(src.kind, ": labels '", labels_path, "' are a scalar, expected [N] or [N, ...]");
  AMP_ASSIGN_OR_RETURN(ds.labels, LabelTensor(src, y, labels_path));
  for (const auto& [name, path] : inputs) {
    AMP_ASSIGN_OR_RETURN(Tensor raw, src.read(path));
    if (raw.rank() < 1) return InvalidArgument(src.kind, ": input '", name, "' ('", path, "') is a scalar, expected [N, ...]");
    if (raw.dims()[0] != y.dims()[0])
      return InvalidArgument(src.kind, ": '", path, "' (input '", name, "') holds ", raw.dims()[0], " rows but '",
                             labels_path, "' holds ", y.dims()[0], " labels", kRowsFirst);
    AMP_ASSIGN_OR_RETURN(Tensor values, InputValues(src, raw, path));
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

// uint8 images as the trainer takes them, [N, C, H, W]: [N, H, W] (gray,
// Keras's mnist.npz and fashion_mnist) gains its channel; [N, H, W, C] with
// C of 1, 3 or 4 and H, W larger (NumPy and Keras arrays, PIL's order) is
// transposed (both logged); [N, C, H, W] and other ranks stay.
StatusOr<Tensor> ImagesChannelsFirst(const ArraySource& src, Tensor x, const std::string& path) {
  const std::vector<int64_t>& d = x.dims();
  if (x.rank() == 3) {
    spdlog::info("{}: '{}' holds {}x{} gray images ([N, H, W]): taken as [N, 1, H, W]", src.kind, path, d[1], d[2]);
    return x.Reshaped({d[0], 1, d[1], d[2]});
  }
  auto channels = [](int64_t c) { return c == 1 || c == 3 || c == 4; };
  if (x.rank() != 4 || !channels(d[3]) || channels(d[1]) || d[1] <= 4 || d[2] <= 4) return x;
  const int64_t n = d[0], h = d[1], w = d[2], c = d[3];
  spdlog::info("{}: '{}' holds [N, H, W, C] = [{}, {}, {}, {}] images: transposed to [N, C, H, W]", src.kind, path, n,
               h, w, c);
  AMP_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(DType::kUInt8, {n, c, h, w}));
  const uint8_t* in = x.data<uint8_t>();
  uint8_t* o = out.data<uint8_t>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t p = 0; p < h * w; ++p)
      for (int64_t k = 0; k < c; ++k) o[(i * c + k) * h * w + p] = in[(i * h * w + p) * c + k];
  return out;
}

// One X/Y pair, validated; num_classes is left to the caller (0 = regression).
StatusOr<Dataset> LoadPair(const ArraySource& src, const std::string& x_path, const std::string& y_path) {
  AMP_ASSIGN_OR_RETURN(Tensor x, src.read(x_path));
  AMP_ASSIGN_OR_RETURN(Tensor y, src.read(y_path));
  if (x.rank() < 2)
    return InvalidArgument(src.kind, ": features '", x_path, "' have rank ", x.rank(), ", expected [N, ...] with rank >= 2");
  if (y.rank() < 1) return InvalidArgument(src.kind, ": labels '", y_path, "' are a scalar, expected [N] or [N, ...]");
  if (y.dims()[0] != x.dims()[0])
    return InvalidArgument(src.kind, ": '", x_path, "' holds ", x.dims()[0], " samples but '", y_path, "' holds ",
                           y.dims()[0], " labels", kRowsFirst);
  Dataset ds;
  if (x.dtype() == DType::kUInt8) {
    AMP_ASSIGN_OR_RETURN(x, ImagesChannelsFirst(src, std::move(x), x_path));
    ds.sample_dims.assign(x.dims().begin() + 1, x.dims().end());
    ds.samples = x;  // images, normalized at batch time
  } else {
    ds.sample_dims.assign(x.dims().begin() + 1, x.dims().end());
    AMP_ASSIGN_OR_RETURN(ds.samples, InputValues(src, x, x_path));  // float features, or integer token ids
  }
  AMP_ASSIGN_OR_RETURN(ds.labels, LabelTensor(src, y, y_path));
  return ds;
}

// The class count covers every label file, so train and test agree on it.
Status CountClasses(const ArraySource& src, Dataset& ds, const std::string& labels_path,
                    const std::string& other_labels_path, int64_t ignored) {
  if (ds.labels.dtype() != DType::kInt64) return Status::Ok();
  AMP_ASSIGN_OR_RETURN(int64_t max, MaxLabel(src, ds.labels, labels_path, ignored));
  if (!other_labels_path.empty()) {
    AMP_ASSIGN_OR_RETURN(Tensor other_labels, src.read(other_labels_path));
    if (!IsClassLabel(other_labels.dtype()))
      return InvalidArgument(src.kind, ": '", labels_path, "' holds class labels but '", other_labels_path, "' holds ",
                             ir::DTypeName(other_labels.dtype()));
    if (other_labels.rank() != ds.labels.rank() ||
        !std::equal(other_labels.dims().begin() + 1, other_labels.dims().end(), ds.labels.dims().begin() + 1))
      return InvalidArgument(src.kind, ": the labels of '", labels_path, "' are ",
                             ir::TensorType::Of(DType::kInt64, ds.labels.dims()).ToString(), " but those of '",
                             other_labels_path, "' are ",
                             ir::TensorType::Of(DType::kInt64, other_labels.dims()).ToString(),
                             "; both must have the same shape per sample");
    AMP_ASSIGN_OR_RETURN(int64_t other_max, MaxLabel(src, other_labels, other_labels_path, ignored));
    max = std::max(max, other_max);
  }
  if (max < 0 && ds.labels.num_elements() > 0)
    return InvalidArgument(src.kind, ": every label of '", labels_path, "'",
                           other_labels_path.empty() ? "" : StrCat(" and '", other_labels_path, "'"),
                           " is the ignored index ", ignored);
  ds.num_classes = max + 1;
  ds.classes_from_labels = true;
  return Status::Ok();
}

StatusOr<Dataset> LoadNamed(const ArraySource& src, const std::vector<std::string>& items, const std::string& split,
                            int64_t ignored) {
  AMP_ASSIGN_OR_RETURN(NamedFiles f, ParseNamedFiles(src, items));
  const bool given_split = !f.test_labels.empty();
  const bool test = given_split && split == "test";
  NamedPaths inputs = f.inputs;
  if (test)  // the training inputs' order, the test files (ParseNamedFiles checked each has one)
    for (auto& [name, path] : inputs) path = *FindPath(f.test_inputs, name);
  AMP_ASSIGN_OR_RETURN(Dataset ds, LoadNamedSet(src, inputs, test ? f.test_labels : f.labels));
  AMP_RETURN_IF_ERROR(CountClasses(src, ds, test ? f.test_labels : f.labels,
                                   given_split ? (test ? f.labels : f.test_labels) : std::string(), ignored));
  if (given_split) return ds;
  return TakeSplit(ds, split);
}

// {X, Y} (split 90/10), {X, Y, X_test, Y_test}, or NAME=FILE items, from `src`.
StatusOr<Dataset> LoadArrays(const ArraySource& src, const std::vector<std::string>& files, const std::string& split,
                             int64_t ignored_label) {
  if (std::any_of(files.begin(), files.end(), [](const std::string& f) { return f.find('=') != std::string::npos; }))
    return LoadNamed(src, files, split, ignored_label);
  if (files.size() != 2 && files.size() != 4)
    return InvalidArgument(src.kind, ": expected 'X.npy,Y.npy' or 'X.npy,Y.npy,X_test.npy,Y_test.npy', got ",
                           files.size(), " file(s)");
  const bool given_split = files.size() == 4;
  const size_t at = given_split && split == "test" ? 2 : 0;
  AMP_ASSIGN_OR_RETURN(Dataset ds, LoadPair(src, files[at], files[at + 1]));
  AMP_RETURN_IF_ERROR(
      CountClasses(src, ds, files[at + 1], given_split ? files[at == 0 ? 3 : 1] : std::string(), ignored_label));
  if (given_split) return ds;
  return TakeSplit(ds, split);
}

}  // namespace

StatusOr<Dataset> LoadNpyFiles(const std::vector<std::string>& files, const std::string& split,
                               int64_t ignored_label) {
  return LoadArrays(ArraySource{"npy", ReadNpy}, files, split, ignored_label);
}

StatusOr<Dataset> LoadNpzFile(const std::string& path, const std::string& split, int64_t ignored_label) {
  AMP_ASSIGN_OR_RETURN(NpzArrays arrays, ReadNpz(path));
  std::map<std::string, const Tensor*> by_name;
  std::string names;
  for (const auto& [name, t] : arrays) {
    by_name[name] = &t;
    names += (names.empty() ? "'" : ", '") + name + "'";
  }
  const ArraySource src{"npz", [&](const std::string& name) -> StatusOr<Tensor> {
                          auto it = by_name.find(name);
                          if (it == by_name.end())
                            return InvalidArgument("npz: '", path, "' has no array '", name, "' (it holds ", names, ")");
                          return *it->second;
                        }};
  auto has = [&](const std::string& name) { return by_name.count(name) > 0; };
  std::vector<std::string> items;
  if (has("x_train") && has("y_train")) {  // Keras's layout (mnist.npz): the split is given when the test pair is
    items = {"x_train", "y_train"};
    if (has("x_test") && has("y_test")) items.insert(items.end(), {"x_test", "y_test"});
  } else if ((has("x") || has("X")) && (has("y") || has("Y"))) {
    items = {has("x") ? "x" : "X", has("y") ? "y" : "Y"};
  } else if (has("labels")) {  // named model inputs: every other array, test.NAME for a given test split
    for (const auto& [name, t] : arrays)
      if (name != "labels") items.push_back(name + "=" + name);
    items.push_back("labels=labels");
  } else {
    return InvalidArgument("npz: '", path, "' holds ", names,
                           "; expected x_train and y_train (with x_test and y_test for a given test split), x and y, "
                           "or arrays named as the model's inputs with 'labels' (and test.NAME, test.labels)");
  }
  return LoadArrays(src, items, split, ignored_label);
}

}  // namespace amptrain::executor::data
