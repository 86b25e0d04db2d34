// Evaluator: how the search's stages (search.h, screening.h, grid.h) take a
// measurement: from the history when it has one, otherwise through the
// measurer and appended to the history at once, within the limits on new
// measurements and on wall time. It times every new measurement on the
// search's clock, so the served stage can tell whether another one (and the
// leaders' repeats after it) still fits the time left.
//
// Single-threaded, like the search that owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "status/expected.h"
#include "sys/clock.h"
#include "tune/history.h"
#include "tune/measurement.h"

namespace ortgpu::tune {

struct SearchOptions;
struct SearchResult;

// What a new measurement is, for the time estimates.
enum class MeasureKind { kPrecision, kInProcess, kServed, kServedRepeat };

class Evaluator {
 public:
  Evaluator(const SearchOptions& options, History& history, const Clock& clock, SearchResult& result);

  // The entry for (key, repeat): from the history, or measured by `measure`
  // and appended. nullopt when a limit stops the search first; an error only
  // when the history cannot be written.
  Expected<std::optional<HistoryEntry>> Get(const std::string& key, int repeat, MeasureKind kind,
                                            const std::function<Expected<Measurement>()>& measure);
  // The same for a precision's judgment.
  Expected<std::optional<HistoryEntry>> GetVerdict(const std::string& key,
                                                   const std::function<Expected<PrecisionVerdict>()>& judge);
  // Several keys measured together (the batches of one in-process session):
  // those the history lacks go to `measure` in one call, which returns one
  // figure per key asked, in order. An entry is nullopt when a limit
  // stopped the search before it.
  Expected<std::vector<std::optional<HistoryEntry>>> GetMany(
      const std::vector<std::string>& keys, MeasureKind kind,
      const std::function<std::vector<Expected<Measurement>>(const std::vector<size_t>& missing)>& measure);

  // Keeps `m`, taken within another new measurement (a repeat on the same
  // server start), as (key, repeat) unless the history has that entry; its
  // time is already in the measurement it came with. It counts as a new
  // measurement (the limit and the report count it).
  Status Add(const std::string& key, int repeat, Measurement m);
  // How many more measurements the evaluation limit allows (INT_MAX
  // without one).
  int MeasurementsLeft() const;

  // The entry for (key, repeat) in the history, or nullptr (no measuring).
  const HistoryEntry* Known(const std::string& key, int repeat) const { return history_.Find(key, repeat); }
  // The same, counted as reused when this search did not take it.
  const HistoryEntry* Recall(const std::string& key, int repeat);

  // True when a limit stops new measurements (and notes it once).
  bool LimitReached();
  // Whether `count` more measurements of `kind`, then `reserve_ns` more,
  // fit within the wall-time limit (always true without one). A served
  // candidate is taken to last as long as the longest served so far, not
  // the mean: a candidate with more instances loads longer (the H200
  // scenario's 10-minute search ended 3 s past its limit on the mean).
  bool Fits(MeasureKind kind, int count, int64_t reserve_ns) const;
  // The mean duration of the new measurements of `kind` so far; for a
  // repeat without any yet, `repeat_cost_ratio` of a served one; 0 unknown.
  int64_t ExpectedNs(MeasureKind kind) const;
  int64_t ElapsedNs() const { return clock_.NowNanos() - start_ns_; }

 private:
  // The entry for (key, repeat) from the history, or a new one `fill` sets
  // the figures (or the error) of, timed and appended.
  Expected<std::optional<HistoryEntry>> Take(const std::string& key, int repeat, MeasureKind kind,
                                             const std::function<void(HistoryEntry&)>& fill);
  void Record(MeasureKind kind, int64_t ns);
  // Counts a measurement found in the history once, however often asked,
  // and not at all when this search took it.
  void Reused(const std::string& key, int repeat);

  const SearchOptions& options_;
  History& history_;
  const Clock& clock_;
  SearchResult& result_;
  const int64_t start_ns_;
  // Per MeasureKind: the total time and count of new measurements.
  int64_t spent_ns_[4] = {0, 0, 0, 0};
  int64_t longest_ns_[4] = {0, 0, 0, 0};
  int count_[4] = {0, 0, 0, 0};
  std::set<std::pair<std::string, int>> reused_;
  std::set<std::pair<std::string, int>> taken_;
};

}  // namespace ortgpu::tune
