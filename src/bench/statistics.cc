#include "bench/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

namespace ortgpu::bench {

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.size() == 1) return sorted[0];
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

namespace {

double Mean(std::vector<double>::const_iterator begin, std::vector<double>::const_iterator end) {
  const auto n = std::distance(begin, end);
  return n == 0 ? 0.0 : std::accumulate(begin, end, 0.0) / static_cast<double>(n);
}

// Splits the last windows*per_window samples into equal consecutive windows
// and checks their means agree. Early samples (ramp-up) are left out, as
// perf_analyzer looks only at its last measurement windows.
void CheckStability(const std::vector<double>& samples, const StatisticsOptions& o, LatencyStats& s) {
  const int64_t n = static_cast<int64_t>(samples.size());
  if (o.windows < 2 || n < o.windows * o.min_samples_per_window) {
    s.stable = false;
    s.stability_note = fmt::format("too few samples to judge stability ({} runs; need {})", n,
                                   std::max(2, o.windows) * o.min_samples_per_window);
    return;
  }
  // Windows of a third of the samples each (for 3 windows) use every sample.
  const int64_t per_window = n / o.windows;
  const auto first = samples.end() - per_window * o.windows;
  std::vector<double> means;
  for (int w = 0; w < o.windows; ++w) means.push_back(Mean(first + w * per_window, first + (w + 1) * per_window));
  const double overall = Mean(means.begin(), means.end());
  const auto [lo, hi] = std::minmax_element(means.begin(), means.end());
  const double spread = overall > 0 ? (*hi - *lo) / overall : 0.0;
  s.stable = spread <= o.tolerance;
  if (!s.stable) {
    std::string list;
    for (double m : means) list += (list.empty() ? "" : ", ") + fmt::format("{:.4g}", m);
    s.stability_note = fmt::format(
        "not stable: the means of the last {} windows ({} ms) differ by {:.0f}% (limit {:.0f}%); run longer "
        "(--duration) or quiet the machine",
        o.windows, list, spread * 100, o.tolerance * 100);
  }
}

}  // namespace

LatencyStats ComputeStatistics(const std::vector<double>& samples_ms, double wall_s, int64_t batch,
                               const StatisticsOptions& options) {
  LatencyStats s;
  s.count = static_cast<int64_t>(samples_ms.size());
  if (samples_ms.empty()) {
    s.stability_note = "no samples";
    return s;
  }
  std::vector<double> sorted = samples_ms;
  std::sort(sorted.begin(), sorted.end());
  s.min_ms = sorted.front();
  s.max_ms = sorted.back();
  s.mean_ms = Mean(sorted.begin(), sorted.end());
  double var = 0;
  for (double x : sorted) var += (x - s.mean_ms) * (x - s.mean_ms);
  s.stddev_ms = std::sqrt(var / static_cast<double>(sorted.size()));
  s.p50_ms = Percentile(sorted, 50);
  s.p90_ms = Percentile(sorted, 90);
  s.p95_ms = Percentile(sorted, 95);
  s.p99_ms = Percentile(sorted, 99);
  s.p999_ms = Percentile(sorted, 99.9);
  if (wall_s > 0) {
    s.runs_per_s = static_cast<double>(s.count) / wall_s;
    s.items_per_s = s.runs_per_s * static_cast<double>(batch);
  }
  CheckStability(samples_ms, options, s);
  return s;
}

Histogram MakeHistogram(const std::vector<double>& samples_ms, int bins) {
  Histogram h;
  if (samples_ms.empty() || bins <= 0) return h;
  const auto [lo, hi] = std::minmax_element(samples_ms.begin(), samples_ms.end());
  h.lo_ms = *lo;
  h.hi_ms = *hi;
  h.counts.assign(static_cast<size_t>(bins), 0);
  const double width = (h.hi_ms - h.lo_ms) / bins;
  for (double x : samples_ms) {
    int b = width > 0 ? static_cast<int>((x - h.lo_ms) / width) : 0;
    ++h.counts[static_cast<size_t>(std::clamp(b, 0, bins - 1))];
  }
  return h;
}

}  // namespace ortgpu::bench
