// Classification of what ORT logged while a session was created: the lines
// that explain a silent CPU fallback or a slow GPU session. Pure functions;
// thread-safe.
#pragma once

#include <string>
#include <vector>

#include "ort/runtime.h"

namespace ortgpu::doctor {

struct OrtLogFacts {
  // "Failed to load library ... with error: libcublasLt.so.13: cannot open ..."
  std::string library_load_error;
  std::string missing_library;       // "libcublasLt.so.13" when named
  bool fell_back_to_cpu = false;     // EP failed and ORT went on with the CPU
  int memcpy_nodes_added = -1;       // "N Memcpy nodes are added"; -1 if not said
  bool nodes_not_assigned = false;   // "Some nodes were not assigned to the preferred execution providers"
  std::string cudnn_version_line;    // a line naming the cuDNN version, if ORT printed one
  std::vector<std::string> errors;   // every error-severity message, verbatim
};

OrtLogFacts ClassifyOrtLog(const std::vector<OrtLogRecord>& records);
// Same for an exception/status message text (the EP load error arrives there).
void ClassifyOrtMessage(const std::string& message, OrtLogFacts& facts);

}  // namespace ortgpu::doctor
