// The latency-budget search (--latency-budget-ms): the load (concurrency or
// request rate) with the highest throughput whose latency percentile (p99 by
// default) stays within the budget, i.e. the server's goodput. Grows the load
// x2 from `start` up to `max`, on past a step that breaks the budget while
// throughput still grows by more than 10% (latency need not grow with load: a
// padded batch, one slow request in a short step), and stops at a broken step
// whose throughput did not grow (saturation); then bisects between the
// within-budget step of most throughput and the first load above it that
// broke the budget. A step with
// failed requests counts as over the budget. Pure over a measure function,
// so it is unit-tested with a fake server curve; thread-compatible.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "status/expected.h"

namespace ortgpu::perf {

// One measured step as the search sees it.
struct SearchPoint {
  double load = 0;
  double throughput = 0;  // successful requests/s
  double latency_ms = 0;  // the budget percentile
  bool failed = false;    // requests failed: over the budget whatever the latency
};

struct BudgetOptions {
  double budget_ms = 0;
  double start = 1;
  double max = 256;
  bool integer = true;       // concurrency: whole numbers; rate: real
  double precision = 0.05;   // real loads: stop when hi/lo <= 1 + precision
  int max_steps = 20;        // measurements in all, growth and bisection
};

struct BudgetResult {
  std::vector<SearchPoint> points;  // in the order measured
  std::optional<size_t> best;       // into points; none when even `start` broke the budget
  std::string note;                 // how the search ended
};

// REQUIRES: budget_ms > 0, 0 < start <= max. Errors from `measure` end the
// search and are returned.
Expected<BudgetResult> SearchLatencyBudget(const BudgetOptions& options,
                                           const std::function<Expected<SearchPoint>(double load)>& measure);

}  // namespace ortgpu::perf
