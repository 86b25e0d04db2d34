// PerfReport: the result of one `ortgpu perf` run (every load step with its
// client-side and server-side figures, the budget search, the in-process
// comparison, notes), and its renderers: a terminal table, JSON, CSV and a
// self-contained HTML page. Renderers are pure functions of the report and
// share no state with measurement (as bench's report*.cc). Value types;
// renderers are thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/statistics.h"
#include "perf/measure.h"
#include "perf/request_builder.h"
#include "perf/server_stats.h"

namespace ortgpu::perf {

enum class LoadMode { kConcurrency, kRequestRate };
std::string_view LoadModeName(LoadMode m);  // "concurrency", "request-rate"

struct StepResult {
  double load = 0;  // connections (concurrency mode) or requests/s asked for (rate mode)
  bool stable = false;
  bool failed = false;   // every request of its last window failed, or none completed
  std::string note;      // stability or failure, "" when stable and clean
  std::vector<WindowSummary> windows;
  bench::LatencyStats latency;  // client side, successful requests; percentiles from bench/statistics.h
  double budget_latency_ms = 0;  // the latency at PerfOptions::budget_percentile (p99 by default)
  double throughput = 0;        // successful requests/s
  double items_per_s = 0;       // throughput x rows per request
  int64_t requests = 0;         // successful requests counted
  std::map<std::string, int64_t> errors;  // "500", "timeout", "connection" -> count
  int64_t delayed = 0;
  std::optional<ServerSplit> server;
  std::optional<GpuSample> gpu;
  // Client-side mean minus the server's mean request time: the network and
  // the client (and the server's HTTP stack outside its statistics).
  std::optional<double> outside_server_us;
  // With a latency budget: successful requests per second whose latency was
  // within it (PerfOptions::goodput_budget_ms).
  std::optional<double> goodput;

  int64_t error_count() const;
};

struct BudgetSummary {
  double budget_ms = 0;
  double percentile = 99;
  std::optional<size_t> best;  // into PerfReport::steps
  double best_latency_ms = 0;  // the best step's latency at `percentile`
  std::string note;
};

// --compare-in-process: the served throughput next to `ortgpu bench` of the
// same model in this process, run as serve runs it (perf/served_config.h):
// the served configuration's EP options, serve's I/O, the batch size the
// load made the server run and the request's own shapes.
struct ComparisonRow {
  int64_t batch = 1;
  double in_process_items_per_s = 0;
  double in_process_p50_ms = 0;
  std::string error;  // the bench run failed for this batch
};
struct InProcessComparison {
  std::string model_path;
  std::string provider;            // "cpu", "cuda"
  std::vector<ComparisonRow> rows;
  double served_items_per_s = 0;   // the best step
  double best_in_process_items_per_s = 0;
  double ratio = 0;                // served / best in-process; 0 when either is missing
  // What was compared: where the settings came from, serve's I/O mode as
  // bench names it, the EP options, the shapes at the batch, why that
  // batch, and the equivalent `ortgpu bench` command line.
  std::string config_source;       // "GET /v2/models/M/config"
  std::string io;                  // "served", "served-graph"
  std::map<std::string, std::string> cuda_options;
  std::map<std::string, std::vector<int64_t>> shapes;
  std::string batch_source;
  std::string command;
  std::vector<std::string> notes;
};

struct PerfReport {
  std::string url;
  std::string model;
  std::string version;
  LoadMode mode = LoadMode::kConcurrency;
  std::string distribution;  // rate mode
  TensorFormat format = TensorFormat::kBinary;
  int64_t rows = 1;          // rows per request (--batch)
  int64_t max_batch_size = 0;
  int64_t request_count = 0;  // --request-count; 0: windows
  MeasureOptions measure;
  std::vector<StepResult> steps;
  std::optional<BudgetSummary> budget;
  std::optional<InProcessComparison> comparison;
  bool server_statistics = false;  // the statistics extension answered
  std::vector<std::string> notes;

  // True when no request failed and no step failed.
  bool ok() const;
};

std::string RenderTable(const PerfReport& report);
// What the in-process run compared, a line each: where the settings came
// from, the I/O mode, the EP options, the batch and why, the shapes, and
// the equivalent `ortgpu bench` command. The text and HTML reports print them.
std::vector<std::string> ComparisonSettingsLines(const InProcessComparison& comparison);
struct JsonOptions {
  int indent = 2;
};
std::string RenderJson(const PerfReport& report, const JsonOptions& options = {});
// One header line, then one line per step (RFC 4180 quoting).
std::string RenderCsv(const PerfReport& report);
// One self-contained page (report::HtmlPage, Chart.js inlined) with:
//  - "throughput-latency": p50 and p99 against infer/s, one point per step
//    (the budget's best point highlighted);
//  - "throughput-load": infer/s against the concurrency or the rate;
//  - "server-split" (when the statistics extension answered): bars per step
//    of queue, compute input, compute infer, compute output, overhead and
//    the time outside the server, microseconds per request;
//  - the table of steps, the budget result, the in-process comparison and
//    the notes.
std::string RenderHtml(const PerfReport& report);

// The x label of a step: "concurrency 4" or "200 req/s".
std::string StepLabel(const PerfReport& report, const StepResult& step);

}  // namespace ortgpu::perf
