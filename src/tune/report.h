// The report of a tune run (issue 28): one JSON document (`ortgpu tune
// --json`) and one self-contained HTML page (OUTPUT/tune_report.html, or
// --report FILE; report::HtmlPage, Chart.js inlined) that embeds the same
// JSON in <script type="application/json" id="tune-report">. Both render a
// TuneReportView, derived from the TuneReport alone:
//  - goodput per served candidate, the winner marked, failed and anomalous
//    candidates marked with their reason;
//  - latency against throughput: perf's budget-search steps per served
//    candidate where the history has them, else each candidate's goodput
//    against its p99;
//  - what each knob gave: the engine screening (items/s per engine choice at
//    the batch most engine choices were measured at), the in-process latency
//    against batch per engine choice, and the best goodput per knob value;
//  - the winner's in-process ceiling and its served / in-process ratio;
//  - the GPU memory each candidate needs: measured while it was served when
//    the measurement has it, else the estimate (labelled so).
// Pure functions of the report; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tune/decision.h"
#include "tune/tune.h"

namespace ortgpu::tune {

// A served candidate as the report shows it.
struct ServedRow {
  ServedCandidate candidate;
  std::string label;  // short: "2 inst, batch 32, pad, fp16, graphs"
  ServedBounds bounds;
  std::vector<double> goodputs;  // per successful repeat
  Interval goodput;              // mean and confidence interval
  double p99_ms = 0;
  // "winner", "leader" (measured again), "served", "no goodput" (no load met
  // the budget), "over memory" (measured over --max-gpu-memory: error says
  // by how much) or "failed" (error says why).
  std::string status;
  std::string error;
  std::vector<std::string> anomalies;  // e.g. "above its in-process ceiling by 25%"
  std::optional<double> memory_bytes;
  std::string memory_source;  // "measured" or "estimate"; "" without a figure
  std::optional<double> load_s;
  std::vector<LoadStep> steps;  // perf's steps of its first measurement that has them
};

// One engine choice measured in-process.
struct EngineRow {
  EngineChoice engine;
  std::vector<InProcessPoint> points;  // by batch
  std::optional<double> best_items_per_s;
};

// What one value of one knob gave: the best served goodput among the
// candidates with it, and the best in-process items/s among the engine
// choices (and batches) with it.
struct KnobRow {
  std::string knob;   // "instances", "batch", "padding", "queue delay (us)", "workers",
                      // "precision", "prefer_nhwc", "cuda graphs", "cudnn conv search"
  std::string value;
  std::optional<double> best_goodput;
  std::string best_candidate;  // the label of the candidate that gave it
  std::optional<double> best_in_process;
};

struct WinnerSummary {
  ServedCandidate candidate;
  std::string label;
  Interval goodput;
  double p99_ms = 0;
  // The best items/s its engine choice reached in-process (any batch), and
  // the winner's mean goodput over it; 0 when the engine has no curve.
  double in_process_ceiling = 0;
  double served_to_in_process = 0;
  double candidate_ceiling = 0;  // instances x batch / latency(batch), capped by the above
  std::string reason;
};

struct TuneReportView {
  std::vector<ServedRow> served;  // in the order served
  std::vector<EngineRow> engines;  // in space order
  // The screening batch: the batch most engine choices were measured at (the
  // largest of ties); nullopt without in-process measurements.
  std::optional<int64_t> screening_batch;
  std::vector<KnobRow> knobs;
  std::optional<WinnerSummary> winner;
  double best_in_process = 0;  // the best items/s of any engine choice
};

TuneReportView BuildReportView(const TuneReport& report);

// A candidate's short label for charts and tables.
std::string CandidateLabel(const ServedCandidate& c);

// The JSON document:
//  {"model", "model_folder", "base_config", "output", "provider",
//   "latency_budget_ms", "config_path", "config_pbtxt", "config_changes",
//   "history_path", "report_path",
//   "measurements": {"new", "from_history", "stopped_early"},
//   "traits": {"max_batch_size", "variable_non_batch_dim", "weight_bytes",
//              "activation_bytes_per_row", "gpu_memory_limit_bytes" | null,
//              "gpu_memory_limit_source", "memory_estimate"},
//   "winner": {"candidate", "label", "goodput": {mean, low, high, n}, "p99_ms",
//              "in_process_ceiling_items_per_s", "served_to_in_process",
//              "candidate_ceiling_items_per_s", "reason"} | null,
//   "served": [{"candidate", "label", "status", "error", "anomalies",
//               "goodputs", "goodput", "p99_ms", "ceiling_items_per_s",
//               "floor_ms", "memory": {"bytes", "source"} | null, "load_s",
//               "steps": [{"load", "items_per_s", "p99_ms"}]}],
//   "in_process": [{"engine", "key", "best_items_per_s",
//                   "points": [{"batch", "latency_ms", "items_per_s", "error"}]}],
//   "engine_screening": {"batch", "items_per_s": [{"engine", "items_per_s"}]} | null,
//   "knobs": [{"knob", "value", "best_goodput", "best_candidate",
//              "best_in_process_items_per_s"}],
//   "rejected": [{"candidate", "reason"}], "notes", "warnings"}
// A candidate is {"key", "precision", "prefer_nhwc", "cuda_graphs",
// "conv_search", "instances", "batch", "pad_to_preferred",
// "max_queue_delay_us", "workers_per_instance"}.
nlohmann::json TuneReportJson(const TuneReport& report);
std::string RenderTuneJson(const TuneReport& report);  // indented, one document

// The page. Charts (ids): "goodput", "latency-throughput", "engine-screening",
// "in-process-latency", "knobs", "memory"; one left out with a note when it
// has nothing to draw.
std::string RenderTuneHtml(const TuneReport& report);

}  // namespace ortgpu::tune
