// The renderers of a hand-made PerfReport: what a user reads in each format.
#include "perf/report.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "support/headless_chromium.h"

namespace ortgpu::perf {
namespace {

PerfReport TwoSteps() {
  PerfReport r;
  r.url = "http://h:8000";
  r.model = "resnet";
  r.rows = 2;
  r.max_batch_size = 8;
  r.server_statistics = true;
  for (int c : {1, 4}) {
    StepResult s;
    s.load = c;
    s.stable = true;
    s.throughput = 100.0 * c;
    s.items_per_s = 200.0 * c;
    s.requests = 300 * c;
    s.latency.p50_ms = 1.0 * c;
    s.latency.p99_ms = 2.0 * c;
    ServerSplit split;
    split.requests = s.requests;
    split.request_us = 900;
    split.queue_us = 100;
    split.compute_infer_us = 700;
    split.overhead_us = 100;
    split.average_batch = 1.5;
    s.server = split;
    s.outside_server_us = 100;
    r.steps.push_back(s);
  }
  r.steps[1].errors = {{"503", 2}};
  r.steps[1].note = "never became stable, with \"quotes\", and commas";
  r.notes.push_back("no GPU utilisation or memory: no nv_gpu_utilization");
  return r;
}

TEST(PerfReport, OkOnlyWithoutFailedRequests) {
  PerfReport r = TwoSteps();
  EXPECT_FALSE(r.ok());
  r.steps[1].errors.clear();
  EXPECT_TRUE(r.ok());
}

TEST(RenderTable, OneRowPerStepWithTheSplitAndTheErrors) {
  const std::string t = RenderTable(TwoSteps());
  EXPECT_NE(t.find("model resnet at http://h:8000"), std::string::npos) << t;
  EXPECT_NE(t.find("2 row(s) per request, max_batch_size 8"), std::string::npos) << t;
  EXPECT_NE(t.find("c.infer"), std::string::npos);
  EXPECT_NE(t.find("errors at concurrency 4: HTTP 503 x 2"), std::string::npos) << t;
  EXPECT_NE(t.find("note: no GPU utilisation"), std::string::npos);
}

// Issue 30: with several GPUs each one's utilisation and memory, and a note
// when one is busy beside an idle one.
TEST(RenderTable, EachGpuOfAStepAndTheImbalance) {
  PerfReport r = TwoSteps();
  GpuSample g;
  g.gpus = 2;
  g.utilization = 0.6;
  g.memory_used_bytes = 3 * 1048576.0 * 1024;
  g.devices = {{"GPU-aaaaaaaa-1111", 0.95, 2 * 1048576.0 * 1024}, {"GPU-bbbbbbbb-2222", 0.25, 1048576.0 * 1024}};
  r.steps[1].gpu = g;
  const std::string t = RenderTable(r);
  EXPECT_NE(t.find("GPUs at concurrency 4: GPU-aaaaaaaa-1111 95% 2048 MB; GPU-bbbbbbbb-2222 25% 1024 MB"),
            std::string::npos) << t;
  EXPECT_NE(t.find("note: concurrency 4: GPU-aaaaaaaa.. at 95% while GPU-bbbbbbbb.. at 25%"), std::string::npos) << t;
  EXPECT_EQ(t.find("GPUs at concurrency 1"), std::string::npos) << t;  // no GPU figures at that step
  const auto j = nlohmann::json::parse(RenderJson(r));
  ASSERT_EQ(j["steps"][1]["gpu"]["devices"].size(), 2u);
  EXPECT_EQ(j["steps"][1]["gpu"]["devices"][1]["uuid"], "GPU-bbbbbbbb-2222");
  EXPECT_EQ(j["steps"][1]["gpu"]["devices"][1]["utilization"], 0.25);
}

TEST(RenderJson, CarriesStepsSplitErrorsAndTheBudget) {
  PerfReport r = TwoSteps();
  r.budget = BudgetSummary{5.0, 99, 0, 2.0, "budget 5 ms holds at load 1 and breaks at 4"};
  const auto j = nlohmann::json::parse(RenderJson(r));
  EXPECT_EQ(j["model"], "resnet");
  EXPECT_FALSE(j["ok"].get<bool>());
  ASSERT_EQ(j["steps"].size(), 2u);
  EXPECT_EQ(j["steps"][1]["errors"]["503"], 2);
  EXPECT_EQ(j["steps"][0]["server"]["compute_infer_us"], 700);
  EXPECT_EQ(j["latency_budget"]["best_load"], 1);
  EXPECT_EQ(j["latency_budget"]["goodput_infer_per_s"], 100);
}

TEST(RenderCsv, OneLinePerStepWithQuotedNotes) {
  const std::string csv = RenderCsv(TwoSteps());
  const size_t first = csv.find('\n');
  EXPECT_EQ(csv.substr(0, 25), "mode,load,stable,failed,r");
  EXPECT_NE(csv.find("concurrency,1,1,0,300,100.000,200.000", first), std::string::npos) << csv;
  EXPECT_NE(csv.find("\"never became stable, with \"\"quotes\"\", and commas\""), std::string::npos) << csv;
}

TEST(RenderHtml, IsOnePageWithTheStepsAndEscapedText) {
  PerfReport r = TwoSteps();
  r.model = "<b>resnet</b>";
  const std::string html = RenderHtml(r);
  EXPECT_NE(html.find("<html"), std::string::npos);
  EXPECT_NE(html.find("concurrency 4"), std::string::npos);
  EXPECT_EQ(html.find("<b>resnet</b>"), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;resnet&lt;/b&gt;"), std::string::npos);
}

TEST(RenderHtml, HasTheCurveTheLoadChartAndTheSplit) {
  PerfReport r = TwoSteps();
  r.budget = BudgetSummary{5.0, 99, 0, 2.0, "budget 5 ms holds at load 1 and breaks at 4"};
  const std::string html = RenderHtml(r);
  for (const char* id : {"throughput-latency", "throughput-load", "server-split"}) {
    EXPECT_NE(html.find(std::string("data-chart=\"") + id + "\""), std::string::npos) << id;
  }
  EXPECT_NE(html.find("best within 5 ms"), std::string::npos);
  // No statistics extension: no split chart.
  r.server_statistics = false;
  EXPECT_EQ(RenderHtml(r).find("data-chart=\"server-split\""), std::string::npos);
}

// The page's script must draw every chart in a real browser and record no
// error. ORTGPU_SCREENSHOT=/path.png also saves what a reader sees.
TEST(RenderHtml, DrawsEveryChartInHeadlessChromium) {
  if (!testing::HaveChromium()) GTEST_SKIP() << "chromium is not installed";
  PerfReport r = TwoSteps();
  r.budget = BudgetSummary{5.0, 99, 0, 2.0, "budget 5 ms holds at load 1 and breaks at 4"};
  const std::string html = RenderHtml(r);
  const char* shot = std::getenv("ORTGPU_SCREENSHOT");
  if (shot) std::ofstream(std::string(shot) + ".html") << html;
  const testing::RenderedPage page = testing::RenderInChromium(html, shot ? shot : "");
  ASSERT_TRUE(page.ran) << page.command;
  EXPECT_EQ(page.charts_expected, 3) << page.dom.substr(0, 400);
  EXPECT_EQ(page.charts_drawn, page.charts_expected) << page.chart_errors;
  EXPECT_EQ(page.chart_errors, "");
}

}  // namespace
}  // namespace ortgpu::perf
