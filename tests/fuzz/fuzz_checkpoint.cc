// libFuzzer target: a checkpoint's trainer_state.json as LoadCheckpoint reads
// it (executor/train/checkpoint.h).
//
// The first byte picks what the harness does with the rest, the JSON text:
//   bit 0  re-sign it: parse it and set "checksum" to the SHA-256 the loader
//          expects, so that the fields behind the checksum are reached (the
//          fuzzer cannot compute hashes);
//   bit 1  with bit 0, also set "files" to the size and hash of the two
//          safetensors files the harness wrote, so that loading goes on to read
//          them;
//   bit 2  load from a folder named ckpt-00000002 (its name must agree with
//          "step") instead of one named state.
// Without bit 0 the text is written as it is. Every input must give a
// checkpoint or a Status, never a crash.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "executor/train/checkpoint.h"
#include "executor/train/safetensors.h"
#include "executor/train/sha256.h"

namespace {

using nlohmann::json;
namespace train = amptrain::executor::train;

std::string g_root;
json g_files;  // {"model.safetensors": {"bytes", "sha256"}, "optimizer.safetensors": {...}}

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_checkpoint: %s\n", what.c_str());
  std::abort();
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
  if (!f) Fail("cannot write " + path);
}

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char dir[] = "/tmp/amptrain-fuzz-ckpt-XXXXXX";
  if (!::mkdtemp(dir)) Fail("mkdtemp failed");
  g_root = dir;
  std::atexit([] { std::filesystem::remove_all(g_root); });  // libFuzzer ends with exit()
  std::map<std::string, amptrain::ir::Tensor> model = {
      {"fc.weight", amptrain::ir::Tensor::Floats({1, 2, 3, 4, 5, 6}, {2, 3})},
      {"fc.bias", amptrain::ir::Tensor::Floats({0.5f, -0.5f}, {2})}};
  std::map<std::string, amptrain::ir::Tensor> optimizer = {
      {"fc.weight.momentum", amptrain::ir::Tensor::Floats({0, 0, 0, 0, 0, 0}, {2, 3})}};
  const std::string model_bytes = *train::SerializeSafetensors(model, {});
  const std::string optimizer_bytes = *train::SerializeSafetensors(optimizer, {});
  g_files = {{"model.safetensors", {{"bytes", model_bytes.size()}, {"sha256", train::Sha256Hex(model_bytes)}}},
             {"optimizer.safetensors",
              {{"bytes", optimizer_bytes.size()}, {"sha256", train::Sha256Hex(optimizer_bytes)}}}};
  for (const char* name : {"state", "ckpt-00000002"}) {
    std::filesystem::create_directories(g_root + "/" + name);
    WriteFile(g_root + "/" + name + "/model.safetensors", model_bytes);
    WriteFile(g_root + "/" + name + "/optimizer.safetensors", optimizer_bytes);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (mode & 1) {
    // The harness's own dump() recurses: it re-signs only documents with few
    // brackets (a real state has 6), counting those in strings too.
    if (std::count(text.begin(), text.end(), '[') + std::count(text.begin(), text.end(), '{') > 64) return 0;
    json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return 0;
    if (mode & 2) j["files"] = g_files;
    j.erase("checksum");
    j["checksum"] = train::Sha256Hex(Dump(j));
    text = Dump(j);
  }
  const std::string folder = g_root + ((mode & 4) ? "/ckpt-00000002" : "/state");
  WriteFile(folder + "/trainer_state.json", text);
  (void)train::LoadCheckpoint(folder);
  return 0;
}
