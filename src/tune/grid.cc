#include "tune/grid.h"

#include <algorithm>

#include "tune/decision.h"
#include "tune/evaluator.h"
#include "tune/search.h"

namespace ortgpu::tune {

std::vector<ServedCandidate> GridCandidates(const EngineChoice& engine, const ModelTraits& traits,
                                            const SpaceOptions& space, const GridOptions& grid,
                                            std::vector<Rejected>* rejected) {
  SpaceOptions axes = space;
  axes.batches = grid.batches;
  axes.instances = grid.instances;
  axes.workers = grid.workers;
  axes.padding = grid.padding;
  axes.queue_delays_us = grid.queue_delays_us;
  axes.adaptive_padding = {space.adaptive_padding.empty() ? true : space.adaptive_padding.front()};
  std::vector<int64_t> batches = ValidBatches(traits, axes, nullptr);
  if (batches.empty()) batches = {1};  // a model that does not batch, or a max_batch_size below the grid's
  return BuildServedCandidates({engine}, batches, traits, axes, rejected);
}

Expected<GridResult> RunGrid(const EngineChoice& engine, const ModelTraits& traits, const SpaceOptions& space,
                             const SearchOptions& options, Measurer& measurer, Evaluator& eval,
                             const SearchResult& result) {
  GridResult grid;
  const std::string tag = ServedTag(options);
  bool stopped = false;
  for (const ServedCandidate& c : GridCandidates(engine, traits, space, options.grid, nullptr)) {
    GridPoint point;
    point.candidate = c;
    const std::string key = ServedKey(c, options.latency_budget_ms, tag);
    if (!stopped) {
      ORTGPU_ASSIGN_OR_RETURN(std::optional<HistoryEntry> entry, eval.Get(key, 0, MeasureKind::kServed, [&] {
        return measurer.Served(c, ServedLoad{.latency_budget_ms = options.latency_budget_ms});
      }));
      stopped = !entry.has_value();
    }
    // Every repeat the history holds (the search's leaders have several).
    std::vector<double> goodputs;
    for (int rep = 0; rep < std::max(1, options.repeats); ++rep) {
      const HistoryEntry* e = eval.Known(key, rep);
      if (e == nullptr) continue;
      if (e->ok()) {
        goodputs.push_back(e->measurement.items_per_s);
      } else if (rep == 0) {
        point.error = e->error;
      }
    }
    if (!goodputs.empty()) point.goodput = MeanInterval(goodputs, 0.95).mean;
    if (point.goodput || !point.error.empty()) ++grid.measured;
    if (point.goodput && *point.goodput > grid.best_goodput) {
      grid.best_goodput = *point.goodput;
      grid.best = c;
    }
    grid.points.push_back(std::move(point));
  }
  grid.complete = grid.measured == static_cast<int>(grid.points.size());
  if (result.winner) {
    for (const ServedOutcome& o : result.served) {
      if (o.candidate == *result.winner && !o.goodputs.empty()) grid.winner_goodput = MeanInterval(o.goodputs, 0.95).mean;
    }
  }
  if (grid.best_goodput > 0 && grid.winner_goodput > 0) grid.ratio = grid.winner_goodput / grid.best_goodput;
  return grid;
}

}  // namespace ortgpu::tune
