// --device on run, train, grad, eval and bench: a value that is not a device
// is a usage error (exit 2); a CUDA device on a machine without one (or in a
// build without the CUDA backend) is one clear line and exit 1, before any
// file is read or written.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/e2e/cli_fixture.h"

namespace amptrain {
namespace {

class DeviceCliTest : public testing::CliFixture {
 protected:
  // Each subcommand with the arguments it requires; the device is checked
  // first, so the model need not exist.
  std::vector<std::string> Commands() const {
    const std::string m = Path("absent.onnx");
    return {"run " + m + " -o " + Path("out"), "train " + m, "grad " + m + " --labels " + Path("y.npy") + " -o " + Path("out"),
            "eval " + m, "bench " + m, "bench " + m + " --train"};
  }
};

TEST_F(DeviceCliTest, BogusDeviceIsAUsageError) {
  for (const std::string& cmd : Commands()) {
    ExpectRefused(cmd + " --device bogus", "--device: unknown device 'bogus': expected cpu, cuda or cuda:N", 2);
    ExpectRefused(cmd + " --device cuda:x", "unknown device 'cuda:x'", 2);
  }
}

TEST_F(DeviceCliTest, CudaWithoutAGpuIsOneClearLine) {
  const testing::CliResult probe = Cli(Commands()[0] + " --device cuda");
  const bool no_gpu = probe.err.find("no CUDA device: ") != std::string::npos;
  const bool no_backend = probe.err.find("built without the CUDA backend") != std::string::npos;
  if (!no_gpu && !no_backend) GTEST_SKIP() << "a CUDA device is usable here; stderr: " << probe.err;
  const std::string reason = no_gpu ? "no CUDA device: " : "built without the CUDA backend";
  for (const std::string& cmd : Commands()) {
    ExpectRefused(cmd + " --device cuda", reason);
    ExpectRefused(cmd + " --device cuda:3", reason);
  }
}

}  // namespace
}  // namespace amptrain
