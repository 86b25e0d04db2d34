// ortgpu: one binary, six jobs (doctor, bench, serve, perf, convert, tune). This file only
// wires the subcommands; each lives in its own <name>_cmd.cc and calls the
// core library.
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <system_error>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/cuda_setup.h"

namespace {

// What a command's top level says about an exception nothing below caught
// (every module returns Status; this is the last line of defence, so a
// crash never ends in an abort with exit 134). Exit 1.
int ReportUncaught(const CLI::App& app) {
  const std::string command = app.get_subcommands().empty() ? "" : app.get_subcommands().front()->get_name() + ": ";
  try {
    throw;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "ortgpu %sout of memory: an allocation failed; lower --batch, --shape or --concurrency, or give "
                 "the process more memory\n",
                 command.c_str());
  } catch (const std::system_error& e) {
    std::fprintf(stderr,
                 "ortgpu %sthe system refused a resource (%s); with a large --concurrency it is usually threads: "
                 "lower --concurrency, or raise the process and thread limits (ulimit -u, ulimit -v)\n",
                 command.c_str(), e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ortgpu %sunexpected error: %s; please report it with the command line\n", command.c_str(),
                 e.what());
  } catch (...) {
    std::fprintf(stderr, "ortgpu %sunexpected error of unknown type; please report it with the command line\n",
                 command.c_str());
  }
  return 1;
}

}  // namespace

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
  AddConvertCommand(app, result);
  AddTuneCommand(app, result);

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
  } catch (...) {
    return ReportUncaught(app);
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
