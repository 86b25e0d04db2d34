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

// A model's step as the server reported it: `gpu` and `cpu` busy shares
// (negative: not reported), and `exec_per_s` executions of `exec_us` each.
ModelPerf Step(const std::string& name, double gpu, double cpu, double exec_per_s, double exec_us) {
  ModelPerf m;
  m.share.model = name;
  StepResult s;
  s.throughput = exec_per_s * 4;  // batches of 4 one-row requests
  if (gpu >= 0 || cpu >= 0) {
    GpuSample g;
    if (gpu >= 0) g.gpus = 1, g.utilization = gpu;
    if (cpu >= 0) g.host_cpu = cpu;
    s.gpu = g;
  }
  ServerSplit split;
  split.average_batch = 4;
  split.compute_infer_us = exec_us;
  s.server = split;
  m.report.steps.push_back(s);
  return m;
}

TEST(MultiModelTest, SaysWhetherTheGpuOrTheHostCpuLimitedAStepAndWhoHoldsTheGpu) {
  // The GPU saturated: resnet50 runs 700 ms of every second, bert 300 ms.
  auto gpu = DescribeSaturation({Step("resnet50", 0.97, 0.4, 100, 7000), Step("bert", 0.95, 0.4, 100, 3000)});
  ASSERT_EQ(gpu.size(), 1u);
  EXPECT_NE(gpu[0].find("the GPU is saturated (GPU 96% busy; host CPU 40% of every core)"), std::string::npos) << gpu[0];
  EXPECT_NE(gpu[0].find("execution time resnet50 70%, bert 30%"), std::string::npos) << gpu[0];

  // The host's CPU saturated while the GPU idles (run m3's three models).
  auto cpu = DescribeSaturation({Step("mlp", 0.3, 0.97, 2000, 20), Step("resnet50", 0.3, 0.95, 50, 4000)});
  EXPECT_NE(cpu[0].find("the host's CPU is saturated, not the GPU"), std::string::npos) << cpu[0];

  auto neither = DescribeSaturation({Step("mlp", 0.3, 0.5, 100, 20)});
  EXPECT_NE(neither[0].find("neither the GPU nor the host's CPU is saturated (GPU 30% busy; host CPU 50%"),
            std::string::npos)
      << neither[0];

  // A server that reports neither gauge: said once, not per step.
  ModelPerf blind = Step("m", -1, -1, 10, 10);
  blind.report.steps.push_back(blind.report.steps[0]);
  auto unknown = DescribeSaturation({blind});
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_NE(unknown[0].find("not known"), std::string::npos);
}

TEST(MultiModelTest, RefusesWhatOnlyOneModelCanDo) {
  PerfOptions base;
  base.compare_model = "m.onnx";
  EXPECT_EQ(RunMultiPerf(base, {{"a", 1}, {"b", 1}}).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace ortgpu::perf
