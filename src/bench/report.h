// Renderers of a BenchReport: a terminal table, JSON, CSV and one
// self-contained HTML page (charts drawn by the Chart.js the page inlines,
// report/html_report.h; no external assets). Each is a pure function of the
// report; they share no state. Thread-safe.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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
// The same document as a value (bench --device all nests one per GPU).
nlohmann::json ReportJson(const BenchReport& report, const JsonOptions& options = {});

// One header line, then one line per configuration (RFC 4180 quoting).
std::string RenderCsv(const BenchReport& report);

// "best latency: io=bound at batch 1, concurrency 1: p50 1.2 ms (1.30x the
// default)" and the same for throughput; empty without a recommendation.
std::vector<std::string> RecommendationLines(const BenchReport& report);

// A page (report::HtmlPage) with, in this order:
//  - with two variants or more, a bar per variant: p50 latency at the
//    smallest batch and concurrency, throughput at the throughput pick's;
//  - with two precisions or more, throughput against the least row cosine
//    against fp32, one series per precision (a scatter, at the throughput
//    pick's batch and concurrency);
//  - p50 latency and throughput against batch size and against concurrency,
//    one line per variant (past 4 variants: the default and the picks'),
//    only where that dimension took >= 2 values:
//    latency at the smallest other dimension, throughput through the
//    throughput pick's, the recommendation highlighted on its chart;
//  - latency histograms (report::LatencyHistogram, so one outlier cannot
//    flatten them) for the recommended configurations, each variant at the
//    smallest batch and concurrency, then the rest, at most 6;
//  - the table of every configuration (precision and its accuracy against
//    fp32 included), the config.pbtxt fragment
//    (<pre id="config-pbtxt">) and the notes.
// Chart boxes are <div class="chart" data-chart="ID" data-kind="KIND">, ID
// histogram-<result index>, latency-by-variant, throughput-by-variant,
// throughput-vs-accuracy,
// latency-vs-batch, throughput-vs-batch, latency-vs-concurrency or
// throughput-vs-concurrency.
std::string RenderHtml(const BenchReport& report);

// One CSV field with RFC 4180 quoting (quoted when it holds a comma, a
// quote or a newline); shared by the CSV renderers of bench and perf.
std::string CsvField(const std::string& s);

}  // namespace ortgpu::bench
