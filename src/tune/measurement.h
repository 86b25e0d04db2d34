// One measurement the search takes, in-process or served (issue 28).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace ortgpu::tune {

// One load step of perf's budget search against a served candidate.
struct LoadStep {
  double load = 0;         // connections
  double items_per_s = 0;  // served items/s at that load
  double p99_ms = 0;       // the latency the budget is checked at (p99)
};

struct Measurement {
  // In-process: milliseconds for one batch (p50). Served: p99 latency (ms)
  // at the goodput below.
  double latency_ms = 0;
  // In-process: items/s of one stream at that batch. Served: goodput, the
  // best items/s whose p99 stays within the latency budget (perf's budget
  // search); 0 when no load met the budget.
  double items_per_s = 0;

  // Served only, for the report (tune/report.h); kept in the history, absent
  // from histories written before them.
  std::vector<LoadStep> steps;             // perf's budget-search steps, in load order
  std::optional<double> gpu_memory_bytes;  // GPU memory in use while serving (serve's nv_gpu_memory_used_bytes)
  std::optional<double> load_s;            // from starting serve to its listening (model loaded and warmed up)
};

}  // namespace ortgpu::tune
