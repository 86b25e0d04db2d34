// The HTML report: what bench shows, built with the shared page renderer
// (report/html_report.h, Chart.js inlined, no network needed). This file
// only chooses the charts and their slices; drawing, escaping, log axes and
// histogram binning are report/'s.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "bench/memory_report.h"
#include "bench/report.h"
#include "report/html_report.h"

namespace ortgpu::bench {
namespace {

using report::Chart;
using report::ChartKind;
using report::Point;
using report::Series;

// At most this many latency histograms: past it the page is a scroll of
// near-identical bars; the table has every configuration's percentiles.
constexpr size_t kMaxHistograms = 6;

bool Usable(const ConfigResult& r) { return r.error.ok() && r.stats.count > 0; }

bool Wrong(const ConfigResult& r) { return r.accuracy.checked && !r.accuracy.passed; }

std::string StatusText(const ConfigResult& r) {
  if (!r.error.ok()) return "error: " + r.error.message();
  if (Wrong(r)) return "WRONG";
  return r.stats.stable ? "ok" : "unstable";
}

std::optional<size_t> PickIndex(const BenchReport& report, bool latency) {
  if (!report.recommendation) return std::nullopt;
  const auto& pick = latency ? report.recommendation->latency : report.recommendation->throughput;
  return pick ? std::optional<size_t>(pick->index) : std::nullopt;
}

// The results histograms are drawn for: the recommended ones, then each
// variant at the smallest batch and concurrency, then the rest, up to the cap.
std::vector<size_t> HistogramResults(const BenchReport& report) {
  std::vector<size_t> order;
  auto add = [&](size_t i) {
    if (Usable(report.results[i]) && std::find(order.begin(), order.end(), i) == order.end()) order.push_back(i);
  };
  for (bool latency : {true, false}) {
    if (auto i = PickIndex(report, latency)) add(*i);
  }
  if (auto smallest = SmallestBatchAndConcurrency(report, Usable)) {
    for (size_t i = 0; i < report.results.size(); ++i) {
      const auto& c = report.results[i].config;
      if (c.batch == smallest->batch && c.concurrency == smallest->concurrency) add(i);
    }
  }
  for (size_t i = 0; i < report.results.size(); ++i) add(i);
  return order;
}

// The variants the line charts draw: all of them up to kMaxLines; past it
// the default and the recommended ones, since a dozen crossing lines show
// nothing (the bars by variant and the table have every variant).
constexpr size_t kMaxLines = 4;
std::set<std::string> LineVariants(const BenchReport& report) {
  std::set<std::string> all, kept;
  for (const auto& r : report.results) {
    if (!Usable(r)) continue;
    all.insert(r.config.variant.name);
    if (r.config.variant.is_default) kept.insert(r.config.variant.name);
  }
  if (all.size() <= kMaxLines) return all;
  for (bool latency : {true, false}) {
    if (auto i = PickIndex(report, latency)) kept.insert(report.results[*i].config.variant.name);
  }
  return kept;
}

enum class Axis { kBatch, kConcurrency };
enum class Metric { kLatency, kThroughput };

// One line per variant of `metric` against `axis`, the other dimension held
// at `fixed` (a batch size or a concurrency). The recommendation for the
// metric is highlighted when it lies on the slice.
Chart SliceChart(const BenchReport& report, Axis axis, Metric metric, int64_t fixed) {
  const bool by_batch = axis == Axis::kBatch;
  const bool latency = metric == Metric::kLatency;
  Chart c;
  c.id = fmt::format("{}-vs-{}", latency ? "latency" : "throughput", by_batch ? "batch" : "concurrency");
  c.title = fmt::format("{} vs {} ({} {})", latency ? "p50 latency" : "Throughput", by_batch ? "batch size" : "concurrency",
                        by_batch ? "concurrency" : "batch", fixed);
  c.x_label = by_batch ? "batch size" : "runs in flight";
  c.y_label = latency ? "p50 latency (ms)" : "items/s";
  std::map<std::string, size_t> index;
  const std::optional<size_t> pick = PickIndex(report, latency);
  const std::set<std::string> shown = LineVariants(report);
  for (size_t i = 0; i < report.results.size(); ++i) {
    const auto& r = report.results[i];
    if (!Usable(r) || (by_batch ? r.config.concurrency : r.config.batch) != fixed) continue;
    if (!shown.count(r.config.variant.name)) continue;
    auto [it, added] = index.try_emplace(r.config.variant.name, c.series.size());
    if (added) c.series.push_back({r.config.variant.name, {}});
    const auto& s = r.stats;
    Point p;
    p.x = by_batch ? static_cast<double>(r.config.batch) : r.config.concurrency;
    p.y = latency ? s.p50_ms : s.items_per_s;
    p.label = latency ? fmt::format("p90 {:.4g} ms, p99 {:.4g} ms", s.p90_ms, s.p99_ms)
                      : fmt::format("p50 {:.4g} ms, {:.1f} runs/s", s.p50_ms, s.runs_per_s);
    if (r.gpu_memory_mb) p.label += fmt::format(", GPU {:.0f} MB", *r.gpu_memory_mb);
    if (r.config.concurrency > 1 || !by_batch) p.label += fmt::format(", {} concurrency", ConcurrencyModeName(r.config.concurrency_mode));
    if (!s.stable) p.label += ", unstable";
    if (Wrong(r)) p.label += ", WRONG outputs";
    c.series[it->second].points.push_back(p);
    if (pick == i) {
      c.highlight = p;
      c.highlight_label = fmt::format("recommended for {}: {}", latency ? "latency" : "throughput", r.config.variant.name);
    }
  }
  report::AutoLogAxes(c);
  // Batch sizes and concurrency levels are usually powers of two: from 1 to
  // 8 and beyond, a log axis spaces them evenly where a linear one crowds
  // the small ones to the left.
  std::set<double> xs;
  for (const auto& s : c.series) {
    for (const auto& p : s.points) xs.insert(p.x);
  }
  if (!xs.empty() && *xs.begin() > 0 && *xs.rbegin() / *xs.begin() >= 8) c.x_log = true;
  return c;
}

// How many distinct x values a slice chart has: under 2, it shows no trend.
size_t DistinctX(const Chart& c) {
  std::set<double> xs;
  for (const auto& s : c.series) {
    for (const auto& p : s.points) xs.insert(p.x);
  }
  return xs.size();
}

void AddSlices(const BenchReport& report, Axis axis, report::HtmlPage& page) {
  const std::optional<BatchAndConcurrency> smallest = SmallestBatchAndConcurrency(report, Usable);
  if (!smallest) return;
  // Latency where the latency pick stands (the least batching and load);
  // throughput through the throughput pick, so the recommendation is on it.
  const bool by_batch = axis == Axis::kBatch;
  int64_t latency_at = by_batch ? smallest->concurrency : smallest->batch;
  int64_t throughput_at = latency_at;
  if (auto i = PickIndex(report, false)) {
    const auto& c = report.results[*i].config;
    throughput_at = by_batch ? c.concurrency : c.batch;
  }
  std::vector<Chart> charts = {SliceChart(report, axis, Metric::kLatency, latency_at),
                               SliceChart(report, axis, Metric::kThroughput, throughput_at)};
  charts.erase(std::remove_if(charts.begin(), charts.end(), [](const Chart& c) { return DistinctX(c) < 2; }), charts.end());
  if (charts.empty()) return;
  page.AddHeading(by_batch ? "Against batch size" : "Against concurrency");
  for (auto& c : charts) page.AddChart(std::move(c));
}

// With a sweep: one bar per variant, p50 latency at the smallest batch and
// concurrency and throughput at the throughput pick's, the picks in red.
void AddVariantBars(const BenchReport& report, report::HtmlPage& page) {
  std::set<std::string> variants;
  for (const auto& r : report.results) {
    if (Usable(r)) variants.insert(r.config.variant.name);
  }
  const std::optional<BatchAndConcurrency> smallest = SmallestBatchAndConcurrency(report, Usable);
  if (variants.size() < 2 || !smallest) return;
  page.AddHeading("By variant");
  for (Metric metric : {Metric::kLatency, Metric::kThroughput}) {
    const bool latency = metric == Metric::kLatency;
    const std::optional<size_t> pick = PickIndex(report, latency);
    BatchAndConcurrency at = *smallest;
    if (!latency && pick) at = {report.results[*pick].config.batch, report.results[*pick].config.concurrency};
    Chart c;
    c.id = latency ? "latency-by-variant" : "throughput-by-variant";
    c.kind = ChartKind::kBar;
    c.title = fmt::format("{} by variant (batch {}, concurrency {})", latency ? "p50 latency" : "Throughput", at.batch,
                          at.concurrency);
    c.x_label = "variant";
    c.y_label = latency ? "p50 latency (ms)" : "items/s";
    c.series.push_back({latency ? "p50 latency" : "throughput", {}});
    for (size_t i = 0; i < report.results.size(); ++i) {
      const auto& r = report.results[i];
      if (!Usable(r) || r.config.batch != at.batch || r.config.concurrency != at.concurrency) continue;
      Point p{static_cast<double>(i), latency ? r.stats.p50_ms : r.stats.items_per_s, r.config.variant.name};
      c.series[0].points.push_back(p);
      if (pick == i) {
        c.highlight = p;
        c.highlight_label = fmt::format("recommended for {}", latency ? "latency" : "throughput");
      }
    }
    report::AutoLogAxes(c);
    page.AddChart(std::move(c));
  }
}

// With two precisions or more: throughput against the least row cosine
// against fp32, one series per precision, at the throughput pick's batch
// and concurrency (else the smallest): what each precision buys and costs.
void AddPrecisionChart(const BenchReport& report, report::HtmlPage& page) {
  std::set<Precision> precisions;
  for (const auto& r : report.results) {
    if (Usable(r)) precisions.insert(r.config.variant.precision);
  }
  std::optional<BatchAndConcurrency> at = SmallestBatchAndConcurrency(report, Usable);
  if (precisions.size() < 2 || !at) return;
  const std::optional<size_t> pick = PickIndex(report, false);
  if (pick) at = BatchAndConcurrency{report.results[*pick].config.batch, report.results[*pick].config.concurrency};
  Chart c;
  c.id = "throughput-vs-accuracy";
  c.kind = ChartKind::kScatter;
  c.title = fmt::format("Throughput against accuracy by precision (batch {}, concurrency {})", at->batch, at->concurrency);
  c.x_label = "least row cosine against fp32 (1: fp32)";
  c.y_label = "items/s";
  std::map<Precision, size_t> index;
  std::vector<std::string> unjudged;
  for (size_t i = 0; i < report.results.size(); ++i) {
    const auto& r = report.results[i];
    if (!Usable(r) || r.config.batch != at->batch || r.config.concurrency != at->concurrency) continue;
    const PrecisionAccuracy& a = r.precision_accuracy;
    if (!a.checked) {
      unjudged.push_back(r.config.variant.name);
      continue;
    }
    auto [it, added] = index.try_emplace(r.config.variant.precision, c.series.size());
    if (added) c.series.push_back({std::string(PrecisionName(r.config.variant.precision)), {}});
    Point p{a.min_cosine, r.stats.items_per_s,
            fmt::format("{}: p50 {:.4g} ms, {}, budget {}", r.config.variant.name, r.stats.p50_ms, DescribeAccuracy(a),
                        BudgetCell(a))};
    c.series[it->second].points.push_back(p);
    if (pick == i) {
      c.highlight = p;
      c.highlight_label = "recommended for throughput: " + r.config.variant.name;
    }
  }
  page.AddHeading("Speed against accuracy");
  page.AddChart(std::move(c));
  if (!unjudged.empty()) {
    std::string names;
    for (const auto& n : unjudged) names += (names.empty() ? "" : ", ") + n;
    page.AddParagraph("Not on the chart, their accuracy against fp32 not judged: " + names);
  }
}

// Four significant digits: 4.422 ms and 0.001282 ms alike (a fixed three
// decimals would print the second as 0.001).
std::string Ms(double ms) { return fmt::format("{:.4g}", ms); }

// bench --memory: per variant, the measured memory and the prediction
// against the batch size (chart "memory-<variant index>"), the table, the fit.
void AddMemory(const BenchReport& report, report::HtmlPage& page) {
  if (report.memory.empty()) return;
  page.AddHeading("Memory");
  constexpr double kMiB = 1024.0 * 1024.0;
  for (size_t i = 0; i < report.memory.size(); ++i) {
    const MemoryTable& t = report.memory[i];
    const std::string what = t.device ? "device memory (NVML, " + t.source + ")" : "host arena (CPU provider: device memory not measured)";
    Chart c;
    c.id = fmt::format("memory-{}", i);
    c.title = fmt::format("{}: {} against prediction", t.variant, what);
    c.x_label = "batch size";
    c.y_label = "MiB";
    Series measured{"measured", {}}, predicted{"predicted", {}};
    std::vector<std::vector<std::string>> rows;
    for (const auto& r : t.rows) {
      const std::string label = fmt::format("concurrency {}, {} session{}", r.concurrency, r.sessions, r.sessions == 1 ? "" : "s");
      if (r.measured) measured.points.push_back({static_cast<double>(r.batch), *r.measured / kMiB, label});
      if (r.predicted) predicted.points.push_back({static_cast<double>(r.batch), *r.predicted / kMiB, label});
      rows.push_back({std::to_string(r.batch), std::to_string(r.concurrency), std::to_string(r.sessions),
                      r.measured ? FormatMiB(static_cast<double>(*r.measured)) : "-",
                      FormatMiB(static_cast<double>(r.arena_reserved)), FormatMiB(static_cast<double>(r.arena_in_use)),
                      r.predicted ? FormatMiB(static_cast<double>(*r.predicted)) : "-",
                      r.error ? fmt::format("{:+.1f}%", 100.0 * *r.error) : "-"});
    }
    c.series = {std::move(measured), std::move(predicted)};
    page.AddChart(std::move(c));
    page.AddTable({"batch", "conc.", "sessions", t.device ? "measured" : "host arena", "arena reserved", "arena in use",
                   "predicted", "error"},
                  std::move(rows));
    if (t.fit) {
      page.AddParagraph("fit: one session's arena = " + t.fit->Describe() + "; its own weights " +
                        FormatMiB(static_cast<double>(t.weights)) + "; predicted peak = other " +
                        FormatMiB(static_cast<double>(t.other)) + " + instances x (arena at the batch)");
    }
    for (const auto& n : t.notes) page.AddParagraph("note: " + n);
  }
}

void AddTable(const BenchReport& report, report::HtmlPage& page) {
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < report.results.size(); ++i) {
    const auto& r = report.results[i];
    const auto& c = r.config;
    std::string pick;
    if (PickIndex(report, true) == i) pick = "best latency";
    if (PickIndex(report, false) == i) pick += pick.empty() ? "best throughput" : ", best throughput";
    // A reference I/O mode is never picked; the column says why.
    if (pick.empty() && !ServedByServe(c.variant.io)) pick = "not servable: " + std::string(NotServedReason(c.variant.io));
    if (pick.empty() && !Recommendable(c.variant.precision, r.precision_accuracy)) {
      pick = r.precision_accuracy.checked ? "outside the accuracy budget" : "accuracy against fp32 not judged";
    }
    const std::string precision(PrecisionName(c.variant.precision));
    if (!r.error.ok()) {
      rows.push_back({c.variant.name, std::to_string(c.batch), std::to_string(c.concurrency), precision, "", "", "", "", "",
                      "", "", "", "", "", "", "", "", StatusText(r)});
      if (report.recommendation) rows.back().push_back(pick);
      continue;
    }
    const auto& s = r.stats;
    const PrecisionAccuracy& pa = r.precision_accuracy;
    rows.push_back({c.variant.name, std::to_string(c.batch), std::to_string(c.concurrency), precision, r.memory,
                    Ms(s.p50_ms), Ms(s.p90_ms), Ms(s.p99_ms), Ms(s.mean_ms), fmt::format("{:.1f}", s.runs_per_s), fmt::format("{:.1f}", s.items_per_s),
                    r.accuracy.checked ? fmt::format("{:.2g}", r.accuracy.max_abs_error) : "-", CosineCell(pa),
                    RelErrorCell(pa), Top1Cell(pa), BudgetCell(pa),
                    r.gpu_memory_mb ? fmt::format("{:.0f}", *r.gpu_memory_mb) : "n/a", StatusText(r)});
    if (report.recommendation) rows.back().push_back(pick);
  }
  std::vector<std::string> header = {"variant", "batch",  "conc.",   "precision",   "memory",   "p50 ms",
                                     "p90 ms",  "p99 ms", "mean ms", "runs/s",      "items/s",  "max abs err",
                                     "min cos (fp32)", "rel err (fp32)", "top-1 (fp32)", "in budget", "GPU MB", "status"};
  if (report.recommendation) header.push_back("pick");  // only a sweep recommends
  page.AddTable(std::move(header), std::move(rows));
}

}  // namespace

std::string RenderHtml(const BenchReport& report) {
  report::HtmlPage page("ortgpu bench: " + report.model);
  page.AddParagraph(fmt::format("provider {} · ONNX Runtime {} · {} configurations", ProviderName(report.provider),
                                report.ort_version, report.results.size()));
  if (report.recommendation) {
    for (const auto& line : RecommendationLines(report)) page.AddParagraph(line);
  }

  // The trends first (what a sweep is for), then the distributions behind
  // them, then every figure.
  AddVariantBars(report, page);
  AddPrecisionChart(report, page);
  AddSlices(report, Axis::kBatch, page);
  AddSlices(report, Axis::kConcurrency, page);
  AddMemory(report, page);
  const std::vector<size_t> histograms = HistogramResults(report);
  if (!histograms.empty()) page.AddHeading("Latency distribution");
  for (size_t k = 0; k < std::min(histograms.size(), kMaxHistograms); ++k) {
    const ConfigResult& r = report.results[histograms[k]];
    page.AddChart(report::LatencyHistogram(
        fmt::format("histogram-{}", histograms[k]),
        fmt::format("{} ({} runs, p50 {:.4g} ms, p99 {:.4g} ms)", ConfigurationLabel(r.config), r.stats.count, r.stats.p50_ms,
                    r.stats.p99_ms),
        r.samples_ms));
  }
  if (histograms.size() > kMaxHistograms) {
    page.AddParagraph(fmt::format("{} more configurations have no histogram here; the table below has their percentiles.",
                                  histograms.size() - kMaxHistograms));
  }

  page.AddHeading("All configurations");
  AddTable(report, page);
  if (report.recommendation && !report.recommendation->config_pbtxt.empty()) {
    page.AddHeading("Recommended config.pbtxt fragment");
    page.AddPre("config-pbtxt", report.recommendation->config_pbtxt);
  }
  std::vector<std::string> notes;
  for (const auto& r : report.results) {
    if (Wrong(r)) notes.push_back(fmt::format("accuracy failure: {}: {}", ConfigurationLabel(r.config), r.accuracy.note));
  }
  if (!report.precision_budget.empty()) notes.push_back("precision accuracy is against fp32 (TF32 off); budget: " + report.precision_budget);
  notes.insert(notes.end(), report.notes.begin(), report.notes.end());
  if (!notes.empty()) {
    page.AddHeading("Notes");
    for (auto& n : notes) page.AddParagraph(std::move(n));
  }
  return page.Render();
}

}  // namespace ortgpu::bench
