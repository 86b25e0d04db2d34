// The subcommands of the `ortgpu` binary. Each one declares its flags on the
// CLI11 app in one table (the source of --help) and, when chosen, runs by
// calling the core library and storing its exit code in `exit_code`.
// Commands stay thin: parsing and printing here, the work in src/<concern>/.
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "status/expected.h"
#include "serve/repository/instance_placement.h"
#include "status/status.h"

namespace ortgpu::cli {

struct CommandResult {
  int exit_code = 0;
};

// Writes `text` to `path` (an --html page, a --config-out fragment); the
// error names `what` and the path.
Status WriteOutputFile(const std::string& path, const std::string& text, const char* what);

// --device of doctor and bench: a CUDA ordinal ("0", "1", ...), or "all"
// (nullopt); InvalidArgument naming the flag for anything else.
Expected<std::optional<int>> ParseDeviceFlag(const std::string& text);

// Whether GPU `device` (--device `text`) is one of the `visible` GPUs; if
// not, InvalidArgument naming how many are visible, their numbers and
// CUDA_VISIBLE_DEVICES.
Status CheckDeviceVisible(const std::string& text, int device, const serve::VisibleGpus& visible);

void AddDoctorCommand(CLI::App& app, CommandResult& result);
void AddBenchCommand(CLI::App& app, CommandResult& result);
void AddServeCommand(CLI::App& app, CommandResult& result);
void AddPerfCommand(CLI::App& app, CommandResult& result);
void AddConvertCommand(CLI::App& app, CommandResult& result);
void AddTuneCommand(CLI::App& app, CommandResult& result);

}  // namespace ortgpu::cli
