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
  const StatsSnapshot snap = stats.Snapshot("resnet", "1");
  EXPECT_EQ(snap.name, "resnet");
  EXPECT_EQ(snap.execution_count, 3u);
  EXPECT_EQ(snap.inference_count, 61u);
  ASSERT_EQ(snap.batches.size(), 2u);
  EXPECT_EQ(snap.batches.at(16).compute_infer.count, 2u);
  EXPECT_EQ(snap.batches.at(16).compute_infer.ns, 200u);
  EXPECT_EQ(snap.batches.at(32).compute_input.count, 1u);
  EXPECT_EQ(stats.BatchSizes(), (std::map<int64_t, uint64_t>{{16, 2}, {32, 1}}));
}

}  // namespace
}  // namespace ortgpu::serve
