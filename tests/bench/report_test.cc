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

namespace ortgpu::bench {
namespace {

// Sample() at two precisions: io=bound becomes fp16, judged against fp32.
BenchReport WithPrecisions() {
  BenchReport report = Sample();
  report.precision_budget = "row cosine >= 0.999";
  for (auto& r : report.results) {
    if (r.config.variant.is_default) {
      r.precision_accuracy.checked = true;  // tf32, judged
      r.precision_accuracy.min_cosine = 0.999998;
    }
    if (r.config.variant.name != "io=bound") continue;
    r.config.variant.name = "precision=fp16";
    r.config.variant.io = IoMode::kServed;
    r.config.variant.precision = Precision::kFp16;
    r.precision_accuracy.checked = true;
    r.precision_accuracy.min_cosine = 0.99991;
    r.precision_accuracy.max_rel_error = 0.0012;
    r.precision_accuracy.top1_agreement = 1.0;
  }
  report.recommendation = Recommend(report);
  return report;
}

TEST(ReportTest, Issue26EveryOutputCarriesThePrecisionAndItsAccuracy) {
  const BenchReport report = WithPrecisions();
  const std::string table = RenderTable(report);
  EXPECT_NE(table.find("prec"), std::string::npos);
  EXPECT_NE(table.find("0.999910"), std::string::npos) << table;
  EXPECT_NE(table.find("precision accuracy against fp32 (TF32 off)"), std::string::npos);

  auto j = nlohmann::json::parse(RenderJson(report));
  EXPECT_EQ(j["precision_budget"], "row cosine >= 0.999");
  const auto& fp16 = j["results"][6];
  EXPECT_EQ(fp16["precision"], "fp16");
  EXPECT_EQ(fp16["precision_accuracy"]["min_cosine"], 0.99991);
  EXPECT_EQ(fp16["precision_accuracy"]["top1_agreement"], 1.0);
  EXPECT_TRUE(fp16["precision_accuracy"]["within_budget"].get<bool>());
  EXPECT_EQ(j["results"][0]["precision"], "tf32");
  EXPECT_TRUE(j["results"][0]["precision_accuracy"]["checked"].get<bool>());

  const std::string csv = RenderCsv(report);
  EXPECT_NE(csv.find("precision,fp32_min_cosine,fp32_max_rel_error,fp32_top1,within_budget,error"), std::string::npos);
  EXPECT_NE(csv.find(",fp16,0.99991000,0.0012,1,1,"), std::string::npos) << csv;

  const std::string html = RenderHtml(report);
  for (const char* part : {"data-chart=\"throughput-vs-accuracy\"", "<th>min cos (fp32)</th>", ">0.999910</td>"}) {
    EXPECT_NE(html.find(part), std::string::npos) << part;
  }
}

TEST(ReportTest, Issue26SpeedAgainstAccuracyDrawsInHeadlessChromium) {
  if (!testing::HaveChromium()) GTEST_SKIP() << "chromium is not installed";
  const testing::RenderedPage page = testing::RenderInChromium(RenderHtml(WithPrecisions()), "");
  ASSERT_TRUE(page.ran && page.chart_errors.empty()) << page.command << page.chart_errors;
  EXPECT_TRUE(page.charts_drawn == page.charts_expected && page.dom.find("throughput-vs-accuracy") != std::string::npos);
}

}  // namespace
}  // namespace ortgpu::bench
