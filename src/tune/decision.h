// The winner rule of `ortgpu tune` (issue 28): repeated goodput measurements
// of the leading candidates, a t-based confidence interval for each and for
// each difference (Welch), and a winner only when it is ahead of a simpler
// candidate by more than the noise; otherwise the simpler candidate wins
// (SimplerThan in candidates.h defines "simpler"). Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "tune/candidates.h"

namespace ortgpu::tune {

// A mean and its two-sided confidence interval.
struct Interval {
  double mean = 0;
  double low = 0;
  double high = 0;
  int n = 0;
};

// Student's t quantile for a two-sided interval at `confidence` (0.90, 0.95
// or 0.99; others use 0.95) with `df` degrees of freedom (df >= 1; the
// normal quantile past 30).
double TCritical(int df, double confidence);

// The t interval of the mean of `samples`. One sample: low == high == mean
// (no noise can be estimated from one). Empty: all zero.
Interval MeanInterval(const std::vector<double>& samples, double confidence);

struct DecisionOptions {
  double confidence = 0.95;
  // Below this relative gain a faster candidate is not worth its complexity,
  // however tight the intervals (measurement setups drift by about this).
  double min_relative_gain = 0.02;
};

// One leading candidate and its goodput measurements (items/s within the
// latency budget), one per repeat.
struct Contender {
  ServedCandidate candidate;
  std::vector<double> goodputs;
};

struct Decision {
  // Index into the contenders; -1 when there were none.
  int winner = -1;
  // Index of the fastest by mean goodput (-1 when none).
  int fastest = -1;
  std::vector<Interval> intervals;  // per contender
  // Why the winner won: "ahead of ... by 12.0% (95% interval of the
  // difference 9.1%..14.9%)" or "within the noise of the fastest ...; simpler".
  std::string reason;
};

// Whether `a` is ahead of `b` by more than the noise: the lower end of the
// Welch interval of mean(a) - mean(b) is above zero and the gain exceeds
// options.min_relative_gain. With fewer than two samples on either side no
// noise is known, and only a gain over the relative floor counts.
bool AheadBeyondNoise(const std::vector<double>& a, const std::vector<double>& b, const DecisionOptions& options);

// The fastest contender, unless a simpler one is within its noise: then the
// simplest of those within the noise of the fastest.
Decision Decide(const std::vector<Contender>& contenders, const DecisionOptions& options = {});

}  // namespace ortgpu::tune
