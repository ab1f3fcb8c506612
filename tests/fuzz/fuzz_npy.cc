// libFuzzer target: .npy files (executor/npy.h, ParseNpy), and .npz
// archives (executor/npz.h, ParseNpz) for inputs that start with "PK".
//
// Every input must give a tensor (arrays) or a Status. A tensor that parses
// must serialize, and the bytes written must parse back to the same tensor.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "executor/npy.h"
#include "executor/npz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace amptrain;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  auto round_trip = [](const ir::Tensor& t) {
    StatusOr<std::string> written = executor::SerializeNpy(t);
    StatusOr<ir::Tensor> again = written.ok() ? executor::ParseNpy(*written, "rewritten.npy") : written.status();
    if (!again.ok() || !(*again == t)) {
      std::fprintf(stderr, "fuzz_npy: round trip failed: %s\n",
                   again.ok() ? "different tensor" : again.status().ToString().c_str());
      std::abort();
    }
  };
  if (bytes.rfind("PK", 0) == 0) {
    StatusOr<executor::NpzArrays> arrays = executor::ParseNpz(bytes, "fuzz.npz");
    if (arrays.ok())
      for (const auto& [name, t] : *arrays) round_trip(t);
    return 0;
  }
  StatusOr<ir::Tensor> t = executor::ParseNpy(bytes, "fuzz.npy");
  if (t.ok()) round_trip(*t);
  return 0;
}
