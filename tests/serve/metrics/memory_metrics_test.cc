// The memory plan's gauges (issue 27): what a loaded version holds by kind,
// replaced by a reload and removed by an unload, and the unload's record,
// which stays.
#include "serve/metrics/memory_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "serve/metrics/scheduler_metrics.h"

namespace ortgpu::serve {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

MemoryFigures Figures(uint64_t total, std::optional<uint64_t> other) {
  MemoryFigures f;
  f.weights = 100;
  f.arena_in_use = 20;
  f.arena_reserved = 300;
  f.other = other;
  f.total = total;
  return f;
}

TEST(MemoryMetricsTest, AVersionShowsEachKindAndAReloadReplacesThem) {
  Metrics metrics;
  SchedulerMetrics observer(metrics);
  observer.OnModelMemory("m", "1", Figures(900, 500));
  std::string text = metrics.Serialize();
  EXPECT_THAT(text, HasSubstr(R"(ortgpu_model_gpu_memory_bytes{kind="weights",model="m",version="1"} 100)"));
  EXPECT_THAT(text, HasSubstr(R"(ortgpu_model_gpu_memory_bytes{kind="arena_in_use",model="m",version="1"} 20)"));
  EXPECT_THAT(text, HasSubstr(R"(ortgpu_model_gpu_memory_bytes{kind="arena_reserved",model="m",version="1"} 300)"));
  EXPECT_THAT(text, HasSubstr(R"(ortgpu_model_gpu_memory_bytes{kind="other",model="m",version="1"} 500)"));
  EXPECT_THAT(text, HasSubstr(R"(ortgpu_model_gpu_memory_bytes{kind="total",model="m",version="1"} 900)"));
  observer.OnModelMemory("m", "1", Figures(400, std::nullopt));
  text = metrics.Serialize();
  EXPECT_THAT(text, HasSubstr(R"(ortgpu_model_gpu_memory_bytes{kind="total",model="m",version="1"} 400)"));
  EXPECT_THAT(text, Not(HasSubstr(R"(kind="other",model="m")"))) << "not measured this time: no series";
}

TEST(MemoryMetricsTest, AnUnloadRemovesTheVersionsSeriesAndRecordsWhatItGaveBack) {
  Metrics metrics;
  SchedulerMetrics observer(metrics);
  observer.OnModelMemory("m", "1", Figures(900, 500));
  observer.OnModelMemory("n", "1", Figures(700, 500));
  observer.OnVersionUnloaded("m", "1");
  observer.OnUnloadMemory("m", "1", UnloadMemory{0, 2000, 880});
  const std::string text = metrics.Serialize();
  EXPECT_THAT(text, Not(HasSubstr(R"(ortgpu_model_gpu_memory_bytes{kind="total",model="m")")));
  EXPECT_THAT(text, HasSubstr(R"(ortgpu_model_gpu_memory_bytes{kind="total",model="n",version="1"} 700)"));
  EXPECT_THAT(text, HasSubstr(R"(ortgpu_model_unload_gpu_memory_bytes{gpu="0",kind="after",model="m",version="1"} 2000)"));
  EXPECT_THAT(text, HasSubstr(R"(ortgpu_model_unload_gpu_memory_bytes{gpu="0",kind="released",model="m",version="1"} 880)"));
}

}  // namespace
}  // namespace ortgpu::serve
