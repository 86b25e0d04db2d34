// `ortgpu serve`'s flags table. Most flags bind straight to a field of
// serve::ServeOptions, so the struct's default is the flag's default and
// `--help` shows it; the struct is the one place a default is written. The
// rest are read by RunServeCommand into the options (files to read, specs to
// split, the GPU probe behind --cpu).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "serve/server.h"

namespace ortgpu::cli {

struct ServeFlags {
  // Every flag that sets one field. One default differs from the struct's:
  // core.loader.model_cache_dir is the user's cache folder (the library's
  // default, "", converts at every load, which suits tests).
  serve::ServeOptions options;
  std::vector<std::string> warmup_inputs;  // --warmup-input NAME=FILE.npy
  std::vector<std::string> warmup_shapes;  // --warmup-shape NAME:DIMS
  bool cpu = false;                        // --cpu
  std::string log_level = "info";          // --log-level
  std::string auth_token_file;             // --auth-token-file
};

// Declares serve's flags on `cmd`, bound to `flags` (which must outlive the
// parse). A flag given more than once, or out of range, is a CLI11 parse
// error. --grpc-threads, the old name of --grpc-poller-threads, still works
// and prints a deprecation warning on stderr when given.
void AddServeFlags(CLI::App& cmd, ServeFlags& flags);

}  // namespace ortgpu::cli
