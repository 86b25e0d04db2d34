#include "tune/decision.h"

#include <cmath>

#include <gtest/gtest.h>

namespace ortgpu::tune {
namespace {

TEST(Decision, TIntervalOfTheMean) {
  EXPECT_DOUBLE_EQ(TCritical(2, 0.95), 4.303);
  EXPECT_DOUBLE_EQ(TCritical(100, 0.95), 1.960);
  const Interval i = MeanInterval({100, 102, 98}, 0.95);
  EXPECT_DOUBLE_EQ(i.mean, 100);
  EXPECT_NEAR(i.high - i.mean, 4.303 * 2 / std::sqrt(3.0), 1e-9);
  EXPECT_EQ(i.n, 3);
  const Interval one = MeanInterval({7}, 0.95);
  EXPECT_DOUBLE_EQ(one.low, 7);
  EXPECT_DOUBLE_EQ(one.high, 7);
}

TEST(Decision, SimplerWinsWhenWithinTheNoise) {
  const ServedCandidate simple{.instances = 1, .batch = 32};
  const ServedCandidate complex{.instances = 2, .batch = 32};
  // Two instances measure 1% faster on average, with 3% noise.
  const Decision d = Decide({{complex, {7300, 7050, 7550}}, {simple, {7200, 7000, 7400}}});
  EXPECT_EQ(d.fastest, 0);
  EXPECT_EQ(d.winner, 1);
  EXPECT_NE(d.reason.find("within the noise"), std::string::npos) << d.reason;
}

TEST(Decision, FasterWinsWhenClearlyAhead) {
  const ServedCandidate simple{.instances = 1, .batch = 32};
  const ServedCandidate complex{.instances = 2, .batch = 32};
  const Decision d = Decide({{simple, {3300, 3280, 3320}}, {complex, {7260, 7300, 7240}}});
  EXPECT_EQ(d.winner, 1);
  EXPECT_EQ(d.fastest, 1);
  EXPECT_NE(d.reason.find("no simpler candidate is within its noise"), std::string::npos) << d.reason;
}

TEST(Decision, TightButTinyGainIsNotWorthTheComplexity) {
  const ServedCandidate simple{.batch = 32};
  ServedCandidate graphs{.batch = 32, .pad_to_preferred = true};
  graphs.engine.cuda_graphs = true;
  // 1% ahead with almost no noise: below the 2% floor.
  const Decision d = Decide({{graphs, {1010, 1010.5, 1009.5}}, {simple, {1000, 1000.5, 999.5}}});
  EXPECT_EQ(d.winner, 1);
  EXPECT_TRUE(AheadBeyondNoise({1100, 1101, 1099}, {1000, 1001, 999}, {}));
  EXPECT_FALSE(AheadBeyondNoise({1100, 1101, 1099}, {1000, 1001, 999}, {.min_relative_gain = 0.2}));
}

TEST(Decision, SimplestOfThoseWithinTheNoiseWins) {
  const ServedCandidate four{.instances = 4, .batch = 8};
  const ServedCandidate two{.instances = 2, .batch = 8};
  const ServedCandidate one{.instances = 1, .batch = 8};
  // four leads; two is within its noise; one is clearly behind.
  const Decision d = Decide({{four, {5000, 5200, 4800}}, {two, {4950, 5150, 4750}}, {one, {2000, 2010, 1990}}});
  EXPECT_EQ(d.winner, 1);
}

TEST(Decision, NoContendersNoWinner) {
  const Decision d = Decide({});
  EXPECT_EQ(d.winner, -1);
}

}  // namespace
}  // namespace ortgpu::tune
