#include <unistd.h>

#include <array>
#include <cstdio>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include <spdlog/spdlog.h>

#include "executor/npy.h"
#include "ir/output_path.h"
#include "tools/commands.h"

namespace amptrain::tools {

std::string HumanBytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

std::string SanitizeFileName(const std::string& name) {
  if (name.empty() || name == "." || name == "..") return "_";
  std::string out = name;
  for (char& c : out)
    if (c == '/' || c == '\\' || c == ':' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '_';
  return out;
}

std::vector<std::string> UniqueFileNames(const std::vector<std::string>& names) {
  std::set<std::string> used;
  std::vector<std::string> out;
  for (const std::string& name : names) {
    std::string base = SanitizeFileName(name), file = base;
    for (int k = 2; used.count(file); ++k) file = base + "_" + std::to_string(k);
    used.insert(file);
    out.push_back(file);
  }
  return out;
}

Status WriteNpyFiles(const std::vector<std::pair<std::string, ir::Tensor>>& files) {
  std::vector<std::string> temps;
  auto remove_temps = [&] {
    for (const std::string& t : temps) ::unlink(t.c_str());
  };
  // Every target is checked before any temporary is written: none may outlive a refusal.
  for (const auto& file : files) AMP_RETURN_IF_ERROR(ir::CheckReplaceableOutput(file.first, ".npy"));
  for (const auto& [path, tensor] : files) {
    std::string tmp = path + ".tmp-" + std::to_string(::getpid());
    Status s = executor::WriteNpy(tmp, tensor);
    if (!s.ok()) {
      remove_temps();
      return Status(s.code(), StrCat("cannot write '", path, "' (nothing was written): ", s.message()));
    }
    temps.push_back(tmp);
  }
  for (size_t i = 0; i < files.size(); ++i) {
    if (std::rename(temps[i].c_str(), files[i].first.c_str()) != 0) {
      Status err = IoError("cannot write '", files[i].first, "': ", std::strerror(errno));
      temps.erase(temps.begin(), temps.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      remove_temps();
      return err;
    }
  }
  return Status::Ok();
}

CLI::Validator IntAtLeast(int64_t min, int64_t max) {
  std::string range = max == INT64_MAX ? StrCat("an integer >= ", min) : StrCat("an integer from ", min, " to ", max);
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        const long long v = std::strtoll(text.c_str(), &end, 10);
        if (text.empty() || *end != '\0' || errno == ERANGE || v < min || v > max)
          return StrCat("must be ", range, ", got '", text.substr(0, 40), "'");
        return "";
      },
      range);
}

CLI::Validator NumberAtLeast(double min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(v) || v < min)
          return StrCat("must be a finite number >= ", min, ", got '", text.substr(0, 40), "'");
        return "";
      },
      StrCat("a number >= ", min));
}

std::optional<float> ParseStaticLossScale(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v <= 0.0 || v > 3.4e38) return std::nullopt;
  return static_cast<float>(v);
}

bool SameFile(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

namespace {

Status CheckWritableDir(const std::string& dir, const std::string& flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return InvalidArgument(flag, ": the folder '", dir, "' does not exist or is not a folder");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return InvalidArgument(flag, ": cannot create files in the folder '", dir, "': ", std::strerror(errno));
  return Status::Ok();
}

}  // namespace

Status CheckOutputFolderOf(const std::string& path, const std::string& flag) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return CheckWritableDir(parent.empty() ? "." : parent.string(), flag);
}

Status EnsureWritableFolder(const std::string& dir, const std::string& flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    return InvalidArgument(flag, ": '", dir, "' exists and is not a folder");
  if (!fs::exists(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec) return InvalidArgument(flag, ": cannot create the folder '", dir, "': ", ec.message());
  }
  return CheckWritableDir(dir, flag);
}

StatusOr<int64_t> BatchSizeFor(const ir::Graph& model, int64_t requested, bool given, bool* fixed) {
  *fixed = false;
  int64_t batch = 0;
  for (ir::Value v : model.inputs()) {
    const ir::TensorType& t = model.type(v);
    if (!t.has_shape || t.shape.rank() == 0 || !t.shape[0].is_static() || (batch != 0 && t.shape[0].value != batch))
      return requested;
    batch = t.shape[0].value;
  }
  if (batch == 0) return requested;
  const std::string input = model.name(model.inputs()[0]);
  if (given && requested != batch)
    return InvalidArgument("--batch-size ", requested, ": the model's inputs have a fixed batch of ", batch, " (input '",
                           input, "' is ", model.type(model.inputs()[0]).ToString(), "); use --batch-size ", batch,
                           ", or export the model with a dynamic batch dim (docs/BRING_YOUR_OWN_MODEL.md)");
  if (!given && requested != batch)
    spdlog::info("the model's inputs have a fixed batch of {} (input '{}'): using --batch-size {}", batch, input, batch);
  *fixed = true;
  return batch;
}

void AddLabelFlags(CLI::App* cmd, LabelFlags& flags) {
  cmd->add_option("--class-axis", flags.class_axis,
                  "Labels [N, d...] (a class per token or pixel): where the logits hold the classes, first "
                  "([N, C, d...], PyTorch's CrossEntropyLoss layout) or last ([N, d..., C], a transformer's "
                  "per-token logits); auto: the one that fits the labels")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "first", "last"}));
  cmd->add_option("--ignore-index", flags.ignore_index,
                  "Labels equal to this count in neither loss nor accuracy (padding tokens, void pixels)")
      ->capture_default_str();
}

void AddBatchAxisFlag(CLI::App* cmd, std::vector<std::string>& specs) {
  cmd->add_option("--batch-axis", specs,
                  "AXIS or INPUT=AXIS: the model takes its batch at AXIS of its data inputs (or of INPUT), e.g. 1 "
                  "for [T, B, ...] (PyTorch's batch_first=False RNNs and Transformers); the data stay [N, ...] "
                  "and the exported model keeps its own layout. Default: where the export says (a static first "
                  "dim and a dynamic one named like the outputs' first), else 0");
}

StatusOr<std::vector<executor::train::BatchAxis>> ApplyBatchAxes(ir::Graph& model, const std::vector<std::string>& specs) {
  namespace train = executor::train;
  AMP_ASSIGN_OR_RETURN(std::vector<train::BatchAxis> axes, train::ParseBatchAxes(specs, model));
  const bool detected = specs.empty();
  if (detected) axes = train::DetectBatchAxes(model);
  AMP_RETURN_IF_ERROR(train::MoveBatchAxesFirst(model, axes));
  for (const train::BatchAxis& b : axes)
    if (b.axis > 0)
      spdlog::info("input '{}' takes its batch at axis {}{}: batches of [N, ...] rows are transposed into it{}", b.input,
                   b.axis, detected ? " (its dynamic dim there is the outputs' first)" : "",
                   detected ? StrCat("; --batch-axis ", b.input, "=0 reads it as it is") : std::string());
  return axes;
}

void FeedRawImages(const ir::Graph& model, executor::data::Dataset& ds) {
  if (ds.samples.dtype() != ir::DType::kUInt8) return;
  for (ir::Value v : model.inputs())
    if ((ds.sample_input.empty() ? model.inputs().size() == 1 : model.name(v) == ds.sample_input) &&
        model.type(v).dtype == ir::DType::kUInt8)
      ds.raw_samples = true;
}

autodiff::ClassAxis ClassAxisOf(const LabelFlags& flags) {
  return flags.class_axis == "first"  ? autodiff::ClassAxis::kFirst
         : flags.class_axis == "last" ? autodiff::ClassAxis::kLast
                                      : autodiff::ClassAxis::kAuto;
}

std::optional<std::vector<int64_t>> LabelDims(const ir::Tensor& labels) {
  if (labels.dtype() != ir::DType::kInt64 || labels.rank() < 1) return std::nullopt;
  return std::vector<int64_t>(labels.dims().begin() + 1, labels.dims().end());
}

namespace {

// Where an image input [N, C, H, W] keeps C, H and W, or a channels-last one
// [N, H, W, C] (tf2onnx): the last dim static, 1 or 3, where dim 1 is not.
std::array<size_t, 3> ImageDims(const ir::TensorType& t) {
  auto channels = [&](size_t i) { return t.shape[i].is_static() && (t.shape[i].value == 1 || t.shape[i].value == 3); };
  if (channels(3) && !channels(1)) return {3, 1, 2};
  return {1, 2, 3};
}

}  // namespace

Status SetImageSize(const ir::Graph& model, const std::string& kind, const std::string& image_size,
                    int64_t image_resize, std::map<std::string, std::string>* spec_params) {
  if (kind != "images") {
    if (!image_size.empty()) return InvalidArgument("--image-size applies to images: data sets only (--data is ", kind, ")");
    if (image_resize > 0) return InvalidArgument("--image-resize applies to images: data sets only (--data is ", kind, ")");
    return Status::Ok();
  }
  if (image_resize > 0) (*spec_params)["resize"] = std::to_string(image_resize);
  int64_t h = 0, w = 0, c = 3;
  if (!image_size.empty()) {
    const size_t x = image_size.find('x');
    const std::string hs = image_size.substr(0, x), ws = x == std::string::npos ? hs : image_size.substr(x + 1);
    auto parse = [](const std::string& s) -> int64_t {
      if (s.empty() || s.size() > 5 || s.find_first_not_of("0123456789") != std::string::npos) return 0;
      return std::stoll(s);
    };
    h = parse(hs);
    w = parse(ws);
    if (h < 1 || w < 1)
      return InvalidArgument("--image-size '", image_size, "': expected SIZE or HEIGHTxWIDTH in pixels, such as 224 or 160x320");
  }
  std::vector<ir::Value> images;
  for (ir::Value v : model.inputs()) {
    const ir::TensorType& t = model.type(v);
    if (t.has_shape && t.shape.rank() == 4 && ir::IsFloat(t.dtype)) images.push_back(v);
  }
  if (images.size() == 1) {
    const ir::TensorType& t = model.type(images[0]);
    const auto [ci, hi, wi] = ImageDims(t);
    if (t.shape[ci].is_static()) c = t.shape[ci].value;
    if (h == 0 && t.shape[hi].is_static() && t.shape[wi].is_static()) {
      h = t.shape[hi].value;
      w = t.shape[wi].value;
    }
  }
  if (h == 0) {
    if (images.size() != 1)
      return InvalidArgument("images: the model has ", images.size(), " float inputs of rank 4 (", InputNames(model),
                             "), not one image input [N, C, H, W] to take the image size from; give --image-size");
    return InvalidArgument("images: the model's input '", model.name(images[0]), "' is ",
                           model.type(images[0]).ToString(), ", with no fixed height and width; give --image-size");
  }
  if (c != 1 && c != 3)
    return InvalidArgument("images: the model's input takes ", c, " channels; image folders give 1 (gray) or 3 (RGB)");
  (*spec_params)["height"] = std::to_string(h);
  (*spec_params)["width"] = std::to_string(w);
  (*spec_params)["channels"] = std::to_string(c);
  return Status::Ok();
}

Status FitImages(const ir::Graph& model, const executor::data::Dataset& ds, const std::string& kind,
                 const std::string& image_size, executor::data::Augmentation* aug,
                 std::map<std::string, std::vector<int64_t>>* input_dims) {
  if (ds.samples.dtype() != ir::DType::kUInt8 || ds.sample_dims.size() != 3 || !ds.sample_input.empty() ||
      !ds.more_inputs.empty())
    return Status::Ok();
  std::vector<ir::Value> images;
  for (ir::Value v : model.inputs()) {
    const ir::TensorType& t = model.type(v);
    if (model.ConstantValue(v)) continue;
    if (!t.has_shape || t.shape.rank() != 4 || !ir::IsFloat(t.dtype)) return Status::Ok();  // not one image input
    images.push_back(v);
  }
  if (images.size() != 1) return Status::Ok();
  const ir::TensorType& t = model.type(images[0]);
  const auto [ci, hi, wi] = ImageDims(t);
  const bool last = ci == 3;
  const int64_t c = ds.sample_dims[0], h = ds.sample_dims[1], w = ds.sample_dims[2];
  auto pick = [&](size_t i, int64_t data) { return t.shape[i].is_static() ? t.shape[i].value : data; };
  const int64_t mc = pick(ci, c), mh = pick(hi, h), mw = pick(wi, w);
  const std::string& name = model.name(images[0]);
  if (!t.shape[ci].is_static() || !t.shape[hi].is_static() || !t.shape[wi].is_static())
    (*input_dims)[name] = last ? std::vector<int64_t>{mh, mw, mc} : std::vector<int64_t>{mc, mh, mw};
  if (mc == c && mh == h && mw == w) return Status::Ok();
  if (!image_size.empty() && (mh != h || mw != w))
    return InvalidArgument("--image-size ", image_size, " decodes the images to ", h, "x", w, " but the model expects ",
                           t.shape.ToString(), " (input '", name, "')");
  if ((mc != 1 && mc != 3) || (c != 1 && c != 3))
    return InvalidArgument("the model's input '", name, "' (", t.ToString(), ") takes ", mc, " channels and the ", kind,
                           " images have ", c, "; amptrain converts between 1 (gray) and 3 (RGB) only");
  aug->fit_channels = mc;
  aug->fit_height = mh;
  aug->fit_width = mw;
  std::string how;
  if (mc != c) how = StrCat("Grayscale(num_output_channels=", mc, ")");
  if (mh != h || mw != w) {
    const std::string size = mh == mw ? std::to_string(mh) : StrCat("(", mh, ", ", mw, ")");
    how += StrCat(how.empty() ? "" : " and ", "Resize(", size, ")", h * mw != w * mh ? StrCat(" + CenterCrop(", size, ")") : "");
  }
  spdlog::info("the {} images ({}x{}x{}) go to the model's input '{}' as {}x{}x{}, made as torchvision's {} makes them",
               kind, c, h, w, name, mc, mh, mw, how);
  return Status::Ok();
}

void WarnLeftOut(int64_t batch, size_t samples, const char* what) {
  const int64_t left = static_cast<int64_t>(samples) % batch;
  if (left != 0)
    spdlog::warn("the model's fixed batch of {} leaves out {} of the {} {}", batch, left, samples, what);
}

std::string InputNames(const ir::Graph& g) {
  std::string names;
  for (ir::Value v : g.inputs()) names += (names.empty() ? "'" : ", '") + g.name(v) + "'";
  return names.empty() ? "none" : names;
}

StatusOr<std::map<std::string, ir::Tensor>> ReadInputs(const ir::Graph& g, const std::vector<std::string>& specs,
                                                       const std::string& flag) {
  std::map<std::string, ir::Tensor> inputs;
  for (const std::string& spec : specs) {
    std::string name, path;
    size_t eq = spec.find('=');
    if (eq == std::string::npos) {
      if (g.inputs().size() != 1 || specs.size() != 1)
        return InvalidArgument(flag, " '", spec, "' needs the form NAME=FILE.npy: the model has ", g.inputs().size(),
                               " inputs (", InputNames(g), ")");
      name = g.name(g.inputs()[0]);
      path = spec;
    } else {
      name = spec.substr(0, eq);
      path = spec.substr(eq + 1);
    }
    bool known = false;
    for (ir::Value v : g.inputs()) known = known || g.name(v) == name;
    if (!known) return InvalidArgument("unknown input '", name, "'; the model's inputs are ", InputNames(g));
    if (inputs.count(name)) return InvalidArgument("input '", name, "' is given twice");
    AMP_ASSIGN_OR_RETURN(inputs[name], executor::ReadNpy(path));
  }
  return inputs;
}

void WarnIfModelDraws(const ir::Graph& model, const char* what) {
  int64_t count = 0;
  const ir::Node* first = nullptr;
  for (const ir::Node* n : model.nodes()) {
    if (ir::Schema(n->op()).family != "random") continue;
    if (!first) first = n;
    ++count;
  }
  if (count == 0) return;
  spdlog::warn("the model has {} random op(s), the first {}: they draw in inference too, and its {} depend on the "
               "draws. In a training-mode export they are StochasticDepth or dropout, active here: export in eval mode "
               "for inference (docs/BRING_YOUR_OWN_MODEL.md)",
               count, first->Describe(), what);
}

void AddReferenceOpsFlag(CLI::App* cmd, std::vector<std::string>& ops) {
  cmd->add_option("--reference-ops", ops,
                  "These op types (A,B,...) run on the reference kernels, the rest as usual: which op's kernel an "
                  "output's error comes from")
      ->delimiter(',');
}

Status ApplyReferenceOps(const std::vector<std::string>& ops, executor::SessionOptions& options) {
  for (const std::string& op : ops) {
    std::optional<ir::OpKind> kind = ir::FindOnnxOp(op);
    for (const ir::OpSchema* s : ir::AllSchemas())  // the backward ops (ConvGrad, ...) by their IR names
      if (!kind && s->onnx_type.empty() && s->name == op) kind = s->kind;
    if (!kind)
      return InvalidArgument("--reference-ops: '", op,
                             "' is not an op amptrain knows (ONNX op types such as Conv, backward ops such as ConvGrad)");
    options.reference_ops.insert(*kind);
  }
  return Status::Ok();
}

}  // namespace amptrain::tools
