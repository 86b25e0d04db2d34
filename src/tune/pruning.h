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
  // The measured latency at `batch`, or one interpolated between the two
  // measured batches around it (linear in log latency against log batch:
  // the curve is close to a power law between neighbours); nullopt outside
  // the measured range (no extrapolation).
  std::optional<double> LatencyMs(const EngineChoice& engine, int64_t batch) const;
  bool Measured(const EngineChoice& engine, int64_t batch) const;
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
  // The batch's own in-process latency, and whether it was interpolated
  // between two measured batches.
  double batch_ms = 0;
  bool interpolated = false;
};

// NotFound when the curve lacks the candidate's engine choice, or the batch
// is outside its measured range.
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

// The model behind EstimateGoodput's ordering of served candidates.
struct EstimateOptions {
  double latency_budget_ms = 20;
  // perf's budget search grows connections (one row each) up to this.
  int max_concurrency = 64;
  // p99 over the mean latency under a closed loop near saturation.
  double p99_over_mean = 1.5;
  // Served goodput of an unpadded candidate relative to the model's figure:
  // on CUDA every change of batch shape costs a session about 100 ms on the
  // H200 (docs/SERVING.md, Padding), so unpadded batching is served last
  // there (0.5); 1 on the CPU.
  double unpadded_factor = 1.0;
  // What each further batch running at once adds to one batch's in-process
  // items/s (up to the engine's best): concurrent batches fill each other's
  // gaps on the GPU, but small ones do not become as efficient as a large
  // one (a prior, until served figures calibrate it). Batches that take GPU
  // turns (CUDA graphs) overlap two deep at most: one replays its graph
  // while another's inputs and outputs are copied.
  double overlap_per_batch = 0.1;
  // The time a batch spends outside the GPU (requests arriving and parsed,
  // gathered, responses written and the next requests sent back), as a
  // share of its in-process latency: with one batch in flight the GPU waits
  // for it, a second one fills it (the hand-found ResNet-50 optimum runs
  // [32] on two instances of two workers at 64 connections). A prior.
  double host_fraction = 0.5;
};

// The goodput (items/s within the budget) the curve predicts for `c`: for
// each connection count C = 1, 2, 4, ... max_concurrency, the workers with
// work are min(instances x workers, C) without a queue delay (an idle worker
// takes whatever is queued) and min(instances x workers, ceil(C / batch))
// with one (a worker waits for its batch to fill), each running batches
// of min(batch, C / busy) rows (padded: `batch`); the items/s are the lower
// of the GPU's bound (together the batches reach the batch's in-process
// items/s plus overlap_per_batch of it per further batch, at most one
// further under GPU turns, at most the engine's in-process best, padding
// rows wasted) and the slots' bound (each
// batch in flight completes once per in-process latency plus host_fraction
// of it); the mean latency follows from Little's law (plus the queue delay
// when batches do not fill) and the p99 from p99_over_mean. The estimate is
// the best items/s whose p99 fits the budget, 0 when none does or the curve
// lacks the candidate. It orders candidates; it never rules one out (the
// ceiling and floor do).
double EstimateGoodput(const ServedCandidate& c, const LatencyCurves& curves, const EstimateOptions& options);

}  // namespace ortgpu::tune
