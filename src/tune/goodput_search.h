// How tune measures one served candidate's goodput (issue 28): the highest
// items/s whose p99 stays within the latency budget, over connections of one
// row each. perf's own budget search (perf/search.h) measures every step in
// full windows and bisects to the last connection: about 13 steps of 3-4
// windows each, a minute per candidate on the H200. This one finds the
// edge with short steps (doubling from `start` up to `max`, on past loads
// that break the budget, since a padded model's latency can fall with load;
// then bisecting above the within-budget step of most throughput, to within
// `precision`), then measures the best short step again in full windows,
// and that figure is the goodput; if the full step breaks the budget, the
// next best short step is confirmed instead. A repeat starts near the first
// measurement's best point, and steps down when its start already breaks
// the budget.
//
// Pure over a step function (the real one runs perf::RunPerf for one
// step); tests pass a scripted server. Thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "status/expected.h"

namespace ortgpu::tune {

struct GoodputStep {
  int concurrency = 0;
  double items_per_s = 0;
  double p99_ms = 0;     // the budget percentile
  int64_t errors = 0;    // failed requests: over the budget whatever the latency
  bool failed = false;   // every request failed
  bool full = false;     // measured in full windows (the figure reported)
};

struct GoodputSearchOptions {
  double budget_ms = 20;
  int start = 1;
  int max = 64;
  // Bisection stops when the first load over the budget is within this share
  // of the last one within it.
  double precision = 0.25;
  // Short steps confirmed in full windows at most.
  int max_confirmations = 3;
};

struct GoodputSearch {
  std::vector<GoodputStep> steps;    // in the order measured
  std::optional<GoodputStep> best;   // a full step within the budget; none: no load met it
  std::string note;                  // how the search ended
};

// `measure(concurrency, full)`. Errors from it end the search and are returned.
Expected<GoodputSearch> SearchGoodput(const GoodputSearchOptions& options,
                                      const std::function<Expected<GoodputStep>(int concurrency, bool full)>& measure);

}  // namespace ortgpu::tune
