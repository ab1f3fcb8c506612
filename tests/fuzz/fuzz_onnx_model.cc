// libFuzzer target: ONNX model import from bytes (importer/onnx_import.h).
//
// Every input must give a model or a Status, never a crash, a sanitizer
// report, an allocation past libFuzzer's -rss_limit_mb or a hang. A model
// that imports and exports must import again: the exporter writes only what
// the importer accepts.
//
// External data resolves against a folder made once per process holding
// weights.bin (4 KiB), so seeds can reach the external-data reader; the
// fuzzer cannot make files, only name them.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "importer/onnx_export.h"
#include "importer/onnx_import.h"

namespace {

std::string g_model_dir;

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_onnx_model: %s\n", what.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char dir[] = "/tmp/amptrain-fuzz-model-XXXXXX";
  if (!::mkdtemp(dir)) Fail("mkdtemp failed");
  g_model_dir = dir;
  std::atexit([] { std::filesystem::remove_all(g_model_dir); });  // libFuzzer ends with exit()
  std::string weights(4096, '\0');
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<char>(i * 37 + 11);
  std::ofstream(g_model_dir + "/weights.bin", std::ios::binary) << weights;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace amptrain;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  StatusOr<std::unique_ptr<ir::Graph>> graph = importer::ImportModelBytes(bytes, g_model_dir);
  if (!graph.ok()) return 0;
  StatusOr<std::string> exported = importer::ExportModelBytes(**graph);
  if (!exported.ok()) return 0;  // e.g. a canonical input the old opset needs as a constant
  StatusOr<std::unique_ptr<ir::Graph>> again = importer::ImportModelBytes(*exported, "");
  if (!again.ok()) Fail("an exported model does not import: " + again.status().ToString());
  return 0;
}
