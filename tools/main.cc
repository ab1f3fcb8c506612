// amptrain: the command line. Flags are parsed here and in tools/*.cc only.
//
// Exit codes: 0 success, 1 a command failed (one line `amptrain: error: ...`
// on stderr), 2 bad command line (one line on stderr).
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>

#include "kernels/cpu/cpu_info.h"
#include "tools/commands.h"

namespace {

int Fail(const std::string& message, int code) {
  std::string line = message;
  std::replace(line.begin(), line.end(), '\n', ' ');
  std::fprintf(stderr, "amptrain: error: %s\n", line.c_str());
  return code;
}

int Main(int argc, char** argv) {
  CLI::App app("amptrain: mixed-precision training and inference runtime for ONNX models", "amptrain");
  app.set_version_flag(
      "--version",
      [] {
        std::string cpu = amptrain::kernels::cpu::DescribeCpu();
        if (!cpu.empty() && cpu.back() == '\n') cpu.pop_back();
        return std::string("amptrain ") + AMPTRAIN_VERSION + "\n" + cpu;
      },
      "Print the version and this CPU's capabilities (instruction sets, oneDNN's ISA, low precision) and exit");
  app.add_flag_callback("-v,--verbose", [] { spdlog::set_level(spdlog::level::debug); }, "Debug logging");
  app.require_subcommand(0, 1);
  app.fallthrough();

  amptrain::Status result;
  amptrain::tools::AddInspectCommand(app, result);
  amptrain::tools::AddRunCommand(app, result);
  amptrain::tools::AddExportCommand(app, result);
  amptrain::tools::AddModelsCommand(app, result);
  amptrain::tools::AddGradCommand(app, result);
  amptrain::tools::AddBenchCommand(app, result);
  amptrain::tools::AddTrainCommand(app, result);
  amptrain::tools::AddEvalCommand(app, result);
  amptrain::tools::AddConvertCommand(app, result);

  auto logger = spdlog::stdout_color_mt("amptrain");
  logger->set_pattern("%^[%l]%$ %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::info);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    return Fail(std::string(e.what()) + " (see amptrain --help)", 2);
  }
  if (app.get_subcommands().empty()) {
    std::string names;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
      names += (names.empty() ? "" : ", ") + sub->get_name();
    return Fail("no subcommand given; use one of " + names + " (see amptrain --help)", 2);
  }
  if (!result.ok()) return Fail(result.message(), 1);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    return Fail(std::string("internal error: ") + e.what(), 1);
  }
}
