// The page: blocks rendered in order, Chart.js and the chart configurations
// embedded, and the small script that draws the charts and records success
// or errors on <body> (html_report.h).
#include <charconv>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/chartjs.h"
#include "report/html_report.h"

namespace ortgpu::report {
namespace {

constexpr const char* kStyle =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;margin:24px auto;"
    "max-width:1240px;padding:0 16px;color:#1d1d1f;background:#fafafa}"
    "h1{font-size:22px;margin:0 0 8px}"
    "h2{font-size:17px;margin:28px 0 10px;padding-bottom:4px;border-bottom:1px solid #e3e3e3}"
    ".charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(540px,1fr));gap:16px}"
    ".chart{position:relative;height:340px;background:#fff;border:1px solid #ddd;border-radius:6px;padding:10px}"
    ".note{color:#666;font-style:italic}"
    ".table{overflow-x:auto}"
    "table{border-collapse:collapse;font-size:13px;background:#fff}"
    "th,td{border:1px solid #d8d8d8;padding:4px 8px;text-align:left}th{background:#f0f0f0;white-space:nowrap}"
    "td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}"
    "pre{background:#f3f3f3;border:1px solid #ddd;border-radius:4px;padding:10px;overflow-x:auto}";

// Runs before Chart.js loads, so an error while loading it is recorded too.
constexpr const char* kErrorScript =
    "window.ortgpuFail=function(m){var b=document.body,e=b.getAttribute('data-chart-errors');"
    "b.setAttribute('data-chart-errors',(e?e+'\\n':'')+m);};"
    "window.addEventListener('error',function(e){ortgpuFail(e.message||'script error');});";

// Draws every chart of #ortgpu-charts. Everything that must be a function
// (tooltips, tick formats) lives here, never in the per-chart JSON.
constexpr const char* kDrawScript = R"js((function () {
  var specs = JSON.parse(document.getElementById('ortgpu-charts').textContent);
  // Tooltips: 4 significant digits, thousands grouped ("13,576,000").
  function num(v) {
    if (typeof v !== 'number' || !isFinite(v)) return String(v);
    if (v !== 0 && Math.abs(v) < 1e-4) return v.toPrecision(3);
    return Number(v.toPrecision(4)).toLocaleString('en-US', {maximumFractionDigits: 8});
  }
  // Ticks: short ("13.6M", "800K", "0.0005"), one style per axis.
  function tick(v, index, ticks) {
    if (typeof v !== 'number' || !isFinite(v)) return String(v);
    var top = 0;
    (ticks || []).forEach(function (t) { top = Math.max(top, Math.abs(t.value)); });
    if (Math.max(top, Math.abs(v)) >= 1e4) return v.toLocaleString('en-US', {notation: 'compact', maximumSignificantDigits: 3});
    return num(v);
  }
  function axisTitle(chart, id) {
    var s = chart.options.scales[id];
    return s && s.title && s.title.text ? s.title.text : '';
  }
  function tooltipFor(kind) {
    return {callbacks: {
      title: function (items) {
        if (!items.length) return '';
        var it = items[0];
        if (kind === 'histogram') return it.raw && it.raw.label ? it.raw.label : num(it.parsed.x);
        if (kind === 'bar') return it.label;
        return axisTitle(it.chart, 'x') + ' ' + num(it.parsed.x);
      },
      label: function (it) {
        // The value axis is y, or x for bars lying down (indexAxis 'y').
        var across = it.chart.options.indexAxis === 'y';
        var y = axisTitle(it.chart, across ? 'x' : 'y');
        var v = across ? it.parsed.x : it.parsed.y;
        if (kind === 'histogram') return num(v) + ' ' + y;
        return (it.dataset.label ? it.dataset.label + ': ' : '') + (y ? y + ' ' : '') + num(v);
      },
      afterLabel: function (it) {
        var r = it.raw;
        return kind !== 'histogram' && r && r.label && r.label !== it.label ? r.label : '';
      }
    }};
  }
  // A bar series with one bar highlighted has a colour per bar: its legend
  // swatch takes the series colour (borderColor), not the first bar's.
  function legendLabels(chart) {
    var items = Chart.defaults.plugins.legend.labels.generateLabels(chart);
    items.forEach(function (item) {
      var ds = chart.data.datasets[item.datasetIndex];
      if (ds && Array.isArray(ds.backgroundColor)) item.fillStyle = item.strokeStyle = ds.borderColor;
    });
    return items;
  }
  var drawn = 0;
  specs.forEach(function (s) {
    try {
      var o = s.config.options;
      o.plugins.tooltip = tooltipFor(s.kind);
      o.plugins.legend.labels.generateLabels = legendLabels;
      ['x', 'y'].forEach(function (id) {
        var axis = o.scales[id];
        if (axis.type === 'linear') axis.ticks = Object.assign(axis.ticks || {}, {callback: tick});
      });
      new Chart(document.getElementById(s.canvas), s.config);
      drawn++;
    } catch (e) {
      ortgpuFail(s.canvas + ': ' + (e && e.message ? e.message : e));
    }
  });
  document.body.setAttribute('data-charts-drawn', String(drawn));
})();)js";

// Each character of `text` that `escape` maps to a non-null string is
// replaced by it.
template <typename Escape>
std::string Replaced(std::string_view text, Escape escape) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const char* with = escape(c);
    if (with) {
      out += with;
    } else {
      out += c;
    }
  }
  return out;
}

// JSON inside <script type="application/json">: '<', '>' and '&' only occur
// in strings there, and as \u escapes they cannot end the element ("</script")
// or open a comment ("<!--"); JSON.parse reads them back unchanged.
std::string JsonForScript(const nlohmann::json& j) {
  return Replaced(j.dump(), [](char c) -> const char* {
    switch (c) {
      case '<': return "\\u003c";
      case '>': return "\\u003e";
      case '&': return "\\u0026";
      default: return nullptr;
    }
  });
}

// The licence goes in a /* */ comment: keep it from closing the comment.
std::string LicenseComment() {
  std::string text(ChartJsLicense());
  for (size_t at = 0; (at = text.find("*/", at)) != std::string::npos;) text.replace(at, 2, "* /");
  return "/*! Chart.js " ORTGPU_CHARTJS_VERSION ", inlined by ortgpu so this page opens offline. Its licence:\n\n" + text +
         "\n*/\n";
}

bool IsNumber(const std::string& cell) {
  double v = 0;
  const char* end = cell.data() + cell.size();
  auto [ptr, ec] = std::from_chars(cell.data(), end, v);
  return !cell.empty() && ec == std::errc() && ptr == end;
}

std::string TableHtml(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::string t = "<div class=\"table\"><table><thead><tr>";
  for (const auto& h : header) t += "<th>" + EscapeHtml(h) + "</th>";
  t += "</tr></thead><tbody>";
  for (const auto& row : rows) {
    t += "<tr>";
    for (size_t i = 0; i < std::max(row.size(), header.size()); ++i) {
      const std::string cell = i < row.size() ? row[i] : "";
      t += (IsNumber(cell) ? "<td class=\"num\">" : "<td>") + EscapeHtml(cell) + "</td>";
    }
    t += "</tr>";
  }
  return t + "</tbody></table></div>";
}

}  // namespace

std::string EscapeHtml(std::string_view text) {
  return Replaced(text, [](char c) -> const char* {
    switch (c) {
      case '<': return "&lt;";
      case '>': return "&gt;";
      case '&': return "&amp;";
      case '"': return "&quot;";
      case '\'': return "&#39;";
      default: return nullptr;
    }
  });
}

HtmlPage::HtmlPage(std::string title) : title_(std::move(title)) {}

void HtmlPage::AddHeading(std::string text) { blocks_.push_back({Block::Kind::kHeading, std::move(text), "", {}, {}, {}}); }

void HtmlPage::AddParagraph(std::string text) {
  blocks_.push_back({Block::Kind::kParagraph, std::move(text), "", {}, {}, {}});
}

void HtmlPage::AddTable(std::vector<std::string> header, std::vector<std::vector<std::string>> rows) {
  blocks_.push_back({Block::Kind::kTable, "", "", std::move(header), std::move(rows), {}});
}

void HtmlPage::AddPre(std::string id, std::string text) {
  blocks_.push_back({Block::Kind::kPre, std::move(text), std::move(id), {}, {}, {}});
}

void HtmlPage::AddChart(Chart chart) {
  const size_t points = PointCount(chart);
  const bool trend = chart.kind == ChartKind::kLine || chart.kind == ChartKind::kScatter;
  if (points < (trend ? 2u : 1u)) {
    const std::string name = chart.title.empty() ? chart.id : chart.title;
    blocks_.push_back({Block::Kind::kNote,
                       trend ? fmt::format("Chart \"{}\" is left out: it has {} point{}, too few to draw a trend.", name,
                                           points, points == 1 ? "" : "s")
                             : fmt::format("Chart \"{}\" is left out: it has no data.", name),
                       chart.id, {}, {}, {}});
    return;
  }
  // Ids name the canvas: keep them unique so each chart finds its own.
  std::set<std::string> used;
  for (const auto& b : blocks_) {
    if (b.chart) used.insert(b.chart->id);
  }
  const std::string base = chart.id.empty() ? "chart" : chart.id;
  for (int n = 2; chart.id.empty() || used.count(chart.id); ++n) chart.id = fmt::format("{}-{}", base, n);
  blocks_.push_back({Block::Kind::kChart, "", chart.id, {}, {}, std::move(chart)});
}

void HtmlPage::AddData(std::string id, const nlohmann::json& data) {
  blocks_.push_back({Block::Kind::kData, JsonForScript(data), std::move(id), {}, {}, {}});
}

size_t HtmlPage::ChartCount() const {
  size_t n = 0;
  for (const auto& b : blocks_) n += b.chart ? 1 : 0;
  return n;
}

std::string HtmlPage::Render() const {
  const size_t charts = ChartCount();
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>" +
                  EscapeHtml(title_) + "</title><style>" + kStyle + "</style></head>\n";
  h += fmt::format("<body data-charts-expected=\"{}\"{}>\n", charts, charts == 0 ? " data-charts-drawn=\"0\"" : "");
  if (charts > 0) h += std::string("<script>") + kErrorScript + "</script>\n";
  h += "<h1>" + EscapeHtml(title_) + "</h1>\n";
  nlohmann::json specs = nlohmann::json::array();
  bool in_grid = false;
  for (const auto& b : blocks_) {
    const bool is_chart = b.kind == Block::Kind::kChart;
    if (in_grid && !is_chart) h += "</div>\n";
    if (!in_grid && is_chart) h += "<div class=\"charts\">\n";
    in_grid = is_chart;
    switch (b.kind) {
      case Block::Kind::kHeading: h += "<h2>" + EscapeHtml(b.text) + "</h2>\n"; break;
      case Block::Kind::kParagraph: h += "<p>" + EscapeHtml(b.text) + "</p>\n"; break;
      case Block::Kind::kNote:
        h += "<p class=\"note\" data-chart-left-out=\"" + EscapeHtml(b.id) + "\">" + EscapeHtml(b.text) + "</p>\n";
        break;
      case Block::Kind::kTable: h += TableHtml(b.header, b.rows) + "\n"; break;
      case Block::Kind::kPre: h += "<pre id=\"" + EscapeHtml(b.id) + "\">" + EscapeHtml(b.text) + "</pre>\n"; break;
      case Block::Kind::kData:
        h += "<script type=\"application/json\" id=\"" + EscapeHtml(b.id) + "\">" + b.text + "</script>\n";
        break;
      case Block::Kind::kChart: {
        const Chart& c = *b.chart;
        const std::string canvas = "chart-" + c.id;
        nlohmann::json config = ChartConfig(c);
        // Bars lying down need a row each: the box grows with them.
        std::string style;
        if (config["options"].contains("indexAxis")) {
          style = fmt::format(" style=\"height:{}px\"", 110 + 22 * config["data"]["labels"].size());
        }
        h += fmt::format("<div class=\"chart\" data-chart=\"{}\" data-kind=\"{}\"{}><canvas id=\"{}\" role=\"img\" aria-label=\"{}\"></canvas></div>\n",
                         EscapeHtml(c.id), ChartKindName(c.kind), style, EscapeHtml(canvas), EscapeHtml(c.title));
        specs.push_back({{"canvas", canvas}, {"kind", ChartKindName(c.kind)}, {"config", std::move(config)}});
        break;
      }
    }
  }
  if (in_grid) h += "</div>\n";
  if (charts > 0) {
    h += "<script>" + LicenseComment();
    h += ChartJsScript();
    h += "</script>\n<script type=\"application/json\" id=\"ortgpu-charts\">" + JsonForScript(specs) + "</script>\n";
    h += std::string("<script>") + kDrawScript + "</script>\n";
  }
  return h + "</body></html>\n";
}

}  // namespace ortgpu::report
