// SPEC parsing, dispatch to the loaders, default normalizations, the fixed
// 90/10 split and label checks.
#include <algorithm>
#include <charconv>
#include <cstring>
#include <numeric>
#include <set>

#include "executor/data/loaders.h"
#include "executor/data/rng.h"

namespace amptrain::executor::data {

using ir::DType;
using ir::Tensor;

namespace {

constexpr char kFashionMnistRoot[] = "/usr/share/datasets/fashion-mnist";
constexpr uint64_t kSplitSeed = 0x5eed90d10ull;
const std::set<std::string> kKinds = {"fashion-mnist", "mnist", "cifar10", "cifar100", "npy", "npz", "csv", "images", "synthetic"};
const std::set<std::string> kSyntheticKeys = {"N", "C", "H", "W", "classes", "seed"};

std::vector<std::string> SplitOn(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t end = s.find(sep, start);
    parts.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

Status ParseSyntheticParams(const std::string& spec, const std::string& rest, DataSpec* out) {
  if (rest.empty()) return Status::Ok();
  for (const std::string& item : SplitOn(rest, ',')) {
    size_t eq = item.find('=');
    std::string key = item.substr(0, eq);
    std::string value = eq == std::string::npos ? std::string() : item.substr(eq + 1);
    if (eq == std::string::npos || !kSyntheticKeys.count(key))
      return InvalidArgument("data spec '", spec, "': '", item, "' is not one of N=, C=, H=, W=, classes=, seed=");
    if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos)
      return InvalidArgument("data spec '", spec, "': ", key, " must be a non-negative integer, got '", value, "'");
    if (!out->params.emplace(key, value).second)
      return InvalidArgument("data spec '", spec, "': ", key, " is given twice");
  }
  return Status::Ok();
}

}  // namespace

int64_t Dataset::size() const { return samples.empty() ? 0 : samples.dims()[0]; }

StatusOr<DataSpec> ParseDataSpec(const std::string& spec) {
  size_t colon = spec.find(':');
  DataSpec out;
  out.kind = spec.substr(0, colon);
  if (!kKinds.count(out.kind))
    return InvalidArgument("data spec '", spec, "': unknown dataset '", out.kind,
                           "' (expected fashion-mnist, mnist, cifar10, cifar100, npy, npz, csv, images or synthetic)");
  const bool has_rest = colon != std::string::npos;
  std::string rest = has_rest ? spec.substr(colon + 1) : std::string();
  if (out.kind == "synthetic") {
    AMP_RETURN_IF_ERROR(ParseSyntheticParams(spec, rest, &out));
    return out;
  }
  if (!rest.empty()) {
    out.path = rest;
  } else if (out.kind == "fashion-mnist") {
    out.path = kFashionMnistRoot;
  } else {
    return InvalidArgument("data spec '", spec, "': ", out.kind, " needs a path, e.g. '", out.kind,
                           out.kind == "npy"   ? ":X.npy,Y.npy'"
                           : out.kind == "npz" ? ":data.npz'"
                           : out.kind == "csv" ? ":data.csv'"
                                               : ":/dir'");
  }
  return out;
}

StatusOr<Dataset> LoadDataset(const DataSpec& spec, const std::string& split) {
  if (split != "train" && split != "test")
    return InvalidArgument("dataset split must be 'train' or 'test', got '", split, "'");
  if (spec.kind == "fashion-mnist" || spec.kind == "mnist") return LoadIdxDir(spec.kind, spec.path, split);
  if (spec.kind == "cifar10" || spec.kind == "cifar100") return LoadCifar(spec.kind, spec.path, split);
  if (spec.kind == "synthetic") return MakeSynthetic(spec.params, split);
  if (spec.kind == "images") return LoadImageFolder(spec.path, split, spec.params);
  if (spec.kind == "csv") {
    std::vector<std::string> files;
    std::string label;
    for (const std::string& item : SplitOn(spec.path, ',')) {
      if (item.rfind("label=", 0) == 0) {
        if (!label.empty()) return InvalidArgument("csv: label= is given twice in '", spec.path, "'");
        label = item.substr(6);
        if (label.empty()) return InvalidArgument("csv: label= names no column in '", spec.path, "'");
      } else if (item.empty()) {
        return InvalidArgument("csv: empty file name in '", spec.path, "'");
      } else {
        files.push_back(item);
      }
    }
    return LoadCsvFiles(files, label, split);
  }
  if (spec.kind == "npy" || spec.kind == "npz") {
    int64_t ignored = kDefaultIgnoredLabel;
    if (auto it = spec.params.find("ignore_index"); it != spec.params.end()) {
      const std::string& v = it->second;
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), ignored);
      if (ec != std::errc() || end != v.data() + v.size())
        return InvalidArgument(spec.kind, ": ignore_index '", v, "' is not an integer");
    }
    if (spec.kind == "npz") return LoadNpzFile(spec.path, split, ignored);
    std::vector<std::string> files = SplitOn(spec.path, ',');
    for (const std::string& f : files)
      if (f.empty()) return InvalidArgument("npy: empty file name in '", spec.path, "'");
    return LoadNpyFiles(files, split, ignored);
  }
  return InvalidArgument("unknown dataset kind '", spec.kind, "'");
}

Normalization DefaultNormalization(const DataSpec& spec) {
  if (spec.kind == "fashion-mnist") return {{0.2860f}, {0.3530f}};
  if (spec.kind == "mnist") return {{0.1307f}, {0.3081f}};
  if (spec.kind == "cifar10") return {{0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}};
  if (spec.kind == "cifar100") return {{0.5071f, 0.4865f, 0.4409f}, {0.2673f, 0.2564f, 0.2762f}};
  if (spec.kind == "synthetic") return {{0.5f}, {0.2f}};
  // ImageNet's statistics, which pretrained torchvision models expect; their
  // channel mean for gray images.
  if (spec.kind == "images") {
    if (spec.params.count("channels") && spec.params.at("channels") == "1") return {{0.449f}, {0.226f}};
    return {{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}};
  }
  return {};
}

std::vector<int64_t> SplitIndices(int64_t n, const std::string& split) {
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  Rng rng{kSplitSeed, static_cast<uint64_t>(n)};
  for (int64_t i = n - 1; i > 0; --i) std::swap(perm[i], perm[rng.Below(static_cast<uint64_t>(i) + 1)]);
  const int64_t n_test = n / 10;
  std::vector<char> is_test(static_cast<size_t>(n), 0);
  for (int64_t i = 0; i < n_test; ++i) is_test[perm[i]] = 1;
  const char want = split == "test" ? 1 : 0;
  std::vector<int64_t> rows;
  rows.reserve(static_cast<size_t>(want ? n_test : n - n_test));
  for (int64_t i = 0; i < n; ++i)
    if (is_test[i] == want) rows.push_back(i);
  return rows;
}

StatusOr<Dataset> TakeSplit(const Dataset& all, const std::string& split) {
  const int64_t n = all.size();
  const std::vector<int64_t> kept = SplitIndices(n, split);
  const auto rows = static_cast<int64_t>(kept.size());

  auto take = [&](const Tensor& src, Tensor* dst) -> Status {
    std::vector<int64_t> dims = src.dims();
    dims[0] = rows;
    AMP_ASSIGN_OR_RETURN(*dst, Tensor::Zeros(src.dtype(), dims));
    const size_t row_bytes = n ? src.nbytes() / static_cast<size_t>(n) : 0;
    const auto* from = static_cast<const std::byte*>(src.raw());
    auto* to = static_cast<std::byte*>(dst->raw());
    for (int64_t i : kept) {
      std::memcpy(to, from + i * row_bytes, row_bytes);
      to += row_bytes;
    }
    return Status::Ok();
  };
  Dataset out;
  out.sample_dims = all.sample_dims;
  out.num_classes = all.num_classes;
  out.classes_from_labels = all.classes_from_labels;
  out.sample_input = all.sample_input;
  AMP_RETURN_IF_ERROR(take(all.samples, &out.samples));
  AMP_RETURN_IF_ERROR(take(all.labels, &out.labels));
  for (const InputColumn& c : all.more_inputs) {
    out.more_inputs.push_back({c.name, {}});
    AMP_RETURN_IF_ERROR(take(c.values, &out.more_inputs.back().values));
  }
  return out;
}

std::string ClassList(const std::vector<std::string>& names) {
  constexpr size_t kShown = 12;
  std::string out;
  for (size_t i = 0; i < names.size() && i < kShown; ++i)
    out += (i ? ", " : "") + std::to_string(i) + ": " + names[i];
  if (names.size() > kShown) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

Status CheckLabels(const Tensor& labels, int64_t num_classes, const std::string& file) {
  const int64_t* v = labels.data<int64_t>();
  for (int64_t i = 0; i < labels.num_elements(); ++i)
    if (v[i] < 0 || v[i] >= num_classes)
      return InvalidArgument("'", file, "': label ", i, " is ", v[i], ", outside [0, ", num_classes, ")");
  return Status::Ok();
}

}  // namespace amptrain::executor::data
