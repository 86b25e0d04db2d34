// The search of `ortgpu tune` (issue 28) over a Measurer seam: in-process
// first, over the engine choices and batch sizes; the curve prunes the served
// candidates; the survivors are served best-first (highest ceiling first),
// re-pruned as the best goodput rises; the leading few are measured again;
// the decision rule (decision.h) names the winner. Every measurement goes
// through the History first, so a restarted search measures only what it
// lacks. No command drives it yet (docs/TUNE.md).
//
// Single-threaded: RunSearch calls the Measurer from the calling thread, one
// measurement at a time (the GPU is measured by one thing at a time).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "status/expected.h"
#include "sys/clock.h"
#include "tune/candidates.h"
#include "tune/decision.h"
#include "tune/history.h"
#include "tune/measurement.h"
#include "tune/pruning.h"

namespace ortgpu::tune {

// What takes the measurements: bench in-process, serve + perf served (the
// command, later); a scripted fake in tests. A failure is recorded and the
// search goes on without that point (e.g. ORT refused to capture a graph).
class Measurer {
 public:
  virtual ~Measurer() = default;
  // One batch of `batch` rows through the engine choice, in-process.
  virtual Expected<Measurement> InProcess(const EngineChoice& engine, int64_t batch) = 0;
  // The candidate served; goodput within `latency_budget_ms` p99.
  virtual Expected<Measurement> Served(const ServedCandidate& candidate, double latency_budget_ms) = 0;
};

struct SearchOptions {
  double latency_budget_ms = 20;
  // How many leading served candidates are measured again, and how many
  // measurements each then has in all (the first included).
  int leaders = 3;
  int repeats = 3;
  // Stop taking new measurements past these (0: no limit); what was measured
  // is still decided on. Measurements found in the history do not count.
  int max_evaluations = 0;
  int64_t max_wall_ns = 0;
  DecisionOptions decision;
};

// A served candidate and what was learnt of it.
struct ServedOutcome {
  ServedCandidate candidate;
  ServedBounds bounds;
  std::vector<double> goodputs;  // one per repeat that succeeded
  double last_p99_ms = 0;
  std::string error;              // the first failure, if any
};

struct SearchResult {
  std::optional<ServedCandidate> winner;
  Decision decision;                  // over `leaders`
  std::vector<ServedOutcome> served;  // in the order served
  std::vector<Contender> leaders;     // what the decision was taken over
  LatencyCurves curves;
  std::vector<Rejected> rejected;     // validity rules, failures and pruning, in order
  int evaluations = 0;                // new measurements taken
  int reused = 0;                     // measurements found in the history
  bool stopped_early = false;         // an evaluation or wall-time limit was reached
  std::vector<std::string> notes;     // what the user should know (the limit reached, ...)
};

// History keys (stable: a history outlives versions of the search).
std::string InProcessKey(const EngineChoice& engine, int64_t batch);
std::string ServedKey(const ServedCandidate& candidate, double latency_budget_ms);

// Runs the search. Errors only for what stops it altogether (the history
// cannot be written); failed measurements become `rejected` entries.
Expected<SearchResult> RunSearch(const ModelTraits& traits, const SpaceOptions& space, const SearchOptions& options,
                                 Measurer& measurer, History& history, const Clock& clock);

}  // namespace ortgpu::tune
