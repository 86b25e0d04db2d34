#include "tune/pruning.h"

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
  EXPECT_FALSE(BoundsFor({.batch = 16}, curves).ok());
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
