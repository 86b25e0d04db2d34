#include "bench/statistics.h"

#include <gtest/gtest.h>

namespace ortgpu::bench {
namespace {

TEST(PercentileTest, InterpolatesBetweenClosestRanksLikeNumpy) {
  const std::vector<double> v = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(Percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(Percentile(v, 50), 2.5);
  EXPECT_DOUBLE_EQ(Percentile(v, 90), 3.7);
  EXPECT_DOUBLE_EQ(Percentile(v, 100), 4);
  EXPECT_DOUBLE_EQ(Percentile({7}, 99.9), 7);
}

TEST(StatisticsTest, ComputesEveryFigureFromRawSamples) {
  std::vector<double> samples;
  for (int i = 1; i <= 100; ++i) samples.push_back(i);  // 1..100 ms
  const LatencyStats s = ComputeStatistics(samples, /*wall_s=*/2.0, /*batch=*/8);
  EXPECT_EQ(s.count, 100);
  EXPECT_DOUBLE_EQ(s.min_ms, 1);
  EXPECT_DOUBLE_EQ(s.max_ms, 100);
  EXPECT_DOUBLE_EQ(s.mean_ms, 50.5);
  EXPECT_DOUBLE_EQ(s.p50_ms, 50.5);
  EXPECT_NEAR(s.p90_ms, 90.1, 1e-9);
  EXPECT_NEAR(s.p95_ms, 95.05, 1e-9);
  EXPECT_NEAR(s.p99_ms, 99.01, 1e-9);
  EXPECT_NEAR(s.p999_ms, 99.901, 1e-9);
  EXPECT_NEAR(s.stddev_ms, 28.866, 1e-3);
  EXPECT_DOUBLE_EQ(s.runs_per_s, 50);
  EXPECT_DOUBLE_EQ(s.items_per_s, 400);
}

TEST(StatisticsTest, SteadySamplesAreStable) {
  std::vector<double> samples(60, 2.0);
  for (size_t i = 0; i < samples.size(); i += 2) samples[i] = 2.1;
  const LatencyStats s = ComputeStatistics(samples, 1.0, 1);
  EXPECT_TRUE(s.stable) << s.stability_note;
  EXPECT_TRUE(s.stability_note.empty());
}

TEST(StatisticsTest, DriftingSamplesAreFlaggedUnstableWithTheWindowMeans) {
  std::vector<double> samples;
  for (int i = 0; i < 30; ++i) samples.push_back(i < 20 ? 1.0 : 2.0);  // last window twice as slow
  const LatencyStats s = ComputeStatistics(samples, 1.0, 1);
  EXPECT_FALSE(s.stable);
  EXPECT_NE(s.stability_note.find("not stable"), std::string::npos) << s.stability_note;
  EXPECT_NE(s.stability_note.find("limit 10%"), std::string::npos) << s.stability_note;
}

TEST(StatisticsTest, TooFewSamplesSayTheyCannotBeJudged) {
  const LatencyStats s = ComputeStatistics({1, 1, 1}, 1.0, 1);
  EXPECT_FALSE(s.stable);
  EXPECT_NE(s.stability_note.find("too few samples"), std::string::npos);
}

TEST(StatisticsTest, NoSamplesGiveZerosNotACrash) {
  const LatencyStats s = ComputeStatistics({}, 0, 1);
  EXPECT_EQ(s.count, 0);
  EXPECT_EQ(s.p50_ms, 0);
  EXPECT_EQ(s.runs_per_s, 0);
}

TEST(StatisticsTest, PercentilesIgnoreSampleOrder) {
  const LatencyStats a = ComputeStatistics({5, 1, 3, 2, 4}, 1, 1);
  const LatencyStats b = ComputeStatistics({1, 2, 3, 4, 5}, 1, 1);
  EXPECT_EQ(a.p50_ms, b.p50_ms);
  EXPECT_EQ(a.p99_ms, b.p99_ms);
}

TEST(HistogramTest, CountsEverySampleOnce) {
  const Histogram h = MakeHistogram({1, 1, 2, 3, 4, 5, 5, 5}, 4);
  ASSERT_EQ(h.counts.size(), 4u);
  EXPECT_EQ(h.lo_ms, 1);
  EXPECT_EQ(h.hi_ms, 5);
  int64_t total = 0;
  for (auto c : h.counts) total += c;
  EXPECT_EQ(total, 8);
  EXPECT_EQ(h.counts.back(), 4);  // 4 and the three 5s
  EXPECT_EQ(MakeHistogram({2, 2}, 3).counts[0], 2);
}

}  // namespace
}  // namespace ortgpu::bench
