#include "serve/protocol/statistics_json.h"

#include <gtest/gtest.h>

namespace ortgpu::serve::protocol {
namespace {

// The form Triton's clients and perf_analyzer read.
TEST(StatisticsJsonTest, WritesTritonsStatisticsForm) {
  StatsSnapshot s;
  s.name = "resnet";
  s.version = "2";
  s.last_inference_ms = 1700000000123;
  s.inference_count = 48;
  s.execution_count = 2;
  s.success = {3, 3000};
  s.queue = {3, 30};
  s.batches[32].compute_infer = {2, 8000};
  const nlohmann::json j = StatisticsToJson({s});
  ASSERT_EQ(j["model_stats"].size(), 1u);
  const auto& m = j["model_stats"][0];
  EXPECT_EQ(m["name"], "resnet");
  EXPECT_EQ(m["version"], "2");
  EXPECT_EQ(m["last_inference"], 1700000000123);
  EXPECT_EQ(m["inference_count"], 48);
  EXPECT_EQ(m["execution_count"], 2);
  EXPECT_EQ(m["inference_stats"]["success"], (nlohmann::json{{"count", 3}, {"ns", 3000}}));
  EXPECT_EQ(m["inference_stats"]["fail"], (nlohmann::json{{"count", 0}, {"ns", 0}}));
  ASSERT_EQ(m["batch_stats"].size(), 1u);
  EXPECT_EQ(m["batch_stats"][0]["batch_size"], 32);
  EXPECT_EQ(m["batch_stats"][0]["compute_infer"]["ns"], 8000);
  EXPECT_EQ(StatisticsToJson({}), (nlohmann::json{{"model_stats", nlohmann::json::array()}}));
}

// Issue 27: Triton's memory_usage, the total of a GPU as type "GPU" and
// ortgpu's parts beside it.
TEST(StatisticsJsonTest, WritesMemoryUsageAsTritonsTypeIdAndByteSize) {
  StatsSnapshot s;
  s.name = "resnet";
  s.version = "1";
  s.memory_usage = {{"GPU", 0, 3000}, {"GPU_WEIGHTS", 0, 1000}};
  const nlohmann::json j = StatisticsToJson({s});
  const auto& m = j["model_stats"][0];
  ASSERT_EQ(m["memory_usage"].size(), 2u);
  EXPECT_EQ(m["memory_usage"][0], (nlohmann::json{{"type", "GPU"}, {"id", 0}, {"byte_size", 3000}}));
  EXPECT_EQ(m["memory_usage"][1]["type"], "GPU_WEIGHTS");
  StatsSnapshot none;
  EXPECT_EQ(StatisticsToJson({none})["model_stats"][0]["memory_usage"], nlohmann::json::array());
}

}  // namespace
}  // namespace ortgpu::serve::protocol
