// One measurement the search takes, in-process or served, and one judgment
// of a precision against the accuracy budget (issue 28).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
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

  // In-process: the half-width of the 95% interval of the p50, as a share of
  // it (the noise the screening's flips must beat); 0 when unknown.
  double rel_noise = 0;
  // Served: the connections at the goodput (0: none met the budget), the
  // failed requests seen over the whole load search, and how it ended.
  int concurrency = 0;
  int64_t errors = 0;
  std::string note;

  // Served: the further budget searches taken on the same server start
  // (ServedLoad::searches), in order; the search keeps each as its own
  // repeat in the history, never inside this entry.
  std::vector<Measurement> again;
};

// A converted precision (fp16, mixed) judged against true float32 with the
// accuracy budget, once per budget (bench's ModelPreparer does the work).
struct PrecisionVerdict {
  bool within_budget = false;
  double min_cosine = 1;
  double max_rel_error = 0;
  std::optional<double> top1;  // classifier outputs only
  // What broke the budget, or what the conversion kept in float32.
  std::string detail;
};

}  // namespace ortgpu::tune
