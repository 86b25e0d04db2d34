#include "bench/benchmark.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>

#include "bench/memory_report.h"
#include "bench/report.h"
#include "fusion/bert_layer_model.h"
#include "fusion/fusion.h"
#include "onnx/model_builder.h"
#include "ort/session.h"

namespace ortgpu::bench {
namespace {

BenchOptions Builtin() {
  BenchOptions o;
  o.model_path = "builtin.onnx";
  o.model_bytes = onnx::BuiltinCheckModel();
  o.session.intra_op_threads = 1;
  o.load.iterations = 15;
  o.load.warmup = 2;
  return o;
}

// ids [batch, 4] int64 -> Gather from a 50-row table -> [batch, 4, 8] float.
std::string GatherModel() {
  onnx::ModelBuilder b;
  b.AddInput("ids", DataType::kInt64, {-1, 4}, {"batch", ""});
  b.AddFloatInitializer("table", {50, 8}, 1.0f, 7);
  b.AddNode("Gather", {"table", "ids"}, {"y"}, {{"axis", 0}});
  b.AddOutput("y", DataType::kFloat, {-1, 4, 8}, {"batch", "", ""});
  return b.Serialize();
}

TEST(BenchmarkTest, MeasuresEveryBatchAndConcurrencyAndMatchesTheCpuReference) {
  BenchOptions o = Builtin();
  o.batches = {1, 2};
  o.concurrency = {1, 2};
  o.concurrency_mode = ConcurrencyMode::kSessionPerWorker;
  auto report = RunBenchmark(o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->results.size(), 4u);
  EXPECT_TRUE(report->ok());
  EXPECT_TRUE(report->dynamic_batch);
  for (const auto& r : report->results) {
    ASSERT_TRUE(r.error.ok()) << r.error.ToString();
    EXPECT_EQ(r.stats.count, 15);
    EXPECT_EQ(r.samples_ms.size(), 15u);
    EXPECT_GT(r.stats.p50_ms, 0);
    EXPECT_GT(r.stats.items_per_s, 0);
    EXPECT_GT(r.session_create_ms, 0);
    EXPECT_GT(r.first_run_ms, 0);
    EXPECT_GT(r.peak_rss_mb, 0);
    EXPECT_TRUE(r.accuracy.checked);
    EXPECT_TRUE(r.accuracy.passed) << r.accuracy.note;
    EXPECT_EQ(r.accuracy.max_abs_error, 0);  // same provider, same inputs
    EXPECT_FALSE(r.gpu_memory_mb.has_value());
  }
  EXPECT_EQ(report->results[3].config.batch, 2);
  EXPECT_EQ(report->results[3].config.concurrency, 2);
}

// Issue 27: bench --memory on the CPU provider.
TEST(BenchmarkTest, MemoryOnTheCpuProviderItSaysDeviceMemoryIsNotMeasuredInsteadOfPrintingZeros) {
  BenchOptions o = Builtin();
  o.batches = {4, 1, 2};
  o.memory = true;
  auto report = RunBenchmark(o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->memory.size(), 1u);
  const MemoryTable& t = report->memory[0];
  EXPECT_FALSE(t.device);
  EXPECT_EQ(t.source, "host arena");
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows[0].batch, 1) << "--memory runs the batch sizes in ascending order";
  EXPECT_EQ(t.rows[2].batch, 4);
  for (const auto& row : t.rows) {
    ASSERT_TRUE(row.measured.has_value());
    EXPECT_GT(*row.measured, 0u) << "the host arena, not a zero";
    EXPECT_TRUE(row.predicted.has_value());
  }
  ASSERT_TRUE(t.fit.has_value());
  EXPECT_TRUE(t.fit->check_batch.has_value()) << "three sizes: the middle one checks the line";
  const std::string text = RenderTable(*report);
  EXPECT_NE(text.find("host arena (the CPU provider; device memory not measured)"), std::string::npos) << text;
}

TEST(BenchmarkTest, BoundAndResidentIoBindCpuMemoryWithTheCpuProvider) {
  for (IoMode io : {IoMode::kBound, IoMode::kResident}) {
    BenchOptions o = Builtin();
    o.io = io;
    auto report = RunBenchmark(o);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    EXPECT_EQ(report->results[0].memory, "cpu");
    EXPECT_TRUE(report->results[0].accuracy.passed);
  }
}

TEST(BenchmarkTest, CudaGraphWithTheCpuProviderIsOneClearError) {
  BenchOptions o = Builtin();
  o.io = IoMode::kCudaGraph;
  auto report = RunBenchmark(o);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("needs --provider cuda"), std::string::npos) << report.status().message();
}

// Issue 25: every runner bench made for a batch size took the graph id of
// that batch size, so the runners of the next concurrency (and every worker
// of a shared session) replayed a graph another runner had captured, on
// that runner's (freed) buffers. Each runner of a session now has its own.
TEST(BenchPlanTest, Issue25EveryRunnerOfASessionHasItsOwnCudaGraphId) {
  for (ConcurrencyMode mode : {ConcurrencyMode::kSharedSession, ConcurrencyMode::kSessionPerWorker}) {
    const auto plan = PlanRunners({32, 128}, {1, 2}, mode);
    ASSERT_EQ(plan.size(), 6u);
    std::set<std::pair<size_t, int>> seen;
    for (const auto& p : plan) {
      EXPECT_GE(p.graph_id, 1) << "0 is ORT's default annotation, -1 turns graphs off";
      EXPECT_TRUE(seen.insert({p.session, p.graph_id}).second)
          << "graph id " << p.graph_id << " twice on session " << p.session << " (batch " << p.batch << ")";
      EXPECT_EQ(p.session, mode == ConcurrencyMode::kSessionPerWorker ? static_cast<size_t>(p.worker) : 0u);
    }
    EXPECT_EQ(plan[3].batch, 128);
    EXPECT_EQ(plan[5].concurrency, 2);
    EXPECT_EQ(plan[5].worker, 1);
  }
}

TEST(BenchmarkTest, Issue25CudaGraphsOnOneSharedSessionFromTwoThreadsAreRefusedClearly) {
  BenchOptions o = Builtin();
  o.io = IoMode::kCudaGraph;
  o.batches = {1, 2};
  o.concurrency = {2};
  auto report = RunBenchmark(o);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().message().rfind("default batch 1 concurrency 2: ", 0), 0u)
      << "among several configurations the failing one is named: " << report.status().message();
  EXPECT_NE(report.status().message().find("I/O mode cuda-graph at concurrency 2 needs --concurrency-mode per-worker"),
            std::string::npos)
      << report.status().message();
}

TEST(BenchmarkTest, ServedIoStagesTheInputsAsServeDoes) {
  BenchOptions o = Builtin();
  o.io = IoMode::kServed;
  o.batches = {1, 3};
  o.concurrency = {1, 2};
  auto report = RunBenchmark(o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->results.size(), 4u);
  for (const auto& r : report->results) {
    ASSERT_TRUE(r.error.ok()) << r.error.ToString();
    EXPECT_EQ(r.memory, "host");
    EXPECT_TRUE(r.accuracy.passed) << r.accuracy.note;
  }
}

TEST(BenchmarkTest, RequestRowsMeasureAServedShapedRunThatStillMatchesTheCpu) {
  BenchOptions o = Builtin();
  o.io = IoMode::kServed;
  o.request_rows = 1;  // each batch of 3 joined from three one-row requests, as perf's requests are
  o.batches = {3};
  o.concurrency = {1, 2};
  auto report = RunBenchmark(o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->results.size(), 2u);
  for (const auto& r : report->results) {
    ASSERT_TRUE(r.error.ok()) << r.error.ToString();
    EXPECT_TRUE(r.accuracy.passed) << r.accuracy.note;
  }
  bool said = false;
  for (const auto& n : report->notes) said = said || n.find("served-shaped: each batch joined from requests of 1 row") != std::string::npos;
  EXPECT_TRUE(said) << "the report says what was measured";
}

TEST(BenchmarkTest, IntRangeKeepsGatherIndicesValid) {
  BenchOptions o = Builtin();
  o.model_bytes = GatherModel();
  o.batches = {3};
  ASSERT_TRUE(ParseIntRangeFlag("ids:0:50", o.inputs).ok());
  auto report = RunBenchmark(o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->ok());
  ASSERT_TRUE(ParseIntRangeFlag("ids:0:30000", o.inputs).ok());
  auto out_of_range = RunBenchmark(o);
  ASSERT_FALSE(out_of_range.ok());  // ORT refuses the index: one error, no crash
  EXPECT_NE(out_of_range.status().message().find("reference"), std::string::npos) << out_of_range.status().message();
}

TEST(BenchmarkTest, BadInputsAreClearErrors) {
  BenchOptions missing = Builtin();
  missing.model_bytes.clear();
  missing.model_path = "/nonexistent/model.onnx";
  auto r1 = RunBenchmark(missing);
  ASSERT_FALSE(r1.ok());
  EXPECT_NE(r1.status().message().find("/nonexistent/model.onnx"), std::string::npos);

  BenchOptions corrupt = Builtin();
  corrupt.model_bytes = "garbage";
  EXPECT_FALSE(RunBenchmark(corrupt).ok());

  BenchOptions shape = Builtin();
  ASSERT_TRUE(ParseShapeFlag("image:1x3x32x32", shape.inputs).ok());
  auto r3 = RunBenchmark(shape);
  ASSERT_FALSE(r3.ok());
  EXPECT_EQ(r3.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r3.status().message().find("fixed at 64"), std::string::npos) << r3.status().message();

  BenchOptions cuda = Builtin();
  cuda.session.provider = Provider::kCuda;
  cuda.session.cuda_options["prefer_nchw"] = "1";
  auto r4 = RunBenchmark(cuda);
  ASSERT_FALSE(r4.ok());
  EXPECT_NE(r4.status().message().find("valid: device_id"), std::string::npos);

  BenchOptions conc = Builtin();
  conc.concurrency = {0};
  EXPECT_EQ(RunBenchmark(conc).status().code(), Code::kInvalidArgument);
}

TEST(BenchmarkTest, FixedBatchModelRefusesOtherBatchSizes) {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {2, 4});
  b.AddNode("Relu", {"x"}, {"y"});
  b.AddOutput("y", DataType::kFloat, {2, 4});
  BenchOptions o = Builtin();
  o.model_bytes = b.Serialize();
  o.batches = {8};
  auto r = RunBenchmark(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("fixed at 2"), std::string::npos) << r.status().message();
  o.batches = {};
  auto fixed = RunBenchmark(o);
  ASSERT_TRUE(fixed.ok()) << fixed.status().ToString();
  EXPECT_EQ(fixed->results[0].config.batch, 2);
}

TEST(BenchmarkTest, AModelTheCpuProviderCannotRunGoesUncheckedOnAGpuProviderAndFailsOnTheCpu) {
  auto m = fusion::test_models::BertLayer();
  ASSERT_TRUE(fusion::FuseForCuda(m).any());  // packed QKV: ORT's CPU provider has no kernel for it
  BenchOptions o = Builtin();
  o.model_bytes = m.SerializeAsString();
  ASSERT_TRUE(ParseShapeFlag("seq:4", o.inputs).ok());
  o.load.iterations = 2;
  auto cpu = RunBenchmark(o);
  ASSERT_FALSE(cpu.ok()) << "on the CPU provider the model cannot be measured at all";
  EXPECT_NE(cpu.status().message().find("computing the CPU reference"), std::string::npos) << cpu.status().message();
  o.session.provider = Provider::kCuda;
  auto gpu = RunBenchmark(o);
  if (gpu.ok()) {
    bool noted = false;
    for (const auto& n : gpu->notes) noted |= n.find("not checked against the CPU provider") != std::string::npos;
    EXPECT_TRUE(noted);
    return;
  }
  // No GPU here: what fails is the CUDA session, after the reference was skipped.
  EXPECT_EQ(gpu.status().code(), Code::kUnavailable) << gpu.status().ToString();
  EXPECT_EQ(gpu.status().message().find("CPU reference"), std::string::npos) << gpu.status().message();
}

TEST(BenchmarkTest, CpuWithoutCudaLibrariesFailsToCreateTheCudaSessionClearly) {
  BenchOptions o = Builtin();
  o.session.provider = Provider::kCuda;
  auto r = RunBenchmark(o);
  if (r.ok()) GTEST_SKIP() << "this machine runs the CUDA provider";
  EXPECT_EQ(r.status().code(), Code::kUnavailable) << r.status().ToString();
}

TEST(BenchmarkTest, SweepOnTheCpuRecommendsAndWritesAConfigFragment) {
  BenchOptions o = Builtin();
  o.sweep = true;
  o.sweep_axes = {"io=host|served", "opt=all|basic"};
  o.batches = {1, 2};
  o.load.iterations = 6;
  std::vector<std::string> seen;
  BenchHooks hooks;
  hooks.on_config = [&seen](const std::string& label, size_t, size_t) { seen.push_back(label); };
  auto report = RunBenchmark(o, hooks);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->results.size(), 4u * 2u);
  EXPECT_EQ(seen.size(), 8u);
  ASSERT_TRUE(report->recommendation.has_value());
  ASSERT_TRUE(report->recommendation->latency && report->recommendation->throughput);
  EXPECT_EQ(report->results[report->recommendation->latency->index].config.batch, 1);
  EXPECT_TRUE(report->recommendation->latency->has_baseline);
  const std::string& pbtxt = report->recommendation->config_pbtxt;
  EXPECT_NE(pbtxt.find("kind: KIND_CPU"), std::string::npos) << pbtxt;
  // The model batches: the fragment keeps at least the batching serve would complete (4).
  EXPECT_NE(pbtxt.find("max_batch_size: 4"), std::string::npos) << pbtxt;
  const std::string table = RenderTable(*report);
  EXPECT_NE(table.find("best throughput:"), std::string::npos) << table;
  EXPECT_NE(table.find("config.pbtxt fragment"), std::string::npos);
}

TEST(BenchmarkTest, DurationBoundRunStopsOnTime) {
  BenchOptions o = Builtin();
  o.load.duration_s = 0.2;
  const auto start = std::chrono::steady_clock::now();
  auto report = RunBenchmark(o);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_GE(report->results[0].wall_s, 0.2);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  EXPECT_GT(report->results[0].stats.count, 1);
}

// Bench's own overhead, not a pass/fail timing test: run with
// --gtest_also_run_disabled_tests to print bench's p50 beside a bare loop's.
TEST(BenchmarkTest, DISABLED_OverheadAgainstABareSessionRunLoop) {
  onnx::ModelBuilder b;
  b.AddInput("x", DataType::kFloat, {1, 16});
  b.AddFloatInitializer("w", {16, 16}, 0.5f, 3);
  b.AddNode("MatMul", {"x", "w"}, {"y"});
  b.AddOutput("y", DataType::kFloat, {1, 16});
  const std::string model = b.Serialize();
  SessionOptions so;
  so.intra_op_threads = 1;
  auto session = Session::LoadFromBytes(model, so, "tiny");
  ASSERT_TRUE(session.ok());
  const std::vector<Tensor> in = {Tensor::Zeros("x", DataType::kFloat, {1, 16})};
  const int n = 20000;
  for (int round = 0; round < 3; ++round) {
    std::vector<double> bare;
    for (int i = 0; i < 1000; ++i) (void)(*session)->Run(in);
    for (int i = 0; i < n; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      auto out = (*session)->Run(in);
      bare.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    const LatencyStats bare_stats = ComputeStatistics(bare, 1, 1);
    BenchOptions o;
    o.model_path = "tiny";
    o.model_bytes = model;
    o.session = so;
    o.load.iterations = n;
    o.load.warmup = 1000;
    o.check_accuracy = false;
    auto report = RunBenchmark(o);
    ASSERT_TRUE(report.ok());
    const double bench_p50 = report->results[0].stats.p50_ms;
    std::printf("round %d: bare loop p50 %.5f ms, bench p50 %.5f ms, ratio %.4f\n", round, bare_stats.p50_ms, bench_p50,
                bench_p50 / bare_stats.p50_ms);
  }
}

}  // namespace
}  // namespace ortgpu::bench
