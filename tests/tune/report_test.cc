// The report of a tune run (tune/report.h) over a search with the fake
// measurer: the JSON document's structure and figures, the details read back
// from the history (so a resumed run reports them too), and the HTML page
// drawn in headless Chromium without a script error.
#include "tune/report.h"

#include <algorithm>
#include <cstdlib>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fakes/fake_clock.h"
#include "fakes/fake_measurer.h"
#include "support/headless_chromium.h"
#include "support/temp_dir.h"
#include "support/tune_space.h"

namespace ortgpu::tune {
namespace {

using ortgpu::testing::FakeClock;
using ortgpu::testing::FakeMeasurer;
using ortgpu::testing::LatencyMs;
using ortgpu::testing::SmallSpace;
using nlohmann::json;

// The search tests' model, with the memory estimate's inputs.
ModelTraits Resnet() {
  ModelTraits t = testing::Resnet();
  t.weight_bytes = 100 << 20;
  t.activation_bytes_per_row = 1 << 20;
  return t;
}

// ORT refuses to capture a graph at batch 32; the first candidate served
// fails to start; the others reach 80% (one instance) or
// 95% (two) of their batch's in-process speed, with perf's steps, and the
// NHWC ones report the GPU memory they held.
void Script(FakeMeasurer& m) {
  m.SetInProcess([](const EngineChoice& e, int64_t batch) -> Expected<Measurement> {
    if (e.cuda_graphs && batch == 32) return Internal("ORT refused to capture a CUDA graph at batch 32");
    return Measurement{LatencyMs(e, batch), static_cast<double>(batch) * 1000.0 / LatencyMs(e, batch)};
  });
  m.SetServed([calls = 0](const ServedCandidate& c, double budget) mutable -> Expected<Measurement> {
    if (calls++ == 0) return Unavailable("ortgpu serve did not start");
    const double g = static_cast<double>(c.batch) * 1000.0 / LatencyMs(c.engine, c.batch) * (c.instances == 1 ? 0.8 : 0.95);
    Measurement m{budget * 0.8, g};
    m.steps = {{1, g * 0.3, budget * 0.2}, {4, g, budget * 0.8}, {8, g * 1.05, budget * 1.5}};
    if (c.engine.prefer_nhwc) m.gpu_memory_bytes = 1e9 * c.instances;
    m.load_s = 2.5;
    return m;
  });
}

// The report RunTune would build, from a search over `history`.
TuneReport ReportOver(Measurer& measurer, History& history) {
  FakeClock clock;
  auto result = RunSearch(Resnet(), SmallSpace(), {.latency_budget_ms = 20}, measurer, history, clock);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  TuneReport r;
  r.search = std::move(*result);
  r.history_path = "repo/resnet50/tune_history.jsonl";
  r.config_path = "repo/resnet50/config.pbtxt";
  r.details.model_file = "resnet50.onnx";
  r.details.output_dir = "repo/resnet50";
  r.details.report_path = "repo/resnet50/tune_report.html";
  r.details.provider = "cuda";
  r.details.latency_budget_ms = 20;
  r.details.traits = Resnet();
  r.details.config_pbtxt = "max_batch_size: 32\n";
  CollectMeasurements(Resnet(), SmallSpace(), SearchOptions{.latency_budget_ms = 20}, r.search, history, r.details);
  return r;
}

const json* ServedWith(const json& j, const std::string& status) {
  for (const json& s : j["served"]) {
    if (s["status"] == status) return &s;
  }
  return nullptr;
}

TEST(TuneReportTest, TheJsonHasTheWinnerTheServedTheCurvesAndTheKnobs) {
  FakeMeasurer m;
  Script(m);
  History h;
  const TuneReport r = ReportOver(m, h);
  ASSERT_TRUE(r.search.winner.has_value());
  const json j = TuneReportJson(r);

  EXPECT_EQ(j["model"], "resnet50.onnx");
  EXPECT_EQ(j["latency_budget_ms"], 20);
  EXPECT_EQ(j["provider"], "cuda");
  // The winner, its ceiling and its served / in-process ratio.
  const json& w = j["winner"];
  EXPECT_EQ(w["candidate"]["key"], r.search.winner->Key());
  EXPECT_EQ(w["candidate"]["instances"], 2);
  const double ceiling = *r.search.curves.BestItemsPerSecond(r.search.winner->engine);
  EXPECT_DOUBLE_EQ(w["in_process_ceiling_items_per_s"].get<double>(), ceiling);
  EXPECT_NEAR(w["served_to_in_process"].get<double>(), w["goodput"]["mean"].get<double>() / ceiling, 1e-9);
  EXPECT_EQ(w["goodput"]["n"], 3);
  EXPECT_FALSE(w["reason"].get<std::string>().empty());

  // One entry per served candidate, in the order served, each with a status.
  ASSERT_EQ(j["served"].size(), r.search.served.size());
  const json* failed = ServedWith(j, "failed");
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ((*failed)["error"], "ortgpu serve did not start");
  const json* winner = ServedWith(j, "winner");
  ASSERT_NE(winner, nullptr);
  EXPECT_EQ((*winner)["steps"].size(), 3u);
  EXPECT_EQ((*winner)["steps"][1], (json{{"load", 4.0}, {"items_per_s", (*winner)["goodputs"][0]}, {"p99_ms", 16.0}}));
  EXPECT_EQ((*winner)["load_s"], 2.5);
  // Memory: measured where the server reported it, else the estimate, labelled.
  int measured = 0, estimated = 0;
  for (const json& s : j["served"]) {
    if (s["memory"].is_null()) continue;
    if (s["memory"]["source"] == "measured") {
      ++measured;
      EXPECT_TRUE(s["candidate"]["prefer_nhwc"].get<bool>());
      EXPECT_EQ(s["memory"]["bytes"], 1e9 * s["candidate"]["instances"].get<int>());
    } else {
      ++estimated;
      EXPECT_EQ(s["memory"]["source"], "estimate");
      const int64_t instances = s["candidate"]["instances"], batch = s["candidate"]["batch"];
      EXPECT_EQ(s["memory"]["bytes"], static_cast<double>(instances * ((100 << 20) + (1 << 20) * batch * 2)));
    }
  }
  EXPECT_GT(measured, 0);
  EXPECT_GT(estimated, 0);

  // In-process: the engine choices screening tried (ORT's default, NHWC, NHWC
  // with graphs) and the curve's, the refused capture a point with its error.
  ASSERT_EQ(j["in_process"].size(), 3u);
  bool refused = false;
  for (const json& e : j["in_process"]) {
    for (const json& p : e["points"]) refused = refused || (p["batch"] == 32 && p["latency_ms"].is_null() &&
                                                            p["error"] == "ORT refused to capture a CUDA graph at batch 32");
  }
  EXPECT_TRUE(refused);
  // Screening at the largest batch most engine choices ran: 32, the search's
  // screening batch (the graphs' flip failed there, so two figures).
  EXPECT_EQ(j["engine_screening"]["batch"], 32);
  EXPECT_EQ(j["engine_screening"]["items_per_s"].size(), 2u);
  // What each knob gave: both instance counts, with the best of each.
  int instance_rows = 0;
  for (const json& k : j["knobs"]) {
    if (k["knob"] != "instances") continue;
    ++instance_rows;
    EXPECT_FALSE(k["best_goodput"].is_null()) << k.dump();
  }
  EXPECT_EQ(instance_rows, 2);
  EXPECT_TRUE(std::any_of(j["rejected"].begin(), j["rejected"].end(), [](const json& x) {
    return x["reason"].get<std::string>().find("refused to capture") != std::string::npos;
  }));
  EXPECT_EQ(j["measurements"]["new"], r.search.evaluations);
}

// A resumed run measures nothing, yet its report has the same details: they
// are read back from the history file.
TEST(TuneReportTest, AResumedRunReportsTheDetailsFromTheHistory) {
  testing_support::TempDir dir;
  const std::string path = dir.Path("history.jsonl");
  json first;
  {
    FakeMeasurer m;
    Script(m);
    auto h = History::Open(path, nullptr);
    ASSERT_TRUE(h.ok());
    first = TuneReportJson(ReportOver(m, *h));
  }
  FakeMeasurer none;  // every call would be counted
  auto h = History::Open(path, nullptr);
  ASSERT_TRUE(h.ok());
  json again = TuneReportJson(ReportOver(none, *h));
  EXPECT_TRUE(none.served_calls.empty());
  EXPECT_EQ(again["measurements"]["new"], 0);
  first.erase("measurements");
  again.erase("measurements");
  EXPECT_EQ(again, first);
}

// A candidate that held more GPU memory while served than --max-gpu-memory
// allows (the estimate let it through) is marked, with the figures.
TEST(TuneReportTest, MeasuredMemoryOverTheLimitIsAnAnomaly) {
  FakeMeasurer m;
  Script(m);
  History h;
  TuneReport r = ReportOver(m, h);
  r.details.traits.gpu_memory_limit_bytes = 1500000000;
  int over = 0;
  for (const ServedRow& row : BuildReportView(r).served) {
    const bool two_gb = row.memory_source == "measured" && *row.memory_bytes > 1.5e9;
    const bool marked = std::any_of(row.anomalies.begin(), row.anomalies.end(), [](const std::string& a) {
      return a.find("1.9 GiB of GPU memory in use while served, over the --max-gpu-memory limit of 1.4 GiB") !=
             std::string::npos;
    });
    EXPECT_EQ(marked, two_gb) << row.label;
    over += marked;
  }
  EXPECT_GT(over, 0);
}

// With the limit known to the search, a candidate measured over it is one
// the search set aside: its status says so, with by how much, and it is not
// the winner.
TEST(TuneReportTest, ACandidateTheSearchMeasuredOverTheLimitIsMarkedOverMemory) {
  FakeMeasurer m;
  Script(m);
  History h;
  FakeClock clock;
  ModelTraits traits = Resnet();
  traits.gpu_memory_limit_bytes = 1500000000;
  auto result = RunSearch(traits, SmallSpace(), {.latency_budget_ms = 20}, m, h, clock);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  TuneReport r;
  r.search = std::move(*result);
  r.details.traits = traits;
  r.details.latency_budget_ms = 20;
  CollectMeasurements(traits, SmallSpace(), SearchOptions{.latency_budget_ms = 20}, r.search, h, r.details);
  ASSERT_TRUE(r.search.winner.has_value());
  EXPECT_FALSE(r.search.winner->engine.prefer_nhwc && r.search.winner->instances > 1) << r.search.winner->Key();
  const json j = TuneReportJson(r);
  const json* over = ServedWith(j, "over memory");
  ASSERT_NE(over, nullptr) << j["served"].dump(1);
  EXPECT_EQ((*over)["error"], "over the GPU memory limit: 1907 MiB in use while serving (the whole device), the limit 1430 MiB");
  for (const ServedRow& row : BuildReportView(r).served) {
    if (row.status != "over memory") continue;
    EXPECT_TRUE(row.anomalies.empty()) << row.label << ": the status already says it";
  }
}

TEST(TuneReportTest, NoWinnerIsReportedWithWhy) {
  FakeMeasurer m;
  m.SetInProcess([](const EngineChoice&, int64_t) -> Expected<Measurement> { return Measurement{50.0, 20}; });
  History h;
  const TuneReport r = ReportOver(m, h);
  ASSERT_FALSE(r.search.winner.has_value());
  const json j = TuneReportJson(r);
  EXPECT_TRUE(j["winner"].is_null());
  EXPECT_TRUE(j["served"].empty());
  EXPECT_FALSE(j["rejected"].empty());
  const std::string html = RenderTuneHtml(r);
  EXPECT_NE(html.find("No winner: no served candidate met the latency budget"), std::string::npos);
}

TEST(TuneReportTest, CandidateLabelsNameOnlyWhatDiffersFromTheDefaults) {
  ServedCandidate c{.instances = 2, .batch = 32, .pad_to_preferred = true, .max_queue_delay_us = 100};
  c.engine.precision = Precision::kFp16;
  c.engine.cuda_graphs = true;
  EXPECT_EQ(CandidateLabel(c), "2 inst, batch 32, pad, delay 100us, fp16, graphs");
  EXPECT_EQ(CandidateLabel(ServedCandidate{}), "1 inst, batch 1");
}

// The page embeds the JSON document and a real browser draws every chart.
TEST(TuneReportTest, ThePageEmbedsTheJsonAndDrawsInHeadlessChromium) {
  FakeMeasurer m;
  Script(m);
  History h;
  const TuneReport r = ReportOver(m, h);
  const std::string html = RenderTuneHtml(r);
  const std::string open = "<script type=\"application/json\" id=\"tune-report\">";
  const size_t at = html.find(open);
  ASSERT_NE(at, std::string::npos);
  const size_t end = html.find("</script>", at);
  EXPECT_EQ(json::parse(html.substr(at + open.size(), end - at - open.size())), TuneReportJson(r));
  for (const char* id : {"goodput", "latency-throughput", "memory", "engine-screening", "in-process-latency", "knobs"}) {
    EXPECT_NE(html.find(std::string("data-chart=\"") + id + "\""), std::string::npos) << id;
  }
  if (!testing::HaveChromium()) GTEST_SKIP() << "chromium is not installed";
  const char* shot = std::getenv("ORTGPU_SCREENSHOT");  // also save what a reader sees
  const testing::RenderedPage page = testing::RenderInChromium(html, shot ? shot : "");
  ASSERT_TRUE(page.ran) << page.command;
  EXPECT_EQ(page.charts_expected, 6);
  EXPECT_EQ(page.charts_drawn, 6) << page.chart_errors;
  EXPECT_EQ(page.chart_errors, "");
}

}  // namespace
}  // namespace ortgpu::tune
