// libFuzzer target: .npy files (executor/npy.h, ParseNpy).
//
// Every input must give a tensor or a Status. A tensor that parses must
// serialize, and the bytes written must parse back to the same tensor.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "executor/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace amptrain;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  StatusOr<ir::Tensor> t = executor::ParseNpy(bytes, "fuzz.npy");
  if (!t.ok()) return 0;
  StatusOr<std::string> written = executor::SerializeNpy(*t);
  StatusOr<ir::Tensor> again = written.ok() ? executor::ParseNpy(*written, "rewritten.npy") : written.status();
  if (!again.ok() || !(*again == *t)) {
    std::fprintf(stderr, "fuzz_npy: round trip failed: %s\n",
                 again.ok() ? "different tensor" : again.status().ToString().c_str());
    std::abort();
  }
  return 0;
}
