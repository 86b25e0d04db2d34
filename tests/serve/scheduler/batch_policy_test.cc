#include "serve/scheduler/batch_policy.h"

#include <gtest/gtest.h>

namespace ortgpu::serve {
namespace {

constexpr int64_t kT0 = 1'000'000'000;   // the oldest request's enqueue time
constexpr int64_t kDelay = 2'000'000;    // 2 ms

// Triton's example: max_batch_size 32, preferred [16, 32], 2 ms delay.
BatchPolicy Resnet() {
  BatchPolicy p;
  p.max_batch_size = 32;
  p.dynamic_batching = true;
  p.preferred_batch_sizes = {32, 16};  // any order: Normalized sorts
  p.max_queue_delay_ns = kDelay;
  return p.Normalized();
}

BatchPlan Plan(const BatchPolicy& p, std::vector<int64_t> rows, int64_t now = kT0) {
  return PlanBatch(p, rows, kT0, now, PlanMode::kServing);
}

TEST(BatchPolicyTest, APreferredSizeRunsAtOnceEvenWhenALargerOneCouldStillFill) {
  // 16 rows waiting: the smaller preferred size runs now, not only 32.
  const BatchPlan plan = Plan(Resnet(), std::vector<int64_t>(16, 1));
  EXPECT_EQ(plan.requests, 16u);
  EXPECT_EQ(plan.rows, 16);
}

TEST(BatchPolicyTest, TheLargestPreferredPrefixWins) {
  // 1-row requests: prefixes 16 and 32 are both preferred; 32 runs.
  EXPECT_EQ(Plan(Resnet(), std::vector<int64_t>(40, 1)).rows, 32);
  // 20 rows: 16 runs now, the other 4 wait for their own batch.
  const BatchPlan plan = Plan(Resnet(), std::vector<int64_t>(20, 1));
  EXPECT_EQ(plan.requests, 16u);
  EXPECT_EQ(plan.rows, 16);
}

TEST(BatchPolicyTest, BelowAPreferredSizeTheOldestWaitsForItsDelay) {
  const BatchPlan plan = Plan(Resnet(), {3, 5});
  EXPECT_EQ(plan.requests, 0u);
  EXPECT_EQ(plan.wait_until_ns, kT0 + kDelay);
  // Once the delay is over, everything gathered runs.
  const BatchPlan late = Plan(Resnet(), {3, 5}, kT0 + kDelay);
  EXPECT_EQ(late.requests, 2u);
  EXPECT_EQ(late.rows, 8);
}

TEST(BatchPolicyTest, AfterTheDelayTheLargestPreferredSizeThatFitsRunsFirst) {
  // 20 rows in 1-row requests, all past the delay: 16 (preferred), not 20.
  const BatchPlan plan = Plan(Resnet(), std::vector<int64_t>(20, 1), kT0 + 10 * kDelay);
  EXPECT_EQ(plan.rows, 16);
  // 4 + 8 + 8 = 20: no prefix is preferred, so all of it.
  EXPECT_EQ(Plan(Resnet(), {4, 8, 8}, kT0 + kDelay).rows, 20);
}

TEST(BatchPolicyTest, ABatchThatCanNoLongerGrowIntoAPreferredSizeRunsAtOnce) {
  BatchPolicy p = Resnet();
  p.max_batch_size = 64;
  p = p.Normalized();
  // 20 + 20 passes the largest preferred size (32): the prefix within it runs.
  BatchPlan plan = Plan(p, {20, 20});
  EXPECT_EQ(plan.requests, 1u);
  EXPECT_EQ(plan.rows, 20);
  // A first request larger than every preferred size runs alone.
  plan = Plan(p, {40, 2});
  EXPECT_EQ(plan.requests, 1u);
  EXPECT_EQ(plan.rows, 40);
  // The next request would pass max_batch_size: what is gathered runs.
  plan = Plan(Resnet(), {10, 30});
  EXPECT_EQ(plan.requests, 1u);
  EXPECT_EQ(plan.rows, 10);
}

TEST(BatchPolicyTest, WithoutPreferredSizesMaxBatchSizeIsThePreferredOne) {
  BatchPolicy p = Resnet();
  p.preferred_batch_sizes.clear();
  EXPECT_EQ(Plan(p, {16, 16}).rows, 32);
  EXPECT_EQ(Plan(p, {16}).requests, 0u);  // waits for its delay
}

TEST(BatchPolicyTest, NoDelayOrDrainingRunsWhatIsThere) {
  BatchPolicy p = Resnet();
  p.max_queue_delay_ns = 0;
  EXPECT_EQ(Plan(p, {3, 2}).rows, 5);
  EXPECT_EQ(PlanBatch(Resnet(), {3, 2}, kT0, kT0, PlanMode::kDraining).rows, 5);
}

// While the GPU runs another batch, a batch taken now would only wait for
// it: it grows to the largest preferred size instead, past its delay.
TEST(BatchPolicyTest, WhileTheGpuIsBusyABatchGrowsToTheLargestPreferredSize) {
  const int64_t late = kT0 + 5 * kDelay;  // long past the oldest request's delay
  BatchPlan plan = PlanBatch(Resnet(), std::vector<int64_t>(16, 1), kT0, late, PlanMode::kGpuBusy);
  EXPECT_EQ(plan.requests, 0u);  // 16 is preferred, but 32 may still come
  EXPECT_EQ(plan.wait_until_ns, late + kGpuBusyRecheckNs);
  plan = PlanBatch(Resnet(), std::vector<int64_t>(20, 1), kT0, late, PlanMode::kGpuBusy);
  EXPECT_EQ(plan.requests, 0u);
  plan = PlanBatch(Resnet(), std::vector<int64_t>(40, 1), kT0, kT0, PlanMode::kGpuBusy);
  EXPECT_EQ(plan.rows, 32);  // full: it runs, and waits for the GPU
  // Nothing more fits (a 20-row request behind 16 rows): the 16 run.
  plan = PlanBatch(Resnet(), {8, 8, 20}, kT0, kT0, PlanMode::kGpuBusy);
  EXPECT_EQ(plan.rows, 16);
  // With the GPU free again the usual rules apply.
  EXPECT_EQ(PlanBatch(Resnet(), std::vector<int64_t>(20, 1), kT0, late, PlanMode::kServing).rows, 16);
}

TEST(BatchPolicyTest, WithoutDynamicBatchingEachRequestRunsAlone) {
  BatchPolicy p = Resnet();
  p.dynamic_batching = false;
  const BatchPlan plan = Plan(p, {8, 8});
  EXPECT_EQ(plan.requests, 1u);
  EXPECT_EQ(plan.rows, 8);
}

TEST(BatchPolicyTest, PaddingRoundsUpToTheNextPreferredSizeOrMaxBatchSize) {
  BatchPolicy p = Resnet();
  p.max_batch_size = 48;
  p.pad_to_preferred_batch_size = true;
  p = p.Normalized();
  EXPECT_EQ(PaddedBatchSize(p, 1), 16);
  EXPECT_EQ(PaddedBatchSize(p, 16), 16);
  EXPECT_EQ(PaddedBatchSize(p, 17), 32);
  EXPECT_EQ(PaddedBatchSize(p, 33), 48);
  p.pad_to_preferred_batch_size = false;
  EXPECT_EQ(PaddedBatchSize(p, 17), 17);
  EXPECT_EQ(ExecutedBatchSize(p, 17, nullptr), 17);
}

TEST(BatchPolicyTest, WarmupCoversEveryExecutableSize) {
  BatchPolicy p = Resnet();
  WarmupSizes w = WarmupBatchSizes(p);
  EXPECT_TRUE(w.every_size);
  ASSERT_EQ(w.sizes.size(), 32u);
  EXPECT_EQ(w.sizes.front(), 1);
  EXPECT_EQ(w.sizes.back(), 32);

  p.pad_to_preferred_batch_size = true;
  p.max_batch_size = 48;
  // The padded sizes, and the light sizes an idle instance runs unpadded.
  EXPECT_EQ(WarmupBatchSizes(p).sizes, (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 48}));
  p.adaptive_padding = false;
  EXPECT_EQ(WarmupBatchSizes(p).sizes, (std::vector<int64_t>{16, 32, 48}));
  p.adaptive_padding = true;

  p.pad_to_preferred_batch_size = false;
  p.max_batch_size = 100;
  p.preferred_batch_sizes = {24};
  w = WarmupBatchSizes(p);
  EXPECT_FALSE(w.every_size);
  EXPECT_EQ(w.sizes, (std::vector<int64_t>{1, 2, 4, 8, 16, 24, 32, 64, 100}));

  p.max_batch_size = 0;
  EXPECT_TRUE(WarmupBatchSizes(p).sizes.empty());
}

// The recommended ResNet-50 config: [32], padded; the costs are the H200's
// order of magnitude (batch 1 in 1.2 ms, 32 in 4.1 ms).
BatchPolicy PaddedTo32() {
  BatchPolicy p;
  p.max_batch_size = 32;
  p.dynamic_batching = true;
  p.preferred_batch_sizes = {32};
  p.pad_to_preferred_batch_size = true;
  return p.Normalized();
}
BatchCosts Resnet50Costs() {
  return {{1, 2, 4, 8, 16, 32}, {1'200'000, 1'300'000, 1'500'000, 2'000'000, 3'800'000, 4'100'000}};
}

TEST(BatchPolicyTest, LightSizesAreThePowersOfTwoBelowTheLargestPreferredSize) {
  EXPECT_EQ(PaddedTo32().LightBatchSizes(), (std::vector<int64_t>{1, 2, 4, 8, 16}));
  BatchPolicy p = PaddedTo32();
  p.preferred_batch_sizes = {4, 32};
  EXPECT_EQ(p.LightBatchSizes(), (std::vector<int64_t>{1, 2, 8, 16}));  // 4 is padded to anyway
  p.adaptive_padding = false;
  EXPECT_TRUE(p.LightBatchSizes().empty());
  p = PaddedTo32();
  p.pad_to_preferred_batch_size = false;
  EXPECT_TRUE(p.LightBatchSizes().empty());
}

// Issue 25: with [32] and padding one client got p50 9.7 ms where batch 1
// takes 1.2 ms: its lone request ran as a padded batch of 32.
TEST(BatchPolicyTest, Issue25ALoneRowOnAnIdleGpuRunsUnpadded) {
  const BatchCosts costs = Resnet50Costs();
  EXPECT_EQ(ExecutedBatchSize(PaddedTo32(), 1, &costs), 1);
  EXPECT_EQ(ExecutedBatchSize(PaddedTo32(), 2, &costs), 2);
  // Between two light sizes: the next one up (only warmed sizes run).
  EXPECT_EQ(ExecutedBatchSize(PaddedTo32(), 3, &costs), 4);
  EXPECT_EQ(ExecutedBatchSize(PaddedTo32(), 7, &costs), 8);
}

// Run l4 (docs/BENCHMARKS.md): a busy GPU padded every batch to the
// preferred size, so ResNet-50 with [128] at two connections ran each lone
// request as 128 rows (90 requests/s). Padding adds GPU work and never
// fills a batch: busy or not, a batch runs at its cheapest warmed size.
TEST(BatchPolicyTest, ABatchOnABusyGpuRunsAtItsLightSizeToo) {
  const BatchCosts costs = Resnet50Costs();
  EXPECT_EQ(ExecutedBatchSize(PaddedTo32(), 1, &costs), 1);
  EXPECT_EQ(ExecutedBatchSize(PaddedTo32(), 5, &costs), 8);
  EXPECT_EQ(ExecutedBatchSize(PaddedTo32(), 32, &costs), 32);
}

TEST(BatchPolicyTest, Issue25APaddedSizeThatCostsAboutTheSameIsPaddedToEvenWhenIdle) {
  const BatchCosts costs = Resnet50Costs();
  // 32 rows in 4.1 ms against 16 in 3.8 ms: within 10%, so padded.
  EXPECT_EQ(ExecutedBatchSize(PaddedTo32(), 16, &costs), 32);
  EXPECT_EQ(ExecutedBatchSize(PaddedTo32(), 12, &costs), 32);
  // A tiny model: 32 rows within a few microseconds of 1.
  const BatchCosts tiny{{1, 2, 4, 8, 16, 32}, {20'000, 20'000, 21'000, 22'000, 23'000, 24'000}};
  EXPECT_EQ(ExecutedBatchSize(PaddedTo32(), 1, &tiny), 32);
  EXPECT_TRUE(CostsAboutTheSame(1'100'000, 1'000'000));
  EXPECT_FALSE(CostsAboutTheSame(1'200'000, 1'000'000));
  EXPECT_TRUE(CostsAboutTheSame(15'000, 10'000));  // within kPaddingCostSlackNs
  EXPECT_FALSE(CostsAboutTheSame(16'000, 10'000));
}

// Without a measured cost table padding stays as it was: on a GPU the padded
// sizes are the ones known to be warm (and captured), so padding is the safe
// choice; a CPU runner is measured by the loader whenever padding is on.
TEST(BatchPolicyTest, Issue25WithoutACostTableEveryBatchIsPadded) {
  EXPECT_EQ(ExecutedBatchSize(PaddedTo32(), 1, nullptr), 32);
  const BatchCosts only_padded{{32}, {4'100'000}};  // the light size unmeasured
  EXPECT_EQ(ExecutedBatchSize(PaddedTo32(), 1, &only_padded), 32);
  const BatchCosts costs = Resnet50Costs();
  BatchPolicy off = PaddedTo32();
  off.adaptive_padding = false;
  EXPECT_EQ(ExecutedBatchSize(off, 1, &costs), 32);
}

TEST(BatchPolicyTest, Issue25PaddingIsDescribedWithTheMeasuredCosts) {
  const BatchCosts costs = Resnet50Costs();
  EXPECT_EQ(DescribePadding(PaddedTo32(), &costs),
            "batches run unpadded at 1 (1.20 ms), 2 (1.30 ms), 4 (1.50 ms), 8 (2.00 ms); padded: 16 -> 32 "
            "(4.10 ms, about the same as 3.80 ms); preferred: 32 (4.10 ms)");
  EXPECT_EQ(DescribePadding(PaddedTo32(), nullptr),
            "every batch padded to the preferred sizes (batch costs not measured)");
  BatchPolicy unpadded = PaddedTo32();
  unpadded.pad_to_preferred_batch_size = false;
  EXPECT_EQ(DescribePadding(unpadded, &costs), "");
}

TEST(BatchPolicyTest, NormalizedSortsDeduplicatesAndClips) {
  BatchPolicy p;
  p.max_batch_size = 8;
  p.preferred_batch_sizes = {8, 2, 2, 0, 9, 4};
  EXPECT_EQ(p.Normalized().preferred_batch_sizes, (std::vector<int>{2, 4, 8}));
}

}  // namespace
}  // namespace ortgpu::serve
