#include "tune/search.h"

#include <algorithm>

#include <fmt/format.h>

namespace ortgpu::tune {

std::string InProcessKey(const EngineChoice& engine, int64_t batch) {
  return fmt::format("inprocess {} batch={}", engine.Key(), batch);
}

std::string ServedKey(const ServedCandidate& candidate, double latency_budget_ms) {
  return fmt::format("served budget={}ms {}", latency_budget_ms, candidate.Key());
}

namespace {

// Takes measurements through the history and within the limits.
class Evaluator {
 public:
  Evaluator(const SearchOptions& options, History& history, const Clock& clock, SearchResult& result)
      : options_(options), history_(history), clock_(clock), result_(result), start_ns_(clock.NowNanos()) {}

  // The entry for (key, repeat): from the history, or measured by `measure`
  // and appended. nullopt when a limit stops the search first; an error when
  // the history cannot be written.
  template <typename Measure>
  Expected<std::optional<HistoryEntry>> Get(const std::string& key, int repeat, Measure&& measure) {
    if (const HistoryEntry* known = history_.Find(key, repeat); known != nullptr) {
      ++result_.reused;
      return std::optional<HistoryEntry>(*known);
    }
    if (LimitReached()) return std::optional<HistoryEntry>();
    Expected<Measurement> m = measure();
    ++result_.evaluations;
    HistoryEntry e;
    e.key = key;
    e.repeat = repeat;
    if (m.ok()) {
      e.measurement = *m;
    } else {
      e.error = m.status().message();
    }
    if (Status s = history_.Append(e); !s.ok()) return s;
    return std::optional<HistoryEntry>(std::move(e));
  }

 private:
  bool LimitReached() {
    std::string why;
    if (options_.max_evaluations > 0 && result_.evaluations >= options_.max_evaluations) {
      why = fmt::format("the limit of {} measurements was reached", options_.max_evaluations);
    } else if (options_.max_wall_ns > 0 && clock_.NowNanos() - start_ns_ >= options_.max_wall_ns) {
      why = fmt::format("the time limit of {:.0f} s was reached", options_.max_wall_ns / 1e9);
    }
    if (why.empty()) return false;
    if (!result_.stopped_early) {
      result_.stopped_early = true;
      result_.notes.push_back(why + "; the winner is chosen among what was measured, and a rerun with the same history "
                                    "continues the search");
    }
    return true;
  }

  const SearchOptions& options_;
  History& history_;
  const Clock& clock_;
  SearchResult& result_;
  const int64_t start_ns_;
};

// In-process: every valid engine choice at every valid batch.
Status MeasureInProcess(const EngineSpace& space, Measurer& measurer, Evaluator& eval, SearchResult& result) {
  for (const EngineChoice& e : space.choices) {
    for (int64_t b : space.batches) {
      ORTGPU_ASSIGN_OR_RETURN(std::optional<HistoryEntry> entry,
                              eval.Get(InProcessKey(e, b), 0, [&] { return measurer.InProcess(e, b); }));
      if (!entry) return {};
      if (!entry->ok()) {
        result.rejected.push_back({InProcessKey(e, b), "measurement failed: " + entry->error});
      } else if (entry->measurement.latency_ms > 0) {
        result.curves.Add(e, b, entry->measurement.latency_ms);
      }
    }
  }
  return {};
}

// The engine choices measured at least once, in space order.
std::vector<EngineChoice> MeasuredEngines(const EngineSpace& space, const LatencyCurves& curves) {
  std::vector<EngineChoice> out;
  for (const EngineChoice& e : space.choices) {
    if (curves.Has(e)) out.push_back(e);
  }
  return out;
}

double Best(const std::vector<ServedOutcome>& served) {
  double best = 0;
  for (const ServedOutcome& s : served) {
    for (double g : s.goodputs) best = std::max(best, g);
  }
  return best;
}

double MeanGoodput(const ServedOutcome& s) {
  return MeanInterval(s.goodputs, 0.95).mean;
}

}  // namespace

Expected<SearchResult> RunSearch(const ModelTraits& traits, const SpaceOptions& space_options,
                                 const SearchOptions& options, Measurer& measurer, History& history,
                                 const Clock& clock) {
  SearchResult result;
  Evaluator eval(options, history, clock, result);
  const EngineSpace space = BuildEngineSpace(traits, space_options);
  result.rejected = space.rejected;
  if (Status s = MeasureInProcess(space, measurer, eval, result); !s.ok()) return s;

  const std::vector<ServedCandidate> candidates =
      BuildServedCandidates(MeasuredEngines(space, result.curves), space.batches, traits, space_options, &result.rejected);
  PruneResult pruned = Prune(candidates, result.curves, options.latency_budget_ms, 0);
  result.rejected.insert(result.rejected.end(), pruned.dropped.begin(), pruned.dropped.end());

  // Served, best-first; a candidate whose ceiling fell below the best so far
  // is skipped with the figures that say why.
  for (const RankedCandidate& r : pruned.kept) {
    if (std::string why = CeilingBelowBest(r.bounds, Best(result.served)); !why.empty()) {
      result.rejected.push_back({r.candidate.Key(), why});
      continue;
    }
    const std::string key = ServedKey(r.candidate, options.latency_budget_ms);
    ORTGPU_ASSIGN_OR_RETURN(std::optional<HistoryEntry> entry, eval.Get(key, 0, [&] {
      return measurer.Served(r.candidate, options.latency_budget_ms);
    }));
    if (!entry) break;
    ServedOutcome outcome;
    outcome.candidate = r.candidate;
    outcome.bounds = r.bounds;
    if (entry->ok()) {
      outcome.goodputs.push_back(entry->measurement.items_per_s);
      outcome.last_p99_ms = entry->measurement.latency_ms;
    } else {
      outcome.error = entry->error;
      result.rejected.push_back({r.candidate.Key(), "serving failed: " + entry->error});
    }
    result.served.push_back(std::move(outcome));
  }

  // Repeats for the leaders (by first goodput), then the decision.
  std::vector<ServedOutcome*> ranked;
  for (ServedOutcome& s : result.served) {
    if (s.error.empty() && !s.goodputs.empty() && s.goodputs.front() > 0) ranked.push_back(&s);
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const ServedOutcome* a, const ServedOutcome* b) { return MeanGoodput(*a) > MeanGoodput(*b); });
  if (static_cast<int>(ranked.size()) > options.leaders) ranked.resize(std::max(options.leaders, 1));
  for (ServedOutcome* s : ranked) {
    const std::string key = ServedKey(s->candidate, options.latency_budget_ms);
    for (int rep = 1; rep < options.repeats; ++rep) {
      ORTGPU_ASSIGN_OR_RETURN(std::optional<HistoryEntry> entry, eval.Get(key, rep, [&] {
        return measurer.Served(s->candidate, options.latency_budget_ms);
      }));
      if (!entry) break;
      if (entry->ok()) s->goodputs.push_back(entry->measurement.items_per_s);
    }
    result.leaders.push_back({s->candidate, s->goodputs});
  }
  result.decision = Decide(result.leaders, options.decision);
  if (result.decision.winner >= 0) result.winner = result.leaders[result.decision.winner].candidate;
  if (!result.winner) {
    result.notes.push_back(fmt::format("no served candidate met the {} ms latency budget; see the rejected list for "
                                       "why each was left out",
                                       options.latency_budget_ms));
  }
  return result;
}

}  // namespace ortgpu::tune
