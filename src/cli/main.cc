// ortgpu: one binary, four jobs (doctor, bench, serve, perf). This file only
// wires the subcommands; each lives in its own <name>_cmd.cc and calls the
// core library.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/cuda_setup.h"

int main(int argc, char** argv) {
  using namespace ortgpu::cli;
  CLI::App app{"ortgpu: prove that an ONNX model runs on the GPU, measure it, and serve it.\n"
               "ONNX Runtime 1.29 with the CUDA execution provider; CUDA libraries are found at run time.",
               "ortgpu"};
  app.set_help_all_flag("--help-all", "Print help for every subcommand");
  bool show_version = false;
  app.add_flag("--version", show_version,
               "Print ortgpu's and ONNX Runtime's versions, and the driver, CUDA runtime and cuDNN versions found");
  app.require_subcommand(0, 1);

  CommandResult result;
  AddDoctorCommand(app, result);
  AddBenchCommand(app, result);
  AddServeCommand(app, result);
  AddPerfCommand(app, result);

  // The CUDA libraries are found and preloaded before any command can create
  // a CUDA session, so no LD_LIBRARY_PATH is needed (gpu/preload.h).
  app.parse_complete_callback([&app]() {
    if (!app.get_subcommands().empty()) PreloadCudaLibrariesOnce();
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Bad usage: one line naming the problem, exit code 2.
    const std::string command = app.get_subcommands().empty() ? "" : app.get_subcommands().front()->get_name() + " ";
    std::fprintf(stderr, "ortgpu: %s (see 'ortgpu %s--help')\n", e.what(), command.c_str());
    return 2;
  }
  if (show_version) {
    PreloadCudaLibrariesOnce();
    std::fputs(VersionText().c_str(), stdout);
    return 0;
  }
  if (app.get_subcommands().empty()) {
    std::fputs(app.help().c_str(), stdout);
    return 2;
  }
  return result.exit_code;
}
