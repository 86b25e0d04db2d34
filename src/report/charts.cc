// Charts as data: the Chart.js configuration of a Chart, the automatic log
// axes, and the latency histogram. No HTML here (html_page.cc).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/html_report.h"

namespace ortgpu::report {
namespace {

using nlohmann::json;

// Tableau 10 without its red, which is kept for the highlighted point.
constexpr const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b",
                                   "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr const char* kHighlightColor = "#d62728";
constexpr size_t kMaxUprightBars = 8;

bool IsCategorical(ChartKind kind) { return kind == ChartKind::kBar; }

// What a category axis shows under a bar: the point's label, else its x.
std::string CategoryOf(const Point& p) { return p.label.empty() ? fmt::format("{:g}", p.x) : p.label; }

// True when every value is positive and max / min >= 100.
bool SpansTwoDecades(const std::vector<double>& values) {
  if (values.empty()) return false;
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  return *lo > 0 && *hi / *lo >= 100;
}

// A linear value (y) axis starts at zero, so bar heights and gaps between
// lines read true; a linear x axis spans the data.
json Axis(const std::string& title, bool log, bool categorical, bool value_axis) {
  json a = {{"type", categorical ? "category" : log ? "logarithmic" : "linear"},
            {"title", {{"display", !title.empty()}, {"text", title}}}};
  if (!categorical && !log) a["beginAtZero"] = value_axis;
  return a;
}

json PointJson(const Point& p, bool categorical) {
  json j = {{"x", categorical ? json(CategoryOf(p)) : json(p.x)}, {"y", p.y}};
  if (!p.label.empty()) j["label"] = p.label;
  return j;
}

}  // namespace

std::string_view ChartKindName(ChartKind kind) {
  switch (kind) {
    case ChartKind::kLine: return "line";
    case ChartKind::kScatter: return "scatter";
    case ChartKind::kBar: return "bar";
    case ChartKind::kHistogram: return "histogram";
  }
  return "line";
}

size_t PointCount(const Chart& c) {
  size_t n = 0;
  for (const auto& s : c.series) n += s.points.size();
  return n;
}

void AutoLogAxes(Chart& c) {
  std::vector<double> xs, ys;
  for (const auto& s : c.series) {
    for (const auto& p : s.points) {
      xs.push_back(p.x);
      ys.push_back(p.y);
    }
  }
  const bool x_can_be_log = c.kind == ChartKind::kLine || c.kind == ChartKind::kScatter;
  if (x_can_be_log && SpansTwoDecades(xs)) c.x_log = true;
  if (SpansTwoDecades(ys)) c.y_log = true;
}

json ChartConfig(const Chart& c) {
  const bool categorical = IsCategorical(c.kind);
  const bool highlightable = c.kind != ChartKind::kHistogram;
  std::vector<std::string> categories;  // bar charts: each once, in order of appearance
  for (const auto& s : c.series) {
    for (const auto& p : s.points) {
      std::string cat = CategoryOf(p);
      if (categorical && std::find(categories.begin(), categories.end(), cat) == categories.end()) {
        categories.push_back(std::move(cat));
      }
    }
  }
  // Many bars read best lying down, their names in a column (tall charts:
  // html_page.cc sizes the box by the category count).
  const bool horizontal = categorical && categories.size() > kMaxUprightBars;

  json datasets = json::array();
  for (size_t i = 0; i < c.series.size(); ++i) {
    const Series& s = c.series[i];
    const char* color = kColors[i % std::size(kColors)];
    std::vector<Point> points = s.points;
    if (c.kind == ChartKind::kLine) {
      std::stable_sort(points.begin(), points.end(), [](const Point& a, const Point& b) { return a.x < b.x; });
    }
    json data = json::array();
    json bar_colors = json::array();  // a bar chart marks its highlighted bar by colour
    bool marked = false;
    for (const auto& p : points) {
      json point = PointJson(p, categorical);
      if (horizontal) std::swap(point["x"], point["y"]);
      data.push_back(std::move(point));
      const bool is_highlight = c.highlight && p.x == c.highlight->x && p.y == c.highlight->y;
      bar_colors.push_back(is_highlight ? kHighlightColor : color);
      marked = marked || is_highlight;
    }
    json d = {{"label", s.name}, {"data", std::move(data)}, {"borderColor", color}, {"backgroundColor", color}};
    if (c.kind == ChartKind::kHistogram) {
      // Bins touch, as a histogram's do (a hairline keeps them apart), and
      // series share the x axis rather than splitting each slot.
      d["barPercentage"] = 1.0;
      d["categoryPercentage"] = 1.0;
      d["grouped"] = false;
      d["borderWidth"] = 1;
      d["borderColor"] = "#ffffff";
    } else if (categorical) {
      d["borderWidth"] = 0;
      d["skipNull"] = true;  // a series without a category takes no room in it
      if (marked) d["backgroundColor"] = std::move(bar_colors);
    } else {
      d["pointRadius"] = 4;
      d["pointHoverRadius"] = 7;
      d["borderWidth"] = 2;
      d["showLine"] = c.kind == ChartKind::kLine;
      d["order"] = 1;
    }
    datasets.push_back(std::move(d));
  }
  const bool legend_for_highlight = c.highlight && highlightable;
  if (legend_for_highlight) {
    const std::string label = c.highlight_label.empty() ? "highlighted" : c.highlight_label;
    if (categorical) {
      // No points: only the legend entry for the bar coloured above.
      datasets.push_back({{"label", label}, {"data", json::array()}, {"backgroundColor", kHighlightColor},
                          {"borderColor", kHighlightColor}, {"skipNull", true}});
    } else {
      datasets.push_back({{"label", label},
                          {"data", json::array({PointJson(*c.highlight, false)})},
                          {"pointStyle", "rectRot"},
                          {"pointRadius", 9},
                          {"pointHoverRadius", 11},
                          {"borderWidth", 2},
                          {"borderColor", "#7a1010"},
                          {"backgroundColor", kHighlightColor},
                          {"showLine", false},
                          {"order", 0}});  // lower order: drawn over the series
    }
  }
  json data = {{"datasets", std::move(datasets)}};
  if (categorical) data["labels"] = categories;

  json category_axis = Axis(c.x_label, false, categorical, false);
  json value_axis = Axis(c.y_label, c.y_log, false, true);
  if (!categorical) {
    // A histogram's x is log only when its bins were made so (LatencyHistogram).
    category_axis = Axis(c.x_label, c.x_log, false, false);
    // Whole-number x values (batch sizes, concurrency) get whole-number ticks.
    bool whole_x = c.kind != ChartKind::kHistogram;
    for (const auto& s : c.series) {
      for (const auto& p : s.points) whole_x = whole_x && p.x == std::floor(p.x);
    }
    if (whole_x) category_axis["ticks"] = {{"precision", 0}};
  }
  json options = {
      {"animation", false},
      {"responsive", true},
      {"maintainAspectRatio", false},
      {"interaction", {{"mode", categorical ? "index" : "nearest"}, {"intersect", false}}},
      {"plugins",
       {{"title", {{"display", !c.title.empty()}, {"text", c.title}, {"font", {{"size", 14}}}}},
        {"legend", {{"display", c.series.size() > 1 || legend_for_highlight}, {"position", "bottom"},
                    {"labels", {{"usePointStyle", true}, {"boxWidth", 8}}}}}}},
      {"scales", horizontal ? json{{"x", value_axis}, {"y", category_axis}} : json{{"x", category_axis}, {"y", value_axis}}}};
  if (horizontal) options["indexAxis"] = "y";
  const char* type = categorical || c.kind == ChartKind::kHistogram ? "bar" : c.kind == ChartKind::kScatter ? "scatter" : "line";
  return {{"type", type}, {"data", std::move(data)}, {"options", std::move(options)}};
}

Chart LatencyHistogram(std::string id, std::string title, const std::vector<double>& samples_ms,
                       const HistogramOptions& options) {
  Chart c;
  c.id = std::move(id);
  c.kind = ChartKind::kHistogram;
  c.title = std::move(title);
  c.x_label = "latency (ms)";
  c.y_label = "runs";
  c.series.push_back({"runs", {}});
  if (samples_ms.empty()) return c;
  std::vector<double> sorted = samples_ms;
  std::sort(sorted.begin(), sorted.end());
  const double lo = sorted.front(), max = sorted.back();
  // Where the far-out runs start (Tukey's outer fence, Q3 + 3 IQR); when
  // the quartiles coincide (a coarse timer), the tail percentile instead.
  auto at = [&](double q) { return sorted[static_cast<size_t>(std::floor(q * static_cast<double>(sorted.size() - 1)))]; };
  const double iqr = at(0.75) - at(0.25);
  const double cut = iqr > 0 ? at(0.75) + options.far_out_iqr * iqr : at(options.tail_percentile / 100.0);
  // Only worth a bar of its own when the tail would stretch the x range.
  const bool overflow = cut > lo && max > cut && max - cut > options.tail_stretch * (cut - lo);
  const double hi = overflow ? cut : max;
  // At most options.bins, fewer for few samples (the square-root rule) or
  // few distinct values: 90 samples in 30 bins would draw a comb of gaps.
  int distinct = 1;
  for (size_t i = 1; i < sorted.size(); ++i) distinct += sorted[i] != sorted[i - 1] ? 1 : 0;
  const int bins = std::max(1, std::min({options.bins, static_cast<int>(std::ceil(std::sqrt(static_cast<double>(sorted.size())))), distinct}));
  // Bins are equal steps of u(v): v itself, or log(v) for a heavy tail.
  bool log_bins = false;
  auto u = [&](double v) { return log_bins ? std::log(v) : v; };
  auto from_u = [&](double x) { return log_bins ? std::exp(x) : x; };
  double step = 0;
  auto edge = [&](double i) { return from_u(u(lo) + step * i); };
  std::vector<int64_t> counts;
  int64_t above = 0;
  auto count = [&] {
    // All samples equal: one bin of an arbitrary small width around them.
    step = hi > lo ? (u(hi) - u(lo)) / bins : std::max(std::abs(lo) * 0.01, 1e-6);
    counts.assign(static_cast<size_t>(bins), 0);
    above = 0;
    for (double v : sorted) {
      if (overflow && v > hi) {
        ++above;
        continue;
      }
      const auto bin = static_cast<size_t>(hi > lo ? (u(v) - u(lo)) / step : 0);
      ++counts[std::min(bin, counts.size() - 1)];
    }
  };
  count();
  // A heavy tail (not one outlier: those went to the overflow bar) still
  // spanning a decade puts most runs into one equal-ms bin; equal steps of
  // log(ms) give the bulk its shape back and keep the tail in place.
  const int64_t fullest = *std::max_element(counts.begin(), counts.end());
  if (lo > 0 && hi / lo >= options.log_ratio && fullest * 2 > static_cast<int64_t>(sorted.size())) {
    log_bins = true;
    count();
  }
  // Digits enough to tell the closest bin edges apart.
  const double narrowest = hi > lo ? edge(1) - lo : step;
  const int decimals = std::clamp(static_cast<int>(std::ceil(-std::log10(narrowest))) + 1, 0, 6);
  auto& points = c.series.front().points;
  const int shown = hi > lo ? bins : 1;
  for (int i = 0; i < shown; ++i) {
    const double a = i == 0 ? lo : edge(i), b = hi > lo && i + 1 == bins ? hi : edge(i + 1);
    points.push_back({edge(i + 0.5), static_cast<double>(counts[static_cast<size_t>(i)]),
                      fmt::format("{:.{}f}-{:.{}f} ms", a, decimals, b, decimals)});
  }
  if (overflow) {
    // One bar right of the last bin, a bin's gap between, in its own series
    // (colour, legend).
    c.series.push_back({fmt::format("{} run{} ({:.2g}%) above {:.4g} ms, up to {:.4g} ms", above, above == 1 ? "" : "s",
                                    100.0 * static_cast<double>(above) / static_cast<double>(sorted.size()), hi, max),
                        {{edge(shown + 1.5), static_cast<double>(above),
                          fmt::format("> {:.{}f} ms (max {:.4g} ms)", hi, decimals, max)}}});
  }
  c.x_log = log_bins;
  return c;
}

}  // namespace ortgpu::report
