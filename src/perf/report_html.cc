#include <algorithm>

#include <fmt/format.h>

#include "perf/report.h"
#include "report/html_report.h"

namespace ortgpu::perf {
namespace {

using report::Chart;
using report::ChartKind;
using report::Point;
using report::Series;

std::string Us(const std::optional<ServerSplit>& s, double ServerSplit::*f) {
  return s ? fmt::format("{:.0f}", (*s).*f) : "-";
}

// Steps in load order (the budget search measures them out of order).
std::vector<size_t> ByLoad(const PerfReport& r) {
  std::vector<size_t> order(r.steps.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return r.steps[a].load < r.steps[b].load; });
  return order;
}

Chart ThroughputLatency(const PerfReport& r, const std::vector<size_t>& order) {
  Chart c;
  c.id = "throughput-latency";
  c.kind = ChartKind::kLine;
  c.title = "Latency against throughput";
  c.x_label = "infer/s";
  c.y_label = "latency (ms)";
  Series p50{"p50", {}}, p99{"p99", {}};
  for (size_t i : order) {
    const auto& s = r.steps[i];
    if (s.requests == 0) continue;
    p50.points.push_back({s.throughput, s.latency.p50_ms, StepLabel(r, s)});
    p99.points.push_back({s.throughput, s.latency.p99_ms, StepLabel(r, s)});
  }
  c.series = {p50, p99};
  if (r.budget && r.budget->best) {
    const auto& s = r.steps[*r.budget->best];
    c.highlight = Point{s.throughput, s.latency.p99_ms, StepLabel(r, s)};
    c.highlight_label = fmt::format("best within {:g} ms", r.budget->budget_ms);
  }
  report::AutoLogAxes(c);
  return c;
}

Chart ThroughputByLoad(const PerfReport& r, const std::vector<size_t>& order) {
  Chart c;
  c.id = "throughput-load";
  c.kind = ChartKind::kLine;
  c.title = r.mode == LoadMode::kRequestRate ? "Throughput against the request rate" : "Throughput against concurrency";
  c.x_label = r.mode == LoadMode::kRequestRate ? "requests/s sent" : "concurrency";
  c.y_label = "infer/s";
  Series served{"infer/s", {}};
  for (size_t i : order) served.points.push_back({r.steps[i].load, r.steps[i].throughput, StepLabel(r, r.steps[i])});
  c.series = {served};
  report::AutoLogAxes(c);
  return c;
}

// Where each request's time goes, per step: the server's parts and the rest.
Chart ServerSplitChart(const PerfReport& r, const std::vector<size_t>& order) {
  Chart c;
  c.id = "server-split";
  c.kind = ChartKind::kBar;
  c.title = "Server-side split per request";
  c.x_label = "step";
  c.y_label = "microseconds per request";
  const std::vector<std::pair<const char*, double ServerSplit::*>> parts = {
      {"queue", &ServerSplit::queue_us},
      {"compute input", &ServerSplit::compute_input_us},
      {"compute infer", &ServerSplit::compute_infer_us},
      {"compute output", &ServerSplit::compute_output_us},
      {"overhead", &ServerSplit::overhead_us}};
  for (const auto& [name, field] : parts) {
    Series s{name, {}};
    for (size_t k = 0; k < order.size(); ++k) {
      const auto& step = r.steps[order[k]];
      if (step.server) s.points.push_back({static_cast<double>(k), (*step.server).*field, StepLabel(r, step)});
    }
    c.series.push_back(std::move(s));
  }
  Series outside{"outside the server", {}};
  for (size_t k = 0; k < order.size(); ++k) {
    const auto& step = r.steps[order[k]];
    if (step.outside_server_us) outside.points.push_back({static_cast<double>(k), std::max(0.0, *step.outside_server_us), StepLabel(r, step)});
  }
  c.series.push_back(std::move(outside));
  return c;
}

}  // namespace

std::string RenderHtml(const PerfReport& r) {
  report::HtmlPage page("ortgpu perf: " + r.model + " at " + r.url);
  page.AddParagraph(fmt::format(
      "{} mode{}, {} tensors, {} row(s) per request{}. {}", LoadModeName(r.mode),
      r.mode == LoadMode::kRequestRate ? " (" + r.distribution + " arrivals)" : "",
      r.format == TensorFormat::kBinary ? "binary" : "JSON", r.rows,
      r.max_batch_size > 0 ? fmt::format(", max_batch_size {}", r.max_batch_size) : "",
      r.request_count > 0 ? fmt::format("{} requests per step.", r.request_count)
                          : fmt::format("Windows of {} ms; a step counts when 3 agree within {:.0f}% on throughput and p{:g}.",
                                        r.measure.window_ms, r.measure.stability * 100, r.measure.percentile)));
  const std::vector<size_t> order = ByLoad(r);
  page.AddChart(ThroughputLatency(r, order));
  page.AddChart(ThroughputByLoad(r, order));
  if (r.server_statistics) page.AddChart(ServerSplitChart(r, order));

  page.AddHeading("Steps");
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : r.steps) {
    rows.push_back({StepLabel(r, s), fmt::format("{:.1f}", s.throughput), fmt::format("{:.1f}", s.items_per_s),
                    fmt::format("{:.3f}", s.latency.p50_ms), fmt::format("{:.3f}", s.latency.p90_ms),
                    fmt::format("{:.3f}", s.latency.p95_ms), fmt::format("{:.3f}", s.latency.p99_ms),
                    s.errors.empty() ? "0" : DescribeErrors(s.errors), Us(s.server, &ServerSplit::request_us),
                    Us(s.server, &ServerSplit::queue_us), Us(s.server, &ServerSplit::compute_input_us),
                    Us(s.server, &ServerSplit::compute_infer_us), Us(s.server, &ServerSplit::compute_output_us),
                    Us(s.server, &ServerSplit::overhead_us),
                    s.outside_server_us ? fmt::format("{:.0f}", *s.outside_server_us) : "-",
                    s.server ? fmt::format("{:.2f}", s.server->average_batch) : "-",
                    s.gpu && s.gpu->gpus > 0 ? fmt::format("{:.0f}", s.gpu->utilization * 100) : "-",
                    s.gpu && s.gpu->gpus > 0 ? fmt::format("{:.0f}", s.gpu->memory_used_bytes / (1024.0 * 1024.0)) : "-",
                    s.gpu && s.gpu->host_cpu ? fmt::format("{:.0f}", *s.gpu->host_cpu * 100) : "-",
                    s.failed ? "FAILED" : s.stable ? "ok" : "unstable"});
  }
  page.AddTable({"step", "infer/s", "items/s", "p50 ms", "p90 ms", "p95 ms", "p99 ms", "errors", "server us", "queue us",
                 "compute input us", "compute infer us", "compute output us", "overhead us", "outside us", "batch", "GPU %",
                 "GPU MB", "host CPU %", "status"},
                std::move(rows));
  if (r.budget) {
    const auto& b = *r.budget;
    page.AddParagraph(b.best ? fmt::format("Latency budget {:g} ms (p{:g}): best {}: {:.1f} infer/s at p{:g} {:.3f} ms ({}).",
                                           b.budget_ms, b.percentile, StepLabel(r, r.steps[*b.best]),
                                           r.steps[*b.best].throughput, b.percentile, b.best_latency_ms, b.note)
                             : fmt::format("Latency budget {:g} ms (p{:g}): no load meets it ({}).", b.budget_ms, b.percentile, b.note));
  }
  if (r.comparison) {
    const auto& c = *r.comparison;
    page.AddHeading("Served against in-process");
    std::vector<std::vector<std::string>> crows;
    for (const auto& row : c.rows) {
      crows.push_back({std::to_string(row.batch), row.error.empty() ? fmt::format("{:.1f}", row.in_process_items_per_s) : "-",
                       row.error.empty() ? fmt::format("{:.3f}", row.in_process_p50_ms) : "-", row.error});
    }
    page.AddTable({"batch", "in-process items/s", "p50 ms", "error"}, std::move(crows));
    for (const auto& line : ComparisonSettingsLines(c)) page.AddParagraph(line);
    page.AddParagraph(c.ratio > 0 ? fmt::format("Served {:.1f} items/s against {:.1f} in process ({}, {}): ratio {:.2f}.",
                                                c.served_items_per_s, c.best_in_process_items_per_s, c.provider, c.model_path, c.ratio)
                                  : "No ratio: one side has no figure.");
  }
  for (const auto& s : r.steps) {
    if (!s.note.empty()) page.AddParagraph("Note: " + StepLabel(r, s) + ": " + s.note);
  }
  for (const auto& n : r.notes) page.AddParagraph("Note: " + n);
  return page.Render();
}

}  // namespace ortgpu::perf
