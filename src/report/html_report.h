// One self-contained HTML page with charts, shared by `ortgpu bench --html`
// and `ortgpu perf`: headings, paragraphs, tables, preformatted blocks and
// charts drawn in the browser by Chart.js (4.5.1, inlined into the page with
// its MIT licence, so the page opens offline from a file: no external
// script, style or font is loaded).
//
// A caller describes each chart as data (Chart: series of points, axis
// labels, log scales, a highlighted point); ChartConfig turns it into the
// Chart.js configuration, built as JSON (never JavaScript concatenated from
// user text) and embedded in a <script type="application/json"> element with
// '<', '>' and '&' escaped, so no text can end that element early.
//
// The page's own script creates every chart, then sets on <body>
//   data-charts-drawn="N"   the number of charts created
//   data-chart-errors="..." only when something failed (an exception while
//                           creating a chart, or any window error)
// which is what the headless-Chromium tests check.
//
// Value types, no shared state: an HtmlPage is owned by its builder and is
// thread-compatible; the free functions are pure and thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ortgpu::report {

// One point of a series. `label` is extra text its tooltip shows (e.g. the
// configuration it was measured at; a histogram bin's range); for bar charts
// it also names the point's category on the x axis (the x value when empty).
struct Point {
  double x = 0, y = 0;
  std::string label;
};

struct Series {
  std::string name;  // the legend entry
  std::vector<Point> points;
};

enum class ChartKind {
  kLine,       // points joined in x order; x on a linear (or log) axis
  kScatter,    // points only
  kBar,        // one bar per point on a category axis, series side by side;
               // past 8 categories the bars lie down (names in a column)
  kHistogram,  // one bar per bin centred at x, bars touching (bins equally
               // wide on the x axis; series overlaid, see LatencyHistogram)
};
std::string_view ChartKindName(ChartKind kind);  // "line", "scatter", "bar", "histogram"

struct Chart {
  // Names the chart in its page: the canvas is id="chart-<id>", its box
  // data-chart="<id>". AddChart makes an empty or repeated id unique ("<id>-2").
  std::string id;
  ChartKind kind = ChartKind::kLine;
  std::string title, x_label, y_label;
  std::vector<Series> series;
  // Logarithmic axes, set by hand or by AutoLogAxes. x_log is ignored for
  // bar charts (a category axis); a histogram's needs bins equal on a log
  // scale (LatencyHistogram sets it so).
  bool x_log = false, y_log = false;
  // A point drawn with a distinct marker (a large red diamond; in a bar
  // chart, the bars with its x and y coloured red) and its own legend
  // entry `highlight_label` (e.g. bench's recommendation). Not for histograms.
  std::optional<Point> highlight;
  std::string highlight_label;
};

// Puts an axis on a log scale when its values are all positive and span at
// least two decades (max / min >= 100), where a linear axis would crush the
// small values into the bottom pixel. Leaves an axis already set to log as it
// is, and never touches the x axis of bar and histogram charts.
void AutoLogAxes(Chart& c);

// Points of all series (the highlight not counted).
size_t PointCount(const Chart& c);

// The Chart.js configuration of `c`:
//   {"type": "line" | "scatter" | "bar",
//    "data": {"labels": [category...] (bar charts),
//             "datasets": [{"label": series name, "data": [{"x", "y", "label"?}],
//                           colours, bar or point style}, ..., the highlight's]},
//    "options": {"animation": false, "plugins": {"title", "legend"},
//                "scales": {"x", "y"} (type linear / logarithmic / category,
//                title), "indexAxis": "y" (bars lying down)}}
// Tooltips and number formats are added by the page's script, which owns
// everything that must be a function. The page embeds one array of
// {"canvas": "chart-<id>", "kind": ChartKindName, "config": ...} in
// <script type="application/json" id="ortgpu-charts">.
nlohmann::json ChartConfig(const Chart& c);

// Samples of latency in milliseconds as a histogram chart that one outlier
// cannot flatten. Bins over [min, max], at most options.bins of them (fewer
// for few samples: at most sqrt(count) and the number of distinct values),
// except:
//  - outliers: runs "far out" (above Q3 + 3 IQR, Tukey's outer fence; above
//    p99.5 when the quartiles coincide) that would stretch the range by more
//    than `tail_stretch` of it form one overflow bar right of the last bin,
//    the bins spanning [min, fence]; the bar is a second series whose name
//    (the legend) gives their count, share and maximum. One 40 ms stall or a
//    2% cluster of slow runs then leaves the bulk's shape visible;
//  - a heavy tail: when the binned range still spans `log_ratio` (10x) or
//    more and one bin would hold over half the runs, bins are equal on a log
//    scale and the chart's x_log is set, so the bulk keeps its shape and the
//    tail its place.
// Series 0 ("runs") holds the bins; each point's x is its bin's centre, y its
// count, label its range ("1.20-1.25 ms"). No points when `samples_ms` is
// empty.
struct HistogramOptions {
  int bins = 30;  // the most bins; fewer than 1 counts as 1
  double far_out_iqr = 3.0;       // the overflow bar starts at Q3 + this * IQR
  double tail_percentile = 99.5;  // ... or at this percentile when IQR is 0
  double tail_stretch = 0.25;     // overflow bar only when (max - fence) > this * (fence - min)
  double log_ratio = 10;          // log-scale bins only when the binned max / min >= this
};
Chart LatencyHistogram(std::string id, std::string title, const std::vector<double>& samples_ms,
                       const HistogramOptions& options = {});

// The page. Blocks are rendered in the order they were added; consecutive
// charts share one grid. All text is HTML-escaped.
class HtmlPage {
 public:
  explicit HtmlPage(std::string title);  // <title> and the first <h1>

  void AddHeading(std::string text);  // <h2>
  void AddParagraph(std::string text);
  // A table of text cells; a row shorter than the header is padded.
  void AddTable(std::vector<std::string> header, std::vector<std::vector<std::string>> rows);
  // <pre id="<id>">, e.g. a config fragment to copy.
  void AddPre(std::string id, std::string text);
  // <script type="application/json" id="<id>">: the data the page shows, for
  // a reader's tools (the same document as the command's --json), escaped
  // as the chart configurations are. Not drawn.
  void AddData(std::string id, const nlohmann::json& data);
  // A line or scatter chart with fewer than 2 points in all shows no trend,
  // and a bar chart or histogram without a point shows nothing: such a chart
  // is left out, and a note saying so takes its place. One bar is drawn (a
  // model whose every node runs on one execution provider).
  void AddChart(Chart chart);

  size_t ChartCount() const;  // charts that will be drawn (those left out not counted)

  // One self-contained page. Chart.js is included only when there is a chart.
  std::string Render() const;

 private:
  struct Block {
    enum class Kind { kHeading, kParagraph, kNote, kTable, kPre, kChart, kData } kind;
    std::string text;  // heading, paragraph, note or pre text, data as escaped JSON; pre and data: id in `id`
    std::string id;
    std::vector<std::string> header;
    std::vector<std::vector<std::string>> rows;
    std::optional<Chart> chart;
  };
  std::string title_;
  std::vector<Block> blocks_;
};

// HTML-escapes `text` for element content and quoted attribute values.
std::string EscapeHtml(std::string_view text);

}  // namespace ortgpu::report
