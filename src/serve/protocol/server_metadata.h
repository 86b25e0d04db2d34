// What the server says about itself in server metadata (GET /v2 and the
// ServerMetadata RPC): its name, version and the extensions it implements.
// One list for both front ends, so HTTP and gRPC never disagree; an
// extension is listed only when both implement it (perf_analyzer reads the
// statistics block only when "statistics" is listed). Pure; any thread.
#pragma once

#include <string>
#include <vector>

namespace ortgpu::serve::protocol {

inline constexpr const char* kServerName = "ortgpu";
std::string ServerVersion();
// Triton's extension names, as listed in server metadata.
std::vector<std::string> ServerExtensions();

}  // namespace ortgpu::serve::protocol
