// libFuzzer target: safetensors files, the checkpoint tensor format
// (executor/train/safetensors.h, ParseSafetensors).
//
// Every input must give the tensors or a Status. What parses must serialize
// and parse back to the same tensors and metadata.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "executor/train/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace amptrain::executor::train;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  amptrain::StatusOr<SafetensorsContents> c = ParseSafetensors(bytes, "fuzz.safetensors");
  if (!c.ok()) return 0;
  amptrain::StatusOr<std::string> written = SerializeSafetensors(c->tensors, c->metadata);
  amptrain::StatusOr<SafetensorsContents> again =
      written.ok() ? ParseSafetensors(*written, "rewritten.safetensors") : written.status();
  if (!again.ok() || again->tensors != c->tensors || again->metadata != c->metadata) {
    std::fprintf(stderr, "fuzz_safetensors: round trip failed: %s\n",
                 again.ok() ? "different contents" : again.status().ToString().c_str());
    std::abort();
  }
  return 0;
}
