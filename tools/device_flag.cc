#include "tools/device_flag.h"

namespace amptrain::tools {

void AddDeviceFlag(CLI::App* cmd, std::string& device) {
  cmd->add_option("--device", device, "cpu, cuda or cuda:N")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            StatusOr<kernels::DeviceSpec> spec = kernels::ParseDeviceSpec(text);
            return spec.ok() ? "" : spec.status().message();
          },
          "DEVICE"));
}

StatusOr<kernels::DeviceSpec> OpenDeviceFlag(const std::string& text) {
  AMP_ASSIGN_OR_RETURN(kernels::DeviceSpec spec, kernels::ParseDeviceSpec(text));
  AMP_RETURN_IF_ERROR(kernels::OpenDevice(spec).status());
  return spec;
}

void ApplyDevice(const kernels::DeviceSpec& spec, executor::SessionOptions& options) {
  options.device = spec.kind;
  options.device_index = spec.index;
}

}  // namespace amptrain::tools
