// The grid of `ortgpu tune --exhaustive` (issue 28's target: "the
// configuration tune finds reaches >= 95% of the best goodput of a grid
// searched exhaustively in the same run"): every served candidate of a
// small space that passes the validity rules, measured with no pruning and
// no cap (the time limit still holds; a rerun with the same history
// continues it), after the search, so the search's winner can be put
// against the grid's best. The search's own measurements of grid
// candidates are reused from the history.
//
// The grid's engine choice is the one screening kept (the engine stage is
// checked by screening's own figures, the grid checks the served search);
// its served axes are the ones below. Pure functions and a stage function
// over the Evaluator; single-threaded.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "status/expected.h"
#include "tune/candidates.h"

namespace ortgpu::tune {

class Evaluator;
class Measurer;
struct SearchOptions;
struct SearchResult;

struct GridOptions {
  std::vector<int64_t> batches = {16, 32, 64};
  std::vector<int> instances = {1, 2};
  std::vector<int> workers = {1, 2};
  // Padded only by default: serve's own default on GPU instances, and the
  // hand-found optima's; the search itself also serves unpadded candidates.
  std::vector<bool> padding = {true};
  std::vector<int64_t> queue_delays_us = {0, 2000};
};

// The grid's candidates for `engine`: the options' axes (batches above the
// model's max_batch_size left out, the space's largest valid batch when
// none is left; a model that does not batch: batch 1, unpadded, no delay), padded ones with the space's first adaptive_padding
// value, through BuildServedCandidates' validity rules.
std::vector<ServedCandidate> GridCandidates(const EngineChoice& engine, const ModelTraits& traits,
                                            const SpaceOptions& space, const GridOptions& grid,
                                            std::vector<Rejected>* rejected);

struct GridPoint {
  ServedCandidate candidate;
  std::optional<double> goodput;  // the mean of its goodputs; unset: not measured (yet)
  std::string error;
};

struct GridResult {
  std::vector<GridPoint> points;  // in the grid's order
  int measured = 0;
  bool complete = false;  // every point measured (or failed)
  std::optional<ServedCandidate> best;
  double best_goodput = 0;
  // The search's winner's mean goodput, and its share of the grid's best
  // (0 when either is missing).
  double winner_goodput = 0;
  double ratio = 0;
};

// Stage 6: measures the grid (what the history lacks), then the best point
// again until it has `repeats` figures, as the leaders have (the largest of
// many single figures is biased up; twice at most, when another point
// becomes the best), and compares the means with `result.winner`'s. Stops
// quietly at a limit (complete stays false).
Expected<GridResult> RunGrid(const EngineChoice& engine, const ModelTraits& traits, const SpaceOptions& space,
                             const SearchOptions& options, Measurer& measurer, Evaluator& eval,
                             const SearchResult& result);

}  // namespace ortgpu::tune
