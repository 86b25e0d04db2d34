#include "tune/decision.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

namespace ortgpu::tune {

namespace {

// Two-sided t quantiles, df 1..30, for 90%, 95% and 99% (standard tables).
constexpr std::array<double, 30> kT90 = {6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812,
                                         1.796, 1.782, 1.771, 1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725,
                                         1.721, 1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701, 1.699, 1.697};
constexpr std::array<double, 30> kT95 = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                         2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                         2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
constexpr std::array<double, 30> kT99 = {63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169,
                                         3.106,  3.055, 3.012, 2.977, 2.947, 2.921, 2.898, 2.878, 2.861, 2.845,
                                         2.831,  2.819, 2.807, 2.797, 2.787, 2.779, 2.771, 2.763, 2.756, 2.750};

double Mean(const std::vector<double>& x) {
  return x.empty() ? 0 : std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
}

// Sample variance (n - 1); 0 below two samples.
double Variance(const std::vector<double>& x) {
  if (x.size() < 2) return 0;
  const double m = Mean(x);
  double s = 0;
  for (double v : x) s += (v - m) * (v - m);
  return s / static_cast<double>(x.size() - 1);
}

}  // namespace

double TCritical(int df, double confidence) {
  const auto& table = confidence == 0.90 ? kT90 : confidence == 0.99 ? kT99 : kT95;
  const double normal = confidence == 0.90 ? 1.645 : confidence == 0.99 ? 2.576 : 1.960;
  if (df < 1) df = 1;
  return df <= 30 ? table[df - 1] : normal;
}

Interval MeanInterval(const std::vector<double>& samples, double confidence) {
  Interval out;
  out.n = static_cast<int>(samples.size());
  out.mean = Mean(samples);
  double half = 0;
  if (samples.size() >= 2) {
    half = TCritical(out.n - 1, confidence) * std::sqrt(Variance(samples) / out.n);
  }
  out.low = out.mean - half;
  out.high = out.mean + half;
  return out;
}

namespace {

// The Welch interval of mean(a) - mean(b); a zero-width one without noise.
Interval DifferenceInterval(const std::vector<double>& a, const std::vector<double>& b, double confidence) {
  Interval d;
  d.mean = Mean(a) - Mean(b);
  d.n = static_cast<int>(std::min(a.size(), b.size()));
  if (a.size() < 2 || b.size() < 2) {
    d.low = d.high = d.mean;
    return d;
  }
  const double va = Variance(a) / a.size();
  const double vb = Variance(b) / b.size();
  const double se = std::sqrt(va + vb);
  // Welch-Satterthwaite degrees of freedom; identical samples have none to
  // estimate, and no noise either.
  int df = static_cast<int>(std::min(a.size(), b.size())) - 1;
  if (va + vb > 0) {
    const double denom = va * va / (a.size() - 1) + vb * vb / (b.size() - 1);
    if (denom > 0) df = std::max(1, static_cast<int>(std::floor((va + vb) * (va + vb) / denom)));
  }
  const double half = TCritical(df, confidence) * se;
  d.low = d.mean - half;
  d.high = d.mean + half;
  return d;
}

}  // namespace

bool AheadBeyondNoise(const std::vector<double>& a, const std::vector<double>& b, const DecisionOptions& options) {
  const Interval d = DifferenceInterval(a, b, options.confidence);
  const double base = Mean(b);
  const bool beyond_floor = base <= 0 ? d.mean > 0 : d.mean / base > options.min_relative_gain;
  return d.low > 0 && beyond_floor;
}

Decision Decide(const std::vector<Contender>& contenders, const DecisionOptions& options) {
  Decision out;
  for (const Contender& c : contenders) out.intervals.push_back(MeanInterval(c.goodputs, options.confidence));
  if (contenders.empty()) {
    out.reason = "no candidate was measured";
    return out;
  }
  int fastest = 0;
  for (int i = 1; i < static_cast<int>(contenders.size()); ++i) {
    if (out.intervals[i].mean > out.intervals[fastest].mean) fastest = i;
  }
  out.fastest = fastest;
  // Those the fastest is not clearly ahead of, the fastest included; the
  // simplest of them wins.
  int winner = fastest;
  for (int i = 0; i < static_cast<int>(contenders.size()); ++i) {
    if (i == fastest || AheadBeyondNoise(contenders[fastest].goodputs, contenders[i].goodputs, options)) continue;
    if (SimplerThan(contenders[i].candidate, contenders[winner].candidate)) winner = i;
  }
  out.winner = winner;
  const Interval& f = out.intervals[fastest];
  const int pct = static_cast<int>(std::lround(options.confidence * 100));
  if (winner == fastest) {
    out.reason = fmt::format("fastest, {:.1f} items/s ({}% interval {:.1f}..{:.1f}, {} repeats), and no simpler "
                             "candidate is within its noise",
                             f.mean, pct, f.low, f.high, f.n);
  } else {
    const Interval& w = out.intervals[winner];
    out.reason = fmt::format("within the noise of the fastest ({}: {:.1f} items/s, {}% interval {:.1f}..{:.1f}) at "
                             "{:.1f} items/s ({:.1f}..{:.1f}), and simpler",
                             contenders[fastest].candidate.Key(), f.mean, pct, f.low, f.high, w.mean, w.low, w.high);
  }
  return out;
}

}  // namespace ortgpu::tune
