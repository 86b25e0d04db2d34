// perf with several models at once (issue 27): the --model grammar, how the
// load is split, and a run against the stub server where one model answers
// and the other does not exist.
#include "perf/multi_model.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fakes/stub_kserve_server.h"

namespace ortgpu::perf {
namespace {

using ortgpu::testing::StubKServeServer;

TEST(MultiModelTest, ParsesNamesAndSharesAndSaysWhatIsWrong) {
  EXPECT_EQ(ParseModelShare("resnet50")->model, "resnet50");
  EXPECT_EQ(ParseModelShare("resnet50")->share, 1);
  EXPECT_EQ(ParseModelShare("bert:0.3")->share, 0.3);
  for (const char* bad : {"bert:", "bert:0", "bert:-1", "bert:lots", ":0.5", ""}) {
    auto m = ParseModelShare(bad);
    EXPECT_EQ(m.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(m.status().message().find("--model"), std::string::npos);
  }
  auto twice = SplitShares({{"a", 1}, {"a", 2}});
  EXPECT_EQ(twice.status().code(), Code::kInvalidArgument);
  EXPECT_NE(twice.status().message().find("given twice"), std::string::npos);
  auto shares = SplitShares({{"a", 0.5}, {"b", 0.3}, {"c", 0.2}});
  ASSERT_TRUE(shares.ok());
  EXPECT_DOUBLE_EQ((*shares)[0].share + (*shares)[1].share + (*shares)[2].share, 1.0);
  auto weights = SplitShares({{"a", 3}, {"b", 1}});
  EXPECT_DOUBLE_EQ((*weights)[0].share, 0.75);
}

TEST(MultiModelTest, EachModelGetsItsShareOfEveryStepInLockStepWindows) {
  PerfOptions base;
  base.concurrency = {4, 16};
  base.rates = {100};
  base.request_count = 0;
  base.latency_budget_ms = 20;
  base.measure.max_trials = 10;
  const auto runs = ModelRunOptions(base, *SplitShares({{"a", 3}, {"b", 1}}));
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].model, "a");
  EXPECT_EQ(runs[0].concurrency, (std::vector<int>{3, 12}));
  EXPECT_EQ(runs[1].concurrency, (std::vector<int>{1, 4}));
  EXPECT_DOUBLE_EQ(runs[1].rates[0], 25);
  for (const auto& r : runs) {
    EXPECT_EQ(r.measure.max_trials, r.measure.stable_windows) << "every step is the same windows for every model";
    EXPECT_FALSE(r.latency_budget_ms.has_value()) << "no search";
    EXPECT_EQ(r.goodput_budget_ms, 20);
    EXPECT_TRUE(r.inputs_of_this_model_only) << "one command line, several models' inputs";
  }
  PerfOptions tiny = base;
  tiny.concurrency = {1};
  EXPECT_EQ(ModelRunOptions(tiny, *SplitShares({{"a", 9}, {"b", 1}}))[1].concurrency, (std::vector<int>{1}))
      << "at least one connection each";
}

TEST(MultiModelTest, AgainstTheStubTheModelThatAnswersIsMeasuredAndTheMissingOneSaysWhy) {
  StubKServeServer stub({});
  PerfOptions base;
  base.url = "http://127.0.0.1:" + std::to_string(stub.port());
  base.metrics_url = "off";
  base.concurrency = {2};
  base.request_count = 40;
  base.latency_budget_ms = 10000;
  auto report = RunMultiPerf(base, {{"stub", 1}, {"missing", 1}});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->models.size(), 2u);
  const ModelPerf& stub_run = report->models[0];
  EXPECT_TRUE(stub_run.error.empty()) << stub_run.error;
  ASSERT_EQ(stub_run.report.steps.size(), 1u);
  const StepResult& s = stub_run.report.steps[0];
  EXPECT_EQ(s.load, 1) << "half of 2 connections";
  EXPECT_EQ(s.requests, 20) << "half of the request count";
  ASSERT_TRUE(s.goodput.has_value());
  EXPECT_GT(*s.goodput, 0);
  EXPECT_FALSE(report->models[1].error.empty());
  EXPECT_FALSE(report->ok());
  const std::string table = RenderMultiTable(*report);
  EXPECT_NE(table.find("stub"), std::string::npos) << table;
  EXPECT_NE(table.find("missing: did not run:"), std::string::npos) << table;
  const auto j = nlohmann::json::parse(RenderMultiJson(*report));
  EXPECT_EQ(j["models"][0]["model"], "stub");
  EXPECT_DOUBLE_EQ(j["models"][0]["share"].get<double>(), 0.5);
  EXPECT_GT(j["models"][0]["report"]["steps"][0]["goodput_per_s"].get<double>(), 0);
  EXPECT_TRUE(j["models"][1]["report"].is_null());
  EXPECT_FALSE(j["ok"].get<bool>());
}

TEST(MultiModelTest, RefusesWhatOnlyOneModelCanDo) {
  PerfOptions base;
  base.compare_model = "m.onnx";
  EXPECT_EQ(RunMultiPerf(base, {{"a", 1}, {"b", 1}}).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace ortgpu::perf
