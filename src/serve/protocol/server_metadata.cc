#include "serve/protocol/server_metadata.h"

#ifndef ORTGPU_VERSION
#define ORTGPU_VERSION "0.0.0"
#endif

namespace ortgpu::serve::protocol {

std::string ServerVersion() { return ORTGPU_VERSION; }

// "trace" is not listed: the trace settings endpoints answer, but no trace
// is recorded (docs/PROTOCOL.md).
std::vector<std::string> ServerExtensions() {
  return {"binary_tensor_data", "statistics", "model_repository", "model_configuration", "schedule_policy",
          "logging", "system_shared_memory", "cuda_shared_memory", "classification"};
}

}  // namespace ortgpu::serve::protocol
