// --device cpu|cuda|cuda:N for run, train, grad, eval and bench.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "executor/session.h"
#include "kernels/device.h"

namespace amptrain::tools {

// Adds --device (default "cpu") to `cmd`; a value ParseDeviceSpec rejects is
// a usage error at parse time.
void AddDeviceFlag(CLI::App* cmd, std::string& device);

// The device `text` names, opened once to check that this process can use
// it: "no CUDA device: ...", a bad index (naming the count) or a build
// without the CUDA backend are errors here, before any model is read.
StatusOr<kernels::DeviceSpec> OpenDeviceFlag(const std::string& text);

// Puts `spec` into the session options.
void ApplyDevice(const kernels::DeviceSpec& spec, executor::SessionOptions& options);

}  // namespace amptrain::tools
