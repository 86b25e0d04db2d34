#include "tune/pruning.h"

#include <cmath>

#include <gtest/gtest.h>

namespace ortgpu::tune {
namespace {

LatencyCurves Curve() {
  LatencyCurves curves;
  const EngineChoice e;
  curves.Add(e, 1, 2.0);    //  500 items/s
  curves.Add(e, 8, 4.0);    // 2000 items/s
  curves.Add(e, 32, 8.0);   // 4000 items/s
  curves.Add(e, 64, 25.0);  // 2560 items/s
  return curves;
}

TEST(Pruning, BoundsFollowTheCurve) {
  const LatencyCurves curves = Curve();
  auto b = BoundsFor({.instances = 2, .batch = 8, .max_queue_delay_us = 500}, curves);
  ASSERT_TRUE(b.ok());
  EXPECT_DOUBLE_EQ(b->floor_ms, 4.5);
  EXPECT_DOUBLE_EQ(b->ceiling_items_per_s, 4000);  // 2 x 8 / 4 ms, at most the in-process best
  auto lone = BoundsFor({.instances = 1, .batch = 1}, curves);
  ASSERT_TRUE(lone.ok());
  EXPECT_DOUBLE_EQ(lone->ceiling_items_per_s, 500);
  EXPECT_FALSE(BoundsFor({.batch = 128}, curves).ok());  // past the measured batches: no extrapolation
}

TEST(Pruning, BatchesBetweenMeasuredOnesAreInterpolated) {
  const LatencyCurves curves = Curve();
  // Between 8 (4 ms) and 32 (8 ms), linear in log-log: 16 -> sqrt(4 x 8) ms.
  ASSERT_TRUE(curves.LatencyMs(EngineChoice{}, 16).has_value());
  EXPECT_NEAR(*curves.LatencyMs(EngineChoice{}, 16), std::sqrt(32.0), 1e-9);
  auto b = BoundsFor({.batch = 16}, curves);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->interpolated);
  EXPECT_FALSE(BoundsFor({.batch = 8}, curves)->interpolated);
}

TEST(Pruning, TheEstimatePrefersFullPaddedBatchesAndMoreWorkersForSmallOnes) {
  LatencyCurves curves;
  const EngineChoice e;
  curves.Add(e, 1, 1.0);
  curves.Add(e, 8, 1.6);
  curves.Add(e, 32, 4.0);    // 8000 items/s: the in-process best
  curves.Add(e, 128, 20.0);  // 6400 items/s
  EstimateOptions o;
  o.latency_budget_ms = 20;
  o.max_concurrency = 64;
  const double b32 = EstimateGoodput({.instances = 1, .batch = 32, .pad_to_preferred = true}, curves, o);
  // 64 connections cannot fill batches of 128: padding them wastes the GPU.
  const double b128 = EstimateGoodput({.instances = 1, .batch = 128, .pad_to_preferred = true}, curves, o);
  EXPECT_GT(b32, b128);
  EXPECT_NEAR(b32, 8000, 1);  // two batches of 32 in flight share the GPU at its best rate
  // Without a queue delay every idle worker takes what is queued: on 2
  // instances x 2 workers 64 connections make batches of 16, each padded to
  // 32, and half the GPU is padding (H200 run n1: 17-row batches, 6,500
  // items/s against 13,200 in-process). With a delay the batches fill.
  const double b32_four = EstimateGoodput({.instances = 2, .batch = 32, .pad_to_preferred = true}, curves, o);
  EXPECT_LT(b32_four, b32 / 2);
  EXPECT_NEAR(EstimateGoodput({.instances = 2, .batch = 32, .pad_to_preferred = true, .max_queue_delay_us = 2000},
                              curves, o),
              8000, 1);
  // Batch 8: one worker runs one batch at a time and waits out its time off
  // the GPU (half its latency); four overlap theirs.
  const double one = EstimateGoodput({.instances = 1, .batch = 8, .pad_to_preferred = true, .workers_per_instance = 1},
                                     curves, o);
  const double four = EstimateGoodput({.instances = 2, .batch = 8, .pad_to_preferred = true}, curves, o);
  EXPECT_NEAR(one, 8 * 1000 / (1.6 * 1.5), 1);
  EXPECT_GT(four, one);
  // Unpadded on a GPU pays for its shape changes.
  const double unpadded = EstimateGoodput({.instances = 2, .batch = 32}, curves, o);
  o.unpadded_factor = 0.5;
  EXPECT_NEAR(EstimateGoodput({.instances = 2, .batch = 32}, curves, o), unpadded / 2, 1);
  // Nothing fits a budget below the batch's own latency.
  o.latency_budget_ms = 0.5;
  EXPECT_EQ(EstimateGoodput({.instances = 2, .batch = 32, .pad_to_preferred = true}, curves, o), 0);
}

// A queue delay fills a batch only when the rows come back within it: n
// connections send about once per full batch's run. H200 run v1 (ResNet-50
// fp16, 2 instances x 2 workers, 64 connections): [32] with 500 us served
// 4,793 items/s, [16] with 2 ms 10,063; the estimate had ranked [32] first
// (13,761) as if its batches filled.
TEST(Pruning, AQueueDelayShorterThanTheRowsTakeToComeBackDoesNotFillTheBatch) {
  LatencyCurves curves;
  const EngineChoice e;
  curves.Add(e, 1, 0.834);
  curves.Add(e, 8, 1.045);
  curves.Add(e, 32, 2.558);
  curves.Add(e, 64, 5.207);
  curves.Add(e, 128, 9.235);
  EstimateOptions o;
  o.latency_budget_ms = 20;
  o.max_concurrency = 64;
  const ServedCandidate b32_short{.instances = 2, .batch = 32, .pad_to_preferred = true, .max_queue_delay_us = 500};
  const ServedCandidate b32_none{.instances = 2, .batch = 32, .pad_to_preferred = true};
  const ServedCandidate b32_long{.instances = 2, .batch = 32, .pad_to_preferred = true, .max_queue_delay_us = 2000};
  const ServedCandidate b16_long{.instances = 2, .batch = 16, .pad_to_preferred = true, .max_queue_delay_us = 2000};
  const double short_delay = EstimateGoodput(b32_short, curves, o);
  EXPECT_LT(short_delay, EstimateGoodput(b16_long, curves, o));
  EXPECT_LE(short_delay, EstimateGoodput(b32_none, curves, o)) << "no better than no delay at all";
  // 64 x 2 ms / 2.558 ms = 50 rows come back: [32] fills.
  EXPECT_GT(EstimateGoodput(b32_long, curves, o), 1.5 * short_delay);
}

// With CUDA graphs serve's batches take GPU turns: one replays while
// another's copies run, so a second batch in flight adds its overlap and a
// third or fourth adds nothing (run q2: 2 instances x 2 workers served 7%
// below 2 x 1; run u1: [16] on 2 x 1 served 14% above the batch's own
// in-process rate).
TEST(Pruning, UnderGpuTurnsOnlyTheSecondBatchInFlightOverlaps) {
  EngineChoice graphs;
  graphs.cuda_graphs = true;
  LatencyCurves curves;
  curves.Add(graphs, 1, 0.5);
  curves.Add(graphs, 16, 1.6);   // 10,000 items/s
  curves.Add(graphs, 128, 10.0);  // 12,800 items/s: the in-process best
  EstimateOptions o;
  auto estimate = [&](int instances, int workers) {
    return EstimateGoodput({.engine = graphs, .instances = instances, .batch = 16, .pad_to_preferred = true,
                            .adaptive_padding = false, .workers_per_instance = workers},
                           curves, o);
  };
  EXPECT_NEAR(estimate(2, 1), 10'000 * (1 + o.overlap_per_batch), 1);
  EXPECT_NEAR(estimate(1, 2), estimate(2, 1), 1);
  EXPECT_NEAR(estimate(2, 2), estimate(2, 1), 1);  // four in flight: two only wait
  EXPECT_LT(estimate(1, 1), estimate(2, 1));
  // Without graphs the four overlap: the same candidate is estimated higher.
  EXPECT_GT(EstimateGoodput({.instances = 2, .batch = 16, .pad_to_preferred = true, .adaptive_padding = false},
                            [&] {
                              LatencyCurves plain;
                              plain.Add(EngineChoice{}, 1, 0.5);
                              plain.Add(EngineChoice{}, 16, 1.6);
                              plain.Add(EngineChoice{}, 128, 10.0);
                              return plain;
                            }(),
                            o),
            estimate(2, 2));
}

TEST(Pruning, DropsWhatCannotMeetTheBudget) {
  const LatencyCurves curves = Curve();
  const std::vector<ServedCandidate> candidates = {
      {.batch = 64},                              // floor 25 ms
      {.batch = 32, .max_queue_delay_us = 2000},  // floor 10 ms
      {.batch = 32},                              // floor 8 ms
      {.batch = 8, .max_queue_delay_us = 100},
  };
  const PruneResult r = Prune(candidates, curves, 9.0, 0);
  ASSERT_EQ(r.kept.size(), 2u);
  EXPECT_EQ(r.kept[0].candidate.batch, 32);  // best-first: the highest ceiling
  EXPECT_EQ(r.kept[1].candidate.batch, 8);
  ASSERT_EQ(r.dropped.size(), 2u);
  EXPECT_NE(r.dropped[0].reason.find("latency floor 25.000 ms"), std::string::npos) << r.dropped[0].reason;
  EXPECT_NE(r.dropped[0].reason.find("9.000 ms budget"), std::string::npos);
  EXPECT_NE(r.dropped[1].reason.find("2000 us queue delay"), std::string::npos);
}

TEST(Pruning, DropsWhatCannotBeatTheBestGoodputSoFar) {
  const LatencyCurves curves = Curve();
  const PruneResult r = Prune({{.batch = 1}, {.batch = 8}, {.instances = 2, .batch = 1}}, curves, 20, 1500);
  ASSERT_EQ(r.kept.size(), 1u);
  EXPECT_EQ(r.kept[0].candidate.batch, 8);
  ASSERT_EQ(r.dropped.size(), 2u);
  EXPECT_NE(r.dropped[0].reason.find("ceiling 500.0 items/s"), std::string::npos) << r.dropped[0].reason;
  EXPECT_NE(r.dropped[0].reason.find("1500.0 items/s"), std::string::npos);
}

TEST(Pruning, UnmeasuredEngineIsDroppedSayingSo) {
  ServedCandidate c;
  c.engine.cuda_graphs = true;
  const PruneResult r = Prune({c}, Curve(), 20, 0);
  EXPECT_TRUE(r.kept.empty());
  ASSERT_EQ(r.dropped.size(), 1u);
  EXPECT_NE(r.dropped[0].reason.find("no in-process latency"), std::string::npos);
}

TEST(Pruning, EqualCeilingsPutTheSimplerFirst) {
  const LatencyCurves curves = Curve();
  // Both reach the in-process best of 4000 items/s.
  const PruneResult r = Prune({{.instances = 2, .batch = 32}, {.instances = 1, .batch = 32}}, curves, 20, 0);
  ASSERT_EQ(r.kept.size(), 2u);
  EXPECT_EQ(r.kept[0].candidate.instances, 1);
}

}  // namespace
}  // namespace ortgpu::tune
