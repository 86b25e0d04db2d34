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
  if (batches.empty()) {
    // Every grid batch is above the model's max_batch_size: its largest valid one.
    const std::vector<int64_t> valid = ValidBatches(traits, space, nullptr);
    batches = {valid.empty() ? 1 : valid.back()};
  }
  return BuildServedCandidates({engine}, batches, traits, axes, rejected);
}

namespace {

// The goodputs the history holds for `key` (repeats 0 .. repeats-1), and the
// first measurement's error if it failed.
std::vector<double> Known(const Evaluator& eval, const std::string& key, int repeats, std::string* error) {
  std::vector<double> goodputs;
  for (int rep = 0; rep < std::max(1, repeats); ++rep) {
    const HistoryEntry* e = eval.Known(key, rep);
    if (e == nullptr) continue;
    if (e->ok()) {
      goodputs.push_back(e->measurement.items_per_s);
    } else if (rep == 0 && error != nullptr) {
      *error = e->error;
    }
  }
  return goodputs;
}

}  // namespace

Expected<GridResult> RunGrid(const EngineChoice& engine, const ModelTraits& traits, const SpaceOptions& space,
                             const SearchOptions& options, Measurer& measurer, Evaluator& eval,
                             const SearchResult& result) {
  GridResult grid;
  const std::string tag = ServedTag(options);
  const int repeats = std::max(1, options.repeats);
  bool stopped = false;
  // Measured over the memory limit, by the search or the grid so far: what
  // needs at least their memory is not served.
  std::vector<std::pair<ServedCandidate, std::string>> over_memory;
  for (const ServedOutcome& o : result.served) {
    if (o.over_memory) over_memory.emplace_back(o.candidate, o.error);
  }
  for (const ServedCandidate& c : GridCandidates(engine, traits, space, options.grid, nullptr)) {
    GridPoint point;
    point.candidate = c;
    const std::string key = ServedKey(c, options.latency_budget_ms, tag);
    auto over = std::find_if(over_memory.begin(), over_memory.end(),
                             [&](const auto& o) { return NeedsAtLeastTheMemoryOf(c, o.first); });
    if (over != over_memory.end() && eval.Known(key, 0) == nullptr) {
      point.error = RuledOutByMemory(over->first, over->second);
      ++grid.measured;
      grid.points.push_back(std::move(point));
      continue;
    }
    if (!stopped) {
      ORTGPU_ASSIGN_OR_RETURN(std::optional<HistoryEntry> entry, eval.Get(key, 0, MeasureKind::kServed, [&] {
        return measurer.Served(c, ServedLoad{.latency_budget_ms = options.latency_budget_ms});
      }));
      stopped = !entry.has_value();
    }
    // Every repeat the history holds (the search's leaders have several).
    const std::vector<double> goodputs = Known(eval, key, repeats, &point.error);
    if (const HistoryEntry* first = eval.Known(key, 0); first != nullptr && first->ok()) {
      point.error = MeasuredOverMemory(first->measurement.gpu_memory_bytes, traits);
      if (!point.error.empty()) over_memory.emplace_back(c, point.error);
    }
    if (!goodputs.empty() && point.error.empty()) point.goodput = MeanInterval(goodputs, 0.95).mean;
    if (point.goodput || !point.error.empty()) ++grid.measured;
    grid.points.push_back(std::move(point));
  }
  grid.complete = grid.measured == static_cast<int>(grid.points.size());
  // The best of one measurement each is biased up (the largest of many noisy
  // figures): the best point is measured again, as the leaders are, and the
  // best is taken again over the means (twice at most).
  auto best_point = [&]() -> GridPoint* {
    GridPoint* best = nullptr;
    for (GridPoint& p : grid.points) {
      if (p.goodput && (best == nullptr || *p.goodput > *best->goodput)) best = &p;
    }
    return best;
  };
  for (int round = 0; round < 2 && grid.complete && !stopped; ++round) {
    GridPoint* best = best_point();
    if (best == nullptr) break;
    const std::string key = ServedKey(best->candidate, options.latency_budget_ms, tag);
    const HistoryEntry* first = eval.Known(key, 0);
    const int start = first != nullptr ? first->measurement.concurrency / 2 : 1;
    bool measured = false;
    for (int rep = 1; rep < repeats && !stopped; ++rep) {
      if (eval.Known(key, rep) != nullptr) continue;
      ORTGPU_ASSIGN_OR_RETURN(std::optional<HistoryEntry> entry, eval.Get(key, rep, MeasureKind::kServedRepeat, [&] {
        return measurer.Served(best->candidate, ServedLoad{.latency_budget_ms = options.latency_budget_ms,
                                                           .start_concurrency = std::max(1, start)});
      }));
      stopped = !entry.has_value();
      measured = true;
    }
    best->goodput = MeanInterval(Known(eval, key, repeats, nullptr), 0.95).mean;
    if (!measured) break;
  }
  if (const GridPoint* best = best_point(); best != nullptr) {
    grid.best = best->candidate;
    grid.best_goodput = *best->goodput;
  }
  if (result.winner) {
    for (const ServedOutcome& o : result.served) {
      if (o.candidate == *result.winner && !o.goodputs.empty()) grid.winner_goodput = MeanInterval(o.goodputs, 0.95).mean;
    }
  }
  if (grid.best_goodput > 0 && grid.winner_goodput > 0) grid.ratio = grid.winner_goodput / grid.best_goodput;
  return grid;
}

}  // namespace ortgpu::tune
