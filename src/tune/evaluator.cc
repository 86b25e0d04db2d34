#include "tune/evaluator.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "tune/search.h"

namespace ortgpu::tune {

Evaluator::Evaluator(const SearchOptions& options, History& history, const Clock& clock, SearchResult& result)
    : options_(options), history_(history), clock_(clock), result_(result), start_ns_(clock.NowNanos()) {}

bool Evaluator::LimitReached() {
  std::string why;
  if (options_.max_evaluations > 0 && result_.evaluations >= options_.max_evaluations) {
    why = fmt::format("the limit of {} measurements was reached", options_.max_evaluations);
  } else if (options_.max_wall_ns > 0 && ElapsedNs() >= options_.max_wall_ns) {
    why = fmt::format("the time limit of {:.1f} minutes was reached", options_.max_wall_ns / 60e9);
  }
  if (why.empty()) return false;
  if (!result_.stopped_early) {
    result_.stopped_early = true;
    result_.notes.push_back(why + "; the winner is chosen among what was measured, and a rerun with the same history "
                                  "continues the search");
  }
  return true;
}

void Evaluator::Reused(const std::string& key, int repeat) {
  if (taken_.count({key, repeat}) > 0) return;
  reused_.insert({key, repeat});
  result_.reused = static_cast<int>(reused_.size());
}

void Evaluator::Record(MeasureKind kind, int64_t ns) {
  spent_ns_[static_cast<int>(kind)] += ns;
  longest_ns_[static_cast<int>(kind)] = std::max(longest_ns_[static_cast<int>(kind)], ns);
  ++count_[static_cast<int>(kind)];
}

int64_t Evaluator::ExpectedNs(MeasureKind kind) const {
  const int k = static_cast<int>(kind);
  if (count_[k] > 0) return spent_ns_[k] / count_[k];
  if (kind == MeasureKind::kServedRepeat) {
    return static_cast<int64_t>(static_cast<double>(ExpectedNs(MeasureKind::kServed)) * options_.repeat_cost_ratio);
  }
  return 0;
}

bool Evaluator::Fits(MeasureKind kind, int count, int64_t reserve_ns) const {
  if (options_.max_wall_ns <= 0) return true;
  // A new candidate is taken to load and measure as long as the longest
  // served so far: candidates differ most there (instances to load).
  const int64_t each = kind == MeasureKind::kServed ? std::max(ExpectedNs(kind), longest_ns_[static_cast<int>(kind)])
                                                    : ExpectedNs(kind);
  return ElapsedNs() + count * each + reserve_ns <= options_.max_wall_ns;
}

Expected<std::optional<HistoryEntry>> Evaluator::Take(const std::string& key, int repeat, MeasureKind kind,
                                                      const std::function<void(HistoryEntry&)>& fill) {
  if (const HistoryEntry* known = history_.Find(key, repeat); known != nullptr) {
    Reused(key, repeat);
    return std::optional<HistoryEntry>(*known);
  }
  if (LimitReached()) return std::optional<HistoryEntry>();
  HistoryEntry e;
  e.key = key;
  e.repeat = repeat;
  const int64_t started = clock_.NowNanos();
  fill(e);
  Record(kind, clock_.NowNanos() - started);
  ++result_.evaluations;
  if (Status s = history_.Append(e); !s.ok()) return s;
  taken_.insert({e.key, e.repeat});
  return std::optional<HistoryEntry>(std::move(e));
}

const HistoryEntry* Evaluator::Recall(const std::string& key, int repeat) {
  const HistoryEntry* known = history_.Find(key, repeat);
  if (known != nullptr) Reused(key, repeat);
  return known;
}

Status Evaluator::Add(const std::string& key, int repeat, Measurement m) {
  if (history_.Find(key, repeat) != nullptr) return {};
  HistoryEntry e;
  e.key = key;
  e.repeat = repeat;
  e.measurement = std::move(m);
  e.measurement.again.clear();
  ORTGPU_RETURN_IF_ERROR(history_.Append(e));
  ++result_.evaluations;
  taken_.insert({e.key, e.repeat});
  return {};
}

int Evaluator::MeasurementsLeft() const {
  if (options_.max_evaluations <= 0) return std::numeric_limits<int>::max();
  return std::max(0, options_.max_evaluations - result_.evaluations);
}

Expected<std::optional<HistoryEntry>> Evaluator::Get(const std::string& key, int repeat, MeasureKind kind,
                                                     const std::function<Expected<Measurement>()>& measure) {
  return Take(key, repeat, kind, [&](HistoryEntry& e) {
    Expected<Measurement> m = measure();
    if (m.ok()) {
      e.measurement = *std::move(m);
    } else {
      e.error = m.status().message();
    }
  });
}

Expected<std::optional<HistoryEntry>> Evaluator::GetVerdict(const std::string& key,
                                                            const std::function<Expected<PrecisionVerdict>()>& judge) {
  return Take(key, 0, MeasureKind::kPrecision, [&](HistoryEntry& e) {
    Expected<PrecisionVerdict> v = judge();
    if (v.ok()) {
      e.verdict = *std::move(v);
    } else {
      e.error = v.status().message();
    }
  });
}

Expected<std::vector<std::optional<HistoryEntry>>> Evaluator::GetMany(
    const std::vector<std::string>& keys, MeasureKind kind,
    const std::function<std::vector<Expected<Measurement>>(const std::vector<size_t>& missing)>& measure) {
  std::vector<std::optional<HistoryEntry>> out(keys.size());
  std::vector<size_t> missing;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (const HistoryEntry* known = history_.Find(keys[i], 0); known != nullptr) {
      Reused(keys[i], 0);
      out[i] = *known;
    } else {
      missing.push_back(i);
    }
  }
  if (missing.empty() || LimitReached()) return out;
  // The evaluation limit counts measurements one by one: a session measures
  // only as many batches as the limit leaves.
  if (options_.max_evaluations > 0) {
    const size_t left = static_cast<size_t>(std::max(0, options_.max_evaluations - result_.evaluations));
    if (missing.size() > left) missing.resize(left);
  }
  const int64_t started = clock_.NowNanos();
  std::vector<Expected<Measurement>> figures = measure(missing);
  const int64_t spent = clock_.NowNanos() - started;
  for (size_t j = 0; j < missing.size(); ++j) {
    Record(kind, spent / static_cast<int64_t>(missing.size()));
    ++result_.evaluations;
    HistoryEntry e;
    e.key = keys[missing[j]];
    if (j >= figures.size()) {
      e.error = "the measurer returned no figure for this batch";
    } else if (figures[j].ok()) {
      e.measurement = *std::move(figures[j]);
    } else {
      e.error = figures[j].status().message();
    }
    if (Status s = history_.Append(e); !s.ok()) return s;
    taken_.insert({e.key, 0});
    out[missing[j]] = std::move(e);
  }
  return out;
}

}  // namespace ortgpu::tune
