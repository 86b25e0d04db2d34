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
  kHistogram,  // one bar per bin centred at x on a linear axis, bars touching
               // (bins equally wide; series overlaid, see LatencyHistogram)
};
std::string_view ChartKindName(ChartKind kind);  // "line", "scatter", "bar", "histogram"

struct Chart {
  std::string id;  // unique in its page; the canvas is id="chart-<id>", its box data-chart="<id>"
  ChartKind kind = ChartKind::kLine;
  std::string title, x_label, y_label;
  std::vector<Series> series;
  // Logarithmic axes; x_log is ignored for bar and histogram charts (a
  // category axis; equal-width bins). Set by hand or by AutoLogAxes.
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

// The Chart.js configuration of `c` ({"type", "data", "options"}). Points
// are {"x", "y", "label"} objects; tooltips and number formats are added by
// the page's script, which owns everything that must be a function.
nlohmann::json ChartConfig(const Chart& c);

// Samples of latency in milliseconds as a histogram chart that one outlier
// cannot flatten. Equal bins over [min, max] (options.bins of them, fewer
// for few samples: at most sqrt(count) and the number of distinct values),
// unless the samples above the tail percentile (p99.5, a sample) would
// stretch that range by more than `tail_stretch` of it: then the bins span
// [min, p99.5] and the samples above it are gathered into one overflow bar
// right of the last bin, in a second series whose name (the legend) gives
// their count and maximum. Series 0 ("runs") holds the bins; each point's x
// is its bin's centre, y its count, label its range ("1.20-1.25 ms").
// A log x axis was the alternative: it keeps every sample in place but
// makes equal latency steps unequal bars, which reads worse for the narrow
// spreads GPU runs have. No points when `samples_ms` is empty.
struct HistogramOptions {
  int bins = 30;  // the most bins; fewer than 1 counts as 1
  double tail_percentile = 99.5;  // where the overflow bin starts, when there is one
  double tail_stretch = 0.25;     // overflow bin only when (max - tail) > this * (tail - min)
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
  // A chart with fewer than 2 points in all says nothing a table does not:
  // it is left out, and a note saying so takes its place.
  void AddChart(Chart chart);

  size_t ChartCount() const;  // charts that will be drawn (those left out not counted)

  // One self-contained page. Chart.js is included only when there is a chart.
  std::string Render() const;

 private:
  struct Block {
    enum class Kind { kHeading, kParagraph, kNote, kTable, kPre, kChart } kind;
    std::string text;  // heading, paragraph, note or pre text; pre: id in `id`
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
