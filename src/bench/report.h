// Renderers of a BenchReport: a terminal table, JSON, CSV and one
// self-contained HTML page (inline SVG charts, no external assets). Each is
// a pure function of the report; they share no state. Thread-safe.
#pragma once

#include <string>

#include "bench/result.h"

namespace ortgpu::bench {

// The comparison table (one row per configuration), the stability notes,
// and with --sweep the recommendation and config.pbtxt fragment.
std::string RenderTable(const BenchReport& report);

// The whole report; raw samples included when `with_samples`.
struct JsonOptions {
  bool with_samples = false;
  int indent = 2;
};
std::string RenderJson(const BenchReport& report, const JsonOptions& options = {});

// One header line, then one line per configuration (RFC 4180 quoting).
std::string RenderCsv(const BenchReport& report);

// A page with a latency histogram per configuration group, latency and
// throughput against batch size and against concurrency, and the table.
// Every chart is an <svg class="chart" data-chart="KIND"> element, KIND one
// of histogram, latency-vs-batch, throughput-vs-batch,
// latency-vs-concurrency, throughput-vs-concurrency.
std::string RenderHtml(const BenchReport& report);

// One CSV field with RFC 4180 quoting (quoted when it holds a comma, a
// quote or a newline); shared by the CSV renderers of bench and perf.
std::string CsvField(const std::string& s);

}  // namespace ortgpu::bench
