// FakeMeasurer: a tune::Measurer whose figures the test scripts. In-process
// latency is a function of the engine choice and batch (default: a fixed
// cost plus a cost per row); served goodput is a function of the candidate,
// or a queue of figures per candidate key for repeats. Counts every call, so
// a test can say what was (not) measured. Optionally advances a FakeClock per
// measurement (time passes without sleeping). Not thread-safe.
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

  FakeMeasurer() {
    in_process_ = [](const tune::EngineChoice&, int64_t batch) -> Expected<tune::Measurement> {
      const double ms = 1.0 + 0.25 * static_cast<double>(batch);
      return tune::Measurement{ms, static_cast<double>(batch) * 1000.0 / ms};
    };
    served_ = [](const tune::ServedCandidate&, double budget) -> Expected<tune::Measurement> {
      return tune::Measurement{budget / 2, 100.0};
    };
  }

  void SetInProcess(InProcessFn fn) { in_process_ = std::move(fn); }
  void SetServed(ServedFn fn) { served_ = std::move(fn); }
  // Goodputs returned, in order, for the candidate with this Key() (before
  // falling back to the served function).
  void QueueServed(const tune::ServedCandidate& c, std::vector<double> goodputs) {
    for (double g : goodputs) queued_[c.Key()].push_back(g);
  }
  // Each measurement advances `clock` by `ns`.
  void AdvanceClockPerMeasurement(FakeClock* clock, int64_t ns) {
    clock_ = clock;
    advance_ns_ = ns;
  }

  Expected<tune::Measurement> InProcess(const tune::EngineChoice& engine, int64_t batch) override {
    in_process_calls.push_back(tune::InProcessKey(engine, batch));
    Tick();
    return in_process_(engine, batch);
  }

  Expected<tune::Measurement> Served(const tune::ServedCandidate& c, double budget_ms) override {
    served_calls.push_back(c);
    Tick();
    auto q = queued_.find(c.Key());
    if (q != queued_.end() && !q->second.empty()) {
      const double g = q->second.front();
      q->second.pop_front();
      return tune::Measurement{budget_ms / 2, g};
    }
    return served_(c, budget_ms);
  }

  std::vector<std::string> in_process_calls;
  std::vector<tune::ServedCandidate> served_calls;

 private:
  void Tick() {
    if (clock_ != nullptr) clock_->Advance(advance_ns_);
  }

  InProcessFn in_process_;
  ServedFn served_;
  std::map<std::string, std::deque<double>> queued_;
  FakeClock* clock_ = nullptr;
  int64_t advance_ns_ = 0;
};

}  // namespace ortgpu::testing
