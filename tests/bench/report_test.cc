#include "bench/report.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "bench/sweep.h"

namespace ortgpu::bench {
namespace {

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
        r.config.provider = Provider::kCuda;
        r.config.batch = batch;
        r.config.concurrency = conc;
        r.memory = "cuda:0";
        for (int i = 0; i < 90; ++i) r.samples_ms.push_back(1.0 + 0.1 * batch + 0.01 * (i % 10) + 0.05 * k);
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
  for (const char* kind : {"histogram", "latency-vs-batch", "throughput-vs-batch", "latency-vs-concurrency",
                           "throughput-vs-concurrency"}) {
    EXPECT_NE(html.find(std::string("data-chart='") + kind + "'"), std::string::npos) << kind;
  }
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("resnet&lt;50&gt;.onnx"), std::string::npos);  // escaped
  EXPECT_NE(html.find("id='config-pbtxt'"), std::string::npos);
}

// Renders the page in headless Chromium and checks the charts survive a real
// parser and layout (not just string matching). Needs Debian's chromium.
TEST(ReportTest, HtmlRendersInHeadlessChromium) {
  const char* chromium = "/usr/bin/chromium";
  if (access(chromium, X_OK) != 0) GTEST_SKIP() << "chromium is not installed";
  char dir_template[] = "/tmp/ortgpu_html_XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string page = dir + "/report.html";
  std::ofstream(page) << RenderHtml(Sample());
  const std::string flags = " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking"
                            " --disable-component-update --disable-sync --user-data-dir=" + dir + "/profile";
  const std::string dom_file = dir + "/dom.html";
  const std::string cmd = std::string(chromium) + flags + " --dump-dom file://" + page + " > " + dom_file + " 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::stringstream dom;
  dom << std::ifstream(dom_file).rdbuf();
  const std::string text = dom.str();
  int charts = 0;
  for (size_t pos = 0; (pos = text.find("class=\"chart\"", pos)) != std::string::npos; ++pos) ++charts;
  EXPECT_GE(charts, 5) << text.substr(0, 500);
  EXPECT_NE(text.find("data-chart=\"throughput-vs-concurrency\""), std::string::npos);
  EXPECT_NE(text.find("<polyline"), std::string::npos);
  if (const char* shot = std::getenv("ORTGPU_SCREENSHOT")) {
    const std::string s = std::string(chromium) + flags + " --window-size=1200,1800 --screenshot=" + shot + " file://" + page +
                          " >/dev/null 2>&1";
    EXPECT_EQ(std::system(s.c_str()), 0);
  }
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace ortgpu::bench
