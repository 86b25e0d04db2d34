// Server-side figures: the statistics delta and split, and the Prometheus parse.
#include "perf/server_stats.h"

#include <gtest/gtest.h>

namespace ortgpu::perf {
namespace {

std::string Stats(int64_t n, int64_t request_ns, int64_t queue_ns, int64_t infer_ns, int64_t executions) {
  return R"({"model_stats":[{"name":"m","version":"1","inference_count":)" + std::to_string(n) + R"(,"execution_count":)" +
         std::to_string(executions) + R"(,"inference_stats":{"success":{"count":)" + std::to_string(n) + R"(,"ns":)" +
         std::to_string(request_ns) + R"(},"fail":{"count":0,"ns":0},"queue":{"count":)" + std::to_string(n) + R"(,"ns":)" +
         std::to_string(queue_ns) + R"(},"compute_input":{"count":)" + std::to_string(n) + R"(,"ns":)" + std::to_string(n * 1000) +
         R"(},"compute_infer":{"count":)" + std::to_string(n) + R"(,"ns":)" + std::to_string(infer_ns) +
         R"(},"compute_output":{"count":)" + std::to_string(n) + R"(,"ns":)" + std::to_string(n * 2000) + "}}}]}";
}

TEST(ServerStats, SplitIsPerRequestOverTheDelta) {
  auto before = ParseModelStatistics(Stats(100, 100'000'000, 20'000'000, 50'000'000, 50), "m", "");
  auto after = ParseModelStatistics(Stats(300, 400'000'000, 80'000'000, 150'000'000, 100), "m", "");
  ASSERT_TRUE(before.ok() && after.ok());
  auto split = ComputeSplit(*after - *before);
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(split->requests, 200);
  EXPECT_DOUBLE_EQ(split->request_us, 1500);  // 300 ms / 200
  EXPECT_DOUBLE_EQ(split->queue_us, 300);
  EXPECT_DOUBLE_EQ(split->compute_input_us, 1);
  EXPECT_DOUBLE_EQ(split->compute_infer_us, 500);
  EXPECT_DOUBLE_EQ(split->compute_output_us, 2);
  EXPECT_DOUBLE_EQ(split->overhead_us, 1500 - 300 - 1 - 500 - 2);
  EXPECT_DOUBLE_EQ(split->average_batch, 4);  // 200 inferences in 50 executions
}

TEST(ServerStats, NoSuccessMeansNoSplit) { EXPECT_FALSE(ComputeSplit(InferenceCounters{}).has_value()); }

TEST(ServerStats, VersionsAreSummedUnlessOneIsAskedFor) {
  const std::string two = R"({"model_stats":[
      {"name":"m","version":"1","inference_stats":{"success":{"count":2,"ns":20}}},
      {"name":"m","version":"2","inference_stats":{"success":{"count":3,"ns":30}}},
      {"name":"other","version":"1","inference_stats":{"success":{"count":100,"ns":1}}}]})";
  auto all = ParseModelStatistics(two, "m", "");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->success.count, 5);
  auto v2 = ParseModelStatistics(two, "m", "2");
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ(v2->success.ns, 30);
  EXPECT_EQ(ParseModelStatistics(two, "absent", "").status().code(), Code::kNotFound);
  EXPECT_EQ(ParseModelStatistics("<html>404</html>", "m", "").status().code(), Code::kInvalidArgument);
}

TEST(Prometheus, ParsesLabelsValuesAndSkipsComments) {
  const auto samples = ParsePrometheusText(
      "# HELP nv_gpu_utilization GPU utilization rate [0.0 - 1.0)\n"
      "# TYPE nv_gpu_utilization gauge\n"
      "nv_gpu_utilization{gpu_uuid=\"GPU-a\"} 0.5\n"
      "nv_gpu_utilization{gpu_uuid=\"GPU-b\"} 1\n"
      "nv_gpu_memory_used_bytes{gpu_uuid=\"GPU-a\"} 1.5e9 1700000000000\n"
      "nv_gpu_memory_used_bytes{gpu_uuid=\"GPU-b\"} 500000000\n"
      "nv_inference_count{model=\"a \\\"quoted\\\" name\",version=\"1\"} 42\n"
      "bare_metric 7\n"
      "broken{label=\"unterminated} 1\n");
  ASSERT_EQ(samples.size(), 6u);
  EXPECT_EQ(samples[0].labels.at("gpu_uuid"), "GPU-a");
  EXPECT_EQ(samples[4].labels.at("model"), "a \"quoted\" name");
  EXPECT_EQ(samples[4].labels.at("version"), "1");
  EXPECT_DOUBLE_EQ(samples[4].value, 42);
  EXPECT_EQ(samples[5].name, "bare_metric");
  auto gpu = GpuFromMetrics(samples);
  ASSERT_TRUE(gpu.has_value());
  EXPECT_EQ(gpu->gpus, 2);
  EXPECT_DOUBLE_EQ(gpu->utilization, 0.75);
  EXPECT_DOUBLE_EQ(gpu->memory_used_bytes, 2e9);
  // Issue 30: each GPU's own figures, by UUID.
  ASSERT_EQ(gpu->devices.size(), 2u);
  EXPECT_EQ(gpu->devices[0].uuid, "GPU-a");
  EXPECT_DOUBLE_EQ(gpu->devices[0].utilization, 0.5);
  EXPECT_DOUBLE_EQ(gpu->devices[0].memory_used_bytes, 1.5e9);
  EXPECT_EQ(gpu->devices[1].uuid, "GPU-b");
  EXPECT_DOUBLE_EQ(gpu->devices[1].memory_used_bytes, 5e8);
  EXPECT_FALSE(gpu->host_cpu.has_value());
}

TEST(Prometheus, TheHostCpuGaugeComesWithTheGpusOrAlone) {
  auto both = GpuFromMetrics(ParsePrometheusText("nv_gpu_utilization{gpu_uuid=\"GPU-a\"} 0.5\nnv_cpu_utilization 0.25\n"));
  ASSERT_TRUE(both.has_value());
  EXPECT_EQ(both->gpus, 1);
  ASSERT_TRUE(both->host_cpu.has_value());
  EXPECT_DOUBLE_EQ(*both->host_cpu, 0.25);
  // A CPU-only server: no GPU, the host's CPU still read.
  auto cpu_only = GpuFromMetrics(ParsePrometheusText("nv_cpu_utilization 0.75\nnv_cpu_memory_used_bytes 1e9\n"));
  ASSERT_TRUE(cpu_only.has_value());
  EXPECT_EQ(cpu_only->gpus, 0);
  EXPECT_DOUBLE_EQ(*cpu_only->host_cpu, 0.75);
  EXPECT_FALSE(GpuFromMetrics(ParsePrometheusText("bare_metric 7\n")).has_value());
  // Windows folded: averaged.
  GpuSample a = *both;
  GpuSample later = *both;
  later.host_cpu = 0.75;
  MergeGpuSample(a, later);
  EXPECT_DOUBLE_EQ(*a.host_cpu, 0.5);
}

GpuSample TwoGpus(double util_a, double util_b, double mem_a, double mem_b) {
  return *GpuFromMetrics(ParsePrometheusText(
      "nv_gpu_utilization{gpu_uuid=\"GPU-5f1c2d3e-aaaa\"} " + std::to_string(util_a) +
      "\nnv_gpu_utilization{gpu_uuid=\"GPU-9a8b7c6d-bbbb\"} " + std::to_string(util_b) +
      "\nnv_gpu_memory_used_bytes{gpu_uuid=\"GPU-5f1c2d3e-aaaa\"} " + std::to_string(mem_a) +
      "\nnv_gpu_memory_used_bytes{gpu_uuid=\"GPU-9a8b7c6d-bbbb\"} " + std::to_string(mem_b) + "\n"));
}

TEST(Prometheus, WindowsMergePerGpuUtilisationAveragedMemoryAtItsHighest) {
  GpuSample a = TwoGpus(0.9, 0.2, 4e9, 1e9);
  MergeGpuSample(a, TwoGpus(0.7, 0.4, 3e9, 2e9));
  EXPECT_DOUBLE_EQ(a.utilization, 0.55);
  ASSERT_EQ(a.devices.size(), 2u);
  EXPECT_DOUBLE_EQ(a.devices[0].utilization, 0.8);
  EXPECT_DOUBLE_EQ(a.devices[1].utilization, 0.3);
  EXPECT_DOUBLE_EQ(a.devices[0].memory_used_bytes, 4e9);
  EXPECT_DOUBLE_EQ(a.devices[1].memory_used_bytes, 2e9);
}

TEST(Prometheus, OneBusyGpuBesideAnIdleOneIsNamed) {
  EXPECT_EQ(DescribeGpuImbalance(TwoGpus(0.95, 0.31, 1, 1)),
            "GPU-5f1c2d3e.. at 95% while GPU-9a8b7c6d.. at 31%: the load is not spread over the GPUs "
            "(instance_group gpus, or another process on the busy one)");
  EXPECT_EQ(DescribeGpuImbalance(TwoGpus(0.95, 0.80, 1, 1)), "");  // both busy
  EXPECT_EQ(DescribeGpuImbalance(TwoGpus(0.40, 0.05, 1, 1)), "");  // neither is busy
}

TEST(Prometheus, NoGpuSeriesMeansNoGpuSample) {
  EXPECT_FALSE(GpuFromMetrics(ParsePrometheusText("nv_inference_count{model=\"m\"} 3\n")).has_value());
}

}  // namespace
}  // namespace ortgpu::perf
