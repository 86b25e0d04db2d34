#include "tune/search.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "tune/evaluator.h"

namespace ortgpu::tune {

namespace {

std::string Tagged(std::string key, const std::string& tag) { return tag.empty() ? key : key + " " + tag; }

}  // namespace

std::string InProcessKey(const EngineChoice& engine, int64_t batch, const std::string& tag) {
  return Tagged(fmt::format("inprocess {} batch={}", engine.Key(), batch), tag);
}

std::string ServedKey(const ServedCandidate& candidate, double latency_budget_ms, const std::string& tag) {
  return Tagged(fmt::format("served budget={}ms {}", latency_budget_ms, candidate.Key()), tag);
}

std::string PrecisionKey(Precision precision, const std::string& accuracy_tag, const std::string& tag) {
  return Tagged(fmt::format("precision {} budget={}", PrecisionName(precision), accuracy_tag), tag);
}

std::string ServedTag(const SearchOptions& options) {
  if (options.served_tag.empty()) return options.inputs_tag;
  if (options.inputs_tag.empty()) return options.served_tag;
  return options.inputs_tag + " " + options.served_tag;
}

std::string IsAnomalous(double goodput, const ServedBounds& bounds, const SearchOptions& options) {
  const double ceiling = bounds.ceiling_items_per_s;
  const double ratio = options.anomaly_ratio;
  if (ceiling <= 0 || ratio <= 0 || bounds.batch_ms < options.anomaly_min_batch_ms) return "";
  // No load within the budget is a verdict, not a glitch, when the floor
  // takes a quarter of the budget already (queueing under load does the rest).
  if (goodput <= 0 && 4 * bounds.floor_ms > options.latency_budget_ms) return "";
  if (goodput < ratio * ceiling) {
    return fmt::format("goodput {:.1f} items/s is {:.0f}% of its in-process ceiling {:.1f} (below {:.0f}%)", goodput,
                       100 * goodput / ceiling, ceiling, 100 * ratio);
  }
  if (goodput > ceiling / ratio) {
    return fmt::format("goodput {:.1f} items/s is {:.1f} times its in-process ceiling {:.1f}", goodput,
                       goodput / ceiling, ceiling);
  }
  return "";
}

namespace {

double Mean(const std::vector<double>& x) { return MeanInterval(x, 0.95).mean; }

bool Usable(const ServedOutcome& s) { return s.error.empty() && !s.goodputs.empty(); }

// Stage 4 walks by each served candidate's first believable goodput only
// (repeat 0, or the measurement again that replaced an anomalous one), never
// by its later repeats: a rerun with the same history recalls every repeat
// at once, the leaders' included, and must walk the same path (the same
// order, the same candidates left below the best) to measure nothing new.
double Walked(const ServedOutcome& s) { return s.goodputs.front(); }

// The best first goodput so far among believable outcomes.
double Best(const std::vector<ServedOutcome>& served) {
  double best = 0;
  for (const ServedOutcome& s : served) {
    if (!Usable(s) || s.anomalous) continue;
    best = std::max(best, Walked(s));
  }
  return best;
}

// How many served axes two candidates share (engine, batch, instances,
// workers, padding, queue delay).
int Similarity(const ServedCandidate& a, const ServedCandidate& b) {
  return (a.engine == b.engine) + (a.batch == b.batch) + (a.instances == b.instances) +
         (a.workers_per_instance == b.workers_per_instance) +
         (a.pad_to_preferred == b.pad_to_preferred && a.adaptive_padding == b.adaptive_padding) +
         (a.max_queue_delay_us == b.max_queue_delay_us);
}

// A candidate waiting to be served, and its model estimate.
struct Pending {
  RankedCandidate ranked;
  double estimate = 0;
};

// What the measurements so far say of the model's estimates near `c`: the
// mean ratio of measured (Walked) to estimated goodput over the measured
// candidates most like it; 1 before any.
double Calibration(const ServedCandidate& c, const std::vector<ServedOutcome>& served,
                   const std::map<std::string, double>& estimates) {
  int best_similarity = -1;
  double sum = 0;
  int n = 0;
  for (const ServedOutcome& s : served) {
    auto e = estimates.find(s.candidate.Key());
    if (!Usable(s) || s.anomalous || e == estimates.end() || e->second <= 0) continue;
    const int sim = Similarity(c, s.candidate);
    const double ratio = Walked(s) / e->second;
    if (sim > best_similarity) {
      best_similarity = sim;
      sum = 0;
      n = 0;
    }
    if (sim == best_similarity) {
      sum += ratio;
      ++n;
    }
  }
  return n > 0 ? sum / n : 1.0;
}

// Whether `a` is served before `b`, given their predictions and how like
// the served candidates each is (Similarity to the most like one): a
// prediction higher by more than 5% first (the model is no surer than that);
// else the shape of the hand-found optima: padded to the preferred size,
// CUDA graphs, more instances, more workers (fewer under GPU turns: there a
// further worker only adds turn-takers and a graph set to load, and run q2
// served 2 instances x 1 worker 7% above 2 x 2), a shorter delay; else the
// one less like what was served (it teaches the calibration more); else the
// higher prediction; else the simpler.
bool ServeBefore(double pa, int like_a, const ServedCandidate& a, double pb, int like_b, const ServedCandidate& b) {
  if (std::abs(pa - pb) > 0.05 * std::max(pa, pb)) return pa > pb;
  if (a.pad_to_preferred != b.pad_to_preferred) return a.pad_to_preferred;
  if (a.engine.cuda_graphs != b.engine.cuda_graphs) return a.engine.cuda_graphs;
  if (a.instances != b.instances) return a.instances > b.instances;
  if (a.workers_per_instance != b.workers_per_instance) {
    return a.TakesGpuTurns() ? a.workers_per_instance < b.workers_per_instance
                             : a.workers_per_instance > b.workers_per_instance;
  }
  if (a.max_queue_delay_us != b.max_queue_delay_us) return a.max_queue_delay_us < b.max_queue_delay_us;
  if (like_a != like_b) return like_a < like_b;
  if (pa != pb) return pa > pb;
  return SimplerThan(a, b);
}

// The index of the pending candidate to serve next: first, one candidate
// of each batch size not served yet whose prediction is within
// `coverage_ratio` of the best prediction (the batch is the axis the model
// is least sure of: how full batches get and how much turnaround costs);
// then by prediction. Within either, ServeBefore decides.
// REQUIRES: pending non-empty, predicted of the same size.
size_t NextToServe(const std::vector<Pending>& pending, const std::vector<double>& predicted,
                   const std::vector<ServedOutcome>& served, double coverage_ratio) {
  const double top = *std::max_element(predicted.begin(), predicted.end());
  auto new_batch = [&](size_t i) {
    if (predicted[i] < coverage_ratio * top || top <= 0) return false;
    return std::none_of(served.begin(), served.end(), [&](const ServedOutcome& s) {
      return s.candidate.batch == pending[i].ranked.candidate.batch;
    });
  };
  std::vector<int> like(pending.size(), -1);
  for (size_t i = 0; i < pending.size(); ++i) {
    for (const ServedOutcome& s : served) like[i] = std::max(like[i], Similarity(pending[i].ranked.candidate, s.candidate));
  }
  std::optional<size_t> next;
  for (bool coverage : {true, false}) {
    for (size_t i = 0; i < pending.size(); ++i) {
      if (coverage && !new_batch(i)) continue;
      if (!next || ServeBefore(predicted[i], like[i], pending[i].ranked.candidate, predicted[*next], like[*next],
                               pending[*next].ranked.candidate)) {
        next = i;
      }
    }
    if (next) break;
  }
  return *next;
}

// The batches of the latency curve: the space's curve batches that are
// valid, the screening batch and the largest valid batch.
std::vector<int64_t> CurveBatches(const SpaceOptions& space, const std::vector<int64_t>& valid, int64_t screening) {
  std::vector<int64_t> out = {screening, valid.back()};
  for (int64_t b : space.curve_batches) {
    if (std::find(valid.begin(), valid.end(), b) != valid.end()) out.push_back(b);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Stage 3: the curve of each engine choice, one measurer call (one session)
// per choice for the batches the history lacks. False when a limit stopped it.
Expected<bool> MeasureCurves(const std::vector<EngineChoice>& engines, const std::vector<int64_t>& batches,
                             const SearchOptions& options, Measurer& measurer, Evaluator& eval, SearchResult& result) {
  for (const EngineChoice& e : engines) {
    std::vector<std::string> keys;
    for (int64_t b : batches) keys.push_back(InProcessKey(e, b, options.inputs_tag));
    ORTGPU_ASSIGN_OR_RETURN(auto entries, eval.GetMany(keys, MeasureKind::kInProcess, [&](const std::vector<size_t>& missing) {
      std::vector<int64_t> asked;
      for (size_t i : missing) asked.push_back(batches[i]);
      return measurer.InProcess(e, asked);
    }));
    bool complete = true;
    for (size_t i = 0; i < entries.size(); ++i) {
      if (!entries[i]) {
        complete = false;
      } else if (!entries[i]->ok()) {
        result.rejected.push_back({keys[i], "measurement failed: " + entries[i]->error});
      } else if (entries[i]->measurement.latency_ms > 0) {
        result.curves.Add(e, batches[i], entries[i]->measurement.latency_ms);
      }
    }
    if (result.curves.Has(e)) result.curve_engines.push_back(e);
    if (!complete) return false;
  }
  return true;
}

// One served measurement through the history; nullopt at a limit. With
// `searches` > 1 the measurer may take the next repeats on the same server
// start (ServedLoad::searches); they go to the history as repeats
// repeat+1.. and the entry returned is the first.
Expected<std::optional<HistoryEntry>> ServeOnce(const ServedCandidate& c, int repeat, int start_concurrency,
                                                const SearchOptions& options, Measurer& measurer, Evaluator& eval,
                                                int searches = 1, double again_above = 0) {
  const std::string key = ServedKey(c, options.latency_budget_ms, ServedTag(options));
  // Repeats on the same start are measurements too: no more than the
  // evaluation limit leaves.
  searches = std::min(searches, std::max(1, eval.MeasurementsLeft()));
  std::vector<Measurement> again;
  ORTGPU_ASSIGN_OR_RETURN(
      std::optional<HistoryEntry> entry,
      eval.Get(key, repeat, repeat == 0 ? MeasureKind::kServed : MeasureKind::kServedRepeat, [&]() -> Expected<Measurement> {
        Expected<Measurement> m = measurer.Served(c, ServedLoad{.latency_budget_ms = options.latency_budget_ms,
                                                                .start_concurrency = std::max(1, start_concurrency),
                                                                .searches = std::max(1, searches),
                                                                .again_above = again_above});
        if (m.ok()) again = std::exchange(m->again, {});
        return m;
      }));
  for (size_t i = 0; i < again.size(); ++i) {
    ORTGPU_RETURN_IF_ERROR(eval.Add(key, repeat + 1 + static_cast<int>(i), std::move(again[i])));
  }
  return entry;
}

// Adds repeat `rep`'s goodput to `s`, setting an anomalous one aside.
void AddRepeat(ServedOutcome& s, const HistoryEntry& entry, const SearchOptions& options) {
  if (!entry.ok()) return;
  const double g = entry.measurement.items_per_s;
  if (std::string why = IsAnomalous(g, s.bounds, options); !why.empty() && !s.anomalous) {
    s.discarded.push_back(g);
    s.anomaly += (s.anomaly.empty() ? "" : "; ") + fmt::format("a repeat set aside: {}", why);
    return;
  }
  s.goodputs.push_back(g);
}

// The time to keep back for the repeats that will need a server restart:
// those the current leaders (the best `leaders` served so far) lack. A
// candidate served later takes its repeats on its own start when it leads
// (SearchOptions::repeat_on_start_ratio), inside its served time; without
// that, every leader's repeats are kept back.
int64_t RepeatReserveNs(const SearchOptions& options, const Evaluator& eval, const std::vector<ServedOutcome>& served) {
  const int wanted = std::max(0, options.repeats - 1);
  if (options.repeat_on_start_ratio <= 0) {
    return std::max(0, options.leaders) * wanted * eval.ExpectedNs(MeasureKind::kServedRepeat);
  }
  std::vector<const ServedOutcome*> usable;
  for (const ServedOutcome& s : served) {
    if (Usable(s) && !s.anomalous) usable.push_back(&s);
  }
  std::stable_sort(usable.begin(), usable.end(), [](const ServedOutcome* a, const ServedOutcome* b) {
    return Mean(a->goodputs) > Mean(b->goodputs);
  });
  int missing = 0;
  for (size_t i = 0; i < usable.size() && static_cast<int>(i) < options.leaders; ++i) {
    missing += std::max(0, options.repeats - static_cast<int>(usable[i]->goodputs.size()));
  }
  return missing * eval.ExpectedNs(MeasureKind::kServedRepeat);
}

// Stage 4. Returns false when a limit stopped it.
Expected<bool> ServeCandidates(std::vector<Pending> pending, const ModelTraits& traits, const SearchOptions& options,
                               Measurer& measurer, Evaluator& eval, SearchResult& result) {
  std::map<std::string, double> estimates;
  for (const Pending& p : pending) estimates[p.ranked.candidate.Key()] = p.estimate;
  const std::string tag = ServedTag(options);
  auto leave = [&](const std::string& why) {
    for (const Pending& p : pending) result.unmeasured.push_back({p.ranked.candidate.Key(), why});
    pending.clear();
  };
  while (!pending.empty()) {
    std::vector<double> predicted(pending.size());
    for (size_t i = 0; i < pending.size(); ++i) {
      predicted[i] = pending[i].estimate * Calibration(pending[i].ranked.candidate, result.served, estimates);
    }
    const size_t next = NextToServe(pending, predicted, result.served, options.coverage_ratio);
    const Pending p = pending[next];
    const double prediction = predicted[next];
    pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(next));
    const ServedCandidate& c = p.ranked.candidate;
    if (std::string why = CeilingBelowBest(p.ranked.bounds, Best(result.served)); !why.empty()) {
      result.rejected.push_back({c.Key(), why});
      continue;
    }
    if (auto over = std::find_if(result.served.begin(), result.served.end(),
                                 [&](const ServedOutcome& s) { return s.over_memory && NeedsAtLeastTheMemoryOf(c, s.candidate); });
        over != result.served.end()) {
      result.rejected.push_back({c.Key(), RuledOutByMemory(over->candidate, over->error)});
      continue;
    }
    const std::string key = ServedKey(c, options.latency_budget_ms, tag);
    const bool known = eval.Known(key, 0) != nullptr;
    if (!known && options.max_served > 0 && static_cast<int>(result.served.size()) >= options.max_served) {
      pending.insert(pending.begin(), p);
      leave(fmt::format("not served: the cap of {} served candidates was reached (--max-served)", options.max_served));
      break;
    }
    if (!known && !eval.Fits(MeasureKind::kServed, 1, RepeatReserveNs(options, eval, result.served))) {
      pending.insert(pending.begin(), p);
      leave("not served: the time left is kept for the leaders' repeats (--max-minutes); a rerun with the same history "
            "continues");
      break;
    }
    // Repeats on this start while the candidate may lead: the first one
    // served always, a later one when its first goodput is near the best.
    const int searches = options.repeat_on_start_ratio > 0 ? options.repeats : 1;
    const double again_above = options.repeat_on_start_ratio * Best(result.served);
    ORTGPU_ASSIGN_OR_RETURN(std::optional<HistoryEntry> entry,
                            ServeOnce(c, 0, 1, options, measurer, eval, searches, again_above));
    if (!entry) {
      pending.insert(pending.begin(), p);
      leave("not served: a limit stopped the search; a rerun with the same history continues");
      return false;
    }
    ServedOutcome outcome;
    outcome.candidate = c;
    outcome.bounds = p.ranked.bounds;
    outcome.predicted = prediction;
    outcome.first = entry->measurement;
    if (!entry->ok()) {
      outcome.error = entry->error;
      result.rejected.push_back({c.Key(), "serving failed: " + entry->error});
      result.served.push_back(std::move(outcome));
      continue;
    }
    if (std::string why = MeasuredOverMemory(entry->measurement.gpu_memory_bytes, traits); !why.empty()) {
      outcome.error = why;
      outcome.over_memory = true;
      result.rejected.push_back({c.Key(), why});
      result.served.push_back(std::move(outcome));
      continue;
    }
    const double g = entry->measurement.items_per_s;
    outcome.last_p99_ms = entry->measurement.latency_ms;
    outcome.goodputs.push_back(g);
    const bool anomalous_first = !IsAnomalous(g, outcome.bounds, options).empty();
    // The repeats taken on the same start (or by an earlier run).
    for (int rep = 1; rep < options.repeats && !anomalous_first; ++rep) {
      const HistoryEntry* again = eval.Recall(key, rep);
      if (again == nullptr) break;
      AddRepeat(outcome, *again, options);
    }
    if (std::string why = IsAnomalous(g, outcome.bounds, options); !why.empty()) {
      // Measured again before it can win or lose.
      outcome.anomalous = true;
      outcome.anomaly = why;
      ORTGPU_ASSIGN_OR_RETURN(std::optional<HistoryEntry> again,
                              ServeOnce(c, 1, 1, options, measurer, eval));
      if (again && again->ok()) {
        const double g2 = again->measurement.items_per_s;
        if (IsAnomalous(g2, outcome.bounds, options).empty()) {
          outcome.anomalous = false;
          outcome.discarded.push_back(g);
          outcome.goodputs = {g2};
          outcome.last_p99_ms = again->measurement.latency_ms;
          outcome.anomaly += fmt::format("; measured again: {:.1f} items/s, kept (the first set aside)", g2);
        } else {
          outcome.goodputs.push_back(g2);
          outcome.anomaly += fmt::format("; measured again: {:.1f} items/s, anomalous too", g2);
        }
      } else if (again) {
        outcome.anomaly += "; measured again: failed: " + again->error;
      }
    }
    result.served.push_back(std::move(outcome));
  }
  return true;
}

// The leaders: believable outcomes by mean goodput, the best
// `options.leaders`; anomalous ones only when nothing else met the budget.
std::vector<ServedOutcome*> RankLeaders(std::vector<ServedOutcome>& served, const SearchOptions& options) {
  std::vector<ServedOutcome*> ranked;
  for (bool anomalous : {false, true}) {
    for (ServedOutcome& s : served) {
      if (Usable(s) && s.goodputs.front() > 0 && s.anomalous == anomalous) ranked.push_back(&s);
    }
    if (!ranked.empty()) break;
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const ServedOutcome* a, const ServedOutcome* b) { return Mean(a->goodputs) > Mean(b->goodputs); });
  if (static_cast<int>(ranked.size()) > options.leaders) ranked.resize(std::max(options.leaders, 1));
  return ranked;
}

// Stage 5: the leaders measured again, then the decision. A leader's repeats
// move the means, so the leaders are ranked again after each one's repeats
// until every leader has had its turn: the leaders the decision is taken
// over are the best by all their repeats (what a rerun with the same
// history ranks first, finding nothing left to measure).
Status RepeatLeaders(const SearchOptions& options, Measurer& measurer, Evaluator& eval, SearchResult& result) {
  std::set<const ServedOutcome*> repeated;
  std::vector<ServedOutcome*> ranked = RankLeaders(result.served, options);
  bool out_of_time = false;
  for (;;) {
    auto next = std::find_if(ranked.begin(), ranked.end(), [&](const ServedOutcome* s) { return repeated.count(s) == 0; });
    if (next == ranked.end()) break;
    ServedOutcome* s = *next;
    repeated.insert(s);
    // Repeat indices already taken (an anomaly's second measurement is 1).
    int rep = static_cast<int>(s->goodputs.size() + s->discarded.size());
    while (static_cast<int>(s->goodputs.size()) < options.repeats && rep <= options.repeats) {
      const std::string key = ServedKey(s->candidate, options.latency_budget_ms, ServedTag(options));
      if (eval.Known(key, rep) == nullptr && !eval.Fits(MeasureKind::kServedRepeat, 1, 0)) {
        if (!out_of_time) {
          result.notes.push_back("the time limit left some of the leaders' repeats unmeasured (--max-minutes); a rerun "
                                 "with the same history takes them");
        }
        out_of_time = true;
        break;
      }
      ORTGPU_ASSIGN_OR_RETURN(std::optional<HistoryEntry> entry,
                              ServeOnce(s->candidate, rep, s->first.concurrency / 2, options, measurer, eval));
      if (!entry) break;
      AddRepeat(*s, *entry, options);
      ++rep;
    }
    ranked = RankLeaders(result.served, options);
  }
  for (const ServedOutcome* s : ranked) result.leaders.push_back({s->candidate, s->goodputs});
  result.decision = Decide(result.leaders, options.decision);
  if (result.decision.winner >= 0) result.winner = result.leaders[result.decision.winner].candidate;
  if (!result.winner) {
    result.notes.push_back(fmt::format("no served candidate met the {} ms latency budget; see the rejected list for "
                                       "why each was left out",
                                       options.latency_budget_ms));
  } else if (ranked[result.decision.winner]->anomalous) {
    result.notes.push_back("every measured candidate's goodput was anomalous (far from its in-process ceiling): the "
                           "winner is the best of them, and the server, not the configuration, is the likelier cause");
  }
  return Status::Ok();
}

}  // namespace

Expected<SearchResult> RunSearch(const ModelTraits& model, const SpaceOptions& space, const SearchOptions& options,
                                 Measurer& measurer, History& history, const Clock& clock) {
  SearchResult result;
  Evaluator eval(options, history, clock, result);
  auto done = [&]() -> Expected<SearchResult> {
    result.wall_s = static_cast<double>(eval.ElapsedNs()) / 1e9;
    return std::move(result);
  };
  ModelTraits traits = model;
  const std::vector<int64_t> batches = ValidBatches(traits, space, &result.rejected);
  if (batches.empty()) {
    result.notes.push_back("no batch size of the space is valid for this model (see the rejected list)");
    return done();
  }

  // 1. Precisions within the accuracy budget.
  ORTGPU_ASSIGN_OR_RETURN(std::optional<std::vector<Precision>> within,
                          JudgePrecisions(space, options, measurer, eval, result));
  if (!within) return done();
  traits.precisions_within_budget = *within;

  // 2. Screening at one batch.
  const int64_t screening_batch = ScreeningBatch(space, batches);
  ORTGPU_ASSIGN_OR_RETURN(std::optional<EngineChoice> screened,
                          ScreenEngines(traits, space, options, screening_batch, measurer, eval, result));
  if (!screened) {
    result.notes.push_back("no engine choice was measured in-process: nothing to serve");
    return done();
  }
  result.screened = *screened;

  // 3. The latency curve of the best engine choices.
  ORTGPU_ASSIGN_OR_RETURN(bool curves_done,
                          MeasureCurves(CurveEngines(*screened, options.curve_engines),
                                        CurveBatches(space, batches, screening_batch), options, measurer, eval, result));

  // 4. Served, in the order of predicted goodput.
  if (curves_done) {
    const std::vector<ServedCandidate> candidates =
        BuildServedCandidates(result.curve_engines, batches, traits, space, &result.rejected);
    PruneResult pruned = Prune(candidates, result.curves, options.latency_budget_ms, 0);
    result.rejected.insert(result.rejected.end(), pruned.dropped.begin(), pruned.dropped.end());
    EstimateOptions estimate = options.estimate;
    estimate.latency_budget_ms = options.latency_budget_ms;
    std::vector<Pending> pending;
    for (const RankedCandidate& r : pruned.kept) pending.push_back({r, EstimateGoodput(r.candidate, result.curves, estimate)});
    ORTGPU_ASSIGN_OR_RETURN(bool served_done, ServeCandidates(std::move(pending), traits, options, measurer, eval, result));
    (void)served_done;
  }

  // 5. Repeats and the decision (on what was measured, whatever stopped).
  ORTGPU_RETURN_IF_ERROR(RepeatLeaders(options, measurer, eval, result));

  // 6. The grid, for the record.
  if (options.exhaustive) {
    ORTGPU_ASSIGN_OR_RETURN(GridResult grid, RunGrid(*screened, traits, space, options, measurer, eval, result));
    result.grid = std::move(grid);
  }
  if (!result.unmeasured.empty()) {
    result.notes.push_back(fmt::format("{} served candidates were not measured (listed with why)", result.unmeasured.size()));
  }
  return done();
}

}  // namespace ortgpu::tune
