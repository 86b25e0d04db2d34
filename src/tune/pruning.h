// Pruning served candidates with the in-process curve (issue 28): from the
// latency of each batch size per engine choice, measured in-process by
// bench, a served candidate's throughput ceiling and latency floor follow,
// and a candidate that cannot meet the latency budget, or cannot beat the
// best goodput measured so far, is not worth starting a server for.
// Pure functions over values; thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "status/expected.h"
#include "tune/candidates.h"

namespace ortgpu::tune {

// Latency against batch size per engine choice (milliseconds for one
// batch, in-process, one stream). Keyed by EngineChoice::Key().
class LatencyCurves {
 public:
  // REQUIRES: batch >= 1, latency_ms > 0.
  void Add(const EngineChoice& engine, int64_t batch, double latency_ms);
  std::optional<double> LatencyMs(const EngineChoice& engine, int64_t batch) const;
  // The best items/s this engine choice reached in-process at any batch:
  // what the GPU does with it, the bound of any served candidate on it.
  std::optional<double> BestItemsPerSecond(const EngineChoice& engine) const;
  bool Has(const EngineChoice& engine) const { return curves_.count(engine.Key()) > 0; }

 private:
  std::map<std::string, std::map<int64_t, double>> curves_;
};

// What the curve says of a served candidate before it is served.
struct ServedBounds {
  // instances x batch / batch latency, bounded by the engine's in-process best.
  double ceiling_items_per_s = 0;
  // The batch's own latency plus the queue delay: no request of a full batch
  // completes sooner.
  double floor_ms = 0;
};

// NotFound when the curve lacks the candidate's engine choice or batch.
Expected<ServedBounds> BoundsFor(const ServedCandidate& c, const LatencyCurves& curves);

struct RankedCandidate {
  ServedCandidate candidate;
  ServedBounds bounds;
};

struct PruneResult {
  std::vector<RankedCandidate> kept;  // best-first: highest ceiling, then simpler
  std::vector<Rejected> dropped;      // each with the figures that ruled it out
};

// Drops candidates whose floor exceeds `latency_budget_ms`, whose ceiling is
// below `best_goodput_so_far` (items/s; 0 before anything was served), or
// whose engine choice and batch were not measured (the measurement failed).
PruneResult Prune(const std::vector<ServedCandidate>& candidates, const LatencyCurves& curves,
                  double latency_budget_ms, double best_goodput_so_far);

// The reason a ceiling cannot beat the best so far, or "" when it can: the
// search re-asks it before each served measurement as the best rises.
std::string CeilingBelowBest(const ServedBounds& bounds, double best_goodput_so_far);

}  // namespace ortgpu::tune
