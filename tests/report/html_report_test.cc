#include "report/html_report.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <string>

#include "support/headless_chromium.h"

namespace ortgpu::report {
namespace {

using testing::CountOf;

Chart TwoPointLine(std::string id) {
  Chart c;
  c.id = std::move(id);
  c.title = "p50 latency vs batch size";
  c.x_label = "batch size";
  c.y_label = "p50 latency (ms)";
  c.series.push_back({"default", {{1, 1.5, "p99 1.9 ms"}, {8, 4.0, ""}}});
  return c;
}

// 1000 runs in two modes a decade apart: 60% in 1.0-1.5 ms, 40% in 20-30 ms.
std::vector<double> TwoModes() {
  std::vector<double> samples;
  for (int i = 0; i < 600; ++i) samples.push_back(1.0 + 0.01 * (i % 50));
  for (int i = 0; i < 400; ++i) samples.push_back(20.0 + 0.2 * (i % 50));
  return samples;
}

// The page the Chromium tests draw: every kind of chart, a log axis, a
// highlighted point and hostile text.
HtmlPage SamplePage() {
  HtmlPage page("report <demo>");
  page.AddHeading("Charts");
  Chart line = TwoPointLine("line");
  line.series.push_back({"io=bound </script><script>alert(1)</script>", {{1, 1.2, ""}, {8, 3.1, ""}, {64, 30, ""}}});
  line.x_log = true;
  line.highlight = Point{8, 3.1, "best throughput"};
  line.highlight_label = "recommended";
  page.AddChart(line);
  Chart scatter = TwoPointLine("scatter");
  scatter.kind = ChartKind::kScatter;
  page.AddChart(scatter);
  Chart bar = TwoPointLine("bar");
  bar.kind = ChartKind::kBar;
  page.AddChart(bar);
  Chart variants;  // enough bars to lie down, one highlighted
  variants.id = "variants";
  variants.kind = ChartKind::kBar;
  variants.title = "Throughput by variant";
  variants.y_label = "items/s";
  variants.series.push_back({"items/s", {}});
  for (int i = 0; i < 12; ++i) variants.series[0].points.push_back({0, 1000.0 + 300 * i, "variant " + std::to_string(i)});
  variants.highlight = variants.series[0].points.back();
  variants.highlight_label = "recommended";
  page.AddChart(variants);
  std::vector<double> samples(500, 2.0);
  for (size_t i = 0; i < samples.size(); ++i) samples[i] += 0.001 * static_cast<double>(i % 97);
  samples.push_back(250);  // one outlier
  page.AddChart(LatencyHistogram("histogram", "Latency", samples));
  page.AddChart(LatencyHistogram("two-modes", "Latency in two modes", TwoModes()));
  page.AddTable({"variant", "p50 ms"}, {{"default", "1.500"}, {"a&b"}});
  page.AddPre("config-pbtxt", "instance_group [ { count: 2 } ]");
  return page;
}

TEST(HtmlReportTest, TextIsEscapedAndAScriptInASeriesNameStaysInert) {
  const std::string html = SamplePage().Render();
  // Our four script elements close; the series name's "</script>" does not.
  EXPECT_EQ(CountOf(html, "</script"), 4u);
  EXPECT_EQ(html.find("alert(1)</script>"), std::string::npos);
  EXPECT_NE(html.find("\\u003c/script\\u003e\\u003cscript\\u003ealert(1)"), std::string::npos);
  EXPECT_NE(html.find("<title>report &lt;demo&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find("<td>a&amp;b</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\">1.500</td>"), std::string::npos);
  EXPECT_NE(html.find("<pre id=\"config-pbtxt\">instance_group [ { count: 2 } ]</pre>"), std::string::npos);
}

TEST(HtmlReportTest, PageLoadsNothingFromOutsideAndCarriesTheLicence) {
  const std::string html = SamplePage().Render();
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);
  EXPECT_EQ(html.find("href=\"http"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_NE(html.find("Chart.js 4.5.1, inlined by ortgpu"), std::string::npos);
  EXPECT_NE(html.find("Permission is hereby granted, free of charge"), std::string::npos);
  EXPECT_NE(html.find("data-charts-expected=\"6\""), std::string::npos);
}

TEST(HtmlReportTest, AutoLogAxesOnlyWhereValuesSpanTwoDecades) {
  Chart c = TwoPointLine("c");
  AutoLogAxes(c);
  EXPECT_FALSE(c.x_log);  // 1..8
  EXPECT_FALSE(c.y_log);
  c.series[0].points.push_back({100, 400, ""});
  AutoLogAxes(c);
  EXPECT_TRUE(c.x_log);  // 1..100
  EXPECT_TRUE(c.y_log);  // 1.5..400

  Chart with_zero = TwoPointLine("z");
  with_zero.series[0].points.push_back({1000, 0, ""});  // a zero would vanish on a log axis
  AutoLogAxes(with_zero);
  EXPECT_TRUE(with_zero.x_log);
  EXPECT_FALSE(with_zero.y_log);

  Chart bar = TwoPointLine("b");
  bar.kind = ChartKind::kBar;
  bar.series[0].points.push_back({1000, 2, ""});
  AutoLogAxes(bar);
  EXPECT_FALSE(bar.x_log);  // a category axis
}

TEST(HtmlReportTest, AChartWithFewerThanTwoPointsIsLeftOutWithANote) {
  HtmlPage page("one point");
  Chart c = TwoPointLine("lonely");
  c.series[0].points.resize(1);
  page.AddChart(c);
  EXPECT_EQ(page.ChartCount(), 0u);
  const std::string html = page.Render();
  EXPECT_NE(html.find("data-chart-left-out=\"lonely\""), std::string::npos);
  EXPECT_NE(html.find("Chart &quot;p50 latency vs batch size&quot; is left out: it has 1 point"), std::string::npos);
  EXPECT_EQ(html.find("<canvas"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);  // no chart, no Chart.js
  EXPECT_NE(html.find("data-charts-drawn=\"0\""), std::string::npos);
}

// One bar is a picture (doctor's placement of a model whose every node runs
// on CUDA); a bar chart with none is left out.
TEST(HtmlReportTest, ABarChartWithOneBarIsDrawnAndOneWithNoneIsLeftOut) {
  HtmlPage page("bars");
  Chart one = TwoPointLine("one");
  one.kind = ChartKind::kBar;
  one.series[0].points.resize(1);
  page.AddChart(one);
  Chart none = one;
  none.id = "none";
  none.title = "empty";
  none.series[0].points.clear();
  page.AddChart(none);
  EXPECT_EQ(page.ChartCount(), 1u);
  const std::string html = page.Render();
  EXPECT_NE(html.find("Chart &quot;empty&quot; is left out: it has no data."), std::string::npos);
}

TEST(HtmlReportTest, OneOutlierGoesToALabelledOverflowBin) {
  std::vector<double> samples;
  for (int i = 0; i < 999; ++i) samples.push_back(1.0 + 0.001 * (i % 100));
  samples.push_back(500);
  const Chart c = LatencyHistogram("h", "latency", samples);
  EXPECT_EQ(c.kind, ChartKind::kHistogram);
  ASSERT_EQ(c.series.size(), 2u);
  const auto& bins = c.series[0].points;
  ASSERT_EQ(bins.size(), 30u);  // over [min, Q3 + 3 IQR] = [1.0, 1.224]
  double total = 0;
  for (const auto& b : bins) total += b.y;
  EXPECT_EQ(total, 999);
  EXPECT_LT(bins.back().x, 1.25);  // the bins span the bulk, not the outlier
  EXPECT_EQ(bins.front().label, "1.0000-1.0075 ms");
  const Series& tail = c.series[1];
  EXPECT_EQ(tail.name, "1 run (0.1%) above 1.224 ms, up to 500 ms");
  ASSERT_EQ(tail.points.size(), 1u);
  EXPECT_EQ(tail.points[0].y, 1);
  EXPECT_EQ(tail.points[0].label, "> 1.2240 ms (max 500 ms)");
  EXPECT_GT(tail.points[0].x, bins.back().x);  // right of the last bin, not at 500
  EXPECT_FALSE(c.x_log);

  // A cluster of slow runs, more than p99.5 holds, goes to the bar as well.
  samples.resize(980);
  samples.insert(samples.end(), 20, 2.5);
  const Chart cluster = LatencyHistogram("c", "latency", samples);
  ASSERT_EQ(cluster.series.size(), 2u);
  EXPECT_EQ(cluster.series[1].points.at(0).y, 20);
}

TEST(HtmlReportTest, ModesADecadeApartGetLogScaleBins) {
  const Chart c = LatencyHistogram("h", "latency", TwoModes());
  EXPECT_TRUE(c.x_log);
  ASSERT_EQ(c.series.size(), 1u);  // no outliers: the quartiles span both modes
  const auto& bins = c.series[0].points;
  ASSERT_EQ(bins.size(), 30u);
  EXPECT_NEAR(bins[1].x / bins[0].x, bins[20].x / bins[19].x, 1e-9);  // equal steps of log(ms)
  double total = 0;
  for (const auto& b : bins) total += b.y;
  EXPECT_EQ(total, 1000);
  // In equal-ms bins (0.96 ms wide) the first mode would be one bar; here it spans 4.
  for (int i = 0; i < 4; ++i) EXPECT_GT(bins[i].y, 50) << i;
  EXPECT_EQ(ChartConfig(c)["options"]["scales"]["x"]["type"], "logarithmic");
}

TEST(HtmlReportTest, ASpreadWithoutOutliersHasNoOverflowBin) {
  std::vector<double> samples;
  for (int i = 0; i <= 100; ++i) samples.push_back(10.0 + i);
  const Chart c = LatencyHistogram("h", "latency", samples, {.bins = 10});
  const auto& bins = c.series.at(0).points;
  ASSERT_EQ(c.series.size(), 1u);
  ASSERT_EQ(bins.size(), 10u);
  EXPECT_EQ(bins.back().label, "100-110 ms");
  EXPECT_EQ(bins.back().x, 105);
  EXPECT_FALSE(c.x_log);
  EXPECT_EQ(bins.back().y, 11);  // the maximum lands in the last bin
  EXPECT_TRUE(LatencyHistogram("e", "empty", {}).series.at(0).points.empty());
}

TEST(HtmlReportTest, ChartConfigIsChartJsJson) {
  Chart c = TwoPointLine("c");
  c.series[0].points = {{8, 4.0, ""}, {1, 1.5, "p99 1.9 ms"}};  // sorted by x for a line
  c.x_log = true;
  c.highlight = Point{1, 1.5, "lowest latency"};
  c.highlight_label = "recommended";
  const nlohmann::json j = ChartConfig(c);
  EXPECT_EQ(j["type"], "line");
  EXPECT_EQ(j["options"]["scales"]["x"]["type"], "logarithmic");
  EXPECT_EQ(j["options"]["scales"]["y"]["type"], "linear");
  EXPECT_EQ(j["options"]["scales"]["x"]["title"]["text"], "batch size");
  EXPECT_EQ(j["options"]["scales"]["x"]["ticks"]["precision"], 0);  // whole batch sizes
  EXPECT_EQ(j["options"]["plugins"]["title"]["text"], "p50 latency vs batch size");
  EXPECT_FALSE(j["options"]["animation"].get<bool>());
  const auto& datasets = j["data"]["datasets"];
  ASSERT_EQ(datasets.size(), 2u);
  EXPECT_EQ(datasets[0]["label"], "default");
  EXPECT_EQ(datasets[0]["data"][0], (nlohmann::json{{"x", 1.0}, {"y", 1.5}, {"label", "p99 1.9 ms"}}));
  EXPECT_EQ(datasets[0]["data"][1]["x"], 8.0);
  EXPECT_EQ(datasets[1]["label"], "recommended");
  EXPECT_EQ(datasets[1]["pointStyle"], "rectRot");
  EXPECT_TRUE(j["options"]["plugins"]["legend"]["display"].get<bool>());

  c.kind = ChartKind::kBar;
  const nlohmann::json bar = ChartConfig(c);
  EXPECT_EQ(bar["type"], "bar");
  EXPECT_EQ(bar["options"]["scales"]["x"]["type"], "category");
  EXPECT_EQ(bar["data"]["labels"], (nlohmann::json{"8", "p99 1.9 ms"}));
  // The highlighted bar is red, with a legend entry of its own.
  const auto& bars = bar["data"]["datasets"];
  ASSERT_EQ(bars.size(), 2u);
  EXPECT_EQ(bars[0]["backgroundColor"][1], "#d62728");
  EXPECT_NE(bars[0]["backgroundColor"][0], "#d62728");
  EXPECT_EQ(bars[1]["label"], "recommended");
  EXPECT_TRUE(bars[1]["data"].empty());
  EXPECT_FALSE(bar["options"].contains("indexAxis"));

  for (int i = 0; i < 10; ++i) c.series[0].points.push_back({static_cast<double>(i + 10), 1, ""});
  const nlohmann::json lying = ChartConfig(c);
  EXPECT_EQ(lying["options"]["indexAxis"], "y");  // 12 bars lie down
  EXPECT_EQ(lying["options"]["scales"]["y"]["type"], "category");
  EXPECT_EQ(lying["data"]["datasets"][0]["data"][0], (nlohmann::json{{"x", 4.0}, {"y", "8"}}));
}

// The data a page embeds for a reader's tools stays one inert JSON element,
// whatever its strings hold, and parses back unchanged.
TEST(HtmlReportTest, EmbeddedDataIsEscapedJson) {
  HtmlPage page("data");
  const nlohmann::json data = {{"model", "a</script><script>alert(1)</script>"}, {"goodput", 7266.5}};
  page.AddData("tune-report", data);
  const std::string html = page.Render();
  EXPECT_EQ(CountOf(html, "</script"), 1u);
  const std::string open = "<script type=\"application/json\" id=\"tune-report\">";
  const size_t at = html.find(open);
  ASSERT_NE(at, std::string::npos);
  const size_t end = html.find("</script>", at);
  EXPECT_EQ(nlohmann::json::parse(html.substr(at + open.size(), end - at - open.size())), data);
}

TEST(HtmlReportTest, ChartIdsStayUnique) {
  HtmlPage page("ids");
  page.AddChart(TwoPointLine("same"));
  page.AddChart(TwoPointLine("same"));
  const std::string html = page.Render();
  EXPECT_NE(html.find("id=\"chart-same\""), std::string::npos);
  EXPECT_NE(html.find("id=\"chart-same-2\""), std::string::npos);
}

// A real browser runs the page's script: every chart is drawn and no error
// is recorded (the script sets data-charts-drawn / data-chart-errors).
TEST(HtmlReportTest, EveryChartDrawsInHeadlessChromium) {
  if (!testing::HaveChromium()) GTEST_SKIP() << "chromium is not installed";
  const char* shot = std::getenv("ORTGPU_SCREENSHOT");  // also save what a reader sees
  const testing::RenderedPage page = testing::RenderInChromium(SamplePage().Render(), shot ? shot : "");
  ASSERT_TRUE(page.ran) << page.command;
  EXPECT_EQ(page.charts_expected, 6) << page.dom.substr(0, 400);
  EXPECT_EQ(page.charts_drawn, 6) << page.chart_errors;
  EXPECT_EQ(page.chart_errors, "");
  EXPECT_EQ(page.dom.find("alert(1)</script>"), std::string::npos);
}

// The tooltip of a point names its x, its series and value, and its label.
TEST(HtmlReportTest, ATooltipShowsThePointsLabel) {
  if (!testing::HaveChromium()) GTEST_SKIP() << "chromium is not installed";
  HtmlPage page("tooltip");
  page.AddChart(TwoPointLine("line"));
  std::string html = page.Render();
  // Opens the first point's tooltip and writes its text onto <body>.
  const std::string probe =
      "<script>var c = Chart.getChart('chart-line');"
      "c.tooltip.setActiveElements([{datasetIndex: 0, index: 0}], {x: 0, y: 0}); c.update();"
      "var b = c.tooltip.body[0];"
      "document.body.setAttribute('data-tooltip', c.tooltip.title.concat(b.lines, b.after).join(' | '));</script>";
  html.insert(html.rfind("</body>"), probe);
  const testing::RenderedPage rendered = testing::RenderInChromium(html);
  ASSERT_TRUE(rendered.ran) << rendered.command;
  EXPECT_EQ(rendered.chart_errors, "");
  EXPECT_NE(rendered.dom.find("data-tooltip=\"batch size 1 | default: p50 latency (ms) 1.5 | p99 1.9 ms\""), std::string::npos)
      << rendered.dom.substr(0, rendered.dom.find("<h1>"));
}

// The check above can fail: a chart whose creation throws is counted out
// and its error recorded on <body>.
TEST(HtmlReportTest, AChartThatFailsToDrawIsRecordedAsAnError) {
  if (!testing::HaveChromium()) GTEST_SKIP() << "chromium is not installed";
  HtmlPage page("broken");
  page.AddChart(TwoPointLine("broken"));
  std::string html = page.Render();
  const size_t at = html.find("new Chart(");
  ASSERT_NE(at, std::string::npos);
  html.replace(at, 10, "new NoSuchChart(");
  const testing::RenderedPage rendered = testing::RenderInChromium(html);
  ASSERT_TRUE(rendered.ran) << rendered.command;
  EXPECT_EQ(rendered.charts_expected, 1);
  EXPECT_EQ(rendered.charts_drawn, 0);
  EXPECT_NE(rendered.chart_errors.find("chart-broken: NoSuchChart is not defined"), std::string::npos) << rendered.chart_errors;
}

}  // namespace
}  // namespace ortgpu::report
