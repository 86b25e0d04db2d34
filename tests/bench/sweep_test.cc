#include "bench/sweep.h"

#include <gtest/gtest.h>

#include "bench/report.h"
#include "ort/accuracy.h"

namespace ortgpu::bench {
namespace {

TEST(SweepTest, CpuDefaultSweepIsIoTimesOptWithTheDefaultFirst) {
  auto v = ExpandSweep(Provider::kCpu, {}, Variant{});
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->size(), 4u * 4u) << "host, bound, resident, served x 4 levels";
  EXPECT_TRUE(v->front().is_default);
  EXPECT_EQ(v->front().name, "default");
  int defaults = 0;
  for (const auto& x : *v) defaults += x.is_default;
  EXPECT_EQ(defaults, 1);
  for (const auto& x : *v) EXPECT_FALSE(NeedsCudaGraphOption(x.io));
}

TEST(SweepTest, CudaSubsetWithValuesAndCudaGraphSetsTheSessionOption) {
  auto v = ExpandSweep(Provider::kCuda, {"io=host|cuda-graph", "prefer_nhwc"}, Variant{});
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ASSERT_EQ(v->size(), 4u);
  bool saw_graph = false;
  for (const auto& x : *v) {
    if (x.io == IoMode::kCudaGraph) {
      saw_graph = true;
      EXPECT_EQ(x.cuda_options.at("enable_cuda_graph"), "1");
    }
  }
  EXPECT_TRUE(saw_graph);
  EXPECT_EQ((*v)[1].name, "io=cuda-graph");
  EXPECT_EQ((*v)[3].name, "io=cuda-graph prefer_nhwc=1");
}

TEST(SweepTest, BadAxesAreNamedWithTheValidOnes) {
  auto unknown = ExpandSweep(Provider::kCpu, {"threads"}, Variant{});
  EXPECT_NE(unknown.status().message().find("unknown axis 'threads'; valid: io, opt"), std::string::npos)
      << unknown.status().message();
  auto cuda_on_cpu = ExpandSweep(Provider::kCpu, {"prefer_nhwc"}, Variant{});
  EXPECT_NE(cuda_on_cpu.status().message().find("needs --provider cuda"), std::string::npos);
  auto bad_value = ExpandSweep(Provider::kCuda, {"cudnn_conv_algo_search=FAST"}, Variant{});
  EXPECT_NE(bad_value.status().message().find("valid: EXHAUSTIVE, HEURISTIC, DEFAULT"), std::string::npos);
}

TEST(SweepTest, BaseNotInTheProductIsAddedAsDefault) {
  auto v = ExpandSweep(Provider::kCpu, {"io=bound"}, Variant{});
  ASSERT_TRUE(v.ok());
  ASSERT_EQ(v->size(), 2u);
  EXPECT_TRUE((*v)[0].is_default);
  EXPECT_EQ((*v)[1].name, "io=bound");
}

// A measured result; its I/O mode is the name's "io=MODE", else served
// (what serve runs, so recommendable).
ConfigResult Result(const std::string& name, bool is_default, int64_t batch, double p50, double items, Provider p = Provider::kCuda) {
  ConfigResult r;
  r.config.variant.name = name;
  r.config.variant.io = IoMode::kServed;
  if (const auto at = name.find("io="); at != std::string::npos) {
    const std::string mode = name.substr(at + 3, name.find(' ', at) - at - 3);
    r.config.variant.io = *ParseIoMode(mode);
  }
  r.config.variant.is_default = is_default;
  r.config.provider = p;
  r.config.batch = batch;
  r.stats.count = 100;
  r.stats.p50_ms = p50;
  r.stats.items_per_s = items;
  r.stats.stable = true;
  return r;
}

// An empty report of a model with a dynamic batch axis.
BenchReport BatchingReport(const std::string& model, Provider provider) {
  BenchReport report;
  report.model = model;
  report.provider = provider;
  report.dynamic_batch = true;
  return report;
}

TEST(RecommendTest, PicksBestLatencyAtSmallestBatchAndBestThroughputAnywhereWithGains) {
  BenchReport report = BatchingReport("m.onnx", Provider::kCuda);
  report.results.push_back(Result("default", true, 1, 2.0, 500));
  report.results.push_back(Result("default", true, 32, 8.0, 4000));
  auto fast = Result("io=served prefer_nhwc=1", false, 1, 1.0, 1000);
  fast.config.variant.cuda_options["prefer_nhwc"] = "1";
  report.results.push_back(fast);
  auto wide = Result("io=served prefer_nhwc=1", false, 32, 4.0, 8000);
  wide.config.variant.cuda_options["prefer_nhwc"] = "1";
  report.results.push_back(wide);
  auto wrong = Result("io=resident", false, 32, 0.1, 99999);
  wrong.accuracy.checked = true;
  wrong.accuracy.passed = false;  // fastest but wrong: never recommended
  report.results.push_back(wrong);
  const Recommendation rec = Recommend(report);
  ASSERT_TRUE(rec.latency && rec.throughput);
  EXPECT_EQ(rec.latency->index, 2u);
  EXPECT_DOUBLE_EQ(rec.latency->gain, 2.0);
  EXPECT_EQ(rec.throughput->index, 3u);
  EXPECT_DOUBLE_EQ(rec.throughput->gain, 2.0);
  EXPECT_NE(rec.config_pbtxt.find("max_batch_size: 32"), std::string::npos) << rec.config_pbtxt;
  EXPECT_NE(rec.config_pbtxt.find("preferred_batch_size: [ 32 ]"), std::string::npos);
  EXPECT_NE(rec.config_pbtxt.find("kind: KIND_GPU"), std::string::npos);
  EXPECT_NE(rec.config_pbtxt.find("parameters { key: \"prefer_nhwc\" value: \"1\" }"), std::string::npos);
}

// serve honours CUDA graphs for dynamically batched models (padded sizes),
// so the fragment keeps the option there and leaves it out, saying why,
// for a model that does not batch.
TEST(RecommendTest, ConfigForServeKeepsCudaGraphsOnlyWhereServeCanCaptureThem) {
  BenchReport report = BatchingReport("resnet50.onnx", Provider::kCuda);
  auto graph = Result("io=served-graph prefer_nhwc=1", true, 32, 4.2, 7600);
  graph.config.variant.cuda_options = {{"enable_cuda_graph", "1"}, {"prefer_nhwc", "1"}};
  report.results.push_back(graph);
  std::string pbtxt = ConfigPbtxtFragment(report, 0);
  EXPECT_NE(pbtxt.find("key: \"enable_cuda_graph\" value: \"1\""), std::string::npos) << pbtxt;
  EXPECT_NE(pbtxt.find("key: \"prefer_nhwc\" value: \"1\""), std::string::npos);
  report.dynamic_batch = false;
  pbtxt = ConfigPbtxtFragment(report, 0);
  EXPECT_EQ(pbtxt.find("key: \"enable_cuda_graph\""), std::string::npos) << pbtxt;
  EXPECT_NE(pbtxt.find("enable_cuda_graph is left out"), std::string::npos);
}

TEST(RecommendTest, Issue9AnUnstableWinnerIsNeverRecommendedSilently) {
  BenchReport report = BatchingReport("m.onnx", Provider::kCpu);
  auto steady = Result("default", true, 1, 2.0, 500, Provider::kCpu);
  steady.stats.stable = true;
  auto jumpy = Result("opt=basic", false, 1, 1.0, 900, Provider::kCpu);
  jumpy.stats.stable = false;
  report.results = {steady, jumpy};
  Recommendation rec = Recommend(report);
  ASSERT_TRUE(rec.throughput);
  EXPECT_EQ(rec.throughput->index, 0u) << "the stable one wins";
  ASSERT_TRUE(rec.throughput->faster_unstable);
  EXPECT_EQ(*rec.throughput->faster_unstable, 1u);
  EXPECT_NE(rec.config_pbtxt.find("# opt=basic (batch 1, concurrency 1) measured faster but its timing windows "
                                  "disagreed"),
            std::string::npos)
      << rec.config_pbtxt;
  report.recommendation = rec;
  EXPECT_NE(RecommendationLines(report)[1].find("opt=basic measured faster but was unstable"), std::string::npos)
      << RecommendationLines(report)[1];

  report.results = {jumpy};  // nothing stable: picked, and said so
  rec = Recommend(report);
  ASSERT_TRUE(rec.throughput);
  EXPECT_TRUE(rec.throughput->unstable);
  EXPECT_EQ(rec.config_pbtxt.rfind("# UNSTABLE: ", 0), 0u) << rec.config_pbtxt;
  report.recommendation = rec;
  EXPECT_NE(RecommendationLines(report)[1].find("UNSTABLE"), std::string::npos);
}

TEST(RecommendTest, Issue9TheFragmentKeepsTheModelsBatchingAndServesGraphLevel) {
  BenchReport report = BatchingReport("m.onnx", Provider::kCpu);
  auto basic = Result("opt=basic", false, 1, 1.0, 900, Provider::kCpu);
  basic.config.variant.optimization = OptimizationLevel::kBasic;
  report.results = {basic};
  std::string pbtxt = ConfigPbtxtFragment(report, 0);
  EXPECT_NE(pbtxt.find("max_batch_size: 4\n"), std::string::npos) << pbtxt;
  EXPECT_NE(pbtxt.find("graph { level: -1 }"), std::string::npos) << pbtxt;
  report.results[0].config.variant.optimization = OptimizationLevel::kDisable;
  EXPECT_NE(ConfigPbtxtFragment(report, 0).find("graph { level: 2 }"), std::string::npos);
  report.dynamic_batch = false;
  EXPECT_NE(ConfigPbtxtFragment(report, 0).find("max_batch_size: 0\n"), std::string::npos);
}

// Issue 25: io=resident (inputs already on the GPU, no copies timed)
// measured fastest, but serve copies every request in and out, so its
// figure cannot be reproduced by serving the fragment.
TEST(RecommendTest, Issue25ResidentFastestIsNotRecommendedAndTheReportSaysWhy) {
  BenchReport report = BatchingReport("resnet50.onnx", Provider::kCuda);
  report.results.push_back(Result("default", true, 32, 8.2, 3870));
  report.results.back().config.variant.io = IoMode::kHost;
  auto resident = Result("io=resident prefer_nhwc=1", false, 32, 4.0, 8000);
  resident.config.variant.cuda_options["prefer_nhwc"] = "1";
  report.results.push_back(resident);
  auto graph = Result("io=served-graph prefer_nhwc=1", false, 32, 4.4, 7300);
  graph.config.variant.cuda_options = {{"enable_cuda_graph", "1"}, {"prefer_nhwc", "1"}};
  report.results.push_back(graph);
  report.results.push_back(Result("io=served", false, 32, 6.0, 5300));

  const Recommendation rec = Recommend(report);
  ASSERT_TRUE(rec.throughput && rec.latency);
  EXPECT_EQ(rec.throughput->index, 2u) << "the fastest configuration serve runs";
  EXPECT_EQ(rec.latency->index, 2u);
  ASSERT_TRUE(rec.throughput->faster_not_served);
  EXPECT_EQ(*rec.throughput->faster_not_served, 1u);
  EXPECT_DOUBLE_EQ(rec.throughput->gain, 7300.0 / 3870.0);
  // The fragment: serve's graph path, and a line on the passed-over one.
  EXPECT_NE(rec.config_pbtxt.find("# io=resident prefer_nhwc=1 (batch 32, concurrency 1) measured 8000.0 items/s but is "
                                  "not what `ortgpu serve` runs (serve copies each request's inputs in and outputs "
                                  "out, io=resident times no copies)"),
            std::string::npos)
      << rec.config_pbtxt;
  EXPECT_NE(rec.config_pbtxt.find("I/O mode served-graph: serve's CUDA-graph path"), std::string::npos) << rec.config_pbtxt;
  EXPECT_NE(rec.config_pbtxt.find("key: \"enable_cuda_graph\" value: \"1\""), std::string::npos);
  EXPECT_EQ(rec.config_pbtxt.find("io=resident prefer_nhwc=1;"), std::string::npos) << "never the settings line";

  report.recommendation = rec;
  const auto lines = RecommendationLines(report);
  EXPECT_EQ(lines[1].rfind("best throughput: io=served-graph prefer_nhwc=1 at batch 32", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find("io=resident prefer_nhwc=1 at batch 32, concurrency 1 measured 8000.0 items/s but is not "
                          "recommended: serve copies"),
            std::string::npos)
      << lines[1];
  const std::string table = RenderTable(report);
  EXPECT_NE(table.find("ok (reference: not servable)"), std::string::npos) << table;
  const std::string json = RenderJson(report);
  EXPECT_NE(json.find("\"faster_not_servable\": 1"), std::string::npos) << json;
  EXPECT_NE(json.find("\"servable\": false"), std::string::npos);
  EXPECT_NE(json.find("\"not_servable_because\": \"serve copies each request's inputs in and outputs out"),
            std::string::npos);
  const std::string html = RenderHtml(report);
  EXPECT_NE(html.find("not servable: serve copies each request&#39;s inputs in"), std::string::npos) << "pick column";
}

TEST(RecommendTest, Issue25OnlyReferenceModesMeasuredMeansNoPickAndSaysWhatToAdd) {
  BenchReport report;
  report.provider = Provider::kCuda;
  report.results.push_back(Result("default", true, 1, 2.0, 500));
  report.results.back().config.variant.io = IoMode::kHost;
  report.results.push_back(Result("io=resident", false, 1, 1.0, 1000));
  report.recommendation = Recommend(report);
  EXPECT_FALSE(report.recommendation->throughput);
  EXPECT_TRUE(report.recommendation->config_pbtxt.empty()) << "no fragment serve could not reproduce";
  EXPECT_NE(RecommendationLines(report)[1].find("add io=served or io=served-graph to --sweep-axes"), std::string::npos)
      << RecommendationLines(report)[1];
}

TEST(RecommendTest, NothingUsableMeansNoPick) {
  BenchReport report;
  auto failed = Result("default", true, 1, 1, 1);
  failed.error = Unavailable("no GPU");
  report.results.push_back(failed);
  const Recommendation rec = Recommend(report);
  EXPECT_FALSE(rec.latency);
  EXPECT_FALSE(rec.throughput);
}

}  // namespace
}  // namespace ortgpu::bench

namespace ortgpu::bench {
namespace {

TEST(PrecisionSweepTest, Issue26PrecisionAxisOnTheCpuMakesTf32Fp32AndOnCudaFp32TurnsTf32Off) {
  Variant cpu_base;
  cpu_base.precision = Precision::kFp32;
  auto cpu = ExpandSweep(Provider::kCpu, {"precision=tf32|fp32|fp16"}, cpu_base);
  ASSERT_TRUE(cpu.ok()) << cpu.status().ToString();
  ASSERT_EQ(cpu->size(), 2u) << "tf32 and fp32 are one variant on the CPU";
  EXPECT_EQ((*cpu)[0].name, "default");
  EXPECT_EQ((*cpu)[0].precision, Precision::kFp32);
  EXPECT_EQ((*cpu)[1].name, "precision=fp16");
  EXPECT_TRUE((*cpu)[1].cuda_options.empty());

  auto cuda = ExpandSweep(Provider::kCuda, {"io=served"}, Variant{}, {"precision=tf32|fp32|mixed"});
  ASSERT_TRUE(cuda.ok()) << cuda.status().ToString();
  ASSERT_EQ(cuda->size(), 4u) << "the default (host), then io=served at three precisions";
  EXPECT_EQ((*cuda)[2].name, "io=served precision=fp32");
  EXPECT_EQ((*cuda)[2].cuda_options.at("use_tf32"), "0");
  EXPECT_EQ((*cuda)[3].precision, Precision::kMixed);
  EXPECT_EQ((*cuda)[3].cuda_options.count("use_tf32"), 0u);
}

TEST(PrecisionSweepTest, Issue26PrecisionWithUseTf32OrTwiceIsRefusedSayingWhy) {
  auto both = ExpandSweep(Provider::kCuda, {"use_tf32", "precision"}, Variant{});
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("sweep one of them"), std::string::npos) << both.status().message();
  auto twice = ExpandSweep(Provider::kCpu, {"precision=fp16"}, Variant{}, {"precision=fp32"});
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("given twice"), std::string::npos);
  auto bad = ExpandSweep(Provider::kCpu, {"precision=fp8"}, Variant{});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("tf32, fp32, fp16, mixed"), std::string::npos) << bad.status().message();
}

// A result at `precision` judged against fp32.
ConfigResult AtPrecision(const std::string& name, bool is_default, Precision precision, double items, double cosine,
                         bool within) {
  ConfigResult r = Result(name, is_default, 8, 1000 * 8 / items, items);
  r.config.variant.precision = precision;
  r.precision_accuracy.checked = true;
  r.precision_accuracy.reference = precision == Precision::kFp32;
  r.precision_accuracy.min_cosine = cosine;
  r.precision_accuracy.top1_agreement = 1.0;
  r.precision_accuracy.within_budget = within;
  if (!within) r.precision_accuracy.violations = {"output 'y': row cosine 0.910000 < 0.999"};
  return r;
}

TEST(PrecisionRecommendTest, Issue26LowerPrecisionIsPickedWithinTheBudgetAndSaysWhatItTraded) {
  BenchReport report = BatchingReport("resnet50.onnx", Provider::kCuda);
  report.precision_budget = "row cosine >= 0.999";
  report.results.push_back(AtPrecision("default", true, Precision::kTf32, 1000, 0.99999, true));
  report.results.push_back(AtPrecision("precision=fp16", false, Precision::kFp16, 1430, 0.99991, true));
  const Recommendation rec = Recommend(report);
  ASSERT_TRUE(rec.throughput);
  EXPECT_EQ(rec.throughput->index, 1u);
  EXPECT_EQ(rec.throughput->traded, "fp16: 1.43x the tf32 throughput, min cosine 0.99991, max rel error 0, top-1 100%");
  EXPECT_NE(rec.config_pbtxt.find("parameters { key: \"precision\" value: { string_value: \"fp16\" } }"), std::string::npos)
      << rec.config_pbtxt;
  EXPECT_NE(rec.config_pbtxt.find("# precision fp16: 1.43x the tf32 throughput"), std::string::npos) << rec.config_pbtxt;
  report.recommendation = rec;
  const std::string table = RenderTable(report);
  EXPECT_NE(table.find("best throughput: precision=fp16 at batch 8, concurrency 1: 1430.0 items/s (1.43x the default; "
                       "fp16: 1.43x the tf32 throughput"),
            std::string::npos)
      << table;
}

TEST(PrecisionRecommendTest, Issue26OutsideTheBudgetOrUnjudgedIsNeverPickedAndTheFragmentSaysSo) {
  BenchReport report = BatchingReport("m.onnx", Provider::kCuda);
  report.results.push_back(AtPrecision("default", true, Precision::kTf32, 1000, 0.99999, true));
  report.results.push_back(AtPrecision("precision=fp16", false, Precision::kFp16, 1900, 0.91, false));
  ConfigResult unjudged = Result("precision=mixed", false, 8, 1, 8000);
  unjudged.config.variant.precision = Precision::kMixed;
  unjudged.precision_accuracy.note = "--no-check";
  report.results.push_back(unjudged);
  const Recommendation rec = Recommend(report);
  ASSERT_TRUE(rec.throughput);
  EXPECT_EQ(rec.throughput->index, 0u) << "tf32, the only precision within the budget and judged";
  EXPECT_EQ(rec.throughput->traded, "");
  EXPECT_EQ(rec.throughput->faster_outside_budget, std::optional<size_t>(2)) << "mixed, the fastest, was not judged";
  EXPECT_NE(rec.config_pbtxt.find("precision=mixed (batch 8, concurrency 1) measured 8000.0 items/s but is not "
                                  "recommended: its accuracy against fp32 was not judged"),
            std::string::npos)
      << rec.config_pbtxt;
  EXPECT_EQ(rec.config_pbtxt.find("key: \"precision\""), std::string::npos);
}

TEST(PrecisionRecommendTest, Issue26Fp32IsTheCudaOptionUseTf32Off) {
  BenchReport report = BatchingReport("m.onnx", Provider::kCuda);
  ConfigResult fp32 = AtPrecision("default", true, Precision::kFp32, 1000, 1, true);
  fp32.config.variant.cuda_options["use_tf32"] = "0";
  report.results.push_back(fp32);
  const std::string pbtxt = ConfigPbtxtFragment(report, 0);
  EXPECT_NE(pbtxt.find("parameters { key: \"use_tf32\" value: \"0\" }"), std::string::npos) << pbtxt;
  EXPECT_NE(pbtxt.find("# precision fp32: TF32 off"), std::string::npos);
  EXPECT_EQ(pbtxt.find("key: \"precision\""), std::string::npos);
}

}  // namespace
}  // namespace ortgpu::bench
