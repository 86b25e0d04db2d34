// FakeMeasurer: a tune::Measurer whose figures the test scripts. In-process
// latency is a function of the engine choice and batch (default: a fixed
// cost plus a cost per row); served goodput is a function of the candidate,
// or a queue of figures per candidate key for repeats; a precision's verdict
// is a function of the precision (default: within the budget). Counts every
// call, so a test can say what was (not) measured. Optionally advances a
// FakeClock per measurement (time passes without sleeping). Not thread-safe.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fakes/fake_clock.h"
#include "tune/search.h"

namespace ortgpu::testing {

class FakeMeasurer final : public tune::Measurer {
 public:
  using InProcessFn = std::function<Expected<tune::Measurement>(const tune::EngineChoice&, int64_t)>;
  using ServedFn = std::function<Expected<tune::Measurement>(const tune::ServedCandidate&, double)>;
  using JudgeFn = std::function<Expected<tune::PrecisionVerdict>(tune::Precision)>;

  FakeMeasurer() {
    in_process_ = [](const tune::EngineChoice&, int64_t batch) -> Expected<tune::Measurement> {
      const double ms = 1.0 + 0.25 * static_cast<double>(batch);
      return tune::Measurement{ms, static_cast<double>(batch) * 1000.0 / ms};
    };
    served_ = [](const tune::ServedCandidate&, double budget) -> Expected<tune::Measurement> {
      return tune::Measurement{budget / 2, 100.0};
    };
    judge_ = [](tune::Precision) -> Expected<tune::PrecisionVerdict> {
      return tune::PrecisionVerdict{.within_budget = true, .min_cosine = 0.99999};
    };
  }

  void SetInProcess(InProcessFn fn) { in_process_ = std::move(fn); }
  void SetServed(ServedFn fn) { served_ = std::move(fn); }
  void SetJudge(JudgeFn fn) { judge_ = std::move(fn); }
  // Goodputs returned, in order, for the candidate with this Key() (before
  // falling back to the served function).
  void QueueServed(const tune::ServedCandidate& c, std::vector<double> goodputs) {
    for (double g : goodputs) queued_[c.Key()].push_back(g);
  }
  // Served honours ServedLoad::searches, as serve + perf do: the figures
  // after the first (queued ones, then the served function's) come back in
  // Measurement::again while the first is at least `again_above`.
  void RepeatOnStart(bool on) { repeat_on_start_ = on; }
  // Each measurement advances `clock` by `ns` (one in-process session by
  // `ns` per batch it measures).
  void AdvanceClockPerMeasurement(FakeClock* clock, int64_t ns) {
    clock_ = clock;
    advance_ns_ = ns;
  }

  Expected<tune::PrecisionVerdict> JudgePrecision(tune::Precision p) override {
    judged.push_back(p);
    Tick();
    return judge_(p);
  }

  std::vector<Expected<tune::Measurement>> InProcess(const tune::EngineChoice& engine,
                                                     const std::vector<int64_t>& batches) override {
    ++in_process_sessions;
    std::vector<Expected<tune::Measurement>> out;
    for (int64_t batch : batches) {
      in_process_calls.push_back(tune::InProcessKey(engine, batch));
      Tick();
      out.push_back(in_process_(engine, batch));
    }
    return out;
  }

  Expected<tune::Measurement> Served(const tune::ServedCandidate& c, const tune::ServedLoad& load) override {
    served_calls.push_back(c);
    served_loads.push_back(load);
    Tick();
    Expected<tune::Measurement> first = Next(c, load);
    if (!repeat_on_start_ || !first.ok()) return first;
    for (int i = 1; i < load.searches && first->items_per_s > 0 && first->items_per_s >= load.again_above; ++i) {
      Expected<tune::Measurement> again = Next(c, load);
      if (!again.ok()) break;
      first->again.push_back(*again);
    }
    return first;
  }

  std::vector<tune::Precision> judged;
  std::vector<std::string> in_process_calls;
  int in_process_sessions = 0;
  std::vector<tune::ServedCandidate> served_calls;
  std::vector<tune::ServedLoad> served_loads;

 private:
  Expected<tune::Measurement> Next(const tune::ServedCandidate& c, const tune::ServedLoad& load) {
    auto q = queued_.find(c.Key());
    if (q != queued_.end() && !q->second.empty()) {
      const double g = q->second.front();
      q->second.pop_front();
      return tune::Measurement{load.latency_budget_ms / 2, g};
    }
    return served_(c, load.latency_budget_ms);
  }

  void Tick() {
    if (clock_ != nullptr) clock_->Advance(advance_ns_);
  }

  InProcessFn in_process_;
  ServedFn served_;
  JudgeFn judge_;
  std::map<std::string, std::deque<double>> queued_;
  FakeClock* clock_ = nullptr;
  int64_t advance_ns_ = 0;
  bool repeat_on_start_ = false;
};

}  // namespace ortgpu::testing
