// The search of `ortgpu tune` (issue 28, docs/TUNE.md) over a Measurer seam,
// in stages, each measurement through the History first (a restarted search
// measures only what it lacks):
//
//   1. precision: each converted precision (fp16; mixed when fp16 breaks the
//      accuracy budget) judged once against true fp32; only those within the
//      budget are screened;
//   2. screening (screening.h): the engine knobs flipped one at a time from
//      ORT's defaults at one representative batch, a flip kept only when it
//      beats the current choice by more than the noise;
//   3. the latency curve (a few batch sizes, one session each) of the best
//      engine choices, interpolated between its points;
//   4. served: candidates the curve does not rule out (latency floor over the
//      budget, ceiling below the best goodput so far) served in the order of
//      their predicted goodput (EstimateGoodput, calibrated by what was
//      measured; first one of each batch size predicted near the best), at
//      most `max_served` of them and within the time limit; a goodput far
//      below its ceiling is anomalous and measured again;
//   5. repeats of the leaders and the decision rule (decision.h);
//   6. with `exhaustive`, the grid (grid.h) for the record.
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
#include "tune/grid.h"
#include "tune/history.h"
#include "tune/measurement.h"
#include "tune/pruning.h"
#include "tune/screening.h"

namespace ortgpu::tune {

// How a served candidate is loaded by the measurer's budget search.
struct ServedLoad {
  double latency_budget_ms = 20;
  // The first connection count tried (repeats start near the first
  // measurement's best point instead of 1).
  int start_concurrency = 1;
  // Budget searches run on this one server start, in all (the first
  // included): a repeat measured on the same start costs the search, not a
  // new load (40-54 s for a fused fp16 ResNet-50). The searches after the
  // first run only while the first goodput is at least `again_above`
  // items/s (a likely leader), each starting near the previous best point;
  // their figures come back in Measurement::again.
  int searches = 1;
  double again_above = 0;
};

// What takes the measurements: bench in-process, serve + perf served
// (tool_measurer.h); a scripted fake in tests. A failure is recorded and the
// search goes on without that point (e.g. ORT refused to capture a graph).
class Measurer {
 public:
  virtual ~Measurer() = default;
  // `precision` (fp16 or mixed) converted and judged against true float32
  // with the accuracy budget.
  virtual Expected<PrecisionVerdict> JudgePrecision(Precision precision) = 0;
  // Batches of each size in `batches` through the engine choice, in-process:
  // one figure per batch size, in order (one session for all of them where
  // the measurer can).
  virtual std::vector<Expected<Measurement>> InProcess(const EngineChoice& engine,
                                                       const std::vector<int64_t>& batches) = 0;
  // The candidate served; goodput within `load.latency_budget_ms` p99.
  virtual Expected<Measurement> Served(const ServedCandidate& candidate, const ServedLoad& load) = 0;
};

struct SearchOptions {
  double latency_budget_ms = 20;
  // How many leading served candidates are measured again, and how many
  // measurements each then has in all (the first included). Two leaders of
  // three figures: with two figures each, Student's t (12.7 at one degree of
  // freedom) would put nearly every gap within the noise.
  int leaders = 2;
  int repeats = 3;
  // Stop taking new measurements past these (0: no limit); what was measured
  // is still decided on. Measurements found in the history do not count.
  int max_evaluations = 0;
  int64_t max_wall_ns = 0;
  DecisionOptions decision;

  // Tags that make the history's keys specific: the accuracy budget (in the
  // precisions' keys), the inputs (--shape, --int-range: in every key) and
  // the protocol of the served measurements ("grpc"; HTTP adds nothing).
  std::string accuracy_tag;
  std::string inputs_tag;
  std::string served_tag;

  // Screening (screening.h): a flip is kept only when it beats the current
  // choice by more than max(this, the two measurements' noise together); at
  // most this many passes over the knobs (another pass only when the last
  // one kept a flip, and in it only the knobs whose trial was a close call:
  // a flip that failed, or the best flip within `screening_retry_margin`
  // either way, tried before a later flip was kept); the latency curve is
  // measured for this many engine choices (the screened one, then its
  // fallback).
  double screening_min_gain = 0.02;
  int screening_passes = 2;
  double screening_retry_margin = 0.10;
  int curve_engines = 2;

  // Served: at most this many candidates get a first measurement (0: no
  // limit); a goodput IsAnomalous with `anomaly_ratio` and
  // `anomaly_min_batch_ms` is measured again
  // before it can win or lose; the estimate's model (its budget is set from
  // latency_budget_ms); a repeat's expected cost as a share of a first
  // served measurement, for the time kept back for the leaders' repeats.
  int max_served = 14;
  // Before serving by prediction alone, one candidate of each batch size
  // predicted within this share of the best prediction is served.
  double coverage_ratio = 0.6;
  double anomaly_ratio = 0.25;
  double anomaly_min_batch_ms = 1.0;
  EstimateOptions estimate;
  double repeat_cost_ratio = 0.6;
  // A candidate's repeats are measured on its first server start when its
  // first goodput is at least this share of the best so far (ServedLoad::
  // searches); 0 turns that off, and the leaders' repeats each restart the
  // server as before.
  double repeat_on_start_ratio = 0.9;

  // Measure the grid too (grid.h), for the record.
  bool exhaustive = false;
  GridOptions grid;
};

// A served candidate and what was learnt of it.
struct ServedOutcome {
  ServedCandidate candidate;
  ServedBounds bounds;
  std::vector<double> goodputs;  // one per repeat that succeeded (anomalous ones discarded, see below)
  double last_p99_ms = 0;
  std::string error;              // the first failure, if any (or why it is over the memory limit)
  bool over_memory = false;       // measured over the GPU memory limit (MeasuredOverMemory): `error` says by how much
  // The predicted goodput it was served in the order of (EstimateGoodput,
  // calibrated by the measurements before it).
  double predicted = 0;
  // Far from its ceiling (IsAnomalous): why, and the goodputs set aside
  // because the measurement again was not (they neither win nor lose).
  bool anomalous = false;
  std::string anomaly;
  std::vector<double> discarded;
  // The first measurement's details (connections at the goodput, errors,
  // the server's load time).
  Measurement first;
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

  std::vector<PrecisionOutcome> precisions;  // stage 1
  std::vector<ScreenStep> screening;         // stage 2, in the order tried
  std::optional<EngineChoice> screened;      // the engine choice screening kept
  std::vector<EngineChoice> curve_engines;   // stage 3
  // Served candidates the search did not measure (the cap, the time limit),
  // each with why.
  std::vector<Rejected> unmeasured;
  std::optional<GridResult> grid;            // stage 6
  double wall_s = 0;                         // the search's time, on its clock
};

// History keys (stable: a history outlives versions of the search). `tag`
// is SearchOptions::inputs_tag (in-process) or the inputs and served tags.
std::string InProcessKey(const EngineChoice& engine, int64_t batch, const std::string& tag = "");
std::string ServedKey(const ServedCandidate& candidate, double latency_budget_ms, const std::string& tag = "");
std::string PrecisionKey(Precision precision, const std::string& accuracy_tag, const std::string& tag = "");

// The served tag of `options` (inputs and protocol together).
std::string ServedTag(const SearchOptions& options);

// Why a served goodput is not to be believed as it is, or "": below
// options.anomaly_ratio of the candidate's ceiling (a server that thrashes,
// a load search cut short), or above 1 / anomaly_ratio times it (a
// measurement that counted what did not happen). A ceiling of 0 (unknown)
// judges nothing, and neither does a batch faster than
// options.anomaly_min_batch_ms in-process (serving a request costs tens of
// microseconds whatever the model, so a model that fast is served far below
// its in-process speed by nature), nor a goodput of 0 when the candidate's
// latency floor is above a quarter of the budget (under load, queueing
// takes the rest: no load meeting the budget is then a verdict).
std::string IsAnomalous(double goodput, const ServedBounds& bounds, const SearchOptions& options);

// Runs the search. Errors only for what stops it altogether (the history
// cannot be written); failed measurements become `rejected` entries.
Expected<SearchResult> RunSearch(const ModelTraits& traits, const SpaceOptions& space, const SearchOptions& options,
                                 Measurer& measurer, History& history, const Clock& clock);

}  // namespace ortgpu::tune
