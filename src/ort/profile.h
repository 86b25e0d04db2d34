// ORT profile parsing: turns the JSON trace ORT writes when profiling is
// enabled (SessionOptions::profile_prefix) into per-node kernel events, the
// evidence of where each node really ran. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "status/expected.h"

namespace ortgpu {

struct TensorTypeShape {
  std::string type;            // ORT's element type name: "float", "int64"
  std::vector<int64_t> shape;
};

struct NodeEvent {
  std::string node_name;       // "/bert/Gather_1" (without "_kernel_time")
  std::string op_type;         // "Gather"
  std::string provider;        // "CUDAExecutionProvider"
  int64_t duration_us = 0;
  std::vector<TensorTypeShape> inputs;
  std::vector<TensorTypeShape> outputs;
};

// Kernel-time events of the trace, in trace order (one per node per run).
Expected<std::vector<NodeEvent>> ParseProfile(std::string_view json);
// Reads and parses a profile file.
Expected<std::vector<NodeEvent>> ReadProfile(const std::string& path);

}  // namespace ortgpu
