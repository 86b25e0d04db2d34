#include "bench/report.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "bench/sweep.h"
#include "support/headless_chromium.h"

namespace ortgpu::bench {
namespace {

using testing::CountOf;

BenchReport Sample() {
  BenchReport report;
  report.model = "resnet<50>.onnx";
  report.ort_version = "1.29.0";
  report.provider = Provider::kCuda;
  report.dynamic_batch = true;
  int k = 0;
  for (const char* variant : {"default", "io=bound"}) {
    for (int64_t batch : {1, 8, 32}) {
      for (int conc : {1, 4}) {
        ConfigResult r;
        r.config.variant.name = variant;
        r.config.variant.is_default = std::string(variant) == "default";
        // A sweep of --io served: the default is servable, io=bound a reference.
        r.config.variant.io = r.config.variant.is_default ? IoMode::kServed : IoMode::kBound;
        r.config.provider = Provider::kCuda;
        r.config.batch = batch;
        r.config.concurrency = conc;
        r.memory = "cuda:0";
        // A triangular spread of 0.045 ms, less than the 0.05 ms between configurations.
        for (int i = 0; i < 90; ++i) {
          r.samples_ms.push_back(1.0 + 0.1 * batch + 0.00025 * ((i * 37) % 90 + (i * 61) % 90) + 0.05 * k);
        }
        r.stats = ComputeStatistics(r.samples_ms, 0.2, batch);
        r.accuracy.checked = true;
        r.gpu_memory_mb = 812;
        report.results.push_back(r);
        ++k;
      }
    }
  }
  ConfigResult failed;
  failed.config.variant.name = "io=cuda-graph";
  failed.error = Unavailable("CUDA graph capture failed");
  report.results.push_back(failed);
  report.notes.push_back("a note");
  report.recommendation = Recommend(report);
  return report;
}

TEST(ReportTest, TableHasOneRowPerConfigurationAndTheErrors) {
  const std::string t = RenderTable(Sample());
  EXPECT_NE(t.find("p99 ms"), std::string::npos);
  EXPECT_NE(t.find("ERROR: CUDA graph capture failed"), std::string::npos);
  EXPECT_NE(t.find("best latency: default at batch 1"), std::string::npos) << t;
  EXPECT_NE(t.find("note: a note"), std::string::npos);
}

TEST(ReportTest, JsonCarriesEveryFigureAndSamplesOnRequest) {
  auto j = nlohmann::json::parse(RenderJson(Sample()));
  ASSERT_EQ(j["results"].size(), 13u);
  const auto& r = j["results"][0];
  for (const char* key : {"p50", "p90", "p95", "p99", "p99.9", "min", "max", "mean", "stddev"}) {
    EXPECT_TRUE(r["latency_ms"].contains(key)) << key;
  }
  EXPECT_EQ(r["gpu_memory_mb"], 812);
  EXPECT_FALSE(r.contains("samples_ms"));
  EXPECT_EQ(j["results"][12]["error"]["code"], "unavailable");
  EXPECT_FALSE(j["ok"].get<bool>());
  EXPECT_TRUE(j["recommendation"]["config_pbtxt"].get<std::string>().find("instance_group") != std::string::npos);
  JsonOptions with;
  with.with_samples = true;
  EXPECT_EQ(nlohmann::json::parse(RenderJson(Sample(), with))["results"][0]["samples_ms"].size(), 90u);
}

TEST(ReportTest, CsvHasAHeaderAndOneLinePerConfiguration) {
  const std::string csv = RenderCsv(Sample());
  std::istringstream in(csv);
  std::string line;
  int lines = 0;
  std::getline(in, line);
  const auto columns = std::count(line.begin(), line.end(), ',');
  while (std::getline(in, line)) {
    ++lines;
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), columns) << line;
  }
  EXPECT_EQ(lines, 13);
}

TEST(ReportTest, HtmlIsSelfContainedWithEveryChart) {
  const std::string html = RenderHtml(Sample());
  for (const char* id : {"latency-by-variant", "throughput-by-variant", "latency-vs-batch", "throughput-vs-batch",
                         "latency-vs-concurrency", "throughput-vs-concurrency"}) {
    EXPECT_NE(html.find(std::string("data-chart=\"") + id + "\""), std::string::npos) << id;
  }
  // The picks, the two variants at the smallest point, then the rest up to 6.
  EXPECT_EQ(CountOf(html, "data-kind=\"histogram\""), 6u);
  EXPECT_NE(html.find("6 more configurations have no histogram here"), std::string::npos);
  // Nothing is loaded from outside (Chart.js's own comments name its site).
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);
  EXPECT_EQ(html.find("href=\"http"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_NE(html.find("resnet&lt;50&gt;.onnx"), std::string::npos);  // escaped
  EXPECT_NE(html.find("<pre id=\"config-pbtxt\">"), std::string::npos);
  EXPECT_NE(html.find("<p>best latency: "), std::string::npos);
  EXPECT_NE(html.find("recommended for throughput: "), std::string::npos);  // the highlighted point
  EXPECT_NE(html.find("<td>error: CUDA graph capture failed</td>"), std::string::npos);
}

// A sweep of one batch size and one concurrency has no trend to draw: those
// charts are left out rather than drawn with a single point per line.
TEST(ReportTest, HtmlLeavesOutDimensionsThatDidNotVary) {
  BenchReport report = Sample();
  std::erase_if(report.results, [](const ConfigResult& r) { return r.config.batch != 1 || r.config.concurrency != 1; });
  report.recommendation = Recommend(report);
  const std::string html = RenderHtml(report);
  EXPECT_EQ(html.find("data-chart=\"latency-vs-batch\""), std::string::npos);
  EXPECT_EQ(html.find("data-chart=\"throughput-vs-concurrency\""), std::string::npos);
  EXPECT_EQ(CountOf(html, "data-kind=\"histogram\""), 2u);
  EXPECT_NE(html.find("data-chart=\"throughput-by-variant\""), std::string::npos);  // two variants at one point
}

// Nothing measured: the table says why, and no chart (nor Chart.js) is sent.
TEST(ReportTest, HtmlOfAFailedRunHasTheTableAndNoCharts) {
  BenchReport report = Sample();
  report.results.erase(report.results.begin(), report.results.end() - 1);  // only the failure
  report.recommendation.reset();
  const std::string html = RenderHtml(report);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("<td>error: CUDA graph capture failed</td>"), std::string::npos);
}

// Renders the page in headless Chromium: the page's script must have drawn
// every chart and recorded no error. ORTGPU_SCREENSHOT=/path.png also saves
// what a reader sees (and the page as /path.png.html).
TEST(ReportTest, HtmlDrawsEveryChartInHeadlessChromium) {
  if (!testing::HaveChromium()) GTEST_SKIP() << "chromium is not installed";
  BenchReport report = Sample();
  report.results[0].samples_ms.push_back(40);  // an outlier: the overflow bar
  const std::string html = RenderHtml(report);
  const char* shot = std::getenv("ORTGPU_SCREENSHOT");
  if (shot) std::ofstream(std::string(shot) + ".html") << html;  // the page itself, to open
  const testing::RenderedPage page = testing::RenderInChromium(html, shot ? shot : "");
  ASSERT_TRUE(page.ran) << page.command;
  EXPECT_EQ(page.charts_expected, 12) << page.dom.substr(0, 400);
  EXPECT_EQ(page.charts_drawn, page.charts_expected) << page.chart_errors;
  EXPECT_EQ(page.chart_errors, "");
  EXPECT_NE(page.dom.find("data-chart=\"throughput-vs-concurrency\""), std::string::npos);
}

}  // namespace
}  // namespace ortgpu::bench
