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
    category_axis = Axis(c.x_label, c.x_log && c.kind != ChartKind::kHistogram, false, false);
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
  // The tail edge is a sample (rank rounded down), so with an outlier above
  // it the overflow bin holds at least that outlier.
  const size_t rank = static_cast<size_t>(std::floor(options.tail_percentile / 100.0 * static_cast<double>(sorted.size() - 1)));
  const double tail = sorted[std::min(rank, sorted.size() - 1)];
  const bool overflow = tail > lo && max - tail > options.tail_stretch * (tail - lo);
  const double hi = overflow ? tail : max;
  // At most options.bins, fewer for few samples (the square-root rule) or
  // few distinct values: 90 samples in 30 bins would draw a comb of gaps.
  int distinct = 1;
  for (size_t i = 1; i < sorted.size(); ++i) distinct += sorted[i] != sorted[i - 1] ? 1 : 0;
  const int bins = std::max(1, std::min({options.bins, static_cast<int>(std::ceil(std::sqrt(static_cast<double>(sorted.size())))), distinct}));
  // All samples equal: one bin of an arbitrary small width around them.
  const double width = hi > lo ? (hi - lo) / bins : std::max(std::abs(lo) * 0.01, 1e-6);
  std::vector<int64_t> counts(static_cast<size_t>(bins), 0);
  int64_t above = 0;
  for (double v : sorted) {
    if (overflow && v > hi) {
      ++above;
      continue;
    }
    const auto bin = static_cast<size_t>(hi > lo ? (v - lo) / width : 0);
    ++counts[std::min(bin, counts.size() - 1)];
  }
  // Digits enough to tell neighbouring bin edges apart.
  const int decimals = std::clamp(static_cast<int>(std::ceil(-std::log10(width))) + 1, 0, 6);
  auto& points = c.series.front().points;
  const int shown = hi > lo ? bins : 1;
  for (int i = 0; i < shown; ++i) {
    const double a = lo + width * i, b = i + 1 == bins ? hi : lo + width * (i + 1);
    points.push_back({a + width / 2, static_cast<double>(counts[static_cast<size_t>(i)]),
                      fmt::format("{:.{}f}-{:.{}f} ms", a, decimals, b, decimals)});
  }
  if (overflow) {
    // One bar right of the last bin, in its own series (colour, legend).
    c.series.push_back({fmt::format("slowest {:g}%: {} run{} up to {:.4g} ms", 100 - options.tail_percentile, above,
                                    above == 1 ? "" : "s", max),
                        {{hi + width / 2 + width, static_cast<double>(above),
                          fmt::format("> {:.{}f} ms (max {:.4g} ms)", hi, decimals, max)}}});
  }
  return c;
}

}  // namespace ortgpu::report
