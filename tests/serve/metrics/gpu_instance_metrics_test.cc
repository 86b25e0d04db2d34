// Per-GPU execution series (issue 30): the batches, rows and run time of
// each GPU's instances, labelled by ordinal and UUID, gone with the version.
#include "serve/metrics/gpu_instance_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "serve/metrics/scheduler_metrics.h"

namespace ortgpu::serve {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(GpuInstanceMetricsTest, EachGpuCountsItsOwnExecutionsUnderItsUuid) {
  Metrics metrics;
  SchedulerMetrics observer(metrics);
  observer.SetGpuUuids({"GPU-aaaa", "GPU-bbbb"});
  ExecutionTimes t{1000, 4'000'000, 2000};
  observer.OnBatch("m", "1", 8, t, 0);
  observer.OnBatch("m", "1", 4, t, 1);
  observer.OnBatch("m", "1", 4, t, 1);
  observer.OnBatch("m", "1", 2, t, -1);  // a CPU instance: Triton's series only
  const std::string text = metrics.Serialize();
  EXPECT_THAT(text, HasSubstr(R"(nv_inference_exec_count{model="m",version="1"} 4)"));
  EXPECT_THAT(text, HasSubstr(R"(ortgpu_gpu_exec_count{gpu="0",gpu_uuid="GPU-aaaa",model="m",version="1"} 1)"));
  EXPECT_THAT(text, HasSubstr(R"(ortgpu_gpu_exec_count{gpu="1",gpu_uuid="GPU-bbbb",model="m",version="1"} 2)"));
  EXPECT_THAT(text, HasSubstr(R"(ortgpu_gpu_inference_count{gpu="1",gpu_uuid="GPU-bbbb",model="m",version="1"} 8)"));
  EXPECT_THAT(text,
              HasSubstr(R"(ortgpu_gpu_compute_infer_duration_us{gpu="0",gpu_uuid="GPU-aaaa",model="m",version="1"} 4000)"));
  EXPECT_THAT(text, Not(HasSubstr(R"(gpu="-1")")));

  observer.OnVersionUnloaded("m", "1");
  EXPECT_THAT(metrics.Serialize(), Not(HasSubstr("ortgpu_gpu_exec_count{")));
}

TEST(GpuInstanceMetricsTest, AGpuWithoutAKnownUuidHasAnEmptyLabel) {
  Metrics metrics;
  GpuInstanceMetrics gpus(metrics);
  gpus.RecordExecution("m", "2", 3, 1, ExecutionTimes{});
  EXPECT_THAT(metrics.Serialize(), HasSubstr(R"(ortgpu_gpu_exec_count{gpu="3",gpu_uuid="",model="m",version="2"} 1)"));
}

}  // namespace
}  // namespace ortgpu::serve
