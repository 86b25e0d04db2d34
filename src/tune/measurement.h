// One measurement the search takes, in-process or served (issue 28).
#pragma once

namespace ortgpu::tune {

struct Measurement {
  // In-process: milliseconds for one batch (p50). Served: p99 latency (ms)
  // at the goodput below.
  double latency_ms = 0;
  // In-process: items/s of one stream at that batch. Served: goodput, the
  // best items/s whose p99 stays within the latency budget (perf's budget
  // search); 0 when no load met the budget.
  double items_per_s = 0;
};

}  // namespace ortgpu::tune
