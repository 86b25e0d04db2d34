// The HTML report: inline SVG drawn here, so the page needs no scripts,
// fonts or network (it must open from a file on an air-gapped machine).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "bench/report.h"

namespace ortgpu::bench {
namespace {

constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                                   "#bcbd22", "#17becf"};
constexpr int kW = 520, kH = 300, kLeft = 64, kRight = 16, kTop = 28, kBottom = 44;

std::string Escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

bool Usable(const ConfigResult& r) { return r.error.ok() && r.stats.count > 0; }

struct Series {
  std::string label;
  std::vector<std::pair<double, double>> points;  // x ascending
};

std::string Axes(const std::string& title, const std::string& xlabel, const std::string& ylabel, double ymax) {
  std::string s = fmt::format("<text x='{}' y='18' class='title'>{}</text>", kLeft, Escape(title));
  const int x0 = kLeft, y0 = kH - kBottom, x1 = kW - kRight, y1 = kTop;
  s += fmt::format("<line x1='{}' y1='{}' x2='{}' y2='{}' class='axis'/><line x1='{}' y1='{}' x2='{}' y2='{}' class='axis'/>", x0,
                   y0, x1, y0, x0, y0, x0, y1);
  for (int i = 0; i <= 4; ++i) {
    const double v = ymax * i / 4;
    const double y = y0 - (y0 - y1) * i / 4.0;
    s += fmt::format("<text x='{}' y='{:.1f}' class='tick' text-anchor='end'>{:.3g}</text>", x0 - 4, y + 4, v);
  }
  s += fmt::format("<text x='{}' y='{}' class='label' text-anchor='middle'>{}</text>", (x0 + x1) / 2, kH - 6, Escape(xlabel));
  s += fmt::format("<text x='14' y='{}' class='label' transform='rotate(-90 14 {})' text-anchor='middle'>{}</text>",
                   (y0 + y1) / 2, (y0 + y1) / 2, Escape(ylabel));
  return s;
}

std::string LineChart(const std::string& kind, const std::string& title, const std::string& xlabel, const std::string& ylabel,
                      const std::vector<Series>& series) {
  std::set<double> xs;
  double ymax = 0;
  for (const auto& s : series) {
    for (auto [x, y] : s.points) {
      xs.insert(x);
      ymax = std::max(ymax, y);
    }
  }
  std::string svg = fmt::format("<svg class='chart' data-chart='{}' width='{}' height='{}' viewBox='0 0 {} {}'>", kind, kW,
                                kH + 18 * static_cast<int>((series.size() + 2) / 3), kW, kH + 18 * ((series.size() + 2) / 3));
  if (xs.empty()) return svg + fmt::format("<text x='20' y='40'>{}: no data</text></svg>", Escape(title));
  ymax = ymax > 0 ? ymax * 1.1 : 1;
  svg += Axes(title, xlabel, ylabel, ymax);
  // Categorical x positions: batch sizes and concurrency levels are few and
  // spread over powers of two, so equal spacing reads best.
  std::vector<double> xv(xs.begin(), xs.end());
  auto px = [&](double x) {
    const size_t i = std::lower_bound(xv.begin(), xv.end(), x) - xv.begin();
    const double span = kW - kLeft - kRight - 40;
    return kLeft + 20 + (xv.size() == 1 ? span / 2 : span * static_cast<double>(i) / static_cast<double>(xv.size() - 1));
  };
  auto py = [&](double y) { return (kH - kBottom) - (kH - kBottom - kTop) * y / ymax; };
  for (double x : xv) {
    svg += fmt::format("<text x='{:.1f}' y='{}' class='tick' text-anchor='middle'>{:g}</text>", px(x), kH - kBottom + 14, x);
  }
  for (size_t i = 0; i < series.size(); ++i) {
    const char* color = kColors[i % std::size(kColors)];
    std::string pts;
    for (auto [x, y] : series[i].points) pts += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
    svg += fmt::format("<polyline class='series' fill='none' stroke='{}' stroke-width='2' points='{}'/>", color, pts);
    for (auto [x, y] : series[i].points) {
      svg += fmt::format("<circle cx='{:.1f}' cy='{:.1f}' r='3' fill='{}'><title>{}: {:g} -> {:.4g}</title></circle>", px(x), py(y),
                         color, Escape(series[i].label), x, y);
    }
    const int lx = kLeft + static_cast<int>(i % 3) * 170, ly = kH + 4 + 18 * static_cast<int>(i / 3);
    svg += fmt::format("<rect x='{}' y='{}' width='10' height='10' fill='{}'/><text x='{}' y='{}' class='tick'>{}</text>", lx, ly,
                       color, lx + 14, ly + 9, Escape(series[i].label.substr(0, 26)));
  }
  return svg + "</svg>";
}

std::string HistogramChart(const ConfigResult& r, int bins) {
  const Histogram h = MakeHistogram(r.samples_ms, bins);
  std::string title = fmt::format("Latency histogram: {} batch {} concurrency {} ({} runs)", r.config.variant.name, r.config.batch,
                                  r.config.concurrency, r.stats.count);
  std::string svg = fmt::format("<svg class='chart' data-chart='histogram' width='{}' height='{}' viewBox='0 0 {} {}'>", kW, kH, kW, kH);
  if (h.counts.empty()) return svg + "<text x='20' y='40'>no samples</text></svg>";
  const int64_t maxc = *std::max_element(h.counts.begin(), h.counts.end());
  svg += Axes(title, "latency (ms)", "runs", static_cast<double>(maxc) * 1.1);
  const double span = kW - kLeft - kRight;
  const double bw = span / static_cast<double>(h.counts.size());
  const double plot_h = kH - kBottom - kTop;
  for (size_t i = 0; i < h.counts.size(); ++i) {
    const double bh = plot_h * static_cast<double>(h.counts[i]) / (static_cast<double>(maxc) * 1.1);
    const double lo = h.lo_ms + (h.hi_ms - h.lo_ms) * static_cast<double>(i) / static_cast<double>(h.counts.size());
    svg += fmt::format("<rect class='bar' x='{:.1f}' y='{:.1f}' width='{:.1f}' height='{:.1f}'><title>{:.4g} ms: {} runs</title></rect>",
                       kLeft + bw * static_cast<double>(i) + 0.5, kH - kBottom - bh, std::max(bw - 1, 1.0), bh, lo, h.counts[i]);
  }
  for (int i = 0; i <= 4; ++i) {
    const double v = h.lo_ms + (h.hi_ms - h.lo_ms) * i / 4;
    svg += fmt::format("<text x='{:.1f}' y='{}' class='tick' text-anchor='middle'>{:.3g}</text>", kLeft + span * i / 4, kH - kBottom + 14, v);
  }
  for (auto [p, v] : {std::pair{"p50", r.stats.p50_ms}, std::pair{"p99", r.stats.p99_ms}}) {
    if (h.hi_ms <= h.lo_ms) break;
    const double x = kLeft + span * (v - h.lo_ms) / (h.hi_ms - h.lo_ms);
    svg += fmt::format("<line x1='{0:.1f}' x2='{0:.1f}' y1='{1}' y2='{2}' class='marker'/><text x='{3:.1f}' y='{1}' class='tick' text-anchor='end'>{4}</text>",
                       x, kTop + 10, kH - kBottom, x - 3, p);
  }
  return svg + "</svg>";
}

// Series of `metric` against batch (per variant at the lowest concurrency)
// or against concurrency (per variant at the smallest batch).
std::vector<Series> SeriesBy(const BenchReport& report, bool by_batch, bool throughput) {
  const std::optional<BatchAndConcurrency> smallest = SmallestBatchAndConcurrency(report, Usable);
  if (!smallest) return {};
  std::map<std::string, size_t> index;
  std::vector<Series> out;
  for (const auto& r : report.results) {
    if (!Usable(r)) continue;
    if (by_batch ? r.config.concurrency != smallest->concurrency : r.config.batch != smallest->batch) continue;
    auto [it, added] = index.try_emplace(r.config.variant.name, out.size());
    if (added) out.push_back({r.config.variant.name, {}});
    const double x = by_batch ? static_cast<double>(r.config.batch) : r.config.concurrency;
    out[it->second].points.emplace_back(x, throughput ? r.stats.items_per_s : r.stats.p50_ms);
  }
  for (auto& s : out) std::sort(s.points.begin(), s.points.end());
  return out;
}

std::string Table(const BenchReport& report) {
  std::string t =
      "<table id='results'><thead><tr><th>variant</th><th>batch</th><th>conc.</th><th>memory</th><th>p50 ms</th><th>p90 ms</th>"
      "<th>p99 ms</th><th>mean ms</th><th>runs/s</th><th>items/s</th><th>max abs err</th><th>GPU MB</th><th>status</th></tr></thead><tbody>";
  std::optional<size_t> best_lat, best_tp;
  if (report.recommendation) {
    if (report.recommendation->latency) best_lat = report.recommendation->latency->index;
    if (report.recommendation->throughput) best_tp = report.recommendation->throughput->index;
  }
  for (size_t i = 0; i < report.results.size(); ++i) {
    const auto& r = report.results[i];
    const auto& c = r.config;
    std::string cls = (best_lat == i || best_tp == i) ? " class='best'" : "";
    if (!r.error.ok()) {
      t += fmt::format("<tr class='error'><td>{}</td><td>{}</td><td>{}</td><td colspan='10'>{}</td></tr>", Escape(c.variant.name),
                       c.batch, c.concurrency, Escape(r.error.message()));
      continue;
    }
    const bool wrong = r.accuracy.checked && !r.accuracy.passed;
    t += fmt::format("<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3f}</td><td>{:.3f}</td><td>{:.3f}</td><td>{:.3f}</td>"
                     "<td>{:.1f}</td><td>{:.1f}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                     cls, Escape(c.variant.name), c.batch, c.concurrency, Escape(r.memory), r.stats.p50_ms, r.stats.p90_ms,
                     r.stats.p99_ms, r.stats.mean_ms, r.stats.runs_per_s, r.stats.items_per_s,
                     r.accuracy.checked ? fmt::format("{:.2g}", r.accuracy.max_abs_error) : "-",
                     r.gpu_memory_mb ? fmt::format("{:.0f}", *r.gpu_memory_mb) : "n/a",
                     wrong ? "WRONG" : r.stats.stable ? "ok" : "unstable");
  }
  return t + "</tbody></table>";
}

}  // namespace

std::string RenderHtml(const BenchReport& report) {
  std::string h = "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>ortgpu bench: " + Escape(report.model) +
                  "</title><style>"
                  "body{font-family:sans-serif;margin:24px;color:#222}h1{font-size:20px}h2{font-size:16px;margin-top:28px}"
                  ".charts{display:flex;flex-wrap:wrap;gap:16px}.chart{border:1px solid #ddd;background:#fff}"
                  ".title{font-size:13px;font-weight:bold}.tick{font-size:10px;fill:#444}.label{font-size:11px;fill:#222}"
                  ".axis{stroke:#888}.bar{fill:#1f77b4}.marker{stroke:#d62728;stroke-dasharray:3 2}"
                  "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}"
                  "td:first-child,th:first-child{text-align:left}tr.best{background:#e6f4e6}tr.error{background:#fbe9e9}"
                  "pre{background:#f6f6f6;padding:8px}</style></head><body>";
  h += fmt::format("<h1>ortgpu bench: {}</h1><p>provider {} · ONNX Runtime {} · {} configurations</p>", Escape(report.model),
                   ProviderName(report.provider), Escape(report.ort_version), report.results.size());
  h += "<h2>Latency distribution</h2><div class='charts'>";
  int shown = 0;
  for (const auto& r : report.results) {
    if (!Usable(r) || shown >= 4) continue;
    h += HistogramChart(r, 40);
    ++shown;
  }
  h += "</div><h2>Against batch size</h2><div class='charts'>";
  h += LineChart("latency-vs-batch", "p50 latency vs batch size", "batch size", "p50 latency (ms)", SeriesBy(report, true, false));
  h += LineChart("throughput-vs-batch", "Throughput vs batch size", "batch size", "items/s", SeriesBy(report, true, true));
  h += "</div><h2>Against concurrency</h2><div class='charts'>";
  h += LineChart("latency-vs-concurrency", "p50 latency vs concurrency", "runs in flight", "p50 latency (ms)", SeriesBy(report, false, false));
  h += LineChart("throughput-vs-concurrency", "Throughput vs concurrency", "runs in flight", "items/s", SeriesBy(report, false, true));
  h += "</div><h2>All configurations</h2>" + Table(report);
  if (report.recommendation && !report.recommendation->config_pbtxt.empty()) {
    h += "<h2>Recommended config.pbtxt fragment</h2><pre id='config-pbtxt'>" + Escape(report.recommendation->config_pbtxt) + "</pre>";
  }
  if (!report.notes.empty()) {
    h += "<h2>Notes</h2><ul>";
    for (const auto& n : report.notes) h += "<li>" + Escape(n) + "</li>";
    h += "</ul>";
  }
  return h + "</body></html>\n";
}

}  // namespace ortgpu::bench
