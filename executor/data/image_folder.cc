// Image folders (torchvision's ImageFolder layout): one sub-folder per class,
// JPEG/PNG files in it at any depth; decoded once, in parallel, into uint8
// [N, C, H, W] at the model's input size.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <utility>

#include <spdlog/spdlog.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "executor/data/image.h"
#include "executor/data/loaders.h"
#include "ir/file_io.h"

namespace amptrain::executor::data {

using ir::DType;
using ir::Tensor;

namespace {

constexpr int kMaxFolderDepth = 32;
constexpr int64_t kMaxImageFileBytes = int64_t{256} << 20;
constexpr int64_t kMaxImageSide = 1 << 16;

bool IsDir(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool HasImageExtension(const std::string& name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos) return false;
  std::string ext = name.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return ext == "jpg" || ext == "jpeg" || ext == "png";
}

// The entries of a folder, sorted by name, hidden ones ("." first) left out.
StatusOr<std::vector<std::string>> ListFolder(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return IoError("images: cannot read the folder '", dir, "': ", std::strerror(errno));
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    names.emplace_back(e->d_name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

struct Listing {
  std::vector<std::pair<std::string, int64_t>> files;  // (path, class index)
  int64_t ignored = 0;                                  // files that are not .jpg/.jpeg/.png
  std::string ignored_example;
};

// Every image file under `dir`, sorted by path, following folder links once
// (a link back up the tree is not walked again).
Status Walk(const std::string& dir, int64_t label, int depth, std::set<std::pair<dev_t, ino_t>>& seen,
            Listing& out) {
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0) return IoError("images: cannot read '", dir, "': ", std::strerror(errno));
  if (!seen.insert({st.st_dev, st.st_ino}).second) return Status::Ok();
  if (depth > kMaxFolderDepth)
    return InvalidArgument("images: '", dir, "' is nested more than ", kMaxFolderDepth, " folders deep");
  AMP_ASSIGN_OR_RETURN(std::vector<std::string> names, ListFolder(dir));
  for (const std::string& name : names) {
    const std::string path = dir + "/" + name;
    struct stat es{};
    if (::stat(path.c_str(), &es) != 0) {
      // A dangling link: named if it looks like an image, else ignored like other non-images.
      if (HasImageExtension(name)) return NotFound("images: '", path, "' is a link to nothing");
      if (out.ignored++ == 0) out.ignored_example = path;
      continue;
    }
    if (S_ISDIR(es.st_mode)) {
      AMP_RETURN_IF_ERROR(Walk(path, label, depth + 1, seen, out));
    } else if (HasImageExtension(name)) {
      if (!S_ISREG(es.st_mode))
        return InvalidArgument("images: '", path, "' is ", ir::NonRegularFileKind(es.st_mode));
      out.files.emplace_back(path, label);
    } else {
      if (out.ignored++ == 0) out.ignored_example = path;
    }
  }
  return Status::Ok();
}

// A data folder's entries: its class folders, sorted by name (torchvision's
// class indices), and the files beside them, which belong to no class.
struct RootFolder {
  std::vector<std::string> classes, loose;
};

StatusOr<RootFolder> ReadRoot(const std::string& root) {
  AMP_ASSIGN_OR_RETURN(std::vector<std::string> names, ListFolder(root));
  RootFolder r;
  for (std::string& n : names) (IsDir(root + "/" + n) ? r.classes : r.loose).push_back(std::move(n));
  if (r.classes.empty())
    return InvalidArgument("images: '", root, "' has no class folders (expected ", root, "/<class>/<image>.jpg|png, ",
                           "or train/ and val/ folders holding them)");
  return r;
}

// The files of `root`'s class folders, labelled by `classes` (the training
// folder's list): a class folder not in it is an error; `require_all`: every
// class must hold an image.
StatusOr<Listing> ListImages(const std::string& root, const RootFolder& here, const std::vector<std::string>& classes,
                             bool require_all) {
  std::map<std::string, int64_t> index;
  for (size_t i = 0; i < classes.size(); ++i) index[classes[i]] = static_cast<int64_t>(i);
  Listing out;
  std::set<std::pair<dev_t, ino_t>> seen;
  struct stat rs{};
  if (::stat(root.c_str(), &rs) == 0) seen.insert({rs.st_dev, rs.st_ino});
  for (const std::string& name : here.classes) {
    auto it = index.find(name);
    if (it == index.end())
      return InvalidArgument("images: '", root, "/", name, "' is a class that the training folder does not have");
    const size_t before = out.files.size();
    AMP_RETURN_IF_ERROR(Walk(root + "/" + name, it->second, 1, seen, out));
    if (require_all && out.files.size() == before)
      return InvalidArgument("images: the class folder '", root, "/", name, "' holds no .jpg, .jpeg or .png file");
  }
  // Files directly in the root belong to no class: ignored, and counted.
  if (!here.loose.empty() && out.ignored == 0) out.ignored_example = root + "/" + here.loose[0];
  out.ignored += static_cast<int64_t>(here.loose.size());
  if (out.files.empty()) return InvalidArgument("images: '", root, "' holds no .jpg, .jpeg or .png file");
  return out;
}

StatusOr<int64_t> PositiveParam(const std::map<std::string, std::string>& params, const std::string& key) {
  auto it = params.find(key);
  if (it == params.end())
    return InvalidArgument("images: the image ", key, " is not known (it comes from the model's input, ",
                           "or from --image-size when the model's input has no fixed size)");
  const std::string& v = it->second;
  if (v.empty() || v.size() > 6 || v.find_first_not_of("0123456789") != std::string::npos || std::stoll(v) < 1)
    return InvalidArgument("images: ", key, " must be a positive integer, got '", v, "'");
  return std::stoll(v);
}

// Decodes `files` into samples (uint8 [N, c, h, w]) and labels, in parallel,
// logging progress every few seconds.
Status Decode(const std::vector<std::pair<std::string, int64_t>>& files, int64_t c, int64_t h, int64_t w,
              int64_t resize, Dataset& ds) {
  const auto n = static_cast<int64_t>(files.size());
  AMP_ASSIGN_OR_RETURN(ds.samples, Tensor::Zeros(DType::kUInt8, {n, c, h, w}));
  AMP_ASSIGN_OR_RETURN(ds.labels, Tensor::Zeros(DType::kInt64, {n}));
  int64_t* labels = ds.labels.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) labels[i] = files[static_cast<size_t>(i)].second;
  uint8_t* samples = ds.samples.data<uint8_t>();
  const int64_t sample_bytes = c * h * w;
  std::vector<Status> errors(static_cast<size_t>(n));
  std::atomic<int64_t> done{0};
  std::atomic<bool> failed{false};
  const auto start = std::chrono::steady_clock::now();
  auto last_log = start;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 4)
#endif
  for (int64_t i = 0; i < n; ++i) {
    if (failed.load(std::memory_order_relaxed)) continue;
    const std::string& path = files[static_cast<size_t>(i)].first;
    Status st = [&]() -> Status {
      AMP_ASSIGN_OR_RETURN(std::string bytes, ir::ReadRegularFile(path, kMaxImageFileBytes, "image file"));
      AMP_ASSIGN_OR_RETURN(Image image, DecodeImage(bytes, path, resize > 0 ? resize : h, resize > 0 ? resize : w));
      if (image.channels != c) image = ToChannels(image, c);
      ResizeAndCenterCrop(image, h, w, samples + i * sample_bytes, resize);
      return Status::Ok();
    }();
    if (!st.ok()) {
      errors[static_cast<size_t>(i)] = std::move(st);
      failed.store(true, std::memory_order_relaxed);
    }
    const int64_t k = done.fetch_add(1, std::memory_order_relaxed) + 1;
#ifdef _OPENMP
    if (omp_get_thread_num() == 0) {
#else
    {
#endif
      const auto now = std::chrono::steady_clock::now();
      if (now - last_log > std::chrono::seconds(5) && k < n) {
        last_log = now;
        spdlog::info("images: decoded {} of {} ({:.0f} s)", k, n,
                     std::chrono::duration<double>(now - start).count());
      }
    }
  }
  for (const Status& st : errors)
    if (!st.ok()) return st;
  return Status::Ok();
}

}  // namespace

StatusOr<Dataset> LoadImageFolder(const std::string& dir, const std::string& split,
                                  const std::map<std::string, std::string>& params) {
  AMP_ASSIGN_OR_RETURN(int64_t h, PositiveParam(params, "height"));
  AMP_ASSIGN_OR_RETURN(int64_t w, PositiveParam(params, "width"));
  AMP_ASSIGN_OR_RETURN(int64_t c, PositiveParam(params, "channels"));
  if (h > kMaxImageSide || w > kMaxImageSide)
    return InvalidArgument("images: ", h, "x", w, " is larger than ", kMaxImageSide, " pixels a side");
  if (c != 1 && c != 3)
    return InvalidArgument("images: the model takes ", c, " channels; image folders give 1 (gray) or 3 (RGB)");
  int64_t resize = 0;
  if (params.count("resize")) {
    AMP_ASSIGN_OR_RETURN(resize, PositiveParam(params, "resize"));
    if (resize < std::max(h, w))
      return InvalidArgument("images: a resize to ", resize, " is smaller than the ", h, "x", w,
                             " crop (the shorter side must cover it)");
    // "train_window": the training images stay resize x resize, and each
    // batch takes a random h x w window of them (Augmentation::window_*).
    if (split == "train" && params.count("train_window")) h = w = resize;
  }
  if (!IsDir(dir)) {
    struct stat st{};
    if (::stat(dir.c_str(), &st) != 0) return NotFound("images: the folder '", dir, "' does not exist");
    return InvalidArgument("images: '", dir, "' is not a folder");
  }
  // train/ with val/ (or test/): the given splits; train/ alone, or class
  // folders directly in `dir`: the fixed 90/10 split of their files.
  const bool has_train = IsDir(dir + "/train");
  std::string test_dir;
  for (const char* name : {"val", "test"})
    if (has_train && test_dir.empty() && IsDir(dir + "/" + name)) test_dir = dir + "/" + name;
  const std::string train_dir = has_train ? dir + "/train" : dir;
  AMP_ASSIGN_OR_RETURN(RootFolder train_root, ReadRoot(train_dir));
  const std::vector<std::string>& classes = train_root.classes;
  Listing listing;
  if (split == "test" && !test_dir.empty()) {
    AMP_ASSIGN_OR_RETURN(RootFolder test_root, ReadRoot(test_dir));
    AMP_ASSIGN_OR_RETURN(listing, ListImages(test_dir, test_root, classes, /*require_all=*/false));
  } else {
    AMP_ASSIGN_OR_RETURN(listing, ListImages(train_dir, train_root, classes, /*require_all=*/true));
    if (test_dir.empty()) {
      std::vector<std::pair<std::string, int64_t>> kept;
      for (int64_t i : SplitIndices(static_cast<int64_t>(listing.files.size()), split))
        kept.push_back(std::move(listing.files[static_cast<size_t>(i)]));
      listing.files = std::move(kept);
      // An empty test part (fewer than 10 images) leaves the epochs unevaluated, with the trainer's warning.
      if (listing.files.empty() && split == "train")
        return InvalidArgument("images: the train part of the 90/10 split of '", train_dir, "' is empty");
    }
  }
  if (listing.ignored > 0)
    spdlog::warn("images: ignored {} file(s) that are not .jpg, .jpeg or .png in a class folder (such as '{}')",
                 listing.ignored, listing.ignored_example);
  const std::string source = split == "test" && !test_dir.empty() ? test_dir
                             : test_dir.empty()                  ? train_dir + " (" + split + " part of 90/10)"
                                                                 : train_dir;
  spdlog::info("images: {} {} images of {} classes from {}, decoded to {}x{}x{}{} ({:.1f} MiB)",
               listing.files.size(), split, classes.size(), source, c, h, w,
               resize > 0 ? fmt::format(" (resized to {} first)", resize) : std::string(),
               static_cast<double>(listing.files.size()) * static_cast<double>(c * h * w) / (1 << 20));
  // Held in memory whole: refuse what would not fit rather than be killed for it.
  const double bytes = static_cast<double>(listing.files.size()) * static_cast<double>(c * h * w);
  const double memory = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  if (memory > 0 && bytes > 0.75 * memory)
    return InvalidArgument("images: ", listing.files.size(), " images at ", c, "x", h, "x", w, " take ",
                           static_cast<int64_t>(bytes / (1 << 20)), " MiB, more than 3/4 of this machine's ",
                           static_cast<int64_t>(memory / (1 << 20)), " MiB; use fewer images or a smaller --image-size");
  if (split == "train") spdlog::info("images: classes (label: folder) {}", ClassList(classes));
  Dataset ds;
  ds.num_classes = static_cast<int64_t>(classes.size());
  ds.sample_dims = {c, h, w};
  AMP_RETURN_IF_ERROR(Decode(listing.files, c, h, w, resize, ds));
  return ds;
}

}  // namespace amptrain::executor::data
