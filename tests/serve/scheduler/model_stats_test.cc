#include "serve/scheduler/model_stats.h"

#include <gtest/gtest.h>

namespace ortgpu::serve {
namespace {

TEST(ModelStatsTest, BatchStatsAreKeyedByTheExecutedRowsAndInferencesCountTheRequestsRows) {
  ModelStats stats;
  ExecutionTimes t{.compute_input_ns = 10, .compute_infer_ns = 100, .compute_output_ns = 1};
  stats.RecordExecution(/*executed_rows=*/32, /*request_rows=*/32, t);  // one request of 32 rows
  stats.RecordExecution(16, 13, t);                                     // 13 rows padded to 16
  stats.RecordExecution(16, 16, t);
  const auto json = stats.ToJson("resnet", "1");
  EXPECT_EQ(json["execution_count"], 3);
  EXPECT_EQ(json["inference_count"], 61);
  ASSERT_EQ(json["batch_stats"].size(), 2u);
  EXPECT_EQ(json["batch_stats"][0]["batch_size"], 16);
  EXPECT_EQ(json["batch_stats"][0]["compute_infer"]["count"], 2);
  EXPECT_EQ(json["batch_stats"][0]["compute_infer"]["ns"], 200);
  EXPECT_EQ(json["batch_stats"][1]["batch_size"], 32);
  EXPECT_EQ(json["batch_stats"][1]["compute_input"]["count"], 1);
  EXPECT_EQ(stats.BatchSizes(), (std::map<int64_t, uint64_t>{{16, 2}, {32, 1}}));
}

}  // namespace
}  // namespace ortgpu::serve
