#include "executor/train/checkpoint.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <vector>

#include <spdlog/spdlog.h>

#include "executor/train/file_util.h"
#include "executor/train/safetensors.h"
#include "executor/train/sha256.h"
#include "ir/file_io.h"

namespace amptrain::executor::train {

namespace fs = std::filesystem;
using ir::Tensor;
using nlohmann::json;

namespace {

constexpr const char* kFormat = "amptrain.checkpoint";
constexpr int kVersion = 1;
constexpr const char* kModelFile = "model.safetensors";
constexpr const char* kOptimizerFile = "optimizer.safetensors";
constexpr const char* kStateFile = "trainer_state.json";
constexpr const char* kCheckpointPrefix = "ckpt-";
constexpr const char* kTempPrefix = ".tmp-ckpt-";
constexpr const char* kOldPrefix = ".tmp-old-ckpt-";

// The step of a folder named ckpt-<8+ digits>, or -1.
int64_t StepOfName(const std::string& name) {
  const std::string prefix = kCheckpointPrefix;
  if (name.rfind(prefix, 0) != 0) return -1;
  std::string digits = name.substr(prefix.size());
  if (digits.size() < 8 || digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  return std::stoll(digits);
}

std::string Join(const std::string& a, const std::string& b) { return (fs::path(a) / b).string(); }

Status FsError(const char* what, const std::string& path, const std::error_code& ec) {
  return IoError("cannot ", what, " '", path, "': ", ec.message());
}

// Entries of `dir` by name; an unreadable folder is an error.
StatusOr<std::vector<std::string>> ListNames(const std::string& dir) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return NotFound("checkpoint folder '", dir, "' does not exist");
    return FsError("list", dir, ec);
  }
  std::vector<std::string> names;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) return FsError("list", dir, ec);
    names.push_back(it->path().filename().string());
  }
  if (ec) return FsError("list", dir, ec);
  return names;
}

// Removes temp folders whose writing process no longer exists.
void RemoveStaleTemps(const std::string& dir, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (name.rfind(kTempPrefix, 0) != 0 && name.rfind(kOldPrefix, 0) != 0) continue;
    long pid = std::atol(name.substr(name.rfind('-') + 1).c_str());
    if (pid <= 0 || pid == ::getpid() || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)) {
      std::error_code ec;
      fs::remove_all(Join(dir, name), ec);
    }
  }
}

// Writes `bytes` to folder/file and records its size and hash in `files`.
Status WriteRecorded(const std::string& folder, const char* file, const std::string& bytes, json& files) {
  AMP_RETURN_IF_ERROR(WriteFileSynced(Join(folder, file), bytes));
  files[file] = {{"bytes", bytes.size()}, {"sha256", Sha256Hex(bytes)}};
  return Status::Ok();
}

json StateJson(const TrainerState& s, json files) {
  json j = {{"format", kFormat},
            {"version", kVersion},
            {"step", s.step},
            {"epoch", s.epoch},
            {"lr_step", s.lr_step},
            {"optimizer_step", s.optimizer_step},
            {"data_cursor", {{"epoch", s.data_epoch}, {"index", s.data_index}}},
            {"rng_state", s.rng_state},
            {"precision_plan_hash", s.precision_plan_hash},
            {"config", s.config},
            {"loss_scaler", s.scaler},
            {"files", std::move(files)}};
  j["checksum"] = Sha256Hex(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  return j;
}

Status WriteInto(const std::string& tmp, const std::map<std::string, Tensor>& model,
                 const std::map<std::string, Tensor>& optimizer, const TrainerState& state) {
  const std::map<std::string, std::string> metadata = {{"format", "pt"}};
  json files = json::object();
  AMP_ASSIGN_OR_RETURN(std::string model_bytes, SerializeSafetensors(model, metadata));
  AMP_RETURN_IF_ERROR(WriteRecorded(tmp, kModelFile, model_bytes, files).WithContext("model weights"));
  model_bytes.clear();
  model_bytes.shrink_to_fit();
  AMP_ASSIGN_OR_RETURN(std::string opt_bytes, SerializeSafetensors(optimizer, metadata));
  AMP_RETURN_IF_ERROR(WriteRecorded(tmp, kOptimizerFile, opt_bytes, files).WithContext("optimizer state"));
  std::string state_text;
  try {
    state_text = StateJson(state, std::move(files)).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (const json::exception& e) {
    return InvalidArgument("trainer state cannot be written as JSON: ", e.what());
  }
  AMP_RETURN_IF_ERROR(WriteFileSynced(Join(tmp, kStateFile), state_text));
  return SyncDirectory(tmp);
}

// Deletes checkpoints older than `step` beyond the newest keep_last - 1 of them.
void Prune(const std::string& dir, const std::vector<std::string>& names, int64_t step, int keep_last,
           const std::set<int64_t>* prunable) {
  if (keep_last <= 0) return;
  std::vector<int64_t> older;
  for (const std::string& name : names) {
    int64_t s = StepOfName(name);
    if (prunable && !prunable->count(s)) continue;
    std::error_code ec;
    if (s >= 0 && s < step && fs::exists(Join(Join(dir, name), kStateFile), ec)) older.push_back(s);
  }
  std::sort(older.rbegin(), older.rend());
  // Renamed first, so that a kill during the deletion leaves no partial ckpt-*.
  for (size_t i = static_cast<size_t>(keep_last - 1); i < older.size(); ++i) {
    const std::string doomed = Join(dir, StrCat(kOldPrefix, older[i], "-", ::getpid()));
    std::error_code ec;
    fs::rename(CheckpointPath(dir, older[i]), doomed, ec);
    if (!ec) fs::remove_all(doomed, ec);
    if (ec) spdlog::warn("could not delete old checkpoint '{}': {}", CheckpointPath(dir, older[i]), ec.message());
  }
}

StatusOr<int64_t> GetInt(const json& j, const char* key, const std::string& label) {
  if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<int64_t>() < 0)
    return InvalidArgument(label, ": '", key, "' must be an integer >= 0");
  return j[key].get<int64_t>();
}

Status ParseState(const json& j, const std::string& label, TrainerState* s) {
  if (!j.contains("format") || j["format"] != kFormat || !j.contains("version") || j["version"] != kVersion)
    return InvalidArgument(label, ": not an amptrain checkpoint state of version ", kVersion);
  AMP_ASSIGN_OR_RETURN(s->step, GetInt(j, "step", label));
  AMP_ASSIGN_OR_RETURN(s->epoch, GetInt(j, "epoch", label));
  AMP_ASSIGN_OR_RETURN(s->lr_step, GetInt(j, "lr_step", label));
  AMP_ASSIGN_OR_RETURN(s->optimizer_step, GetInt(j, "optimizer_step", label));
  if (!j.contains("data_cursor") || !j["data_cursor"].is_object())
    return InvalidArgument(label, ": 'data_cursor' must be an object");
  AMP_ASSIGN_OR_RETURN(s->data_epoch, GetInt(j["data_cursor"], "epoch", label + " data_cursor"));
  AMP_ASSIGN_OR_RETURN(s->data_index, GetInt(j["data_cursor"], "index", label + " data_cursor"));
  if (!j.contains("rng_state") || !j["rng_state"].is_number_integer() ||
      (!j["rng_state"].is_number_unsigned() && j["rng_state"].get<int64_t>() < 0))
    return InvalidArgument(label, ": 'rng_state' must be an unsigned integer");
  s->rng_state = j["rng_state"].get<uint64_t>();
  if (!j.contains("precision_plan_hash") || !j["precision_plan_hash"].is_string())
    return InvalidArgument(label, ": 'precision_plan_hash' must be a string");
  s->precision_plan_hash = j["precision_plan_hash"].get<std::string>();
  if (!j.contains("config") || !j.contains("loss_scaler"))
    return InvalidArgument(label, ": 'config' and 'loss_scaler' are required");
  s->config = j["config"];
  s->scaler = j["loss_scaler"];
  return Status::Ok();
}

// Reads folder/file, checks it against the size and hash in `files`, parses it.
StatusOr<std::map<std::string, Tensor>> ReadRecorded(const std::string& folder, const char* file, const json& files) {
  const std::string path = Join(folder, file);
  if (!files.contains(file) || !files[file].is_object() || !files[file].contains("bytes") ||
      !files[file]["bytes"].is_number_unsigned() || !files[file].contains("sha256") || !files[file]["sha256"].is_string())
    return InvalidArgument(Join(folder, kStateFile), ": no size and sha256 recorded for '", file, "'");
  AMP_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path));
  const uint64_t expected = files[file]["bytes"].get<uint64_t>();
  if (bytes.size() != expected)
    return InvalidArgument(path, ": ", bytes.size(), " bytes but the checkpoint recorded ", expected, " (truncated?)");
  if (Sha256Hex(bytes) != files[file]["sha256"].get<std::string>())
    return InvalidArgument(path, ": SHA-256 differs from the one the checkpoint recorded (the file is corrupted)");
  AMP_ASSIGN_OR_RETURN(SafetensorsContents contents, ParseSafetensors(bytes, path));
  return std::move(contents.tensors);
}

std::string TypeString(const Tensor& t) {
  std::string s = StrCat(ir::DTypeName(t.dtype()), "[");
  for (size_t i = 0; i < t.dims().size(); ++i) s += StrCat(i ? "," : "", t.dims()[i]);
  return s + "]";
}

}  // namespace

std::string CheckpointPath(const std::string& dir, int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "%s%08lld", kCheckpointPrefix, static_cast<long long>(step));
  return Join(dir, name);
}

Status SaveCheckpoint(const std::string& dir, const std::map<std::string, Tensor>& model,
                      const std::map<std::string, Tensor>& optimizer, const TrainerState& state, int keep_last,
                      const std::set<int64_t>* prunable) {
  if (state.step < 0) return InvalidArgument("checkpoint: negative step ", state.step);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return FsError("create checkpoint folder", dir, ec);
  AMP_ASSIGN_OR_RETURN(std::vector<std::string> names, ListNames(dir));
  RemoveStaleTemps(dir, names);

  const std::string final_path = CheckpointPath(dir, state.step);
  const std::string suffix = StrCat(state.step, "-", ::getpid());
  const std::string tmp = Join(dir, kTempPrefix + suffix);
  fs::remove_all(tmp, ec);
  if (!fs::create_directory(tmp, ec) || ec) return FsError("create", tmp, ec);
  Status written = WriteInto(tmp, model, optimizer, state);
  if (!written.ok()) {
    fs::remove_all(tmp, ec);
    return written.WithContext(StrCat("while writing checkpoint '", final_path, "'"));
  }
  const std::string old = Join(dir, kOldPrefix + suffix);
  const bool replacing = fs::exists(final_path, ec);
  if (replacing) {
    fs::rename(final_path, old, ec);
    if (ec) return FsError("move aside the existing checkpoint", final_path, ec);
  }
  fs::rename(tmp, final_path, ec);
  if (ec) return FsError("rename the new checkpoint to", final_path, ec);
  AMP_RETURN_IF_ERROR(SyncDirectory(dir));
  if (replacing) fs::remove_all(old, ec);
  Prune(dir, names, state.step, keep_last, prunable);
  return SyncDirectory(dir);
}

StatusOr<LoadedCheckpoint> LoadCheckpoint(const std::string& path) {
  const std::string state_path = Join(path, kStateFile);
  AMP_ASSIGN_OR_RETURN(std::string text, ReadFileBytes(state_path));
  // A real state nests 4 deep; nlohmann's parser and dump() recurse (a state
  // nested 200,000 deep overflowed the stack while its checksum was checked).
  constexpr int kMaxStateNesting = 64;
  if (ir::MaxBracketDepth(text) > kMaxStateNesting)
    return InvalidArgument(state_path, ": nested more than ", kMaxStateNesting, " levels deep; not a trainer state");
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument(state_path, ": not a JSON object");
  if (!j.contains("checksum") || !j["checksum"].is_string())
    return InvalidArgument(state_path, ": no 'checksum'");
  const std::string checksum = j["checksum"].get<std::string>();
  j.erase("checksum");
  if (Sha256Hex(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) != checksum) return InvalidArgument(state_path, ": checksum mismatch (the file is corrupted)");

  LoadedCheckpoint ckpt;
  ckpt.path = path;
  AMP_RETURN_IF_ERROR(ParseState(j, state_path, &ckpt.state));
  const int64_t named_step = StepOfName(fs::path(path).lexically_normal().filename().string());
  if (named_step >= 0 && named_step != ckpt.state.step)
    return InvalidArgument(state_path, ": holds step ", ckpt.state.step, " but the folder is named for step ", named_step);
  if (!j.contains("files") || !j["files"].is_object()) return InvalidArgument(state_path, ": 'files' must be an object");
  AMP_ASSIGN_OR_RETURN(ckpt.model, ReadRecorded(path, kModelFile, j["files"]));
  AMP_ASSIGN_OR_RETURN(ckpt.optimizer, ReadRecorded(path, kOptimizerFile, j["files"]));
  return ckpt;
}

StatusOr<std::string> FindLatestCheckpoint(const std::string& dir) {
  AMP_ASSIGN_OR_RETURN(std::vector<std::string> names, ListNames(dir));
  std::vector<std::pair<int64_t, std::string>> candidates;
  for (const std::string& name : names)
    if (int64_t step = StepOfName(name); step >= 0) candidates.emplace_back(step, Join(dir, name));
  std::sort(candidates.rbegin(), candidates.rend());
  std::string problems;
  for (const auto& [step, path] : candidates) {
    StatusOr<LoadedCheckpoint> loaded = LoadCheckpoint(path);
    if (loaded.ok()) return path;
    spdlog::warn("skipping checkpoint '{}': {}", path, loaded.status().message());
    problems += StrCat(problems.empty() ? "" : "; ", "'", path, "': ", loaded.status().message());
  }
  if (candidates.empty()) return NotFound("no checkpoint in '", dir, "'");
  return FailedPrecondition("none of the ", candidates.size(), " checkpoints in '", dir, "' is usable: ", problems);
}

Status CheckCompatible(const std::map<std::string, Tensor>& ckpt, const std::map<std::string, Tensor>& model) {
  auto c = ckpt.begin();
  auto m = model.begin();
  while (c != ckpt.end() || m != model.end()) {
    if (m == model.end() || (c != ckpt.end() && c->first < m->first))
      return InvalidArgument("checkpoint tensor '", c->first, "' is not in the model");
    if (c == ckpt.end() || m->first < c->first)
      return InvalidArgument("model tensor '", m->first, "' is missing from the checkpoint");
    if (c->second.dtype() != m->second.dtype() || c->second.dims() != m->second.dims())
      return InvalidArgument("tensor '", c->first, "' is ", TypeString(c->second), " in the checkpoint but ",
                             TypeString(m->second), " in the model");
    ++c;
    ++m;
  }
  return Status::Ok();
}

}  // namespace amptrain::executor::train
